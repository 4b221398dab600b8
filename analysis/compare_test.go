package analysis

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestMetaAnalysisByHand checks the fixed- and random-effects combination
// of two log ratios against a computation by hand:
//
//	y = (0.10, 0.30), se = (0.05, 0.10): w = (400, 100), fixed = 70/500 =
//	0.14 with SE 1/sqrt(500); Q = 400·0.04² + 100·0.16² = 3.2 (1 df, p =
//	2(1 - Φ(sqrt 3.2)) = 0.07364); I² = 2.2/3.2 = 68.75 %; tau² = 2.2 /
//	(500 - 170000/500) = 0.01375; random weights 1/0.01625 and 1/0.02375,
//	estimate (0.1·190 + 0.3·130)/320 = 0.18125 with SE sqrt(24700/2560000).
//
// and, for two equal estimates, Q = 0: no heterogeneity, random = fixed.
func TestMetaAnalysisByHand(t *testing.T) {
	cases := []struct {
		name             string
		y, se            []float64
		fixed, fixedSE   float64
		random, randomSE float64
		q, p, i2, tau2   float64
	}{
		{"heterogeneous", []float64{0.10, 0.30}, []float64{0.05, 0.10},
			0.14, 1 / math.Sqrt(500), 0.18125, math.Sqrt(24700.0 / 2560000), 3.2, 0.0736382, 68.75, 0.01375},
		{"homogeneous", []float64{0.2, 0.2}, []float64{0.1, 0.2},
			0.2, 1 / math.Sqrt(125), 0.2, 1 / math.Sqrt(125), 0, 1, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, r, h := MetaAnalysis(c.y, c.se, 0.95)
			for _, v := range []struct {
				what      string
				got, want float64
				tol       float64
			}{
				{"fixed", f.Estimate, c.fixed, 1e-12}, {"fixed SE", f.SE, c.fixedSE, 1e-12},
				{"fixed low", f.Low, c.fixed - 1.959963984540054*c.fixedSE, 1e-12},
				{"random", r.Estimate, c.random, 1e-12}, {"random SE", r.SE, c.randomSE, 1e-12},
				{"random high", r.High, c.random + 1.959963984540054*c.randomSE, 1e-12},
				{"Q", h.Q, c.q, 1e-12}, {"p", h.P, c.p, 1e-6}, {"I2", h.I2, c.i2, 1e-12}, {"tau2", h.Tau2, c.tau2, 1e-12},
			} {
				if !closeRel(v.got, v.want, v.tol) {
					t.Errorf("%s = %.10g, want %.10g", v.what, v.got, v.want)
				}
			}
		})
	}
}

