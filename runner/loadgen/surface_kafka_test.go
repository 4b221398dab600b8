package loadgen

import (
	"bytes"
	"context"
	"maps"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/internal/disttest"
	"github.com/xp-bench/xp/internal/kafkatest"
	"github.com/xp-bench/xp/planner"
)

// TestSecuritySurfaceOnKafka runs the security surface on one Apache
// Kafka 3.9 broker: every SASL mechanism xp serves authenticates, and xp's
// load generator and kcat (librdkafka, an independent client) each
// produce and consume with it; TLS 1.2 narrowed to each cipher is what
// the connections negotiated; connection churn makes the handshakes it
// should.
func TestSecuritySurfaceOnKafka(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatal("kcat is required (apt-get install kcat)")
	}
	c := kafkatest.Start(t, kafkatest.Options{Major: 3})
	saslProps, err := kafkaconf.ReadClientConfig(c.Modes()[planner.SecuritySASLSSL].ClientConfig)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := kafkaconf.ReadClientConfig(c.Modes()[planner.SecurityPlaintext].ClientConfig)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := kafkaconf.ClientOpts(admin)
	if err != nil {
		t.Fatal(err)
	}
	adminCl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer adminCl.Close()
	for _, mech := range []string{planner.SASLScramSHA512, planner.SASLScramSHA256, planner.SASLPlain} {
		t.Run(mech, func(t *testing.T) {
			cfg := quick(saslProps)
			cfg.SASLMechanism = mech
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Healthy || res.Consumed != res.Published || res.Connections.SASLMechanism != planner.KafkaSASLMechanism(mech) {
				t.Fatalf("healthy %v %v, published %d consumed %d, connections %+v", res.Healthy, res.Reasons, res.Published, res.Consumed, res.Connections)
			}
			// kcat with the same mechanism, from xp's client config.
			props := maps.Clone(saslProps)
			props[kafkaconf.SASLMechanism] = planner.KafkaSASLMechanism(mech)
			file := filepath.Join(t.TempDir(), "kcat.properties")
			if err := kafkaconf.WriteClientConfig(file, props); err != nil {
				t.Fatal(err)
			}
			topic := "kcat-" + mech
			if _, err := kadm.NewClient(adminCl).CreateTopic(context.Background(), 1, -1, nil, topic); err != nil {
				t.Fatal(err)
			}
			run := func(stdin string, args ...string) string {
				t.Helper()
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				cmd := exec.CommandContext(ctx, kcat, append([]string{"-F", file}, args...)...)
				var out, errb bytes.Buffer
				cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &out, &errb
				if err := cmd.Run(); err != nil {
					t.Fatalf("kcat %v: %v\n%s", args, err, errb.String())
				}
				return out.String()
			}
			run("record-"+mech+"\n", "-P", "-t", topic)
			if got := run("", "-C", "-t", topic, "-o", "beginning", "-c", "1", "-e", "-f", "%s"); got != "record-"+mech {
				t.Errorf("kcat read %q over %s, want the record it wrote", got, mech)
			}
		})
	}
	tlsProps, err := kafkaconf.ReadClientConfig(c.Modes()[planner.SecurityTLS].ClientConfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ cipher, want string }{
		{planner.TLSCipherAES128GCM, "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"},
		{planner.TLSCipherAES256GCM, "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"},
		{planner.TLSCipherChaCha20, "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"},
	} {
		t.Run("1.2 "+tc.cipher, func(t *testing.T) {
			cfg := quick(tlsProps)
			cfg.Duration, cfg.TLSVersion, cfg.TLSCipher = time.Second, planner.TLSVersion12, tc.cipher
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Healthy || res.Connections.TLSVersion != "TLS 1.2" || res.Connections.TLSCipher != tc.want {
				t.Fatalf("healthy %v %v, negotiated %+v, want TLS 1.2 %s", res.Healthy, res.Reasons, res.Connections, tc.want)
			}
		})
	}
	t.Run("churn", func(t *testing.T) {
		cfg := quick(saslProps)
		cfg.ConnectionChurn = 1000
		res, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		cn := res.Connections
		if !res.Healthy || cn.Reconnects != 6 || cn.Handshakes < cn.Reconnects || cn.ReconnectMs.P50 <= 0 {
			t.Fatalf("healthy %v %v, connections %+v; want 6 reconnects (6000 records / 1000), each with a timed handshake", res.Healthy, res.Reasons, cn)
		}
	})
}

// TestTLS13SuiteOnKafka: a TLS 1.3 suite is the broker's choice (Go
// clients offer every one), so a broker narrowed to TLS 1.3 and
// ChaCha20-Poly1305 (ssl.enabled.protocols, ssl.cipher.suites) is what the
// connections negotiate and record, and a row asking for another suite
// fails rather than measuring the wrong one. The broker's certificate has
// an RSA 2048 key (tls_key), which the connections record too, the Java
// client's as well as the Go client's.
func TestTLS13SuiteOnKafka(t *testing.T) {
	choice := kafkaconf.TLSChoice{Version: planner.TLSVersion13, Cipher: planner.TLSCipherChaCha20}
	c := kafkatest.Start(t, kafkatest.Options{TLS: choice, TLSKey: planner.TLSKeyRSA2048})
	props, err := kafkaconf.ReadClientConfig(c.Modes()[planner.SecurityMTLS].ClientConfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg := quick(props)
	cfg.Duration, cfg.TLSVersion, cfg.TLSCipher = time.Second, choice.Version, choice.Cipher
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Healthy || res.Connections.TLSVersion != "TLS 1.3" || res.Connections.TLSCipher != "TLS_CHACHA20_POLY1305_SHA256" ||
		res.Connections.TLSKey != planner.TLSKeyRSA2048 {
		t.Fatalf("healthy %v %v, negotiated %+v", res.Healthy, res.Reasons, res.Connections)
	}
	java := cfg
	java.Client, java.JavaClient, java.CacheDir, java.Warmup = planner.ClientJava, disttest.JavaClient(t).Path, t.TempDir(), 0
	res, err = Run(context.Background(), java)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Healthy || res.Client.Name != planner.ClientJava || res.Connections.TLSVersion != "TLS 1.3" ||
		res.Connections.TLSCipher != "TLS_CHACHA20_POLY1305_SHA256" || res.Connections.TLSKey != planner.TLSKeyRSA2048 {
		t.Fatalf("java: healthy %v %v, negotiated %+v", res.Healthy, res.Reasons, res.Connections)
	}
	cfg.TLSCipher = planner.TLSCipherAES128GCM
	res, err = Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Healthy || !strings.Contains(strings.Join(res.ErrorSamples, "\n"), "tls_cipher is aes128-gcm") {
		t.Errorf("asking for AES-128-GCM of a ChaCha20 broker: healthy %v, errors %v", res.Healthy, res.ErrorSamples)
	}
}
