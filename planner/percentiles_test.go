package planner

import (
	"strings"
	"testing"
)

func TestPercentileWarnings(t *testing.T) {
	cases := []struct {
		name string
		rows []Row
		want []string // substrings of the warnings, in order; nil: none
	}{
		{"long enough for p99.99", []Row{{TargetRate: 10000, DurationS: 10}}, nil},
		{"3,000 samples: p99.9 and p99.99 unsupported", []Row{{TargetRate: 1000, DurationS: 3}, {TargetRate: 1000, DurationS: 3}},
			[]string{"2 rows at 1000 msg/s for 3 s hold about 3000 latency samples each: too few for p99.9 (needs 10000), p99.99 (needs 100000)"}},
		{"500 samples: even p99 unsupported", []Row{{TargetRate: 100, DurationS: 5}}, []string{"too few for p99 (needs 1000), p99.9"}},
		{"saturating rows are not judged", []Row{{TargetRate: RateMax, DurationS: 1}}, nil},
		{"fewest samples first", []Row{{TargetRate: 1000, DurationS: 30}, {TargetRate: 100, DurationS: 30}},
			[]string{"at 100 msg/s for 30 s hold about 3000", "at 1000 msg/s for 30 s hold about 30000 latency samples each: too few for p99.99"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := percentileWarnings(c.rows)
			if len(got) != len(c.want) {
				t.Fatalf("warnings %q, want %d", got, len(c.want))
			}
			for i, w := range c.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("warning %d: %q lacks %q", i, got[i], w)
				}
			}
		})
	}
}

func TestPercentileSupport(t *testing.T) {
	got := percentileSupport([]Row{
		{TargetRate: RateMax, DurationS: 60}, {TargetRate: RateMax, DurationS: 60},
		{TargetRate: 1000, DurationS: 3}, {TargetRate: 10000, DurationS: 30},
	})
	want := []string{
		"1 rows at 1000 msg/s for 3 s: about 3000 samples a run, up to p99; too few for p99.9 (needs 10000), p99.99 (needs 100000)",
		"1 rows at 10000 msg/s for 30 s: about 300000 samples a run, up to p99.99",
		"2 rows at target_rate max for 60 s: samples = achieved msg/s × 60 s; p99 needs ≥ 17 msg/s, p99.9 needs ≥ 167 msg/s, p99.99 needs ≥ 1667 msg/s",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
