package kafkaconf

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/infra/pki"
)

func TestReadWriteRoundTrip(t *testing.T) {
	cases := []map[string]string{
		{BootstrapServers: "127.0.0.1:9092"},
		{BootstrapServers: "a:1,b:2", SecurityProtocol: "SASL_SSL", SASLMechanism: "SCRAM-SHA-512", SASLUsername: "u", SASLPassword: "p=w#d", SSLCALocation: "/x/ca.pem"},
	}
	for i, props := range cases {
		path := filepath.Join(t.TempDir(), "c.properties")
		if err := WriteClientConfig(path, props); err != nil {
			t.Fatal(err)
		}
		st, _ := os.Stat(path)
		if st.Mode().Perm() != 0o600 {
			t.Errorf("case %d: mode %v", i, st.Mode().Perm())
		}
		got, err := ReadClientConfig(path)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, props) {
			t.Errorf("case %d: round trip %v != %v", i, got, props)
		}
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct{ name, text, want string }{
		{"no equals", "bootstrap.servers\n", "1: want name=value"},
		{"empty name", "# c\n=x\n", "2: want name=value"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseClientConfig([]byte(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
	path := filepath.Join(t.TempDir(), "bad.conf")
	os.WriteFile(path, []byte("x\n"), 0o600)
	if _, err := ReadClientConfig(path); err == nil || !strings.Contains(err.Error(), path+":1:") {
		t.Fatalf("error does not name file and line: %v", err)
	}
}

func TestClientOptsRejects(t *testing.T) {
	cases := []struct {
		name  string
		props map[string]string
		want  string
	}{
		{"unknown property", map[string]string{"ssl.ca.locaton": "x"}, "unsupported client properties: ssl.ca.locaton"},
		{"bad protocol", map[string]string{SecurityProtocol: "tls"}, "want plaintext, ssl"},
		{"ca with plaintext", map[string]string{SSLCALocation: "/ca.pem"}, "does not use TLS"},
		{"sasl without user", map[string]string{SecurityProtocol: "sasl_plaintext"}, "needs sasl.username"},
		{"bad mechanism", map[string]string{SecurityProtocol: "sasl_plaintext", SASLUsername: "u", SASLMechanism: "SCRAM-SHA-1"}, "want PLAIN"},
		{"sasl with ssl", map[string]string{SecurityProtocol: "ssl", SASLUsername: "u"}, "does not use SASL"},
		{"missing CA", map[string]string{SecurityProtocol: "ssl", SSLCALocation: "/nonexistent/ca.pem"}, "CA file"},
		{"cert without key", map[string]string{SecurityProtocol: "ssl", SSLCertificate: "/x.pem"}, "both a certificate and a key"},
		{"bad timeout", map[string]string{SocketConnTimeoutMs: "soon"}, "positive integer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ClientOpts(tc.props)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// TestClientOptsConnect connects with the produced options to kfake
// clusters speaking plaintext, TLS and SASL over TLS.
func TestClientOptsConnect(t *testing.T) {
	a, err := pki.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cert, key, _ := a.Server("broker")
	scfg, err := a.ServerTLS(cert, key, false)
	if err != nil {
		t.Fatal(err)
	}
	plainC := kfake.MustCluster(kfake.NumBrokers(1))
	defer plainC.Close()
	tlsC := kfake.MustCluster(kfake.NumBrokers(1), kfake.TLS(scfg))
	defer tlsC.Close()
	saslC := kfake.MustCluster(kfake.NumBrokers(1), kfake.TLS(scfg), kfake.EnableSASL(),
		kfake.Superuser("PLAIN", "admin", "secret"), kfake.Superuser("SCRAM-SHA-512", "admin", "secret"))
	defer saslC.Close()

	cases := []struct {
		name    string
		props   map[string]string
		wantErr bool
	}{
		{"plaintext", map[string]string{BootstrapServers: plainC.ListenAddrs()[0]}, false},
		{"ssl", map[string]string{BootstrapServers: tlsC.ListenAddrs()[0], SecurityProtocol: "SSL", SSLCALocation: a.CAPath()}, false},
		{"sasl plain", map[string]string{BootstrapServers: saslC.ListenAddrs()[0], SecurityProtocol: "sasl_ssl", SSLCALocation: a.CAPath(), SASLMechanism: "PLAIN", SASLUsername: "admin", SASLPassword: "secret"}, false},
		{"sasl scram", map[string]string{BootstrapServers: saslC.ListenAddrs()[0], SecurityProtocol: "sasl_ssl", SSLCALocation: a.CAPath(), SASLMechanism: "SCRAM-SHA-512", SASLUsername: "admin", SASLPassword: "secret"}, false},
		{"sasl bad password", map[string]string{BootstrapServers: saslC.ListenAddrs()[0], SecurityProtocol: "sasl_ssl", SSLCALocation: a.CAPath(), SASLMechanism: "SCRAM-SHA-512", SASLUsername: "admin", SASLPassword: "wrong"}, true},
		{"ssl without CA", map[string]string{BootstrapServers: tlsC.ListenAddrs()[0], SecurityProtocol: "ssl"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts, err := ClientOpts(tc.props)
			if err != nil {
				t.Fatal(err)
			}
			cl, err := kgo.NewClient(append(opts, kgo.RequestRetries(0))...)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err = cl.Ping(ctx)
			if tc.wantErr != (err != nil) {
				t.Fatalf("ping error %v, want error %v", err, tc.wantErr)
			}
		})
	}
}

// TestEndpointIdentification: with "none" the host name is not checked but
// the chain still is (librdkafka's ssl.endpoint.identification.algorithm).
func TestEndpointIdentification(t *testing.T) {
	a, _ := pki.New(t.TempDir())
	other, _ := pki.New(t.TempDir())
	cert, key, _ := a.Server("broker") // covers 127.0.0.1, not 127.0.0.2
	scfg, err := a.ServerTLS(cert, key, false)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.2:0", scfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	cases := []struct {
		name    string
		alg, ca string
		wantErr string
	}{
		{"https checks the host", "https", a.CAPath(), "127.0.0.2"},
		{"default checks the host", "", a.CAPath(), "127.0.0.2"},
		{"none skips the host", "none", a.CAPath(), ""},
		{"none still checks the chain", "none", other.CAPath(), "unknown authority"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			props := map[string]string{SecurityProtocol: "ssl", SSLCALocation: tc.ca}
			if tc.alg != "" {
				props[SSLEndpointIdentAlg] = tc.alg
			}
			cfg, err := TLSConfig(props)
			if err != nil {
				t.Fatal(err)
			}
			cfg.ServerName = "127.0.0.2"
			c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", ln.Addr().String(), cfg)
			if err == nil {
				c.Close()
			}
			if tc.wantErr == "" && err != nil {
				t.Fatalf("handshake: %v", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
