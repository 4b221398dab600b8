package analysis

import (
	"math"
	"math/bits"
	"math/rand/v2"
)

// tableLimit is the largest cluster resampled through a table of its
// distinct inner resamples (126 multisets for 5 sets).
const tableLimit = 5

// multisets enumerates the distinct resamples of n sets as count vectors,
// with their probabilities under drawing n sets uniformly with replacement
// (n! / prod k_i! / n^n).
func multisets(n int) (ms [][]int32, prob []float64) {
	cur := make([]int32, n)
	var rec func(i, left int)
	rec = func(i, left int) {
		if i == n-1 {
			cur[i] = int32(left)
			c := make([]int32, n)
			copy(c, cur)
			ms = append(ms, c)
			return
		}
		for k := left; k >= 0; k-- {
			cur[i] = int32(k)
			rec(i+1, left-k)
		}
	}
	rec(0, n)
	lf := func(k int) float64 { v, _ := math.Lgamma(float64(k + 1)); return v }
	for _, c := range ms {
		l := lf(n) - float64(n)*math.Log(float64(n))
		for _, k := range c {
			l -= lf(int(k))
		}
		prob = append(prob, math.Exp(l))
	}
	return ms, prob
}

func (j *bootJob) tabulable() bool {
	for _, c := range j.clusters {
		if len(c) > tableLimit {
			return false
		}
	}
	return true
}

// tableShape is the distinct inner resamples of a cluster of one size:
// count vectors, cumulative probabilities, and where the inverse-CDF
// search of a uniform u in [k/len(start), (k+1)/len(start)) starts. A
// start of m >= 0 is the search's answer for every u of its bucket (the
// bucket lies below cum[m]); ^m, negative, marks a bucket straddling
// cum[m], where the search goes on from m.
type tableShape struct {
	ms    [][]int32
	cum   []float64
	start []int32
}

// pick is the inverse-CDF search: the resample of the table that u in
// [0, 1) falls on, the first m with u < cum[m] (the last if none).
func (sh *tableShape) pick(u float64) int {
	m := int(sh.start[int(u*float64(len(sh.start)))])
	if m >= 0 {
		return m
	}
	m = ^m
	for m < len(sh.cum)-1 && u >= sh.cum[m] {
		m++
	}
	return m
}

