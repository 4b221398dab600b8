package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xp-bench/xp/analysis"
)

func TestPlanPower(t *testing.T) {
	d := analysis.Synthetic(analysis.SyntheticConfig{Seed: 3, Levels: []string{"plaintext", "tls", "mtls"},
		Factors:    []analysis.SyntheticFactor{{Name: "message_size", Levels: []string{"1024", "10240"}}},
		Replicates: 20, Penalty: map[string]float64{"tls": 10, "mtls": 15}})
	db := filepath.Join(t.TempDir(), "pilot.db")
	if err := analysis.Save(context.Background(), db, d, analysis.SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runXP(t, "plan", "power", "--db", db, "--effect", "2%", "--treatment", "tls", "--metric", "publish_ms_p99", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var ans []analysis.PowerAnswer
	if err := json.Unmarshal([]byte(stdout), &ans); err != nil || len(ans) != 1 {
		t.Fatalf("%v: %s", err, stdout)
	}
	a := ans[0]
	want := max(analysis.NormalSampleSize(a.SD, 2, 0.05, 0.8), 3)
	if a.Treatment != "tls" || a.Metric != "publish_ms_p99" || a.PilotSets != 40 || a.Method != analysis.PowerNormal || a.Replicates != want {
		t.Errorf("%+v, want %d replicates by the normal approximation", a, want)
	}
	// The text form names the method; the answer applies to a spec.
	_, text, _ := runXP(t, "plan", "power", "--db", db, "--effect", "2")
	if !strings.Contains(text, "normal-approximation") || strings.Count(text, "\n") != 8 || !strings.Contains(text, "no wall time or cost: the pilot's plan is not an xp campaign") {
		t.Errorf("text output:\n%s", text)
	}
	spec := filepath.Join(t.TempDir(), "s.yaml")
	os.WriteFile(spec, []byte("campaign: s\nfactors:\n  security: [plaintext, tls]\nfixed:\n  brokers: 1\n  message_size: 1024\n  acks: \"1\"\n  target_rate: 1000\n"), 0o600)
	code, _, stderr = runXP(t, "plan", "expand", spec, "--replicates", "7", "-o", filepath.Join(t.TempDir(), "s.jsonl"))
	if code != 0 || !strings.Contains(stderr, "14 rows") {
		t.Errorf("expand --replicates 7: exit %d: %s", code, stderr)
	}

	bad := []struct {
		name string
		args []string
		want string
	}{
		{"no db", []string{"--effect", "2%"}, "--db PILOT.db is required"},
		{"no effect", []string{"--db", db}, "--effect is required"},
		{"bad effect", []string{"--db", db, "--effect", "two"}, `--effect "two"`},
		{"unknown metric", []string{"--db", db, "--effect", "2%", "--metric", "nope"}, "--metric nope is not a metric"},
		{"unknown treatment", []string{"--db", db, "--effect", "2%", "--treatment", "sasl"}, "--treatment sasl is not a level"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runXP(t, append([]string{"plan", "power"}, c.args...)...)
			if code != exitUsage || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q, want 2 and %q", code, stderr, c.want)
			}
		})
	}
	if code, _, stderr := runXP(t, "plan", "expand", spec, "--replicates", "0"); code != exitUsage || !strings.Contains(stderr, "--replicates 0: want 1..1000") {
		t.Errorf("--replicates 0: exit %d: %s", code, stderr)
	}
}