// TestMetaAnalysisMatchesScipy checks the whole path from a headline row
// (estimate, interval, n, method) to its log-scale standard error and the
// combined estimates against the same arithmetic in Python, with scipy's
// t, normal and chi-square quantiles: Student-t rows (n-1 degrees of
// freedom), bootstrap rows (normal), for latency and throughput, and
// three campaigns as well as two.
func TestMetaAnalysisMatchesScipy(t *testing.T) {
	r := rand.New(rand.NewPCG(34, 1))
	type row struct {
		Est, Low, High float64
		N              int
		Normal, Higher bool
	}
	type study struct {
		Rows []row
		Conf float64
	}
	var studies []study
	for k := range 12 {
		s := study{Conf: []float64{0.95, 0.90, 0.99}[k%3]}
		higher := k%4 == 3
		for i := range 2 + k%2 {
			n := 3 + r.IntN(20)
			normal := i == 1 && k%5 == 0
			logR := 0.1*r.NormFloat64() + 0.05
			half := 0.02 + 0.1*r.Float64()
			pen := func(l float64) float64 {
				if higher {
					return 100 * (1 - math.Exp(l))
				}
				return 100 * (math.Exp(l) - 1)
			}
			lo, hi := pen(logR-half), pen(logR+half)
			if higher {
				lo, hi = hi, lo
			}
			s.Rows = append(s.Rows, row{Est: pen(logR + 0.3*half*r.NormFloat64()), Low: lo, High: hi, N: n, Normal: normal, Higher: higher})
		}
		studies = append(studies, s)
	}
	var want []struct {
		Y, SE                 []float64
		Fixed, FixedSE        float64
		FixedLow, FixedHigh   float64
		Random, RandomSE      float64
		RandomLow, RandomHigh float64
		Q, P, I2, Tau2        float64
	}
	runPython(t, `
import json, sys, math
from scipy import stats
out = []
for s in json.load(sys.stdin):
    conf = s["Conf"]
    y, se = [], []
    for r in s["Rows"]:
        ratio = (lambda p: 1 - p / 100) if r["Higher"] else (lambda p: 1 + p / 100)
        lo, hi = sorted([ratio(r["Low"]), ratio(r["High"])])
        q = stats.norm.ppf(1 - (1 - conf) / 2) if r["Normal"] else stats.t.ppf(1 - (1 - conf) / 2, r["N"] - 1)
        y.append(math.log(ratio(r["Est"])))
        se.append((math.log(hi) - math.log(lo)) / (2 * q))
    w = [1 / s_ ** 2 for s_ in se]
    fixed = sum(wi * yi for wi, yi in zip(w, y)) / sum(w)
    fse = 1 / math.sqrt(sum(w))
    Q = sum(wi * (yi - fixed) ** 2 for wi, yi in zip(w, y))
    df = len(y) - 1
    tau2 = max(0.0, (Q - df) / (sum(w) - sum(wi ** 2 for wi in w) / sum(w)))
    i2 = max(0.0, (Q - df) / Q) * 100 if Q > 0 else 0.0
    ws = [1 / (s_ ** 2 + tau2) for s_ in se]
    rnd = sum(wi * yi for wi, yi in zip(ws, y)) / sum(ws)
    rse = 1 / math.sqrt(sum(ws))
    z = stats.norm.ppf(1 - (1 - conf) / 2)
    out.append({"Y": y, "SE": se, "Fixed": fixed, "FixedSE": fse, "FixedLow": fixed - z * fse, "FixedHigh": fixed + z * fse,
        "Random": rnd, "RandomSE": rse, "RandomLow": rnd - z * rse, "RandomHigh": rnd + z * rse,
        "Q": Q, "P": float(stats.chi2.sf(Q, df)), "I2": i2, "Tau2": tau2})
print(json.dumps(out))
`, studies, &want)
	for k, s := range studies {
		var y, se []float64
		for i, rw := range s.Rows {
			m := string(MethodStudentT)
			if rw.Normal {
				m = "bca-cluster"
			}
			l, e, why := LogRatioSE(Effect{Estimate: rw.Est, Low: rw.Low, High: rw.High, N: rw.N, Method: m}, rw.Higher, s.Conf)
			if why != "" {
				t.Fatalf("study %d row %d: %s", k, i, why)
			}
			if !closeRel(l, want[k].Y[i], 1e-12) || !closeRel(e, want[k].SE[i], 1e-10) {
				t.Errorf("study %d row %d: log ratio %.12g SE %.12g, python %.12g %.12g", k, i, l, e, want[k].Y[i], want[k].SE[i])
			}
			y, se = append(y, l), append(se, e)
		}
		f, r, h := MetaAnalysis(y, se, s.Conf)
		w := want[k]
		for _, v := range []struct {
			what      string
			got, want float64
		}{
			{"fixed", f.Estimate, w.Fixed}, {"fixed SE", f.SE, w.FixedSE}, {"fixed low", f.Low, w.FixedLow}, {"fixed high", f.High, w.FixedHigh},
			{"random", r.Estimate, w.Random}, {"random SE", r.SE, w.RandomSE}, {"random low", r.Low, w.RandomLow}, {"random high", r.High, w.RandomHigh},
			{"Q", h.Q, w.Q}, {"p", h.P, w.P}, {"I2", h.I2, w.I2}, {"tau2", h.Tau2, w.Tau2},
		} {
			if !closeRel(v.got, v.want, 1e-9) {
				t.Errorf("study %d (%d campaigns, %g): %s = %.12g, python %.12g", k, len(y), s.Conf, v.what, v.got, v.want)
			}
		}
	}
}

