package loadgen

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/planner"
)

// TestConnectionChurn: with connection_churn N each producer reopens its
// client after every N records, so a 3 s window at 2000 msg/s holds
// 6000/N reconnects, each with at least one handshake timed in the
// reconnect histogram; the run stays healthy and loses no record.
func TestConnectionChurn(t *testing.T) {
	c := cluster(t)
	for _, mode := range []string{planner.SecurityPlaintext, planner.SecuritySASLSSL} {
		t.Run(mode, func(t *testing.T) {
			cfg := quick(props(t, c, mode))
			cfg.ConnectionChurn = 500
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Healthy || res.Published != 6000 || res.Consumed != 6000 {
				t.Fatalf("healthy %v %v, published %d consumed %d", res.Healthy, res.Reasons, res.Published, res.Consumed)
			}
			cn := res.Connections
			if cn == nil || cn.Churn != 500 || cn.Reconnects != 12 {
				t.Fatalf("connections %+v, want 12 reconnects of churn 500", cn)
			}
			if cn.Handshakes < cn.Reconnects || cn.HandshakesPerS != float64(cn.Handshakes)/3 || cn.ReconnectMs.P50 <= 0 || cn.Reconnect == "" {
				t.Errorf("handshakes %d (%v/s), reconnect %+v", cn.Handshakes, cn.HandshakesPerS, cn.ReconnectMs)
			}
		})
	}
	t.Run("steady", func(t *testing.T) {
		res, err := Run(context.Background(), quick(props(t, c, planner.SecurityTLS)))
		if err != nil {
			t.Fatal(err)
		}
		if cn := res.Connections; cn == nil || cn.Reconnects != 0 || cn.Handshakes != 0 {
			t.Errorf("without churn: %+v, want no reconnect and no handshake in the window", cn)
		}
	})
}

// TestTLSNegotiated: the TLS a row asks for is what the connections
// negotiated, read back from them; a TLS 1.3 suite the Go server will not
// let the client choose is an error of the run, not a silent default.
func TestTLSNegotiated(t *testing.T) {
	c := cluster(t)
	for _, tc := range []struct {
		name, version, cipher string
		mode                  string
		wantVersion, wantCS   string
		wantErr               string
	}{
		{"1.2 aes128", planner.TLSVersion12, planner.TLSCipherAES128GCM, planner.SecurityTLS, "TLS 1.2", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", ""},
		{"1.2 aes256", planner.TLSVersion12, planner.TLSCipherAES256GCM, planner.SecurityMTLS, "TLS 1.2", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", ""},
		{"1.2 chacha20", planner.TLSVersion12, planner.TLSCipherChaCha20, planner.SecuritySASLSSL, "TLS 1.2", "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", ""},
		{"1.2", planner.TLSVersion12, "", planner.SecurityTLS, "TLS 1.2", "", ""},
		{"1.3", planner.TLSVersion13, "", planner.SecurityTLS, "TLS 1.3", "", ""},
		{"1.3 chacha20 on a Go server", planner.TLSVersion13, planner.TLSCipherChaCha20, planner.SecurityTLS, "TLS 1.3", "", "tls_cipher is chacha20-poly1305"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := quick(props(t, c, tc.mode))
			cfg.TLSVersion, cfg.TLSCipher = tc.version, tc.cipher
			if tc.wantErr != "" && cfg.TLSCipher == planner.TLSCipherChaCha20 {
				// Go prefers AES-GCM on AES hardware and ChaCha20 without it;
				// ask for the one it will not pick here.
				cfg.TLSCipher = planner.TLSCipherAES256GCM
				tc.wantErr = "tls_cipher is aes256-gcm"
			}
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			cn := res.Connections
			if cn == nil || cn.TLSVersion != tc.wantVersion || tc.wantCS != "" && cn.TLSCipher != tc.wantCS || cn.TLSKey != planner.TLSKeyECDSAP256 {
				t.Fatalf("negotiated %+v, want %s %s", cn, tc.wantVersion, tc.wantCS)
			}
			if tc.wantErr == "" {
				if !res.Healthy {
					t.Errorf("unhealthy: %v", res.Reasons)
				}
				return
			}
			if res.Healthy || !strings.Contains(strings.Join(res.ErrorSamples, "\n"), tc.wantErr) {
				t.Errorf("healthy %v, errors %v; want %q", res.Healthy, res.ErrorSamples, tc.wantErr)
			}
		})
	}
}

// TestSASLMechanism: the row's mechanism replaces the client config's and
// is the one recorded; one whose credentials the client config lacks is
// refused before anything connects.
func TestSASLMechanism(t *testing.T) {
	c := cluster(t)
	cfg := quick(props(t, c, planner.SecuritySASLSSL))
	cfg.SASLMechanism = planner.SASLPlain
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Healthy || res.Connections == nil || res.Connections.SASLMechanism != "PLAIN" {
		t.Fatalf("healthy %v %v, connections %+v", res.Healthy, res.Reasons, res.Connections)
	}
	cfg.SASLMechanism = planner.SASLGSSAPI
	// GSSAPI is spoken, but only with a keytab and krb5.conf in the
	// client config, which this one lacks: refused before connecting.
	if _, err := Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "GSSAPI needs sasl.kerberos.principal, sasl.kerberos.keytab and xp.kerberos.krb5.conf") {
		t.Errorf("gssapi: %v, want a refusal naming the Kerberos settings the client config lacks", err)
	}
}

