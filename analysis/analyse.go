package analysis

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Result is everything an analysis found, in the order it is written.
type Result struct {
	Dataset *Dataset
	Options Options
	// Levels are the treatment's levels, baseline first; Treatments the
	// levels compared against it.
	Levels     []string
	Treatments []string
	// CellFactors names the factors of a matched configuration (every
	// factor but the treatment); Cells holds one per pair, sorted by pair.
	CellFactors []string
	Cells       []Cell
	Counts      []SetCount
	Excluded    []ExcludedSet
	Effects     []Effect
	Tests       []CellTest
	Sensitivity []LevelEffect
	Terms       []FactorTerm
	Models      []FactorModel
	Curves      []Curve
	// Percentiles says, per configuration, which latency percentiles its
	// runs hold enough samples for (native campaigns; imported evidence
	// has no sample counts).
	Percentiles []PercentileSupport
	// Telemetry summarises the sampled hosts per configuration, level and
	// role (campaigns with telemetry only).
	Telemetry []RoleUse
	// Stages is what a two-stage design achieved per configuration and
	// treatment (campaigns with one).
	Stages []StageResult
	// Outliers are the runs flagged as extreme against their
	// configuration's other replicates, per metric.
	Outliers []Outlier
	// Notes are caveats the report should show (e.g. skipped figures).
	Notes []string
	// MatchedSets counts the campaign's matched sets (pair and replicate),
	// Unfinished those with a run not finished yet (see SetCount).
	MatchedSets, Unfinished int

	gross map[[2]string]bool // see grossOutliers
}

// Cell is one matched configuration: its factors without the treatment.
type Cell struct {
	Pair       string
	Factors    []string
	Saturating bool
	// Healthy and Excluded count matched sets per treatment (aligned with
	// Result.Treatments).
	Healthy, Excluded []int
}

// SetCount counts a treatment's matched sets.
type SetCount struct {
	Treatment string
	Sets      int // finished matched sets with a baseline and this treatment
	Healthy   int // both runs healthy: the sets analysed
	Excluded  int
	// Unfinished counts the sets with a run not finished yet (pending,
	// running or interrupted, in a campaign still running or stopped):
	// left out, and not counted in Sets or Excluded.
	Unfinished int
}

// ExcludedSet is a matched set left out, with why.
type ExcludedSet struct {
	Treatment string
	Pair      string
	Replicate int
	Reasons   []string
}

// Effect is one line of effects.csv.
type Effect struct {
	Treatment, Baseline, Metric, Scope string
	N                                  int
	Statistic, Unit                    string
	Estimate, Low, High                float64
	Method                             string
	// Note says why there is no interval, or why it is not the
	// bootstrap's; empty otherwise.
	Note string
	// P and PHolm are NaN where there is no test.
	P, PHolm float64
	// Test names the test of P, the one the row's interval inverts
	// (TestT, TestSign, TestBootstrap, TestLogRatioT); PMin is the
	// smallest p-value it could give
	// with this design.
	Test string
	PMin float64
	// Unbounded marks an interval whose matched sets alone cannot bound
	// the mean (too few, and no spread pooled from other configurations);
	// the note says so.
	Unbounded bool
	// OutlierSets counts the matched sets holding a run flagged as an
	// outlier for the metric; on the headline rows (StatGeoRatio,
	// StatGeoPenalty), the sets holding a gross outlier
	// (GrossOutlierFactor), which they leave out.
	OutlierSets int
	// LogEstimate, LogSE and DF are the headline procedure's mean log
	// ratio log(treatment/baseline), its standard error and degrees of
	// freedom (headline rows; NaN elsewhere or without an interval).
	LogEstimate, LogSE, DF float64
	// Family names the tests PHolm is adjusted across (headline rows of
	// a pooled scope or a configuration).
	Family string
	// Fragile marks a headline row whose significance (or, significant,
	// its sign) flips with one matched set left out; FragileSets names those sets ("pair rN").
	Fragile     bool
	FragileSets []string
	// Better marks a headline row whose interval lies wholly on the side
	// of the treatment doing better than the baseline; Drivers are the
	// runs (treatment, baseline) of the sets pulling it most that way.
	Better  bool
	Drivers []string
}

