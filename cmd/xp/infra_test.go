package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xp-bench/xp/infra/tf"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/results"
)

// writeInfraPlan expands a three-mode campaign on platform (one
// infrastructure group) into dir.
func writeInfraPlan(t *testing.T, dir, platform, instanceType string) string {
	t.Helper()
	spec := strings.NewReplacer("platform: local", "platform: "+platform+instanceType, "campaign: cmdtest", "campaign: infratest").
		Replace(cmdTestSpec)
	spec = strings.Replace(spec, "[plaintext, tls]", "[plaintext, tls, proxy]", 1)
	s, err := planner.ParseSpec("infra.yaml", []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if _, err := planner.Expand(s, &b); err != nil {
		t.Fatal(err)
	}
	return writeRunFile(t, dir, platform+".jsonl", b.String())
}

const hostsTargetFile = `platform: hosts
vars:
  machines:
    - {name: b1, address: 198.18.0.11, role: broker}
    - {name: gw, address: 198.18.0.21, role: gateway}
    - {name: c1, address: 198.18.0.31, role: client, ssh_port: 2201}
ssh: {user: bench}
`

func tfStates(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err == nil && strings.HasSuffix(p, ".tfstate") {
			out = append(out, p)
		}
		return nil
	})
	return out
}

func latestEvents(t *testing.T, db string) []string {
	t.Helper()
	s, err := results.OpenReadOnly(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	es, err := s.InfraEvents(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Event)
	}
	return out
}

// xp infra up, show, up again, down with the real terraform and
// terraform/hosts.
func TestInfraUpShowDown(t *testing.T) {
	dir := t.TempDir()
	plan := writeInfraPlan(t, dir, "hosts", "")
	target := writeRunFile(t, dir, "target.yaml", hostsTargetFile)
	db := filepath.Join(dir, "c.db")
	steps := []struct {
		name   string
		args   []string
		code   int
		stdout []string
		events string
	}{
		{name: "dry run", args: []string{"infra", "up", plan, "--target", target, "--db", db, "--dry-run"}, code: exitOK,
			stdout: []string{`"broker_count": 1`, `"gateway_count": 1`, `"campaign": "infratest"`, "estimated cost: $0.00"}},
		{name: "up", args: []string{"infra", "up", plan, "--target", target, "--db", db}, code: exitOK,
			stdout: []string{"applied", "client   c1  bench@198.18.0.31:2201"}, events: "applying,up"},
		{name: "show", args: []string{"infra", "show", "--db", db}, code: exitOK,
			stdout: []string{": up since", "broker   b1  bench@198.18.0.11:22", "total cost: $0.00"}, events: "applying,up"},
		{name: "up again applies nothing", args: []string{"infra", "up", plan, "--target", target, "--db", db}, code: exitOK,
			stdout: []string{"already up"}, events: "applying,up"},
		// With --target, down first looks for services a killed xp run
		// left; infra up registered no campaign, so there are none.
		{name: "down", args: []string{"infra", "down", "--target", target, "--db", db}, code: exitOK, stdout: []string{"destroyed"}, events: "applying,up,down"},
		{name: "down again", args: []string{"infra", "down", "--db", db}, code: exitOK, stdout: []string{"nothing is up"}, events: "applying,up,down"},
		{name: "show after down", args: []string{"infra", "show", "--db", db}, code: exitOK, stdout: []string{": down since"}, events: "applying,up,down"},
	}
	for _, s := range steps {
		code, stdout, stderr := runXP(t, s.args...)
		if code != s.code {
			t.Fatalf("%s: exit %d, want %d: %s", s.name, code, s.code, stderr)
		}
		for _, w := range s.stdout {
			if !strings.Contains(stdout, w) {
				t.Fatalf("%s: stdout lacks %q:\n%s", s.name, w, stdout)
			}
		}
		if s.events == "" {
			if _, err := os.Stat(db); !os.IsNotExist(err) {
				t.Fatalf("%s: the dry run wrote the db", s.name)
			}
			continue
		}
		if got := strings.Join(latestEvents(t, db), ","); got != s.events {
			t.Fatalf("%s: events %s, want %s", s.name, got, s.events)
		}
	}
	if st := tfStates(t, tf.WorkRoot(db)); len(st) != 0 {
		t.Fatalf("state left after down: %v", st)
	}
}

