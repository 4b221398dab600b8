package ssh_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	xssh "golang.org/x/crypto/ssh"

	"github.com/xp-bench/xp/infra/ssh"
	"github.com/xp-bench/xp/internal/netnstest"
)

// syncBuf is a log writer tests can read while the pool writes.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newPool(t *testing.T, n *netnstest.Net, knownHosts string, policy ssh.HostKeyPolicy, log *syncBuf) *ssh.Pool {
	t.Helper()
	cfg := ssh.Config{User: n.User, PrivateKey: n.UserKey, KnownHosts: knownHosts, Policy: policy,
		DialTimeout: 5 * time.Second, Backoff: 50 * time.Millisecond}
	if log != nil {
		cfg.Log = log
	}
	p, err := ssh.NewPool(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func TestSSH(t *testing.T) {
	n := netnstest.New(t, 2)
	h0, h1 := n.Hosts[0], n.Hosts[1]
	dir := t.TempDir()
	known := filepath.Join(dir, "known_hosts")
	log := &syncBuf{}
	pool := newPool(t, n, known, ssh.AcceptNew, log)
	ctx := context.Background()

	t.Run("accept-new records the key on first contact", func(t *testing.T) {
		c, err := pool.Client(ctx, h0.SSHAddr())
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(known)
		if err != nil {
			t.Fatal(err)
		}
		want := strings.TrimSpace(string(xssh.MarshalAuthorizedKey(h0.HostKey)))
		if !strings.Contains(string(b), h0.Addr+" "+want) {
			t.Fatalf("known_hosts does not record %s's key:\n%s", h0.Addr, b)
		}
		st, _ := os.Stat(known)
		if st.Mode().Perm() != 0o600 {
			t.Errorf("known_hosts mode %v, want 0600", st.Mode().Perm())
		}
		c2, err := pool.Client(ctx, h0.Addr) // port 22 implied
		if err != nil {
			t.Fatal(err)
		}
		if c2 != c {
			t.Error("second Client call dialled again instead of reusing the connection")
		}
	})

	t.Run("commands run on the host, output streamed", func(t *testing.T) {
		c, err := pool.Client(ctx, h1.SSHAddr())
		if err != nil {
			t.Fatal(err)
		}
		out, err := c.Output(ctx, "ip -4 -o addr show dev eth0")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(out), " "+h1.Addr+"/") {
			t.Fatalf("command did not run in %s's namespace: %s", h1.Name, out)
		}
		stream := &syncBuf{}
		if err := c.Run(ctx, "echo one; echo two >&2", ssh.RunOpts{Stdout: stream, Stderr: stream}); err != nil {
			t.Fatal(err)
		}
		if got := stream.String(); !strings.Contains(got, "one\n") || !strings.Contains(got, "two\n") {
			t.Fatalf("streamed output %q", got)
		}
		if err := c.Run(ctx, "echo to-the-log", ssh.RunOpts{}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(log.String(), "$ echo to-the-log\nto-the-log\n") {
			t.Fatalf("log lacks the command and its output:\n%s", log.String())
		}
	})

	t.Run("exit status and stderr in the error", func(t *testing.T) {
		c, _ := pool.Client(ctx, h0.SSHAddr())
		_, err := c.Output(ctx, "echo broken >&2; exit 3")
		var ee *ssh.ExitError
		if !errors.As(err, &ee) || ee.Status != 3 || ee.Stderr != "broken" {
			t.Fatalf("got %v, want exit status 3 with stderr", err)
		}
	})

	t.Run("a command past its deadline is stopped", func(t *testing.T) {
		c, _ := pool.Client(ctx, h0.SSHAddr())
		tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := c.Run(tctx, "sleep 30", ssh.RunOpts{})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v, want deadline exceeded", err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("Run returned after %v", d)
		}
	})

	t.Run("a cancelled command leaves the connection to the others", func(t *testing.T) {
		c, _ := pool.Client(ctx, h0.SSHAddr())
		for i := 0; i < 5; i++ {
			cctx, cancel := context.WithCancel(ctx)
			cancel() // at once: before the host could start it
			if err := c.Run(cctx, "sleep 30", ssh.RunOpts{}); !errors.Is(err, context.Canceled) {
				t.Fatalf("got %v, want canceled", err)
			}
		}
		if out, err := c.Output(ctx, "echo still"); err != nil || string(out) != "still\n" {
			t.Fatalf("after cancelled commands: %q %v", out, err)
		}
		if c2, _ := pool.Client(ctx, h0.SSHAddr()); c2 != c {
			t.Fatal("the connection was replaced")
		}
	})

	t.Run("upload verified by checksum, skipped when unchanged", func(t *testing.T) {
		c, _ := pool.Client(ctx, h0.SSHAddr())
		src := filepath.Join(dir, "payload")
		data := make([]byte, 3<<20+17)
		rand.Read(data)
		os.WriteFile(src, data, 0o600)
		dst := filepath.Join(h0.Dir(), "sub", "payload")
		copied, err := c.Upload(ctx, src, dst, 0o755)
		if err != nil || !copied {
			t.Fatalf("upload: copied=%v err=%v", copied, err)
		}
		sum := sha256.Sum256(data)
		got, err := c.RemoteSHA256(ctx, dst)
		if err != nil || got != hex.EncodeToString(sum[:]) {
			t.Fatalf("remote sha256 %q (%v), want %x", got, err, sum)
		}
		if out, _ := c.Output(ctx, "stat -c %a "+dst); strings.TrimSpace(string(out)) != "755" {
			t.Errorf("mode %s, want 755", out)
		}
		copied, err = c.Upload(ctx, src, dst, 0o755)
		if err != nil || copied {
			t.Fatalf("second upload of the same bytes: copied=%v err=%v, want skipped", copied, err)
		}
		if _, err := os.Stat(dst + ".xp-upload"); !os.IsNotExist(err) {
			t.Errorf("temporary file left behind: %v", err)
		}
	})

	t.Run("secrets written 0600 over stdin", func(t *testing.T) {
		c, _ := pool.Client(ctx, h0.SSHAddr())
		dst := filepath.Join(h0.Dir(), "secret.properties")
		secret := "sasl.password=s3cr3t-" + hex.EncodeToString([]byte(t.Name()))
		before := log.String()
		if err := c.WriteFile(ctx, dst, []byte(secret), 0o600); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(dst)
		st, _ := os.Stat(dst)
		if string(b) != secret || st.Mode().Perm() != 0o600 {
			t.Fatalf("content %q mode %v", b, st.Mode().Perm())
		}
		if strings.Contains(log.String()[len(before):], "s3cr3t") {
			t.Fatal("the secret reached the log")
		}
	})

	t.Run("strict refuses an unknown host", func(t *testing.T) {
		p := newPool(t, n, filepath.Join(t.TempDir(), "known_hosts"), ssh.Strict, nil)
		_, err := p.Client(ctx, h1.SSHAddr())
		var he *ssh.HostKeyError
		if !errors.As(err, &he) || he.Changed || !strings.Contains(err.Error(), "is not in") || !strings.Contains(err.Error(), "strict") {
			t.Fatalf("got %v, want an unknown-host refusal naming the policy", err)
		}
	})

	t.Run("strict accepts a recorded host", func(t *testing.T) {
		kh := filepath.Join(t.TempDir(), "known_hosts")
		os.WriteFile(kh, []byte(n.KnownHostsLines()), 0o600)
		p := newPool(t, n, kh, ssh.Strict, nil)
		if _, err := p.Client(ctx, h1.SSHAddr()); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a refused login is not retried", func(t *testing.T) {
		// A key the hosts do not accept.
		_, other := filepath.Split(t.TempDir())
		keyFile := filepath.Join(t.TempDir(), "other")
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", other, "-f", keyFile).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v: %s", err, out)
		}
		p, err := ssh.NewPool(ssh.Config{User: n.User, PrivateKey: keyFile, KnownHosts: known, Backoff: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		_, err = p.Client(ctx, h0.SSHAddr())
		if err == nil || !strings.Contains(err.Error(), "unable to authenticate") || strings.Contains(err.Error(), "attempts") {
			t.Fatalf("got %v, want one authentication failure", err)
		}
	})

	t.Run("agent authentication", func(t *testing.T) {
		sock := filepath.Join(t.TempDir(), "agent.sock")
		agentCmd := exec.Command("ssh-agent", "-D", "-a", sock)
		if err := agentCmd.Start(); err != nil {
			t.Fatalf("ssh-agent: %v", err)
		}
		defer func() { agentCmd.Process.Kill(); agentCmd.Wait() }()
		waitFor(t, func() bool { _, err := os.Stat(sock); return err == nil }, "ssh-agent socket")
		add := exec.Command("ssh-add", n.UserKey)
		add.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
		if out, err := add.CombinedOutput(); err != nil {
			t.Fatalf("ssh-add: %v: %s", err, out)
		}
		p, err := ssh.NewPool(ssh.Config{User: n.User, AgentSocket: sock, KnownHosts: known})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		c, err := p.Client(ctx, h0.SSHAddr())
		if err != nil {
			t.Fatal(err)
		}
		if out, err := c.Output(ctx, "echo agent-ok"); err != nil || string(out) != "agent-ok\n" {
			t.Fatalf("%q %v", out, err)
		}
	})

	t.Run("connection refused while booting is retried", func(t *testing.T) {
		pool.Forget(h1.SSHAddr())
		if err := h1.StopSSHD(); err != nil {
			t.Fatal(err)
		}
		retryLog := &syncBuf{}
		p := newPool(t, n, known, ssh.AcceptNew, retryLog)
		done := make(chan error, 1)
		go func() {
			c, err := p.Client(ctx, h1.SSHAddr())
			if err == nil {
				_, err = c.Output(ctx, "true")
			}
			done <- err
		}()
		waitFor(t, func() bool { return strings.Contains(retryLog.String(), "retrying") }, "a retry after connection refused")
		if err := h1.StartSSHD(); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("dial did not succeed after sshd came up: %v\nlog:\n%s", err, retryLog.String())
		}
	})

	t.Run("retries are bounded", func(t *testing.T) {
		p, err := ssh.NewPool(ssh.Config{User: n.User, PrivateKey: n.UserKey, KnownHosts: known,
			Retries: 2, Backoff: 10 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		// Nothing listens on this port of the host.
		_, err = p.Client(ctx, net.JoinHostPort(h0.Addr, "2"))
		if err == nil || !strings.Contains(err.Error(), "after 3 attempts") || !strings.Contains(err.Error(), "refused") {
			t.Fatalf("got %v, want connection refused after 3 attempts", err)
		}
	})

	t.Run("Output is bounded", func(t *testing.T) {
		const limit = 1 << 20
		p, err := ssh.NewPool(ssh.Config{User: n.User, PrivateKey: n.UserKey, KnownHosts: known, MaxOutput: limit})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		c, err := p.Client(ctx, h1.SSHAddr())
		if err != nil {
			t.Fatal(err)
		}
		if out, err := c.Output(ctx, fmt.Sprintf("head -c %d /dev/zero", limit)); err != nil || len(out) != limit {
			t.Fatalf("output at the limit: %d bytes, %v", len(out), err)
		}
		// yes never ends by itself: the call returns because the command
		// is stopped, long before the pool's 5-minute command timeout.
		start := time.Now()
		out, err := c.Output(ctx, "yes")
		var le *ssh.OutputLimitError
		if !errors.As(err, &le) || out != nil || time.Since(start) > time.Minute {
			t.Fatalf("endless output: %d bytes, %v after %v", len(out), err, time.Since(start))
		}
		for _, w := range []string{`"yes" wrote more than 1048576 bytes`, h1.SSHAddr(), "stopped"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error lacks %q: %v", w, err)
			}
		}
		if out, err := c.Output(ctx, "pgrep -x yes || echo none"); err != nil || string(out) != "none\n" {
			t.Errorf("yes still runs on the host: %q %v", out, err)
		}
	})

	t.Run("a changed host key is refused", func(t *testing.T) {
		pool.Forget(h0.SSHAddr())
		if err := h0.ChangeHostKey(); err != nil {
			t.Fatal(err)
		}
		_, err := pool.Client(ctx, h0.SSHAddr())
		var he *ssh.HostKeyError
		if !errors.As(err, &he) || !he.Changed {
			t.Fatalf("got %v, want a changed host key refusal", err)
		}
		for _, want := range []string{"CHANGED", known + ":", xssh.FingerprintSHA256(h0.HostKey)} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("message lacks %q: %v", want, err)
			}
		}
		if strings.Contains(err.Error(), "attempts") {
			t.Errorf("a changed key was retried: %v", err)
		}
	})
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestHostThatStopsAnswering: a host whose link goes down after the
// connection was made cannot hold a command past its deadline, and the
// next Client call dials anew once the host is back.
func TestHostThatStopsAnswering(t *testing.T) {
	n := netnstest.New(t, 1)
	h := n.Hosts[0]
	pool := newPool(t, n, filepath.Join(t.TempDir(), "known_hosts"), ssh.AcceptNew, nil)
	ctx := context.Background()
	c, err := pool.Client(ctx, h.SSHAddr())
	if err != nil {
		t.Fatal(err)
	}
	if err := h.LinkDown(); err != nil {
		t.Fatal(err)
	}
	tctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = c.Run(tctx, "true", ssh.RunOpts{})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 10*time.Second {
		t.Fatalf("Run on a host that does not answer: %v after %v", err, time.Since(start))
	}
	if err := h.LinkUp(); err != nil {
		t.Fatal(err)
	}
	c2, err := pool.Client(ctx, h.SSHAddr())
	if err != nil {
		t.Fatal(err)
	}
	if c2 == c {
		t.Fatal("the dropped connection was reused")
	}
	if out, err := c2.Output(ctx, "echo back"); err != nil || string(out) != "back\n" {
		t.Fatalf("%q %v", out, err)
	}
}

