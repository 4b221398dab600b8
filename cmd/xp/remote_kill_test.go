package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/xp-bench/xp/infra/tf"
	"github.com/xp-bench/xp/internal/netnstest"
	"github.com/xp-bench/xp/results"
)

// killSpec is two rows long enough (3 s warm-up, 3 s measurement) that a
// real xp run can be caught between its apply and the end of its first run.
var killSpec = strings.NewReplacer(
	"campaign: remote-e2e", "campaign: remote-kill",
	"replicates: 2", "replicates: 1",
	"[plaintext, tls, proxy, encrypt]", "[plaintext, proxy]",
	"warmup_s: 1", "warmup_s: 3",
	"duration_s: 1", "duration_s: 3",
).Replace(remoteSpec)

// killCampaign is one campaign on namespace hosts: its plan, target file
// and db, and the xp binary its agents run as.
type killCampaign struct {
	dir, plan, target, db, agent string
}

func newKillCampaign(t *testing.T, agent string, n *netnstest.Net) killCampaign {
	t.Helper()
	dir := t.TempDir()
	target := hostsTarget(t, dir, n)
	return killCampaign{dir: dir, plan: expandSpec(t, dir, "kill", killSpec),
		target: target, db: filepath.Join(dir, "kill.db"), agent: agent}
}

// xp runs this test binary as xp in a process of its own.
func (c killCampaign) xp(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), "XP_TEST_AS_XP=1", "XP_AGENT_BINARY="+c.agent)
	return cmd
}

// killProgress is what a killed campaign's db says: Terraform's events
// (those naming a working directory), the runner's, and rows done.
type killProgress struct {
	tf, runner []string
	done       int
}

func readKillProgress(db string) (killProgress, error) {
	var p killProgress
	ctx := context.Background()
	s, err := results.OpenReadOnly(ctx, db)
	if err != nil {
		return p, err
	}
	defer s.Close()
	es, err := s.InfraEvents(ctx)
	if err != nil {
		return p, err
	}
	for _, e := range es {
		var o struct {
			Dir string `json:"dir"`
		}
		if json.Unmarshal(e.Outputs, &o) == nil && o.Dir != "" {
			p.tf = append(p.tf, e.Event)
		} else {
			p.runner = append(p.runner, e.Event)
		}
	}
	raw, err := sql.Open("sqlite", "file:"+db+"?mode=ro")
	if err != nil {
		return p, err
	}
	defer raw.Close()
	err = raw.QueryRow(`SELECT count(*) FROM row WHERE state = 'done'`).Scan(&p.done)
	return p, err
}

// runAndKill starts xp run and SIGKILLs it once Terraform's apply is
// recorded and the runner has deployed the group (its services run on
// the hosts), before any row is done.
func (c killCampaign) runAndKill(t *testing.T) {
	t.Helper()
	cmd := c.xp(t, "run", c.plan, "--target", c.target, "--db", c.db)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if p, err := readKillProgress(c.db); err == nil && slices.Contains(p.tf, tf.EventUp) && slices.Contains(p.runner, "up") {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("xp run ended before its group was up: %v\n%s", err, tail(stderr.String(), 4000))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("xp run recorded no deployed group within 60 s\n%s", tail(stderr.String(), 4000))
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-exited
	p, err := readKillProgress(c.db)
	if err != nil {
		t.Fatal(err)
	}
	if p.done != 0 || !slices.Equal(p.tf, []string{tf.EventApplying, tf.EventUp}) {
		t.Fatalf("the kill missed its window (between apply and the first row done): terraform events %v, %d rows done", p.tf, p.done)
	}
}

// campaignFilesGone fails the test if a host still holds the campaign's
// directory (binary, keys, SASL password): the hosts platform's machines
// outlive their group, the campaign's files must not.
func campaignFilesGone(t *testing.T, n *netnstest.Net, campaign string) {
	t.Helper()
	for _, h := range n.Hosts {
		if _, err := os.Stat(filepath.Join(h.Home(), "xp", campaign)); !os.IsNotExist(err) {
			t.Errorf("%s: ~/xp/%s left after the group was destroyed (%v)", h.Name, campaign, err)
		}
	}
}

// noXPLeft fails the test if an xp process runs on any host once the
// sessions of a bounded wait have closed.
func noXPLeft(t *testing.T, n *netnstest.Net) {
	t.Helper()
	for _, h := range n.Hosts {
		deadline := time.Now().Add(15 * time.Second)
		for {
			procs, err := h.Processes()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(procs, "xp") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: an xp process is left: %v", h.Name, procs)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// TestKilledRunOnNamespaceHosts SIGKILLs a real `xp run` on namespace
// hosts (terraform/hosts, the real terraform) between its apply and its
// first row done, then either resumes it, which must apply nothing new
// and finish every row, or runs `xp infra down`, which must leave no
// Terraform state, the group recorded down and no xp process on any host.
func TestKilledRunOnNamespaceHosts(t *testing.T) {
	t.Parallel()
	agent := filepath.Join(t.TempDir(), "xp")
	if out, err := exec.Command("go", "build", "-o", agent, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	n := netnstest.New(t, 4)
	for _, tc := range []struct {
		name  string
		after func(t *testing.T, c killCampaign)
	}{
		{"resume applies nothing new", func(t *testing.T, c killCampaign) {
			out, err := c.xp(t, "run", c.plan, "--target", c.target, "--db", c.db, "--resume").CombinedOutput()
			if err != nil {
				t.Fatalf("xp run --resume: %v\n%s", err, tail(string(out), 6000))
			}
			p, err := readKillProgress(c.db)
			if err != nil {
				t.Fatal(err)
			}
			if p.done != 2 {
				t.Errorf("%d rows done after --resume, want 2", p.done)
			}
			// One apply, reused by --resume, then the teardown at its end.
			if want := []string{tf.EventApplying, tf.EventUp, tf.EventDown}; !slices.Equal(p.tf, want) {
				t.Errorf("terraform events %v, want %v (a second apply is a second set of machines)", p.tf, want)
			}
		}},
		{"infra down leaves nothing", func(t *testing.T, c killCampaign) {
			out, err := c.xp(t, "infra", "down", "--target", c.target, "--db", c.db).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "destroyed") {
				t.Fatalf("xp infra down: %v\n%s", err, tail(string(out), 6000))
			}
			p, err := readKillProgress(c.db)
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{tf.EventApplying, tf.EventUp, tf.EventDown}; !slices.Equal(p.tf, want) {
				t.Errorf("terraform events %v, want %v", p.tf, want)
			}
			if st := tfStates(t, tf.WorkRoot(c.db)); len(st) != 0 {
				t.Errorf("terraform state left after down: %v", st)
			}
			if _, err := os.Stat(tf.WorkRoot(c.db)); err == nil {
				if left, _ := os.ReadDir(tf.WorkRoot(c.db)); slices.ContainsFunc(left, func(e os.DirEntry) bool { return e.IsDir() }) {
					t.Errorf("a group's working directory is left after down: %v", left)
				}
			}
			campaignFilesGone(t, n, "remote-kill")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newKillCampaign(t, agent, n)
			c.runAndKill(t)
			tc.after(t, c)
			noXPLeft(t, n)
		})
	}
}
