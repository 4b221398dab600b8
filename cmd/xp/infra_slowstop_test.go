package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xp-bench/xp/infra/tf"
)

// slowTerraform is a stand-in terraform, first on PATH, that runs the
// real one. After a SIGINT it forwards it, waits for Terraform to stop
// and save its state, and then takes delay more before it exits (as a
// cloud apply with calls in flight can), and touches exited. Each
// invocation writes its pid (the leader of the process group
// terraform-exec gives it) to pid-SUBCOMMAND.
type slowTerraform struct {
	dir, exited string
}

func newSlowTerraform(t *testing.T, dir string) *slowTerraform {
	t.Helper()
	real, err := exec.LookPath("terraform")
	if err != nil {
		t.Fatalf("the tests need the real terraform on PATH: %v", err)
	}
	s := &slowTerraform{dir: filepath.Join(dir, "slowtf")}
	s.exited = filepath.Join(s.dir, "exited")
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`#!/bin/bash
echo $$ > %[2]s/pid-$1
%[1]s "$@" &
child=$!
trap 'kill -INT $child; interrupted=1' INT
wait $child; rc=$?
if [ -n "$interrupted" ]; then
	# wait again: the first wait returned when the trap ran.
	wait $child; rc=$?
	sleep "$XP_TEST_TF_STOP_DELAY"
	date +%%s.%%N > %[3]s
fi
exit $rc
`, real, s.dir, s.exited)
	if err := os.WriteFile(filepath.Join(s.dir, "terraform"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return s
}

// env puts the stand-in first on PATH and sets its delay.
func (s *slowTerraform) env(delay time.Duration) []string {
	return []string{"PATH=" + s.dir + string(os.PathListSeparator) + os.Getenv("PATH"),
		fmt.Sprintf("XP_TEST_TF_STOP_DELAY=%.3f", delay.Seconds())}
}

// exitedAt is when the stand-in exited by itself after an interrupt.
func (s *slowTerraform) exitedAt(t *testing.T) time.Time {
	t.Helper()
	b, err := os.ReadFile(s.exited)
	if err != nil {
		t.Fatalf("terraform did not exit by itself after the interrupt: %v", err)
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
	if err != nil {
		t.Fatal(err)
	}
	return time.Unix(0, int64(f*1e9))
}

// terraformKillPoint is when terraform-exec kills Terraform after its
// interrupt unless told otherwise (tfexec's default WaitDelay), and when
// xp did before it set none.
const terraformKillPoint = 60 * time.Second

// Terraform that takes longer than terraform-exec's 60 s to stop after its
// interrupt is waited for, not killed: `xp infra up` (one SIGINT) and `xp
// infra down` (SIGINT, then SIGTERM, which only says what still runs)
// see it exit by itself after the old kill point, say truthfully that it
// saved its state and exit 130, leave no running mark, and a follow-up `xp
// infra down` exits 0 without warning. The stand-in's exit after the
// kill point is what proves xp did not kill it: there is no shorter proof
// of the absence of a 60 s timer.
func TestTerraformSlowToStopIsNotKilled(t *testing.T) {
	t.Parallel()
	delay := terraformKillPoint + 2*time.Second
	check := func(t *testing.T, p *xpProcess, s *slowTerraform, signalled time.Time, op, db string) {
		t.Helper()
		if code := p.wait(t, delay+2*time.Minute); code != exitInterrupted {
			t.Fatalf("exit %d, want %d:\n%s", code, exitInterrupted, p.stderr.String())
		}
		stderr := p.stderr.String()
		if at := s.exitedAt(t); at.Sub(signalled) < terraformKillPoint {
			t.Fatalf("terraform exited %v after the signal, before the old kill point", at.Sub(signalled))
		}
		want := "terraform " + op + " interrupted: Terraform stopped after the calls in flight and saved its state"
		if !strings.Contains(stderr, want) || strings.Contains(stderr, "killed") {
			t.Errorf("stderr does not say only %q:\n%s", want, stderr)
		}
		root := tf.WorkRoot(db)
		if marks, _ := filepath.Glob(filepath.Join(root, "*", ".xp-terraform-running")); len(marks) != 0 {
			t.Errorf("running mark left although Terraform exited by itself: %v", marks)
		}
		if locks, _ := filepath.Glob(filepath.Join(root, "*", ".terraform.tfstate.lock.info")); len(locks) > 0 {
			t.Errorf("state still locked: %v", locks)
		}
		states := tfStates(t, root)
		if len(states) != 1 || !strings.Contains(strings.Join(stateResources(t, states[0]), ","), "terraform_data.group") {
			t.Fatalf("state %v does not hold the group", states)
		}
	}
	downAfter := func(t *testing.T, db string) {
		t.Helper()
		code, stdout, stderr := runXP(t, "infra", "down", "--db", db)
		if code != exitOK || !strings.Contains(stdout, "destroyed") || strings.Contains(stderr, "warning") {
			t.Fatalf("down after: exit %d\n%s\n%s", code, stdout, stderr)
		}
		if st := tfStates(t, tf.WorkRoot(db)); len(st) != 0 {
			t.Fatalf("state left after down: %v", st)
		}
	}
	t.Run("infra up", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		plan := writeInfraPlan(t, dir, "hosts", "")
		m := newSlowModule(t, dir)
		m.slow(t, m.slowApply, true)
		s := newSlowTerraform(t, dir)
		target := writeRunFile(t, dir, "target.yaml", strings.Replace(hostsTargetFile, "platform: hosts\n", "platform: hosts\nmodule: slowhosts\n", 1))
		db := filepath.Join(dir, "c.db")
		p := startXPProcessEnv(t, s.env(delay), "infra", "up", plan, "--target", target, "--db", db)
		waitFile(t, p, m.started, 2*time.Minute)
		m.slow(t, m.slowApply, false)
		signalled := time.Now()
		p.signal(t, syscall.SIGINT)
		check(t, p, s, signalled, "apply", db)
		downAfter(t, db)
	})
	t.Run("infra down", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		plan := writeInfraPlan(t, dir, "hosts", "")
		m := newSlowModule(t, dir)
		s := newSlowTerraform(t, dir)
		target := writeRunFile(t, dir, "target.yaml", strings.Replace(hostsTargetFile, "platform: hosts\n", "platform: hosts\nmodule: slowhosts\n", 1))
		db := filepath.Join(dir, "c.db")
		if code, _, stderr := runXP(t, "infra", "up", plan, "--target", target, "--db", db); code != exitOK {
			t.Fatalf("up: exit %d: %s", code, stderr)
		}
		m.slow(t, m.slowDestroy, true)
		p := startXPProcessEnv(t, s.env(delay), "infra", "down", "--db", db)
		waitFile(t, p, m.destroying, time.Minute)
		m.slow(t, m.slowDestroy, false)
		signalled := time.Now()
		p.signal(t, syscall.SIGINT)
		waitOutput(t, p, "Terraform stops after the calls in flight", time.Minute)
		p.signal(t, syscall.SIGTERM)
		waitOutput(t, p, "xp: terminated: waiting for Terraform to save its state: terraform destroy of group", time.Minute)
		check(t, p, s, signalled, "destroy", db)
		downAfter(t, db)
	})
}

