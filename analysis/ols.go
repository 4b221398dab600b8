package analysis

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distuv"
)

// absorbLevels is the level count from which the factor with the most
// levels is absorbed (its levels swept out as group means) rather than
// given a column each.
const absorbLevels = 64

// maxModelColumns bounds the dense columns of the main-effects model
// after absorption; a model needing more is not fitted (its terms say
// why).
const maxModelColumns = 1000

// NoteIdentityFactor is the note of a factor whose every level holds a
// single configuration.
const NoteIdentityFactor = "every level holds a single configuration: the factor names the configurations and explains nothing beyond them, so it is not fitted (the per-configuration effects are its levels)"

// identityFactor reports whether every level of a factor holds a single
// configuration: codes[c] is the level of configuration c.
func identityFactor(codes []int, levels int) bool {
	return levels == len(codes) && len(codes) > 1
}

// mainEffects fits y (one value per matched set; cell[i] the set's
// configuration, 0..K-1) on an intercept and the main effects of the
// given factors (levels[f][c]: factor f's level of configuration c;
// treatment coding, first level the reference) by least squares, and
// tests each factor by the F-test of dropping it (type II sums of squares
// for a main-effects model). The factors are attributes of the
// configurations, so the fit is made on the K configurations' means
// weighted by their set counts, and the within-configuration sum of
// squares is added to the residual: the same fit as on the sets, at a
// cost that grows with the sets, not with the square of a factor's
// levels. The factor with the most levels, when it has absorbLevels or
// more, is absorbed (Frisch-Waugh-Lovell: every other column is centred
// within its levels) instead of given a column per level. A factor whose
// every level holds a single configuration is not fitted (NoteIdentityFactor).
// Aliased factors have DF 0 (rank-revealing SVD).
func mainEffects(y []float64, cell []int, levels [][]string, names []string) (terms []FactorTerm, model FactorModel, ok bool) {
	n := len(y)
	if n < 3 || len(levels) == 0 {
		return nil, FactorModel{}, false
	}
	K := 0
	for _, c := range cell {
		K = max(K, c+1)
	}
	w := make([]float64, K)
	ybar := make([]float64, K)
	for i, v := range y {
		w[cell[i]]++
		ybar[cell[i]] += v
	}
	for c := range ybar {
		if w[c] > 0 {
			ybar[c] /= w[c]
		}
	}
	var mean, sst, ssw float64
	for _, v := range y {
		mean += v
	}
	mean /= float64(n)
	for i, v := range y {
		sst += (v - mean) * (v - mean)
		ssw += (v - ybar[cell[i]]) * (v - ybar[cell[i]])
	}

	// Level codes per factor, levels sorted; identity factors set aside.
	type factor struct {
		name   string
		codes  []int
		levels int
	}
	var fit []factor
	for f, vals := range levels {
		lv := slices.Clone(vals)
		sortLevels(lv)
		lv = slices.Compact(lv)
		index := make(map[string]int, len(lv))
		for i, v := range lv {
			index[v] = i
		}
		codes := make([]int, K)
		for c, v := range vals {
			codes[c] = index[v]
		}
		if identityFactor(codes, len(lv)) {
			terms = append(terms, FactorTerm{Factor: names[f], F: math.NaN(), P: math.NaN(), SS: math.NaN(), Share: math.NaN(), Note: NoteIdentityFactor})
			continue
		}
		fit = append(fit, factor{names[f], codes, len(lv)})
	}
	if len(fit) == 0 {
		return terms, FactorModel{}, len(terms) > 0
	}
	absorb := -1
	for f := range fit {
		if fit[f].levels >= absorbLevels && (absorb < 0 || fit[f].levels > fit[absorb].levels) {
			absorb = f
		}
	}
	cols := 0
	for f := range fit {
		if f != absorb {
			cols += fit[f].levels - 1
		}
	}
	if cols > maxModelColumns {
		for _, f := range fit {
			terms = append(terms, FactorTerm{Factor: f.name, F: math.NaN(), P: math.NaN(), SS: math.NaN(), Share: math.NaN(),
				Note: fmt.Sprintf("not fitted: the factors need %d model columns beyond the largest factor's, more than %d", cols, maxModelColumns)})
		}
		return terms, FactorModel{}, true
	}
	// fitWithout fits the configuration means without factor skip (-1:
	// none) and returns the residual sum of squares over the sets and the
	// rank of the design.
	fitWithout := func(skip int) (rss float64, rank int) {
		var grp []int
		groups := 1
		if absorb >= 0 && skip != absorb {
			grp, groups = fit[absorb].codes, fit[absorb].levels
		} else {
			grp = make([]int, K)
		}
		p := 0
		for f := range fit {
			if f != skip && f != absorb {
				p += fit[f].levels - 1
			}
		}
		X := mat.NewDense(K, max(p, 1), nil)
		col := 0
		for f := range fit {
			if f == skip || f == absorb {
				continue
			}
			for c, code := range fit[f].codes {
				if code > 0 {
					X.Set(c, col+code-1, 1)
				}
			}
			col += fit[f].levels - 1
		}
		// Centre y and every column within the groups (the intercept, or
		// the absorbed factor's levels), weighted by the set counts.
		gw := make([]float64, groups)
		for c := range K {
			gw[grp[c]] += w[c]
		}
		centre := func(get func(c int) float64, set func(c int, v float64)) {
			gm := make([]float64, groups)
			for c := range K {
				gm[grp[c]] += w[c] * get(c)
			}
			for c := range K {
				if gw[grp[c]] > 0 {
					set(c, get(c)-gm[grp[c]]/gw[grp[c]])
				}
			}
		}
		yc := slices.Clone(ybar)
		centre(func(c int) float64 { return yc[c] }, func(c int, v float64) { yc[c] = v })
		for j := range p {
			centre(func(c int) float64 { return X.At(c, j) }, func(c int, v float64) { X.Set(c, j, v) })
		}
		used := 0
		for g := range groups {
			if gw[g] > 0 {
				used++
			}
		}
		if p == 0 {
			for c := range K {
				rss += w[c] * yc[c] * yc[c]
			}
			return ssw + rss, used
		}
		r, rk := weightedLeastSquares(yc, w, X)
		return ssw + r, used + rk
	}
	rssFull, rankFull := fitWithout(-1)
	dfResid := n - rankFull
	if dfResid <= 0 {
		return nil, FactorModel{}, false
	}
	model = FactorModel{N: n, DFResid: dfResid, R2: math.NaN()}
	if sst > 0 {
		model.R2 = 1 - rssFull/sst
	}
	for f := range fit {
		rss, rank := fitWithout(f)
		t := FactorTerm{Factor: fit[f].name, DF: rankFull - rank, SS: math.Max(0, rss-rssFull),
			F: math.NaN(), P: math.NaN(), Share: math.NaN()}
		if t.DF > 0 && rssFull > 0 {
			t.F = (t.SS / float64(t.DF)) / (rssFull / float64(dfResid))
			t.P = distuv.F{D1: float64(t.DF), D2: float64(dfResid)}.Survival(t.F)
		}
		if sst > 0 {
			t.Share = t.SS / sst
		}
		terms = append(terms, t)
	}
	return terms, model, true
}