// CellTest is the significance of one treatment and metric in one cell.
type CellTest struct {
	Treatment, Metric, Scope, Pair string
	N                              int
	MeanDifference, Dz             float64
	// T and Exact are the Wilcoxon signed-rank test's statistic and
	// whether its PWilcoxon is exact: a distribution-free cross-check.
	T float64
	// P is the configuration's headline test (Test), PHolm it adjusted
	// across Family.
	P, PHolm  float64
	Exact     bool
	Test      string
	Family    string
	PWilcoxon float64
}

// LevelEffect is the mean penalty at one level of one factor.
type LevelEffect struct {
	Treatment, Metric, Scope, Factor, Level string
	N, Cells                                int
	Mean, Low, High                         float64
	Method                                  string
	Note                                    string
	// Spread is max-min of the factor's level means (same on every level).
	Spread float64
}

// FactorTerm is one factor of the main-effects model of the penalty.
type FactorTerm struct {
	Treatment, Metric, Scope, Factor string
	Rank, DF                         int
	SS, F, P                         float64
	// Share is SS over the total sum of squares: the factor's share of the
	// variance of the penalty.
	Share float64
	// Note says why a factor is not fitted (e.g. NoteIdentityFactor);
	// its Rank is then 0.
	Note string
}

// FactorModel summarises one main-effects model.
type FactorModel struct {
	Treatment, Metric, Scope string
	N, DFResid               int
	R2                       float64
}

// Curve is a latency percentile curve: one level, one cell, one kind,
// merged over the cell's healthy replicates. Its points stop at the
// highest percentile every one of those runs supports (ten samples beyond
// it, as for the percentile metrics).
type Curve struct {
	Pair, Kind, Level string
	Runs              int
	// MinSamples is the fewest samples of a merged run; -1 when the runs
	// carry no sample count (imported evidence), whose curves are whole.
	MinSamples int
	Points     []CurvePoint
}

// CurvePoint is one percentile (0..100) and its latency in ms.
type CurvePoint struct{ Percentile, Ms float64 }

// Scope names.
const (
	ScopeAll       = "all"
	ScopeAllCapped = "all-capped"
	ScopeAllMax    = "all-max"
)

// matchedSet is one pair and replicate with a healthy baseline and
// treatment run.
type matchedSet struct {
	cell int // index into Result.Cells
	t, b *Run
}

// Analyse computes every estimate. With no healthy matched set it returns
// the partial result (runs, counts, exclusions) and ErrNoHealthySet.
func Analyse(d *Dataset, opt Options) (*Result, error) {
	opt, err := opt.withDefaults(d)
	if err != nil {
		return nil, err
	}
	d, support, notes := supportedPercentiles(withoutIdleGateway(d))
	res := &Result{Dataset: d, Options: opt, Percentiles: support, Notes: notes}
	ti := slices.Index(d.Factors, d.Treatment)
	level := func(r *Run) string {
		if ti < 0 || ti >= len(r.Factors) {
			return ""
		}
		return r.Factors[ti]
	}
	if err := res.findLevels(level); err != nil {
		return nil, err
	}
	cellOf := res.buildCells(ti)
	sets, healthyAny := res.matchSets(level, cellOf)
	res.flagOutliers(level)
	res.notesTLSKept()
	res.buildTelemetry()
	if !healthyAny {
		res.Notes = append(res.Notes, "Partial report: "+ErrNoHealthySet.Error()+". See the excluded sets below for the reasons.")
		return res, ErrNoHealthySet
	}
	if err := res.buildCurves(); err != nil {
		return nil, err
	}

	effectJobs, sensJobs := res.planEstimates(sets)
	attachPools(effectJobs, sensJobs)
	var jobs []*bootJob
	for _, p := range effectJobs {
		jobs = append(jobs, p.job)
	}
	for _, p := range sensJobs {
		jobs = append(jobs, p.job)
	}
	runJobs(jobs, bootConfig{seed: uint64(opt.Seed), resamples: opt.Resamples, confidence: opt.Confidence, method: opt.Method}, opt.Workers)

	res.collectEffects(effectJobs)
	res.noteEffectsTLSKept(sets)
	res.buildStages(sets)
	res.collectSensitivity(sensJobs, effectJobs)
	return res, nil
}

