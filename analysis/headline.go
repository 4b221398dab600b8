package analysis

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
)

// The headline statistic and its procedure (docs/analysis.md, "The
// headline"): per matched set the log ratio log(treatment/baseline), their
// mean and its t interval and t-test, one pivot for both, so that p < 1 -
// confidence exactly when the interval excludes no effect; estimate and
// interval are mapped back through exp, so a penalty on a positive metric
// is never below -100 %.
const (
	// StatGeoRatio is the geometric mean of the per-set ratios
	// treatment/baseline, exp(mean log ratio), with its interval.
	StatGeoRatio = "geometric_mean_ratio"
	// StatGeoPenalty is StatGeoRatio as a penalty in percent, positive
	// worse: 100 (ratio - 1), or 100 (1 - ratio) where larger is better.
	StatGeoPenalty = "geometric_mean_penalty"
	// StatHeadline is the statistic the headline table, tables.tex and
	// the forest plot show.
	StatHeadline = StatGeoPenalty

	// MethodLogRatioT is the t interval of the mean log ratio over one
	// configuration's own sets.
	MethodLogRatioT Method = "log-ratio-t"
	// MethodLogRatioTPooled is that interval with the log ratios' spread
	// pooled over the campaign's configurations.
	MethodLogRatioTPooled Method = "log-ratio-t-pooled"
	// MethodLogRatioTStrata is the t interval of the mean log ratio over
	// several configurations, each a stratum (Welch-Satterthwaite degrees
	// of freedom).
	MethodLogRatioTStrata Method = "log-ratio-t-strata"
)

// GrossOutlierFactor is how many typical deviations from its
// configuration's median (the outlier rule's scale, see Outlier) a run's
// metric must lie for the headline to leave its matched set out: a gross
// error of the measurement (a cold broker's first run, a replicate that
// slowed every mode twentyfold), not the tail of the cost: a stall that
// adds 90 % to a run among runs of 10 % spread lies about 10 typical
// deviations away and stays in. Runs flagged at OutlierFactor but not at
// this stay in, and are listed.
const GrossOutlierFactor = 3 * OutlierFactor

// MaxDrivers is how many matched sets a "better than baseline" row names
// as driving it.
const MaxDrivers = 3

// logInference is the headline procedure's answer on a set of log
// ratios: the mean, its standard error and degrees of freedom (ok false
// without an interval), the method and why.
type logInference struct {
	mean, se, df float64
	ok           bool
	method       Method
	note         string
	unbounded    bool
}

// p is the two-sided p-value of the mean log ratio being 0.
func (li logInference) p() float64 {
	if !li.ok {
		return math.NaN()
	}
	if li.se == 0 {
		if li.mean == 0 {
			return 1
		}
		return 0
	}
	return tTestP(li.mean/li.se, li.df)
}

// significant says whether p < alpha.
func (li logInference) significant(alpha float64) bool { return li.p() < alpha }

// logPool is the spread of the log ratios shared by the configurations of
// one treatment, rate class and metric.
type logPool struct {
	configs int
	df, s2  float64
	// checked: the split-half check could run; compatible: it found no
	// configuration-specific spread (or could not run).
	checked, compatible bool
	check               string
}

// poolLogs pools the within-configuration variance of the log ratios of
// the configurations (one slice each); nil with fewer than
// MinConfigsForPooling configurations of two or more sets.
func poolLogs(configs [][]float64) *logPool {
	var use [][]float64
	for _, x := range configs {
		if len(x) >= 2 {
			use = append(use, x)
		}
	}
	if len(use) < MinConfigsForPooling {
		return nil
	}
	lp := &logPool{configs: len(use)}
	var ss float64
	for _, x := range use {
		_, s2 := meanVar(x)
		ss += s2 * float64(len(x)-1)
		lp.df += float64(len(x) - 1)
	}
	lp.s2 = ss / lp.df
	lp.compatible, lp.checked, lp.check = compatibleSpreads(use)
	return lp
}

