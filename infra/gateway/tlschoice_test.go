package gateway

import (
	"context"
	"crypto/tls"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/planner"
)

// pythonHandshake connects to argv[1] (host:port) with Python's ssl
// module and its default offer, trusting the CA in argv[2], and prints
// the version and suite negotiated.
const pythonHandshake = `import socket, ssl, sys
host, port = sys.argv[1].rsplit(":", 1)
ctx = ssl.create_default_context(cafile=sys.argv[2])
with socket.create_connection((host, int(port)), 5) as s:
    with ctx.wrap_socket(s, server_hostname=host) as t:
        print(t.version(), t.cipher()[0])
`

// TestClientLegTLSChoice: the client leg's listener, not only the client,
// holds to client.tls_version and client.tls_cipher. A client offering
// everything, Go's or Python's (OpenSSL), negotiates what the leg allows
// (read back from its connection); one offering only another version or
// other suites is refused in the handshake; a Kafka client works over
// the narrowed leg.
func TestClientLegTLSChoice(t *testing.T) {
	kf := startUpstream(t, upstreamSpec{transport: planner.SecurityTLS})
	for _, tc := range []struct {
		name, version, cipher string
		wantVersion           uint16
		wantSuite             uint16 // 0: any
		refused               []*tls.Config
		// wantPython is what Python's ssl module (OpenSSL, another TLS
		// stack) negotiates offering its defaults: version and, under
		// TLS 1.2, OpenSSL's name of the suite.
		wantPython string
	}{
		{"1.2 chacha20", planner.TLSVersion12, planner.TLSCipherChaCha20, tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
			[]*tls.Config{{MinVersion: tls.VersionTLS13}, {MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}}},
			"TLSv1.2 ECDHE-ECDSA-CHACHA20-POLY1305"},
		{"1.2 aes256-gcm", planner.TLSVersion12, planner.TLSCipherAES256GCM, tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
			[]*tls.Config{{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256}}},
			"TLSv1.2 ECDHE-ECDSA-AES256-GCM-SHA384"},
		{"1.3", planner.TLSVersion13, planner.TLSDefault, tls.VersionTLS13, 0, []*tls.Config{{MaxVersion: tls.VersionTLS12}}, "TLSv1.3"},
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
			out, err := exec.Command(pythonPath, "-c", pythonHandshake, g.Bootstrap(), sharedPKI(t).ca.CAPath()).CombinedOutput()
			if got := strings.TrimSpace(string(out)); err != nil || !strings.HasPrefix(got, tc.wantPython) {
				t.Errorf("Python's ssl negotiated %q (%v), want %q", got, err, tc.wantPython)
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
