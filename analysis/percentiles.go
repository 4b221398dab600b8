package analysis

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// PercentileSupport says whether the runs of one configuration hold enough
// latency samples for one percentile metric: a percentile q is used only
// from 10/(1-q) samples (p99 needs 1,000, p99.9 10,000, p99.99 100,000),
// so that at least ten samples lie beyond it.
type PercentileSupport struct {
	Pair, Metric string
	// Needs is the fewest samples the percentile is used from.
	Needs int
	// Runs counts the configuration's runs with a known sample count;
	// Supported those holding at least Needs.
	Runs, Supported int
	// MinSamples is the fewest samples among Runs.
	MinSamples int
}

// samplesMetric names, per latency metric prefix, the run metric that
// counts its samples: published records for publish latency and send
// delay, consumed records for end-to-end latency.
var samplesMetric = []struct{ prefix, count string }{
	{"publish_ms_", "published"}, {"send_delay_ms_", "published"}, {"e2e_ms_", "consumed"},
}

// percentileNeeds returns the samples percentile metric name needs, or
// ok false when name is not a percentile of a counted latency.
func percentileNeeds(name string) (needs int, count string, ok bool) {
	for _, s := range samplesMetric {
		rest, found := strings.CutPrefix(name, s.prefix)
		if !found || len(rest) < 2 || rest[0] != 'p' {
			continue
		}
		q, err := strconv.ParseFloat("0."+rest[1:], 64)
		if err != nil || q <= 0 || q >= 1 {
			return 0, "", false
		}
		return int(math.Round(10 / (1 - q))), s.count, true
	}
	return 0, "", false
}

// supportedPercentiles returns d with every percentile metric removed from
// the runs whose sample count is below the percentile's need, and the
// support of each configuration. Runs without a sample count (imported
// evidence) keep their percentiles. d itself is not changed.
func supportedPercentiles(d *Dataset) (*Dataset, []PercentileSupport, []string) {
	type key struct{ pair, metric string }
	support := map[key]*PercentileSupport{}
	var keys []key
	out := *d
	out.Runs = slices.Clone(d.Runs)
	dropped := map[string]int{}
	for i := range out.Runs {
		r := &out.Runs[i]
		var drop []string
		for _, m := range d.Metrics {
			needs, count, ok := percentileNeeds(m.Name)
			if !ok {
				continue
			}
			if _, has := r.Metrics[m.Name]; !has {
				continue
			}
			n, known := r.Metrics[count]
			if !known || !r.Final {
				continue
			}
			k := key{r.Pair, m.Name}
			s := support[k]
			if s == nil {
				s = &PercentileSupport{Pair: r.Pair, Metric: m.Name, Needs: needs, MinSamples: math.MaxInt}
				support[k] = s
				keys = append(keys, k)
			}
			s.Runs++
			s.MinSamples = min(s.MinSamples, int(n))
			if n >= float64(needs) {
				s.Supported++
				continue
			}
			drop = append(drop, m.Name)
		}
		if len(drop) > 0 {
			r.Metrics = maps.Clone(r.Metrics)
			for _, name := range drop {
				delete(r.Metrics, name)
				dropped[name]++
			}
		}
	}
	metricOrder := map[string]int{}
	for i, m := range d.Metrics {
		metricOrder[m.Name] = i
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.pair, b.pair), cmp.Compare(metricOrder[a.metric], metricOrder[b.metric]))
	})
	var list []PercentileSupport
	for _, k := range keys {
		list = append(list, *support[k])
	}
	// One note for every percentile left out, grouped by the samples
	// they need: "p99.9 (10,000 samples): publish_ms_p999 in 42 runs, ...".
	var groups []string
	byNeeds := map[int][]string{}
	var needsOrder []int
	for _, m := range d.Metrics {
		if n := dropped[m.Name]; n > 0 {
			needs, _, _ := percentileNeeds(m.Name)
			if _, ok := byNeeds[needs]; !ok {
				needsOrder = append(needsOrder, needs)
			}
			byNeeds[needs] = append(byNeeds[needs], fmt.Sprintf("%s in %d runs", m.Name, n))
		}
	}
	slices.Sort(needsOrder)
	for _, needs := range needsOrder {
		groups = append(groups, fmt.Sprintf("needing %s samples: %s", thousands(needs), strings.Join(byNeeds[needs], ", ")))
	}
	var notes []string
	if len(groups) > 0 {
		notes = append(notes, "Percentiles left out of runs holding too few latency samples (a percentile q needs 10/(1-q), so that ten samples lie beyond it): "+
			strings.Join(groups, "; ")+". Longer runs or higher rates support them; percentiles.csv says which percentiles each configuration supports.")
	}
	return &out, list, notes
}

// thousands writes n with a comma between thousands: 10000 is "10,000".
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
