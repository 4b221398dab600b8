package analysis

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
)

// statUnit is the unit of a statistic of metric m.
func statUnit(stat int, m MetricDef) string {
	switch stat {
	case statMeanPenalty, statMedianPenalty:
		return "pct"
	case statRatioOfMeans:
		return "ratio"
	}
	return m.Unit
}

// Pooled and per-configuration tests, as named in effects.csv.
const (
	TestWilcoxon   = "wilcoxon-signed-rank"
	TestStratified = "stratified-signed-rank"
)

// StatRatioPenalty is the headline statistic: the penalty in percent
// from the ratio of means, 100 (mean treatment / mean baseline - 1), or
// 100 (1 - ratio) where larger is better. Its sign always agrees with the
// difference of means (worse is positive), which the mean of per-set
// penalties does not guarantee on skewed metrics.
const StatRatioPenalty = "ratio_penalty"

// ratioPenalty derives the ratio penalty row from the ratio of means row
// e: a monotone map of the ratio, interval included.
func ratioPenalty(e Effect, m MetricDef) Effect {
	f := func(r float64) float64 {
		if m.Higher {
			return (1 - r) * 100
		}
		return (r - 1) * 100
	}
	e.Statistic, e.Unit = StatRatioPenalty, "pct"
	e.Estimate, e.Low, e.High = f(e.Estimate), f(e.Low), f(e.High)
	if m.Higher {
		e.Low, e.High = e.High, e.Low
	}
	return e
}

// wilcoxonPMin is the smallest two-sided p-value a Wilcoxon test of w's
// design (its count of non-zero differences) can give.
func wilcoxonPMin(w WilcoxonResult) float64 {
	if w.N == 0 {
		return math.NaN()
	}
	if w.Exact {
		return math.Min(1, 2*math.Ldexp(1, -w.N))
	}
	fn := float64(w.N)
	return math.Min(1, 2*unitNormal.Survival(math.Sqrt(3*fn*(fn+1)/(2*(2*fn+1)))))
}

// methodLabel names the interval method as written in the outputs: the
// pooled (two-level cluster) bootstrap carries a "-cluster" suffix.
func methodLabel(m Method, clustered bool) string {
	if clustered && (m == MethodBCa || m == MethodPercentile) {
		return string(m) + "-cluster"
	}
	return string(m)
}

