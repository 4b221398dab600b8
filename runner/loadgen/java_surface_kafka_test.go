package loadgen

import (
	"bytes"
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/internal/disttest"
	"github.com/xp-bench/xp/planner"
)

// javaSurface runs xp's Java load generator on a Kafka 4 broker with
// every sasl_mechanism (props by mechanism; "" is an mtls config) and
// every tls_version × tls_cipher, one row each: each run is healthy,
// every record produced is consumed, and what the connections negotiated
// (read back from the Java client's own SSL engines) is what the row
// asked for and is recorded as the Go client records it. The last row
// churns with two producers of 1000 records each: each reopens its
// KafkaProducer after its 1000th, so the window holds 2 reconnects, each
// timed in the reconnect histogram, with the new producers' connections
// counted. (The reconnects come after each producer's last record: on a
// loaded host a Java reconnect, SCRAM included, can take a second, and
// one in mid-run would put the records behind it past the window's grace
// and make the run unhealthy for a reason that is not churn's.)
//
// The OAUTHBEARER row runs 5 s, past the identity provider's 4 s tokens:
// the broker logs the Java client's re-authentications (reauths counts
// them so far).
func javaSurface(t *testing.T, ctx context.Context, props map[string]map[string]string, reauths func() int) {
	jc := disttest.JavaClient(t)
	cache := t.TempDir()
	for _, tc := range []struct {
		version, cipher, mech string
		churn, producers      int
		wantVersion, wantCS   string
	}{
		{planner.TLSVersion12, planner.TLSCipherAES128GCM, planner.SASLScramSHA256, 0, 1, "TLS 1.2", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"},
		{planner.TLSVersion12, planner.TLSCipherAES256GCM, planner.SASLPlain, 0, 1, "TLS 1.2", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"},
		{planner.TLSVersion12, planner.TLSCipherChaCha20, planner.SASLOAuthBearer, 0, 1, "TLS 1.2", "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"},
		{planner.TLSVersion13, planner.TLSCipherAES128GCM, planner.SASLGSSAPI, 0, 1, "TLS 1.3", "TLS_AES_128_GCM_SHA256"},
		{planner.TLSVersion13, planner.TLSCipherAES256GCM, "", 0, 1, "TLS 1.3", "TLS_AES_256_GCM_SHA384"},
		{planner.TLSVersion13, planner.TLSCipherChaCha20, planner.SASLScramSHA512, 1000, 2, "TLS 1.3", "TLS_CHACHA20_POLY1305_SHA256"},
	} {
		name := tc.version + " " + tc.cipher + " " + tc.mech
		if tc.mech == "" {
			name = tc.version + " " + tc.cipher + " mtls"
		}
		t.Run(strings.TrimSpace(name), func(t *testing.T) {
			cfg := quick(props[tc.mech])
			cfg.Client, cfg.JavaClient, cfg.CacheDir = planner.ClientJava, jc.Path, cache
			cfg.Rate, cfg.Warmup, cfg.Duration, cfg.Partitions, cfg.Producers = 1000, 0, 2*time.Second, 1, tc.producers
			cfg.TLSVersion, cfg.TLSCipher, cfg.SASLMechanism, cfg.ConnectionChurn = tc.version, tc.cipher, tc.mech, tc.churn
			if tc.mech == planner.SASLOAuthBearer {
				cfg.Duration = 5 * time.Second
			}
			before := reauths()
			res, err := Run(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if n := reauths() - before; tc.mech == planner.SASLOAuthBearer && n == 0 {
				t.Errorf("no re-authentication in the broker's log over a 5 s run with 4 s tokens")
			} else if tc.mech == planner.SASLOAuthBearer {
				t.Logf("%d re-authentications in the broker's log", n)
			}
			if !res.Healthy || res.Published != 1000*int64(cfg.Duration/time.Second) || res.Consumed != res.Published || res.Client.Name != planner.ClientJava {
				t.Fatalf("client %s healthy %v %v, published %d consumed %d, connections %+v", res.Client.Name, res.Healthy, res.Reasons, res.Published, res.Consumed, res.Connections)
			}
			cn := res.Connections
			if cn == nil || cn.TLSVersion != tc.wantVersion || cn.TLSCipher != tc.wantCS || cn.TLSKey != planner.TLSKeyECDSAP256 ||
				cn.SASLMechanism != planner.KafkaSASLMechanism(tc.mech) {
				t.Fatalf("connections %+v, want %s %s ecdsa-p256 %s", cn, tc.wantVersion, tc.wantCS, planner.KafkaSASLMechanism(tc.mech))
			}
			if tc.churn == 0 {
				if cn.Reconnects != 0 || cn.Handshakes != 0 {
					t.Errorf("without churn: %+v, want no reconnect and no handshake in the window", cn)
				}
				return
			}
			if cn.Churn != tc.churn || cn.Reconnects != 2 || cn.Handshakes < cn.Reconnects || cn.HandshakesPerS != float64(cn.Handshakes)/2 ||
				cn.ReconnectMs.P50 <= 0 || cn.Reconnect == "" {
				t.Errorf("connections %+v: want 2 reconnects of churn %d (2 producers × 1000 records / 1000), each timed, with their handshakes", cn, tc.churn)
			}
			t.Logf("churn %d: %d reconnects, %d handshakes, reconnect p50 %.1f ms", tc.churn, cn.Reconnects, cn.Handshakes, cn.ReconnectMs.P50)
		})
	}
}

// kcatRoundTrip has kcat (librdkafka) write a record to topic and read it
// back with props' SASL mechanism. For GSSAPI kcat logs in with kinit
// from the keytab (librdkafka's sasl.kerberos.kinit.cmd) into a ticket
// cache of the test's, against the KDC of props' krb5.conf (KRB5_CONFIG),
// through Cyrus SASL's GSSAPI module (libsasl2-modules-gssapi-mit).
func kcatRoundTrip(t *testing.T, ctx context.Context, props map[string]string, topic, mech string) {
	t.Helper()
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatal("kcat is required (apt-get install kcat)")
	}
	props = maps.Clone(props)
	env := os.Environ()
	if krb5 := props[kafkaconf.KerberosKrb5Conf]; krb5 != "" {
		delete(props, kafkaconf.KerberosKrb5Conf)
		env = append(env, "KRB5_CONFIG="+krb5, "KRB5CCNAME=FILE:"+filepath.Join(t.TempDir(), "ccache"))
	}
	file := filepath.Join(t.TempDir(), "kcat.properties")
	if err := kafkaconf.WriteClientConfig(file, props); err != nil {
		t.Fatal(err)
	}
	run := func(stdin string, args ...string) string {
		t.Helper()
		kctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		cmd := exec.CommandContext(kctx, kcat, append([]string{"-F", file}, args...)...)
		var out, errb bytes.Buffer
		cmd.Stdin, cmd.Stdout, cmd.Stderr, cmd.Env = strings.NewReader(stdin), &out, &errb, env
		if err := cmd.Run(); err != nil {
			t.Fatalf("kcat %v over %s: %v\n%s", args, mech, err, errb.String())
		}
		return out.String()
	}
	run("from-kcat\n", "-P", "-t", topic)
	if got := run("", "-C", "-t", topic, "-o", "-1", "-c", "1", "-e", "-f", "%s"); got != "from-kcat" {
		t.Errorf("kcat read %q over %s, want the record it wrote", got, mech)
	}
}