// inferLogs is the headline procedure on log ratios x of sets in
// configurations cell (per set). Over one configuration: its t interval,
// with the pooled spread where one is given (pool; see inferOne); over
// several, configurations are strata. minSets is the fewest sets given an
// interval without a pool.
func inferLogs(x []float64, cell []int, pool *logPool, minSets int, conf float64) logInference {
	if len(x) == 0 {
		return logInference{}
	}
	if slices.ContainsFunc(cell, func(c int) bool { return c != cell[0] }) {
		return newStrataAgg(x, cell).infer(-1, minSets)
	}
	return inferOne(x, pool, minSets, conf)
}

// inferOne is the headline procedure over one configuration's log
// ratios. With a pool whose spreads the split-half check found
// compatible, the pooled spread alone (the configuration's few sets
// estimate the same spread far less well); compatible but not checkable,
// the wider of its own and the pooled interval (as for the other
// statistics); not compatible, or no pool, its own t interval.
func inferOne(x []float64, pool *logPool, minSets int, conf float64) logInference {
	n := len(x)
	mean, s2 := meanVar(x)
	own := logInference{mean: mean, se: math.Sqrt(s2 / float64(n)), df: float64(n - 1), ok: n >= 2, method: MethodLogRatioT}
	switch {
	case pool != nil && pool.compatible && n >= 2:
		pooled := logInference{mean: mean, se: math.Sqrt(pool.s2 / float64(n)), df: pool.df, ok: true, method: MethodLogRatioTPooled,
			note: fmt.Sprintf("spread of the log ratios pooled over %d configurations (%.0f degrees of freedom); %s", pool.configs, pool.df, pool.check)}
		if pool.checked || own.halfWidth(conf) <= pooled.halfWidth(conf) {
			return pooled
		}
		own.note = fmt.Sprintf("own t interval: its %d sets spread more than the %d configurations' pooled spread; %s", n, pool.configs, pool.check)
		return own
	case n < minSets:
		return logInference{mean: mean, note: fmt.Sprintf("n=%d: too few matched sets for an interval (needs %d)", n, minSets)}
	case pool != nil:
		own.note = fmt.Sprintf("own t interval: the spreads of the %d configurations are not compatible (%s)", pool.configs, pool.check)
	default:
		own.note = fmt.Sprintf("no spread to borrow (fewer than %d configurations of 2 or more sets)", MinConfigsForPooling)
	}
	if n < MinSetsAlone {
		own.unbounded = true
		own.note = joinNotes(own.note, aloneNote(n, false))
	}
	return own
}

// halfWidth is the interval's half-width on the log scale.
func (li logInference) halfWidth(conf float64) float64 { return tQuantile(li.df, conf) * li.se }

// strataAgg holds per-stratum sums of log ratios, so that the stratified
// t can be recomputed with any one set left out in constant time (the
// fragility check over tens of thousands of sets).
type strataAgg struct {
	n, sum, ss []float64
	x          []float64
	cell       []int
	// totals over strata: sets, sum, within sum of squares; A = sum of
	// n s^2 and B = sum of (n s^2)^2/(n-1) over strata of 2 or more sets;
	// singletons and strata.
	N, S, SSw, A, B float64
	k1, C           int
}

func newStrataAgg(x []float64, cell []int) *strataAgg {
	idx := map[int]int{}
	a := &strataAgg{x: x, cell: make([]int, len(x))}
	for i, c := range cell {
		k, ok := idx[c]
		if !ok {
			k = len(a.n)
			idx[c] = k
			a.n, a.sum, a.ss = append(a.n, 0), append(a.sum, 0), append(a.ss, 0)
		}
		a.cell[i] = k
		a.n[k]++
		a.sum[k] += x[i]
	}
	for i, k := range a.cell {
		d := x[i] - a.sum[k]/a.n[k]
		a.ss[k] += d * d
	}
	for k := range a.n {
		a.add(a.n[k], a.ss[k], 1)
	}
	a.N, a.S = float64(len(x)), 0
	for _, v := range x {
		a.S += v
	}
	return a
}

// add adds (sign 1) or removes (sign -1) a stratum of n sets and within
// sum of squares ss from the totals.
func (a *strataAgg) add(n, ss float64, sign float64) {
	switch {
	case n >= 2:
		s2 := ss / (n - 1)
		a.A += sign * n * s2
		a.B += sign * (n * s2) * (n * s2) / (n - 1)
	case n == 1:
		a.k1 += int(sign)
	}
	if n >= 1 {
		a.C += int(sign)
	}
	a.SSw += sign * ss
}

