package runner

import (
	"math"
	"slices"
	"testing"

	"github.com/xp-bench/xp/planner"
)

// TestWarmedUp: a mode is warm once its last 6 s show no falling latency
// and no rising rate of practical size; a cold JVM's first seconds, a rate
// still climbing, and too few seconds are not warm; noise, a spike, and a
// slow drift are.
func TestWarmedUp(t *testing.T) {
	secs := func(rate float64, p50 ...float64) []warmSecond {
		out := make([]warmSecond, len(p50))
		for i, v := range p50 {
			out[i] = warmSecond{Rate: rate, P50Ms: v}
		}
		return out
	}
	geo := func(n int, from, to float64) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = from * math.Pow(to/from, float64(i)/float64(n-1))
		}
		return xs
	}
	climbing := secs(0, 2, 2, 2, 2, 2, 2)
	for i := range climbing {
		climbing[i].Rate = 600 + 100*float64(i)
	}
	for _, tc := range []struct {
		name string
		s    []warmSecond
		want bool
	}{
		{"flat", secs(1000, 2, 2.1, 1.9, 2, 2.05, 2), true},
		{"noisy, no trend", secs(1000, 2, 5, 1.8, 9, 2.2, 3.1), true},
		{"one cold second, then flat", secs(1000, 150, 3, 2.9, 3.1, 3, 2.9), true},
		{"slow drift down, less than a third", secs(1000, geo(6, 3, 2.4)...), true},
		{"cold JVM: latency falls ×50", secs(1000, geo(6, 150, 3)...), false},
		{"falling to ×0.6", secs(1000, geo(6, 5, 3)...), false},
		{"still falling in the second round", append(secs(1000, geo(6, 150, 20)...), secs(1000, geo(3, 12, 3)...)...), false},
		{"a plateau for the second round's 3 s after the fall", append(secs(1000, geo(6, 150, 3)...), secs(1000, 3, 2.9, 3.1)...), true},
		{"rate still climbing", climbing, false},
		{"too few seconds", secs(1000, 2, 2, 2, 2, 2), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := warmedUp(tc.s); got != tc.want {
				t.Errorf("warmedUp = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestWarmRows: each mode of a group warms up on its gentlest capped row,
// in the order the modes first appear; a mode with only saturating rows
// on its first.
func TestWarmRows(t *testing.T) {
	row := func(run, sec string, rate planner.Rate) planner.Row {
		return planner.Row{Run: run, Security: sec, TargetRate: rate}
	}
	rows := []planner.Row{
		row("a", "tls", 5000), row("b", "plaintext", planner.RateMax), row("c", "tls", 1000),
		row("d", "plaintext", planner.RateMax), row("e", "tls", planner.RateMax), row("f", "mtls", 2000), row("g", "tls", 1000),
	}
	var got []string
	for _, r := range warmRows(rows) {
		got = append(got, r.Run)
	}
	if want := []string{"c", "b", "f"}; !slices.Equal(got, want) {
		t.Errorf("warm-up rows %v, want %v", got, want)
	}
}