// findLevels sets the treatment's levels, baseline first and the others
// (the treatments) sorted. A baseline no run has, or no level besides it,
// leaves nothing to compare: that is an error.
func (res *Result) findLevels(level func(*Run) string) error {
	d, baseline := res.Dataset, res.Options.Baseline
	seen := map[string]bool{}
	var others []string
	for i := range d.Runs {
		l := level(&d.Runs[i])
		if !seen[l] {
			seen[l] = true
			if l != baseline {
				others = append(others, l)
			}
		}
	}
	slices.Sort(others)
	if !seen[baseline] {
		all := slices.Clone(others)
		return &BaselineError{Baseline: baseline, Treatment: d.Treatment, Levels: all}
	}
	res.Levels = append([]string{baseline}, others...)
	res.Treatments = others
	if len(others) == 0 {
		return fmt.Errorf("%w: every run has %s = %s", ErrOneLevel, d.Treatment, baseline)
	}
	return nil
}

// buildCells makes one Cell per pair, sorted by pair, with the factors of
// the pair's first run but the treatment (factor ti), and returns each
// pair's index in res.Cells.
func (res *Result) buildCells(ti int) (cellOf map[string]int) {
	d := res.Dataset
	for i, f := range d.Factors {
		if i != ti {
			res.CellFactors = append(res.CellFactors, f)
		}
	}
	cellOf = map[string]int{}
	var pairs []string
	first := map[string]*Run{}
	for i := range d.Runs {
		r := &d.Runs[i]
		if _, ok := first[r.Pair]; !ok {
			first[r.Pair] = r
			pairs = append(pairs, r.Pair)
		}
	}
	slices.Sort(pairs)
	for i, p := range pairs {
		r := first[p]
		c := Cell{Pair: p, Saturating: r.Saturating}
		for k, v := range r.Factors {
			if k != ti {
				c.Factors = append(c.Factors, v)
			}
		}
		res.Cells = append(res.Cells, c)
		cellOf[p] = i
	}
	return cellOf
}

// setKey names a matched set: a pair and a replicate.
type setKey struct {
	pair string
	rep  int
}

// finalRuns groups each row's final attempt by matched set and level, and
// lists the sets in order of pair and replicate.
func finalRuns(d *Dataset, level func(*Run) string) (map[setKey]map[string]*Run, []setKey) {
	final := map[setKey]map[string]*Run{}
	var keys []setKey
	for i := range d.Runs {
		r := &d.Runs[i]
		if !r.Final {
			continue
		}
		k := setKey{r.Pair, r.Replicate}
		if final[k] == nil {
			final[k] = map[string]*Run{}
			keys = append(keys, k)
		}
		final[k][level(r)] = r
	}
	slices.SortFunc(keys, func(a, b setKey) int {
		return cmp.Or(cmp.Compare(a.pair, b.pair), cmp.Compare(a.rep, b.rep))
	})
	return final, keys
}

// matchSets sorts each treatment's matched sets (its run and the
// baseline's, from each row's final attempt) into healthy, excluded with
// the reasons, and unfinished, counting them per treatment (res.Counts)
// and per cell. It returns the healthy sets per treatment, and whether any
// treatment has one. A set with a run not finished yet is left out and
// only counted, with a note; an imported set missing one of its runs is
// excluded as unpaired.
func (res *Result) matchSets(level func(*Run) string, cellOf map[string]int) (map[string][]matchedSet, bool) {
	d, baseline := res.Dataset, res.Options.Baseline
	final, keys := finalRuns(d, level)
	sets := map[string][]matchedSet{}
	unfinishedSets := map[setKey]bool{}
	healthyAny := false
	for i := range res.Cells {
		res.Cells[i].Healthy = make([]int, len(res.Treatments))
		res.Cells[i].Excluded = make([]int, len(res.Treatments))
	}
	exclude := func(cnt *SetCount, tix int, k setKey, reasons []string) {
		cnt.Excluded++
		res.Cells[cellOf[k.pair]].Excluded[tix]++
		res.Excluded = append(res.Excluded, ExcludedSet{Treatment: res.Treatments[tix], Pair: k.pair, Replicate: k.rep, Reasons: reasons})
	}
	for tix, tr := range res.Treatments {
		cnt := SetCount{Treatment: tr}
		for _, k := range keys {
			m := final[k]
			b, t := m[baseline], m[tr]
			if b == nil || t == nil {
				if d.Imported && (b != nil || t != nil) {
					cnt.Sets++
					exclude(&cnt, tix, k, append(unpaired(b, baseline), unpaired(t, tr)...))
				}
				continue
			}
			if unfinished(b) || unfinished(t) {
				cnt.Unfinished++
				unfinishedSets[k] = true
				continue
			}
			cnt.Sets++
			if b.Outcome == OutcomeDone && t.Outcome == OutcomeDone {
				cnt.Healthy++
				res.Cells[cellOf[k.pair]].Healthy[tix]++
				sets[tr] = append(sets[tr], matchedSet{cell: cellOf[k.pair], t: t, b: b})
				continue
			}
			exclude(&cnt, tix, k, append(unhealthy(b, level(b)), unhealthy(t, level(t))...))
		}
		if cnt.Healthy > 0 {
			healthyAny = true
		}
		res.Counts = append(res.Counts, cnt)
	}
	res.MatchedSets, res.Unfinished = len(keys), len(unfinishedSets)
	if n := len(unfinishedSets); n > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("Partial analysis: %d of %d matched sets have a run not finished yet (pending, running or interrupted); they are left out, not counted as excluded.",
			n, len(keys)))
	}
	return sets, healthyAny
}

