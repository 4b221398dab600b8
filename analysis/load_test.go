package analysis

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/xp-bench/xp/results"
)

// TestSaveLoadRoundTrip stores a campaign through the evidence store and
// reads it back: runs, factors, outcomes, metrics and histograms survive,
// and the analysis of the loaded campaign equals that of the original.
func TestSaveLoadRoundTrip(t *testing.T) {
	ctx := context.Background()
	d := Synthetic(SyntheticConfig{Seed: 5, Levels: []string{"plaintext", "tls"}, Factors: smallShape(),
		Replicates: 3, Penalty: map[string]float64{"tls": 10}, Histograms: true, HistogramValues: 200, Invalid: 5})
	path := filepath.Join(t.TempDir(), "c.db")
	if err := Save(ctx, path, d, SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := Load(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Treatment != "security" || got.Baseline != "plaintext" || !reflect.DeepEqual(got.Factors, d.Factors) {
		t.Fatalf("loaded treatment %q baseline %q factors %v", got.Treatment, got.Baseline, got.Factors)
	}
	if len(got.Runs) != len(d.Runs) {
		t.Fatalf("%d runs, want %d", len(got.Runs), len(d.Runs))
	}
	byRun := map[string]Run{}
	for _, r := range got.Runs {
		byRun[r.Run] = r
	}
	for _, w := range d.Runs {
		g := byRun[w.Run]
		if g.Outcome != w.Outcome || !reflect.DeepEqual(g.Factors, w.Factors) || !reflect.DeepEqual(g.Metrics, w.Metrics) ||
			!reflect.DeepEqual(g.Histograms, w.Histograms) || g.Pair != w.Pair || !g.Final || g.Attempt != 1 {
			t.Fatalf("run %s: loaded %+v", w.Run, g)
		}
	}
	a, err := Analyse(d, Options{Resamples: 500})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Analyse(got, Options{Resamples: 500})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(a.Effects) != fmt.Sprint(b.Effects) || len(a.Effects) == 0 {
		t.Fatal("effects of the loaded campaign differ from the original's")
	}
	// A second Save into the same file is refused.
	if err := Save(ctx, path, d, SaveOptions{}); !errors.Is(err, ErrDatabaseExists) {
		t.Fatalf("second save: %v", err)
	}
}

func TestLoadCorruptHistogramNamesAttempt(t *testing.T) {
	ctx := context.Background()
	d := Synthetic(SyntheticConfig{Seed: 6, Levels: []string{"plaintext", "tls"}, Factors: smallShape(),
		Replicates: 2, Penalty: map[string]float64{"tls": 10}, Histograms: true, HistogramValues: 100})
	victim := d.Runs[5].Run
	d.Runs[5].Histograms["e2e"] = []byte("not a histogram")
	path := filepath.Join(t.TempDir(), "c.db")
	if err := Save(ctx, path, d, SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := Load(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Analyse(got, Options{Resamples: 200})
	var he *HistogramError
	if !errors.As(err, &he) || he.Run != victim || !strings.Contains(err.Error(), "run "+victim+" attempt 1: e2e histogram is corrupt") {
		t.Fatalf("err = %v, want a corrupt e2e histogram of %s", err, victim)
	}
}

// The report's campaign facts carry what the infrastructure cost, as the
// db's infra events recorded it.
func TestLoadInfrastructureCost(t *testing.T) {
	ctx := context.Background()
	d := Synthetic(SyntheticConfig{Seed: 7, Levels: []string{"plaintext", "tls"}, Factors: smallShape(), Replicates: 1})
	tests := []struct {
		name  string
		costs []float64
		want  string // "" = no field
	}{
		{name: "no infrastructure events"},
		{name: "local groups cost nothing", costs: []float64{0, 0}},
		{name: "two destroyed groups", costs: []float64{1.25, 0.5}, want: "$1.75 (machines up, as recorded when destroyed)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.db")
			if err := Save(ctx, path, d, SaveOptions{}); err != nil {
				t.Fatal(err)
			}
			s, err := results.Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			for i, c := range tc.costs {
				g := fmt.Sprintf("g%d", i)
				s.AddInfraEvent(ctx, results.InfraEvent{Event: "up", Group: g})
				s.AddInfraEvent(ctx, results.InfraEvent{Event: "down", Group: g, Cost: c})
			}
			s.Close()
			got, err := Load(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			field := ""
			for _, f := range got.Info {
				if f.Name == "infrastructure cost" {
					field = f.Value
				}
			}
			if field != tc.want {
				t.Fatalf("infrastructure cost %q, want %q", field, tc.want)
			}
		})
	}
}
