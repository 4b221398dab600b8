package runner

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/xp-bench/xp/results"
)

// surfaceSpec is smallSpec comparing tls with the given levels, with
// extra fixed settings.
func surfaceSpec(name, levels, extra string) string {
	return `campaign: ` + name + `
seed: 7
treatment: security
baseline: tls
factors:
  security: [` + levels + `]
fixed:
  platform: local
  brokers: 1
  partitions: 2
  message_size: 256
  acks: all
  target_rate: 200
  warmup_s: 1
  duration_s: 2
  drain_timeout_s: 5
` + extra
}

// TestSurfaceRefusedByName: security surface settings the embedded
// cluster cannot serve are refused before anything starts, each naming
// the setting and the fix, and nothing is written.
func TestSurfaceRefusedByName(t *testing.T) {
	for _, tc := range []struct{ name, levels, extra, want string }{
		{"TLS 1.3 suite on Go", "tls, mtls", "  tls_version: \"1.3\"\n  tls_cipher: chacha20-poly1305\n",
			"tls_cipher chacha20-poly1305 with tls_version 1.3: the embedded cluster's TLS is Go's crypto/tls"},
		{"rsa key on the embedded cluster", "tls, mtls", "  tls_key: rsa2048\n",
			"tls_key rsa2048: the embedded cluster's listeners serve ecdsa-p256 certificates only"},
		{"authorizer", "tls, mtls", "  authorizer: acl\n  acls: 1000\n", "authorizer acl: the embedded cluster runs no authorizer"},
		{"oauthbearer", "sasl_ssl", "  sasl_mechanism: oauthbearer\n", "sasl_mechanism oauthbearer: the embedded cluster's SASL server speaks PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := surfaceSpec("sr", tc.levels, tc.extra)
			if tc.levels == "sasl_ssl" {
				spec = strings.Replace(spec, "baseline: tls", "baseline: sasl_ssl", 1)
			}
			dir := t.TempDir()
			plan := writePlan(t, dir, "sr", spec)
			before := dirSnapshot(t, dir)
			_, err := Run(context.Background(), Options{Platforms: localPlatforms, Plan: plan})
			if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want bad input with %q", err, tc.want)
			}
			if after := dirSnapshot(t, dir); !reflect.DeepEqual(before, after) {
				t.Fatal("refused plan changed files")
			}
		})
	}
}

// TestSurfaceRecorded: a row with tls_version, tls_cipher and
// connection_churn runs on the embedded cluster, and its attempt's
// environment and metrics record what the connections negotiated and how
// often they were made.
func TestSurfaceRecorded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	plan := writePlan(t, dir, "srr", surfaceSpec("srr", "tls, sasl_ssl", "  tls_version: \"1.2\"\n  tls_cipher: aes256-gcm\n  connection_churn: 100\n"))
	if _, err := Run(ctx, Options{Platforms: localPlatforms, Plan: plan, WarmupCap: noWarmup}); err != nil {
		t.Fatal(err)
	}
	s, err := results.OpenReadOnly(ctx, DefaultDB(plan))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	atts, err := s.Attempts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(atts) != 2 {
		t.Fatalf("%d attempts, want 2", len(atts))
	}
	for _, a := range atts {
		var env attemptEnv
		if err := json.Unmarshal(a.Environment, &env); err != nil {
			t.Fatal(err)
		}
		c := env.Connections
		if a.Outcome != results.OutcomeDone || c == nil || c.TLSVersion != "TLS 1.2" || c.TLSCipher != "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384" ||
			c.Churn != 100 || c.Reconnects != 4 || c.Handshakes < c.Reconnects {
			t.Errorf("%s: %s %v, connections %+v; want TLS 1.2 AES-256-GCM and 4 reconnects (400 records / 100)", env.Mode, a.Outcome, a.Reasons, c)
		}
		if env.Security == "sasl_ssl" && c != nil && c.SASLMechanism != "SCRAM-SHA-512" {
			t.Errorf("sasl_ssl recorded mechanism %q", c.SASLMechanism)
		}
		if m := a.Metrics; m["reconnects"] != 4 || m["handshakes_per_s"] <= 0 || m["reconnect_ms_p50"] <= 0 {
			t.Errorf("%s: metrics reconnects %v handshakes_per_s %v reconnect_ms_p50 %v", env.Mode, m["reconnects"], m["handshakes_per_s"], m["reconnect_ms_p50"])
		}
	}
}

// TestGatewaySurfaceRecorded: a gateway row whose client leg is narrowed
// to TLS 1.2 ChaCha20-Poly1305 with an RSA 2048 certificate, logging in
// with SCRAM-SHA-256 (relayed to the embedded cluster, which speaks it),
// runs healthy, and its attempt's environment records what its clients
// negotiated with the gateway.
func TestGatewaySurfaceRecorded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	spec := strings.Replace(surfaceSpec("gsr", "proxy", "  gateway_transport: sasl_ssl\n  sasl_mechanism: scram-sha-256\n"+
		"  tls_version: \"1.2\"\n  tls_cipher: chacha20-poly1305\n  tls_key: rsa2048\n"), "baseline: tls", "baseline: proxy", 1)
	plan := writePlan(t, dir, "gsr", spec)
	if _, err := Run(ctx, Options{Platforms: localPlatforms, Plan: plan, WarmupCap: noWarmup}); err != nil {
		t.Fatal(err)
	}
	s, err := results.OpenReadOnly(ctx, DefaultDB(plan))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	atts, err := s.Attempts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(atts) != 1 {
		t.Fatalf("%d attempts, want 1", len(atts))
	}
	for _, a := range atts {
		var env attemptEnv
		if err := json.Unmarshal(a.Environment, &env); err != nil {
			t.Fatal(err)
		}
		c := env.Connections
		if a.Outcome != results.OutcomeDone || c == nil || c.TLSVersion != "TLS 1.2" || c.TLSCipher != "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256" ||
			c.TLSKey != "rsa2048" || c.SASLMechanism != "SCRAM-SHA-256" {
			t.Errorf("%s: %s %v, connections %+v; want TLS 1.2, ChaCha20-Poly1305, rsa2048, SCRAM-SHA-256", env.Mode, a.Outcome, a.Reasons, c)
		}
	}
}
