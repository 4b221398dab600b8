package analysis

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// debianPython is Debian's interpreter, which has python3-scipy; the
// python3 first on PATH may be another one without it.
const debianPython = "/usr/bin/python3"

// runPython runs script with Debian's python3, passing in as JSON on stdin
// and decoding JSON from stdout into out.
func runPython(t *testing.T, script string, in, out any) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "check.py")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(debianPython, path)
	cmd.Stdin = bytes.NewReader(b)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	res, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", debianPython, path, err, stderr.String())
	}
	if err := json.Unmarshal(res, out); err != nil {
		t.Fatalf("decode python output %q: %v", res, err)
	}
}

// scipyStats defines, in numpy, the four statistics of pairedSample.eval on
// treatment x and baseline y (lower is better).
const scipyStats = `
import json, sys, warnings
import numpy as np
from scipy import stats
warnings.simplefilter("ignore")
def mean_penalty(x, y, axis=-1): return np.mean((x - y) / y * 100, axis=axis)
def median_penalty(x, y, axis=-1): return np.median((x - y) / y * 100, axis=axis)
def mean_difference(x, y, axis=-1): return np.mean(x - y, axis=axis)
def ratio_of_means(x, y, axis=-1): return np.mean(x, axis=axis) / np.mean(y, axis=axis)
STATS = [mean_penalty, median_penalty, mean_difference, ratio_of_means]
`

// genPaired draws n matched latencies: baseline lognormal around 5 ms, the
// treatment 10% slower with its own noise.
func genPaired(seed uint64, n int) (t, b []float64) {
	r := rand.New(rand.NewPCG(seed, 7))
	for range n {
		base := 5 * math.Exp(0.3*r.NormFloat64())
		b = append(b, base)
		t = append(t, base*1.1*math.Exp(0.15*r.NormFloat64()))
	}
	return t, b
}

// TestBCaFormulaMatchesScipy hands our own bootstrap distribution to
// scipy.stats.bootstrap (bootstrap_result=..., n_resamples=0), so both
// compute the BCa interval from identical resamples: bias correction,
// jackknife acceleration and numpy's percentile must agree to rounding.
func TestBCaFormulaMatchesScipy(t *testing.T) {
	cases := []struct {
		name   string
		seed   uint64
		n      int
		conf   float64
		method Method
	}{
		{"n12-95", 1, 12, 0.95, MethodBCa},
		{"n30-90", 2, 30, 0.90, MethodBCa},
		{"n57-99", 3, 57, 0.99, MethodBCa},
		{"n20-95-percentile", 4, 20, 0.95, MethodPercentile},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			x, y := genPaired(tc.seed, tc.n)
			j := &bootJob{key: tc.name, samples: []*pairedSample{newPairedSample(x, y, false)}, keep: true}
			cfg := bootConfig{seed: 42, resamples: 2000, confidence: tc.conf, method: tc.method}
			j.run(cfg, &bootScratch{})
			scipyMethod := map[Method]string{MethodBCa: "BCa", MethodPercentile: "percentile"}[tc.method]
			in := map[string]any{"x": x, "y": y, "conf": tc.conf, "dist": j.dist[0], "method": scipyMethod}
			var out struct {
				Low, High []float64
			}
			runPython(t, scipyStats+`
d = json.load(sys.stdin)
x, y = np.array(d["x"]), np.array(d["y"])
low, high = [], []
for k, f in enumerate(STATS):
    prior = stats._resampling.BootstrapResult(confidence_interval=None,
        bootstrap_distribution=np.array(d["dist"][k]), standard_error=None)
    r = stats.bootstrap((x, y), f, paired=True, method=d["method"], n_resamples=0,
        confidence_level=d["conf"], bootstrap_result=prior)
    low.append(float(r.confidence_interval.low)); high.append(float(r.confidence_interval.high))
print(json.dumps({"low": low, "high": high}))
`, in, &out)
			for k := range nStats {
				if j.used[0][k] != tc.method {
					t.Errorf("%s: used %s, want %s", statNames[k], j.used[0][k], tc.method)
				}
				for _, c := range []struct {
					what      string
					got, want float64
				}{{"low", j.low[0][k], out.Low[k]}, {"high", j.high[0][k], out.High[k]}} {
					if !closeRel(c.got, c.want, 1e-9) {
						t.Errorf("%s %s = %.15g, scipy %.15g", statNames[k], c.what, c.got, c.want)
					}
				}
			}
		})
	}
}

