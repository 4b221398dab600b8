package analysis

import (
	"cmp"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// OutlierFactor is how many typical deviations from its configuration's
// median a run's metric must lie to be flagged (see Outlier).
const OutlierFactor = 5

// minRunsForOutlier is the fewest healthy runs of a configuration and
// level among which one can be extreme.
const minRunsForOutlier = 3

// ScopeSuffixWithoutOutliers names the pooled scope of the sensitivity
// estimates without the matched sets holding a flagged run, e.g.
// "all-without-outliers".
const ScopeSuffixWithoutOutliers = "-without-outliers"

// Outlier is a run whose metric is extreme against the other replicates
// of its configuration and level. The rule is robust (Iglewicz and
// Hoaglin 1993; Leys et al. 2013), on the log of the metric so that it
// reads ratios: a run is flagged when |log x - m| exceeds OutlierFactor
// times the larger of the configuration's and level's median absolute
// deviation (MAD) and the campaign's typical deviation for the metric
// (the median of |log x - m| over the runs of every configuration and
// level, the median run of an odd count left out), where m is the median
// of the configuration and level's healthy runs. The campaign's deviation
// keeps a configuration whose few siblings happen to agree closely from
// flagging an ordinary run; the configuration's own keeps a noisy one
// from flagging its usual spread. Under normal or lognormal noise fewer
// than 1 run in 100 is flagged. The campaign's typical deviation is taken
// as an upper confidence bound of that median (upperMedian). Flagged runs stay in every estimate; the
// pooled estimates are given again without their sets as a sensitivity
// line.
type Outlier struct {
	Run, Pair, Level, Metric string
	Value, Median            float64
	// Deviations is |log x - m| over the typical deviation.
	Deviations float64
}

// flagOutliers flags the outliers among the healthy final runs, sets
// each run's Outliers and fills res.Outliers.
func (res *Result) flagOutliers(level func(*Run) string) {
	d := res.Dataset
	type cellKey struct{ pair, level string }
	cells := map[cellKey][]*Run{}
	var keys []cellKey
	for i := range d.Runs {
		r := &d.Runs[i]
		r.Outliers = nil
		if !r.Final || r.Outcome != OutcomeDone {
			continue
		}
		k := cellKey{r.Pair, level(r)}
		if cells[k] == nil {
			keys = append(keys, k)
		}
		cells[k] = append(cells[k], r)
	}
	slices.SortFunc(keys, func(a, b cellKey) int { return cmp.Or(cmp.Compare(a.pair, b.pair), cmp.Compare(a.level, b.level)) })
	for _, m := range d.Metrics {
		type cellStat struct {
			runs   []*Run
			x      []float64
			median float64
			mad    float64
		}
		var stats []cellStat
		var pool []float64
		for _, k := range keys {
			var cs cellStat
			for _, r := range cells[k] {
				v, ok := r.Metrics[m.Name]
				if !ok || !(v > 0) || math.IsInf(v, 0) {
					continue
				}
				cs.runs = append(cs.runs, r)
				cs.x = append(cs.x, math.Log(v))
			}
			if len(cs.x) < 2 {
				continue
			}
			cs.median = median(cs.x)
			dev := make([]float64, len(cs.x))
			for i, x := range cs.x {
				dev[i] = math.Abs(x - cs.median)
			}
			cs.mad = median(dev)
			if len(dev)%2 == 1 {
				slices.Sort(dev)
				dev = dev[1:] // the median run's own zero
			}
			pool = append(pool, dev...)
			stats = append(stats, cs)
		}
		if len(pool) == 0 {
			continue
		}
		typical := upperMedian(pool)
		for _, cs := range stats {
			if len(cs.x) < minRunsForOutlier {
				continue
			}
			scale := math.Max(cs.mad, typical)
			if scale == 0 {
				continue
			}
			for i, x := range cs.x {
				dev := math.Abs(x-cs.median) / scale
				if dev <= OutlierFactor {
					continue
				}
				r := cs.runs[i]
				r.Outliers = append(r.Outliers, m.Name)
				res.Outliers = append(res.Outliers, Outlier{Run: r.Run, Pair: r.Pair, Level: level(r), Metric: m.Name,
					Value: r.Metrics[m.Name], Median: math.Exp(cs.median), Deviations: dev})
			}
		}
	}
}

// flagged reports whether either run of s is flagged for metric.
func (s matchedSet) flagged(metric string) bool {
	return slices.Contains(s.t.Outliers, metric) || slices.Contains(s.b.Outliers, metric)
}

// upperMedian is a one-sided 95% upper confidence bound of the median
// of v: its u-th smallest value, u the smallest with P(Bin(n, 1/2) < u)
// of at least 0.95. Close to the median for many values, it keeps a
// campaign of few configurations, whose median deviation is a noisy
// estimate, from flagging on a low one.
func upperMedian(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	bin := distuv.Binomial{N: float64(n), P: 0.5}
	u := n
	for k := 1; k <= n; k++ {
		if bin.CDF(float64(k-1)) >= 0.95 {
			u = k
			break
		}
	}
	return s[u-1]
}

// median of v (not changed).
func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
