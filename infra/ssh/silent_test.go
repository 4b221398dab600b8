package ssh_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	xssh "golang.org/x/crypto/ssh"

	"github.com/xp-bench/xp/infra/ssh"
)

// A silent sshd (a port that accepts and never says a word, as sshd on a
// host still booting can) times out every handshake, and each timeout is
// retried like any transient dial failure: every round uses every try.
// Before, the socket's deadline and a close of it raced, and a close that
// won ended the dial with an error not retried.
func TestSilentServerUsesEveryTry(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepts atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepts.Add(1)
			defer c.Close() // held open, silent, until the test ends
		}
	}()
	dir := t.TempDir()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := xssh.MarshalPrivateKey(key, "")
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "id")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	const retries = 3
	pool, err := ssh.NewPool(ssh.Config{User: "bench", PrivateKey: keyFile, KnownHosts: filepath.Join(dir, "known_hosts"),
		DialTimeout: 50 * time.Millisecond, Retries: retries, Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	for round := range 10 {
		before := accepts.Load()
		_, err := pool.Client(context.Background(), ln.Addr().String())
		if err == nil {
			t.Fatal("a silent server gave a connection")
		}
		// The last connect is counted once the listener accepted it.
		deadline := time.Now().Add(5 * time.Second)
		for accepts.Load()-before < retries+1 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if n := accepts.Load() - before; n != retries+1 {
			t.Fatalf("round %d: %d connects, want %d (every try): %v", round, n, retries+1, err)
		}
		if msg := err.Error(); !strings.Contains(msg, "after 4 attempts") || !strings.Contains(msg, "handshake timed out after 50ms") {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	// A cancelled context ends the dial at once, without a retry.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(10*time.Millisecond, cancel)
	before := accepts.Load()
	if _, err := pool.Client(ctx, ln.Addr().String()); err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("cancelled dial: %v", err)
	}
	for deadline := time.Now().Add(5 * time.Second); accepts.Load() == before && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if n := accepts.Load() - before; n != 1 {
		t.Errorf("cancelled dial made %d connects, want 1", n)
	}
}