func TestInfraRefuses(t *testing.T) {
	dir := t.TempDir()
	awsPlan := writeInfraPlan(t, dir, "aws", "\n  instance_type: m5.xlarge")
	hostsPlan := writeInfraPlan(t, dir, "hosts", "")
	os.WriteFile(filepath.Join(dir, "k"), []byte("private"), 0o600)
	os.WriteFile(filepath.Join(dir, "k.pub"), []byte("ssh-ed25519 AAAA test\n"), 0o644)
	awsTarget := func(extra string) string {
		return writeRunFile(t, dir, "aws.yaml", "platform: aws\nvars: {region: eu-west-1, operator_cidr: 203.0.113.7/32}\nssh: {private_key: "+
			filepath.Join(dir, "k")+"}\n"+extra)
	}
	tests := []struct {
		name   string
		args   func() []string
		code   int
		stdout string
		stderr string
	}{
		{name: "budget too small", args: func() []string {
			return []string{"infra", "up", awsPlan, "--target", awsTarget("budget_usd: 0.01\n"), "--db", filepath.Join(dir, "a.db")}
		}, code: exitUsage, stderr: "estimated cost $0.15 exceeds budget_usd $0.01"},
		{name: "budget too small, dry run", args: func() []string {
			return []string{"infra", "up", awsPlan, "--target", awsTarget("budget_usd: 0.01\n"), "--db", filepath.Join(dir, "a.db"), "--dry-run"}
		}, code: exitUsage, stdout: `"ssh_public_key": "ssh-ed25519 AAAA test"`, stderr: "exceeds budget_usd $0.01"},
		{name: "aws dry run within budget", args: func() []string {
			return []string{"infra", "up", awsPlan, "--target", awsTarget("budget_usd: 5\n"), "--db", filepath.Join(dir, "a.db"), "--dry-run"}
		}, code: exitOK, stdout: `"broker_instance_type": "m5.xlarge"`},
		{name: "no credentials", args: func() []string {
			return []string{"infra", "up", awsPlan, "--target", awsTarget(""), "--db", filepath.Join(dir, "a.db")}
		}, code: exitUsage, stderr: "aws credentials: none found"},
		{name: "platform mismatch", args: func() []string {
			return []string{"infra", "up", hostsPlan, "--target", awsTarget(""), "--db", filepath.Join(dir, "a.db")}
		}, code: exitUsage, stderr: "run on hosts, but"},
		{name: "unknown key", args: func() []string {
			return []string{"infra", "up", awsPlan, "--target", awsTarget("tear_down: never\n")}
		}, code: exitUsage, stderr: `aws.yaml:4: unknown key "tear_down"; did you mean "teardown"?`},
		{name: "run over budget", args: func() []string {
			return []string{"run", awsPlan, "--target", awsTarget("budget_usd: 0.01\n"), "--db", filepath.Join(dir, "a.db")}
		}, code: exitUsage, stderr: "estimated cost $0.15 exceeds budget_usd $0.01"},
		{name: "run with a typo in the target", args: func() []string {
			return []string{"run", awsPlan, "--target", awsTarget("budget_us: 5\n"), "--db", filepath.Join(dir, "a.db")}
		}, code: exitUsage, stderr: `aws.yaml:4: unknown key "budget_us"; did you mean "budget_usd"?`},
		{name: "target required", args: func() []string { return []string{"infra", "up", awsPlan} }, code: exitUsage, stderr: "target"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runXP(t, tc.args()...)
			if code != tc.code || !strings.Contains(stdout, tc.stdout) || !strings.Contains(stderr, tc.stderr) {
				t.Fatalf("exit %d (want %d)\nstdout %q (want %q)\nstderr %q (want %q)", code, tc.code, stdout, tc.stdout, stderr, tc.stderr)
			}
		})
	}
	for _, made := range []string{"a.db", "a.db.tf"} {
		if _, err := os.Stat(filepath.Join(dir, made)); !os.IsNotExist(err) {
			t.Fatalf("a refused campaign made %s: %v", made, err)
		}
	}
}

// xp status counts a group still up at its hourly price since it came up.
func TestStatusCountsCostOfGroupsUp(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "c.db")
	s, err := results.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Register(ctx, results.Campaign{Name: "c", Plan: []byte("p"), Target: "platform: aws\n"},
		[]results.Row{{Run: "a-r1", Order: 1, Plan: []byte(`{"security":"tls"}`)}}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	s.AddInfraEvent(ctx, results.InfraEvent{Event: "up", Group: "g1", Time: now.Add(-3 * time.Hour), HourlyUSD: 2})
	s.AddInfraEvent(ctx, results.InfraEvent{Event: "down", Group: "g1", Time: now.Add(-2 * time.Hour), Cost: 2})
	s.AddInfraEvent(ctx, results.InfraEvent{Event: "up", Group: "g2", Time: now.Add(-30 * time.Minute), HourlyUSD: 1.2})
	s.Close()
	code, stdout, stderr := runXP(t, "status", "--db", db)
	// $2 for g1's hour, about $0.60 for g2's half hour so far.
	if code != exitOK || !strings.Contains(stdout, "cost so far $2.60") {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
}

// A SIGKILLed xp infra up (in terraform init or apply) leaves a group that
// xp infra down finds in the db and destroys, leaving no state.
func TestInfraDownAfterKill(t *testing.T) {
	dir := t.TempDir()
	plan := writeInfraPlan(t, dir, "hosts", "")
	target := writeRunFile(t, dir, "target.yaml", hostsTargetFile)
	db := filepath.Join(dir, "c.db")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "infra", "up", plan, "--target", target, "--db", db)
	cmd.Env = append(os.Environ(), "XP_TEST_AS_XP=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(db); err == nil {
			if ev := eventsIfReadable(db); len(ev) > 0 {
				break // applying is recorded: terraform is starting
			}
		}
		select {
		case err := <-exited:
			t.Fatalf("xp infra up ended before it recorded an apply: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("no apply recorded within 60 s")
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-exited

	code, stdout, stderr := runXP(t, "infra", "down", "--db", db)
	if code != exitOK || !strings.Contains(stdout, "destroyed") {
		t.Fatalf("down after kill: exit %d\n%s\n%s", code, stdout, stderr)
	}
	ev := latestEvents(t, db)
	if ev[len(ev)-1] != "down" {
		t.Fatalf("events after down: %v", ev)
	}
	if st := tfStates(t, tf.WorkRoot(db)); len(st) != 0 {
		t.Fatalf("state left after down: %v", st)
	}
}

func eventsIfReadable(db string) []string {
	s, err := results.OpenReadOnly(context.Background(), db)
	if err != nil {
		return nil
	}
	defer s.Close()
	es, err := s.InfraEvents(context.Background())
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Event)
	}
	return out
}
