package analysis

import (
	"math"
)

// StratifiedResult is a two-sided stratified signed-rank test of paired
// differences.
type StratifiedResult struct {
	// W is the statistic: over strata, the signed-rank sum of the
	// stratum's non-zero differences (ranks of |d| within the stratum,
	// average ranks for ties) divided by the stratum's count + 1.
	W float64
	// P is the two-sided p-value; NaN when no difference is non-zero.
	P float64
	// PMin is the smallest two-sided p-value the design could give: that
	// of every non-zero difference having the same sign.
	PMin float64
	// Exact says whether P is from the exact sign-flip distribution.
	Exact bool
	// N counts the non-zero differences, Strata the strata holding one.
	N, Strata int
}

// exactCells bounds the work of the exact distribution: differences times
// the range of the integer statistic.
const exactCells = 20_000_000

// StratifiedSignedRank tests whether paired differences, grouped in
// strata (configurations), are centred on zero, using every difference:
// van Elteren's stratified signed-rank statistic (van Elteren 1960), each
// stratum's signed-rank sum weighted by 1/(n+1) so that every stratum
// counts alike whatever its scale. Zero differences are dropped, as
// scipy.stats.wilcoxon's default does. Under the null each difference's
// sign is + or - with probability 1/2 independently, given the ranks; P
// is from that distribution exactly (a sign-flip permutation test, as
// scipy.stats.permutation_test with permutation_type="samples" computes
// it exhaustively) when it is small enough to count, otherwise from the
// normal approximation with variance sum(w^2 R^2), which is exact for the
// ranks as tied. With one stratum and no ties it is the Wilcoxon signed-
// rank test.
func StratifiedSignedRank(strata [][]float64) StratifiedResult {
	type stratum struct {
		ranks []float64
		pos   []bool
	}
	var ss []stratum
	n := 0
	for _, d := range strata {
		var nz []float64
		for _, v := range d {
			if v != 0 && !math.IsNaN(v) {
				nz = append(nz, v)
			}
		}
		if len(nz) == 0 {
			continue
		}
		r, _ := absRanks(nz)
		s := stratum{ranks: r, pos: make([]bool, len(nz))}
		for i, v := range nz {
			s.pos[i] = v > 0
		}
		ss = append(ss, s)
		n += len(nz)
	}
	res := StratifiedResult{W: math.NaN(), P: math.NaN(), PMin: math.NaN(), N: n, Strata: len(ss)}
	if n == 0 {
		return res
	}
	var w, vr, wmax float64
	l := int64(1)
	for _, s := range ss {
		k := float64(len(s.ranks) + 1)
		for i, r := range s.ranks {
			if s.pos[i] {
				w += r / k
			} else {
				w -= r / k
			}
			vr += r * r / (k * k)
			wmax += r / k
		}
		if l <= 1<<20 {
			l = lcm(l, int64(len(s.ranks)+1))
		}
	}
	res.W = w
	// Exact: scores a = 2R * L/(n+1) are integers; W*2L = sum of +-a.
	total := int64(0)
	if l <= 1<<20 {
		for _, s := range ss {
			for _, r := range s.ranks {
				total += int64(math.Round(2*r)) * (l / int64(len(s.ranks)+1))
			}
		}
	}
	if l <= 1<<20 && total > 0 && float64(n)*float64(total) <= exactCells {
		// p[u]: probability that the positive scores sum to u.
		p := make([]float64, total+1)
		p[0] = 1
		top := int64(0)
		obs := int64(0)
		for _, s := range ss {
			f := l / int64(len(s.ranks)+1)
			for i, r := range s.ranks {
				a := int64(math.Round(2*r)) * f
				if s.pos[i] {
					obs += a
				}
				top += a
				for u := top; u >= 0; u-- {
					q := p[u]
					if u >= a {
						q += p[u-a]
					}
					p[u] = q / 2
				}
			}
		}
		var le, ge float64
		for u := int64(0); u <= total; u++ {
			if u <= obs {
				le += p[u]
			}
			if u >= obs {
				ge += p[u]
			}
		}
		res.P = math.Min(1, 2*math.Min(le, ge))
		res.PMin = math.Min(1, 2*p[total])
		res.Exact = true
		return res
	}
	sd := math.Sqrt(vr)
	res.P = math.Min(1, 2*unitNormal.Survival(math.Abs(w)/sd))
	res.PMin = math.Min(1, 2*unitNormal.Survival(wmax/sd))
	return res
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func lcm(a, b int64) int64 { return a / gcd(a, b) * b }