// infer is the stratified t of the mean log ratio, with set i left out
// (i < 0: none): the mean over every set, variance sum over strata of
// (n_c/N)^2 s_c^2/n_c (a stratum of one set takes the pooled
// within-stratum variance), Welch-Satterthwaite degrees of freedom; as
// strataT computes it.
func (a *strataAgg) infer(i int, minSets int) logInference {
	b := *a
	if i >= 0 {
		k := a.cell[i]
		n, sum, ss := a.n[k], a.sum[k], a.ss[k]
		x := a.x[i]
		b.add(n, ss, -1)
		n2, sum2 := n-1, sum-x
		ss2 := 0.0
		if n2 >= 1 {
			ss2 = math.Max(0, ss-(x-sum/n)*(x-sum2/n2))
		}
		b.add(n2, ss2, 1)
		b.N--
		b.S -= x
	}
	out := logInference{mean: b.S / b.N, method: MethodLogRatioTStrata}
	dfPooled := b.N - float64(b.C)
	if b.N < float64(minSets) || dfPooled < 1 {
		out.note = fmt.Sprintf("n=%d: too few matched sets for an interval", int(b.N))
		return out
	}
	pooled := b.SSw / dfPooled
	k1 := float64(b.k1)
	v := b.A + k1*pooled
	out.se = math.Sqrt(v) / b.N
	out.df = dfPooled
	if den := b.B + k1*pooled*pooled/dfPooled; den > 0 {
		out.df = math.Min(out.df, v*v/den)
	}
	out.ok = true
	if b.N < MinSetsAlone {
		out.unbounded = true
		out.note = aloneNote(int(b.N), true)
	}
	return out
}

// headlineSample is the log ratios of one headline row: the sets of an
// estimate less those holding a run flagged as an outlier for the metric
// and those with a value not above zero.
type headlineSample struct {
	x       []float64
	sets    []matchedSet
	cell    []int
	flagged []matchedSet
	nonPos  int
}

func newHeadlineSample(sets []matchedSet, metric string, gross map[[2]string]bool) headlineSample {
	var h headlineSample
	for _, s := range sets {
		if gross[[2]string{s.t.Run, metric}] || gross[[2]string{s.b.Run, metric}] {
			h.flagged = append(h.flagged, s)
			continue
		}
		t, b := s.t.Metrics[metric], s.b.Metrics[metric]
		if !(t > 0) || !(b > 0) {
			h.nonPos++
			continue
		}
		h.x = append(h.x, math.Log(t/b))
		h.sets = append(h.sets, s)
		h.cell = append(h.cell, s.cell)
	}
	return h
}

// headlinePools pools the log ratios' spread of the configurations of
// each treatment, rate class and metric.
func (res *Result) headlinePools(jobs []*plannedJob) map[poolKey]*logPool {
	per := map[poolKey][][]float64{}
	for _, p := range jobs {
		if p.pair == "" {
			continue
		}
		for si, mi := range p.metrics {
			k := poolKey{p.treatment, p.class, mi}
			per[k] = append(per[k], newHeadlineSample(p.sets[si], res.Dataset.Metrics[mi].Name, res.grossOutliers()).x)
		}
	}
	pools := map[poolKey]*logPool{}
	for k, v := range per {
		pools[k] = poolLogs(v)
	}
	return pools
}

// grossOutliers maps (run, metric) to whether the run's metric lies
// GrossOutlierFactor typical deviations or more from its configuration's
// median, computed once.
func (res *Result) grossOutliers() map[[2]string]bool {
	if res.gross == nil {
		res.gross = map[[2]string]bool{}
		for _, o := range res.Outliers {
			if o.Deviations >= GrossOutlierFactor {
				res.gross[[2]string{o.Run, o.Metric}] = true
			}
		}
	}
	return res.gross
}

// poolKey names the configurations whose spread is pooled.
type poolKey struct {
	tr, class string
	metric    int
}

// headlineRow says where a headline row sits for Holm's adjustment.
type headlineRow struct {
	effect int // index in res.Effects of the StatHeadline row
	test   int // index in res.Tests, -1 for a pooled row
	family string
}

