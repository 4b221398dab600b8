package gateway

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/xp-bench/xp/infra/pki"
	"github.com/xp-bench/xp/planner"
)

// SASL credentials of the test clusters.
const (
	saslUser = "xp-test"
	saslPass = "xp-test-secret"
)

// testPKI is one CA with every certificate the tests use.
type testPKI struct {
	ca                    *pki.Authority
	brokerCert, brokerKey string
	gwCert, gwKey         string
	clientCert, clientKey string
}

var (
	pkiOnce sync.Once
	pkiVal  *testPKI
	pkiErr  error
	pkiDir  string
)

// sharedPKI issues the certificates once per test binary.
func sharedPKI(t testing.TB) *testPKI {
	t.Helper()
	pkiOnce.Do(func() {
		pkiDir, pkiErr = os.MkdirTemp("", "xp-gateway-pki-*")
		if pkiErr != nil {
			return
		}
		p := &testPKI{}
		if p.ca, pkiErr = pki.New(pkiDir); pkiErr != nil {
			return
		}
		if p.brokerCert, p.brokerKey, pkiErr = p.ca.Server("broker"); pkiErr != nil {
			return
		}
		if p.gwCert, p.gwKey, pkiErr = p.ca.Gateway("gateway"); pkiErr != nil {
			return
		}
		if p.clientCert, p.clientKey, pkiErr = p.ca.Client("client"); pkiErr != nil {
			return
		}
		pkiVal = p
	})
	if pkiErr != nil {
		t.Fatalf("pki: %v", pkiErr)
	}
	return pkiVal
}

// HelperEnv makes the test binary a gateway process (the benchmarks read
// its CPU time from its own getrusage via /metrics): the value is a config
// file; it prints one JSON line with bootstrap and metrics and serves until
// stdin closes.
const HelperEnv = "XP_GATEWAY_BENCH_HELPER"

func TestMain(m *testing.M) {
	if path := os.Getenv(HelperEnv); path != "" {
		os.Exit(runHelper(path))
	}
	code := m.Run()
	if pkiDir != "" {
		os.RemoveAll(pkiDir)
	}
	os.Exit(code)
}

// testTopics exist on every test cluster, three partitions each.
var testTopics = []string{"roundtrip", "compressed", "group", "kcat", "python", "faults"}

func runHelper(path string) int {
	cfg, err := LoadConfig(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	g, err := Start(context.Background(), cfg, WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// XP_GATEWAY_CPUPROFILE writes the helper's CPU profile, to see where
	// a benchmark's gateway time goes.
	if out := os.Getenv("XP_GATEWAY_CPUPROFILE"); out != "" {
		if f, err := os.Create(out); err == nil {
			_ = pprof.StartCPUProfile(f)
			defer func() { pprof.StopCPUProfile(); f.Close() }()
		}
	}
	b, _ := json.Marshal(map[string]string{"bootstrap": g.Bootstrap(), "metrics": g.MetricsURL()})
	fmt.Printf("%s\n", b)
	_, _ = io.Copy(io.Discard, os.Stdin)
	g.Close()
	return 0
}

// upstreamSpec describes a kfake cluster behind the gateway.
type upstreamSpec struct {
	brokers   int
	transport string // plaintext, tls, mtls
	sasl      bool
}

// startUpstream starts a kfake cluster; the cluster is closed with the test.
func startUpstream(t testing.TB, s upstreamSpec, extra ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	opts := []kfake.Opt{kfake.NumBrokers(max(s.brokers, 1)), kfake.SeedTopics(3, testTopics...)}
	p := sharedPKI(t)
	switch s.transport {
	case planner.SecurityTLS, planner.SecurityMTLS:
		cfg, err := p.ca.ServerTLS(p.brokerCert, p.brokerKey, s.transport == planner.SecurityMTLS)
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, kfake.TLS(cfg))
	}
	if s.sasl {
		opts = append(opts, kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-256", saslUser, saslPass), kfake.Superuser("PLAIN", saslUser, saslPass))
	}
	opts = append(opts, extra...)
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// gatewayConfig is a config in front of kf with the given client transport;
// the upstream transport follows the cluster's.
func gatewayConfig(t testing.TB, kf *kfake.Cluster, client, upstream string) *Config {
	t.Helper()
	p := sharedPKI(t)
	zero := 0
	cfg := &Config{
		Listen:   Listen{Host: "127.0.0.1", BootstrapPort: &zero, NodePortBase: &zero},
		Client:   Client{Transport: client},
		Upstream: Upstream{Bootstrap: kf.ListenAddrs(), Transport: upstream},
		Metrics:  Metrics{Listen: "127.0.0.1:0"},
	}
	if client != planner.SecurityPlaintext {
		cfg.Client.Cert, cfg.Client.Key = p.gwCert, p.gwKey
	}
	if client == planner.SecurityMTLS {
		cfg.Client.CA = p.ca.CAPath()
	}
	if upstream != planner.SecurityPlaintext {
		cfg.Upstream.CA = p.ca.CAPath()
	}
	if upstream == planner.SecurityMTLS {
		cfg.Upstream.Cert, cfg.Upstream.Key = p.gwCert, p.gwKey
	}
	return cfg
}

// startGateway starts a gateway closed with the test; its log goes to the
// test log.
func startGateway(t testing.TB, cfg *Config) *Gateway {
	t.Helper()
	g, err := Start(context.Background(), cfg, WithLogger(slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// clientTLS is what a client of the given transport presents.
func clientTLS(t testing.TB, transport string) *tls.Config {
	t.Helper()
	p := sharedPKI(t)
	cert, key := "", ""
	if transport == planner.SecurityMTLS {
		cert, key = p.clientCert, p.clientKey
	}
	cfg, err := p.ca.ClientTLS(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// franzOpts connects a franz-go client with the transport's security.
func franzOpts(t testing.TB, bootstrap []string, transport string) []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(bootstrap...), kgo.RetryTimeout(20 * time.Second), kgo.DialTimeout(5 * time.Second)}
	if transport != planner.SecurityPlaintext {
		opts = append(opts, kgo.DialTLSConfig(clientTLS(t, transport)))
	}
	if transport == planner.SecuritySASLSSL {
		opts = append(opts, kgo.SASL(scram.Auth{User: saslUser, Pass: saslPass}.AsSha256Mechanism()))
	}
	return opts
}

// writeFile writes a 0600 file in dir.
func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// poll calls cond until it is true or the deadline passes.
func poll(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// httpGet returns the body of a 200 answer.
func httpGet(t testing.TB, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(b)
}
