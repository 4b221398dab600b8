package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTargetOfTheWrongKind: --target given the campaign (JSONL) or the
// factor spec instead of a TARGET.yaml is recognised and said in one
// line, exit 2, by xp run and xp infra alike; a TARGET.yaml with an
// unknown key still gets its own message.
func TestTargetOfTheWrongKind(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "tls-cost.yaml")
	plan := filepath.Join(dir, "tls-cost.jsonl")
	if err := os.WriteFile(spec, []byte(tlsCostSpec), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runXP(t, "plan", "expand", spec, "-o", plan); code != exitOK {
		t.Fatalf("expand: %s", stderr)
	}
	target := filepath.Join(dir, "hosts.yaml")
	os.WriteFile(target, []byte("platform: hosts\nvars: {}\nbudget: 5\n"), 0o600)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"run, plan as target", []string{"run", plan, "--target", plan}, "is a campaign (one run a line, as xp plan expand writes it), not a TARGET.yaml"},
		{"run, spec as target", []string{"run", plan, "--target", spec}, "is a factor spec (campaign:, factors:), not a TARGET.yaml: expand it with xp plan expand"},
		{"infra, spec as target", []string{"infra", "up", "--target", spec, "--dry-run", plan}, "is a factor spec"},
		{"infra, plan as target", []string{"infra", "show", "--target", plan, "--db", filepath.Join(dir, "x.db")}, "is a campaign"},
		{"a target with a typo", []string{"run", plan, "--target", target}, `unknown key "budget"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runXP(t, c.args...)
			if code != exitUsage || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q: want 2 and %q", code, stderr, c.want)
			}
			if c.name != "a target with a typo" && strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Errorf("more than one line:\n%s", stderr)
			}
		})
	}
}
