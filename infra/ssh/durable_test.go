package ssh_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/xp-bench/xp/infra/ssh"
	"github.com/xp-bench/xp/internal/netnstest"
)

// A host key learnt under accept-new is on disk (known_hosts fsynced, and
// its directory when the file was new) before the connection is used.
// The test connects from a child process traced by strace.
func TestKnownHostsReachTheDisk(t *testing.T) {
	if addr := os.Getenv("XP_KNOWN_HOSTS_CHILD"); addr != "" {
		p, err := ssh.NewPool(ssh.Config{User: os.Getenv("XP_KNOWN_HOSTS_USER"), PrivateKey: os.Getenv("XP_KNOWN_HOSTS_KEY"),
			KnownHosts: os.Getenv("XP_KNOWN_HOSTS_FILE")})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		c, err := p.Client(context.Background(), addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Output(context.Background(), "true"); err != nil {
			t.Fatal(err)
		}
		return
	}
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Fatalf("this test needs strace (Debian package strace): %v", err)
	}
	n := netnstest.New(t, 1)
	dir := t.TempDir()
	known := filepath.Join(dir, "known_hosts")
	trace := filepath.Join(t.TempDir(), "trace")
	cmd := exec.Command(strace, "-f", "--seccomp-bpf", "-y", "-qq", "-e", "trace=fsync,write,openat", "-o", trace,
		os.Args[0], "-test.run=^TestKnownHostsReachTheDisk$")
	cmd.Env = append(os.Environ(), "XP_KNOWN_HOSTS_CHILD="+n.Hosts[0].SSHAddr(), "XP_KNOWN_HOSTS_USER="+n.User,
		"XP_KNOWN_HOSTS_KEY="+n.UserKey, "XP_KNOWN_HOSTS_FILE="+known)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, dir) && (strings.Contains(l, "fsync(") || strings.Contains(l, "write(")) {
			calls = append(calls, l)
		}
	}
	// Created and its directory synced; the key written, then synced.
	got := strings.Join(calls, "\n")
	re := regexp.MustCompile(`(?s)fsync\(\d+<` + regexp.QuoteMeta(dir) + `>\).*write\(\d+<` + regexp.QuoteMeta(known) + `>, "` +
		regexp.QuoteMeta(n.Hosts[0].Addr) + `[^\n]*\n[^\n]*fsync\(\d+<` + regexp.QuoteMeta(known) + `>\)`)
	if !re.MatchString(got) {
		t.Errorf("known_hosts not written durably; the calls:\n%s", got)
	}
}
