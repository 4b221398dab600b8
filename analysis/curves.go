package analysis

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/xp-bench/xp/results"
)

// CurveKinds are the histogram kinds drawn as percentile curves.
var CurveKinds = []string{"publish", "e2e"}

// curveSamples names, per curve kind, the run metric that counts its
// samples (as samplesMetric does for the percentile metrics).
var curveSamples = map[string]string{"publish": "published", "e2e": "consumed"}

// percentileSupported says whether a run of n samples supports percentile
// p (0..100): ten samples or more lie beyond it, the rule the percentile
// metrics follow (n >= 10/(1-q)).
func percentileSupported(p float64, n int) bool {
	return float64(n)*(1-p/100) >= 10*(1-1e-9)
}

// HistogramError names an attempt whose stored histogram cannot be read.
type HistogramError struct {
	Run     string
	Attempt int
	Kind    string
	Err     error
}

func (e *HistogramError) Error() string {
	return fmt.Sprintf("run %s attempt %d: %s histogram is corrupt: %v", e.Run, e.Attempt, e.Kind, e.Err)
}

func (e *HistogramError) Unwrap() error { return e.Err }

// curvePercentiles are the points of a percentile curve: evenly spaced in
// -log10(1-p), from p0 to p99.99; a curve keeps those its runs support.
func curvePercentiles() []float64 {
	var ps []float64
	for i := 0; i <= 40; i++ {
		x := float64(i) / 10
		ps = append(ps, 100*(1-math.Pow(10, -x)))
	}
	ps[len(ps)-1] = 99.99
	return ps
}

// MergeHistograms merges encoded histograms (as the evidence store keeps
// them, see results.DecodeHistogram) into one. Errors name the
// offending run through the run and attempt given for each blob.
func MergeHistograms(blobs [][]byte, who []*Run, kind string) (*hdrhistogram.Histogram, error) {
	var merged *hdrhistogram.Histogram
	for i, b := range blobs {
		h, err := results.DecodeHistogram(b)
		if err != nil {
			return nil, &HistogramError{Run: who[i].Run, Attempt: who[i].Attempt, Kind: kind, Err: err}
		}
		if merged == nil {
			merged = hdrhistogram.New(1, 60_000_000, 3)
		}
		merged.Merge(h)
	}
	return merged, nil
}

// buildCurves merges, per cell, level and kind, the whole-run histograms of
// the cell's healthy final runs and reads percentile curves from them.
// Every healthy run's histograms are decoded, so a corrupt one is reported
// whichever cell it belongs to.
func (res *Result) buildCurves() error {
	d := res.Dataset
	ti := slices.Index(d.Factors, d.Treatment)
	type key struct{ pair, level, kind string }
	groups := map[key][]*Run{}
	for i := range d.Runs {
		r := &d.Runs[i]
		if !r.Final || r.Outcome != OutcomeDone || r.Histograms == nil {
			continue
		}
		for _, kind := range CurveKinds {
			if _, ok := r.Histograms[kind]; ok {
				k := key{r.Pair, r.Factors[ti], kind}
				groups[k] = append(groups[k], r)
			}
		}
	}
	ps := curvePercentiles()
	// Cells are merged in parallel; each writes only its own slot, and the
	// first error in cell order wins, so the outcome does not depend on
	// scheduling.
	curves := make([][]Curve, len(res.Cells))
	errs := make([]error, len(res.Cells))
	workers := res.Options.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ci := range next {
				c := res.Cells[ci]
				for _, kind := range CurveKinds {
					for _, lv := range res.Levels {
						runs := groups[key{c.Pair, lv, kind}]
						if len(runs) == 0 {
							continue
						}
						blobs := make([][]byte, len(runs))
						for i, r := range runs {
							blobs[i] = r.Histograms[kind]
						}
						h, err := MergeHistograms(blobs, runs, kind)
						if err != nil {
							errs[ci] = err
							break
						}
						cv := Curve{Pair: c.Pair, Kind: kind, Level: lv, Runs: len(runs), MinSamples: -1}
						for _, r := range runs {
							if n, ok := r.Metrics[curveSamples[kind]]; ok && (cv.MinSamples < 0 || int(n) < cv.MinSamples) {
								cv.MinSamples = int(n)
							}
						}
						for _, p := range ps {
							if cv.MinSamples >= 0 && !percentileSupported(p, cv.MinSamples) {
								break
							}
							cv.Points = append(cv.Points, CurvePoint{Percentile: p, Ms: float64(h.ValueAtQuantile(p)) / 1000})
						}
						curves[ci] = append(curves[ci], cv)
					}
					if errs[ci] != nil {
						break
					}
				}
			}
		}()
	}
	for ci := range res.Cells {
		next <- ci
	}
	close(next)
	wg.Wait()
	for ci := range res.Cells {
		if errs[ci] != nil {
			return errs[ci]
		}
		res.Curves = append(res.Curves, curves[ci]...)
	}
	return nil
}
