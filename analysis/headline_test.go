package analysis

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// checkAgreement fails on any row of res whose p-value disagrees with its
// interval (p < 1 - confidence exactly when the interval excludes no
// effect: 0, or 1 for a ratio), that has an interval but no p-value, or
// whose interval reaches values a metric that cannot be negative cannot
// give (a ratio below 0, a penalty below -100 %, or above 100 % where
// larger is better). Per-configuration tests carry their headline row's
// p-value.
func checkAgreement(t *testing.T, res *Result) {
	t.Helper()
	alpha := 1 - res.Options.Confidence
	higher := map[string]bool{}
	for _, m := range res.Dataset.Metrics {
		higher[m.Name] = m.Higher
	}
	bad := 0
	for _, e := range res.Effects {
		if math.IsNaN(e.Low) || math.IsNaN(e.High) {
			continue
		}
		null := 0.0
		if e.Unit == "ratio" {
			null = 1
		}
		var why []string
		if math.IsNaN(e.P) {
			why = append(why, "an interval without a p-value")
		} else if excl := e.Low > null || e.High < null; excl != (e.P < alpha) {
			why = append(why, fmt.Sprintf("interval excludes %g: %v, p %v", null, excl, e.P))
		}
		switch {
		case e.Unit == "ratio" && e.Low < 0:
			why = append(why, "ratio below 0")
		case e.Unit == "pct" && !higher[e.Metric] && e.Low < -100:
			why = append(why, "penalty below -100%")
		case e.Unit == "pct" && higher[e.Metric] && e.High > 100:
			why = append(why, "penalty above 100% on a larger-is-better metric")
		}
		if len(why) > 0 {
			if bad++; bad <= 10 {
				t.Errorf("%s %s %s %s: %g [%g, %g] %s p %v: %s", e.Treatment, e.Metric, e.Scope, e.Statistic, e.Estimate, e.Low, e.High, e.Method, e.P, strings.Join(why, "; "))
			}
		}
	}
	if bad > 10 {
		t.Errorf("%d rows in all", bad)
	}
}

// handDataset is a campaign of one configuration: per level, the value of
// metric lat_ms in each replicate.
func handDataset(values map[string][]float64, metrics ...MetricDef) *Dataset {
	if len(metrics) == 0 {
		metrics = []MetricDef{{Name: "lat_ms", Unit: "ms"}}
	}
	d := &Dataset{Campaign: "hand", Seed: 1, Treatment: "security", Baseline: "plaintext",
		Factors: []string{"security"}, Metrics: metrics, Imported: true}
	levels := slices.Sorted(func(yield func(string) bool) {
		for k := range values {
			if !yield(k) {
				return
			}
		}
	})
	for _, lv := range levels {
		for rep, v := range values[lv] {
			r := Run{Run: fmt.Sprintf("%s-r%d", lv, rep+1), Cell: "c-" + lv, Pair: "c", Replicate: rep + 1, Attempt: 1, Final: true,
				Factors: []string{lv}, Outcome: OutcomeDone, Metrics: map[string]float64{}}
			for _, m := range metrics {
				r.Metrics[m.Name] = v
			}
			d.Runs = append(d.Runs, r)
		}
	}
	return d
}

func headlineOf(t *testing.T, res *Result, tr, metric, scope string) Effect {
	t.Helper()
	for _, e := range res.Effects {
		if e.Treatment == tr && e.Metric == metric && e.Scope == scope && e.Statistic == StatHeadline {
			return e
		}
	}
	t.Fatalf("no headline row for %s %s %s", tr, metric, scope)
	return Effect{}
}

