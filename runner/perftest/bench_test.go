package perftest

import (
	"context"
	"fmt"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/local"
	"github.com/xp-bench/xp/internal/kafkatest"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/runner/loadgen"
)

// The load both tools run: 1 KiB records, acks all, linger 1 ms, 128 KiB
// batches, 6 partitions, saturated (xp: --rate max without --concurrency;
// ProducerPerformance: --throughput -1), no consumers.
const (
	benchSize   = 1024
	benchBatch  = 131072
	benchLinger = 1
	benchAcks   = "all"
)

// BenchmarkProducerPerformance runs xp's load generator and Kafka's own
// ProducerPerformance against the same Apache Kafka broker (one local JVM
// from out/dist) in every direct mode, alternating the two tools over
// three rounds, and the load generator against the embedded cluster
// (kfake) in the same modes. It reports each tool's saturated throughput
// (the median of the rounds), xp's as a percentage of ProducerPerformance's
// (target: at least 90% in plaintext and tls), and each security mode's
// throughput penalty against plaintext as each tool measures it on each
// broker. XP_BENCH_DURATION sets xp's measured seconds (default 5s);
// ProducerPerformance sends what xp sent in that time, after a warm-up.
func BenchmarkProducerPerformance(b *testing.B) {
	d := 5 * time.Second
	if v := os.Getenv("XP_BENCH_DURATION"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			b.Fatalf("XP_BENCH_DURATION=%q: %v", v, err)
		}
	}
	apache := kafkatest.Start(b, kafkatest.Options{Heap: "1g"})
	// The in-memory broker keeps a second of records (nothing reads
	// them): a saturated run writes gigabytes, which it would otherwise
	// hold in this process until the run's topics are deleted.
	kfake, err := local.Start(context.Background(), local.Options{Dir: b.TempDir(), Retention: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { kfake.Close() })

	modes := planner.DirectModes()
	type key struct{ broker, mode, tool string }
	rates := map[key][]float64{}
	p99 := map[key][]float64{}
	for round := range 3 {
		for i := range modes {
			// Each round visits the modes in another order, and the
			// tools alternate which goes first.
			mode := modes[(i+round)%len(modes)]
			ap := readProps(b, apache.Modes()[mode].ClientConfig)
			kf := readProps(b, kfake.Modes()[mode].ClientConfig)
			runXP := func(broker string, props map[string]string) float64 {
				res := xpSaturated(b, props, d)
				rates[key{broker, mode, "xp"}] = append(rates[key{broker, mode, "xp"}], res.PublishRate)
				p99[key{broker, mode, "xp"}] = append(p99[key{broker, mode, "xp"}], res.PublishLatencyMs.P99)
				return res.PublishRate
			}
			runPP := func(records int64) {
				r := ppSaturated(b, apache.Release().Dir, ap, records, fmt.Sprintf("pp-%d-%s", round, mode))
				rates[key{"apache", mode, "pp"}] = append(rates[key{"apache", mode, "pp"}], r.RecordsPerSec)
				p99[key{"apache", mode, "pp"}] = append(p99[key{"apache", mode, "pp"}], r.P99Ms)
			}
			if (round+i)%2 == 0 {
				rate := runXP("apache", ap)
				runPP(int64(rate * d.Seconds()))
			} else {
				// Before xp has run in this round, ProducerPerformance
				// sends what xp sent in the last round of this mode, or
				// a first guess.
				prev := rates[key{"apache", mode, "xp"}]
				guess := 50000 * d.Seconds()
				if len(prev) > 0 {
					guess = prev[len(prev)-1] * d.Seconds()
				}
				runPP(int64(guess))
				runXP("apache", ap)
			}
			runXP("kfake", kf)
		}
	}
	med := func(k key) float64 { return median(rates[k]) }
	for _, broker := range []string{"apache", "kfake"} {
		for _, mode := range modes {
			b.Run(broker+"/"+mode+"/xp_loadgen", func(b *testing.B) {
				b.ReportMetric(med(key{broker, mode, "xp"}), "msg/s")
				b.ReportMetric(median(p99[key{broker, mode, "xp"}]), "publish_p99_ms")
				if mode != planner.SecurityPlaintext {
					b.ReportMetric(penalty(med(key{broker, planner.SecurityPlaintext, "xp"}), med(key{broker, mode, "xp"})), "tput_penalty_%")
				}
			})
			if broker != "apache" {
				continue
			}
			b.Run(broker+"/"+mode+"/kafka_perf_test", func(b *testing.B) {
				b.ReportMetric(med(key{broker, mode, "pp"}), "msg/s")
				b.ReportMetric(median(p99[key{broker, mode, "pp"}]), "publish_p99_ms")
				b.ReportMetric(100*med(key{broker, mode, "xp"})/med(key{broker, mode, "pp"}), "xp_%_of_perf_test")
				if mode != planner.SecurityPlaintext {
					pp := penalty(med(key{broker, planner.SecurityPlaintext, "pp"}), med(key{broker, mode, "pp"}))
					xp := penalty(med(key{broker, planner.SecurityPlaintext, "xp"}), med(key{broker, mode, "xp"}))
					b.ReportMetric(pp, "tput_penalty_%")
					b.ReportMetric(xp-pp, "xp_minus_perf_test_penalty_pp")
				}
			})
		}
	}
}

// penalty is the throughput lost against base, in percent.
func penalty(base, v float64) float64 { return 100 * (1 - v/base) }

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func readProps(b *testing.B, path string) map[string]string {
	b.Helper()
	p, err := kafkaconf.ReadClientConfig(path)
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// xpSaturated runs the load generator saturated for d after 1 s of
// warm-up, bounded by the drain timeout.
func xpSaturated(b *testing.B, props map[string]string, d time.Duration) *loadgen.Result {
	b.Helper()
	cfg := loadgen.Config{ClientConfig: props, Rate: 0, MessageSize: benchSize, LingerMs: benchLinger, BatchBytes: benchBatch,
		Acks: benchAcks, Partitions: 6, ConsumerGroups: 0, Warmup: time.Second, Duration: d, DrainTimeout: 30 * time.Second, Seed: 1}
	ctx, cancel := context.WithTimeout(context.Background(), d+2*time.Minute)
	defer cancel()
	res, err := loadgen.Run(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	if !res.Healthy {
		b.Fatalf("xp loadgen unhealthy: %v", res.Reasons)
	}
	return res
}

// ppSaturated runs ProducerPerformance unthrottled: records after a
// quarter as many warm-up records, into a fresh topic of 6 partitions.
func ppSaturated(b *testing.B, release string, props map[string]string, records int64, topic string) Result {
	b.Helper()
	records = max(records, 20000)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	createTopic(b, ctx, props, topic)
	r, err := Run(ctx, Options{Release: release, ClientConfig: props, Dir: b.TempDir(), Topic: topic,
		Records: records + records/4, Warmup: records / 4, RecordSize: benchSize, Acks: benchAcks, LingerMs: benchLinger,
		BatchBytes: benchBatch, JVMOpts: []string{"-Xmx512m"}})
	if err != nil {
		b.Fatal(err)
	}
	return r
}
