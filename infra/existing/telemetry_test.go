package existing

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xp-bench/xp/infra/remote"
	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/internal/netnstest"
	"github.com/xp-bench/xp/results"
	"github.com/xp-bench/xp/runner"
)

// buildXP builds the xp binary the telemetry hosts get.
func buildXP(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "xp")
	if out, err := exec.Command("go", "build", "-o", p, "github.com/xp-bench/xp/cmd/xp").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return p
}

// TestTelemetryOverSSH samples a machine of the cluster (a namespace host
// with its own sshd) during a campaign: the agent is uploaded, streams
// telemetry that every attempt stores, and is gone from the host, with
// its directories, when the campaign ends.
func TestTelemetryOverSSH(t *testing.T) {
	bin := buildXP(t)
	n := netnstest.New(t, 1)
	h := n.Hosts[0]
	c := embedded(t, 1)
	ctx := context.Background()
	dir := t.TempDir()
	extra := fmt.Sprintf("telemetry:\n  ssh: {user: %s, private_key: %s}\n  hosts:\n    - {name: b1, address: %s, ssh_port: %d, role: broker}\n",
		n.User, n.UserKey, h.Addr, h.SSHPort)
	tpath := targetYAML(t, dir, endpointsOf(c, "plaintext", "tls"), extra)
	plan := writePlan(t, dir, campaignSpec("tel", 1, "plaintext", "tls"))
	getenv := func(k string) string {
		if k == remote.BinaryEnv {
			return bin
		}
		return os.Getenv(k)
	}
	var stderr bytes.Buffer
	db := filepath.Join(dir, "tel.db")
	sum, err := runner.Run(ctx, runner.Options{Plan: plan, DB: db, Target: tpath, Stderr: &stderr,
		Platforms: target.Platforms{"existing": Opener(Options{Log: &stderr, Getenv: getenv})}})
	if err != nil || sum.Rows[results.Done] != 2 {
		t.Fatalf("%v, rows %v\n%s", err, sum.Rows, stderr.String())
	}
	s, err := results.OpenReadOnly(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	atts, err := s.Attempts(ctx)
	if err != nil || len(atts) != 2 {
		t.Fatalf("%v %d attempts", err, len(atts))
	}
	for _, a := range atts {
		samples, err := s.Telemetry(ctx, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		hosts := map[string]bool{}
		for _, sm := range samples {
			hosts[sm.Host] = true
		}
		if !hosts["b1"] || !hosts["client"] {
			t.Errorf("attempt %d: telemetry of hosts %v, want b1 and client", a.ID, hosts)
		}
		if !strings.Contains(string(a.Environment), `"name":"b1"`) || !strings.Contains(string(a.Environment), `"kernel"`) {
			t.Errorf("attempt %d: environment lacks b1's description: %s", a.ID, a.Environment)
		}
		if _, ok := a.Metrics["host_cpu_broker_us_per_msg"]; !ok {
			t.Errorf("attempt %d: no host_cpu_broker_us_per_msg in %v", a.ID, a.Metrics)
		}
	}
	if _, err := os.Stat(filepath.Join(h.Home(), "xp")); !os.IsNotExist(err) {
		entries, _ := os.ReadDir(filepath.Join(h.Home(), "xp"))
		t.Errorf("the agent's directory is still on the host: %v %v", err, entries)
	}
	procs, err := h.Processes()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		if strings.Contains(p, "agent") {
			t.Errorf("an xp process is left on the host: %s", p)
		}
	}
}