func closeRel(a, b, tol float64) bool {
	return math.Abs(a-b) <= tol*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// TestBCaMonteCarloMatchesScipy compares intervals from independent random
// streams: ours and scipy's own resampling (numpy's generator), each with
// B resamples. An endpoint is a Monte Carlo estimate, so the two differ by
// the noise of both. We measure that noise instead of guessing it: the
// standard deviation sigma of each endpoint over K of our runs with
// different seeds. The difference of two independent estimates has sd
// sqrt(2)*sigma; the test allows 5*sqrt(2)*sigma (for a normal difference a
// false failure has probability 6e-7 per endpoint, < 1e-5 for the 16 here).
// sigma is estimated from K=30 runs, so the bound carries a further ~15%
// uncertainty, which the 5-sigma margin covers.
func TestBCaMonteCarloMatchesScipy(t *testing.T) {
	const (
		B = 4000
		K = 30
	)
	cases := []struct {
		name string
		seed uint64
		n    int
	}{
		{"n15", 11, 15},
		{"n40", 12, 40},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			x, y := genPaired(tc.seed, tc.n)
			var lows, highs [nStats][]float64
			var first *bootJob
			for k := range K {
				j := &bootJob{key: tc.name, samples: []*pairedSample{newPairedSample(x, y, false)}}
				j.run(bootConfig{seed: uint64(1000 + k), resamples: B, confidence: 0.95, method: MethodBCa}, &bootScratch{})
				if first == nil {
					first = j
				}
				for s := range nStats {
					lows[s] = append(lows[s], j.low[0][s])
					highs[s] = append(highs[s], j.high[0][s])
				}
			}
			var out struct {
				Low, High, Est []float64
			}
			runPython(t, scipyStats+`
d = json.load(sys.stdin)
x, y = np.array(d["x"]), np.array(d["y"])
low, high, est = [], [], []
for f in STATS:
    r = stats.bootstrap((x, y), f, paired=True, method="BCa", n_resamples=d["B"],
        confidence_level=0.95, random_state=np.random.default_rng(12345))
    low.append(float(r.confidence_interval.low)); high.append(float(r.confidence_interval.high))
    est.append(float(f(x, y)))
print(json.dumps({"low": low, "high": high, "est": est}))
`, map[string]any{"x": x, "y": y, "B": B}, &out)
			for s := range nStats {
				if !closeRel(first.est[0][s], out.Est[s], 1e-12) {
					t.Errorf("%s estimate %.15g, numpy %.15g", statNames[s], first.est[0][s], out.Est[s])
				}
				for _, c := range []struct {
					what string
					ours []float64
					sp   float64
				}{{"low", lows[s], out.Low[s]}, {"high", highs[s], out.High[s]}} {
					sigma := stddev(c.ours)
					tol := 5 * math.Sqrt2 * sigma
					if sigma == 0 || math.Abs(c.ours[0]-c.sp) > tol {
						t.Errorf("%s %s: ours %.6g, scipy %.6g, |diff| %.3g > tolerance %.3g (sigma %.3g)",
							statNames[s], c.what, c.ours[0], c.sp, math.Abs(c.ours[0]-c.sp), tol, sigma)
					}
				}
			}
		})
	}
}

func stddev(v []float64) float64 {
	var m float64
	for _, x := range v {
		m += x
	}
	m /= float64(len(v))
	var ss float64
	for _, x := range v {
		ss += (x - m) * (x - m)
	}
	return math.Sqrt(ss / float64(len(v)-1))
}

