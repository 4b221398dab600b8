package analysis

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"
)

// ErrNotComparable: two campaigns cannot be compared (the same campaign
// twice, no configuration in common, different treatment factors); the
// message says which and what to compare instead.
var ErrNotComparable = errors.New("campaigns not comparable")

// Capture is a yes/no answer that may be unanswerable: whether an
// estimate lies inside the other campaign's interval, whether two signs
// agree, whether a row replicated.
type Capture string

// Answers of a Capture. CaptureNoInterval says an interval the answer
// needs is missing (too few matched sets); "" that the row is in one
// campaign only.
const (
	CaptureYes        Capture = "yes"
	CaptureNo         Capture = "no"
	CaptureNoInterval Capture = "no interval"
)

// Where a compared row is present.
const (
	InBoth  = "both"
	OnlyInA = "only A"
	OnlyInB = "only B"
)

// Meta is one combined estimate of the campaigns' log ratios: Log and SE
// on the log-ratio scale, and the same as a penalty in percent (the
// headline's scale) with its interval at the comparison's confidence.
type Meta struct {
	Log, SE             float64
	Estimate, Low, High float64
}

// Heterogeneity is how much the campaigns' log ratios differ beyond
// their standard errors: Cochran's Q with its p-value (chi-square, k-1
// degrees of freedom), I² in percent (the share of the variation that is
// between campaigns) and DerSimonian and Laird's between-campaign
// variance tau² on the log-ratio scale.
type Heterogeneity struct {
	Q, P, I2, Tau2 float64
}

// Replication is one headline row of two campaigns side by side.
type Replication struct {
	Treatment, Baseline, Metric, Scope, Statistic string
	// In is InBoth, OnlyInA or OnlyInB; A or B is nil where absent.
	In   string
	A, B *Effect
	// LogA and SEA (LogB, SEB) are A's (B's) log ratio and its standard
	// error derived from the interval; NaN where there is none (Note says
	// why).
	LogA, SEA, LogB, SEB float64
	// BInA: B's estimate lies inside A's interval; AInB the converse.
	BInA, AInB Capture
	// SignsAgree: both penalties worse, both better, or both zero.
	SignsAgree Capture
	// Replicated: each estimate lies inside the other's interval.
	Replicated Capture
	// Fixed is the inverse-variance (fixed-effect) combination, Random
	// DerSimonian and Laird's random-effects one; NaN without both SEs.
	Fixed, Random Meta
	Het           Heterogeneity
	Note          string
}

// Comparison is two campaigns' headline rows side by side, over the
// configurations they share.
type Comparison struct {
	// LabelA and LabelB name the campaigns (their files).
	LabelA, LabelB string
	A, B           *Result
	// Shared lists the configurations (pairs) both campaigns have, sorted;
	// OnlyA and OnlyB those left out because the other lacks them.
	Shared, OnlyA, OnlyB []string
	Confidence           float64
	Rows                 []Replication
	Notes                []string
}

