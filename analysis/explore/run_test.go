package explore

import (
	"slices"
	"testing"
	"time"

	"github.com/xp-bench/xp/results"
)

func TestSampleIndexes(t *testing.T) {
	tests := []struct {
		name   string
		n, max int
		want   []int
	}{
		{"none", 0, 5, []int{}},
		{"fewer than the bound: all", 3, 5, []int{0, 1, 2}},
		{"as many as the bound: all", 5, 5, []int{0, 1, 2, 3, 4}},
		{"more: evenly, ends kept", 11, 3, []int{0, 5, 10}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := sampleIndexes(tc.n, tc.max); !slices.Equal(got, tc.want) {
				t.Errorf("sampleIndexes(%d, %d) = %v, want %v", tc.n, tc.max, got, tc.want)
			}
		})
	}
}

// TestPhasesOf reads the phases from a runner log as the runner writes it,
// an attempt over midnight included, and leaves other lines be.
func TestPhasesOf(t *testing.T) {
	started := time.Date(2026, 12, 6, 23, 59, 58, 0, time.UTC)
	log := "23:59:58.010 attempt 1 of r1 (tls) started\n23:59:58.500 phase warmup\n23:59:59.500 phase measure\n00:00:01.250 phase drain\nnot a line\n00:00:01.300 phase done\n"
	got := phasesOf([]byte(log), started)
	want := []struct {
		name string
		s    float64
	}{{"warmup", 0.5}, {"measure", 1.5}, {"drain", 3.25}, {"done", 3.3}}
	if len(got) != len(want) {
		t.Fatalf("phases %+v, want %d", got, len(want))
	}
	for i, w := range want {
		if got[i].Name != w.name || got[i].S < w.s-1e-9 || got[i].S > w.s+1e-9 {
			t.Errorf("phase %d: %+v, want %s at %.2f s", i, got[i], w.name, w.s)
		}
	}
}

// TestTelemetrySeries: counters become rates between samples, gauges keep
// their values, hosts take their recorded role (or their name).
func TestTelemetrySeries(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	samples := []results.Sample{
		{Host: "b0", TS: at(1), Metric: "cpu_s", Value: 10}, {Host: "b0", TS: at(2), Metric: "cpu_s", Value: 11.5},
		{Host: "b0", TS: at(4), Metric: "cpu_s", Value: 12.5}, {Host: "c0", TS: at(1), Metric: "rss_mib", Value: 300},
		{Host: "c0", TS: at(2), Metric: "rss_mib", Value: 310},
	}
	got := telemetrySeries(samples, t0, map[string]string{"b0": "broker"}, 100)
	if len(got) != 2 {
		t.Fatalf("%d series, want 2: %+v", len(got), got)
	}
	b, c := got[0], got[1]
	if b.Role != "broker" || b.Unit != "cores" || !slices.Equal(b.Points, [][2]float64{{2, 1.5}, {4, 0.5}}) {
		t.Errorf("counter series %+v", b)
	}
	if c.Role != "c0" || c.Unit != "MiB" || !slices.Equal(c.Points, [][2]float64{{1, 300}, {2, 310}}) {
		t.Errorf("gauge series %+v", c)
	}
}