// TestWilcoxonMatchesScipy checks statistic and p-value against
// scipy.stats.wilcoxon: its defaults where we agree (exact without zeros
// and ties up to n=50, normal approximation beyond), and method="approx"
// where there are ties (see Wilcoxon for why).
func TestWilcoxonMatchesScipy(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	normal := func(n int, shift float64) []float64 {
		var d []float64
		for range n {
			d = append(d, shift+r.NormFloat64())
		}
		return d
	}
	rounded := func(d []float64) []float64 {
		var o []float64
		for _, v := range d {
			o = append(o, math.Round(v*2)/2)
		}
		return o
	}
	cases := []struct {
		name   string
		d      []float64
		method string
		exact  bool
	}{
		{"exact-n3", []float64{0.5, 1.2, 2.2}, "auto", true},
		{"exact-n10-shifted", normal(10, 0.8), "auto", true},
		{"exact-n25-null", normal(25, 0), "auto", true},
		{"exact-n50", normal(50, 0.3), "auto", true},
		{"approx-n51", normal(51, 0.3), "auto", false},
		{"approx-n300", normal(300, 0.1), "auto", false},
		{"ties-n20", rounded(normal(20, 0.5)), "approx", false},
		{"zeros-and-ties-n80", rounded(normal(80, 0.2)), "approx", false},
	}
	var ds [][]float64
	var methods []string
	for _, c := range cases {
		ds = append(ds, c.d)
		methods = append(methods, c.method)
	}
	var out struct {
		T, P []float64
	}
	runPython(t, scipyStats+`
d = json.load(sys.stdin)
T, P = [], []
for x, m in zip(d["d"], d["m"]):
    r = stats.wilcoxon(np.array(x), method=m)
    T.append(float(r.statistic)); P.append(float(r.pvalue))
print(json.dumps({"t": T, "p": P}))
`, map[string]any{"d": ds, "m": methods}, &out)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Wilcoxon(c.d)
			if got.Exact != c.exact {
				t.Errorf("exact = %v, want %v", got.Exact, c.exact)
			}
			if got.T != out.T[i] {
				t.Errorf("T = %v, scipy %v", got.T, out.T[i])
			}
			if !closeRel(got.P, out.P[i], 1e-9) {
				t.Errorf("p = %.15g, scipy %.15g", got.P, out.P[i])
			}
		})
	}
}

// configsOf groups sets by their factor levels: each distinct combination
// is a configuration. It returns the configuration of each set and the
// levels of each factor per configuration.
func configsOf(cols [][]string) (cell []int, levels [][]string) {
	index := map[string]int{}
	levels = make([][]string, len(cols))
	for i := range cols[0] {
		key := ""
		for f := range cols {
			key += cols[f][i] + "\x00"
		}
		c, ok := index[key]
		if !ok {
			c = len(index)
			index[key] = c
			for f := range cols {
				levels[f] = append(levels[f], cols[f][i])
			}
		}
		cell = append(cell, c)
	}
	return cell, levels
}

