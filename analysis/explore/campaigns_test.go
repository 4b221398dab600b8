package explore

import (
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/xp-bench/xp/analysis"
	"github.com/xp-bench/xp/analysis/export"
)

// testAnalysis is the analysis every test runs, in the explorer and for
// effects.csv alike: few resamples, so a test costs seconds.
var testAnalysis = analysis.Options{Resamples: 100}

// demoShape is a make-demo-sized campaign: three security levels, two
// factors of two levels, six replicates (72 runs).
func demoShape(seed uint64) analysis.SyntheticConfig {
	return analysis.SyntheticConfig{Seed: seed, Levels: []string{"plaintext", "tls", "mtls"},
		Factors: []analysis.SyntheticFactor{
			{Name: "message_size", Levels: []string{"1024", "10240"}},
			{Name: "acks", Levels: []string{"1", "all"}},
		},
		Replicates: 6, Penalty: map[string]float64{"tls": 8, "mtls": 12},
		Histograms: true, HistogramValues: 2000, Invalid: 17}
}

// overheadShape is the 5,184-run factorial of plans/security-overhead.yaml.
func overheadShape() analysis.SyntheticConfig {
	return analysis.SyntheticConfig{Seed: 5184, Levels: []string{"plaintext", "tls", "mtls"},
		Factors: analysis.SecurityOverheadShape(), Replicates: 3, Penalty: map[string]float64{"tls": 6, "mtls": 9},
		Histograms: true, HistogramValues: 300, Invalid: 211}
}

// makeCampaign saves a synthetic campaign, each run with a per-second
// series of seconds, as a database at path.
func makeCampaign(t testing.TB, path string, cfg analysis.SyntheticConfig, seconds int) {
	t.Helper()
	d := analysis.Synthetic(cfg)
	for i := range d.Runs {
		r := &d.Runs[i]
		rate := int64(1000 + 10*(i%7))
		for s := range seconds {
			backlog := int64((s*37 + i) % 50)
			r.Series = append(r.Series, analysis.SeriesPoint{Second: s, Published: rate, Consumed: rate - backlog/10, Backlog: backlog})
		}
	}
	err := analysis.Save(context.Background(), path, d, analysis.SaveOptions{XPVersion: "test",
		// A campaign of its own (xp compare refuses one campaign twice).
		Created: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC).Add(time.Duration(cfg.Seed) * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
}

// analyseToCSV writes effects.csv and runs.csv of the database as xp
// analyse does, into dir.
func analyseToCSV(t testing.TB, db, dir string) {
	t.Helper()
	d, err := analysis.Load(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	res, err := analysis.Analyse(d, testAnalysis)
	if err != nil {
		t.Fatal(err)
	}
	if err := export.Write(dir, res); err != nil {
		t.Fatal(err)
	}
}

// csvTable is a CSV file's rows as maps by column name.
func csvTable(t testing.TB, path string) []map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []map[string]string
	for _, r := range recs[1:] {
		m := map[string]string{}
		for i, h := range recs[0] {
			m[h] = r[i]
		}
		out = append(out, m)
	}
	return out
}

func parseFloat(t testing.TB, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("number %q: %v", s, err)
	}
	return v
}

// dirSize is the total size of the files under dir.
func dirSize(t testing.TB, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
