package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xp-bench/xp/analysis"
	"github.com/xp-bench/xp/analysis/export"
)

// compareCampaign stores a synthetic campaign (two configurations, tls
// 10 % slower) of the given seed and sizes in dir; mutate may change it.
func compareCampaign(t *testing.T, dir, name string, seed uint64, sizes []string, mutate func(*analysis.Dataset)) string {
	t.Helper()
	d := analysis.Synthetic(analysis.SyntheticConfig{Seed: seed, Levels: []string{"plaintext", "tls"},
		Factors:    []analysis.SyntheticFactor{{Name: "message_size", Levels: sizes}},
		Replicates: 3, Penalty: map[string]float64{"tls": 10}})
	for i := range d.Runs {
		// Pairs named by content, as a plan names them.
		d.Runs[i].Pair = "size" + d.Runs[i].Factors[1]
	}
	if mutate != nil {
		mutate(d)
	}
	path := filepath.Join(dir, name)
	if err := analysis.Save(context.Background(), path, d, analysis.SaveOptions{Created: time.Unix(int64(seed), 0)}); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCompare runs xp compare on two campaigns of one plan: CSV on
// stdout and the summary on stderr; with --out, compare.csv and
// compare.html and the summary on stdout; neither db changes.
func TestCompare(t *testing.T) {
	dir := t.TempDir()
	sizes := []string{"1024", "10240"}
	a, b := compareCampaign(t, dir, "a.db", 1, sizes, nil), compareCampaign(t, dir, "b.db", 2, sizes, nil)
	before, _ := os.ReadFile(a)

	code, stdout, stderr := runXP(t, "compare", a, b)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	recs, err := csv.NewReader(strings.NewReader(stdout)).ReadAll()
	if err != nil || len(recs) < 2 || !slices.Equal(recs[0], export.CompareHeader) {
		t.Fatalf("stdout is not compare.csv (%v):\n%s", err, stdout)
	}
	ri := slices.Index(export.CompareHeader, "replicated")
	for _, r := range recs[1:] {
		if r[ri] != "yes" && r[ri] != "no" {
			t.Errorf("row %v: replicated %q, want yes or no", r[:4], r[ri])
		}
	}
	if !strings.Contains(stderr, "headline rows in both campaigns replicated") || !strings.Contains(stderr, "about 83% of the time") {
		t.Errorf("stderr lacks the summary with its reference: %s", stderr)
	}

	out := filepath.Join(dir, "cmp")
	code, stdout, stderr = runXP(t, "compare", a, b, "--out", out)
	if code != exitOK {
		t.Fatalf("--out: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "headline rows in both campaigns replicated") || !strings.Contains(stdout, "report: "+filepath.Join(out, "compare.html")) {
		t.Errorf("--out: stdout %q", stdout)
	}
	for _, f := range []string{"compare.csv", "compare.html"} {
		if fi, err := os.Stat(filepath.Join(out, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	if after, _ := os.ReadFile(a); !bytes.Equal(before, after) {
		t.Error("xp compare changed a.db")
	}
}

// TestCompareRefuses: bad input gets one message and exit 2, or exit 3
// when a campaign has no healthy matched set (its CSV still written).
func TestCompareRefuses(t *testing.T) {
	dir := t.TempDir()
	sizes := []string{"1024", "10240"}
	a, b := compareCampaign(t, dir, "a.db", 1, sizes, nil), compareCampaign(t, dir, "b.db", 2, sizes, nil)
	other := compareCampaign(t, dir, "other.db", 3, []string{"4096"}, nil)
	invalid := compareCampaign(t, dir, "invalid.db", 4, sizes, func(d *analysis.Dataset) {
		for i := range d.Runs {
			d.Runs[i].Outcome, d.Runs[i].Reasons = analysis.OutcomeInvalid, []string{"publish rate 90% of target"}
		}
	})
	link := filepath.Join(dir, "link.db")
	os.Symlink(a, link)
	copied := filepath.Join(dir, "copy.db")
	raw, _ := os.ReadFile(a)
	os.WriteFile(copied, raw, 0o644)
	text := filepath.Join(dir, "plan.jsonl")
	os.WriteFile(text, []byte(`{"campaign":"c"}`+"\n"), 0o644)
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"one db", []string{a}, exitUsage, "want two campaign dbs, got 1 argument(s): xp compare A.db B.db"},
		{"same file", []string{a, a}, exitUsage, a + " and " + a + " are the same file"},
		{"a link to it", []string{a, link}, exitUsage, "are the same file"},
		{"a copy", []string{a, copied}, exitUsage, "hold the same campaign (synthetic, created 1970-01-01 00:00:01 UTC)"},
		{"not a campaign", []string{a, text}, exitUsage, text + ": not an xp campaign database: xp compare takes two campaign dbs"},
		{"missing", []string{filepath.Join(dir, "none.db"), a}, exitUsage, "no campaign database at " + filepath.Join(dir, "none.db")},
		{"no shared configuration", []string{a, other}, exitUsage, "share no configuration: compare two campaigns of one plan"},
		{"confidence", []string{a, b, "--confidence", "1.5"}, exitUsage, "--confidence 1.5 out of range"},
		{"no healthy set", []string{a, invalid}, exitInvalidRuns, invalid + ": no healthy matched set"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runXP(t, append([]string{"compare"}, c.args...)...)
			if code != c.code || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, c.code, c.want)
			}
			if c.code == exitUsage && (stdout != "" || strings.Count(strings.TrimSpace(stderr), "\n") > 0) {
				t.Errorf("refused, yet stdout %q and stderr of more than one line %q", stdout, stderr)
			}
			if c.code == exitInvalidRuns && !strings.Contains(stdout, ",only A,") {
				t.Errorf("stdout %q: want A's rows listed as only in A", stdout)
			}
		})
	}
}