// TestMainEffectsMatchesNumpy fits the sensitivity model on three designs
// and checks every partial F-test against the same computation in numpy
// on the sets (lstsq residuals of the full dummy-coded model and of the
// model without each factor, matrix_rank for the degrees of freedom) and
// scipy.stats.f.sf: an unbalanced design of three factors; a design whose
// "workload" factor has 80 levels of two configurations each (absorbed,
// not given 79 columns); and one with a factor whose every level is a
// single configuration, which is reported as such and left out of both
// fits.
func TestMainEffectsMatchesNumpy(t *testing.T) {
	type design struct {
		name     string
		names    []string
		cols     [][]string
		y        []float64
		identity string // the factor reported as naming the configurations
	}
	r := rand.New(rand.NewPCG(21, 21))
	var designs []design
	{
		d := design{name: "unbalanced", names: []string{"size", "acks", "brokers"}, cols: make([][]string, 3)}
		levels := [][]string{{"1024", "10240", "102400"}, {"1", "all"}, {"3", "5"}}
		effect := [][]float64{{0, 4, 9}, {0, 1.5}, {0, 0}}
		for i := range 90 {
			v := 10.0
			for f := range 3 {
				k := r.IntN(len(levels[f]))
				if f == 0 && i%5 == 0 {
					k = 2 // unbalanced
				}
				d.cols[f] = append(d.cols[f], levels[f][k])
				v += effect[f][k]
			}
			d.y = append(d.y, v+r.NormFloat64())
		}
		designs = append(designs, d)
	}
	{
		d := design{name: "absorbed", names: []string{"workload", "acks"}, cols: make([][]string, 2)}
		for w := range 80 {
			base := 3 * r.NormFloat64()
			for a, acks := range []string{"1", "all"} {
				for range 2 + r.IntN(3) {
					d.cols[0] = append(d.cols[0], fmt.Sprintf("w%03d", w))
					d.cols[1] = append(d.cols[1], acks)
					d.y = append(d.y, 10+base+1.2*float64(a)+r.NormFloat64())
				}
			}
		}
		designs = append(designs, d)
	}
	{
		d := design{name: "identity", names: []string{"config", "size"}, cols: make([][]string, 2), identity: "config"}
		for c := range 30 {
			for range 3 {
				d.cols[0] = append(d.cols[0], fmt.Sprintf("c%02d", c))
				d.cols[1] = append(d.cols[1], []string{"1024", "10240"}[c%2])
				d.y = append(d.y, 10+2*float64(c%2)+0.3*float64(c%5)+r.NormFloat64())
			}
		}
		designs = append(designs, d)
	}
	for _, dz := range designs {
		t.Run(dz.name, func(t *testing.T) {
			cell, levels := configsOf(dz.cols)
			terms, model, ok := mainEffects(dz.y, cell, levels, dz.names)
			if !ok {
				t.Fatal("no model")
			}
			var fitted []string
			var fitCols [][]string
			for f, name := range dz.names {
				if name != dz.identity {
					fitted = append(fitted, name)
					fitCols = append(fitCols, dz.cols[f])
				}
			}
			var out struct {
				SS, F, P []float64
				DFResid  int
				R2       float64
			}
			runPython(t, scipyStats+`
d = json.load(sys.stdin)
y = np.array(d["y"])
def dummies(col):
    def key(s):
        try:
            return (0, float(s), s)
        except ValueError:
            return (1, 0.0, s)
    lv = sorted(set(col), key=key)
    return np.array([[1.0 if v == l else 0.0 for l in lv[1:]] for v in col])
blocks = [dummies(c) for c in d["cols"]]
def rss(skip):
    X = np.hstack([np.ones((len(y), 1))] + [b for i, b in enumerate(blocks) if i != skip])
    beta, *_ = np.linalg.lstsq(X, y, rcond=None)
    res = y - X @ beta
    return float(res @ res), np.linalg.matrix_rank(X)
full, rank = rss(-1)
dfr = len(y) - rank
SS, F, P = [], [], []
for i in range(len(blocks)):
    r, rk = rss(i)
    df = rank - rk
    ss = r - full
    f = (ss / df) / (full / dfr)
    SS.append(ss); F.append(f); P.append(float(stats.f.sf(f, df, dfr)))
sst = float(((y - y.mean()) ** 2).sum())
print(json.dumps({"ss": SS, "f": F, "p": P, "dfresid": int(dfr), "r2": 1 - full / sst}))
`, map[string]any{"y": dz.y, "cols": fitCols}, &out)
			if model.DFResid != out.DFResid || !closeRel(model.R2, out.R2, 1e-9) {
				t.Errorf("model df %d r2 %v, numpy df %d r2 %v", model.DFResid, model.R2, out.DFResid, out.R2)
			}
			k := 0
			for _, term := range terms {
				if term.Factor == dz.identity {
					if term.Note != NoteIdentityFactor || !math.IsNaN(term.F) {
						t.Errorf("%s: note %q F %v, want it reported as naming the configurations", term.Factor, term.Note, term.F)
					}
					continue
				}
				if term.Factor != fitted[k] {
					t.Fatalf("term %d is %s, want %s", k, term.Factor, fitted[k])
				}
				if !closeRel(term.SS, out.SS[k], 1e-8) || !closeRel(term.F, out.F[k], 1e-8) || !closeRel(term.P, out.P[k], 1e-8) {
					t.Errorf("%s: SS %v F %v p %v; numpy SS %v F %v p %v", term.Factor, term.SS, term.F, term.P, out.SS[k], out.F[k], out.P[k])
				}
				k++
			}
			if k != len(fitted) {
				t.Errorf("%d fitted terms, want %d", k, len(fitted))
			}
			if dz.name == "unbalanced" && !(terms[0].P < 1e-6 && terms[2].P > 1e-3) {
				t.Errorf("size must matter (p %v) and brokers not (p %v)", terms[0].P, terms[2].P)
			}
		})
	}
}

