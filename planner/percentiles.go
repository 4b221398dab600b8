package planner

import (
	"fmt"
	"slices"
	"strings"
)

// TailPercentiles are the latency percentiles xp's analysis reports and
// the samples a run needs for each: 10/(1-q), so that ten samples lie
// beyond the percentile (p50 and p95 need 20 and 200).
var TailPercentiles = []struct {
	Name    string
	Samples int64
}{{"p99", 1_000}, {"p99.9", 10_000}, {"p99.99", 100_000}}

// percentileWarnings names the capped rows whose rate × duration holds too
// few latency samples for a percentile the analysis reports; one line per
// distinct rate and duration, fewest samples first.
func percentileWarnings(rows []Row) []string {
	type rd struct {
		rate Rate
		dur  int
	}
	seen := map[rd]int{}
	for i := range rows {
		r := &rows[i]
		if r.TargetRate.IsMax() || r.TargetRate <= 0 {
			continue
		}
		seen[rd{r.TargetRate, r.DurationS}]++
	}
	keys := make([]rd, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	samples := func(k rd) int64 { return int64(k.rate) * int64(k.dur) }
	slices.SortFunc(keys, func(a, b rd) int {
		if s := samples(a) - samples(b); s != 0 {
			if s < 0 {
				return -1
			}
			return 1
		}
		return int(a.rate - b.rate)
	})
	var out []string
	for _, k := range keys {
		var short []string
		for _, p := range TailPercentiles {
			if samples(k) < p.Samples {
				short = append(short, fmt.Sprintf("%s (needs %d)", p.Name, p.Samples))
			}
		}
		if len(short) == 0 {
			continue
		}
		out = append(out, fmt.Sprintf("%d rows at %d msg/s for %d s hold about %d latency samples each: too few for %s, which the analysis leaves out of those runs; raise duration_s or target_rate to report them",
			seen[k], k.rate, k.dur, samples(k), strings.Join(short, ", ")))
	}
	return out
}