// TestCaptureRate: two equal-width 95 % intervals capture each other's
// estimate 83.4 % of the time (Cumming and Maillardet 2006), and a
// simulation of two normal estimates of one effect agrees.
func TestCaptureRate(t *testing.T) {
	if got := CaptureRate(0.95); math.Abs(got-0.8342) > 1e-4 {
		t.Errorf("CaptureRate(0.95) = %.5f, want 0.8342", got)
	}
	r := rand.New(rand.NewPCG(83, 4))
	const trials = 200000
	hits := 0
	for range trials {
		if math.Abs(r.NormFloat64()-r.NormFloat64()) <= 1.959963984540054 {
			hits++
		}
	}
	if got := float64(hits) / trials; math.Abs(got-CaptureRate(0.95)) > 0.004 {
		t.Errorf("simulated capture %.4f, CaptureRate %.4f", got, CaptureRate(0.95))
	}
}

// TestLogRatioSE: the standard error from a row's interval on the log
// scale with its method's quantile, and why there is none.
func TestLogRatioSE(t *testing.T) {
	nan := math.NaN()
	t4 := 2.7764451051977987 // t quantile, 4 degrees of freedom, 97.5 %
	cases := []struct {
		name    string
		e       Effect
		higher  bool
		log, se float64
		why     string
	}{
		{"student-t latency", Effect{Estimate: 10, Low: 0, High: 21, N: 5, Method: "student-t"}, false,
			math.Log(1.1), (math.Log(1.21) - math.Log(1)) / (2 * t4), ""},
		{"strata uses n-1", Effect{Estimate: 10, Low: 0, High: 21, N: 5, Method: "student-t-strata"}, false,
			math.Log(1.1), (math.Log(1.21) - math.Log(1)) / (2 * t4), ""},
		{"bootstrap normal", Effect{Estimate: 10, Low: 0, High: 21, N: 150, Method: "bca-cluster"}, false,
			math.Log(1.1), math.Log(1.21) / (2 * 1.959963984540054), ""},
		{"throughput", Effect{Estimate: 20, Low: 10, High: 30, N: 5, Method: "student-t"}, true,
			math.Log(0.8), (math.Log(0.9) - math.Log(0.7)) / (2 * t4), ""},
		{"no interval", Effect{Estimate: 10, Low: nan, High: nan, N: 2, Method: "none"}, false,
			math.Log(1.1), nan, "no interval"},
		{"below -100 %", Effect{Estimate: 635, Low: -962, High: 2232, N: 5, Method: "student-t"}, false,
			math.Log(7.35), nan, "reaches a ratio of -8.62, at or below zero"},
		{"unbounded", Effect{Estimate: 10, Low: -50, High: math.Inf(1), N: 5, Method: "student-t"}, false,
			math.Log(1.1), nan, "no finite, positive standard error"},
		{"its own log-scale SE", Effect{Estimate: 10, Low: 0, High: 21, N: 5, Method: "log-ratio-t-strata", LogEstimate: 0.09, LogSE: 0.04}, false,
			0.09, 0.04, ""},
		{"impossible estimate", Effect{Estimate: -120, Low: -130, High: -110, N: 5, Method: "student-t"}, false,
			nan, nan, "no log ratio"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, se, why := LogRatioSE(c.e, c.higher, 0.95)
			same := func(a, b float64) bool { return math.IsNaN(a) && math.IsNaN(b) || closeRel(a, b, 1e-12) }
			if !same(l, c.log) || !same(se, c.se) {
				t.Errorf("log %.12g se %.12g, want %.12g %.12g", l, se, c.log, c.se)
			}
			if c.why == "" && why != "" || !strings.Contains(why, c.why) {
				t.Errorf("why %q, want %q", why, c.why)
			}
		})
	}
}