// TestClusterBootstrapMatchesNumpy checks the two-level cluster bootstrap
// against an independent numpy implementation (draw cells with
// replacement, then sets within each drawn cell; percentile interval of
// the mean penalty and of the ratio of means). Monte Carlo tolerance as in
// TestBCaMonteCarloMatchesScipy: 5*sqrt(2)*sigma, sigma measured over K of
// our runs. (Resampling sets independently instead fails it.)
func TestClusterBootstrapMatchesNumpy(t *testing.T) {
	const (
		B = 4000
		K = 25
	)
	r := rand.New(rand.NewPCG(31, 31))
	var x, y []float64
	var clusters [][]int32
	var cellOf []int
	for c := range 12 {
		var cl []int32
		shift := 0.05 * float64(c%4)
		for range 2 + c%3 { // cells of 2, 3 and 4 sets
			cl = append(cl, int32(len(x)))
			cellOf = append(cellOf, c)
			b := 4 + float64(c%5)
			y = append(y, b)
			x = append(x, b*(1.08+shift+0.04*r.NormFloat64()))
		}
		clusters = append(clusters, cl)
	}
	stats := []int{statMeanPenalty, statRatioOfMeans}
	lows := make([][]float64, len(stats))
	highs := make([][]float64, len(stats))
	for k := range K {
		j := &bootJob{key: "n", samples: []*pairedSample{newPairedSample(x, y, false)}, clusters: clusters}
		j.run(bootConfig{seed: uint64(k), resamples: B, confidence: 0.95, method: MethodPercentile}, &bootScratch{})
		for i, s := range stats {
			lows[i] = append(lows[i], j.low[0][s])
			highs[i] = append(highs[i], j.high[0][s])
		}
	}
	var out struct{ Low, High []float64 }
	runPython(t, scipyStats+`
d = json.load(sys.stdin)
x, y, cell = np.array(d["x"]), np.array(d["y"]), np.array(d["cell"])
cells = [np.flatnonzero(cell == c) for c in sorted(set(d["cell"]))]
rng = np.random.default_rng(777)
mp, rm = [], []
for _ in range(d["B"]):
    idx = np.concatenate([rng.choice(cells[c], size=len(cells[c]), replace=True)
                          for c in rng.integers(0, len(cells), size=len(cells))])
    mp.append(np.mean((x[idx] - y[idx]) / y[idx] * 100))
    rm.append(np.mean(x[idx]) / np.mean(y[idx]))
low = [float(np.percentile(mp, 2.5)), float(np.percentile(rm, 2.5))]
high = [float(np.percentile(mp, 97.5)), float(np.percentile(rm, 97.5))]
print(json.dumps({"low": low, "high": high}))
`, map[string]any{"x": x, "y": y, "cell": cellOf, "B": B}, &out)
	for i, s := range stats {
		for _, c := range []struct {
			what string
			ours []float64
			np   float64
		}{{"low", lows[i], out.Low[i]}, {"high", highs[i], out.High[i]}} {
			sigma := stddev(c.ours)
			if tol := 5 * math.Sqrt2 * sigma; sigma == 0 || math.Abs(c.ours[0]-c.np) > tol {
				t.Errorf("%s %s: ours %.6g, numpy %.6g, tolerance %.3g", statNames[s], c.what, c.ours[0], c.np, tol)
			}
		}
	}
}
