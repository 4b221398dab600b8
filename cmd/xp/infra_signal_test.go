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

// slowModule is terraform/hosts in dir/slowhosts with two more resources
// whose local-exec provisioners stand for cloud calls in flight: while
// the file slow-apply exists in dir, creating one touches started and
// sleeps 20 s; while slow-destroy exists, destroying the other touches
// destroying and sleeps 20 s.
type slowModule struct {
	dir                                               string
	slowApply, slowDestroy, started, destroying, pids string
}

func newSlowModule(t *testing.T, dir string) *slowModule {
	t.Helper()
	m := &slowModule{dir: dir}
	m.slowApply, m.slowDestroy = filepath.Join(dir, "slow-apply"), filepath.Join(dir, "slow-destroy")
	m.started, m.destroying, m.pids = filepath.Join(dir, "started"), filepath.Join(dir, "destroying"), filepath.Join(dir, "pids")
	mod := filepath.Join(dir, "slowhosts")
	if err := os.MkdirAll(mod, 0o755); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("../../terraform/hosts/*.tf")
	if len(files) == 0 {
		t.Fatal("no terraform/hosts module")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		writeRunFile(t, mod, filepath.Base(f), string(b))
	}
	writeRunFile(t, mod, "slow.tf", fmt.Sprintf(`resource "terraform_data" "slow_apply" {
  depends_on = [terraform_data.group]
  provisioner "local-exec" {
    command = "if [ -f %[1]s ]; then echo $$ >> %[3]s; sleep 20 & echo $! >> %[3]s; touch %[2]s; wait; fi"
  }
}

resource "terraform_data" "slow_destroy" {
  depends_on = [terraform_data.group]
  provisioner "local-exec" {
    when    = destroy
    command = "if [ -f %[4]s ]; then echo $$ >> %[3]s; sleep 20 & echo $! >> %[3]s; touch %[5]s; wait; fi"
  }
}
`, m.slowApply, m.started, m.pids, m.slowDestroy, m.destroying))
	t.Cleanup(func() {
		// The provisioners' shells and sleeps, which a killed terraform
		// leaves behind.
		b, _ := os.ReadFile(m.pids)
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	return m
}

// slow makes the provisioner of path (slowApply, slowDestroy) sleep, or
// not.
func (m *slowModule) slow(t *testing.T, path string, on bool) {
	t.Helper()
	if !on {
		os.Remove(path)
		return
	}
	writeRunFile(t, m.dir, filepath.Base(path), "")
}

// xpProcess is a real xp process (this test binary as xp) in a process
// group of its own, as a shell runs a command in the foreground.
type xpProcess struct {
	cmd    *exec.Cmd
	stderr *lockedBuffer
	exited chan struct{}
}

func startXPProcess(t *testing.T, args ...string) *xpProcess {
	t.Helper()
	return startXPProcessEnv(t, nil, args...)
}

// startXPProcessEnv is startXPProcess with env (KEY=VALUE) added to the
// process's environment.
func startXPProcessEnv(t *testing.T, env []string, args ...string) *xpProcess {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := &xpProcess{cmd: exec.Command(self, args...), stderr: &lockedBuffer{}, exited: make(chan struct{})}
	p.cmd.Env = append(append(os.Environ(), "XP_TEST_AS_XP=1"), env...)
	p.cmd.Stderr = p.stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			p.cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

// signal sends sig to the process group, as a terminal does on Ctrl-C or
// hang-up; Terraform, in a group of its own, gets only what xp sends it.
func (p *xpProcess) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(-p.cmd.Process.Pid, sig); err != nil {
		t.Fatal(err)
	}
}

// wait returns the exit code, -1 when a signal killed the process.
func (p *xpProcess) wait(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-p.exited:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(within):
		t.Fatalf("xp did not exit within %v; stderr:\n%s", within, p.stderr.String())
	}
	return 0
}

// waitFile waits for path to exist while p runs.
func waitFile(t *testing.T, p *xpProcess, path string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		select {
		case <-p.exited:
			t.Fatalf("xp exited (%d) before %s appeared; stderr:\n%s", p.cmd.ProcessState.ExitCode(), path, p.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear within %v; stderr:\n%s", path, within, p.stderr.String())
		}
	}
}

// stateResources lists the resources a tfstate file records.
func stateResources(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Resources []struct{ Type, Name string }
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []string
	for _, r := range st.Resources {
		out = append(out, r.Type+"."+r.Name)
	}
	return out
}

// SIGINT or SIGHUP to a real `xp infra up` while Terraform applies (a
// local-exec provisioner in flight) reaches Terraform once, through xp;
// xp waits for it to stop and save its state, records the apply as
// interrupted and exits 130, and `xp infra down` destroys what the state
// holds. After SIGKILL, which abandons Terraform, `xp infra down` destroys
// the group and says which group may hold resources outside the state.
func TestInfraUpSignalsDuringApply(t *testing.T) {
	tests := []struct {
		name      string
		sigs      []syscall.Signal
		say       []string
		abandoned bool
	}{
		{name: "SIGINT", sigs: []syscall.Signal{syscall.SIGINT},
			say: []string{"xp: interrupt: Terraform stops after the calls in flight and saves its state"}},
		{name: "SIGHUP", sigs: []syscall.Signal{syscall.SIGHUP},
			say: []string{"xp: hang-up: Terraform stops after the calls in flight and saves its state"}},
		// SIGKILL (or a third signal, TestInterruptibleWaitsForTerraform)
		// abandons Terraform: it dies with xp.
		{name: "SIGKILL", sigs: []syscall.Signal{syscall.SIGKILL}, abandoned: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			plan := writeInfraPlan(t, dir, "hosts", "")
			m := newSlowModule(t, dir)
			m.slow(t, m.slowApply, true)
			target := writeRunFile(t, dir, "target.yaml", strings.Replace(hostsTargetFile, "platform: hosts\n", "platform: hosts\nmodule: slowhosts\n", 1))
			db := filepath.Join(dir, "c.db")
			root := tf.WorkRoot(db)

			p := startXPProcess(t, "infra", "up", plan, "--target", target, "--db", db)
			waitFile(t, p, m.started, 2*time.Minute)
			for _, sig := range tc.sigs {
				p.signal(t, sig)
			}
			code := p.wait(t, time.Minute)
			stderr := p.stderr.String()
			if want := exitInterrupted; code != want && !(tc.abandoned && code == -1) {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, want, stderr)
			}
			for _, w := range tc.say {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			log, err := os.ReadFile(filepath.Join(root, "terraform.log"))
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(log), "Interrupt received"); n != len(tc.sigs) && !tc.abandoned || strings.Contains(string(log), "Two interrupts") {
				t.Errorf("Terraform saw %d interrupts (want 1 from xp):\n%s", n, log)
			}
			states := tfStates(t, root)
			marks, _ := filepath.Glob(filepath.Join(root, "*", ".xp-terraform-running"))
			if !tc.abandoned {
				if !strings.Contains(stderr, "terraform apply interrupted: Terraform stopped after the calls in flight and saved its state") {
					t.Errorf("stderr does not say the apply was interrupted and its state saved:\n%s", stderr)
				}
				// Terraform ran to its end: state saved with what it
				// made, its lock released, no mark left.
				if len(states) != 1 || !strings.Contains(strings.Join(stateResources(t, states[0]), ","), "terraform_data.group") {
					t.Fatalf("state %v does not hold what the apply made", states)
				}
				if locks, _ := filepath.Glob(filepath.Join(root, "*", ".terraform.tfstate.lock.info")); len(locks) > 0 {
					t.Errorf("state still locked: %v", locks)
				}
				if len(marks) != 0 {
					t.Errorf("running mark left: %v", marks)
				}
				if !strings.Contains(string(log), "Error: execution halted") {
					t.Errorf("Terraform's output does not end with its halt:\n%s", log)
				}
				if ev := strings.Join(latestEvents(t, db), ","); ev != "applying,apply-failed" {
					t.Errorf("events %s, want applying,apply-failed", ev)
				}
			} else if len(marks) != 1 {
				t.Fatalf("no running mark for the abandoned apply: %v", marks)
			}

			m.slow(t, m.slowApply, false)
			code, stdout, downErr := runXP(t, "infra", "down", "--db", db)
			if code != exitOK || !strings.Contains(stdout, "destroyed") {
				t.Fatalf("down: exit %d\n%s\n%s", code, stdout, downErr)
			}
			if got := strings.Contains(downErr, "was abandoned before Terraform saved its state"); got != tc.abandoned {
				t.Errorf("down's warning of an abandoned apply: %v, want %v:\n%s", got, tc.abandoned, downErr)
			}
			if tc.abandoned && !strings.Contains(downErr, "platform hosts creates nothing in a cloud") {
				t.Errorf("down does not say what the abandoned apply may have left:\n%s", downErr)
			}
			if st := tfStates(t, root); len(st) != 0 {
				t.Fatalf("state left after down: %v", st)
			}
		})
	}
}