// TestHeadlineExtremeSet: the tls-cost example's replicate that slowed
// every mode (plaintext 110.7 ms, tls 53.0 ms against about 5 ms) and a
// cold first run (mtls r1 154 ms against 2-5 ms) give no interval below
// -100 %, every row's p-value agrees with its interval, and the headline
// leaves the flagged sets out (outlier_sets says how many), so it says
// what the other sets say: tls +10 %, not -49 %; mtls +4 %, not +635 %.
func TestHeadlineExtremeSet(t *testing.T) {
	base := []float64{5.0, 5.1, 110.7, 4.9, 5.05, 4.95}
	tls := []float64{5.5, 5.6, 53.0, 5.4, 5.57, 5.43}
	mtls := []float64{154, 2.65, 3.1, 2.55, 2.6, 2.58}
	mbase := []float64{2.5, 2.55, 2.98, 2.45, 2.5, 2.48}
	d := handDataset(map[string][]float64{"plaintext": base, "tls": tls})
	res, err := Analyse(d, Options{Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	checkAgreement(t, res)
	h := headlineOf(t, res, "tls", "lat_ms", ScopeAll)
	if h.N != 5 || h.OutlierSets != 1 || math.Abs(h.Estimate-10) > 0.5 || !(h.Low > 0) || h.Better || !strings.Contains(h.Note, "left out") {
		t.Errorf("tls headline %+v: want n=5 with 1 outlier set left out, about +10%% with an interval above 0", h)
	}
	for _, e := range res.Effects {
		if e.Statistic == StatRatioPenalty && e.Scope == ScopeAll && e.Low < -100 {
			t.Errorf("ratio penalty interval [%g, %g] below -100%%", e.Low, e.High)
		}
	}

	d = handDataset(map[string][]float64{"plaintext": mbase, "mtls": mtls})
	res, err = Analyse(d, Options{Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	checkAgreement(t, res)
	h = headlineOf(t, res, "mtls", "lat_ms", ScopeAll)
	if h.OutlierSets < 1 || math.Abs(h.Estimate-4) > 1 {
		t.Errorf("mtls headline %+v: want the cold run's set left out and about +4%%", h)
	}
}

// TestHeadlineBetterAndFragile: a treatment 20 % faster in every set is
// flagged better than baseline with the runs of the sets driving it; a
// small positive mean that one set makes (its absence turns the sign) is
// fragile and names that set; a steady +10 % is neither.
func TestHeadlineBetterAndFragile(t *testing.T) {
	// The baselines vary by a block effect shared by both runs of a set,
	// so that no run is extreme against its level's others.
	block := []float64{4, 6, 5, 7, 4.5, 5.5}
	scaled := func(ratios []float64) []float64 {
		out := make([]float64, len(block))
		for i, b := range block {
			out[i] = b * ratios[i]
		}
		return out
	}
	cases := []struct {
		name            string
		ratios          []float64
		better, fragile bool
		fragileSet      string
	}{
		{"better", []float64{0.8, 0.79, 0.81, 0.8, 0.82, 0.78}, true, false, ""},
		{"fragile", []float64{0.99, 0.99, 0.995, 0.99, 0.99, 1.09}, false, true, "c r6"},
		{"steady", []float64{1.1, 1.09, 1.11, 1.1, 1.12, 1.08}, false, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := Analyse(handDataset(map[string][]float64{"plaintext": block, "tls": scaled(c.ratios)}), Options{Resamples: 200})
			if err != nil {
				t.Fatal(err)
			}
			checkAgreement(t, res)
			h := headlineOf(t, res, "tls", "lat_ms", ScopeAll)
			if h.Better != c.better || h.Fragile != c.fragile || h.OutlierSets != 0 {
				t.Fatalf("better %v fragile %v (%v) outliers %d, want %v %v: %+v", h.Better, h.Fragile, h.FragileSets, h.OutlierSets, c.better, c.fragile, h)
			}
			if c.fragile && !slices.Contains(h.FragileSets, c.fragileSet) {
				t.Errorf("fragile sets %v, want %s among them", h.FragileSets, c.fragileSet)
			}
			if c.better {
				// The three sets of the most extreme ratios (0.78, 0.79, 0.8).
				want := []string{"tls-r6", "plaintext-r6", "tls-r2", "plaintext-r2", "tls-r1", "plaintext-r1"}
				if !slices.Equal(h.Drivers, want) || !(h.High < 0) || !strings.Contains(h.Note, "better than baseline") {
					t.Errorf("drivers %v, want %v; interval [%g, %g]; note %q", h.Drivers, want, h.Low, h.High, h.Note)
				}
			}
		})
	}
}

// TestHeadlineHolmAcrossFamily: the pooled headline rows of every
// treatment and metric form one family; each row's p_holm is Holm's
// adjustment over all of them, computed here step by step (sort, multiply
// the k-th smallest by m-k, carry the running maximum, cap at 1), and the
// family's name says its size. Per configuration, the family is every
// treatment, metric and configuration.
func TestHeadlineHolmAcrossFamily(t *testing.T) {
	d := Synthetic(SyntheticConfig{Seed: 5, Levels: []string{"plaintext", "tls", "mtls"},
		Factors: []SyntheticFactor{{"message_size", []string{"1024", "10240"}}}, Replicates: 4,
		Penalty: map[string]float64{"tls": 3, "mtls": 0.5}})
	res, err := Analyse(d, Options{Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	checkAgreement(t, res)
	for _, perConfig := range []bool{false, true} {
		var rows []Effect
		metrics := map[string]bool{}
		for _, e := range res.Effects {
			if e.Statistic == StatHeadline && (e.Scope == ScopeAll) != perConfig && !math.IsNaN(e.P) {
				rows = append(rows, e)
				metrics[e.Metric] = true
			}
		}
		m := len(rows)
		want := 2 * len(metrics)
		if perConfig {
			want *= 2
		}
		if m != want {
			t.Fatalf("per configuration %v: %d headline tests, want %d", perConfig, m, want)
		}
		order := make([]int, m)
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmpFloat(rows[a].P, rows[b].P) })
		hand := make([]float64, m)
		running := 0.0
		for k, i := range order {
			running = math.Max(running, math.Min(1, float64(m-k)*rows[i].P))
			hand[i] = running
		}
		for i, e := range rows {
			if math.Abs(e.PHolm-hand[i]) > 1e-15 {
				t.Errorf("%s %s %s: p %v p_holm %v, by hand %v", e.Treatment, e.Metric, e.Scope, e.P, e.PHolm, hand[i])
			}
			if !strings.Contains(e.Family, fmt.Sprintf(": %d tests (2 treatments x %d metrics", m, len(metrics))) {
				t.Errorf("family %q does not say its %d tests", e.Family, m)
			}
		}
	}
	for _, ct := range res.Tests {
		if !strings.HasPrefix(ct.Family, "per configuration") || math.IsNaN(ct.PHolm) && !math.IsNaN(ct.P) {
			t.Fatalf("configuration test %+v: no per-configuration family", ct)
		}
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestStrataLeaveOneOut: the stratified t with one set left out, updated
// in constant time, equals the stratified t computed afresh without it,
// for strata of 1 to 4 sets (a stratum emptied, one left with a single
// set).
func TestStrataLeaveOneOut(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	var x []float64
	var cell []int
	for c, n := range []int{1, 2, 3, 4, 2} {
		for range n {
			x = append(x, 0.1*float64(c)+0.05*r.NormFloat64())
			cell = append(cell, c)
		}
	}
	agg := newStrataAgg(x, cell)
	full := agg.infer(-1, 2)
	v := make([]float64, len(x))
	copy(v, x)
	strata := map[int][]int32{}
	for i, c := range cell {
		strata[c] = append(strata[c], int32(i))
	}
	var st [][]int32
	for c := range 5 {
		st = append(st, strata[c])
	}
	lo, hi, df, _ := strataT(x, st, 0.95)
	q := tQuantile(df, 0.95)
	if !closeRel(full.mean, (lo+hi)/2, 1e-12) || !closeRel(full.se, (hi-lo)/2/q, 1e-12) || !closeRel(full.df, df, 1e-12) {
		t.Fatalf("aggregate %+v, strataT [%v, %v] df %v", full, lo, hi, df)
	}
	for i := range x {
		got := agg.infer(i, 2)
		var rx []float64
		var rc []int
		for k := range x {
			if k != i {
				rx, rc = append(rx, x[k]), append(rc, cell[k])
			}
		}
		want := newStrataAgg(rx, rc).infer(-1, 2)
		if !closeRel(got.mean, want.mean, 1e-12) || !closeRel(got.se, want.se, 1e-9) || !closeRel(got.df, want.df, 1e-9) {
			t.Errorf("set %d left out: %+v, afresh %+v", i, got, want)
		}
	}
}

// TestLogRatioTMatchesScipy checks the headline procedure against scipy:
// over one configuration, scipy.stats.ttest_1samp of the log ratios (its
// p-value and confidence_interval, mapped through exp); over several, a
// numpy transcription of the stratified variance with Welch-Satterthwaite
// degrees of freedom and scipy.stats.t.
func TestLogRatioTMatchesScipy(t *testing.T) {
	r := rand.New(rand.NewPCG(34, 1))
	var x []float64
	var cell []int
	for c, n := range []int{7, 3, 5} {
		for range n {
			x = append(x, 0.05+0.02*float64(c)+0.08*r.NormFloat64())
			cell = append(cell, c)
		}
	}
	var out struct {
		P, Lo, Hi         float64
		SP, SLo, SHi, SDF float64
	}
	runPython(t, scipyStats+`
d = json.load(sys.stdin)
x = np.array(d["x"]); cell = np.array(d["cell"])
one = x[cell == 0]
res = stats.ttest_1samp(one, 0.0)
ci = res.confidence_interval(0.95)
N = len(x); strata = sorted(set(cell.tolist()))
se2 = 0.0; den = 0.0
for c in strata:
    v = x[cell == c]; n = len(v); s2 = np.var(v, ddof=1)
    w = n * s2 / N**2; se2 += w; den += w * w / (n - 1)
df = min(N - len(strata), se2 * se2 / den)
m = np.mean(x); se = np.sqrt(se2); q = stats.t.ppf(0.975, df)
print(json.dumps({"p": float(res.pvalue), "lo": float(np.exp(ci.low) - 1), "hi": float(np.exp(ci.high) - 1),
    "sp": float(2 * stats.t.sf(abs(m / se), df)), "slo": float(np.exp(m - q * se) - 1), "shi": float(np.exp(m + q * se) - 1), "sdf": float(df)}))
`, map[string]any{"x": x, "cell": cell}, &out)
	one := inferOne(x[:7], nil, 3, 0.95)
	q := tQuantile(one.df, 0.95)
	if !closeRel(one.p(), out.P, 1e-9) || !closeRel(math.Exp(one.mean-q*one.se)-1, out.Lo, 1e-9) || !closeRel(math.Exp(one.mean+q*one.se)-1, out.Hi, 1e-9) {
		t.Errorf("one configuration: p %v [%v, %v]; scipy p %v [%v, %v]", one.p(), math.Exp(one.mean-q*one.se)-1, math.Exp(one.mean+q*one.se)-1, out.P, out.Lo, out.Hi)
	}
	st := inferLogs(x, cell, nil, 3, 0.95)
	q = tQuantile(st.df, 0.95)
	if st.method != MethodLogRatioTStrata || !closeRel(st.p(), out.SP, 1e-9) || !closeRel(st.df, out.SDF, 1e-9) ||
		!closeRel(math.Exp(st.mean-q*st.se)-1, out.SLo, 1e-9) || !closeRel(math.Exp(st.mean+q*st.se)-1, out.SHi, 1e-9) {
		t.Errorf("strata: %s p %v df %v [%v, %v]; numpy/scipy p %v df %v [%v, %v]", st.method, st.p(), st.df,
			math.Exp(st.mean-q*st.se)-1, math.Exp(st.mean+q*st.se)-1, out.SP, out.SDF, out.SLo, out.SHi)
	}
}

// TestBootstrapPInvertsInterval: on a pooled estimate over 100 matched
// sets or more (the cluster bootstrap), each row's p-value is its
// interval inverted: at the level asked, p < 1 - confidence exactly when
// the interval excludes no effect, and at other levels the intervals
// from the same resamples exclude it exactly when p is below.
func TestBootstrapPInvertsInterval(t *testing.T) {
	d := Synthetic(SyntheticConfig{Seed: 8, Levels: []string{"plaintext", "tls"},
		Factors:    []SyntheticFactor{{"message_size", []string{"1024", "10240", "102400"}}, {"acks", []string{"1", "all"}}},
		Replicates: 20, Penalty: map[string]float64{"tls": 0.4}})
	res, err := Analyse(d, Options{Resamples: 2000})
	if err != nil {
		t.Fatal(err)
	}
	checkAgreement(t, res)
	n := 0
	for _, e := range res.Effects {
		if e.Scope == ScopeAll && e.Test == TestBootstrap {
			n++
		}
	}
	if n == 0 {
		t.Fatal("no bootstrap row")
	}
	b := newPairedSample([]float64{5.2, 5.1, 5.6, 4.9, 5.3, 5.5, 5.0, 5.4, 5.1, 5.2}, []float64{5, 5, 5.2, 5, 5.1, 5.2, 5, 5.1, 5, 5}, false)
	j := &bootJob{key: "k", samples: []*pairedSample{b}, direct: true, keep: true}
	j.run(bootConfig{seed: 1, resamples: 4000, confidence: 0.95, method: MethodBCa}, &bootScratch{})
	for k := range nStats {
		d := distributionOf(slices.Clone(j.dist[0][k]), nil)
		p := bootstrapP(d, j.est[0][k], nil, 0.95, MethodPercentile, nullOf(k))
		for _, alpha := range []float64{0.01, 0.05, 0.1, 0.3} {
			lo, hi, _ := intervalOf(d, j.est[0][k], nil, 1-alpha, MethodPercentile)
			if excl := lo > nullOf(k) || hi < nullOf(k); excl != (p < alpha) && math.Abs(p-alpha) > 1e-6 {
				t.Errorf("%s alpha %v: interval [%v, %v] excludes %v: %v; p %v", statNames[k], alpha, lo, hi, nullOf(k), excl, p)
			}
		}
	}
}
