package analysis

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestHolm(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		name    string
		in, out []float64
	}{
		{"textbook", []float64{0.01, 0.04, 0.03, 0.005}, []float64{0.03, 0.06, 0.06, 0.02}},
		{"capped-at-one", []float64{0.6, 0.5}, []float64{1, 1}},
		{"nan-not-in-family", []float64{0.01, nan, 0.02}, []float64{0.02, nan, 0.02}},
		{"single", []float64{0.2}, []float64{0.2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Holm(c.in)
			for i := range got {
				if math.IsNaN(c.out[i]) != math.IsNaN(got[i]) || !math.IsNaN(got[i]) && math.Abs(got[i]-c.out[i]) > 1e-15 {
					t.Fatalf("Holm(%v) = %v, want %v", c.in, got, c.out)
				}
			}
		})
	}
}

func TestCohenDz(t *testing.T) {
	cases := []struct {
		name string
		d    []float64
		want float64
	}{
		{"known", []float64{1, 2, 3}, 2},
		{"negative", []float64{-1, -3}, -2 / math.Sqrt2},
		{"no-spread", []float64{2, 2}, math.NaN()},
		{"one", []float64{1}, math.NaN()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := CohenDz(c.d)
			if math.IsNaN(c.want) != math.IsNaN(got) || !math.IsNaN(got) && math.Abs(got-c.want) > 1e-12 {
				t.Fatalf("dz(%v) = %v, want %v", c.d, got, c.want)
			}
		})
	}
}

func TestWilcoxonKnown(t *testing.T) {
	cases := []struct {
		name string
		d    []float64
		p    float64
	}{
		// n=3 all positive: R+=6 of 0..6, P(R+>=6)=1/8, two-sided 1/4.
		{"n3-all-positive", []float64{1, 2, 3}, 0.25},
		{"zeros-dropped", []float64{0, 1, 2, 3}, 0}, // approx; checked only non-NaN
		{"all-zero", []float64{0, 0}, math.NaN()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Wilcoxon(c.d)
			switch {
			case math.IsNaN(c.p):
				if !math.IsNaN(got.P) {
					t.Fatalf("p = %v, want NaN", got.P)
				}
			case c.p == 0:
				if got.Exact || got.N != 3 || math.IsNaN(got.P) {
					t.Fatalf("got %+v, want approximate test of 3 differences", got)
				}
			default:
				if math.Abs(got.P-c.p) > 1e-15 || !got.Exact {
					t.Fatalf("got %+v, want exact p %v", got, c.p)
				}
			}
		})
	}
}

