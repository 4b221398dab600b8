package analysis

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// Method is how a bootstrap confidence interval is formed.
type Method string

// Interval methods.
const (
	// MethodBCa is the bias-corrected and accelerated percentile interval
	// (Efron and Tibshirani 1993, §14.3), with the acceleration from the
	// jackknife; the default.
	MethodBCa Method = "bca"
	// MethodPercentile is the plain percentile interval.
	MethodPercentile Method = "percentile"
)

// atom is one value of a bootstrap distribution and how many resamples gave
// it. Resamples of a few sets repeat a lot (three sets have only ten distinct
// resamples), so a distribution is kept as sorted atoms rather than as B
// values; every quantity below equals what the B raw values would give.
type atom struct {
	v float64
	n int
}

// distribution is a bootstrap distribution: atoms sorted by value, total
// resamples.
type distribution struct {
	atoms []atom
	total int
}

// distributionOf sorts vals (in place) and collapses equal values.
func distributionOf(vals []float64, buf []atom) distribution {
	slices.Sort(vals)
	atoms := buf[:0]
	for _, v := range vals {
		if k := len(atoms); k > 0 && atoms[k-1].v == v {
			atoms[k-1].n++
			continue
		}
		atoms = append(atoms, atom{v: v, n: 1})
	}
	return distribution{atoms: atoms, total: len(vals)}
}

// distributionOfAtoms sorts atoms (in place) by value and merges equal ones.
func distributionOfAtoms(atoms []atom) distribution {
	slices.SortFunc(atoms, func(a, b atom) int {
		switch {
		case a.v < b.v:
			return -1
		case a.v > b.v:
			return 1
		}
		return 0
	})
	out := atoms[:0]
	total := 0
	for _, a := range atoms {
		total += a.n
		if k := len(out); k > 0 && out[k-1].v == a.v {
			out[k-1].n += a.n
			continue
		}
		out = append(out, a)
	}
	return distribution{atoms: out, total: total}
}

// at returns the value of rank r (0-based) of the sorted resample values.
func (d distribution) at(r int) float64 {
	c := 0
	for _, a := range d.atoms {
		c += a.n
		if r < c {
			return a.v
		}
	}
	return d.atoms[len(d.atoms)-1].v
}

// quantile is numpy.percentile(values, 100*q) with the default "linear"
// method, including numpy's two-sided lerp.
func (d distribution) quantile(q float64) float64 {
	if d.total == 0 || math.IsNaN(q) {
		return math.NaN()
	}
	vi := float64(d.total-1) * q
	lo := math.Floor(vi)
	if lo < 0 {
		lo = 0
	}
	if lo > float64(d.total-1) {
		lo = float64(d.total - 1)
	}
	g := vi - lo
	if g < 0 {
		g = 0
	}
	k := int(lo)
	a := d.at(k)
	b := a
	if k+1 < d.total {
		b = d.at(k + 1)
	}
	diff := b - a
	if g >= 0.5 {
		return b - diff*(1-g)
	}
	return a + diff*g
}

// percentileOfScore is the fraction of resamples below x, counting ties as
// half (scipy's _percentile_of_score, kind "mean").
func (d distribution) percentileOfScore(x float64) float64 {
	lt, le := 0, 0
	for _, a := range d.atoms {
		if a.v < x {
			lt += a.n
		}
		if a.v <= x {
			le += a.n
		}
	}
	return float64(lt+le) / float64(2*d.total)
}

var unitNormal = distuv.UnitNormal

// acceleration is the BCa acceleration from jackknife values (Efron and
// Tibshirani 1993, eq. 14.15), written as scipy writes it. Zero when the
// jackknife values do not vary.
func acceleration(jack []float64) float64 {
	n := float64(len(jack))
	if len(jack) < 2 {
		return 0
	}
	mean := 0.0
	for _, v := range jack {
		mean += v
	}
	mean /= n
	var num, den float64
	for _, v := range jack {
		u := (n - 1) * (mean - v)
		num += u * u * u
		den += u * u
	}
	num /= n * n * n
	den /= n * n
	if den == 0 {
		return 0
	}
	return num / 6 / math.Pow(den, 1.5)
}

// bcaLevels returns the adjusted quantile levels of the BCa interval, or ok
// false when the bias correction is infinite (the estimate lies outside the
// bootstrap distribution), where BCa is undefined.
func bcaLevels(d distribution, theta float64, accel float64, alpha float64) (a1, a2 float64, ok bool) {
	z0 := unitNormal.Quantile(d.percentileOfScore(theta))
	if math.IsInf(z0, 0) || math.IsNaN(z0) {
		return 0, 0, false
	}
	za := unitNormal.Quantile(alpha)
	n1 := z0 + za
	a1 = unitNormal.CDF(z0 + n1/(1-accel*n1))
	n2 := z0 - za
	a2 = unitNormal.CDF(z0 + n2/(1-accel*n2))
	if math.IsNaN(a1) || math.IsNaN(a2) {
		return 0, 0, false
	}
	return a1, a2, true
}

// intervalOf forms the two-sided interval at confidence level conf from a
// bootstrap distribution. It returns the method actually used: BCa falls
// back to the percentile interval where BCa is undefined.
func intervalOf(d distribution, theta float64, jack []float64, conf float64, m Method) (lo, hi float64, used Method) {
	return intervalAccel(d, theta, acceleration(jack), conf, m)
}

// intervalAccel is intervalOf with the BCa acceleration given.
func intervalAccel(d distribution, theta, accel, conf float64, m Method) (lo, hi float64, used Method) {
	if d.total == 0 {
		return math.NaN(), math.NaN(), m
	}
	if len(d.atoms) == 1 {
		return d.atoms[0].v, d.atoms[0].v, m
	}
	alpha := (1 - conf) / 2
	if m == MethodBCa {
		if a1, a2, ok := bcaLevels(d, theta, accel, alpha); ok {
			return d.quantile(a1), d.quantile(a2), MethodBCa
		}
		m = MethodPercentile
	}
	return d.quantile(alpha), d.quantile(1 - alpha), m
}
