package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoArgumentsTeachesWorkflow: xp alone prints the workflow and exits 2.
func TestNoArgumentsTeachesWorkflow(t *testing.T) {
	code, stdout, stderr := runXP(t)
	if code != exitUsage || stdout != "" {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	for _, w := range []string{"xp plan expand SPEC.yaml -o PLAN.jsonl", "xp run PLAN.jsonl", "xp analyse --db PLAN.db", "make demo"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("workflow lacks %q:\n%s", w, stderr)
		}
	}
	if strings.Contains(stderr, "xp: ") {
		t.Errorf("workflow followed by an error line:\n%s", stderr)
	}
}

// TestPositionalMisuse: a file given where another kind is expected, or a
// db given as an argument, gets one line naming the command that works.
func TestPositionalMisuse(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "my.yaml")
	os.WriteFile(spec, []byte(minimalSpec+"\n"), 0o644)
	plan := filepath.Join(dir, "my.jsonl")
	if code, _, stderr := runXP(t, "plan", "expand", spec, "-o", plan); code != 0 {
		t.Fatal(stderr)
	}
	noExt := filepath.Join(dir, "spec")
	os.WriteFile(noExt, []byte(minimalSpec+"\n"), 0o644)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"run a spec", []string{"run", spec},
			"xp run takes a campaign (JSONL), and " + spec + " is a factor spec: expand it first: xp plan expand " + spec + " -o " + plan + " && xp run " + plan},
		{"run a spec without extension", []string{"run", noExt}, "is a factor spec: expand it first"},
		{"expand a plan", []string{"plan", "expand", plan},
			"xp plan expand takes a factor spec (YAML); " + plan + " is a campaign (JSONL) already: run it with xp run " + plan},
		{"analyse a db argument", []string{"analyse", "c.db"}, "xp analyse: the db is given as --db, not as an argument: xp analyse --db c.db"},
		{"status a db argument", []string{"status", "c.db"}, "xp status: the db is given as --db, not as an argument: xp status --db c.db"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runXP(t, c.args...)
			if code != exitUsage || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
				t.Fatalf("exit %d, want %d and one line with %q; stderr:\n%s", code, exitUsage, c.want, stderr)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "my.db")); err == nil {
		t.Error("a refused run made a db")
	}
}

// TestHelpTeaches: plan expand --help shows a minimal spec that expands;
// run --help names the TARGET.yaml keys and the page describing them.
func TestHelpTeaches(t *testing.T) {
	_, stdout, _ := runXP(t, "plan", "expand", "--help")
	if !strings.Contains(stdout, "campaign: my-first") || !strings.Contains(stdout, "docs/spec.md") {
		t.Errorf("plan expand --help:\n%s", stdout)
	}
	_, stdout, _ = runXP(t, "run", "--help")
	for _, w := range []string{"platform", "budget_usd", "docs/targets.md"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("run --help lacks %q", w)
		}
	}
	// The minimal spec shown is a spec that expands.
	dir := t.TempDir()
	spec := filepath.Join(dir, "m.yaml")
	os.WriteFile(spec, []byte(minimalSpec+"\n"), 0o644)
	if code, _, stderr := runXP(t, "plan", "expand", spec, "-o", filepath.Join(dir, "m.jsonl")); code != 0 || !strings.Contains(stderr, "6 rows") {
		t.Fatalf("the help's spec: exit %d: %s", code, stderr)
	}
}
