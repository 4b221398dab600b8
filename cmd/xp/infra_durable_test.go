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
		if !writtenDurably(calls, gdir, f) {
			t.Errorf("%s is not fsynced, renamed and its directory fsynced; the calls on %s:\n%s", f, gdir, strings.Join(calls, "\n"))
		}
	}
}

// writtenDurably reports whether strace -f -y lines calls show file f
// written into dir durably. strace interleaves threads: a call another
// thread's line cuts in two is "fsync(...> <unfinished ...>" and, later,
// "<... fsync resumed>) = 0" (no path). So each step is looked for after
// the last: the temporary file's fsync, the rename of that very file (its
// random suffix) into place, then the same thread's next call on the
// directory, which must be its fsync.
func writtenDurably(calls []string, dir, f string) bool {
	dirSync := regexp.MustCompile(`^\d+ +fsync\(\d+<` + regexp.QuoteMeta(dir) + `>(\)| <unfinished)`)
	tmp := regexp.MustCompile(`^\d+ +fsync\(\d+<` + regexp.QuoteMeta(filepath.Join(dir, "."+f+".tmp")) + `(\d+)>(\)| <unfinished)`)
	for i, c := range calls {
		m := tmp.FindStringSubmatch(c)
		if m == nil {
			continue
		}
		j := i + 1
		for j < len(calls) && !strings.Contains(calls[j], f+".tmp"+m[1]) {
			j++
		}
		if j == len(calls) || !strings.Contains(calls[j], "rename") || !strings.Contains(calls[j], filepath.Join(dir, f)+`"`) {
			continue
		}
		pid, _, _ := strings.Cut(calls[j], " ")
		for k := j + 1; k < len(calls); k++ {
			if strings.HasPrefix(calls[k], pid+" ") {
				if dirSync.MatchString(calls[k]) {
					return true
				}
				break
			}
		}
	}
	return false
}

// TestWrittenDurably: the trace reader accepts a write whose fsync another
// thread's line cut in two, and refuses one whose directory is not
// fsynced after the rename, or whose rename is of another file.
func TestWrittenDurably(t *testing.T) {
	const d = "/tmp/x/g1"
	interleaved := []string{
		`21942 fsync(13</tmp/x/g1/.xp.auto.tfvars.json.tmp141>) = 0`,
		`21942 renameat(AT_FDCWD</w>, "/tmp/x/g1/.xp.auto.tfvars.json.tmp141", AT_FDCWD</w>, "/tmp/x/g1/xp.auto.tfvars.json") = 0`,
		`21942 fsync(13</tmp/x/g1>) = 0`,
		`21941 fsync(13</tmp/x/g1/..xp-terraform-running.tmp236> <unfinished ...>`,
		`21941 renameat(AT_FDCWD</w>, "/tmp/x/g1/..xp-terraform-running.tmp236", AT_FDCWD</w>, "/tmp/x/g1/.xp-terraform-running") = 0`,
		`21983 fsync(3</tmp/x/g1/terraform.tfstate>) = 0`,
		`21941 fsync(13</tmp/x/g1>) = 0`,
	}
	for _, f := range []string{"xp.auto.tfvars.json", ".xp-terraform-running"} {
		if !writtenDurably(interleaved, d, f) {
			t.Errorf("%s: interleaved trace refused", f)
		}
	}
	noDirSync := []string{interleaved[3], interleaved[4], interleaved[5], `21941 fsync(13</tmp/x/g1/terraform.tfstate>) = 0`, `21941 fsync(13</tmp/x/g1>) = 0`}
	if writtenDurably(noDirSync, d, ".xp-terraform-running") {
		t.Error("a write whose directory is not fsynced right after the rename is accepted")
	}
	otherRename := []string{interleaved[3], `21941 renameat(AT_FDCWD</w>, "/tmp/x/g1/..xp-terraform-running.tmp999", AT_FDCWD</w>, "/tmp/x/g1/.xp-terraform-running") = 0`, interleaved[6]}
	if writtenDurably(otherRename, d, ".xp-terraform-running") {
		t.Error("a rename of another temporary file is accepted")
	}
}
