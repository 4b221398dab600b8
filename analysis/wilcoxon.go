package analysis

import (
	"math"
	"slices"
	"sync"
)

// WilcoxonResult is a two-sided Wilcoxon signed-rank test of paired
// differences.
type WilcoxonResult struct {
	// T is min(R+, R-), the statistic scipy.stats.wilcoxon reports.
	T float64
	// P is the two-sided p-value; NaN when there is nothing to test (no
	// non-zero difference).
	P float64
	// Exact says whether P comes from the exact null distribution.
	Exact bool
	// N is the number of non-zero differences ranked.
	N int
}

// Wilcoxon tests whether paired differences are centred on zero. It follows
// scipy.stats.wilcoxon's defaults (zero_method="wilcox": zero differences
// are dropped; correction=False; alternative="two-sided") with one
// deliberate difference: the exact null distribution is used when at most
// 50 differences remain and none are zero or tied, and the normal
// approximation with the tie correction of the variance otherwise. scipy
// 1.10's method="auto" keeps "exact" with ties and truncates the tied rank
// sum; with ties the approximation is the sound choice, and equals scipy's
// method="approx".
func Wilcoxon(d []float64) WilcoxonResult {
	nz := make([]float64, 0, len(d))
	zeros := 0
	for _, v := range d {
		if math.IsNaN(v) {
			continue
		}
		if v == 0 {
			zeros++
			continue
		}
		nz = append(nz, v)
	}
	n := len(nz)
	if n == 0 {
		return WilcoxonResult{T: math.NaN(), P: math.NaN()}
	}
	ranks, tieTerm := absRanks(nz)
	var rp, rm float64
	for i, v := range nz {
		if v > 0 {
			rp += ranks[i]
		} else {
			rm += ranks[i]
		}
	}
	T := math.Min(rp, rm)
	if n <= 50 && zeros == 0 && tieTerm == 0 {
		pmf := signedRankPMF(n)
		k := int(rp)
		var p float64
		if k == (len(pmf)-1)/2 {
			p = 1
		} else {
			var less, greater float64
			for i := 0; i <= k; i++ {
				less += pmf[i]
			}
			for i := k; i < len(pmf); i++ {
				greater += pmf[i]
			}
			p = math.Min(1, 2*math.Min(less, greater))
		}
		return WilcoxonResult{T: T, P: p, Exact: true, N: n}
	}
	fn := float64(n)
	mn := fn * (fn + 1) * 0.25
	se := fn*(fn+1)*(2*fn+1) - 0.5*tieTerm
	se = math.Sqrt(se / 24)
	z := (T - mn) / se
	p := 2 * unitNormal.Survival(math.Abs(z))
	return WilcoxonResult{T: T, P: math.Min(1, p), N: n}
}

// absRanks ranks |v| with average ranks for ties and returns the tie term
// sum(t^3 - t) over groups of t tied values.
func absRanks(v []float64) (ranks []float64, tieTerm float64) {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		x, y := math.Abs(v[a]), math.Abs(v[b])
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
	ranks = make([]float64, len(v))
	for i := 0; i < len(idx); {
		j := i + 1
		for j < len(idx) && math.Abs(v[idx[j]]) == math.Abs(v[idx[i]]) {
			j++
		}
		r := float64(i+j+1) / 2 // mean of ranks i+1..j
		for k := i; k < j; k++ {
			ranks[idx[k]] = r
		}
		if t := float64(j - i); t > 1 {
			tieTerm += t*t*t - t
		}
		i = j
	}
	return ranks, tieTerm
}

var (
	pmfMu    sync.Mutex
	pmfCache = map[int][]float64{}
)

// signedRankPMF is the null distribution of R+ for n untied non-zero
// differences: the number of subsets of {1..n} with each sum, over 2^n.
func signedRankPMF(n int) []float64 {
	pmfMu.Lock()
	defer pmfMu.Unlock()
	if p, ok := pmfCache[n]; ok {
		return p
	}
	max := n * (n + 1) / 2
	c := make([]float64, max+1)
	c[0] = 1
	for k := 1; k <= n; k++ {
		for s := max; s >= k; s-- {
			c[s] += c[s-k]
		}
	}
	total := math.Ldexp(1, n)
	for i := range c {
		c[i] /= total
	}
	pmfCache[n] = c
	return c
}

// Holm adjusts p-values for multiple comparisons (Holm 1979, step-down,
// monotone, capped at 1), as statsmodels' multipletests(method="holm").
// NaN p-values are not part of the family and stay NaN.
func Holm(p []float64) []float64 {
	out := make([]float64, len(p))
	idx := make([]int, 0, len(p))
	for i, v := range p {
		out[i] = math.NaN()
		if !math.IsNaN(v) {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case p[a] < p[b]:
			return -1
		case p[a] > p[b]:
			return 1
		}
		return 0
	})
	m := len(idx)
	run := 0.0
	for k, i := range idx {
		adj := math.Min(1, float64(m-k)*p[i])
		run = math.Max(run, adj)
		out[i] = run
	}
	return out
}

// CohenDz is the standardized mean of paired differences: mean / sd (n-1).
// NaN with fewer than two differences or no spread.
func CohenDz(d []float64) float64 {
	if len(d) < 2 {
		return math.NaN()
	}
	var m float64
	for _, v := range d {
		m += v
	}
	m /= float64(len(d))
	var ss float64
	for _, v := range d {
		ss += (v - m) * (v - m)
	}
	sd := math.Sqrt(ss / float64(len(d)-1))
	if sd == 0 {
		return math.NaN()
	}
	return m / sd
}