// addHeadline appends the headline rows (StatGeoRatio, StatGeoPenalty)
// of sample si of job p, of metric m, with their fragility and whether
// they say the treatment does better than the baseline; per
// configuration also the configuration's test (res.Tests).
func (res *Result) addHeadline(p *plannedJob, si int, m MetricDef, pools map[poolKey]*logPool, rows *[]headlineRow) {
	sets := p.sets[si]
	h := newHeadlineSample(sets, m.Name, res.grossOutliers())
	var pool *logPool
	if len(sets) > 0 && !slices.ContainsFunc(sets, func(s matchedSet) bool { return s.cell != sets[0].cell }) {
		pool = pools[poolKey{p.treatment, p.class, p.metrics[si]}]
	}
	conf := res.Options.Confidence
	li := inferLogs(h.x, h.cell, pool, MinSetsForInterval, conf)
	alpha := 1 - conf
	q := math.NaN()
	if li.ok {
		q = tQuantile(li.df, conf)
	}
	ratio := Effect{Treatment: p.treatment, Baseline: res.Levels[0], Metric: m.Name, Scope: p.scope, N: len(h.x),
		Statistic: StatGeoRatio, Unit: "ratio", Estimate: math.Exp(li.mean), Low: math.Exp(li.mean - q*li.se), High: math.Exp(li.mean + q*li.se),
		Method: string(li.method), P: li.p(), PHolm: math.NaN(), PMin: 0, Test: TestLogRatioT, Unbounded: li.unbounded,
		OutlierSets: len(h.flagged), LogEstimate: li.mean, LogSE: math.NaN(), DF: math.NaN()}
	if len(h.x) == 0 {
		ratio.Estimate, ratio.LogEstimate = math.NaN(), math.NaN()
	}
	if li.ok {
		ratio.LogSE, ratio.DF = li.se, li.df
	} else {
		ratio.Method, ratio.P, ratio.PMin = string(MethodNone), math.NaN(), math.NaN()
	}
	var notes []string
	notes = append(notes, li.note)
	if k := len(h.flagged); k > 0 {
		notes = append(notes, fmt.Sprintf("%d matched sets holding a run %d or more typical deviations from its configuration's median %s left out (runs %s); the other statistics keep them", k, GrossOutlierFactor, m.Name, setRuns(h.flagged)))
	}
	if h.nonPos > 0 {
		notes = append(notes, fmt.Sprintf("%d matched sets with a value not above zero left out (no log ratio)", h.nonPos))
	}
	if li.ok {
		ratio.Fragile, ratio.FragileSets = fragility(h, li, pool, conf)
		if li.significant(alpha) && (li.mean < 0) != m.Higher {
			ratio.Better = true
			ratio.Drivers = drivers(h, li.mean)
			notes = append(notes, "better than baseline: check the driving runs before believing it")
		}
	}
	ratio.Note = joinNotes(notes...)
	pen := ratio
	pen.Statistic, pen.Unit = StatGeoPenalty, "pct"
	toPen := func(r float64) float64 {
		if m.Higher {
			return (1 - r) * 100
		}
		return (r - 1) * 100
	}
	pen.Estimate, pen.Low, pen.High = toPen(ratio.Estimate), toPen(ratio.Low), toPen(ratio.High)
	if m.Higher {
		pen.Low, pen.High = pen.High, pen.Low
	}
	test := -1
	if p.pair != "" {
		test = len(res.Tests)
		smp := p.job.samples[si]
		w := Wilcoxon(smp.d)
		res.Tests = append(res.Tests, CellTest{Treatment: p.treatment, Metric: m.Name, Scope: p.class, Pair: p.pair, N: len(h.x),
			MeanDifference: p.job.est[si][statMeanDifference], Dz: CohenDz(smp.d),
			T: w.T, P: pen.P, PHolm: math.NaN(), Exact: w.Exact, Test: TestLogRatioT, PWilcoxon: w.P})
	}
	res.Effects = append(res.Effects, ratio, pen)
	family := ""
	switch {
	case p.pair != "":
		family = "per-configuration|" + p.class
	case p.scope == p.class:
		family = p.class
	}
	if family != "" {
		*rows = append(*rows, headlineRow{effect: len(res.Effects) - 1, test: test, family: family})
	}
}

