package analysis

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/xp-bench/xp/results"
)

// SyntheticConfig shapes a generated campaign.
type SyntheticConfig struct {
	// Seed fixes every generated value.
	Seed uint64
	// Levels of the treatment (security); the first is the baseline.
	Levels []string
	// Factors maps factor names to levels; every combination is a matched
	// configuration. Order is kept.
	Factors []SyntheticFactor
	// Replicates per configuration.
	Replicates int
	// Penalty is each non-baseline level's latency penalty in percent.
	Penalty map[string]float64
	// Histograms adds whole-run HDR histograms (HistogramValues values
	// each) for publish and e2e latency.
	Histograms      bool
	HistogramValues int
	// Invalid marks every n-th run invalid (0: none).
	Invalid int
}

// SyntheticFactor is one generated factor.
type SyntheticFactor struct {
	Name   string
	Levels []string
}

// SecurityOverheadShape is the factorial of plans/security-overhead.yaml:
// 576 matched configurations; with three security levels and three
// replicates, 5,184 runs.
func SecurityOverheadShape() []SyntheticFactor {
	return []SyntheticFactor{
		{"brokers/replication_factor/min_insync_replicas", []string{"3/3/3", "5/3/3", "5/5/3", "5/5/4"}},
		{"message_size", []string{"1024", "10240", "102400"}},
		{"target_rate", []string{"1000", "10000"}},
		{"batch_bytes", []string{"16384", "131072"}},
		{"acks", []string{"1", "all"}},
		{"producers", []string{"1", "6", "12"}},
		{"compression", []string{"none", "lz4"}},
	}
}

// Synthetic generates a campaign with known penalties: the latency of a
// treatment level is the baseline's times (1 + Penalty/100), with noise,
// plus a message-size effect so that factor sensitivity has something to
// find. It stands in for a real campaign in tests and benchmarks.
func Synthetic(cfg SyntheticConfig) *Dataset {
	r := rand.New(rand.NewPCG(cfg.Seed, 1))
	d := &Dataset{Campaign: "synthetic", Seed: int64(cfg.Seed), Treatment: "security", Baseline: cfg.Levels[0]}
	d.Factors = []string{"security"}
	for _, f := range cfg.Factors {
		d.Factors = append(d.Factors, f.Name)
	}
	d.Info = []Field{{"campaign", "synthetic"}, {"generator", "analysis.Synthetic"}}
	d.Metrics = NativeMetrics()
	combos := [][]string{{}}
	for _, f := range cfg.Factors {
		var next [][]string
		for _, c := range combos {
			for _, l := range f.Levels {
				next = append(next, append(append([]string{}, c...), l))
			}
		}
		combos = next
	}
	n := 0
	for ci, c := range combos {
		pair := fmt.Sprintf("p%05d", ci)
		cellBase := 2 + 3*r.Float64()
		sizeEffect := 1.0
		for fi, f := range cfg.Factors {
			if f.Name == "message_size" {
				s, _ := strconv.ParseFloat(c[fi], 64)
				sizeEffect = 1 + math.Log10(s/1024+1)
			}
		}
		for rep := 1; rep <= cfg.Replicates; rep++ {
			setNoise := math.Exp(0.05 * r.NormFloat64())
			for _, lv := range cfg.Levels {
				n++
				run := Run{
					Run: fmt.Sprintf("%s-%s-r%d", pair, lv, rep), Cell: pair + "-" + lv, Pair: pair,
					Replicate: rep, Attempt: 1, Final: true,
					Factors: append([]string{lv}, c...), Outcome: OutcomeDone,
					Metrics: map[string]float64{},
				}
				mult := 1 + cfg.Penalty[lv]/100*sizeEffect
				for _, m := range d.Metrics {
					if m.MaxOnly {
						continue
					}
					scale := 1.0
					switch {
					case len(m.Name) > 4 && m.Name[len(m.Name)-4:] == "9999":
						scale = 8
					case len(m.Name) > 3 && m.Name[len(m.Name)-3:] == "p99":
						scale = 3
					case len(m.Name) > 3 && m.Name[len(m.Name)-3:] == "999":
						scale = 5
					}
					run.Metrics[m.Name] = cellBase * scale * mult * setNoise * math.Exp(0.03*r.NormFloat64())
				}
				if cfg.Invalid > 0 && n%cfg.Invalid == 0 {
					run.Outcome = OutcomeInvalid
					run.Reasons = []string{"publish rate 97.2% of target"}
				}
				if cfg.Histograms {
					run.Histograms = map[string][]byte{}
					for _, kind := range []string{"publish", "e2e"} {
						h := hdrhistogram.New(1, 60_000_000, 3)
						med := cellBase * mult * setNoise * 1000 // µs
						if kind == "e2e" {
							med *= 1.5
						}
						for range cfg.HistogramValues {
							h.RecordValue(int64(med * math.Exp(0.4*r.NormFloat64())))
						}
						b, err := results.EncodeHistogram(h)
						if err != nil {
							panic(err)
						}
						run.Histograms[kind] = b
					}
				}
				d.Runs = append(d.Runs, run)
			}
		}
	}
	return d
}
