package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/xp-bench/xp/infra/local"
)

// lockedBuffer is a bytes.Buffer safe to read while a command writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestClusterLocalJSONServesUntilSignal(t *testing.T) {
	st, _, _ := testState()
	out := new(lockedBuffer)
	st.stdout = out
	sig := make(chan os.Signal, 2)
	st.signals = func() (<-chan os.Signal, func()) { return sig, func() {} }
	dir := t.TempDir()
	done := make(chan int, 1)
	go func() { done <- execute(st, []string{"cluster", "local", "--brokers", "2", "--dir", dir, "--json"}) }()

	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), "\n") {
		if time.Now().After(deadline) {
			t.Fatal("no JSON line within 20s")
		}
		select {
		case code := <-done:
			t.Fatalf("exited %d before serving", code)
		case <-time.After(20 * time.Millisecond):
		}
	}
	var got struct {
		Dir   string `json:"dir"`
		Modes map[string]struct {
			Bootstrap    string `json:"bootstrap"`
			ClientConfig string `json:"client_config"`
			Upstream     *struct {
				Bootstrap    string `json:"bootstrap"`
				ClientConfig string `json:"client_config"`
			} `json:"upstream"`
			Crypto *struct {
				Requested string `json:"requested"`
			} `json:"crypto"`
		} `json:"modes"`
	}
	if err := json.Unmarshal([]byte(out.String()), &got); err != nil {
		t.Fatalf("stdout %q: %v", out.String(), err)
	}
	if got.Dir != dir {
		t.Errorf("dir %q, want %q", got.Dir, dir)
	}
	if b, err := os.ReadFile(filepath.Join(dir, local.ClusterFile)); err != nil || string(b) != out.String() {
		t.Errorf("%s: %v\n%s\nwant the --json line\n%s", local.ClusterFile, err, b, out.String())
	}
	for _, m := range []string{"proxy", "encrypt", "field_encrypt", "field_encrypt.fpe", "proxy.fast", "encrypt.fast", "field_encrypt.fast", "field_encrypt.fpe.fast"} {
		mode, ok := got.Modes[m]
		if !ok {
			t.Errorf("gateway mode %s missing", m)
			continue
		}
		if wantCrypto := strings.TrimPrefix(filepath.Ext(m), "."); mode.Crypto == nil ||
			(wantCrypto == "fast") != (mode.Crypto.Requested == "fast") {
			t.Errorf("%s: crypto %+v", m, mode.Crypto)
		}
		if mode.Upstream == nil || mode.Upstream.Bootstrap != got.Modes["tls"].Bootstrap || mode.Upstream.ClientConfig != got.Modes["tls"].ClientConfig {
			t.Errorf("%s upstream %+v, want the tls mode %+v", m, mode.Upstream, got.Modes["tls"])
		}
		cmd := exec.Command("kcat", "-F", mode.ClientConfig, "-L", "-m", "10")
		if b, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(b), "2 brokers") || !strings.Contains(string(b), strings.Split(mode.Bootstrap, ",")[0]) {
			t.Errorf("kcat -L through the %s gateway: %v\n%s", m, err, b)
		}
	}
	for _, m := range []string{"plaintext", "tls", "mtls", "sasl_ssl"} {
		mode, ok := got.Modes[m]
		if !ok {
			t.Errorf("mode %s missing", m)
			continue
		}
		if len(strings.Split(mode.Bootstrap, ",")) != 2 {
			t.Errorf("%s bootstrap %q: want 2 brokers", m, mode.Bootstrap)
		}
		// The file works unchanged with kcat (metadata listing).
		cmd := exec.Command("kcat", "-F", mode.ClientConfig, "-L", "-m", "10")
		if b, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(b), "2 brokers") {
			t.Errorf("kcat -L on %s: %v\n%s", m, err, b)
		}
	}
	sig <- syscall.SIGTERM
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d after SIGTERM, want 0", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("did not stop within 10s of SIGTERM")
	}
}

func TestClusterLocalBadFlags(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"zero brokers", []string{"cluster", "local", "--brokers", "0"}, "--brokers 0"},
		{"ten brokers", []string{"cluster", "local", "--brokers", "10"}, "--brokers 10"},
		{"negative retention", []string{"cluster", "local", "--retention", "-5s"}, "--retention -5s"},
		{"unknown flag", []string{"cluster", "local", "--nope"}, "unknown flag"},
		{"extra argument", []string{"cluster", "local", "x"}, "unknown command"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runXP(t, tc.args...)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d (stderr %q)", code, exitUsage, stderr)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Fatalf("stderr %q does not contain %q", stderr, tc.want)
			}
		})
	}
}