func (res *Result) collectEffects(jobs []*plannedJob) {
	d := res.Dataset
	base := res.Levels[0]
	type testKey struct{ tr, metric, class string }
	family := map[testKey][]int{} // indexes into res.Tests
	for _, p := range jobs {
		j := p.job
		for si, mi := range p.metrics {
			m := d.Metrics[mi]
			smp := j.samples[si]
			n := len(smp.t)
			pv, pmin, test := math.NaN(), math.NaN(), ""
			if p.pair != "" {
				w := Wilcoxon(smp.d)
				ct := CellTest{Treatment: p.treatment, Metric: m.Name, Scope: p.class, Pair: p.pair, N: n,
					MeanDifference: j.est[si][statMeanDifference], Dz: CohenDz(smp.d),
					T: w.T, P: w.P, PHolm: math.NaN(), Exact: w.Exact}
				k := testKey{p.treatment, m.Name, p.class}
				family[k] = append(family[k], len(res.Tests))
				res.Tests = append(res.Tests, ct)
				pv, pmin, test = w.P, wilcoxonPMin(w), TestWilcoxon
			} else {
				// Pooled: every matched set, configurations as strata.
				strata := [][]float64{smp.d}
				if j.clusters != nil {
					strata = strata[:0]
					for _, c := range j.clusters {
						d := make([]float64, len(c))
						for k, i := range c {
							d[k] = smp.d[i]
						}
						strata = append(strata, d)
					}
				}
				st := StratifiedSignedRank(strata)
				pv, pmin, test = st.P, st.PMin, TestStratified
			}
			reach := ""
			if alpha := 1 - res.Options.Confidence; pmin > alpha {
				reach = fmt.Sprintf("the smallest p-value %d matched sets can give is %.3g, above %.3g: this design cannot reach significance", n, pmin, alpha)
			}
			outlierSets := 0
			for _, s := range p.sets[si] {
				if s.flagged(m.Name) {
					outlierSets++
				}
			}
			for st := range nStats {
				res.Effects = append(res.Effects, Effect{
					Treatment: p.treatment, Baseline: base, Metric: m.Name, Scope: p.scope, N: n,
					Statistic: statNames[st], Unit: statUnit(st, m),
					Estimate: j.est[si][st], Low: j.low[si][st], High: j.high[si][st],
					Method: methodLabel(j.used[si][st], j.clusters != nil), Note: joinNotes(j.note[si][st], reach),
					P: pv, PHolm: math.NaN(), PMin: pmin, Test: test, Unbounded: j.unbounded[si][st], OutlierSets: outlierSets,
				})
				if st == statRatioOfMeans {
					res.Effects = append(res.Effects, ratioPenalty(res.Effects[len(res.Effects)-1], m))
				}
			}
		}
	}
	// Holm across the cells of one treatment, metric and rate class.
	holm := map[[2]string]float64{} // (treatment|metric, pair) -> adjusted
	keys := make([]testKey, 0, len(family))
	for k := range family {
		keys = append(keys, k)
	}
	for _, k := range keys {
		idx := family[k]
		ps := make([]float64, len(idx))
		for i, ti := range idx {
			ps[i] = res.Tests[ti].P
		}
		adj := Holm(ps)
		for i, ti := range idx {
			res.Tests[ti].PHolm = adj[i]
			holm[[2]string{k.tr + "|" + k.metric, res.Tests[ti].Pair}] = adj[i]
		}
	}
	for i := range res.Effects {
		e := &res.Effects[i]
		if v, ok := holm[[2]string{e.Treatment + "|" + e.Metric, e.Scope}]; ok {
			e.PHolm = v
		}
	}
	metricOrder := map[string]int{}
	for i, m := range d.Metrics {
		metricOrder[m.Name] = i
	}
	levelOrder := map[string]int{}
	for i, l := range res.Levels {
		levelOrder[l] = i
	}
	scopeRank := func(s string) int {
		switch s {
		case ScopeAll:
			return 0
		case ScopeAllCapped:
			return 1
		case ScopeAllMax:
			return 2
		case ScopeAll + ScopeSuffixWithoutOutliers, ScopeAllCapped + ScopeSuffixWithoutOutliers, ScopeAllMax + ScopeSuffixWithoutOutliers:
			return 3
		}
		return 4
	}
	statOrder := map[string]int{}
	for i, s := range statNames {
		statOrder[s] = i
	}
	statOrder[StatRatioPenalty] = len(statNames)
	slices.SortStableFunc(res.Effects, func(a, b Effect) int {
		return cmp.Or(
			cmp.Compare(levelOrder[a.Treatment], levelOrder[b.Treatment]),
			cmp.Compare(metricOrder[a.Metric], metricOrder[b.Metric]),
			cmp.Compare(scopeRank(a.Scope), scopeRank(b.Scope)),
			cmp.Compare(a.Scope, b.Scope),
			cmp.Compare(statOrder[a.Statistic], statOrder[b.Statistic]),
		)
	})
	slices.SortStableFunc(res.Tests, func(a, b CellTest) int {
		return cmp.Or(
			cmp.Compare(levelOrder[a.Treatment], levelOrder[b.Treatment]),
			cmp.Compare(metricOrder[a.Metric], metricOrder[b.Metric]),
			cmp.Compare(a.Pair, b.Pair),
		)
	})
}

