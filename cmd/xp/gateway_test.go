package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestGatewayBadConfigIsUsageError(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no config flag", []string{"gateway"}, "--config FILE is required"},
		{"unknown key", []string{"gateway", "--config", write("unknown.yaml", "upstream:\n  bootstrap: [127.0.0.1:9092]\n  transprt: tls\n")}, `unknown.yaml:3: unknown key "transprt" in upstream`},
		{"missing certificate", []string{"gateway", "--config", write("cert.yaml", "client: {transport: tls, cert: gw.pem, key: gw-key.pem}\nupstream: {bootstrap: [127.0.0.1:9092]}\n")}, "client.cert: " + filepath.Join(dir, "gw.pem")},
		{"missing file", []string{"gateway", "--config", filepath.Join(dir, "absent.yaml")}, "absent.yaml: cannot read"},
		{"unknown key in the encrypt section", []string{"gateway", "--config", write("encrypt.yaml", "upstream: {bootstrap: [127.0.0.1:9092]}\nencrypt:\n  bogus: 1\n")}, "encrypt.yaml:3:"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runXP(t, tc.args...)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d (stderr %q)", code, exitUsage, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
			if strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, tc.want) {
				t.Fatalf("stderr %q, want one line containing %q", stderr, tc.want)
			}
		})
	}
}

// TestGatewayServesUntilSignal runs `xp gateway --json --ready-file` in-process in front
// of a kfake broker: it prints its addresses and writes them to the ready
// file (0600, with the crypto that runs), relays a produce, and exits 0 on
// the first signal.
func TestGatewayServesUntilSignal(t *testing.T) {
	kf, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer kf.Close()
	cfg := filepath.Join(t.TempDir(), "gateway.yaml")
	body := "listen: {bootstrap_port: 0, node_port_base: 0}\nupstream: {bootstrap: [" + kf.ListenAddrs()[0] + "]}\n"
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	st, _, _ := testState()
	stdout, stderr := &lockedBuffer{}, &lockedBuffer{}
	st.stdout, st.stderr = stdout, stderr
	sig := make(chan os.Signal, 2)
	st.signals = func() (<-chan os.Signal, func()) { return sig, func() {} }
	code := make(chan int, 1)
	ready := filepath.Join(filepath.Dir(cfg), "ready.json")
	go func() { code <- execute(st, []string{"gateway", "--config", cfg, "--json", "--ready-file", ready}) }()

	var addrs struct{ Bootstrap, Metrics string }
	deadline := time.Now().Add(10 * time.Second)
	for json.Unmarshal([]byte(stdout.String()), &addrs) != nil || addrs.Bootstrap == "" {
		if time.Now().After(deadline) {
			t.Fatalf("no address line; stdout %q stderr %q", stdout.String(), stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.HasPrefix(addrs.Metrics, "http://127.0.0.1:") {
		t.Errorf("metrics %q", addrs.Metrics)
	}
	// The ready file is written before the addresses are printed.
	var r GatewayReady
	b, err := os.ReadFile(ready)
	if err != nil || json.Unmarshal(b, &r) != nil || r.Bootstrap != addrs.Bootstrap || r.Metrics != addrs.Metrics || r.Crypto.Requested != "std" {
		t.Errorf("ready file %s (%v), want %+v with crypto std", b, err, addrs)
	}
	if fi, err := os.Stat(ready); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("ready file mode %v (%v), want 0600", fi, err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs.Bootstrap), kgo.DefaultProduceTopic("t"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("via xp gateway")}).FirstErr(); err != nil {
		t.Fatalf("produce through xp gateway: %v", err)
	}
	cl.Close()
	sig <- os.Interrupt
	select {
	case c := <-code:
		if c != exitOK {
			t.Fatalf("exit %d after the signal; stderr %s", c, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("xp gateway did not stop on the signal")
	}
}