// TestKeepaliveDropsDeadLink: a command running on a host whose link goes
// down fails once the host leaves keepalives unanswered for
// KeepaliveInterval × KeepaliveCountMax, long before the command's own
// deadline; with the link back the pool dials a new connection.
func TestKeepaliveDropsDeadLink(t *testing.T) {
	n := netnstest.New(t, 1)
	h := n.Hosts[0]
	log := &syncBuf{}
	pool, err := ssh.NewPool(ssh.Config{User: n.User, PrivateKey: n.UserKey, KnownHosts: filepath.Join(t.TempDir(), "known_hosts"),
		DialTimeout: 5 * time.Second, Backoff: 50 * time.Millisecond, KeepaliveInterval: 200 * time.Millisecond, KeepaliveCountMax: 3, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	ctx := context.Background()
	c, err := pool.Client(ctx, h.SSHAddr())
	if err != nil {
		t.Fatal(err)
	}
	// Answered keepalives keep an idle connection: a command after several
	// intervals runs on the same one.
	time.Sleep(time.Second)
	if c2, err := pool.Client(ctx, h.SSHAddr()); err != nil || c2 != c {
		t.Fatalf("an idle connection with answered keepalives was replaced (%v)", err)
	}
	ran := make(chan error, 1)
	started := time.Now()
	go func() {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		ran <- c.Run(cctx, "echo started; sleep 50", ssh.RunOpts{Stdout: log, Stderr: log})
	}()
	waitFor(t, func() bool { return strings.Contains(log.String(), "started") }, "the command to start")
	if err := h.LinkDown(); err != nil {
		t.Fatal(err)
	}
	err = <-ran
	if err == nil || errors.Is(err, context.DeadlineExceeded) || time.Since(started) > 10*time.Second {
		t.Fatalf("a command on a dead link: %v after %v, want a closed connection within seconds", err, time.Since(started))
	}
	if !strings.Contains(log.String(), "no answer to keepalives") {
		t.Errorf("the log does not say why the connection closed:\n%s", log.String())
	}
	if err := h.LinkUp(); err != nil {
		t.Fatal(err)
	}
	c2, err := pool.Client(ctx, h.SSHAddr())
	if err != nil {
		t.Fatal(err)
	}
	if c2 == c {
		t.Fatal("the closed connection was reused")
	}
	if out, err := c2.Output(ctx, "echo back"); err != nil || string(out) != "back\n" {
		t.Fatalf("%q %v", out, err)
	}
}
