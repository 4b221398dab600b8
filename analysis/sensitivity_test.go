package analysis

import "testing"

// TestSensitivityCountsCells: each level of a factor counts the
// configurations its matched sets come from (sensitivity.csv's cells),
// also where a level has a single configuration.
func TestSensitivityCountsCells(t *testing.T) {
	for _, c := range []struct {
		name    string
		factors []SyntheticFactor
		want    int
	}{
		{"two factors", []SyntheticFactor{{"message_size", []string{"1024", "10240"}}, {"acks", []string{"1", "all", "0"}}}, 0},
		{"one factor", []SyntheticFactor{{"message_size", []string{"1024", "10240"}}}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := Synthetic(SyntheticConfig{Seed: 7, Levels: []string{"plaintext", "tls"}, Factors: c.factors, Replicates: 3,
				Penalty: map[string]float64{"tls": 10}})
			res, err := Analyse(d, Options{Resamples: 200})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Sensitivity) == 0 {
				t.Fatal("no sensitivity")
			}
			for _, s := range res.Sensitivity {
				// Every other factor's levels are crossed with this one.
				want := c.want
				if want == 0 {
					want = 3
					if s.Factor == "acks" {
						want = 2
					}
				}
				if s.Cells != want || s.N != 3*want {
					t.Errorf("%s=%s %s: %d cells, %d sets, want %d and %d", s.Factor, s.Level, s.Metric, s.Cells, s.N, want, 3*want)
				}
			}
		})
	}
}