// The other commands that run Terraform: SIGINT to `xp infra down`
// mid-destroy reaches Terraform once, is recorded as an interrupted
// destroy (the group stays for the next down) and exits 130; SIGINT to
// `xp run` mid-apply stops the apply, and the run's teardown then destroys
// what its state holds.
func TestRunAndInfraDownSignalsDuringTerraform(t *testing.T) {
	t.Run("infra down", func(t *testing.T) {
		dir := t.TempDir()
		plan := writeInfraPlan(t, dir, "hosts", "")
		m := newSlowModule(t, dir)
		target := writeRunFile(t, dir, "target.yaml", strings.Replace(hostsTargetFile, "platform: hosts\n", "platform: hosts\nmodule: slowhosts\n", 1))
		db := filepath.Join(dir, "c.db")
		if code, _, stderr := runXP(t, "infra", "up", plan, "--target", target, "--db", db); code != exitOK {
			t.Fatalf("up: exit %d: %s", code, stderr)
		}
		m.slow(t, m.slowDestroy, true)
		p := startXPProcess(t, "infra", "down", "--db", db)
		waitFile(t, p, m.destroying, time.Minute)
		p.signal(t, syscall.SIGINT)
		if code := p.wait(t, time.Minute); code != exitInterrupted {
			t.Fatalf("exit %d, want %d:\n%s", code, exitInterrupted, p.stderr.String())
		}
		if !strings.Contains(p.stderr.String(), "terraform destroy interrupted: Terraform stopped after the calls in flight and saved its state") {
			t.Errorf("stderr:\n%s", p.stderr.String())
		}
		log, _ := os.ReadFile(filepath.Join(tf.WorkRoot(db), "terraform.log"))
		if n := strings.Count(string(log), "Interrupt received"); n != 1 {
			t.Errorf("Terraform saw %d interrupts (want 1 from xp):\n%s", n, log)
		}
		if ev := strings.Join(latestEvents(t, db), ","); ev != "applying,up,destroy-failed" {
			t.Errorf("events %s, want applying,up,destroy-failed", ev)
		}
		m.slow(t, m.slowDestroy, false)
		if code, stdout, stderr := runXP(t, "infra", "down", "--db", db); code != exitOK || !strings.Contains(stdout, "destroyed") {
			t.Fatalf("down again: exit %d\n%s\n%s", code, stdout, stderr)
		}
		if st := tfStates(t, tf.WorkRoot(db)); len(st) != 0 {
			t.Fatalf("state left after down: %v", st)
		}
	})
	t.Run("run", func(t *testing.T) {
		dir := t.TempDir()
		plan := writeInfraPlan(t, dir, "hosts", "")
		m := newSlowModule(t, dir)
		m.slow(t, m.slowApply, true)
		target := writeRunFile(t, dir, "target.yaml", strings.Replace(hostsTargetFile, "platform: hosts\n", "platform: hosts\nmodule: slowhosts\nkafka: {distribution: embedded}\n", 1))
		db := filepath.Join(dir, "c.db")
		p := startXPProcess(t, "run", plan, "--target", target, "--db", db)
		waitFile(t, p, m.started, 2*time.Minute)
		m.slow(t, m.slowApply, false)
		p.signal(t, syscall.SIGINT)
		if code := p.wait(t, 2*time.Minute); code != exitInterrupted {
			t.Fatalf("exit %d, want %d:\n%s", code, exitInterrupted, p.stderr.String())
		}
		// xp run logs Terraform's output with its own, on stderr.
		log := p.stderr.String()
		if n := strings.Count(log, "Interrupt received"); n != 1 {
			t.Errorf("Terraform saw %d interrupts (want 1 from xp):\n%s", n, log)
		}
		if !strings.Contains(log, "Destroy complete!") {
			t.Errorf("the teardown did not destroy what the interrupted apply made:\n%s", log)
		}
		if st := tfStates(t, tf.WorkRoot(db)); len(st) != 0 {
			t.Fatalf("state left after the run's teardown: %v", st)
		}
	})
}
