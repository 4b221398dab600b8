package gateway

import (
	"context"
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/planner"
)

// TestClientLegTLSChoice: the client leg's listener, not only the client,
// holds to client.tls_version and client.tls_cipher. A client offering
// everything negotiates what the leg allows (read back from its
// connection); one offering only another version or other suites is
// refused in the handshake; a Kafka client works over the narrowed leg.
func TestClientLegTLSChoice(t *testing.T) {
	kf := startUpstream(t, upstreamSpec{transport: planner.SecurityTLS})
	for _, tc := range []struct {
		name, version, cipher string
		wantVersion           uint16
		wantSuite             uint16 // 0: any
		refused               []*tls.Config
	}{
		{"1.2 chacha20", planner.TLSVersion12, planner.TLSCipherChaCha20, tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
			[]*tls.Config{{MinVersion: tls.VersionTLS13}, {MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}}}},
		{"1.2 aes256-gcm", planner.TLSVersion12, planner.TLSCipherAES256GCM, tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
			[]*tls.Config{{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256}}}},
		{"1.3", planner.TLSVersion13, planner.TLSDefault, tls.VersionTLS13, 0, []*tls.Config{{MaxVersion: tls.VersionTLS12}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := gatewayConfig(t, kf, planner.SecurityTLS, planner.SecurityTLS)
			cfg.Client.TLSVersion, cfg.Client.TLSCipher = tc.version, tc.cipher
			g := startGateway(t, cfg)
			dial := func(over *tls.Config) (tls.ConnectionState, error) {
				c := clientTLS(t, planner.SecurityTLS)
				c.MinVersion, c.MaxVersion, c.CipherSuites = max(c.MinVersion, over.MinVersion), over.MaxVersion, over.CipherSuites
				conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", g.Bootstrap(), c)
				if err != nil {
					return tls.ConnectionState{}, err
				}
				defer conn.Close()
				return conn.ConnectionState(), nil
			}
			cs, err := dial(&tls.Config{})
			if err != nil {
				t.Fatalf("a client offering every version and suite: %v", err)
			}
			if cs.Version != tc.wantVersion || tc.wantSuite != 0 && cs.CipherSuite != tc.wantSuite {
				t.Errorf("negotiated %s %s, want %s %s", tls.VersionName(cs.Version), tls.CipherSuiteName(cs.CipherSuite),
					tls.VersionName(tc.wantVersion), tls.CipherSuiteName(tc.wantSuite))
			}
			for _, over := range tc.refused {
				if cs, err := dial(over); err == nil {
					t.Errorf("a client offering versions %x..%x, suites %v: accepted with %s %s, want the handshake refused",
						over.MinVersion, over.MaxVersion, over.CipherSuites, tls.VersionName(cs.Version), tls.CipherSuiteName(cs.CipherSuite))
				}
			}
			cl, err := kgo.NewClient(franzOpts(t, []string{g.Bootstrap()}, planner.SecurityTLS)...)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "roundtrip", Value: []byte("narrowed")}).FirstErr(); err != nil {
				t.Errorf("produce over the narrowed leg: %v", err)
			}
		})
	}
}
