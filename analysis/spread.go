package analysis

import (
	"fmt"
	"math"
	"slices"
	"sync"

	"gonum.org/v1/gonum/stat/distuv"
)

// MinConfigsForPooling is the fewest configurations (each with two or
// more matched sets) of one treatment, rate class and metric whose spread
// is pooled to bound each configuration's interval. Below it a
// configuration's interval rests on its own runs.
const MinConfigsForPooling = 20

// MinSetsAlone is the fewest matched sets from which a t interval that
// borrows no spread is taken to bound the mean: with fewer, a rare slow
// run (a stall, a noisy neighbour) is too likely to be missing from the
// sets, and the interval says so in its note.
const MinSetsAlone = 20

// minConfigsForCheck is the fewest configurations with four or more sets
// the split-half check of compatible spreads needs.
const minConfigsForCheck = 20

// splitHalfAlpha is the level of the split-half check: spreads are called
// incompatible only on strong evidence, since a false call gives up the
// pooled spread for every configuration of the campaign.
const splitHalfAlpha = 0.001

// spreadPool is the spread the configurations of one treatment, rate
// class and metric share: the pooled within-configuration variance of
// each mean-type statistic on a relative scale (penalty in points,
// difference over the configuration's mean baseline, linearised ratio),
// and whether the configurations' spreads are compatible.
type spreadPool struct {
	configs int
	df      float64
	s2      [nStats]float64
	// compatible is false when the split-half check finds that a
	// configuration's spread is a property of the configuration; the
	// intervals then fall back to each configuration's own.
	compatible [nStats]bool
	// check says how compatibility was judged, for the notes.
	check [nStats]string
}

// spreadValues returns the values whose mean is statistic k of p, on the
// relative scale pooled across configurations, and the factor that takes
// a half-width on that scale back to the statistic's unit.
func spreadValues(p *pairedSample, k int) (v []float64, scale float64) {
	switch k {
	case statMeanPenalty:
		return p.pen, 1
	case statMeanDifference:
		var mb float64
		for _, x := range p.b {
			mb += x
		}
		mb /= float64(len(p.b))
		v = make([]float64, len(p.d))
		for i, d := range p.d {
			v[i] = d / mb
		}
		return v, math.Abs(mb)
	case statRatioOfMeans:
		return ratioLinear(p.t, p.b), 1
	}
	return nil, 0
}

// poolSpread pools the spread of the configurations' samples (one per
// configuration, same treatment, rate class and metric). It returns nil
// with fewer than MinConfigsForPooling configurations of two or more sets.
func poolSpread(samples []*pairedSample) *spreadPool {
	var use []*pairedSample
	for _, p := range samples {
		if len(p.t) >= 2 {
			use = append(use, p)
		}
	}
	if len(use) < MinConfigsForPooling {
		return nil
	}
	sp := &spreadPool{configs: len(use)}
	for _, p := range use {
		sp.df += float64(len(p.t) - 1)
	}
	for _, k := range []int{statMeanPenalty, statMeanDifference, statRatioOfMeans} {
		var ss float64
		vals := make([][]float64, len(use))
		for i, p := range use {
			v, _ := spreadValues(p, k)
			_, s2 := meanVar(v)
			ss += s2 * float64(len(v)-1)
			vals[i] = v
		}
		sp.s2[k] = ss / sp.df
		sp.compatible[k], _, sp.check[k] = compatibleSpreads(vals)
	}
	return sp
}

// compatibleSpreads is the split-half check of whether the spread of the
// configurations' values (one slice each) is a property of the
// configuration: Spearman's rank correlation, one-sided, between the
// variances of the odd and of the even replicates of the configurations
// of 4 or more sets. compatible unless p < splitHalfAlpha; checked false
// (and compatible) with fewer than minConfigsForCheck such
// configurations. check says how it was judged.
func compatibleSpreads(vals [][]float64) (compatible, checked bool, check string) {
	var odd, even []float64
	for _, v := range vals {
		if len(v) >= 4 {
			a, b := splitHalves(v)
			_, va := meanVar(a)
			_, vb := meanVar(b)
			odd, even = append(odd, va), append(even, vb)
		}
	}
	if len(odd) < minConfigsForCheck {
		return true, false, fmt.Sprintf("fewer than %d configurations have 4 or more sets, so whether spreads differ between configurations cannot be checked", minConfigsForCheck)
	}
	rho, pv := SpearmanGreater(odd, even)
	return !(pv < splitHalfAlpha), true, fmt.Sprintf("split-half check over %d configurations: Spearman rho %.2f between the spreads of odd and even replicates, p=%.2g", len(odd), rho, pv)
}

// splitHalves splits v into its odd and even positions (replicates 1, 3,
// … and 2, 4, …): under noise that is the same for every configuration
// the two halves' spreads are independent; where spread is a property of
// the configuration they agree.
func splitHalves(v []float64) (odd, even []float64) {
	for i, x := range v {
		if i%2 == 0 {
			odd = append(odd, x)
		} else {
			even = append(even, x)
		}
	}
	return odd, even
}

// SpearmanGreater is Spearman's rank correlation of x and y (average
// ranks for ties) and its one-sided p-value against a positive
// correlation, from the t distribution with n-2 degrees of freedom, as
// scipy.stats.spearmanr(x, y, alternative="greater") gives it. NaN p with
// fewer than 3 pairs or a constant sample.
func SpearmanGreater(x, y []float64) (rho, p float64) {
	n := len(x)
	if n < 3 || len(y) != n {
		return math.NaN(), math.NaN()
	}
	rx, ry := averageRanks(x), averageRanks(y)
	mx, vx := meanVar(rx)
	my, vy := meanVar(ry)
	if vx == 0 || vy == 0 {
		return math.NaN(), math.NaN()
	}
	var c float64
	for i := range rx {
		c += (rx[i] - mx) * (ry[i] - my)
	}
	rho = c / float64(n-1) / math.Sqrt(vx*vy)
	rho = math.Max(-1, math.Min(1, rho))
	df := float64(n - 2)
	if rho >= 1 {
		return rho, 0
	}
	t := rho * math.Sqrt(df/((1-rho)*(1+rho)))
	return rho, distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Survival(t)
}

// averageRanks ranks v from 1, ties taking the mean of their ranks.
func averageRanks(v []float64) []float64 {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case v[a] < v[b]:
			return -1
		case v[a] > v[b]:
			return 1
		}
		return 0
	})
	r := make([]float64, len(v))
	for i := 0; i < len(idx); {
		j := i + 1
		for j < len(idx) && v[idx[j]] == v[idx[i]] {
			j++
		}
		for k := i; k < j; k++ {
			r[idx[k]] = float64(i+j+1) / 2
		}
		i = j
	}
	return r
}

// tQuantile is the two-sided quantile of Student's t at confidence conf.
// The inverse incomplete beta behind it is costly and the same few
// degrees of freedom recur (n-1 of every configuration, a pool's, each
// leave-one-out of the fragility check), so each value is computed once
// per process and remembered: the same arguments give the same bits.
func tQuantile(df, conf float64) float64 {
	if math.IsNaN(df) || math.IsNaN(conf) {
		return tQuantileOf(df, conf)
	}
	k := [2]float64{df, conf}
	if q, ok := tQuantiles.Load(k); ok {
		return q.(float64)
	}
	q := tQuantileOf(df, conf)
	tQuantiles.Store(k, q)
	return q
}

// tQuantiles remembers tQuantile's values by degrees of freedom and
// confidence.
var tQuantiles sync.Map

func tQuantileOf(df, conf float64) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(1 - (1-conf)/2)
}
