package loadgen

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/planner"
)

// TestUnreachableBootstrap: a refused port and a listener that never
// answers both end in an error within 10 s.
func TestUnreachableBootstrap(t *testing.T) {
	t.Parallel() // mostly waiting; overlaps the other parallel tests
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close() // hold it open, say nothing
		}
	}()
	refused, _ := net.Listen("tcp", "127.0.0.1:0")
	refusedAddr := refused.Addr().String()
	refused.Close()

	for name, addr := range map[string]string{"refused": refusedAddr, "silent": silent.Addr().String()} {
		t.Run(name, func(t *testing.T) {
			cfg := quick(nil)
			cfg.Bootstrap = []string{addr}
			start := time.Now()
			res, err := Run(context.Background(), cfg)
			took := time.Since(start)
			if err == nil || res != nil {
				t.Fatalf("want an error, got result %+v", res)
			}
			if took > 10*time.Second {
				t.Fatalf("error after %v, want within 10s", took)
			}
			if !strings.Contains(err.Error(), "mode plaintext") || !strings.Contains(err.Error(), addr) {
				t.Fatalf("error %q does not name the mode and address", err)
			}
		})
	}
}

// TestSecurityFailuresNameModeAndCause: each security failure is an error
// naming the mode and its cause.
func TestSecurityFailuresNameModeAndCause(t *testing.T) {
	c := cluster(t)
	other := ownCluster(t)
	cases := []struct {
		name   string
		mode   string
		mutate func(p map[string]string)
		want   []string
	}{
		{"wrong CA", planner.SecurityTLS, func(p map[string]string) { p[kafkaconf.SSLCALocation] = other.Authority().CAPath() },
			[]string{"mode tls", "certificate signed by unknown authority"}},
		{"missing client certificate", planner.SecurityMTLS, func(p map[string]string) {
			delete(p, kafkaconf.SSLCertificate)
			delete(p, kafkaconf.SSLKey)
		}, []string{"certificate required"}},
		{"bad SASL password", planner.SecuritySASLSSL, func(p map[string]string) { p[kafkaconf.SASLPassword] = "not-the-password" },
			[]string{"mode sasl_ssl", "SASL_AUTHENTICATION_FAILED"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := props(t, c, tc.mode)
			tc.mutate(p)
			cfg := quick(p)
			start := time.Now()
			_, err := Run(context.Background(), cfg)
			if err == nil {
				t.Fatal("run succeeded")
			}
			if time.Since(start) > 10*time.Second {
				t.Fatalf("error after %v", time.Since(start))
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "not-the-password") {
				t.Fatal("error leaks the password")
			}
		})
	}
}

// TestBrokerGoneMidRun closes the cluster one second into the measurement:
// the run must end, unhealthy with reasons, within its own time bounds.
func TestBrokerGoneMidRun(t *testing.T) {
	c := ownCluster(t)
	cfg := quick(props(t, c, planner.SecurityPlaintext))
	cfg.DrainTimeout = 3 * time.Second
	cfg.OnPhase = func(p string, _ time.Time) {
		if p == "measure" {
			time.AfterFunc(time.Second, func() { c.Close() })
		}
	}
	start := time.Now()
	res, err := Run(context.Background(), cfg)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("want an unhealthy result, got error %v", err)
	}
	bound := cfg.Warmup + cfg.Duration + cfg.DrainTimeout + 3*closeTimeout
	if took > bound {
		t.Fatalf("run took %v, bound %v", took, bound)
	}
	if res.Healthy || len(res.Reasons) == 0 {
		t.Fatalf("healthy after the broker went away: %+v", res)
	}
	t.Logf("after %v: %s", took.Round(time.Millisecond), strings.Join(res.Reasons, "; "))
}

// TestInterrupted: cancelling the context ends the run promptly with the
// context's error and a partial result.
func TestInterrupted(t *testing.T) {
	c := cluster(t)
	cfg := quick(props(t, c, planner.SecurityPlaintext))
	cfg.Duration = 20 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	cfg.OnPhase = func(p string, _ time.Time) {
		if p == "measure" {
			time.AfterFunc(500*time.Millisecond, cancel)
		}
	}
	start := time.Now()
	res, err := Run(ctx, cfg)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if res == nil {
		t.Fatal("no partial result")
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("took %v after cancel", took)
	}
}

func TestConfigErrors(t *testing.T) {
	p := map[string]string{kafkaconf.BootstrapServers: "127.0.0.1:9"}
	cases := []struct {
		name   string
		mutate func(c *Config)
		want   string
	}{
		{"no bootstrap", func(c *Config) { c.ClientConfig = nil }, "no bootstrap"},
		{"acks", func(c *Config) { c.Acks = "2" }, "--acks"},
		{"concurrency with fixed rate", func(c *Config) { c.Concurrency = 4 }, "--concurrency applies to --rate max"},
		{"size", func(c *Config) { c.MessageSize = 8 }, "--message-size"},
		{"small json", func(c *Config) { c.MessageSize = 50; c.Encoding = EncodingJSON }, "too small"},
		{"encoding", func(c *Config) { c.Encoding = "xml" }, "--encoding"},
		{"compression", func(c *Config) { c.Compression = "brotli" }, "--compression"},
		{"isr above rf", func(c *Config) { c.ReplicationFactor = 1; c.MinInsyncReplicas = 2 }, "--min-insync-replicas"},
		{"duration", func(c *Config) { c.Duration = time.Millisecond }, "--duration"},
		{"client config", func(c *Config) { c.ClientConfig = map[string]string{"bootstrap.servers": "x:1", "ssl.ca.locaton": "x"} }, "ssl.ca.locaton"},
		{"rate per producer", func(c *Config) { c.Rate = 2; c.Producers = 3 }, "below 1 msg/s"},
		{"negative topics", func(c *Config) { c.Topics = -1 }, "--topics -1"},
		{"too many topics", func(c *Config) { c.Topics = 1001 }, "--topics 1001: want 1..1000"},
		{"too many partitions in all", func(c *Config) { c.Topics = 1000; c.Partitions = 101 }, "101000 partitions"},
		{"topic prefix too long", func(c *Config) { c.Topic = strings.Repeat("t", 248); c.Topics = 10 }, "use a shorter --topic"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := quick(p)
			tc.mutate(&cfg)
			_, err := Run(context.Background(), cfg)
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want ErrConfig containing %q", err, tc.want)
			}
		})
	}
}