func (res *Result) collectSensitivity(sens, effects []*plannedJob) {
	d := res.Dataset
	for _, p := range sens {
		j := p.job
		for si, mi := range p.metrics {
			res.Sensitivity = append(res.Sensitivity, LevelEffect{
				Treatment: p.treatment, Metric: d.Metrics[mi].Name, Scope: p.scope,
				Factor: p.factor, Level: p.level, N: len(j.samples[si].t), Cells: distinctCells(p.sets[si]),
				Mean: j.est[si][statMeanPenalty], Low: j.low[si][statMeanPenalty], High: j.high[si][statMeanPenalty],
				Method: methodLabel(j.used[si][statMeanPenalty], true), Note: j.note[si][statMeanPenalty],
			})
		}
	}
	metricOrder := map[string]int{}
	for i, m := range d.Metrics {
		metricOrder[m.Name] = i
	}
	levelOrder := map[string]int{}
	for i, l := range res.Levels {
		levelOrder[l] = i
	}
	factorOrder := map[string]int{}
	for i, f := range res.CellFactors {
		factorOrder[f] = i
	}
	slices.SortStableFunc(res.Sensitivity, func(a, b LevelEffect) int {
		return cmp.Or(
			cmp.Compare(levelOrder[a.Treatment], levelOrder[b.Treatment]),
			cmp.Compare(a.Scope, b.Scope),
			cmp.Compare(metricOrder[a.Metric], metricOrder[b.Metric]),
			cmp.Compare(factorOrder[a.Factor], factorOrder[b.Factor]),
			compareLevels(a.Level, b.Level),
		)
	})
	// Spread across a factor's levels.
	for i := 0; i < len(res.Sensitivity); {
		e := i
		lo, hi := math.Inf(1), math.Inf(-1)
		for e < len(res.Sensitivity) && sameFactor(res.Sensitivity[e], res.Sensitivity[i]) {
			lo = math.Min(lo, res.Sensitivity[e].Mean)
			hi = math.Max(hi, res.Sensitivity[e].Mean)
			e++
		}
		for k := i; k < e; k++ {
			res.Sensitivity[k].Spread = hi - lo
		}
		i = e
	}

	// Main-effects models on the pooled sets.
	for _, p := range effects {
		if p.pair != "" || p.scope != p.class {
			continue // per configuration, or a sensitivity line
		}
		for si, mi := range p.metrics {
			sets := p.sets[si]
			cellIdx := map[int]int{}
			var cellList []int
			cell := make([]int, len(sets))
			for k, s := range sets {
				c, ok := cellIdx[s.cell]
				if !ok {
					c = len(cellList)
					cellIdx[s.cell] = c
					cellList = append(cellList, s.cell)
				}
				cell[k] = c
			}
			var names []string
			var levels [][]string
			for fi, f := range res.CellFactors {
				col := make([]string, len(cellList))
				for c, rc := range cellList {
					col[c] = res.Cells[rc].Factors[fi]
				}
				if distinct(col) > 1 {
					names = append(names, f)
					levels = append(levels, col)
				}
			}
			terms, model, ok := mainEffects(p.job.samples[si].pen, cell, levels, names)
			if !ok {
				continue
			}
			if model.N > 0 {
				model.Treatment, model.Metric, model.Scope = p.treatment, d.Metrics[mi].Name, p.scope
				res.Models = append(res.Models, model)
			}
			slices.SortStableFunc(terms, func(a, b FactorTerm) int {
				return cmp.Or(cmp.Compare(len(a.Note), len(b.Note)), cmp.Compare(b.SS, a.SS))
			})
			for r := range terms {
				if terms[r].Note == "" {
					terms[r].Rank = r + 1
				}
				terms[r].Treatment, terms[r].Metric, terms[r].Scope = p.treatment, d.Metrics[mi].Name, p.scope
			}
			res.Terms = append(res.Terms, terms...)
		}
	}
}

func sameFactor(a, b LevelEffect) bool {
	return a.Treatment == b.Treatment && a.Scope == b.Scope && a.Metric == b.Metric && a.Factor == b.Factor
}

func distinct(v []string) int {
	var seen []string
	for _, x := range v {
		if !slices.Contains(seen, x) {
			seen = append(seen, x)
			if len(seen) > 1 {
				return len(seen)
			}
		}
	}
	return len(seen)
}

func contains(s []string, v string) bool { return slices.Contains(s, v) }

func sortLevels(l []string) { slices.SortFunc(l, compareLevels) }

func parseNum(s string) (float64, bool) {
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}

// distinctCells counts the configurations among matched sets.
func distinctCells(sets []matchedSet) int {
	seen := map[int]bool{}
	for _, s := range sets {
		seen[s.cell] = true
	}
	return len(seen)
}