// rateClass is a pooled scope and whether its configurations saturate:
// capped (fixed-rate) and saturating runs are never pooled together.
type rateClass struct {
	scope string
	sat   bool
}

// rateClasses are the pooled scopes of the cells: ScopeAll when all share
// one rate class, else ScopeAllCapped and ScopeAllMax.
func rateClasses(cells []Cell) []rateClass {
	capped, saturating := false, false
	for _, c := range cells {
		if c.Saturating {
			saturating = true
		} else {
			capped = true
		}
	}
	switch {
	case capped && saturating:
		return []rateClass{{ScopeAllCapped, false}, {ScopeAllMax, true}}
	case saturating:
		return []rateClass{{ScopeAll, true}}
	default:
		return []rateClass{{ScopeAll, false}}
	}
}

// planEstimates plans the bootstrap jobs of every treatment and rate
// class: the effects (pooled over the class's cells, pooled again without
// the sets holding an outlier, and per cell) and the sensitivity (per
// level of each varying factor). The order of the jobs is the order of
// the output.
func (res *Result) planEstimates(sets map[string][]matchedSet) (effectJobs, sensJobs []*plannedJob) {
	for _, tr := range res.Treatments {
		for _, cl := range rateClasses(res.Cells) {
			var cls []matchedSet
			for _, s := range sets[tr] {
				if res.Cells[s.cell].Saturating == cl.sat {
					cls = append(cls, s)
				}
			}
			if len(cls) == 0 {
				continue
			}
			metrics := metricsFor(res.Dataset.Metrics, cl.sat)
			effectJobs = append(effectJobs, res.planPooled(tr, cl, cls, metrics)...)
			effectJobs = append(effectJobs, res.planWithoutOutliers(tr, cl, cls, metrics)...)
			effectJobs = append(effectJobs, res.planPerCell(tr, cl, cls, metrics)...)
			sensJobs = append(sensJobs, res.planSensitivity(tr, cl, cls, metrics)...)
		}
	}
	return effectJobs, sensJobs
}

// planPooled plans a treatment's effects pooled over the cells of a rate
// class: the bootstrap resamples cells, then replicates.
func (res *Result) planPooled(tr string, cl rateClass, cls []matchedSet, metrics []int) []*plannedJob {
	pj := planJobs(res.Dataset.Metrics, metrics, cls, true, false, tr+"|"+cl.scope)
	for _, p := range pj {
		p.treatment, p.scope, p.class = tr, cl.scope, cl.scope
	}
	return pj
}

// planWithoutOutliers plans the pooled effects again without the sets
// holding a run flagged as an outlier, for each metric that has one: how
// much the headline rests on those runs.
func (res *Result) planWithoutOutliers(tr string, cl rateClass, cls []matchedSet, metrics []int) []*plannedJob {
	var out []*plannedJob
	for _, mi := range metrics {
		name := res.Dataset.Metrics[mi].Name
		if !slices.ContainsFunc(cls, func(s matchedSet) bool { return s.flagged(name) }) {
			continue
		}
		var keep []matchedSet
		for _, s := range cls {
			if !s.flagged(name) {
				keep = append(keep, s)
			}
		}
		scope := cl.scope + ScopeSuffixWithoutOutliers
		oj := planJobs(res.Dataset.Metrics, []int{mi}, keep, true, false, tr+"|"+scope)
		for _, p := range oj {
			p.treatment, p.scope, p.class = tr, scope, cl.scope
		}
		out = append(out, oj...)
	}
	return out
}