func TestQuantileLikeNumpy(t *testing.T) {
	d := distributionOf([]float64{4, 1, 3, 2}, nil)
	cases := []struct{ q, want float64 }{{0, 1}, {0.25, 1.75}, {0.5, 2.5}, {0.9, 3.7}, {1, 4}}
	for _, c := range cases {
		if got := d.quantile(c.q); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if got := d.percentileOfScore(2); got != (1.0+2.0)/8 {
		t.Errorf("percentileOfScore(2) = %v, want 3/8", got)
	}
}

// TestCountedPathEqualsDirect: counting distinct resamples must give the
// very same intervals as evaluating every resample.
func TestCountedPathEqualsDirect(t *testing.T) {
	for _, n := range []int{2, 3, 5, 8} {
		x, y := genPaired(uint64(n), n)
		cfg := bootConfig{seed: 9, resamples: 3000, confidence: 0.95, method: MethodBCa}
		a := &bootJob{key: "k", samples: []*pairedSample{newPairedSample(x, y, false)}}
		b := &bootJob{key: "k", samples: []*pairedSample{newPairedSample(x, y, false)}, direct: true}
		a.run(cfg, &bootScratch{})
		b.run(cfg, &bootScratch{})
		for k := range nStats {
			if a.low[0][k] != b.low[0][k] || a.high[0][k] != b.high[0][k] || a.used[0][k] != b.used[0][k] {
				t.Errorf("n=%d %s: counted [%v,%v] %s, direct [%v,%v] %s", n, statNames[k],
					a.low[0][k], a.high[0][k], a.used[0][k], b.low[0][k], b.high[0][k], b.used[0][k])
			}
		}
	}
}

func TestDegenerateDistribution(t *testing.T) {
	x := []float64{2, 2, 2, 2}
	y := []float64{1, 1, 1, 1}
	j := &bootJob{key: "d", samples: []*pairedSample{newPairedSample(x, y, false)}}
	j.run(bootConfig{seed: 1, resamples: 500, confidence: 0.95, method: MethodBCa}, &bootScratch{})
	if j.low[0][statMeanPenalty] != 100 || j.high[0][statMeanPenalty] != 100 {
		t.Fatalf("constant penalty 100%%: interval [%v,%v]", j.low[0][statMeanPenalty], j.high[0][statMeanPenalty])
	}
}

// TestClusterBootstrapWiderThanIID: when cells differ a lot and replicates
// within a cell agree, treating sets as independent understates the
// uncertainty of a pooled mean; resampling cells first must not.
func TestClusterBootstrapWiderThanIID(t *testing.T) {
	var x, y []float64
	var clusters [][]int32
	for c := range 10 {
		var cl []int32
		shift := float64(c%5) * 4 // penalties 10..90% by cell
		for r := range 3 {
			cl = append(cl, int32(len(x)))
			y = append(y, 10)
			x = append(x, 10*(1.1+shift/10)+float64(r)*0.01)
		}
		clusters = append(clusters, cl)
	}
	cfg := bootConfig{seed: 3, resamples: 4000, confidence: 0.95, method: MethodPercentile}
	iid := &bootJob{key: "k", samples: []*pairedSample{newPairedSample(x, y, false)}}
	cl := &bootJob{key: "k", samples: []*pairedSample{newPairedSample(x, y, false)}, clusters: clusters}
	iid.run(cfg, &bootScratch{})
	cl.run(cfg, &bootScratch{})
	wi := iid.high[0][statMeanPenalty] - iid.low[0][statMeanPenalty]
	wc := cl.high[0][statMeanPenalty] - cl.low[0][statMeanPenalty]
	// Cell means carry all the variance: with 10 cells of 3 the cluster
	// interval is about sqrt(3) times wider.
	if wc < 1.4*wi {
		t.Fatalf("cluster interval width %v not clearly wider than iid %v", wc, wi)
	}
}

func TestMultisets(t *testing.T) {
	for n, want := range map[int]int{1: 1, 2: 3, 3: 10, 4: 35, 5: 126} {
		ms, prob := multisets(n)
		sum := 0.0
		for _, p := range prob {
			sum += p
		}
		if len(ms) != want || math.Abs(sum-1) > 1e-12 {
			t.Errorf("n=%d: %d multisets (want %d), probabilities sum to %v", n, len(ms), want, sum)
		}
	}
}

// TestTabledClusterMatchesDirect: drawing each cluster's inner resample
// from its table is the same distribution as drawing its sets one by one.
// Both bootstrap distributions (B values each, independent streams) must
// have the same mean and standard deviation within Monte Carlo error: the
// mean of B values has sd s/sqrt(B), the difference of two such means
// sqrt(2)*s/sqrt(B), allowed 5 times that; the sd of B values has sd about
// s/sqrt(2B) (normal approximation), the difference of two allowed
// 6*sqrt(2)*s/sqrt(2B) to cover the heavier tails of the median's discrete
// distribution. Interval endpoints of the continuous statistics must agree
// within 5*sqrt(2)*sigma, sigma measured over K direct runs.
func TestTabledClusterMatchesDirect(t *testing.T) {
	var x, y []float64
	var clusters [][]int32
	r := rand.New(rand.NewPCG(8, 8))
	for c := range 15 {
		var cl []int32
		for range 3 {
			cl = append(cl, int32(len(x)))
			b := 5 + float64(c%4)
			y = append(y, b)
			x = append(x, b*(1.1+0.05*r.NormFloat64()+0.02*float64(c%3)))
		}
		clusters = append(clusters, cl)
	}
	const (
		K = 25
		B = 3000
	)
	cfg := func(seed int) bootConfig {
		return bootConfig{seed: uint64(seed), resamples: B, confidence: 0.95, method: MethodBCa}
	}
	job := func(direct bool) *bootJob {
		return &bootJob{key: "c", samples: []*pairedSample{newPairedSample(x, y, false)}, clusters: clusters, direct: direct, keep: true}
	}
	var lows, highs [nStats][]float64
	var first *bootJob
	for k := range K {
		j := job(true)
		j.run(cfg(k), &bootScratch{})
		if first == nil {
			first = j
		}
		for s := range nStats {
			lows[s] = append(lows[s], j.low[0][s])
			highs[s] = append(highs[s], j.high[0][s])
		}
	}
	tab := job(false)
	tab.run(cfg(1000), &bootScratch{})
	for s := range nStats {
		md, sd := meanSD(first.dist[0][s])
		mt, st := meanSD(tab.dist[0][s])
		if tol := 5 * math.Sqrt2 * sd / math.Sqrt(B); math.Abs(md-mt) > tol {
			t.Errorf("%s: bootstrap mean direct %v tabled %v, tolerance %v", statNames[s], md, mt, tol)
		}
		if tol := 6 * math.Sqrt2 * sd / math.Sqrt(2*B); math.Abs(sd-st) > tol {
			t.Errorf("%s: bootstrap sd direct %v tabled %v, tolerance %v", statNames[s], sd, st, tol)
		}
		if s == statMedianPenalty {
			continue // discrete: endpoints jump between atoms
		}
		for _, c := range []struct {
			what string
			d    []float64
			got  float64
		}{{"low", lows[s], tab.low[0][s]}, {"high", highs[s], tab.high[0][s]}} {
			sigma := stddev(c.d)
			if sigma == 0 || math.Abs(c.got-c.d[0]) > 5*math.Sqrt2*sigma {
				t.Errorf("%s %s: tabled %v, direct %v, sigma %v", statNames[s], c.what, c.got, c.d[0], sigma)
			}
		}
	}
}

func meanSD(v []float64) (float64, float64) {
	var m float64
	for _, x := range v {
		m += x
	}
	m /= float64(len(v))
	return m, stddev(v)
}
