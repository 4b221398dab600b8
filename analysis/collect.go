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

// collectEffects turns the effect jobs' estimates into res.Effects (each
// statistic of each metric and scope, with its test) and res.Tests (the
// per-configuration tests, Holm-adjusted within their family), in the
// order of the outputs.
func (res *Result) collectEffects(jobs []*plannedJob) {
	family := map[testFamily][]int{} // indexes into res.Tests
	for _, p := range jobs {
		for si, mi := range p.metrics {
			res.addEffects(p, si, res.Dataset.Metrics[mi], family)
		}
	}
	res.adjustHolm(family)
	res.sortEffects()
}

// testFamily is the tests Holm's adjustment runs across: the
// configurations of one treatment, metric and rate class.
type testFamily struct{ tr, metric, class string }

// addEffects appends the effects of sample si of job p, of metric m: every
// statistic, and the ratio penalty beside the ratio of means, each with the
// test of the sample's scope and a note when the design cannot reach
// significance.
func (res *Result) addEffects(p *plannedJob, si int, m MetricDef, family map[testFamily][]int) {
	j := p.job
	n := len(j.samples[si].t)
	pv, pmin, test := res.significance(p, si, m, family)
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
			Treatment: p.treatment, Baseline: res.Levels[0], Metric: m.Name, Scope: p.scope, N: n,
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

// significance tests sample si of job p, of metric m: per configuration
// the Wilcoxon signed-rank test, recorded in res.Tests and its family;
// pooled the stratified signed-rank test, configurations as strata. It
// returns the p-value, the smallest p-value the design can give, and the
// test's name.
func (res *Result) significance(p *plannedJob, si int, m MetricDef, family map[testFamily][]int) (pv, pmin float64, test string) {
	j, smp := p.job, p.job.samples[si]
	if p.pair != "" {
		w := Wilcoxon(smp.d)
		ct := CellTest{Treatment: p.treatment, Metric: m.Name, Scope: p.class, Pair: p.pair, N: len(smp.t),
			MeanDifference: j.est[si][statMeanDifference], Dz: CohenDz(smp.d),
			T: w.T, P: w.P, PHolm: math.NaN(), Exact: w.Exact}
		k := testFamily{p.treatment, m.Name, p.class}
		family[k] = append(family[k], len(res.Tests))
		res.Tests = append(res.Tests, ct)
		return w.P, wilcoxonPMin(w), TestWilcoxon
	}
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
	return st.P, st.PMin, TestStratified
}

// adjustHolm adjusts the per-configuration p-values by Holm's method
// within each family, and gives each per-configuration effect its
// adjusted p-value.
func (res *Result) adjustHolm(family map[testFamily][]int) {
	holm := map[[2]string]float64{} // (treatment|metric, pair) -> adjusted
	for k, idx := range family {
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
}

// sortEffects orders the effects by treatment (level order), metric
// (definition order), scope (pooled, pooled by rate class, without
// outliers, then configurations) and statistic; and the tests by
// treatment, metric and configuration.
func (res *Result) sortEffects() {
	metricOrder, levelOrder := res.metricOrder(), rankOf(res.Levels)
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
	statOrder := rankOf(statNames[:])
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

// rankOf maps each name to its position in names.
func rankOf(names []string) map[string]int {
	m := make(map[string]int, len(names))
	for i, n := range names {
		m[n] = i
	}
	return m
}

// metricOrder maps each metric's name to its position in the dataset's
// metric definitions.
func (res *Result) metricOrder() map[string]int {
	m := map[string]int{}
	for i, d := range res.Dataset.Metrics {
		m[d.Name] = i
	}
	return m
}

// collectSensitivity turns the sensitivity jobs' estimates into
// res.Sensitivity (the mean penalty per factor level, with the spread of
// each factor's level means), and fits the main-effects model of every
// pooled effect (res.Models, res.Terms).
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
	metricOrder, levelOrder, factorOrder := res.metricOrder(), rankOf(res.Levels), rankOf(res.CellFactors)
	slices.SortStableFunc(res.Sensitivity, func(a, b LevelEffect) int {
		return cmp.Or(
			cmp.Compare(levelOrder[a.Treatment], levelOrder[b.Treatment]),
			cmp.Compare(a.Scope, b.Scope),
			cmp.Compare(metricOrder[a.Metric], metricOrder[b.Metric]),
			cmp.Compare(factorOrder[a.Factor], factorOrder[b.Factor]),
			compareLevels(a.Level, b.Level),
		)
	})
	res.spreadSensitivity()
	for _, p := range effects {
		if p.pair != "" || p.scope != p.class {
			continue // per configuration, or a sensitivity line
		}
		for si, mi := range p.metrics {
			res.fitMainEffects(p, si, d.Metrics[mi].Name)
		}
	}
}

// spreadSensitivity gives each sensitivity line its factor's spread: the
// largest minus the smallest of the factor's level means.
func (res *Result) spreadSensitivity() {
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
}

// fitMainEffects fits the main-effects model of the penalty of sample si
// of pooled job p (of metric) on the factors that vary among its
// configurations, and adds the model and its terms, ranked by sum of
// squares (unfitted terms last).
func (res *Result) fitMainEffects(p *plannedJob, si int, metric string) {
	cell, names, levels := res.varyingFactors(p.sets[si])
	terms, model, ok := mainEffects(p.job.samples[si].pen, cell, levels, names)
	if !ok {
		return
	}
	if model.N > 0 {
		model.Treatment, model.Metric, model.Scope = p.treatment, metric, p.scope
		res.Models = append(res.Models, model)
	}
	slices.SortStableFunc(terms, func(a, b FactorTerm) int {
		return cmp.Or(cmp.Compare(len(a.Note), len(b.Note)), cmp.Compare(b.SS, a.SS))
	})
	for r := range terms {
		if terms[r].Note == "" {
			terms[r].Rank = r + 1
		}
		terms[r].Treatment, terms[r].Metric, terms[r].Scope = p.treatment, metric, p.scope
	}
	res.Terms = append(res.Terms, terms...)
}

// varyingFactors numbers the configurations of sets in order of first
// appearance (cell[k]: set k's) and lists the factors taking more than one
// level among them: their names, and levels[f][c] factor f's level of
// configuration c.
func (res *Result) varyingFactors(sets []matchedSet) (cell []int, names []string, levels [][]string) {
	cellIdx := map[int]int{}
	var cellList []int
	cell = make([]int, len(sets))
	for k, s := range sets {
		c, ok := cellIdx[s.cell]
		if !ok {
			c = len(cellList)
			cellIdx[s.cell] = c
			cellList = append(cellList, s.cell)
		}
		cell[k] = c
	}
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
	return cell, names, levels
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