// waitOutput waits for p's stderr to hold want.
func waitOutput(t *testing.T, p *xpProcess, want string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !strings.Contains(p.stderr.String(), want) {
		select {
		case <-p.exited:
			t.Fatalf("xp exited (%d) before saying %q:\n%s", p.cmd.ProcessState.ExitCode(), want, p.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("xp did not say %q within %v:\n%s", want, within, p.stderr.String())
		}
	}
}

// Terraform killed outright mid-apply (a kill -9 of its process group,
// as the OOM killer might): `xp infra up` says it was killed, not that it
// saved its state, and keeps the running mark; `xp infra show` and the
// next `xp infra down` warn that the state may miss resources, naming the
// group, and down still destroys what the state holds and exits 0.
func TestTerraformKilledLeavesWarning(t *testing.T) {
	dir := t.TempDir()
	plan := writeInfraPlan(t, dir, "hosts", "")
	m := newSlowModule(t, dir)
	m.slow(t, m.slowApply, true)
	s := newSlowTerraform(t, dir)
	target := writeRunFile(t, dir, "target.yaml", strings.Replace(hostsTargetFile, "platform: hosts\n", "platform: hosts\nmodule: slowhosts\n", 1))
	db := filepath.Join(dir, "c.db")
	p := startXPProcessEnv(t, s.env(0), "infra", "up", plan, "--target", target, "--db", db)
	waitFile(t, p, m.started, 2*time.Minute)
	m.slow(t, m.slowApply, false)
	b, err := os.ReadFile(filepath.Join(s.dir, "pid-apply"))
	if err != nil {
		t.Fatal(err)
	}
	pgid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t, time.Minute); code != exitFailure {
		t.Fatalf("exit %d, want %d:\n%s", code, exitFailure, p.stderr.String())
	}
	stderr := p.stderr.String()
	if !strings.Contains(stderr, "terraform apply was killed (signal: killed), not by xp, before it could save its state") ||
		strings.Contains(stderr, "saved its state") {
		t.Errorf("up does not say Terraform was killed:\n%s", stderr)
	}
	marks, _ := filepath.Glob(filepath.Join(tf.WorkRoot(db), "*", ".xp-terraform-running"))
	if len(marks) != 1 {
		t.Fatalf("running marks %v, want the killed apply's", marks)
	}
	var mark struct{ Op, Killed string }
	if b, err := os.ReadFile(marks[0]); err != nil || json.Unmarshal(b, &mark) != nil || mark.Op != "apply" || mark.Killed != "signal: killed" {
		t.Errorf("mark %s: %+v (%v)", marks[0], mark, err)
	}
	warning := "the terraform apply started"
	killed := "was killed (signal: killed), not by xp, before Terraform could save its state"
	code, stdout, showErr := runXP(t, "infra", "show", "--db", db)
	if code != exitOK || !strings.Contains(showErr, killed) || !strings.Contains(showErr, warning) {
		t.Errorf("show: exit %d, no warning:\n%s\n%s", code, stdout, showErr)
	}
	code, stdout, downErr := runXP(t, "infra", "down", "--db", db)
	if code != exitOK || !strings.Contains(stdout, "destroyed") {
		t.Fatalf("down: exit %d\n%s\n%s", code, stdout, downErr)
	}
	group := strings.TrimPrefix(strings.TrimSuffix(strings.TrimSpace(stdout), ": destroyed"), "group ")
	for _, w := range []string{"xp: warning: group " + group + ": " + warning, killed, "platform hosts creates nothing in a cloud"} {
		if !strings.Contains(downErr, w) {
			t.Errorf("down's warning lacks %q:\n%s", w, downErr)
		}
	}
	if st := tfStates(t, tf.WorkRoot(db)); len(st) != 0 {
		t.Fatalf("state left after down: %v", st)
	}
	// The campaign log says it too (xp run's teardown, which removes the
	// mark, has only that place to say it).
	if log, _ := os.ReadFile(filepath.Join(tf.WorkRoot(db), "terraform.log")); !strings.Contains(string(log), killed) {
		t.Errorf("terraform.log lacks the warning")
	}
	if code, stdout, stderr := runXP(t, "infra", "down", "--db", db); code != exitOK || strings.Contains(stderr, "warning") {
		t.Errorf("second down: exit %d, still warns:\n%s\n%s", code, stdout, stderr)
	}
}
