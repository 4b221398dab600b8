package analysis

import (
	"math"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distuv"
)

// mainEffects fits y on an intercept and the main effects of the given
// factors (treatment coding, first level the reference) by least squares,
// and tests each factor by the F-test of dropping it (type II sums of
// squares for a main-effects model). Aliased factors are handled through a
// rank-revealing SVD: a factor whose columns add nothing has DF 0.
func mainEffects(y []float64, factors [][]string, names []string) (terms []FactorTerm, model FactorModel, ok bool) {
	n := len(y)
	if n < 3 || len(factors) == 0 {
		return nil, FactorModel{}, false
	}
	// Columns per factor.
	type block struct{ cols [][]float64 }
	blocks := make([]block, len(factors))
	for f, vals := range factors {
		var levels []string
		for _, v := range vals {
			if !contains(levels, v) {
				levels = append(levels, v)
			}
		}
		sortLevels(levels)
		for _, lv := range levels[1:] {
			col := make([]float64, n)
			for i, v := range vals {
				if v == lv {
					col[i] = 1
				}
			}
			blocks[f].cols = append(blocks[f].cols, col)
		}
	}
	var mean float64
	for _, v := range y {
		mean += v
	}
	mean /= float64(n)
	var sst float64
	for _, v := range y {
		sst += (v - mean) * (v - mean)
	}
	design := func(skip int) [][]float64 {
		cols := [][]float64{ones(n)}
		for f, b := range blocks {
			if f != skip {
				cols = append(cols, b.cols...)
			}
		}
		return cols
	}
	rssFull, rankFull := leastSquares(y, design(-1))
	dfResid := n - rankFull
	if dfResid <= 0 {
		return nil, FactorModel{}, false
	}
	model = FactorModel{N: n, DFResid: dfResid, R2: math.NaN()}
	if sst > 0 {
		model.R2 = 1 - rssFull/sst
	}
	for f := range factors {
		rss, rank := leastSquares(y, design(f))
		t := FactorTerm{Factor: names[f], DF: rankFull - rank, SS: math.Max(0, rss-rssFull),
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

func ones(n int) []float64 {
	o := make([]float64, n)
	for i := range o {
		o[i] = 1
	}
	return o
}

// leastSquares returns the residual sum of squares and the rank of the
// design.
func leastSquares(y []float64, cols [][]float64) (rss float64, rank int) {
	n, p := len(y), len(cols)
	X := mat.NewDense(n, p, nil)
	for j, c := range cols {
		for i, v := range c {
			X.Set(i, j, v)
		}
	}
	var svd mat.SVD
	if !svd.Factorize(X, mat.SVDThin) {
		return math.NaN(), 0
	}
	vals := svd.Values(nil)
	tol := float64(max(n, p)) * vals[0] * 1e-12
	for _, s := range vals {
		if s > tol {
			rank++
		}
	}
	var beta mat.Dense
	svd.SolveTo(&beta, mat.NewDense(n, 1, y), rank)
	var fit mat.Dense
	fit.Mul(X, &beta)
	for i := range y {
		r := y[i] - fit.At(i, 0)
		rss += r * r
	}
	return rss, rank
}