// Compare analyses campaigns a and b over the configurations (pairs)
// they share, with the same options, and sets their headline rows side
// by side. It refuses (ErrNotComparable) the same campaign twice, two
// campaigns of different treatment factors and two that share no
// configuration. When one campaign has no healthy matched set in the
// shared configurations the comparison lists every row of the other as
// its only, and the error wraps ErrNoHealthySet.
func Compare(a, b *Dataset, labelA, labelB string, opt Options) (*Comparison, error) {
	if same, created := sameCampaign(a, b); same {
		return nil, fmt.Errorf("%w: %s and %s hold the same campaign (%s, created %s): a campaign replicates itself trivially; compare two runs of its plan",
			ErrNotComparable, labelA, labelB, a.Campaign, created)
	}
	if a.Treatment != b.Treatment {
		return nil, fmt.Errorf("%w: %s compares %s, %s compares %s: compare two campaigns of one treatment factor",
			ErrNotComparable, labelA, a.Treatment, labelB, b.Treatment)
	}
	shared, onlyA, onlyB := SharedConfigurations(a, b)
	if len(shared) == 0 {
		return nil, fmt.Errorf("%w: %s (campaign %s, %s) and %s (campaign %s, %s) share no configuration: compare two campaigns of one plan, or of plans with cells in common",
			ErrNotComparable, labelA, a.Campaign, configurations(len(onlyA)), labelB, b.Campaign, configurations(len(onlyB)))
	}
	c := &Comparison{LabelA: labelA, LabelB: labelB, Shared: shared, OnlyA: onlyA, OnlyB: onlyB}
	if n := len(onlyA) + len(onlyB); n > 0 {
		c.Notes = append(c.Notes, fmt.Sprintf("Compared over the %s both campaigns have; %d only in %s and %d only in %s are left out of both analyses.",
			configurations(len(shared)), len(onlyA), labelA, len(onlyB), labelB))
	}
	var noHealthy []string
	for _, side := range []struct {
		d     *Dataset
		label string
		res   **Result
	}{{a, labelA, &c.A}, {b, labelB, &c.B}} {
		res, err := Analyse(Restrict(side.d, shared), opt)
		switch {
		case errors.Is(err, ErrNoHealthySet):
			noHealthy = append(noHealthy, side.label)
		case err != nil:
			return nil, fmt.Errorf("%s: %w", side.label, err)
		}
		*side.res = res
		for _, n := range res.Notes {
			c.Notes = append(c.Notes, side.label+": "+n)
		}
	}
	c.Confidence = c.A.Options.Confidence
	c.Rows = MatchHeadlines(c.A, c.B, c.Confidence)
	if len(noHealthy) > 0 {
		return c, fmt.Errorf("%s: %w, in the %s both campaigns have", strings.Join(noHealthy, " and "), ErrNoHealthySet, configurations(len(shared)))
	}
	return c, nil
}

// configurations is n configurations, in words.
func configurations(n int) string {
	if n == 1 {
		return "1 configuration"
	}
	return fmt.Sprintf("%d configurations", n)
}

// sameCampaign says whether a and b are one campaign (a file and its
// copy): the same name and registration time.
func sameCampaign(a, b *Dataset) (bool, string) {
	info := func(d *Dataset, name string) string {
		for _, f := range d.Info {
			if f.Name == name {
				return f.Value
			}
		}
		return ""
	}
	ca, cb := info(a, "created"), info(b, "created")
	return a.Campaign == b.Campaign && ca != "" && ca == cb, ca
}