// fragility leaves each set out in turn and names those whose absence
// flips whether p < alpha, or the sign of a significant mean log ratio.
// A row that claims no effect is not made fragile by an estimate near 0
// changing sign: its sign is no claim. Left out, an interval is allowed
// from two sets (so that a row of three is judged by the same t, not by
// having none).
func fragility(h headlineSample, li logInference, pool *logPool, conf float64) (bool, []string) {
	alpha := 1 - conf
	var agg *strataAgg
	multi := slices.ContainsFunc(h.cell, func(c int) bool { return c != h.cell[0] })
	if multi {
		agg = newStrataAgg(h.x, h.cell)
	}
	sig := li.significant(alpha)
	var flips []string
	rest := make([]float64, 0, len(h.x))
	for i := range h.x {
		var loo logInference
		if multi {
			loo = agg.infer(i, 2)
		} else {
			rest = append(append(rest[:0], h.x[:i]...), h.x[i+1:]...)
			if len(rest) == 0 {
				continue
			}
			loo = inferOne(rest, pool, 2, conf)
		}
		flipped := (loo.mean > 0 && li.mean < 0) || (loo.mean < 0 && li.mean > 0)
		if sig && flipped || loo.significant(alpha) != sig {
			s := h.sets[i]
			flips = append(flips, fmt.Sprintf("%s r%d", s.t.Pair, s.t.Replicate))
		}
	}
	return len(flips) > 0, flips
}

// drivers names the runs of the sets pulling the mean log ratio most to
// its side: the MaxDrivers sets of the most extreme log ratio of the
// mean's sign, each as its treatment run and baseline run.
func drivers(h headlineSample, mean float64) []string {
	idx := make([]int, 0, len(h.x))
	for i, v := range h.x {
		if (v < 0) == (mean < 0) && v != 0 {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(math.Abs(h.x[b]), math.Abs(h.x[a])) })
	var out []string
	for _, i := range idx[:min(len(idx), MaxDrivers)] {
		out = append(out, h.sets[i].t.Run, h.sets[i].b.Run)
	}
	return out
}

// setRuns lists the runs of sets, "treatment/baseline" joined by ", ".
func setRuns(sets []matchedSet) string {
	var out []string
	for _, s := range sets {
		out = append(out, s.t.Run+"/"+s.b.Run)
	}
	return strings.Join(out, ", ")
}

// holmHeadline adjusts the headline p-values by Holm's method across
// each family: every treatment and metric of a pooled scope, and every
// treatment, metric and configuration of a rate class per configuration.
// The ratio row beside each headline row and the configuration's test
// get the same adjusted p-value and family.
func (res *Result) holmHeadline(rows []headlineRow) {
	byFamily := map[string][]headlineRow{}
	var order []string
	for _, r := range rows {
		if byFamily[r.family] == nil {
			order = append(order, r.family)
		}
		byFamily[r.family] = append(byFamily[r.family], r)
	}
	for _, f := range order {
		rs := byFamily[f]
		ps := make([]float64, len(rs))
		trs, metrics, pairs := map[string]bool{}, map[string]bool{}, map[string]bool{}
		for i, r := range rs {
			e := res.Effects[r.effect]
			ps[i] = e.P
			trs[e.Treatment], metrics[e.Metric], pairs[e.Scope] = true, true, true
		}
		adj := Holm(ps)
		tests := 0
		for _, p := range ps {
			if !math.IsNaN(p) {
				tests++
			}
		}
		var name string
		if scope, ok := strings.CutPrefix(f, "per-configuration|"); ok {
			name = fmt.Sprintf("per configuration, %s: %d tests (%d treatments x %d metrics x %d configurations)", scope, tests, len(trs), len(metrics), len(pairs))
		} else {
			name = fmt.Sprintf("headline, %s: %d tests (%d treatments x %d metrics)", f, tests, len(trs), len(metrics))
		}
		for i, r := range rs {
			for _, k := range []int{r.effect - 1, r.effect} {
				res.Effects[k].PHolm, res.Effects[k].Family = adj[i], name
			}
			if r.test >= 0 {
				res.Tests[r.test].PHolm, res.Tests[r.test].Family = adj[i], name
			}
		}
	}
}