// TestReplicate: each row's captures, signs and verdict, and rows in one
// campaign only.
func TestReplicate(t *testing.T) {
	nan := math.NaN()
	row := func(est, lo, hi float64) *Effect {
		m := "student-t"
		if math.IsNaN(lo) {
			m = "none"
		}
		return &Effect{Treatment: "tls", Baseline: "plaintext", Metric: "publish_ms_p99", Scope: ScopeAll,
			Statistic: StatHeadline, N: 6, Estimate: est, Low: lo, High: hi, Method: m}
	}
	cases := []struct {
		name             string
		a, b             *Effect
		in               string
		bInA, aInB, sign Capture
		replicated       Capture
		meta             bool
	}{
		{"replicated", row(10, 5, 15), row(12, 6, 18), InBoth, CaptureYes, CaptureYes, CaptureYes, CaptureYes, true},
		{"one-way", row(10, 8, 12), row(13, 3, 21), InBoth, CaptureNo, CaptureYes, CaptureYes, CaptureNo, true},
		{"apart", row(10, 8, 12), row(40, 35, 45), InBoth, CaptureNo, CaptureNo, CaptureYes, CaptureNo, true},
		{"signs differ", row(10, 2, 18), row(-5, -12, 3), InBoth, CaptureNo, CaptureNo, CaptureNo, CaptureNo, true},
		{"A without interval", row(10, nan, nan), row(12, 6, 18), InBoth, CaptureNoInterval, CaptureYes, CaptureYes, CaptureNoInterval, false},
		{"A without interval, far from B", row(40, nan, nan), row(12, 6, 18), InBoth, CaptureNoInterval, CaptureNo, CaptureYes, CaptureNo, false},
		{"only A", row(10, 5, 15), nil, OnlyInA, "", "", "", "", false},
		{"only B", nil, row(10, 5, 15), OnlyInB, "", "", "", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Replicate(c.a, c.b, false, 0.95)
			if r.In != c.in || r.BInA != c.bInA || r.AInB != c.aInB || r.SignsAgree != c.sign || r.Replicated != c.replicated {
				t.Errorf("in %q B in A %q A in B %q signs %q replicated %q; want %q %q %q %q %q",
					r.In, r.BInA, r.AInB, r.SignsAgree, r.Replicated, c.in, c.bInA, c.aInB, c.sign, c.replicated)
			}
			if r.Metric != "publish_ms_p99" || r.Treatment != "tls" {
				t.Errorf("identity %+v", r)
			}
			if got := !math.IsNaN(r.Fixed.Estimate) && !math.IsNaN(r.Random.Estimate); got != c.meta {
				t.Errorf("combined estimate %v, want %v (note %q)", got, c.meta, r.Note)
			}
			if c.in == InBoth && !c.meta && !strings.Contains(r.Note, "no combined estimate: A: no interval") {
				t.Errorf("note %q does not say why there is no combined estimate", r.Note)
			}
			if c.meta && !(r.Fixed.Low < r.Fixed.Estimate && r.Fixed.Estimate < r.Fixed.High && r.Random.High-r.Random.Low >= r.Fixed.High-r.Fixed.Low-1e-9) {
				t.Errorf("fixed %+v random %+v: want the estimate inside its interval and random at least as wide", r.Fixed, r.Random)
			}
		})
	}
}

// TestReplicateThroughput: where larger is better the combination is a
// throughput penalty too: between the two estimates, its interval the
// right way round, and the log ratio that of the ratio 1 - penalty/100.
func TestReplicateThroughput(t *testing.T) {
	a := &Effect{Metric: "publish_rate", Scope: ScopeAllMax, N: 6, Estimate: 20, Low: 10, High: 30, Method: "student-t"}
	b := &Effect{Metric: "publish_rate", Scope: ScopeAllMax, N: 6, Estimate: 24, Low: 14, High: 34, Method: "student-t"}
	r := Replicate(a, b, true, 0.95)
	if r.Replicated != CaptureYes || !closeRel(r.LogA, math.Log(0.8), 1e-12) || !closeRel(r.LogB, math.Log(0.76), 1e-12) {
		t.Errorf("replicated %q, log ratios %g %g", r.Replicated, r.LogA, r.LogB)
	}
	for _, m := range []Meta{r.Fixed, r.Random} {
		if !(20 < m.Estimate && m.Estimate < 24 && m.Low < m.Estimate && m.Estimate < m.High) ||
			!closeRel(m.Estimate, 100*(1-math.Exp(m.Log)), 1e-12) {
			t.Errorf("combined %+v: want a penalty between 20 and 24 inside its interval", m)
		}
	}
}