// planPerCell plans a treatment's effects in each cell of a rate class on
// its own; cls is sorted by cell.
func (res *Result) planPerCell(tr string, cl rateClass, cls []matchedSet, metrics []int) []*plannedJob {
	var out []*plannedJob
	for start := 0; start < len(cls); {
		end := start
		for end < len(cls) && cls[end].cell == cls[start].cell {
			end++
		}
		pair := res.Cells[cls[start].cell].Pair
		cj := planJobs(res.Dataset.Metrics, metrics, cls[start:end], false, false, tr+"|"+pair)
		for _, p := range cj {
			p.treatment, p.scope, p.pair, p.class = tr, pair, pair, cl.scope
		}
		out = append(out, cj...)
		start = end
	}
	return out
}

// planSensitivity plans the mean penalty per level of each factor that
// varies within a rate class, levels in compareLevels order. A factor of
// many levels each holding one configuration is a configuration id, whose
// levels are the per-configuration effects: it is left out (one row in
// sensitivity.csv says why).
func (res *Result) planSensitivity(tr string, cl rateClass, cls []matchedSet, metrics []int) []*plannedJob {
	var out []*plannedJob
	for fi, f := range res.CellFactors {
		byLevel := map[string][]matchedSet{}
		cellsOf := map[string]int{}
		var levels []string
		lastCell := map[string]int{}
		for _, s := range cls {
			lv := res.Cells[s.cell].Factors[fi]
			if _, ok := byLevel[lv]; !ok {
				levels = append(levels, lv)
				lastCell[lv] = -1
			}
			byLevel[lv] = append(byLevel[lv], s)
			if lastCell[lv] != s.cell {
				lastCell[lv] = s.cell
				cellsOf[lv]++
			}
		}
		if len(levels) < 2 {
			continue
		}
		identity := len(levels) >= absorbLevels
		for _, lv := range levels {
			identity = identity && cellsOf[lv] == 1
		}
		if identity {
			continue
		}
		slices.SortFunc(levels, compareLevels)
		for _, lv := range levels {
			sj := planJobs(res.Dataset.Metrics, metrics, byLevel[lv], true, true, tr+"|"+cl.scope+"|"+f+"="+lv)
			for _, p := range sj {
				p.treatment, p.scope, p.class, p.factor, p.level = tr, cl.scope, cl.scope, f, lv
			}
			out = append(out, sj...)
		}
	}
	return out
}

// unfinished says whether a run has not finished yet: never attempted,
// in flight, or interrupted (it runs again on resume).
func unfinished(r *Run) bool {
	return r.Outcome == "" || r.Outcome == OutcomeRunning || r.Outcome == OutcomeInterrupted
}

// attachPools pools the spread of the configurations of each treatment,
// rate class and metric (their per-configuration samples) and gives it to
// every sample that rests on a single configuration: the configuration's
// own estimates, and a factor level or pooled scope holding only it.
func attachPools(effects, sens []*plannedJob) {
	type key struct {
		tr, class string
		metric    int
	}
	per := map[key][]*pairedSample{}
	for _, p := range effects {
		if p.pair == "" {
			continue
		}
		for si, mi := range p.metrics {
			k := key{p.treatment, p.class, mi}
			per[k] = append(per[k], p.job.samples[si])
		}
	}
	pools := map[key]*spreadPool{}
	for k, samples := range per {
		pools[k] = poolSpread(samples)
	}
	for _, p := range append(slices.Clone(effects), sens...) {
		for si, mi := range p.metrics {
			sets := p.sets[si]
			if len(sets) == 0 || slices.ContainsFunc(sets, func(s matchedSet) bool { return s.cell != sets[0].cell }) {
				continue
			}
			p.job.samples[si].pool = pools[key{p.treatment, p.class, mi}]
		}
	}
}

// unhealthy describes why a member of a set does not count.
func unhealthy(r *Run, level string) []string {
	var why string
	switch r.Outcome {
	case OutcomeDone:
		return nil
	case "":
		why = "not run"
	default:
		why = r.Outcome
		if len(r.Reasons) > 0 {
			why += ": " + strings.Join(r.Reasons, "; ")
		}
		if r.Error != "" {
			why += ": " + r.Error
		}
	}
	return []string{level + " " + r.Run + " " + why}
}

func metricsFor(defs []MetricDef, saturating bool) []int {
	var out []int
	for i, m := range defs {
		if m.MaxOnly && !saturating {
			continue
		}
		out = append(out, i)
	}
	return out
}

