package netnstest

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestHostsAndCleanup(t *testing.T) {
	var bridge string
	var namespaces []string
	var sleeper *exec.Cmd
	t.Run("two hosts", func(t *testing.T) {
		n := New(t, 2)
		bridge = n.Bridge
		if !strings.HasPrefix(n.Prefix, "198.18.") && !strings.HasPrefix(n.Prefix, "198.19.") {
			t.Fatalf("prefix %s outside 198.18.0.0/15", n.Prefix)
		}
		for _, h := range n.Hosts {
			namespaces = append(namespaces, h.NS)
		}
		h0, h1 := n.Hosts[0], n.Hosts[1]
		// Host 0 reaches host 1's sshd over the bridge, from inside its
		// namespace, where only its own address exists.
		out, err := h0.Command(context.Background(), "bash", "-c", "ip -4 -o addr show; exec 3<>/dev/tcp/"+h1.Addr+"/22 && head -c 7 <&3").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "SSH-2.0") || !strings.Contains(string(out), h0.Addr+"/24") ||
			strings.Contains(string(out), n.Gateway+"/") {
			t.Fatalf("host0 -> host1 sshd: %v\n%s", err, out)
		}
		// Names: the hosts file names every host; the resolver's only
		// name server is the namespace's loopback, so an unknown name is
		// refused there rather than sent to a server it cannot reach.
		out, err = h0.Command(context.Background(), "sh", "-c", "getent hosts "+h1.Addr+"; cat /etc/resolv.conf; getent hosts xp-no-such-host.invalid || echo unknown").CombinedOutput()
		if err != nil || !strings.Contains(string(out), h1.Addr+" ") || !strings.Contains(string(out), "host1") ||
			!strings.Contains(string(out), "nameserver 127.0.0.1") || !strings.HasSuffix(string(out), "unknown\n") {
			t.Fatalf("names in host0: %v\n%s", err, out)
		}
		sleeper = h1.Command(context.Background(), "sleep", "600")
		if err := sleeper.Start(); err != nil {
			t.Fatal(err)
		}
		// ip netns exec enters the namespace, then execs sleep.
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			procs, err := h1.Processes()
			if err == nil && contains(procs, "sleep") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("processes in %s: %v %v", h1.NS, procs, err)
			}
		}
		if err := h1.LinkDown(); err != nil {
			t.Fatal(err)
		}
		if c, err := net.DialTimeout("tcp", h1.SSHAddr(), 300*time.Millisecond); err == nil {
			c.Close()
			t.Fatal("host reachable with its link down")
		}
		if err := h1.LinkUp(); err != nil {
			t.Fatal(err)
		}
	})
	waited := make(chan error, 1)
	go func() { waited <- sleeper.Wait() }()
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Error("a process in a namespace outlived the cleanup")
	}
	out, _ := exec.Command("ip", "netns", "list").Output()
	for _, ns := range namespaces {
		if strings.Contains(string(out), ns) {
			t.Errorf("namespace %s left after cleanup", ns)
		}
	}
	for _, ns := range namespaces {
		if _, err := os.Stat("/etc/netns/" + ns); err == nil {
			t.Errorf("/etc/netns/%s left after cleanup", ns)
		}
	}
	if err := exec.Command("ip", "link", "show", bridge).Run(); err == nil {
		t.Errorf("bridge %s left after cleanup", bridge)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
