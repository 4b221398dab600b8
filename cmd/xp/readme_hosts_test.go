package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeSection returns the README's section under heading (without the
// next section).
func readmeSection(t *testing.T, heading string) string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, s, ok := strings.Cut(string(text), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no %q section", heading)
	}
	s, _, _ = strings.Cut(s, "\n## ")
	return s
}

// fencedBlocks returns the ``` blocks of lang in text.
func fencedBlocks(text, lang string) []string {
	var out []string
	for _, m := range regexp.MustCompile("(?s)```"+lang+"\n(.*?)```").FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestReadmeHostsExample runs the README's "On your own machines" example
// as written, in a directory holding its files (each YAML block saved
// under the name its first comment gives): the spec expands, the dry run
// of xp infra up shows the group with the gateway machine used, xp run
// accepts the plan and the target (with --dry-run added: the example's
// addresses are documentation addresses, 192.0.2.0/24, that route
// nowhere), and after the group is brought up (as xp run does first, here
// by xp infra up) the README's xp infra down destroys it.
func TestReadmeHostsExample(t *testing.T) {
	section := readmeSection(t, "## On your own machines or the cloud")
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("HOME", dir)
	names := regexp.MustCompile(`^# ([a-z0-9-]+\.yaml):`)
	var files []string
	for _, b := range fencedBlocks(section, "yaml") {
		m := names.FindStringSubmatch(b)
		if m == nil {
			t.Fatalf("a YAML block without a '# NAME.yaml:' first line:\n%s", b)
		}
		if err := os.WriteFile(m[1], []byte(b), 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, m[1])
	}
	if len(files) != 2 {
		t.Fatalf("YAML blocks %v, want a spec and a TARGET.yaml", files)
	}
	sh := fencedBlocks(section, "sh")
	if len(sh) != 1 {
		t.Fatalf("%d sh blocks, want one", len(sh))
	}
	var cmds [][]string
	for _, l := range strings.Split(strings.TrimSpace(sh[0]), "\n") {
		l, _, _ = strings.Cut(l, "#")
		f := strings.Fields(l)
		if len(f) == 0 || f[0] != "xp" {
			t.Fatalf("not an xp command: %q", l)
		}
		cmds = append(cmds, f[1:])
	}
	ran := map[string]bool{}
	for _, c := range cmds {
		name := strings.Join(c[:min(2, len(c))], " ")
		switch {
		case c[0] == "run":
			c = append(c, "--dry-run")
		case name == "infra down":
			// After a crash the db records the group up: bring it up as
			// xp run would, with the README's target and plan.
			plan := ""
			for _, o := range cmds {
				if o[0] == "run" {
					plan = o[1]
				}
			}
			if code, _, stderr := runXP(t, "infra", "up", "--target", "hosts.yaml", plan); code != exitOK {
				t.Fatalf("xp infra up %s: exit %d: %s", plan, code, stderr)
			}
		}
		code, stdout, stderr := runXP(t, c...)
		if code != exitOK {
			t.Fatalf("xp %s: exit %d:\n%s%s", strings.Join(c, " "), code, stdout, stderr)
		}
		switch name {
		case "infra up":
			// The dry run: one group, with the gateway machine used.
			for _, w := range []string{`"gateway_count": 1`, `"name": "gw"`, "budget_usd $50.00"} {
				if !strings.Contains(stdout, w) {
					t.Errorf("xp %s: stdout lacks %s:\n%s", strings.Join(c, " "), w, stdout)
				}
			}
		case "infra down":
			if !strings.Contains(stdout, "destroyed") {
				t.Errorf("xp infra down: %s", stdout)
			}
		}
		ran[name] = true
	}
	for _, w := range []string{"plan expand", "infra up", "infra down"} {
		if !ran[w] {
			t.Errorf("the README's example lacks xp %s", w)
		}
	}
	if !ran["run hosts-cost.jsonl"] {
		t.Errorf("the README's example lacks xp run of its own campaign: ran %v", ran)
	}
}
