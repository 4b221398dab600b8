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
	m := mainEffectsModel{configMeans: meansOf(y, cell)}
	m.fit, terms = codeFactors(levels, names, len(m.w))
	if len(m.fit) == 0 {
		return terms, FactorModel{}, len(terms) > 0
	}
	m.absorb = absorbedFactor(m.fit)
	cols := 0
	for f := range m.fit {
		if f != m.absorb {
			cols += m.fit[f].levels - 1
		}
	}
	if cols > maxModelColumns {
		for _, f := range m.fit {
			terms = append(terms, FactorTerm{Factor: f.name, F: math.NaN(), P: math.NaN(), SS: math.NaN(), Share: math.NaN(),
				Note: fmt.Sprintf("not fitted: the factors need %d model columns beyond the largest factor's, more than %d", cols, maxModelColumns)})
		}
		return terms, FactorModel{}, true
	}
	rssFull, rankFull := m.fitWithout(-1)
	dfResid := n - rankFull
	if dfResid <= 0 {
		return nil, FactorModel{}, false
	}
	model = FactorModel{N: n, DFResid: dfResid, R2: math.NaN()}
	if m.sst > 0 {
		model.R2 = 1 - rssFull/m.sst
	}
	for f := range m.fit {
		rss, rank := m.fitWithout(f)
		t := FactorTerm{Factor: m.fit[f].name, DF: rankFull - rank, SS: math.Max(0, rss-rssFull),
			F: math.NaN(), P: math.NaN(), Share: math.NaN()}
		if t.DF > 0 && rssFull > 0 {
			t.F = (t.SS / float64(t.DF)) / (rssFull / float64(dfResid))
			t.P = distuv.F{D1: float64(t.DF), D2: float64(dfResid)}.Survival(t.F)
		}
		if m.sst > 0 {
			t.Share = t.SS / m.sst
		}
		terms = append(terms, t)
	}
	return terms, model, true
}

// configMeans summarises y per configuration: the set counts w and means
// ybar of each configuration (0..K-1), and the total and
// within-configuration sums of squares, which the fit on the means needs
// to stand for the fit on the sets.
type configMeans struct {
	w, ybar  []float64
	sst, ssw float64
}

// meansOf summarises y (cell[i]: value i's configuration) per
// configuration.
func meansOf(y []float64, cell []int) configMeans {
	n := len(y)
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
	return configMeans{w: w, ybar: ybar, sst: sst, ssw: ssw}
}

// modelFactor is a factor of the model: each configuration's level code
// (0..levels-1, levels sorted; 0 the reference).
type modelFactor struct {
	name   string
	codes  []int
	levels int
}

// codeFactors codes each factor's levels (levels[f][c]: factor f's level
// of configuration c, for K configurations) in sortLevels order. Identity
// factors are set aside with a term saying why (NoteIdentityFactor); the
// others are returned to fit.
func codeFactors(levels [][]string, names []string, K int) (fit []modelFactor, identity []FactorTerm) {
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
			identity = append(identity, FactorTerm{Factor: names[f], F: math.NaN(), P: math.NaN(), SS: math.NaN(), Share: math.NaN(), Note: NoteIdentityFactor})
			continue
		}
		fit = append(fit, modelFactor{names[f], codes, len(lv)})
	}
	return fit, identity
}

// absorbedFactor is the index of the factor to absorb: the one with the
// most levels, when it has absorbLevels or more; -1 for none.
func absorbedFactor(fit []modelFactor) int {
	absorb := -1
	for f := range fit {
		if fit[f].levels >= absorbLevels && (absorb < 0 || fit[f].levels > fit[absorb].levels) {
			absorb = f
		}
	}
	return absorb
}

// mainEffectsModel is a main-effects model on configuration means: the
// factors fitted with a column per level beyond the first, and the factor
// absorbed (absorb, -1 for none).
type mainEffectsModel struct {
	configMeans
	fit    []modelFactor
	absorb int
}

// fitWithout fits the configuration means without factor skip (-1: none)
// and returns the residual sum of squares over the sets and the rank of
// the design.
func (m *mainEffectsModel) fitWithout(skip int) (rss float64, rank int) {
	K := len(m.w)
	var grp []int
	groups := 1
	if m.absorb >= 0 && skip != m.absorb {
		grp, groups = m.fit[m.absorb].codes, m.fit[m.absorb].levels
	} else {
		grp = make([]int, K)
	}
	X, p := m.design(skip)
	// Centre y and every column within the groups (the intercept, or
	// the absorbed factor's levels), weighted by the set counts.
	gw := make([]float64, groups)
	for c := range K {
		gw[grp[c]] += m.w[c]
	}
	centre := func(get func(c int) float64, set func(c int, v float64)) {
		gm := make([]float64, groups)
		for c := range K {
			gm[grp[c]] += m.w[c] * get(c)
		}
		for c := range K {
			if gw[grp[c]] > 0 {
				set(c, get(c)-gm[grp[c]]/gw[grp[c]])
			}
		}
	}
	yc := slices.Clone(m.ybar)
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
			rss += m.w[c] * yc[c] * yc[c]
		}
		return m.ssw + rss, used
	}
	r, rk := weightedLeastSquares(yc, m.w, X)
	return m.ssw + r, used + rk
}

// design is the model's design matrix without factor skip and the
// absorbed factor: a configuration per row, p columns of level
// indicators (treatment coding). With no column it has one of zeros.
func (m *mainEffectsModel) design(skip int) (X *mat.Dense, p int) {
	for f := range m.fit {
		if f != skip && f != m.absorb {
			p += m.fit[f].levels - 1
		}
	}
	X = mat.NewDense(len(m.w), max(p, 1), nil)
	col := 0
	for f := range m.fit {
		if f == skip || f == m.absorb {
			continue
		}
		for c, code := range m.fit[f].codes {
			if code > 0 {
				X.Set(c, col+code-1, 1)
			}
		}
		col += m.fit[f].levels - 1
	}
	return X, p
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
