package analysis

import "testing"

// TestCurvesStopAtSupportedPercentiles: a curve is drawn only to the
// highest percentile every merged run supports (ten samples beyond it,
// the rule of the percentile metrics); runs without a sample count
// (imported evidence) keep the whole curve, to p99.99.
func TestCurvesStopAtSupportedPercentiles(t *testing.T) {
	cfg := SyntheticConfig{Seed: 5, Levels: []string{"plaintext", "tls"}, Replicates: 3,
		Penalty: map[string]float64{"tls": 10}, Histograms: true, HistogramValues: 3000}
	for _, c := range []struct {
		name     string
		samples  float64
		min, max float64 // the last point's percentile lies in [min, max]
	}{
		{"3000 samples", 3000, 99.5, 99.67},
		{"25000 samples", 25000, 99.9, 99.96},
		{"no count", 0, 99.99, 99.99},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := Synthetic(cfg)
			if c.samples > 0 {
				for i := range d.Runs {
					d.Runs[i].Metrics["published"] = c.samples
					d.Runs[i].Metrics["consumed"] = c.samples
				}
			}
			res, err := Analyse(d, Options{Resamples: 200})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Curves) == 0 {
				t.Fatal("no curves")
			}
			for _, cv := range res.Curves {
				last := cv.Points[len(cv.Points)-1].Percentile
				if last < c.min-1e-9 || last > c.max+1e-9 {
					t.Errorf("%s %s: curve ends at p%.3f, want p%g..p%g", cv.Kind, cv.Level, last, c.min, c.max)
				}
				if want := int(c.samples); c.samples > 0 && cv.MinSamples != want || c.samples == 0 && cv.MinSamples != -1 {
					t.Errorf("%s %s: MinSamples %d", cv.Kind, cv.Level, cv.MinSamples)
				}
			}
		})
	}
}
