package analysis

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// powerPilot builds a pilot of configs configurations and reps matched
// sets each, whose paired latency penalty has within-configuration
// standard deviation exactly sd (residuals rescaled to it).
func powerPilot(configs, reps int, sd float64) *Dataset {
	r := rand.New(rand.NewPCG(11, uint64(configs*1000+reps)))
	d := &Dataset{Campaign: "pilot", Seed: 5, Treatment: "security", Baseline: "plaintext",
		Factors: []string{"security", "size"}, Metrics: []MetricDef{{Name: "lat_ms", Unit: "ms"}}}
	var ss float64
	pen := make([][]float64, configs)
	for c := range pen {
		pen[c] = make([]float64, reps)
		var mean float64
		for i := range pen[c] {
			pen[c][i] = r.NormFloat64()
			mean += pen[c][i]
		}
		mean /= float64(reps)
		for i := range pen[c] {
			pen[c][i] -= mean
			ss += pen[c][i] * pen[c][i]
		}
	}
	scale := sd / math.Sqrt(ss/float64(configs*(reps-1)))
	for c := range pen {
		for i, p := range pen[c] {
			p = 5 + float64(c) + p*scale
			pair := fmt.Sprintf("p%d", c)
			for _, lv := range []struct {
				level string
				v     float64
			}{{"plaintext", 10}, {"tls", 10 * (1 + p/100)}} {
				d.Runs = append(d.Runs, Run{Run: fmt.Sprintf("%s-%s-%d", pair, lv.level, i), Pair: pair, Replicate: i + 1,
					Attempt: 1, Final: true, Factors: []string{lv.level, fmt.Sprint(c)}, Outcome: OutcomeDone,
					Metrics: map[string]float64{"lat_ms": lv.v}})
			}
		}
	}
	return d
}

func TestPower(t *testing.T) {
	// Closed form: ((z(0.975) + z(0.8)) * 5 / 2)^2 = (2.8016 * 2.5)^2 = 49.06 -> 50.
	if n := NormalSampleSize(5, 2, 0.05, 0.8); n != 50 {
		t.Fatalf("closed form gives %d, want 50", n)
	}
	cases := []struct {
		name           string
		configs, reps  int
		method         string
		lo, hi         int // accepted replicates per configuration
		pooledPerCells int
	}{
		{"large pilot: normal approximation equals the closed form", 4, 20, PowerNormal, 50, 50, 13},
		// The t-test needs about two sets more than the normal
		// approximation (52 by the noncentral t); resampling a pilot of
		// 12 sets adds Monte Carlo and shape error.
		{"small pilot: resampling simulation near the t-test's size", 2, 6, PowerResampling, 45, 62, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ans, err := Power(powerPilot(c.configs, c.reps, 5), PowerOptions{Effect: 2})
			if err != nil {
				t.Fatal(err)
			}
			if len(ans) != 1 {
				t.Fatalf("answers %+v", ans)
			}
			a := ans[0]
			if a.Method != c.method || a.PilotSets != c.configs*c.reps || a.PilotConfigs != c.configs || math.Abs(a.SD-5) > 1e-9 {
				t.Errorf("%+v", a)
			}
			if a.Replicates < c.lo || a.Replicates > c.hi {
				t.Errorf("replicates %d, want %d..%d", a.Replicates, c.lo, c.hi)
			}
			if a.PooledSets != 50 {
				t.Errorf("pooled sets %d, want the closed form's 50", a.PooledSets)
			}
			if c.pooledPerCells > 0 && a.PooledReplicates != c.pooledPerCells {
				t.Errorf("pooled replicates per configuration %d, want %d", a.PooledReplicates, c.pooledPerCells)
			}
		})
	}
}

func TestPowerBadInput(t *testing.T) {
	d := powerPilot(2, 3, 5)
	cases := []struct {
		name string
		opt  PowerOptions
		want error
	}{
		{"no effect", PowerOptions{}, ErrBadOption},
		{"power out of range", PowerOptions{Effect: 2, Power: 1.5}, ErrBadOption},
		{"unknown metric", PowerOptions{Effect: 2, Metrics: []string{"nope"}}, ErrBadOption},
		{"unknown treatment", PowerOptions{Effect: 2, Treatment: "mtls"}, ErrBadOption},
		{"no replicated configuration", PowerOptions{Effect: 2}, ErrNoPilotData},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dd := d
			if c.want == ErrNoPilotData {
				dd = powerPilot(3, 1, 5)
			}
			if _, err := Power(dd, c.opt); !errors.Is(err, c.want) {
				t.Errorf("error %v, want %v", err, c.want)
			}
		})
	}
}
