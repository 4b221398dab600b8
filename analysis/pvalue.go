package analysis

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Tests of effects.csv's p_value, each the test its row's interval
// inverts: p < 1 - confidence exactly when the interval excludes no
// effect (0 for penalties and differences, 1 for ratios).
const (
	// TestT is the t-test whose pivot the row's t interval is: the
	// estimate over its standard error, with the interval's degrees of
	// freedom (student-t, student-t-pooled, student-t-strata).
	TestT = "t-test"
	// TestSign is the sign test the median's order-statistic interval
	// inverts.
	TestSign = "sign-test"
	// TestBootstrap is the bootstrap interval inverted: p is the
	// smallest 1 - level whose interval (same resamples, same method)
	// excludes no effect.
	TestBootstrap = "bootstrap-inversion"
	// TestLogRatioT is the headline's test: the one-sample t-test of the
	// per-set log ratios (MethodLogRatioT and its variants).
	TestLogRatioT = "log-ratio-t-test"
)

// nullOf is the value of statistic k when the treatment has no effect.
func nullOf(k int) float64 {
	if k == statRatioOfMeans {
		return 1
	}
	return 0
}

// tIntervalP is the two-sided p-value of the t-test whose 95% (conf)
// interval is [lo, hi] with df degrees of freedom: the centre's distance
// from null over the standard error (half-width / t quantile).
func tIntervalP(lo, hi, df, conf, null float64) float64 {
	if math.IsNaN(lo) || math.IsNaN(hi) || !(df > 0) {
		return math.NaN()
	}
	center, half := (lo+hi)/2, (hi-lo)/2
	if half <= 0 {
		if center == null {
			return 1
		}
		return 0
	}
	return tTestP((center-null)/(half/tQuantile(df, conf)), df)
}

// tTestP is the two-sided p-value of a t statistic with df degrees of
// freedom.
func tTestP(t, df float64) float64 {
	if math.IsNaN(t) {
		return math.NaN()
	}
	return math.Min(1, 2*distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Survival(math.Abs(t)))
}

// signTestP is the two-sided sign test of a zero median that the
// order-statistic interval inverts: with m the smaller of the counts of
// values at most 0 and at least 0, p = 2 P(Bin(n, 1/2) <= m). The
// interval between the k-th smallest and k-th largest value excludes 0
// exactly when m < k, that is when p <= 2 P(Bin < k), at most 1 -
// confidence (zeros count against significance).
func signTestP(v []float64) float64 {
	n := len(v)
	if n == 0 {
		return math.NaN()
	}
	var le, ge int
	for _, x := range v {
		if x <= 0 {
			le++
		}
		if x >= 0 {
			ge++
		}
	}
	return math.Min(1, 2*distuv.Binomial{N: float64(n), P: 0.5}.CDF(float64(min(le, ge))))
}

// bootstrapP inverts a bootstrap interval: the smallest alpha at which
// the interval of level 1 - alpha (same distribution, estimate, jackknife
// and method) excludes null, by bisection (the interval narrows as alpha
// grows). Below one resample's resolution it is that resolution. At the
// analysis's own level it agrees with the interval given exactly.
func bootstrapP(d distribution, theta float64, jack []float64, conf float64, m Method, null float64) float64 {
	if d.total == 0 || math.IsNaN(theta) {
		return math.NaN()
	}
	accel := acceleration(jack)
	excludes := func(alpha float64) bool {
		lo, hi, _ := intervalAccel(d, theta, accel, 1-alpha, m)
		return lo > null || hi < null
	}
	floor := 1 / float64(d.total)
	var p float64
	switch {
	case excludes(floor):
		p = floor
	case !excludes(1 - 1e-9):
		p = 1
	default:
		lo, hi := floor, 1-1e-9
		for range 50 {
			mid := (lo + hi) / 2
			if excludes(mid) {
				hi = mid
			} else {
				lo = mid
			}
		}
		p = hi
	}
	alpha := 1 - conf
	switch at := excludes(alpha); {
	case at && p >= alpha:
		p = math.Nextafter(alpha, 0)
	case !at && p < alpha:
		p = alpha
	}
	return p
}
