package runner

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/results"
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

// TestWarmupCap: the warm-up of a flat (synthetic) cluster stops after
// its first 6 s round, found warm; a cap shorter than that round bounds
// it (at least a second), recorded as not warm; a negative cap runs none.
func TestWarmupCap(t *testing.T) {
	spec := smallSpec("cap", []string{"plaintext", "tls"}, 1)
	for _, tc := range []struct {
		name   string
		cap    time.Duration
		events int
		loadS  int
		stable bool
	}{
		{"default", 0, 1, 6, true},
		{"under the window", 2 * time.Second, 1, 2, false},
		{"under a second", 300 * time.Millisecond, 1, 1, false},
		{"none", -1, 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			plan := writePlan(t, dir, "cap", spec)
			tgt := &synthetic{}
			var stderr syncBuffer
			if _, err := Run(context.Background(), Options{Platforms: only(tgt), Plan: plan, WarmupCap: tc.cap, Stderr: &stderr}); err != nil {
				t.Fatalf("run: %v\n%s", err, stderr.String())
			}
			if tc.events == 0 {
				s, err := results.OpenReadOnly(context.Background(), DefaultDB(plan))
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				evs, _ := s.InfraEvents(context.Background())
				for _, e := range evs {
					if e.Event == "warmup" {
						t.Fatalf("a warm-up with a negative cap: %+v", e)
					}
				}
				if tgt.loads != 2 {
					t.Errorf("%d loads, want the 2 rows' alone", tgt.loads)
				}
				return
			}
			ev := checkWarmupRecorded(t, DefaultDB(plan), tc.events)[0]
			var rec warmupRecord
			if err := json.Unmarshal(ev.Outputs, &rec); err != nil {
				t.Fatal(err)
			}
			if rec.LoadS != tc.loadS || rec.Stable != tc.stable || len(rec.Modes) != 2 {
				t.Errorf("warm-up %s: want %d s of load, stable %v, on 2 modes", ev.Outputs, tc.loadS, tc.stable)
			}
			for _, m := range rec.Modes {
				if len(m.Seconds) != tc.loadS {
					t.Errorf("mode %s: %d seconds measured, want %d", m.Mode, len(m.Seconds), tc.loadS)
				}
			}
		})
	}
}