// resampleTabled is the two-level bootstrap drawing, for each drawn
// cluster, one of its distinct inner resamples with its exact probability
// (the same distribution as drawing its sets one by one), and adding that
// resample's precomputed sums. Weights per set are kept only where a median
// needs them. The sums of every cluster lie in one slice, a cluster's
// resamples side by side, so a draw touches little memory: on campaigns of
// tens of thousands of configurations the draws are bound by it.
func (j *bootJob) resampleTabled(src *rand.PCG, w []int32, vals [][nStats][]float64) {
	rng := pcgStream{src}
	ns := len(j.samples)
	stride := 4 // penalty, difference, treatment, baseline
	if j.meanOnly {
		stride = 1
	}
	var shapes []tableShape
	shapeOfSize := map[int]int{}
	nc := len(j.clusters)
	shapeOf := make([]uint8, nc)
	off := make([]int, nc+1)
	for ci, c := range j.clusters {
		si, ok := shapeOfSize[len(c)]
		if !ok {
			ms, prob := multisets(len(c))
			cum := make([]float64, len(prob))
			acc := 0.0
			for k, p := range prob {
				acc += p
				cum[k] = acc
			}
			cum[len(cum)-1] = 1
			start := make([]int32, 1024)
			m := 0
			for k := range start {
				for m < len(cum)-1 && float64(k)/float64(len(start)) >= cum[m] {
					m++
				}
				// The bucket's bounds are exact (a power-of-two count), so
				// u < (k+1)/len(start) <= cum[m] settles the search at m.
				if m == len(cum)-1 || float64(k+1)/float64(len(start)) <= cum[m] {
					start[k] = int32(m)
				} else {
					start[k] = ^int32(m)
				}
			}
			si = len(shapes)
			shapeOfSize[len(c)] = si
			shapes = append(shapes, tableShape{ms, cum, start})
		}
		shapeOf[ci] = uint8(si)
		off[ci+1] = off[ci] + len(shapes[si].ms)*ns*stride
	}
	sums := make([]float64, off[nc])
	for ci, c := range j.clusters {
		for m, counts := range shapes[shapeOf[ci]].ms {
			for si, p := range j.samples {
				o := off[ci] + (m*ns+si)*stride
				for k, cnt := range counts {
					if cnt == 0 {
						continue
					}
					i := c[k]
					f := float64(cnt)
					sums[o] += f * p.pen[i]
					if stride > 1 {
						sums[o+1] += f * p.d[i]
						sums[o+2] += f * p.t[i]
						sums[o+3] += f * p.b[i]
					}
				}
			}
		}
	}
	acc := make([]float64, ns*stride)
	block := ns * stride
	// A resample's draws are made first, then their sums added in the
	// same order: the adds' loads no longer wait on the random stream, so
	// they overlap (the sums of large jobs lie beyond the fast caches).
	type draw struct {
		o     int // the drawn resample's sums in sums
		ci, m int32
	}
	draws := make([]draw, nc)
	for r := range len(vals[0][0]) {
		W := 0
		for d := range draws {
			ci := rng.IntN(nc)
			sh := &shapes[shapeOf[ci]]
			m := sh.pick(rng.Float64())
			draws[d] = draw{o: off[ci] + m*block, ci: int32(ci), m: int32(m)}
			W += len(sh.ms[m])
		}
		clear(acc)
		for _, d := range draws {
			add := sums[d.o : d.o+block]
			to := acc[:len(add)]
			for k := range add {
				to[k] += add[k]
			}
		}
		if !j.meanOnly {
			clear(w)
			for _, d := range draws {
				c := j.clusters[d.ci]
				for k, cnt := range shapes[shapeOf[d.ci]].ms[d.m] {
					w[c[k]] += cnt
				}
			}
		}
		fw := float64(W)
		for si, p := range j.samples {
			o := si * stride
			vals[si][statMeanPenalty][r] = acc[o] / fw
			if j.meanOnly {
				continue
			}
			vals[si][statMeanDifference][r] = acc[o+1] / fw
			vals[si][statRatioOfMeans][r] = acc[o+2] / acc[o+3]
			vals[si][statMedianPenalty][r] = p.weightedMedian(w, int64(W))
		}
	}
}

// weightedMedian is numpy's median of the resample in which set i appears
// w[i] times (W in all).
func (p *pairedSample) weightedMedian(w []int32, W int64) float64 {
	r1, r2 := (W-1)/2, W/2
	var v1 float64
	var c int64
	found1 := false
	for _, i := range p.order {
		c += int64(w[i])
		if !found1 && r1 < c {
			v1, found1 = p.pen[i], true
		}
		if r2 < c {
			return (v1 + p.pen[i]) / 2
		}
	}
	return math.NaN()
}

// pcgStream draws from a PCG exactly as a rand.Rand over it does (IntN
// and Float64 as math/rand/v2 computes them, on 64-bit platforms), with
// the generator called directly rather than through the Source interface:
// the tabled bootstrap makes two draws per drawn cluster, tens of
// millions per analysis.
type pcgStream struct{ src *rand.PCG }

// IntN is rand.Rand's IntN: Lemire's multiply-shift with rejection.
func (r pcgStream) IntN(n int) int {
	un := uint64(n)
	if un&(un-1) == 0 {
		return int(r.src.Uint64() & (un - 1))
	}
	hi, lo := bits.Mul64(r.src.Uint64(), un)
	if lo < un {
		thresh := -un % un
		for lo < thresh {
			hi, lo = bits.Mul64(r.src.Uint64(), un)
		}
	}
	return int(hi)
}

// Float64 is rand.Rand's Float64: 53 random bits over 2^53.
func (r pcgStream) Float64() float64 {
	return float64(r.src.Uint64()<<11>>11) / (1 << 53)
}
