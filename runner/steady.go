package runner

import (
	"fmt"
	"math"
	"slices"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/results"
	"github.com/xp-bench/xp/runner/loadgen"
)

// Steady-state rule of a capped run's measurement window (docs/analysis.md,
// "Steady state"): a trend counts only when the Mann-Kendall test finds it
// (two-sided, p < trendAlpha) and it is large in practice: the per-second
// publish latency p50 doubles or halves across the window (Sen's slope on
// its logarithm), or the backlog grows by more than a second of the target
// rate. A flat noisy series passes however long the window.
const (
	trendAlpha = 0.05
	// trendMinSeconds is the shortest window a trend is judged on: below
	// it even a strictly monotone series is not significant at trendAlpha.
	trendMinSeconds = 5
	// latencyFactor is the change of the latency p50 across the window
	// that counts as a trend: ×2 up, ×½ down.
	latencyFactor = 2.0
	// backlogSeconds is the growth of the backlog across the window that
	// counts as a queue building up, in seconds of the target rate.
	backlogSeconds = 1.0
	// rateShortfall is how far below the target rate a capped run may
	// publish (the health gate's 1%).
	rateShortfall = 0.01
)

// Reason prefixes of a run that is not in a steady state: overloaded (a
// queue builds up, or the target rate was not reached) or still warming
// (latency falls through the window).
const (
	ReasonOverloaded = "overloaded: "
	ReasonNotSteady  = "not steady: "
)

// mkResult is the Mann-Kendall test of a series for a monotone trend
// (Mann 1945, Kendall 1975): S, the sum of the signs of every later minus
// earlier value; its variance under no trend, corrected for ties; Z with
// a continuity correction; the two-sided normal p-value; and Sen's slope
// (Sen 1968), the median of the pairwise slopes, per step.
type mkResult struct {
	S, Var, Z, P, Slope float64
}

// mannKendall tests xs, one value per second, for a monotone trend. With
// fewer than two values there is no test: P is 1.
func mannKendall(xs []float64) mkResult {
	n := len(xs)
	if n < 2 {
		return mkResult{P: 1}
	}
	var s float64
	slopes := make([]float64, 0, n*(n-1)/2)
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			d := xs[j] - xs[i]
			switch {
			case d > 0:
				s++
			case d < 0:
				s--
			}
			slopes = append(slopes, d/float64(j-i))
		}
	}
	fn := float64(n)
	v := fn * (fn - 1) * (2*fn + 5)
	sorted := slices.Clone(xs)
	slices.Sort(sorted)
	for i := 0; i < n; {
		j := i
		for j < n && sorted[j] == sorted[i] {
			j++
		}
		if t := float64(j - i); t > 1 {
			v -= t * (t - 1) * (2*t + 5)
		}
		i = j
	}
	v /= 18
	r := mkResult{S: s, Var: v, P: 1, Slope: median(slopes)}
	if v > 0 {
		switch {
		case s > 0:
			r.Z = (s - 1) / math.Sqrt(v)
		case s < 0:
			r.Z = (s + 1) / math.Sqrt(v)
		}
		r.P = math.Erfc(math.Abs(r.Z) / math.Sqrt2)
	}
	return r
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// steadyWindow is what the steady-state rule reads of a capped run's
// measurement window.
type steadyWindow struct {
	// Rate is the target rate (msg/s), PublishRate what was published.
	Rate        int64
	PublishRate float64
	// P50Ms is the publish latency p50 of each second with records, in
	// order; nil when the per-second histograms did not come back.
	P50Ms []float64
	// Backlog is the backlog at the end of each second of the window.
	Backlog []float64
}