// remeasure returns a copy of d as a second campaign of its plan: every
// run's metrics times the factor of its level (1 where none) and a
// lognormal noise of sd noise.
func remeasure(d *Dataset, seed uint64, factor map[string]float64, noise float64) *Dataset {
	r := rand.New(rand.NewPCG(seed, 2))
	out := *d
	out.Info = []Field{{"campaign", d.Campaign}, {"created", fmt.Sprintf("remeasured %d", seed)}}
	out.Runs = make([]Run, len(d.Runs))
	for i, run := range d.Runs {
		run.Metrics = maps.Clone(run.Metrics)
		f, ok := factor[run.Factors[0]]
		if !ok {
			f = 1
		}
		for _, m := range d.Metrics {
			if v, ok := run.Metrics[m.Name]; ok {
				run.Metrics[m.Name] = v * f * math.Exp(noise*r.NormFloat64())
			}
		}
		out.Runs[i] = run
	}
	return &out
}

// syntheticPlan is a campaign of one configuration per message size,
// tls 10 % and mtls 15 % slower than plaintext. Its pairs are named by
// their message size, as a plan names them by their content, so that two
// plans with a size in common share that configuration.
func syntheticPlan(levels []string, sizes []string, replicates int) *Dataset {
	d := Synthetic(SyntheticConfig{Seed: 34, Levels: levels, Factors: []SyntheticFactor{{"message_size", sizes}},
		Replicates: replicates, Penalty: map[string]float64{"tls": 10, "mtls": 15}})
	d.Info = append(d.Info, Field{"created", "first"})
	for i := range d.Runs {
		r := &d.Runs[i]
		r.Pair = "size" + r.Factors[1]
		r.Cell = r.Pair + "-" + r.Factors[0]
		r.Run = fmt.Sprintf("%s-r%d", r.Cell, r.Replicate)
	}
	return d
}

// TestCompareSyntheticCampaigns compares campaigns of one plan whose truth
// is known: measured again (tiny noise), every headline row replicates,
// with no heterogeneity; with tls 30 % slower in the second, no row
// replicates, the signs agree and the heterogeneity is plain; with tls
// 30 % faster, the signs disagree.
func TestCompareSyntheticCampaigns(t *testing.T) {
	a := syntheticPlan([]string{"plaintext", "tls"}, []string{"1024", "10240"}, 3)
	cases := []struct {
		name       string
		tls        float64
		replicated bool
		signs      bool
	}{
		{"replicates", 1, true, true},
		{"slower", 1.3, false, true},
		{"faster", 0.7, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := remeasure(a, 2, map[string]float64{"tls": c.tls}, 0.001)
			cmp, err := Compare(a, b, "a.db", "b.db", Options{})
			if err != nil {
				t.Fatal(err)
			}
			s := cmp.Summary()
			if s.Both == 0 || s.Both != s.Rows || s.NoInterval != 0 {
				t.Fatalf("summary %+v: want every row in both, with intervals", s)
			}
			for _, r := range cmp.Rows {
				if got := r.Replicated == CaptureYes; got != c.replicated {
					t.Errorf("%s %s: replicated %q (A %.3g [%.3g, %.3g], B %.3g [%.3g, %.3g])", r.Metric, r.Scope, r.Replicated,
						r.A.Estimate, r.A.Low, r.A.High, r.B.Estimate, r.B.Low, r.B.High)
				}
				if got := r.SignsAgree == CaptureYes; got != c.signs {
					t.Errorf("%s: signs agree %q, A %.3g B %.3g", r.Metric, r.SignsAgree, r.A.Estimate, r.B.Estimate)
				}
				if r.Statistic != StatHeadline || r.Scope != ScopeAll || r.A.N != 6 {
					t.Errorf("row %s %s %s n=%d: want the pooled headline over 6 sets", r.Metric, r.Statistic, r.Scope, r.A.N)
				}
				switch {
				case math.IsNaN(r.Fixed.Estimate):
					t.Errorf("%s: no combined estimate: %s", r.Metric, r.Note)
				case c.replicated && (r.Het.I2 != 0 || r.Het.Tau2 != 0 || r.Random != r.Fixed):
					t.Errorf("%s: heterogeneity %+v between two measurements of one truth", r.Metric, r.Het)
				case !c.replicated && (r.Het.P > 0.001 || r.Het.I2 < 90 || r.Het.Tau2 <= 0 || r.Random.High-r.Random.Low <= r.Fixed.High-r.Fixed.Low):
					t.Errorf("%s: heterogeneity %+v, fixed %+v random %+v: want it plain and the random interval wider", r.Metric, r.Het, r.Fixed, r.Random)
				}
				// The combination lies between the two estimates.
				lo, hi := math.Min(r.A.Estimate, r.B.Estimate), math.Max(r.A.Estimate, r.B.Estimate)
				if r.Fixed.Estimate < lo-1e-9 || r.Fixed.Estimate > hi+1e-9 {
					t.Errorf("%s: fixed %.4g outside [%.4g, %.4g]", r.Metric, r.Fixed.Estimate, lo, hi)
				}
			}
			want := 0
			if c.replicated {
				want = s.Both
			}
			if s.Replicated != want || !strings.Contains(s.String(), fmt.Sprintf("%d of %d headline rows", want, s.Both)) ||
				!strings.Contains(s.String(), "capture each other's estimate about 83% of the time") {
				t.Errorf("summary %q, want %d of %d replicated and the 83 %% reference", s, want, s.Both)
			}
		})
	}
}

