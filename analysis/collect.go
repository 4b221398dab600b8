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

// methodLabel names the interval method as written in the outputs: the
// pooled (two-level cluster) bootstrap carries a "-cluster" suffix.
func methodLabel(m Method, clustered bool) string {
	if clustered && (m == MethodBCa || m == MethodPercentile) {
		return string(m) + "-cluster"
	}
	return string(m)
}

// collectEffects turns the effect jobs' estimates into res.Effects (each
// statistic of each metric and scope, each with the test its interval
// inverts, and the headline rows) and res.Tests (the per-configuration
// headline tests), Holm-adjusted across their families, in the order of
// the outputs.
func (res *Result) collectEffects(jobs []*plannedJob) {
	pools := res.headlinePools(jobs)
	var rows []headlineRow
	for _, p := range jobs {
		for si, mi := range p.metrics {
			m := res.Dataset.Metrics[mi]
			res.addEffects(p, si, m)
			res.addHeadline(p, si, m, pools, &rows)
		}
	}
	res.holmHeadline(rows)
	res.sortEffects()
}

// addEffects appends the effects of sample si of job p, of metric m: every
// statistic, and the ratio penalty beside the ratio of means, each with
// the p-value of the test its interval inverts (none without an
// interval, but for the median's sign test) and a note when the design
// cannot reach significance.
func (res *Result) addEffects(p *plannedJob, si int, m MetricDef) {
	j := p.job
	n := len(j.samples[si].t)
	outlierSets := 0
	for _, s := range p.sets[si] {
		if s.flagged(m.Name) {
			outlierSets++
		}
	}
	for st := range nStats {
		reach := ""
		if alpha := 1 - res.Options.Confidence; j.pmin[si][st] > alpha {
			reach = fmt.Sprintf("the smallest p-value %d matched sets can give is %.3g, above %.3g: this design cannot reach significance", n, j.pmin[si][st], alpha)
		}
		res.Effects = append(res.Effects, Effect{
			Treatment: p.treatment, Baseline: res.Levels[0], Metric: m.Name, Scope: p.scope, N: n,
			Statistic: statNames[st], Unit: statUnit(st, m),
			Estimate: j.est[si][st], Low: j.low[si][st], High: j.high[si][st],
			Method: methodLabel(j.used[si][st], j.clusters != nil), Note: joinNotes(j.note[si][st], reach),
			P: j.p[si][st], PHolm: math.NaN(), PMin: j.pmin[si][st], Test: j.test[si][st], Unbounded: j.unbounded[si][st], OutlierSets: outlierSets,
			LogEstimate: math.NaN(), LogSE: math.NaN(), DF: math.NaN(),
		})
		clipToMetric(&res.Effects[len(res.Effects)-1], st, m)
		if st == statRatioOfMeans {
			res.Effects = append(res.Effects, ratioPenalty(res.Effects[len(res.Effects)-1], m))
		}
	}
}

// clipToMetric intersects the interval of statistic st with the values
// it can take on a metric that cannot be negative: a ratio of means not
// below 0, a penalty not below -100 % (not above 100 % where larger is
// better). The parameter lies in that range, so the coverage is kept; a
// symmetric t interval of one wild matched set otherwise reaches where no
// latency can be. The test the interval inverts is unchanged: the bound
// is on the far side of no effect.
func clipToMetric(e *Effect, st int, m MetricDef) {
	if math.IsNaN(e.Low) {
		return
	}
	clipped := false
	switch {
	case st == statRatioOfMeans && e.Low < 0:
		e.Low, clipped = 0, true
	case (st == statMeanPenalty || st == statMedianPenalty) && !m.Higher && e.Low < -100:
		e.Low, clipped = -100, true
	case (st == statMeanPenalty || st == statMedianPenalty) && m.Higher && e.High > 100:
		e.High, clipped = 100, true
	}
	if clipped {
		e.Note = joinNotes(e.Note, "interval clipped to the values the statistic can take on a metric that cannot be negative")
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
	statOrder[StatGeoRatio] = len(statNames) + 1
	statOrder[StatGeoPenalty] = len(statNames) + 2
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