// compareLevels orders numbers numerically and before words.
func compareLevels(a, b string) int {
	fa, ea := parseNum(a)
	fb, eb := parseNum(b)
	switch {
	case ea && eb:
		return cmp.Or(cmp.Compare(fa, fb), cmp.Compare(a, b))
	case ea:
		return -1
	case eb:
		return 1
	}
	return cmp.Compare(a, b)
}

// plannedJob is a bootstrap job and what its samples stand for.
type plannedJob struct {
	job                    *bootJob
	metrics                []int // metric index per sample
	sets                   [][]matchedSet
	treatment, scope, pair string
	class                  string // the pooled scope the sets belong to
	factor, level          string
}

// planJobs groups the metrics observed on the same sets into jobs. A set
// counts for a metric when both runs have a finite value and the baseline
// is non-zero (the penalty divides by it).
func planJobs(defs []MetricDef, metrics []int, sets []matchedSet, clustered, meanOnly bool, key string) []*plannedJob {
	var out []*plannedJob
	var lists [][]int
	for _, mi := range metrics {
		name := defs[mi].Name
		var valid []int
		for i, s := range sets {
			tv, ok1 := s.t.Metrics[name]
			bv, ok2 := s.b.Metrics[name]
			if ok1 && ok2 && finite(tv) && finite(bv) && bv != 0 {
				valid = append(valid, i)
			}
		}
		if len(valid) == 0 {
			continue
		}
		gi := slices.IndexFunc(lists, func(l []int) bool { return slices.Equal(l, valid) })
		if gi < 0 {
			lists = append(lists, valid)
			sub := make([]matchedSet, len(valid))
			for k, i := range valid {
				sub[k] = sets[i]
			}
			var clusters [][]int32
			if clustered {
				for k := 0; k < len(sub); {
					e := k
					var c []int32
					for e < len(sub) && sub[e].cell == sub[k].cell {
						c = append(c, int32(e))
						e++
					}
					clusters = append(clusters, c)
					k = e
				}
			}
			out = append(out, &plannedJob{job: &bootJob{clusters: clusters, meanOnly: meanOnly, small: true}})
			gi = len(out) - 1
			out[gi].sets = append(out[gi].sets, sub)
		} else {
			out[gi].sets = append(out[gi].sets, out[gi].sets[0])
		}
		p := out[gi]
		sub := p.sets[len(p.sets)-1]
		t := make([]float64, len(sub))
		b := make([]float64, len(sub))
		for k, s := range sub {
			t[k], b[k] = s.t.Metrics[name], s.b.Metrics[name]
		}
		p.job.samples = append(p.job.samples, newPairedSample(t, b, defs[mi].Higher))
		p.metrics = append(p.metrics, mi)
	}
	for _, p := range out {
		var names []string
		for _, mi := range p.metrics {
			names = append(names, defs[mi].Name)
		}
		p.job.key = key + "|" + strings.Join(names, ",")
	}
	return out
}

// unpaired is the reason for a matched set's missing run of level.
func unpaired(r *Run, level string) []string {
	if r != nil {
		return nil
	}
	return []string{level + ": no run with this pair and replicate (unpaired)"}
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// Estimate is one statistic with its interval.
type Estimate struct {
	Statistic           string
	Estimate, Low, High float64
	Method              string
}

// BootstrapPaired estimates the four paired statistics of treatment t
// against baseline b (mean and median penalty, mean difference, ratio of
// means) with independent resampling of the pairs, as
// scipy.stats.bootstrap(paired=True) does. higher says larger values are
// better. Options give method, resamples, confidence and seed (Seed is
// used as given).
func BootstrapPaired(t, b []float64, higher bool, o Options) ([]Estimate, error) {
	if len(t) != len(b) {
		return nil, fmt.Errorf("paired samples differ in length: %d and %d", len(t), len(b))
	}
	o, err := o.withDefaults(&Dataset{Seed: o.Seed})
	if err != nil {
		return nil, err
	}
	j := &bootJob{key: "paired", samples: []*pairedSample{newPairedSample(t, b, higher)}}
	j.run(bootConfig{seed: uint64(o.Seed), resamples: o.Resamples, confidence: o.Confidence, method: o.Method}, &bootScratch{})
	out := make([]Estimate, nStats)
	for k := range nStats {
		out[k] = Estimate{Statistic: statNames[k], Estimate: j.est[0][k], Low: j.low[0][k], High: j.high[0][k], Method: string(j.used[0][k])}
	}
	return out, nil
}
