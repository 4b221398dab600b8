package analysis

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
)

// The four statistics estimated for every treatment, metric and scope.
const (
	statMeanPenalty = iota
	statMedianPenalty
	statMeanDifference
	statRatioOfMeans
	nStats
)

// Statistic names as written in effects.csv, indexed like the constants.
var statNames = [nStats]string{"mean_penalty", "median_penalty", "mean_difference", "ratio_of_means"}

// pairedSample is one metric's values over the matched sets of one scope.
type pairedSample struct {
	t, b   []float64 // treatment and baseline values
	d, pen []float64 // difference t-b, penalty in percent (positive = worse)
	order  []int32   // set indexes sorted by penalty (for weighted medians)
	// meanOnly: only the mean penalty is wanted.
	meanOnly bool
	// pool is the spread shared with the other configurations of its
	// treatment, rate class and metric, for a sample of one configuration
	// (nil otherwise or when there is none to share).
	pool *spreadPool
}

func newPairedSample(t, b []float64, higher bool) *pairedSample {
	p := &pairedSample{t: t, b: b, d: make([]float64, len(t)), pen: make([]float64, len(t))}
	for i := range t {
		p.d[i] = t[i] - b[i]
		p.pen[i] = penalty(t[i], b[i], higher)
	}
	p.order = make([]int32, len(t))
	for i := range p.order {
		p.order[i] = int32(i)
	}
	slices.SortStableFunc(p.order, func(x, y int32) int {
		switch {
		case p.pen[x] < p.pen[y]:
			return -1
		case p.pen[x] > p.pen[y]:
			return 1
		}
		return 0
	})
	return p
}

// penalty is the cost of the treatment in percent of the baseline, positive
// meaning worse: (b-t)/b when larger is better (throughput), (t-b)/b
// otherwise (latency, CPU).
func penalty(t, b float64, higher bool) float64 {
	if higher {
		return (b - t) / b * 100
	}
	return (t - b) / b * 100
}

// eval computes the four statistics of the resample in which set i appears
// w[i] times.
func (p *pairedSample) eval(w []int32, out *[nStats]float64) {
	if p.meanOnly {
		var W int64
		var sp float64
		for i, wi := range w {
			W += int64(wi)
			sp += float64(wi) * p.pen[i]
		}
		*out = [nStats]float64{math.NaN(), math.NaN(), math.NaN(), math.NaN()}
		out[statMeanPenalty] = sp / float64(W)
		return
	}
	var W int64
	var sp, sd, st, sb float64
	for i, wi := range w {
		if wi == 0 {
			continue
		}
		f := float64(wi)
		W += int64(wi)
		sp += f * p.pen[i]
		sd += f * p.d[i]
		st += f * p.t[i]
		sb += f * p.b[i]
	}
	if W == 0 {
		for k := range out {
			out[k] = math.NaN()
		}
		return
	}
	fw := float64(W)
	out[statMeanPenalty] = sp / fw
	out[statMeanDifference] = sd / fw
	out[statRatioOfMeans] = st / sb
	out[statMedianPenalty] = p.weightedMedian(w, W)
}

// bootJob is one bootstrap: a set of metrics observed on the same matched
// sets, resampled together with one random stream. Sets are resampled
// independently (clusters nil), or in two levels: whole clusters (cells)
// with replacement, then sets within each drawn cluster.
type bootJob struct {
	key      string // names the random stream; with the seed it fixes every draw
	samples  []*pairedSample
	clusters [][]int32
	// meanOnly skips every statistic but the mean penalty (sensitivity).
	meanOnly bool
	// small uses the small-sample methods (fillSmall) below
	// MinSetsForBootstrap sets, and no interval below MinSetsForInterval;
	// without it every interval is the bootstrap's (as scipy's).
	small bool

	// results, per sample and statistic
	est  [][nStats]float64
	low  [][nStats]float64
	high [][nStats]float64
	used [][nStats]Method
	// note says why an interval is absent or not the bootstrap's.
	note [][nStats]string
	// unbounded marks intervals whose sets alone cannot bound the mean.
	unbounded [][nStats]bool
	// p is the p-value of the test the interval inverts (NaN without
	// one), test its name and pmin the smallest p-value it can give.
	p, pmin [][nStats]float64
	test    [][nStats]string

	// keep, for tests, retains the raw bootstrap distribution in dist
	// (direct path only).
	keep   bool
	dist   [][nStats][]float64
	direct bool // tests: never use the counted path
}

// bootConfig is what every job shares.
type bootConfig struct {
	seed       uint64
	resamples  int
	confidence float64
	method     Method
}

// streamSeed derives a job's random stream from the campaign seed and the
// job key, so results do not depend on which worker runs which job or in
// which order.
func streamSeed(key string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	return h.Sum64()
}

// exactLimit is the largest set count resampled through the exact count of
// distinct resamples; beyond it each resample is evaluated directly.
const exactLimit = 8