// TestCompareRowsInOneCampaign: rows of a level only one campaign has are
// listed as its only; rows without an interval are said, not dropped; a
// second plan sharing one of two configurations is compared over it.
func TestCompareRowsInOneCampaign(t *testing.T) {
	t.Run("level only in A", func(t *testing.T) {
		a := syntheticPlan([]string{"plaintext", "tls", "mtls"}, []string{"1024"}, 3)
		b := syntheticPlan([]string{"plaintext", "tls"}, []string{"1024"}, 3)
		b.Info[len(b.Info)-1].Value = "second"
		c, err := Compare(a, b, "a.db", "b.db", Options{})
		if err != nil {
			t.Fatal(err)
		}
		s := c.Summary()
		if s.OnlyA == 0 || s.OnlyB != 0 || s.Both == 0 || s.OnlyA+s.Both != s.Rows {
			t.Fatalf("summary %+v", s)
		}
		for _, r := range c.Rows {
			if (r.Treatment == "mtls") != (r.In == OnlyInA) || r.In == OnlyInA && (r.B != nil || r.Replicated != "") {
				t.Errorf("%s %s: in %q", r.Treatment, r.Metric, r.In)
			}
		}
		if !strings.Contains(s.String(), fmt.Sprintf("%d rows only in A, 0 only in B", s.OnlyA)) {
			t.Errorf("summary %q does not count the rows only in A", s)
		}
	})
	t.Run("no interval", func(t *testing.T) {
		a := syntheticPlan([]string{"plaintext", "tls"}, []string{"1024"}, 2)
		c, err := Compare(a, remeasure(a, 3, nil, 0.01), "a.db", "b.db", Options{})
		if err != nil {
			t.Fatal(err)
		}
		s := c.Summary()
		if s.Both == 0 || s.NoInterval != s.Both || s.Replicated != 0 || !strings.Contains(s.String(), fmt.Sprintf("%d cannot be judged (no interval)", s.Both)) {
			t.Errorf("summary %+v %q: want every row said to have no interval", s, s)
		}
		for _, r := range c.Rows {
			if r.Replicated != CaptureNoInterval || !strings.Contains(r.Note, "no interval") {
				t.Errorf("%s: replicated %q note %q", r.Metric, r.Replicated, r.Note)
			}
		}
	})
	t.Run("plans sharing a configuration", func(t *testing.T) {
		a := syntheticPlan([]string{"plaintext", "tls"}, []string{"1024", "10240"}, 3)
		b := syntheticPlan([]string{"plaintext", "tls"}, []string{"1024", "102400"}, 3)
		b.Info[len(b.Info)-1].Value = "second"
		c, err := Compare(a, b, "a.db", "b.db", Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Shared) != 1 || len(c.OnlyA) != 1 || len(c.OnlyB) != 1 {
			t.Fatalf("shared %v only A %v only B %v", c.Shared, c.OnlyA, c.OnlyB)
		}
		if len(c.Notes) == 0 || !strings.Contains(c.Notes[0], "over the 1 configuration both campaigns have; 1 only in a.db and 1 only in b.db") {
			t.Errorf("notes %q", c.Notes)
		}
		for _, r := range c.Rows {
			if r.In != InBoth || r.A.N != 3 || r.B.N != 3 {
				t.Errorf("%s: in %q, n %v: want both, over the shared configuration's 3 sets", r.Metric, r.In, r.A)
			}
		}
	})
	t.Run("a configuration without a healthy set in B", func(t *testing.T) {
		a := syntheticPlan([]string{"plaintext", "tls"}, []string{"1024", "10240"}, 3)
		b := remeasure(a, 6, nil, 0.01)
		for i := range b.Runs {
			if b.Runs[i].Pair == "size10240" {
				b.Runs[i].Outcome, b.Runs[i].Reasons = OutcomeInvalid, []string{"publish rate 90% of target"}
			}
		}
		c, err := Compare(a, b, "a.db", "b.db", Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range c.Rows {
			if !strings.Contains(r.Note, "pooled over different configurations: A over 2, B over 1") {
				t.Errorf("%s: note %q", r.Metric, r.Note)
			}
		}
	})
	t.Run("capped and saturating configurations", func(t *testing.T) {
		a := syntheticPlan([]string{"plaintext", "tls"}, []string{"1024", "10240"}, 3)
		for i := range a.Runs {
			if r := &a.Runs[i]; r.Pair == "size10240" {
				r.Saturating = true
				r.Metrics["publish_rate"] = 50000 / r.Metrics["publish_ms_p50"]
			}
		}
		c, err := Compare(a, remeasure(a, 7, nil, 0.01), "a.db", "b.db", Options{})
		if err != nil {
			t.Fatal(err)
		}
		scopes := map[string]int{}
		for _, r := range c.Rows {
			scopes[r.Scope]++
			if r.In != InBoth || r.A.N != 3 || r.Metric == "publish_rate" && r.Scope != ScopeAllMax {
				t.Errorf("%s %s: in %q n=%d", r.Metric, r.Scope, r.In, r.A.N)
			}
		}
		if scopes[ScopeAllCapped] == 0 || scopes[ScopeAllMax] != scopes[ScopeAllCapped]+1 || scopes[ScopeAll] != 0 {
			t.Errorf("rows per scope %v: want the capped rows, and the saturating ones with throughput", scopes)
		}
	})
	t.Run("no healthy set in B", func(t *testing.T) {
		a := syntheticPlan([]string{"plaintext", "tls"}, []string{"1024"}, 3)
		b := remeasure(a, 4, nil, 0.01)
		for i := range b.Runs {
			b.Runs[i].Outcome, b.Runs[i].Reasons = OutcomeInvalid, []string{"publish rate 90% of target"}
		}
		c, err := Compare(a, b, "a.db", "b.db", Options{})
		if !errors.Is(err, ErrNoHealthySet) || !strings.Contains(err.Error(), "b.db") {
			t.Fatalf("err %v, want ErrNoHealthySet naming b.db", err)
		}
		if s := c.Summary(); s.Rows == 0 || s.OnlyA != s.Rows {
			t.Errorf("summary %+v: want every row only in A", s)
		}
	})
}

// TestCompareRefuses: the same campaign twice, campaigns of different
// treatment factors, and campaigns sharing no configuration.
func TestCompareRefuses(t *testing.T) {
	a := syntheticPlan([]string{"plaintext", "tls"}, []string{"1024"}, 3)
	other := syntheticPlan([]string{"plaintext", "tls"}, []string{"4096"}, 3)
	other.Info[len(other.Info)-1].Value = "second"
	factor := remeasure(a, 5, nil, 0.01)
	factor.Treatment = "message_size"
	cases := []struct {
		name string
		b    *Dataset
		want string
	}{
		{"same campaign", a, "a.db and b.db hold the same campaign (synthetic, created first)"},
		{"other treatment", factor, "a.db compares security, b.db compares message_size"},
		{"no shared configuration", other, "a.db (campaign synthetic, 1 configuration) and b.db (campaign synthetic, 1 configuration) share no configuration"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Compare(a, c.b, "a.db", "b.db", Options{})
			if !errors.Is(err, ErrNotComparable) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err %v, want ErrNotComparable saying %q", err, c.want)
			}
		})
	}
}
