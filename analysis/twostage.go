package analysis

import (
	"math"
	"slices"
)

// StageDesign is a campaign's two-stage design as recorded by xp run
// --halfwidth: the plan's replicates were the first stage, and each
// configuration got the matched sets Stein's rule asked for its interval
// of the mean penalty of Metric to have half-width HalfWidth (points).
type StageDesign struct {
	HalfWidth     float64
	Metric        string
	Confidence    float64
	MaxReplicates int
	FirstStage    int
	// Decided is false while the second stage is not decided yet.
	Decided bool
	// Replicates is each configuration's replicates in all, as decided.
	Replicates map[string]int
}

// StageResult is what a two-stage design achieved for one configuration
// and treatment level, on the design's metric.
type StageResult struct {
	Pair, Treatment, Metric string
	// FirstSets and FirstSD are the first stage's healthy matched sets and
	// the standard deviation of the penalty over them (points).
	FirstSets int
	FirstSD   float64
	// Needed is Stein's count of healthy sets for the asked half-width (0
	// below two first-stage sets); Replicates what the configuration got.
	Needed, Replicates int
	// Sets counts the healthy matched sets of both stages.
	Sets int
	// Asked is the half-width asked; Stein the half-width of Stein's
	// interval, t(FirstSets-1)·FirstSD/√Sets (at most Asked when the
	// configuration got every set it needed, all healthy); Interval half
	// the width of the configuration's mean-penalty interval in
	// effects.csv.
	Asked, Stein, Interval float64
}

// buildStages fills res.Stages for a campaign with a two-stage design.
func (res *Result) buildStages(sets map[string][]matchedSet) {
	sd := res.Dataset.Stage
	if sd == nil {
		return
	}
	mi := slices.IndexFunc(res.Dataset.Metrics, func(m MetricDef) bool { return m.Name == sd.Metric })
	if mi < 0 {
		return
	}
	m := res.Dataset.Metrics[mi]
	interval := map[[2]string]float64{}
	for _, e := range res.Effects {
		if e.Metric == sd.Metric && e.Statistic == "mean_penalty" {
			interval[[2]string{e.Treatment, e.Scope}] = (e.High - e.Low) / 2
		}
	}
	for _, tr := range res.Treatments {
		byPair := map[string][]matchedSet{}
		for _, s := range sets[tr] {
			p := res.Cells[s.cell].Pair
			byPair[p] = append(byPair[p], s)
		}
		for _, c := range res.Cells {
			r := StageResult{Pair: c.Pair, Treatment: tr, Metric: sd.Metric, Asked: sd.HalfWidth,
				FirstSD: math.NaN(), Stein: math.NaN(), Interval: math.NaN(), Replicates: sd.FirstStage}
			if n, ok := sd.Replicates[c.Pair]; ok {
				r.Replicates = n
			}
			var first []float64
			for _, s := range byPair[c.Pair] {
				tv, ok1 := s.t.Metrics[sd.Metric]
				bv, ok2 := s.b.Metrics[sd.Metric]
				if !ok1 || !ok2 || bv == 0 || !finite(tv) || !finite(bv) {
					continue
				}
				r.Sets++
				if s.t.Replicate <= sd.FirstStage {
					first = append(first, penalty(tv, bv, m.Higher))
				}
			}
			if r.Sets == 0 && len(byPair[c.Pair]) == 0 {
				continue
			}
			r.FirstSets = len(first)
			if len(first) >= 2 {
				_, v := meanVar(first)
				r.FirstSD = math.Sqrt(v)
				t := tQuantile(float64(len(first)-1), sd.Confidence)
				r.Needed = max(len(first), int(math.Ceil((t*r.FirstSD/sd.HalfWidth)*(t*r.FirstSD/sd.HalfWidth)-1e-9)))
				r.Stein = t * r.FirstSD / math.Sqrt(float64(r.Sets))
			}
			if v, ok := interval[[2]string{tr, c.Pair}]; ok {
				r.Interval = v
			}
			res.Stages = append(res.Stages, r)
		}
	}
}