// weightedLeastSquares returns the weighted residual sum of squares of y
// on the columns of X (weights w) and the rank of X, by a rank-revealing
// SVD of the weighted design.
func weightedLeastSquares(y, w []float64, X *mat.Dense) (rss float64, rank int) {
	n, p := X.Dims()
	Xw := mat.NewDense(n, p, nil)
	yw := make([]float64, n)
	for i := range n {
		s := math.Sqrt(w[i])
		yw[i] = y[i] * s
		for j := range p {
			Xw.Set(i, j, X.At(i, j)*s)
		}
	}
	var svd mat.SVD
	if !svd.Factorize(Xw, mat.SVDThin) {
		return math.NaN(), 0
	}
	vals := svd.Values(nil)
	if len(vals) == 0 || vals[0] == 0 {
		for _, v := range yw {
			rss += v * v
		}
		return rss, 0
	}
	tol := float64(max(n, p)) * vals[0] * 1e-12
	for _, s := range vals {
		if s > tol {
			rank++
		}
	}
	var beta mat.Dense
	svd.SolveTo(&beta, mat.NewDense(n, 1, yw), rank)
	var fit mat.Dense
	fit.Mul(Xw, &beta)
	for i := range yw {
		r := yw[i] - fit.At(i, 0)
		rss += r * r
	}
	return rss, rank
}