// bootScratch is a worker's reusable memory, so resampling allocates nothing
// per resample.
type bootScratch struct {
	w     []int32
	vals  [][nStats][]float64
	atoms []atom
}

func (s *bootScratch) weights(n int) []int32 {
	if cap(s.w) < n {
		s.w = make([]int32, n)
	}
	s.w = s.w[:n]
	return s.w
}

func (s *bootScratch) values(samples, b int) [][nStats][]float64 {
	for len(s.vals) < samples {
		s.vals = append(s.vals, [nStats][]float64{})
	}
	for i := 0; i < samples; i++ {
		for k := range nStats {
			if cap(s.vals[i][k]) < b {
				s.vals[i][k] = make([]float64, b)
			}
			s.vals[i][k] = s.vals[i][k][:b]
		}
	}
	return s.vals[:samples]
}

// run computes the estimates and their intervals: the point estimates on
// the sets as observed, then the small-sample methods where they apply,
// else the jackknife and the bootstrap distribution (counted exactly for
// few independent sets, tabulated or drawn directly otherwise) and the
// interval from it.
func (j *bootJob) run(cfg bootConfig, s *bootScratch) {
	ns := len(j.samples)
	if ns == 0 {
		return
	}
	n := j.prepare()
	w := s.weights(n)
	for i := range w {
		w[i] = 1
	}
	for si, p := range j.samples {
		p.eval(w, &j.est[si])
	}
	method := cfg.method
	if j.small {
		done := false
		for si := range j.samples {
			done = j.fillSmall(si, cfg.confidence)
		}
		if done {
			return
		}
	}
	if n < 2 {
		// One set (or one cell) has no sampling distribution to speak of.
		for si := range j.samples {
			for k := range nStats {
				j.low[si][k], j.high[si][k], j.used[si][k] = math.NaN(), math.NaN(), method
			}
		}
		return
	}
	jack := j.jackknife(w)

	src := rand.NewPCG(cfg.seed, streamSeed(j.key))
	rng := rand.New(src)
	if j.clusters == nil && n <= exactLimit && !j.direct {
		j.runCounted(cfg, s, rng, w, jack)
		return
	}
	vals := s.values(ns, cfg.resamples)
	switch {
	case j.clusters != nil && j.tabulable() && !j.direct:
		j.resampleTabled(src, w, vals)
	case j.clusters != nil && j.meanOnly:
		j.resampleMeans(rng, vals)
	default:
		j.resampleDirect(rng, w, vals)
	}
	if j.keep {
		j.dist = make([][nStats][]float64, ns)
		for si := range j.samples {
			for k := range nStats {
				j.dist[si][k] = slices.Clone(vals[si][k])
			}
		}
	}
	for si := range j.samples {
		for k := range nStats {
			if j.meanOnly && k != statMeanPenalty {
				j.low[si][k], j.high[si][k], j.used[si][k] = math.NaN(), math.NaN(), method
				continue
			}
			d := distributionOf(vals[si][k], s.atoms)
			j.low[si][k], j.high[si][k], j.used[si][k] = intervalOf(d, j.est[si][k], jack[si][k], cfg.confidence, method)
			j.invert(si, k, d, jack[si][k], cfg)
			s.atoms = d.atoms[:0]
		}
	}
}

// invert gives statistic k of sample si the p-value of its bootstrap
// interval inverted, where a test is wanted (jobs of effects, not of
// sensitivity levels).
func (j *bootJob) invert(si, k int, d distribution, jack []float64, cfg bootConfig) {
	if j.meanOnly || !j.small {
		return
	}
	j.p[si][k] = bootstrapP(d, j.est[si][k], jack, cfg.confidence, cfg.method, nullOf(k))
	j.pmin[si][k], j.test[si][k] = 1/float64(d.total), TestBootstrap
}

// prepare readies the job to run and returns its number of sets: the
// samples learn meanOnly, a single cluster becomes independent sets
// (drawing the one cluster is certain, so the two-level bootstrap is the
// resampling of its sets), and the results are allocated.
func (j *bootJob) prepare() (n int) {
	for _, p := range j.samples {
		p.meanOnly = j.meanOnly
	}
	if len(j.clusters) == 1 {
		j.clusters = nil
	}
	ns := len(j.samples)
	j.est = make([][nStats]float64, ns)
	j.low = make([][nStats]float64, ns)
	j.high = make([][nStats]float64, ns)
	j.used = make([][nStats]Method, ns)
	j.note = make([][nStats]string, ns)
	j.unbounded = make([][nStats]bool, ns)
	j.p = make([][nStats]float64, ns)
	j.pmin = make([][nStats]float64, ns)
	j.test = make([][nStats]string, ns)
	for si := range j.p {
		for k := range nStats {
			j.p[si][k], j.pmin[si][k] = math.NaN(), math.NaN()
		}
	}
	return len(j.samples[0].t)
}

