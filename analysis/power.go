package analysis

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// PowerOptions ask how many replicates detect an effect.
type PowerOptions struct {
	// Effect is the mean penalty to detect, in percentage points (2 for
	// "2%").
	Effect float64
	// Power is the wanted probability of detecting it; default 0.8.
	Power float64
	// Alpha is the two-sided significance level; default 0.05.
	Alpha float64
	// Metrics to size for; default publish_ms_p99 and e2e_ms_p99 where the
	// pilot has them, else every metric.
	Metrics []string
	// Treatment restricts the answer to one level; default every level.
	Treatment string
	// Baseline overrides the pilot's baseline.
	Baseline string
	// Simulations per candidate size of the resampling method; default 2000.
	Simulations int
	// Progress, when set, is told after each answer how many of the total
	// are done (xp plan power draws a bar from it).
	Progress func(done, total int)
}

// Power methods.
const (
	// PowerNormal is the normal approximation n = ((z(1-α/2) + z(power)) s / δ)².
	PowerNormal = "normal-approximation"
	// PowerResampling simulates the one-sample t-test of the paired
	// penalties on resamples of the pilot's residuals shifted by the effect.
	PowerResampling = "resampling-simulation"
)

// PowerSimulationLimit is the largest sample size the resampling method
// simulates. Beyond it the mean of the resampled penalties is normal to
// well within the simulation's own error, and the answer is past xp plan
// expand's limit anyway: the normal approximation answers, at a fraction
// of the cost (a simulation at n costs Simulations×n draws per candidate).
const PowerSimulationLimit = 2048

// PowerLargePilot is the pilot size (matched sets) from which the normal
// approximation is used: from it the pilot's spread is well estimated and
// the t quantiles are close to the normal ones.
const PowerLargePilot = 30

// PowerAnswer is the sizing of one treatment and metric.
type PowerAnswer struct {
	Treatment string `json:"treatment"`
	Metric    string `json:"metric"`
	// PilotSets and PilotConfigs count the pilot's healthy matched sets
	// and their configurations.
	PilotSets    int `json:"pilot_sets"`
	PilotConfigs int `json:"pilot_configurations"`
	// SD is the within-configuration standard deviation of the paired
	// penalty (percentage points), pooled over configurations.
	SD float64 `json:"sd_penalty"`
	// Replicates is the matched sets per configuration that detect the
	// effect in each configuration; PooledSets the matched sets in all
	// that detect it pooled over configurations, and PooledReplicates
	// those per configuration of the pilot's design.
	Replicates       int    `json:"replicates_per_configuration"`
	PooledSets       int    `json:"matched_sets_pooled"`
	PooledReplicates int    `json:"replicates_per_configuration_pooled"`
	Method           string `json:"method"`
}

// ErrNoPilotData: the pilot has no healthy matched set for a wanted metric.
var ErrNoPilotData = fmt.Errorf("no healthy matched set in the pilot")

// Power sizes a campaign from a pilot: per treatment and metric, the
// replicates per configuration (and matched sets pooled) whose paired
// one-sample t-test of the penalty detects opt.Effect with probability
// opt.Power at two-sided level opt.Alpha.
func Power(d *Dataset, opt PowerOptions) ([]PowerAnswer, error) {
	if !(opt.Effect > 0) {
		return nil, fmt.Errorf("%w: --effect %v: want a positive penalty such as 2%%", ErrBadOption, opt.Effect)
	}
	if opt.Power == 0 {
		opt.Power = 0.8
	}
	if opt.Alpha == 0 {
		opt.Alpha = 0.05
	}
	if !(opt.Power > 0 && opt.Power < 1) || !(opt.Alpha > 0 && opt.Alpha < 1) {
		return nil, fmt.Errorf("%w: --power %v and --alpha %v: want levels between 0 and 1", ErrBadOption, opt.Power, opt.Alpha)
	}
	if opt.Simulations == 0 {
		opt.Simulations = 2000
	}
	res, err := Analyse(d, Options{Baseline: opt.Baseline, Resamples: 100, Method: MethodPercentile})
	if err != nil {
		return nil, err
	}
	metrics := opt.Metrics
	if len(metrics) == 0 {
		for _, m := range []string{"publish_ms_p99", "e2e_ms_p99"} {
			if slices.ContainsFunc(d.Metrics, func(x MetricDef) bool { return x.Name == m }) {
				metrics = append(metrics, m)
			}
		}
		if len(metrics) == 0 {
			for _, m := range d.Metrics {
				metrics = append(metrics, m.Name)
			}
		}
	}
	for _, m := range metrics {
		if !slices.ContainsFunc(d.Metrics, func(x MetricDef) bool { return x.Name == m }) {
			var names []string
			for _, x := range d.Metrics {
				names = append(names, x.Name)
			}
			return nil, fmt.Errorf("%w: --metric %s is not a metric of the pilot; its metrics: %v", ErrBadOption, m, names)
		}
	}
	treatments := res.Treatments
	if opt.Treatment != "" {
		if !slices.Contains(treatments, opt.Treatment) {
			return nil, fmt.Errorf("%w: --treatment %s is not a level of %s; the levels are %v", ErrBadOption, opt.Treatment, d.Treatment, treatments)
		}
		treatments = []string{opt.Treatment}
	}
	var out []PowerAnswer
	total := len(treatments) * len(metrics)
	if opt.Progress != nil {
		// The pilot's analysis is done: a bar may start at nothing.
		opt.Progress(0, total)
	}
	for _, tr := range treatments {
		for _, m := range metrics {
			cells := pilotPenalties(res, tr, m)
			a := PowerAnswer{Treatment: tr, Metric: m, PilotConfigs: len(cells)}
			var resid []float64
			for _, c := range cells {
				a.PilotSets += len(c)
				if len(c) < 2 {
					continue
				}
				mean, _ := meanVar(c)
				for _, v := range c {
					resid = append(resid, v-mean)
				}
			}
			df := a.PilotSets - a.PilotConfigs
			if df < 1 {
				return nil, fmt.Errorf("%w for %s %s with two or more replicates of a configuration: the spread of the penalty needs them", ErrNoPilotData, tr, m)
			}
			var ss float64
			for _, r := range resid {
				ss += r * r
			}
			a.SD = math.Sqrt(ss / float64(df))
			normalN := NormalSampleSize(a.SD, opt.Effect, opt.Alpha, opt.Power)
			if a.PilotSets >= PowerLargePilot || normalN > PowerSimulationLimit {
				a.Method = PowerNormal
				a.Replicates = max(normalN, MinSetsForInterval)
			} else {
				a.Method = PowerResampling
				// Residuals rescaled to the pooled spread (they are
				// centred per configuration, which shrinks them).
				scale := math.Sqrt(float64(len(resid)) / float64(df))
				for i := range resid {
					resid[i] *= scale
				}
				rng := rand.New(rand.NewPCG(uint64(d.Seed), streamSeed("power|"+tr+"|"+m)))
				a.Replicates = simulatedSampleSize(resid, opt, rng)
			}
			// Pooled over configurations the mean penalty rests on many
			// sets and is close to normal: the closed form.
			a.PooledSets = max(normalN, MinSetsForInterval)
			a.PooledReplicates = max(2, (a.PooledSets+a.PilotConfigs-1)/a.PilotConfigs)
			out = append(out, a)
			if opt.Progress != nil {
				opt.Progress(len(out), total)
			}
		}
	}
	return out, nil
}