// SharedConfigurations lists, sorted, the configurations (pairs: a row's
// identity without its treatment, the same in every campaign of a plan)
// that a and b both have, and those only one has.
func SharedConfigurations(a, b *Dataset) (shared, onlyA, onlyB []string) {
	pairs := func(d *Dataset) []string {
		var out []string
		for _, r := range d.Runs {
			out = append(out, r.Pair)
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	pa, pb := pairs(a), pairs(b)
	for _, p := range pa {
		if _, ok := slices.BinarySearch(pb, p); ok {
			shared = append(shared, p)
		} else {
			onlyA = append(onlyA, p)
		}
	}
	for _, p := range pb {
		if _, ok := slices.BinarySearch(pa, p); !ok {
			onlyB = append(onlyB, p)
		}
	}
	return shared, onlyA, onlyB
}

// Restrict returns a copy of d holding only the runs of the given pairs
// (sorted).
func Restrict(d *Dataset, pairs []string) *Dataset {
	out := *d
	out.Runs = nil
	for _, r := range d.Runs {
		if _, ok := slices.BinarySearch(pairs, r.Pair); ok {
			out.Runs = append(out.Runs, r)
		}
	}
	return &out
}

// isHeadline says whether e is a headline row: the headline statistic
// (StatHeadline) pooled over a rate class's configurations.
func isHeadline(e Effect) bool {
	return e.Statistic == StatHeadline && (e.Scope == ScopeAll || e.Scope == ScopeAllCapped || e.Scope == ScopeAllMax)
}

// MatchHeadlines pairs the headline rows of a and b by treatment,
// baseline, metric and scope, in a's order, then b's rows that a lacks,
// and compares each pair at confidence conf.
func MatchHeadlines(a, b *Result, conf float64) []Replication {
	type key struct{ tr, base, metric, scope string }
	kOf := func(e *Effect) key { return key{e.Treatment, e.Baseline, e.Metric, e.Scope} }
	inB := map[key]*Effect{}
	for i := range b.Effects {
		if e := &b.Effects[i]; isHeadline(*e) {
			inB[kOf(e)] = e
		}
	}
	higher := func(metric string) bool {
		for _, res := range []*Result{a, b} {
			for _, m := range res.Dataset.Metrics {
				if m.Name == metric {
					return m.Higher
				}
			}
		}
		return false
	}
	var rows []Replication
	seen := map[key]bool{}
	for i := range a.Effects {
		ea := &a.Effects[i]
		if !isHeadline(*ea) {
			continue
		}
		k := kOf(ea)
		seen[k] = true
		r := Replicate(ea, inB[k], higher(ea.Metric), conf)
		r.Note = joinNotes(r.Note, configurationsDiffer(a, b, ea))
		rows = append(rows, r)
	}
	for i := range b.Effects {
		eb := &b.Effects[i]
		if isHeadline(*eb) && !seen[kOf(eb)] {
			rows = append(rows, Replicate(nil, eb, higher(eb.Metric), conf))
		}
	}
	return rows
}

// configurationsDiffer says when the two campaigns pool a headline row
// over different configurations (one lacks a healthy matched set in
// some); "" when they pool the same ones.
func configurationsDiffer(a, b *Result, e *Effect) string {
	pooled := func(res *Result) []string {
		tix := slices.Index(res.Treatments, e.Treatment)
		if tix < 0 {
			return nil
		}
		var out []string
		for _, c := range res.Cells {
			inScope := e.Scope == ScopeAll || (e.Scope == ScopeAllMax) == c.Saturating
			if inScope && c.Healthy[tix] > 0 {
				out = append(out, c.Pair)
			}
		}
		return out
	}
	pa, pb := pooled(a), pooled(b)
	if pb == nil || slices.Equal(pa, pb) {
		return ""
	}
	return fmt.Sprintf("pooled over different configurations: A over %d, B over %d (a configuration without a healthy matched set in one campaign)", len(pa), len(pb))
}

// Replicate compares one headline row of two campaigns (a or b nil where
// a campaign lacks it): whether each estimate lies inside the other's
// interval, whether their signs agree, and their fixed- and
// random-effects combination on the log-ratio scale. higher says the
// metric's larger values are better (the penalty is then 100 (1 - ratio)).
func Replicate(a, b *Effect, higher bool, conf float64) Replication {
	e := a
	if e == nil {
		e = b
	}
	r := Replication{Treatment: e.Treatment, Baseline: e.Baseline, Metric: e.Metric, Scope: e.Scope, Statistic: e.Statistic,
		A: a, B: b, LogA: math.NaN(), SEA: math.NaN(), LogB: math.NaN(), SEB: math.NaN()}
	nan := Meta{math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()}
	r.Fixed, r.Random = nan, nan
	r.Het = Heterogeneity{math.NaN(), math.NaN(), math.NaN(), math.NaN()}
	switch {
	case a == nil:
		r.In = OnlyInB
		return r
	case b == nil:
		r.In = OnlyInA
		return r
	}
	r.In = InBoth
	r.BInA, r.AInB = captures(b.Estimate, a), captures(a.Estimate, b)
	r.SignsAgree = CaptureNo
	if sign(a.Estimate) == sign(b.Estimate) {
		r.SignsAgree = CaptureYes
	}
	switch {
	case r.BInA == CaptureNo || r.AInB == CaptureNo:
		r.Replicated = CaptureNo
	case r.BInA == CaptureYes && r.AInB == CaptureYes:
		r.Replicated = CaptureYes
	default:
		r.Replicated = CaptureNoInterval
	}
	var whyA, whyB string
	r.LogA, r.SEA, whyA = LogRatioSE(*a, higher, conf)
	r.LogB, r.SEB, whyB = LogRatioSE(*b, higher, conf)
	if whyA != "" || whyB != "" {
		var why []string
		if whyA != "" {
			why = append(why, "A: "+whyA)
		}
		if whyB != "" {
			why = append(why, "B: "+whyB)
		}
		r.Note = "no combined estimate: " + strings.Join(why, "; ")
		return r
	}
	fixed, random, het := MetaAnalysis([]float64{r.LogA, r.LogB}, []float64{r.SEA, r.SEB}, conf)
	r.Fixed, r.Random, r.Het = penaltyMeta(fixed, higher), penaltyMeta(random, higher), het
	return r
}

// captures says whether v lies inside e's interval (bounds included).
func captures(v float64, e *Effect) Capture {
	if math.IsNaN(e.Low) || math.IsNaN(e.High) {
		return CaptureNoInterval
	}
	if v >= e.Low && v <= e.High {
		return CaptureYes
	}
	return CaptureNo
}

func sign(v float64) int {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}

// ratioOf is the ratio (treatment / baseline) a penalty in percent
// stands for.
func ratioOf(penalty float64, higher bool) float64 {
	if higher {
		return 1 - penalty/100
	}
	return 1 + penalty/100
}

// IntervalQuantile is the quantile the interval of a row of method m and
// n matched sets was built with at confidence conf: the normal one for the
// bootstrap methods, Student-t with n-1 degrees of freedom for every
// other (the small-sample methods; for student-t-strata, whose
// Welch-Satterthwaite degrees of freedom are at most n-1, this gives a
// standard error no smaller than the true one). 0 when there is none.
func IntervalQuantile(m string, n int, conf float64) float64 {
	switch Method(strings.TrimSuffix(m, "-cluster")) {
	case MethodNone, "":
		return 0
	case MethodBCa, MethodPercentile:
		return unitNormal.Quantile(1 - (1-conf)/2)
	}
	if n < 2 {
		return 0
	}
	return tQuantile(float64(n-1), conf)
}

// LogRatioSE returns the log ratio of a headline row and its standard
// error: the row's own (LogEstimate, LogSE: the headline procedure works
// on the log ratio) where it has them; otherwise from its interval on the
// log scale, (log r_high - log r_low) / (2 q), with q the quantile its
// method used (IntervalQuantile): the Cochrane Handbook's way (§6.5.2.2)
// of recovering a ratio measure's standard error from its confidence
// interval, exact for an interval symmetric on the log scale and an
// approximation otherwise. why says why there is none (no interval, one
// reaching a ratio of zero or below, i.e. a latency penalty below -100 %,
// or an unbounded one).
func LogRatioSE(e Effect, higher bool, conf float64) (logRatio, se float64, why string) {
	if e.LogSE > 0 && !math.IsInf(e.LogSE, 0) && finite(e.LogEstimate) {
		return e.LogEstimate, e.LogSE, ""
	}
	r := ratioOf(e.Estimate, higher)
	if !(r > 0) {
		return math.NaN(), math.NaN(), fmt.Sprintf("estimate %.4g %% is a ratio of %.4g: no log ratio", e.Estimate, r)
	}
	logRatio = math.Log(r)
	q := IntervalQuantile(e.Method, e.N, conf)
	if math.IsNaN(e.Low) || math.IsNaN(e.High) || q == 0 {
		return logRatio, math.NaN(), "no interval"
	}
	lo, hi := ratioOf(e.Low, higher), ratioOf(e.High, higher)
	if lo > hi {
		lo, hi = hi, lo
	}
	if !(lo > 0) {
		return logRatio, math.NaN(), fmt.Sprintf("its interval [%.4g, %.4g] reaches a ratio of %.4g, at or below zero: no log-scale standard error", e.Low, e.High, lo)
	}
	se = (math.Log(hi) - math.Log(lo)) / (2 * q)
	if math.IsInf(se, 0) || !(se > 0) {
		return logRatio, math.NaN(), fmt.Sprintf("its interval [%.4g, %.4g] gives no finite, positive standard error", e.Low, e.High)
	}
	return logRatio, se, ""
}

// Combined is a combined estimate with its standard error and interval,
// on the scale of the estimates combined.
type Combined struct {
	Estimate, SE, Low, High float64
}

// MetaAnalysis combines k estimates y with standard errors se (on one
// scale, here the log ratio): the fixed-effect (inverse-variance)
// estimate, DerSimonian and Laird's random-effects estimate, each with a
// normal interval at confidence conf, and the heterogeneity (Cochran's
// Q, its chi-square p-value with k-1 degrees of freedom, I² in percent,
// tau²). Every standard error must be finite and positive.
func MetaAnalysis(y, se []float64, conf float64) (fixed, random Combined, het Heterogeneity) {
	z := unitNormal.Quantile(1 - (1-conf)/2)
	combine := func(tau2 float64) Combined {
		var sw, swy float64
		for i := range y {
			w := 1 / (se[i]*se[i] + tau2)
			sw += w
			swy += w * y[i]
		}
		m, s := swy/sw, 1/math.Sqrt(sw)
		return Combined{Estimate: m, SE: s, Low: m - z*s, High: m + z*s}
	}
	fixed = combine(0)
	var sw, sw2 float64
	for i := range y {
		w := 1 / (se[i] * se[i])
		sw += w
		sw2 += w * w
		d := y[i] - fixed.Estimate
		het.Q += w * d * d
	}
	df := float64(len(y) - 1)
	het.P = math.NaN()
	if df > 0 {
		het.P = distuv.ChiSquared{K: df}.Survival(het.Q)
	}
	if het.Q > df {
		het.I2 = 100 * (het.Q - df) / het.Q
		het.Tau2 = (het.Q - df) / (sw - sw2/sw)
	}
	return fixed, combine(het.Tau2), het
}

// penaltyMeta maps a combination on the log-ratio scale to a penalty in
// percent with its interval (the bounds swap where larger is better).
func penaltyMeta(c Combined, higher bool) Meta {
	pen := func(l float64) float64 {
		if higher {
			return 100 * (1 - math.Exp(l))
		}
		return 100 * (math.Exp(l) - 1)
	}
	out := Meta{Log: c.Estimate, SE: c.SE, Estimate: pen(c.Estimate), Low: pen(c.Low), High: pen(c.High)}
	if higher {
		out.Low, out.High = out.High, out.Low
	}
	return out
}

// ReplicationSummary counts a comparison's rows.
type ReplicationSummary struct {
	// Rows counts every headline row; Both those in both campaigns, of
	// which Replicated replicated, NotReplicated did not, and NoInterval
	// cannot be judged (an interval is missing).
	Rows, Both, Replicated, NotReplicated, NoInterval int
	OnlyA, OnlyB                                      int
	SignsAgree                                        int
	// Expected is the share of rows two honest intervals of one effect,
	// of equal width, would have replicated: 2 Φ(z/√2) - 1, about 0.834
	// at 95 % (Cumming and Maillardet 2006).
	Expected   float64
	Confidence float64
}

// Summary counts the rows of c by what they say.
func (c *Comparison) Summary() ReplicationSummary {
	s := ReplicationSummary{Rows: len(c.Rows), Expected: CaptureRate(c.Confidence), Confidence: c.Confidence}
	for _, r := range c.Rows {
		switch r.In {
		case OnlyInA:
			s.OnlyA++
			continue
		case OnlyInB:
			s.OnlyB++
			continue
		}
		s.Both++
		switch r.Replicated {
		case CaptureYes:
			s.Replicated++
		case CaptureNo:
			s.NotReplicated++
		default:
			s.NoInterval++
		}
		if r.SignsAgree == CaptureYes {
			s.SignsAgree++
		}
	}
	return s
}

// CaptureRate is how often each of two independent intervals at
// confidence conf, of one effect and of equal width, holds the other's
// estimate: the estimates differ by a normal of twice the variance, so
// 2 Φ(z/√2) - 1 (0.834 at 95 %; Cumming and Maillardet 2006).
func CaptureRate(conf float64) float64 {
	z := unitNormal.Quantile(1 - (1-conf)/2)
	return 2*unitNormal.CDF(z/math.Sqrt2) - 1
}

// String is the summary line: how many rows replicated, and what to
// expect.
func (s ReplicationSummary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d headline rows in both campaigns replicated (each estimate inside the other's %g%% interval)", s.Replicated, s.Both, s.Confidence*100)
	if s.NoInterval > 0 {
		fmt.Fprintf(&b, ", %d cannot be judged (no interval)", s.NoInterval)
	}
	fmt.Fprintf(&b, "; signs agree in %d", s.SignsAgree)
	if s.OnlyA+s.OnlyB > 0 {
		fmt.Fprintf(&b, "; %d rows only in A, %d only in B", s.OnlyA, s.OnlyB)
	}
	fmt.Fprintf(&b, ". For reference: two honest %g%% intervals of one effect capture each other's estimate about %.0f%% of the time",
		s.Confidence*100, s.Expected*100)
	if judged := s.Replicated + s.NotReplicated; judged > 0 {
		fmt.Fprintf(&b, " (about %.1f of these %d)", s.Expected*float64(judged), judged)
	}
	b.WriteString(".")
	return b.String()
}
