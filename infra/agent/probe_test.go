package agent

import (
	"context"
	"crypto/tls"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/xp-bench/xp/infra/pki"
)

// TestProbes: KafkaReady is satisfied by a Kafka peer (kfake, in plaintext
// and over TLS verified by the CA) and by nothing else; TCPReady by any
// listener.
func TestProbes(t *testing.T) {
	ca, err := pki.New(filepath.Join(t.TempDir(), "pki"))
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := ca.Server("broker", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ca.ServerTLS(cert, key, false)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	secure, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.TLS(srv))
	if err != nil {
		t.Fatal(err)
	}
	defer secure.Close()
	clientTLS, err := ca.ClientTLS("", "")
	if err != nil {
		t.Fatal(err)
	}
	other, err := pki.New(filepath.Join(t.TempDir(), "other"))
	if err != nil {
		t.Fatal(err)
	}
	wrongCA, err := other.ClientTLS("", "")
	if err != nil {
		t.Fatal(err)
	}
	// A listener that answers every connection with bytes that are not
	// Kafka, and one that closes at once.
	notKafka := listen(t, func(c net.Conn) { c.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n")) })
	closer := listen(t, func(net.Conn) {})
	free := listen(t, nil)

	tests := []struct {
		name  string
		probe func(context.Context, string, *tls.Config) error
		addr  string
		tls   *tls.Config
		want  string // "" = ready
	}{
		{name: "kafka plaintext", probe: KafkaReady, addr: plain.ListenAddrs()[0]},
		{name: "kafka over tls", probe: KafkaReady, addr: secure.ListenAddrs()[0], tls: clientTLS},
		{name: "kafka over tls, CA not trusted", probe: KafkaReady, addr: secure.ListenAddrs()[0], tls: wrongCA, want: "TLS handshake"},
		{name: "plaintext probe of a tls port", probe: KafkaReady, addr: secure.ListenAddrs()[0], want: "ApiVersions"},
		{name: "not kafka", probe: KafkaReady, addr: notKafka, want: "not Kafka"},
		{name: "closes at once", probe: KafkaReady, addr: closer, want: "ApiVersions answer"},
		{name: "nothing listens", probe: KafkaReady, addr: free, want: "refused"},
		{name: "tcp accepts", probe: TCPReady, addr: closer},
		{name: "tcp nothing listens", probe: TCPReady, addr: free, want: "refused"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.probe(context.Background(), tc.addr, tc.tls)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("probe: %v, want %q", err, tc.want)
			}
		})
	}

	// Start with a probe: ready once it passes; a probe that never does
	// stops the service after the timeout and says what it waited for.
	s := Supervisor{Dir: t.TempDir()}
	addr := plain.ListenAddrs()[0]
	if _, err := s.Start("kafka-ready", []string{"sleep", "60"}, StartOptions{Timeout: 10 * time.Second,
		Ready: func() error { return KafkaReady(context.Background(), addr, nil) }, ReadyWhat: "no answer on " + addr}); err != nil {
		t.Fatal(err)
	}
	defer s.Stop(time.Second)
	_, err = s.Start("never-ready", []string{"sh", "-c", "echo listening nowhere; exec sleep 60"}, StartOptions{Timeout: 500 * time.Millisecond,
		Ready: func() error { return KafkaReady(context.Background(), free, nil) }, ReadyWhat: "no answer on " + free})
	if err == nil || !strings.Contains(err.Error(), "never-ready not ready after 500ms (no answer on "+free+": ") ||
		!strings.Contains(err.Error(), "listening nowhere") {
		t.Fatalf("a probe that never passes: %v", err)
	}
	if st, _ := s.Status(); len(st) != 1 || st[0].Name != "kafka-ready" {
		t.Errorf("services after the timeout: %+v, want only kafka-ready", st)
	}
}

// listen serves fn on every connection to a loopback port; with fn nil it
// returns a port nothing listens on.
func listen(t *testing.T, fn func(net.Conn)) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if fn == nil {
		ln.Close()
		return ln.Addr().String()
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			fn(c)
			c.Close()
		}
	}()
	return ln.Addr().String()
}
