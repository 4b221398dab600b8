// Package kafkaconf reads and writes Kafka client configuration in
// librdkafka property names (the files `kcat -F` reads) and turns it into
// franz-go options.
package kafkaconf

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/xp-bench/xp/infra/pki"
)

// Property names (librdkafka's).
const (
	BootstrapServers      = "bootstrap.servers"
	SecurityProtocol      = "security.protocol"
	SSLCALocation         = "ssl.ca.location"
	SSLCertificate        = "ssl.certificate.location"
	SSLKey                = "ssl.key.location"
	SSLEndpointIdentAlg   = "ssl.endpoint.identification.algorithm"
	SASLMechanism         = "sasl.mechanism"
	SASLMechanisms        = "sasl.mechanisms"
	SASLUsername          = "sasl.username"
	SASLPassword          = "sasl.password"
	ClientID              = "client.id"
	SocketConnTimeoutMs   = "socket.connection.setup.timeout.ms"
	defaultConnectTimeout = 10 * time.Second
)

// known lists every property ClientOpts understands; anything else is an
// error, so a typo never silently turns TLS off.
var known = map[string]bool{
	BootstrapServers: true, SecurityProtocol: true, SSLCALocation: true,
	SSLCertificate: true, SSLKey: true, SSLEndpointIdentAlg: true,
	SASLMechanism: true, SASLMechanisms: true, SASLUsername: true,
	SASLPassword: true, ClientID: true, SocketConnTimeoutMs: true,
}

// ReadClientConfig parses a librdkafka property file: `name=value` lines,
// blank lines and `#` comments ignored. Errors name the file and line.
func ReadClientConfig(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("client config: %w", err)
	}
	props, err := ParseClientConfig(b)
	if err != nil {
		return nil, fmt.Errorf("client config %s:%w", path, err)
	}
	return props, nil
}

// ParseClientConfig parses property text; errors start with the line number.
func ParseClientConfig(b []byte) (map[string]string, error) {
	props := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("%d: want name=value, got %q", n, line)
		}
		props[k] = strings.TrimSpace(v)
	}
	return props, sc.Err()
}

// WriteClientConfig writes props as a property file, sorted, mode 0600
// (it may hold a password).
func WriteClientConfig(path string, props map[string]string) error {
	text := FormatClientConfig(props)
	tmp, err := os.CreateTemp(filepath.Dir(path), ".clientconf-*")
	if err != nil {
		return fmt.Errorf("client config: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(text); err != nil {
		tmp.Close()
		return fmt.Errorf("client config %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Bootstrap returns the bootstrap.servers list.
func Bootstrap(props map[string]string) []string {
	var out []string
	for _, s := range strings.Split(props[BootstrapServers], ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Protocol returns security.protocol lower-cased, "plaintext" when unset.
func Protocol(props map[string]string) string {
	p := strings.ToLower(strings.TrimSpace(props[SecurityProtocol]))
	if p == "" {
		return "plaintext"
	}
	return p
}

// TLSConfig returns the client TLS configuration the properties ask for, or
// nil for plaintext and sasl_plaintext.
func TLSConfig(props map[string]string) (*tls.Config, error) {
	switch p := Protocol(props); p {
	case "plaintext", "sasl_plaintext":
		for _, k := range []string{SSLCALocation, SSLCertificate, SSLKey} {
			if props[k] != "" {
				return nil, fmt.Errorf("%s is set but %s=%s does not use TLS", k, SecurityProtocol, p)
			}
		}
		return nil, nil
	case "ssl", "sasl_ssl":
	default:
		return nil, fmt.Errorf("%s=%q: want plaintext, ssl, sasl_plaintext or sasl_ssl", SecurityProtocol, props[SecurityProtocol])
	}
	cfg, err := pki.ClientTLS(props[SSLCALocation], props[SSLCertificate], props[SSLKey], "")
	if err != nil {
		return nil, err
	}
	switch strings.ToLower(props[SSLEndpointIdentAlg]) {
	case "", "https":
	case "none":
		// librdkafka: chain still verified, host name not. Keep chain checks.
		roots := cfg.RootCAs
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("server sent no certificate")
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
			return err
		}
	default:
		return nil, fmt.Errorf("%s=%q: want https or none", SSLEndpointIdentAlg, props[SSLEndpointIdentAlg])
	}
	return cfg, nil
}

// ClientOpts turns properties into franz-go options: seed brokers, TLS
// dialer, SASL mechanism, client id. Unknown properties are an error.
func ClientOpts(props map[string]string) ([]kgo.Opt, error) {
	var unknown []string
	for k := range props {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("unsupported client properties: %s (supported: bootstrap.servers, security.protocol, ssl.*.location, sasl.mechanism, sasl.username, sasl.password, client.id)", strings.Join(unknown, ", "))
	}
	var opts []kgo.Opt
	if seeds := Bootstrap(props); len(seeds) > 0 {
		opts = append(opts, kgo.SeedBrokers(seeds...))
	}
	if id := props[ClientID]; id != "" {
		opts = append(opts, kgo.ClientID(id))
	}
	timeout := defaultConnectTimeout
	if v := props[SocketConnTimeoutMs]; v != "" {
		var ms int
		if _, err := fmt.Sscanf(v, "%d", &ms); err != nil || ms <= 0 {
			return nil, fmt.Errorf("%s=%q: want a positive integer", SocketConnTimeoutMs, v)
		}
		timeout = time.Duration(ms) * time.Millisecond
	}
	tcfg, err := TLSConfig(props)
	if err != nil {
		return nil, err
	}
	if tcfg != nil {
		// kgo.DialTLSConfig and kgo.Dialer are exclusive: dial TLS ourselves
		// so the connect timeout holds for TLS too.
		opts = append(opts, kgo.Dialer(tlsDialer(tcfg, timeout)))
	} else {
		opts = append(opts, kgo.Dialer((&net.Dialer{Timeout: timeout}).DialContext))
	}
	mech, err := saslMechanism(props)
	if err != nil {
		return nil, err
	}
	if mech != nil {
		opts = append(opts, kgo.SASL(mech))
	}
	return opts, nil
}

func saslMechanism(props map[string]string) (sasl.Mechanism, error) {
	p := Protocol(props)
	name := props[SASLMechanism]
	if name == "" {
		name = props[SASLMechanisms]
	}
	if p != "sasl_ssl" && p != "sasl_plaintext" {
		if name != "" || props[SASLUsername] != "" {
			return nil, fmt.Errorf("sasl settings given but %s=%s does not use SASL", SecurityProtocol, p)
		}
		return nil, nil
	}
	user, pass := props[SASLUsername], props[SASLPassword]
	if user == "" {
		return nil, fmt.Errorf("%s=%s needs %s and %s", SecurityProtocol, p, SASLUsername, SASLPassword)
	}
	switch strings.ToUpper(name) {
	case "", "PLAIN":
		return plain.Auth{User: user, Pass: pass}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism(), nil
	case "SCRAM-SHA-512":
		return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism(), nil
	default:
		return nil, fmt.Errorf("%s=%q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", SASLMechanism, name)
	}
}

func tlsDialer(cfg *tls.Config, timeout time.Duration) func(ctx context.Context, network, host string) (net.Conn, error) {
	return func(ctx context.Context, network, host string) (net.Conn, error) {
		c := cfg.Clone()
		if c.ServerName == "" {
			h, _, err := net.SplitHostPort(host)
			if err != nil {
				return nil, err
			}
			c.ServerName = h
		}
		d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: timeout}, Config: c}
		return d.DialContext(ctx, network, host)
	}
}
