package analysis

import (
	"cmp"
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
			pv := math.NaN()
			if p.pair != "" {
				w := Wilcoxon(smp.d)
				ct := CellTest{Treatment: p.treatment, Metric: m.Name, Scope: p.class, Pair: p.pair, N: n,
					MeanDifference: j.est[si][statMeanDifference], Dz: CohenDz(smp.d),
					T: w.T, P: w.P, PHolm: math.NaN(), Exact: w.Exact}
				k := testKey{p.treatment, m.Name, p.class}
				family[k] = append(family[k], len(res.Tests))
				res.Tests = append(res.Tests, ct)
				pv = w.P
			} else if j.clusters == nil {
				// Pooled over a single cell: that cell's test.
				pv = Wilcoxon(smp.d).P
			} else {
				// Pooled: test the cells' mean differences, one per cell.
				var cd []float64
				for _, c := range j.clusters {
					var s float64
					for _, i := range c {
						s += smp.d[i]
					}
					cd = append(cd, s/float64(len(c)))
				}
				pv = Wilcoxon(cd).P
			}
			for st := range nStats {
				res.Effects = append(res.Effects, Effect{
					Treatment: p.treatment, Baseline: base, Metric: m.Name, Scope: p.scope, N: n,
					Statistic: statNames[st], Unit: statUnit(st, m),
					Estimate: j.est[si][st], Low: j.low[si][st], High: j.high[si][st],
					Method: methodLabel(j.used[si][st], j.clusters != nil), Note: j.note[si][st],
					P: pv, PHolm: math.NaN(),
				})
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
		}
		return 3
	}
	statOrder := map[string]int{}
	for i, s := range statNames {
		statOrder[s] = i
	}
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
		if p.pair != "" {
			continue
		}
		for si, mi := range p.metrics {
			sets := p.sets[si]
			var names []string
			var cols [][]string
			for fi, f := range res.CellFactors {
				col := make([]string, len(sets))
				for k, s := range sets {
					col[k] = res.Cells[s.cell].Factors[fi]
				}
				if distinct(col) > 1 {
					names = append(names, f)
					cols = append(cols, col)
				}
			}
			terms, model, ok := mainEffects(p.job.samples[si].pen, cols, names)
			if !ok {
				continue
			}
			model.Treatment, model.Metric, model.Scope = p.treatment, d.Metrics[mi].Name, p.scope
			res.Models = append(res.Models, model)
			slices.SortStableFunc(terms, func(a, b FactorTerm) int { return cmp.Compare(b.SS, a.SS) })
			for r := range terms {
				terms[r].Rank = r + 1
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