// TestJavaConnections: the Java side's report becomes the Go path's
// Connections: JSSE's protocol under Go's name, the suite and key as
// reported, churn's counts and its reconnect histogram decoded and
// summarized; a session that is not what the row asked for is a
// departure worded as TLSChoice.Check words the Go client's.
func TestJavaConnections(t *testing.T) {
	h := NewHistogram()
	for _, us := range []int64{1000, 2000, 3000} {
		h.RecordValue(us)
	}
	enc, err := EncodeHistogram(h)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name           string
		choice         kafkaconf.TLSChoice
		sessions       []string
		wantVersion    string
		wantDepartures []string
	}{
		{"as asked", kafkaconf.TLSChoice{Version: planner.TLSVersion13, Cipher: planner.TLSCipherChaCha20},
			[]string{"TLSv1.3,TLS_CHACHA20_POLY1305_SHA256,rsa2048"}, "TLS 1.3", nil},
		{"another suite", kafkaconf.TLSChoice{Version: planner.TLSVersion13, Cipher: planner.TLSCipherChaCha20},
			[]string{"TLSv1.3,TLS_AES_128_GCM_SHA256,rsa2048"}, "TLS 1.3", []string{"negotiated TLS_AES_128_GCM_SHA256, but tls_cipher is chacha20-poly1305"}},
		{"another version", kafkaconf.TLSChoice{Version: planner.TLSVersion12},
			[]string{"TLSv1.3,TLS_AES_128_GCM_SHA256,rsa2048"}, "TLS 1.3", []string{"negotiated TLS 1.3, but tls_version is 1.2"}},
		{"plaintext", kafkaconf.TLSChoice{}, nil, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &run{cfg: Config{Duration: 2 * time.Second, ConnectionChurn: 1000}, saslMech: "SCRAM-SHA-512"}
			r.conns = newConnWatch(r, tc.choice)
			c, departures, err := r.externalConnections(&externalReport{TLSSessions: tc.sessions, Reconnects: 3, Handshakes: 6, Reconnect: string(enc)})
			if err != nil {
				t.Fatal(err)
			}
			if c.TLSVersion != tc.wantVersion || len(tc.sessions) > 0 && c.TLSKey != planner.TLSKeyRSA2048 || !slices.Equal(departures, tc.wantDepartures) {
				t.Errorf("connections %+v, departures %q; want %s and %q", c, departures, tc.wantVersion, tc.wantDepartures)
			}
			if c.SASLMechanism != "SCRAM-SHA-512" || c.Churn != 1000 || c.Reconnects != 3 || c.Handshakes != 6 || c.HandshakesPerS != 3 ||
				c.ReconnectMs.P50 != Summarize(h).P50 || c.Reconnect == "" {
				t.Errorf("connections %+v: want the report's counts and histogram", c)
			}
		})
	}
}