// steadyReasons judges a capped run's window: one sentence per finding,
// ReasonOverloaded when the latency or backlog grows through the window
// or the rate falls short of the target, ReasonNotSteady when the latency
// falls through it (a cold cluster). Empty when the window is steady.
func steadyReasons(w steadyWindow) []string {
	var out []string
	if w.Rate > 0 && w.PublishRate < float64(w.Rate)*(1-rateShortfall) {
		out = append(out, fmt.Sprintf("%spublish rate %.1f msg/s short of the target %d msg/s: the cluster did not keep up",
			ReasonOverloaded, w.PublishRate, w.Rate))
	}
	if n := len(w.P50Ms); n >= trendMinSeconds {
		logs := make([]float64, n)
		for i, v := range w.P50Ms {
			logs[i] = math.Log(max(v, 1e-3))
		}
		mk := mannKendall(logs)
		factor := math.Exp(mk.Slope * float64(n-1))
		if mk.P < trendAlpha {
			switch {
			case factor >= latencyFactor:
				out = append(out, fmt.Sprintf("%spublish latency p50 rises ×%.3g through the %d s window (Mann-Kendall Z = %.2f, p = %.2g; Sen's slope): a queue builds up",
					ReasonOverloaded, factor, n, mk.Z, mk.P))
			case factor <= 1/latencyFactor:
				out = append(out, fmt.Sprintf("%spublish latency p50 falls ×%.3g through the %d s window (Mann-Kendall Z = %.2f, p = %.2g; Sen's slope): the cluster was still warming up",
					ReasonNotSteady, factor, n, mk.Z, mk.P))
			}
		}
	}
	if n := len(w.Backlog); n >= trendMinSeconds && w.Rate > 0 {
		mk := mannKendall(w.Backlog)
		growth := mk.Slope * float64(n-1)
		if mk.P < trendAlpha && growth >= backlogSeconds*float64(w.Rate) {
			out = append(out, fmt.Sprintf("%sthe backlog grows by %.0f records (%.1f s of the target rate) through the %d s window (Mann-Kendall Z = %.2f, p = %.2g; Sen's slope): the consumers fall behind",
				ReasonOverloaded, growth, growth/float64(w.Rate), n, mk.Z, mk.P))
		}
	}
	return out
}

// windowOf reads a capped run's steady-state inputs from its load result:
// the per-second publish p50 of the window's seconds (from the per-second
// histograms, when the result carries them) and the backlog at the end of
// each second of the window (not of the drain).
func windowOf(rate int64, res *loadgen.Result) (steadyWindow, error) {
	w := steadyWindow{Rate: rate, PublishRate: res.PublishRate}
	nsec := int(math.Ceil(res.Config.DurationS))
	for _, iv := range res.Intervals {
		p50, err := secondP50(iv)
		if err != nil {
			return w, err
		}
		if p50 > 0 {
			w.P50Ms = append(w.P50Ms, p50)
		}
	}
	for _, s := range res.Series {
		if s.Second < nsec {
			w.Backlog = append(w.Backlog, float64(s.Backlog))
		}
	}
	return w, nil
}

// judgeSteady applies the steady-state rule to a capped row's finished
// run: a window that is not steady makes a healthy run invalid, with the
// reasons added to the health gate's. Saturating rows (rate max) queue by
// design and are not judged.
func judgeSteady(row *planner.Row, res *loadgen.Result, ev *results.Evidence) {
	if res == nil || row.TargetRate.IsMax() || ev.Outcome == results.OutcomeFailed {
		return
	}
	w, err := windowOf(int64(row.TargetRate), res)
	if err != nil {
		ev.Outcome, ev.Error = results.OutcomeFailed, "steady state of the window: "+err.Error()
		return
	}
	reasons := steadyReasons(w)
	if len(reasons) == 0 {
		return
	}
	ev.Outcome = results.OutcomeInvalid
	ev.Reasons = append(ev.Reasons, reasons...)
}

// secondP50 is the publish latency p50 of one second's records in ms; 0
// when the second has none.
func secondP50(iv loadgen.Interval) (float64, error) {
	if len(iv.Publish) == 0 {
		return 0, nil
	}
	h, err := hdrhistogram.Decode(iv.Publish)
	if err != nil {
		return 0, fmt.Errorf("publish histogram of second %d: %w", iv.Second, err)
	}
	if h.TotalCount() == 0 {
		return 0, nil
	}
	return math.Max(float64(h.ValueAtQuantile(50)), 1) / 1e3, nil
}
