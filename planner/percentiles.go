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

// percentileSupport says, per distinct rate and duration of rows, which
// of TailPercentiles a run can report: for capped rows from rate ×
// duration; for saturating rows (target_rate max), whose samples are
// the achieved rate × duration, the rate each percentile needs.
func percentileSupport(rows []Row) []string {
	type rd struct {
		rate Rate
		dur  int
	}
	seen := map[rd]int{}
	var keys []rd
	for i := range rows {
		k := rd{rows[i].TargetRate, rows[i].DurationS}
		if seen[k] == 0 {
			keys = append(keys, k)
		}
		seen[k]++
	}
	slices.SortFunc(keys, func(a, b rd) int {
		if a.dur != b.dur {
			return a.dur - b.dur
		}
		return int(a.rate - b.rate)
	})
	var out []string
	for _, k := range keys {
		if k.dur <= 0 {
			continue
		}
		if k.rate.IsMax() {
			var need []string
			for _, p := range TailPercentiles {
				need = append(need, fmt.Sprintf("%s needs ≥ %d msg/s", p.Name, (p.Samples+int64(k.dur)-1)/int64(k.dur)))
			}
			out = append(out, fmt.Sprintf("%d rows at target_rate max for %d s: samples = achieved msg/s × %d s; %s",
				seen[k], k.dur, k.dur, strings.Join(need, ", ")))
			continue
		}
		samples := int64(k.rate) * int64(k.dur)
		var ok, short []string
		for _, p := range TailPercentiles {
			if samples >= p.Samples {
				ok = append(ok, p.Name)
			} else {
				short = append(short, fmt.Sprintf("%s (needs %d)", p.Name, p.Samples))
			}
		}
		line := fmt.Sprintf("%d rows at %d msg/s for %d s: about %d samples a run", seen[k], k.rate, k.dur, samples)
		if len(ok) > 0 {
			line += ", up to " + ok[len(ok)-1]
		}
		if len(short) > 0 {
			line += "; too few for " + strings.Join(short, ", ")
		}
		out = append(out, line)
	}
	return out
}
