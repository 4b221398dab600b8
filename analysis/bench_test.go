package analysis

import (
	"testing"
)

func benchDataset() *Dataset {
	return Synthetic(SyntheticConfig{Seed: 7, Levels: []string{"plaintext", "tls", "mtls"},
		Factors: SecurityOverheadShape(), Replicates: 3, Penalty: map[string]float64{"tls": 8, "mtls": 12}})
}

// BenchmarkAnalyseStatistics is the statistics alone on the 5,184-run shape
// with 10,000 resamples (no loading, no export).
func BenchmarkAnalyseStatistics(b *testing.B) {
	d := benchDataset()
	b.ResetTimer()
	for b.Loop() {
		if _, err := Analyse(d, Options{Resamples: 10000}); err != nil {
			b.Fatal(err)
		}
	}
}
