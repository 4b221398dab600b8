package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xp-bench/xp/internal/netnstest"
	"github.com/xp-bench/xp/results"
)

// xp infra down --target on a campaign whose group is up on namespace
// hosts: no xp ran there, so nothing is uploaded to any host, and a host
// whose sshd is gone is a warning naming it; the destroy goes on and
// down exits 0.
func TestInfraDownUploadsNothingAndWarnsOfUnreachableHost(t *testing.T) {
	n := netnstest.New(t, 4)
	dir := t.TempDir()
	plan := writeInfraPlan(t, dir, "hosts", "")
	target := hostsTarget(t, dir, n)
	db := filepath.Join(dir, "c.db")
	if code, stdout, stderr := runXP(t, "infra", "up", plan, "--target", target, "--db", db); code != exitOK {
		t.Fatalf("up: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// A campaign registered, as by an xp run killed before its teardown.
	ctx := context.Background()
	s, err := results.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Register(ctx, results.Campaign{Name: "infratest", Plan: []byte("{}\n"), Target: "x"}, nil); err != nil {
		t.Fatal(err)
	}
	s.Close()
	gone := n.Hosts[3]
	if err := gone.StopSSHD(); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runXP(t, "infra", "down", "--target", target, "--db", db)
	if code != exitOK || !strings.Contains(stdout, "destroyed") {
		t.Fatalf("down: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if want := "host client-3 (" + gone.SSHAddr() + "): "; !strings.Contains(stderr, "xp: warning: group ") || !strings.Contains(stderr, want) ||
		!strings.Contains(stderr, "is not reachable over SSH") {
		t.Errorf("down does not warn of %s:\n%s", want, stderr)
	}
	for _, h := range n.Hosts {
		if _, err := os.Stat(filepath.Join(h.Home(), "xp")); !os.IsNotExist(err) {
			t.Errorf("%s: down left a campaign directory (xp uploaded?): %v", h.Name, err)
		}
	}
	if ev := latestEvents(t, db); ev[len(ev)-1] != "down" {
		t.Errorf("events %v", ev)
	}
}
