package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/xp-bench/xp/infra/tf"
)

// xp infra up puts on disk, before Terraform runs, the two files a later
// xp needs after a crash: the group's variables (what destroy reads) and
// the running mark (what says Terraform may have been abandoned). Traced
// with strace: each is fsynced as a temporary file, renamed into place,
// and its directory fsynced (internal/durable).
func TestInfraUpWritesDurably(t *testing.T) {
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Fatalf("this test needs strace (Debian package strace): %v", err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	plan := writeInfraPlan(t, dir, "hosts", "")
	target := writeRunFile(t, dir, "target.yaml", hostsTargetFile)
	db := filepath.Join(dir, "c.db")
	trace := filepath.Join(dir, "trace")
	cmd := exec.Command(strace, "-f", "--seccomp-bpf", "-y", "-qq", "-e", "trace=fsync,rename,renameat,renameat2", "-o", trace,
		self, "infra", "up", plan, "--target", target, "--db", db)
	cmd.Env = append(os.Environ(), "XP_TEST_AS_XP=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("xp infra up under strace: %v\n%s", err, out)
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	groups, _ := filepath.Glob(filepath.Join(tf.WorkRoot(db), "*", "xp.auto.tfvars.json"))
	if len(groups) != 1 {
		t.Fatalf("groups %v", groups)
	}
	gdir := filepath.Dir(groups[0])
	// The calls on the group's directory and the files in it, in order.
	var calls []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, gdir) {
			calls = append(calls, l)
		}
	}
	for _, f := range []string{"xp.auto.tfvars.json", ".xp-terraform-running"} {
		tmp := regexp.MustCompile(`^\d+ +fsync\(\d+<` + regexp.QuoteMeta(filepath.Join(gdir, "."+f+".tmp")) + `(\d+)>\)`)
		ok := false
		for i, c := range calls {
			m := tmp.FindStringSubmatch(c)
			if m == nil || i+2 >= len(calls) {
				continue
			}
			renamed := strings.Contains(calls[i+1], "rename") && strings.Contains(calls[i+1], f+".tmp"+m[1]) &&
				strings.Contains(calls[i+1], filepath.Join(gdir, f)+`"`)
			synced := regexp.MustCompile(`^\d+ +fsync\(\d+<` + regexp.QuoteMeta(gdir) + `>\)`).MatchString(calls[i+2])
			ok = ok || renamed && synced
		}
		if !ok {
			t.Errorf("%s is not fsynced, renamed and its directory fsynced; the calls on %s:\n%s", f, gdir, strings.Join(calls, "\n"))
		}
	}
}