// jackknife evaluates every statistic leaving out one set, or one whole
// cluster, at a time (for the BCa acceleration): jack[sample][stat][unit].
// w holds all ones and is restored.
func (j *bootJob) jackknife(w []int32) [][nStats][]float64 {
	units := len(w)
	if j.clusters != nil {
		units = len(j.clusters)
	}
	jack := make([][nStats][]float64, len(j.samples))
	for si := range jack {
		for k := range nStats {
			jack[si][k] = make([]float64, units)
		}
	}
	var out [nStats]float64
	for u := 0; u < units; u++ {
		if j.clusters == nil {
			w[u] = 0
		} else {
			for _, i := range j.clusters[u] {
				w[i] = 0
			}
		}
		for si, p := range j.samples {
			p.eval(w, &out)
			for k := range nStats {
				jack[si][k][u] = out[k]
			}
		}
		if j.clusters == nil {
			w[u] = 1
		} else {
			for _, i := range j.clusters[u] {
				w[i] = 1
			}
		}
	}
	return jack
}

// resampleDirect draws each resample's weights (sets independently, or
// clusters then sets within each drawn cluster) and evaluates every
// statistic on it into vals[sample][stat][resample].
func (j *bootJob) resampleDirect(rng *rand.Rand, w []int32, vals [][nStats][]float64) {
	n := len(w)
	var out [nStats]float64
	for r := range vals[0][0] {
		clear(w)
		if j.clusters == nil {
			for range n {
				w[rng.IntN(n)]++
			}
		} else {
			nc := len(j.clusters)
			for range nc {
				c := j.clusters[rng.IntN(nc)]
				for range c {
					w[c[rng.IntN(len(c))]]++
				}
			}
		}
		for si, p := range j.samples {
			p.eval(w, &out)
			for k := range nStats {
				vals[si][k][r] = out[k]
			}
		}
	}
}

// resampleMeans is the two-level bootstrap of the mean penalty alone
// (sensitivity levels): the same draws as the direct path, each drawn
// set's penalty added as it is drawn instead of counted into weights and
// summed over every set after, which halves the work on large levels.
func (j *bootJob) resampleMeans(rng *rand.Rand, vals [][nStats][]float64) {
	ns := len(j.samples)
	sum := make([]float64, ns)
	nc := len(j.clusters)
	nan := math.NaN()
	for r := range vals[0][statMeanPenalty] {
		clear(sum)
		var W int
		for range nc {
			c := j.clusters[rng.IntN(nc)]
			for range c {
				i := c[rng.IntN(len(c))]
				W++
				for si, p := range j.samples {
					sum[si] += p.pen[i]
				}
			}
		}
		for si := range j.samples {
			vals[si][statMeanPenalty][r] = sum[si] / float64(W)
			vals[si][statMedianPenalty][r], vals[si][statMeanDifference][r], vals[si][statRatioOfMeans][r] = nan, nan, nan
		}
	}
}

// runCounted resamples few sets: it draws exactly as the direct path does,
// but counts how often each distinct resample (multiset of sets) occurs and
// evaluates each distinct one once.
func (j *bootJob) runCounted(cfg bootConfig, s *bootScratch, rng *rand.Rand, w []int32, jack [][nStats][]float64) {
	n := len(w)
	base := uint64(n + 1)
	space := uint64(1)
	for range n {
		space *= base
	}
	var keys []uint64
	var dense []int
	var sparse map[uint64]int
	if space <= 1<<16 {
		dense = make([]int, space)
	} else {
		sparse = make(map[uint64]int, 256)
	}
	for r := 0; r < cfg.resamples; r++ {
		clear(w)
		for range n {
			w[rng.IntN(n)]++
		}
		var key uint64
		for _, c := range w {
			key = key*base + uint64(c)
		}
		if dense != nil {
			dense[key]++
		} else {
			sparse[key]++
		}
	}
	count := func(k uint64) int {
		if dense != nil {
			return dense[k]
		}
		return sparse[k]
	}
	if dense != nil {
		for k, c := range dense {
			if c > 0 {
				keys = append(keys, uint64(k))
			}
		}
	} else {
		for k := range sparse {
			keys = append(keys, k)
		}
		slices.Sort(keys)
	}
	atoms := make([][nStats][]atom, len(j.samples))
	var out [nStats]float64
	for _, key := range keys {
		k := key
		for i := n - 1; i >= 0; i-- {
			w[i] = int32(k % base)
			k /= base
		}
		for si, p := range j.samples {
			p.eval(w, &out)
			for st := range nStats {
				atoms[si][st] = append(atoms[si][st], atom{v: out[st], n: count(key)})
			}
		}
	}
	for si := range j.samples {
		for st := range nStats {
			if j.meanOnly && st != statMeanPenalty {
				j.low[si][st], j.high[si][st], j.used[si][st] = math.NaN(), math.NaN(), cfg.method
				continue
			}
			d := distributionOfAtoms(atoms[si][st])
			j.low[si][st], j.high[si][st], j.used[si][st] = intervalOf(d, j.est[si][st], jack[si][st], cfg.confidence, cfg.method)
			j.invert(si, st, d, jack[si][st], cfg)
		}
	}
}