// NormalSampleSize is the closed form ⌈((z(1-α/2) + z(power)) sd / effect)²⌉.
func NormalSampleSize(sd, effect, alpha, power float64) int {
	z := unitNormal.Quantile(1-alpha/2) + unitNormal.Quantile(power)
	return int(math.Ceil(math.Pow(z*sd/effect, 2)))
}

// pilotPenalties returns the paired penalties of metric m of treatment tr
// against the baseline, per configuration, from the pilot's healthy sets.
func pilotPenalties(res *Result, tr, m string) [][]float64 {
	d := res.Dataset
	def := d.Metrics[slices.IndexFunc(d.Metrics, func(x MetricDef) bool { return x.Name == m })]
	ti := slices.Index(d.Factors, d.Treatment)
	type key struct {
		pair string
		rep  int
	}
	runs := map[key]map[string]*Run{}
	for i := range d.Runs {
		r := &d.Runs[i]
		if !r.Final || r.Outcome != OutcomeDone {
			continue
		}
		k := key{r.Pair, r.Replicate}
		if runs[k] == nil {
			runs[k] = map[string]*Run{}
		}
		runs[k][r.Factors[ti]] = r
	}
	byPair := map[string][]float64{}
	var pairs []string
	keys := make([]key, 0, len(runs))
	for k := range runs {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		if a.pair != b.pair {
			if a.pair < b.pair {
				return -1
			}
			return 1
		}
		return a.rep - b.rep
	})
	for _, k := range keys {
		b, t := runs[k][res.Levels[0]], runs[k][tr]
		if b == nil || t == nil {
			continue
		}
		bv, ok1 := b.Metrics[m]
		tv, ok2 := t.Metrics[m]
		if !ok1 || !ok2 || !finite(bv) || !finite(tv) || bv == 0 {
			continue
		}
		if _, ok := byPair[k.pair]; !ok {
			pairs = append(pairs, k.pair)
		}
		byPair[k.pair] = append(byPair[k.pair], penalty(tv, bv, def.Higher))
	}
	out := make([][]float64, 0, len(pairs))
	for _, p := range pairs {
		out = append(out, byPair[p])
	}
	return out
}

// simulatedSampleSize is the smallest n (from MinSetsForInterval) whose
// simulated power reaches opt.Power: each simulation draws n residuals of
// the pilot with replacement, adds the effect, and applies the two-sided
// one-sample t-test at opt.Alpha. The search stops at twice
// PowerSimulationLimit; an n beyond it is returned unrefined.
func simulatedSampleSize(resid []float64, opt PowerOptions, rng *rand.Rand) int {
	x := make([]float64, 0, 2*PowerSimulationLimit)
	powerAt := func(n int) float64 {
		crit := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}.Quantile(1 - opt.Alpha/2)
		x := x[:n]
		hits := 0
		for range opt.Simulations {
			for i := range x {
				x[i] = resid[rng.IntN(len(resid))] + opt.Effect
			}
			m, v := meanVar(x)
			if v > 0 && math.Abs(m)/math.Sqrt(v/float64(n)) > crit {
				hits++
			} else if v == 0 && m != 0 {
				hits++
			}
		}
		return float64(hits) / float64(opt.Simulations)
	}
	lo := MinSetsForInterval
	if powerAt(lo) >= opt.Power {
		return lo
	}
	hi := lo * 2
	for powerAt(hi) < opt.Power {
		lo = hi
		hi *= 2
		if hi > 2*PowerSimulationLimit {
			return hi
		}
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if powerAt(mid) >= opt.Power {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// DetectableEffect is the smallest mean penalty (percentage points) that n
// matched sets detect with the given power at two-sided level alpha, when
// the penalty's spread is sd: the normal approximation solved for the
// effect, (z(1-α/2) + z(power)) sd / √n.
func DetectableEffect(sd float64, n int, alpha, power float64) float64 {
	z := unitNormal.Quantile(1-alpha/2) + unitNormal.Quantile(power)
	return z * sd / math.Sqrt(float64(n))
}
