// Package kafkaconf reads and writes Kafka client configuration, in
// librdkafka's properties (the files `kcat -F` reads) or the Java client's
// (trust and key stores, sasl.jaas.config), and turns it into franz-go
// options; it also renders the configuration of Apache Kafka brokers.
package kafkaconf

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/xp-bench/xp/infra/pki"
)

// SASLPlainConfig names the client config every cluster xp runs writes
// beside its direct modes' (one per mode, <mode>.properties): sasl_ssl
// with the PLAIN mechanism instead of SCRAM, for clients that cannot do
// SCRAM (kcat with Debian's librdkafka against Kafka 4). SASLPlainConfigFile
// is its file name.
const (
	SASLPlainConfig     = "sasl_ssl-plain"
	SASLPlainConfigFile = SASLPlainConfig + ".properties"
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

// ReadClientConfig reads a client config file in librdkafka's dialect
// (what `kcat -F` reads) or the Java client's (LoadClientConfig), as
// properties. Errors name the file and line.
func ReadClientConfig(path string) (map[string]string, error) {
	f, err := LoadClientConfig(path)
	if err != nil {
		return nil, err
	}
	return f.Map(), nil
}

// ParseClientConfig parses librdkafka property text (name=value lines,
// blank lines and # comments skipped); errors start with the line number.
// It checks no names: files xp writes itself are read with it.
func ParseClientConfig(b []byte) (map[string]string, error) {
	ps, err := parseLibrdkafka(b)
	if err != nil {
		return nil, err
	}
	props := map[string]string{}
	for _, p := range ps {
		props[p.Key] = p.Value
	}
	return props, nil
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

// tlsKeys are the properties that only mean something over TLS.
var tlsKeys = []string{SSLCALocation, SSLCertificate, SSLKey, SSLKeyPassword, SSLTruststoreLocation,
	SSLTruststorePassword, SSLTruststoreType, SSLTruststoreCertificates, SSLKeystoreLocation, SSLKeystorePassword,
	SSLKeystoreType, SSLKeystoreKey, SSLKeystoreCertificateChain, SSLEnabledProtocols, SSLProtocol}

// TLSConfig returns the client TLS configuration the properties ask for, or
// nil for plaintext and sasl_plaintext. The properties may be librdkafka's
// (ssl.ca.location, ssl.certificate.location, ssl.key.location) or the
// Java client's (ssl.truststore.*, ssl.keystore.* as JKS, PKCS12 or PEM).
// Without a CA or trust store the system's roots are trusted. A problem
// with one property is a *PropertyError naming it.
func TLSConfig(props map[string]string) (*tls.Config, error) {
	switch p := Protocol(props); p {
	case "plaintext", "sasl_plaintext":
		for _, k := range tlsKeys {
			if props[k] != "" {
				return nil, propErr(k, "is set but %s=%s does not use TLS", SecurityProtocol, p)
			}
		}
		return nil, nil
	case "ssl", "sasl_ssl":
	default:
		return nil, propErr(SecurityProtocol, "%q: want plaintext, ssl, sasl_plaintext or sasl_ssl", props[SecurityProtocol])
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca := props[SSLCALocation]; ca != "" {
		if props[SSLTruststoreLocation] != "" || props[SSLTruststoreCertificates] != "" {
			return nil, propErr(SSLCALocation, "give either it or a trust store (%s), not both", SSLTruststoreLocation)
		}
		pool, err := pki.LoadPool(ca)
		if err != nil {
			return nil, &PropertyError{SSLCALocation, err}
		}
		cfg.RootCAs = pool
	} else {
		pool, err := trustedRoots(props)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	certs, err := clientCertificates(props)
	if err != nil {
		return nil, err
	}
	cfg.Certificates = certs
	if cfg.MinVersion, cfg.MaxVersion, err = tlsVersions(props); err != nil {
		return nil, err
	}
	alg, set := props[SSLEndpointIdentAlg]
	switch strings.ToLower(alg) {
	case "https":
	case "":
		if !set {
			break
		}
		// The Java client's way of saying none.
		fallthrough
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
		return nil, propErr(SSLEndpointIdentAlg, "%q: want https, or none (librdkafka) or empty (Java)", alg)
	}
	return cfg, nil
}

// tlsVersions reads the Java client's ssl.enabled.protocols and
// ssl.protocol: TLS 1.2 and 1.3 (its default), or one of them.
func tlsVersions(props map[string]string) (lo, hi uint16, err error) {
	versions := map[string]uint16{"TLSV1.2": tls.VersionTLS12, "TLSV1.3": tls.VersionTLS13}
	lo, hi = tls.VersionTLS12, tls.VersionTLS13
	if p := strings.ToUpper(strings.TrimSpace(props[SSLProtocol])); p != "" {
		switch p {
		case "TLS", "TLSV1.3":
		case "TLSV1.2":
			hi = tls.VersionTLS12
		default:
			return 0, 0, propErr(SSLProtocol, "%q: xp speaks TLSv1.2 and TLSv1.3", props[SSLProtocol])
		}
	}
	if list := strings.TrimSpace(props[SSLEnabledProtocols]); list != "" {
		lo, hi = tls.VersionTLS13, tls.VersionTLS12
		for _, v := range strings.Split(list, ",") {
			n, ok := versions[strings.ToUpper(strings.TrimSpace(v))]
			if !ok {
				return 0, 0, propErr(SSLEnabledProtocols, "%q: xp speaks TLSv1.2 and TLSv1.3 only", strings.TrimSpace(v))
			}
			lo, hi = min(lo, n), max(hi, n)
		}
	}
	return lo, hi, nil
}

// ClientOpts turns properties into franz-go options: seed brokers, TLS
// dialer, SASL mechanism, client id. Unknown properties are an error.
func ClientOpts(props map[string]string) ([]kgo.Opt, error) {
	return clientOpts(props, TLSChoice{})
}

func clientOpts(props map[string]string, choice TLSChoice) ([]kgo.Opt, error) {
	var unknown []string
	for k := range props {
		if !supported(k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("unsupported client properties: %s (supported: %s)", strings.Join(unknown, ", "), strings.Join(knownKeys(), ", "))
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
			return nil, propErr(SocketConnTimeoutMs, "%q: want a positive integer", v)
		}
		timeout = time.Duration(ms) * time.Millisecond
	}
	tcfg, err := TLSConfig(props)
	if err != nil {
		return nil, err
	}
	if tcfg != nil {
		if err := choice.apply(tcfg); err != nil {
			return nil, err
		}
	} else if choice.Protocols() != "" || choice.CipherSuites() != nil {
		return nil, fmt.Errorf("kafkaconf: tls_version %s and tls_cipher %s need a TLS connection, but %s=%s", choice.Version, choice.Cipher, SecurityProtocol, Protocol(props))
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

// saslMechanism is the SASL mechanism the properties ask for, nil without
// SASL: librdkafka's sasl.username and sasl.password, or the Java client's
// sasl.jaas.config, with sasl.mechanism.
func saslMechanism(props map[string]string) (sasl.Mechanism, error) {
	p := Protocol(props)
	key, name := SASLMechanism, props[SASLMechanism]
	if name == "" {
		key, name = SASLMechanisms, props[SASLMechanisms]
	}
	jaas := props[SASLJAASConfig]
	if p != "sasl_ssl" && p != "sasl_plaintext" {
		for _, k := range []string{SASLMechanism, SASLMechanisms, SASLUsername, SASLPassword, SASLJAASConfig} {
			if props[k] != "" {
				return nil, propErr(k, "sasl settings given but %s=%s does not use SASL", SecurityProtocol, p)
			}
		}
		return nil, nil
	}
	switch strings.ToUpper(name) {
	case "OAUTHBEARER":
		return oauthMechanism(props)
	case "GSSAPI":
		return kerberosMechanism(props)
	}
	user, pass := props[SASLUsername], props[SASLPassword]
	if jaas != "" {
		if user != "" || pass != "" {
			return nil, propErr(SASLJAASConfig, "give the user either here or as %s and %s, not both", SASLUsername, SASLPassword)
		}
		l, err := parseJAAS(jaas)
		if err != nil {
			return nil, &PropertyError{SASLJAASConfig, err}
		}
		mechs := moduleMechanisms[l.Module]
		if name == "" {
			return nil, propErr(SASLJAASConfig, "%s is not set: the Java client's default, GSSAPI (Kerberos), does not go with %s; set %s=%s",
				SASLMechanism, l.Module, SASLMechanism, strings.Join(mechs, " or "))
		}
		if !slices.Contains(mechs, strings.ToUpper(name)) {
			return nil, propErr(key, "%s does not go with the %s of %s (it serves %s)", name, l.Module, SASLJAASConfig, strings.Join(mechs, ", "))
		}
		user, pass = l.User, l.Password
	} else if user == "" {
		return nil, propErr(SecurityProtocol, "%s needs %s and %s (or the Java client's %s)", p, SASLUsername, SASLPassword, SASLJAASConfig)
	}
	switch strings.ToUpper(name) {
	case "", "PLAIN":
		return plain.Auth{User: user, Pass: pass}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism(), nil
	case "SCRAM-SHA-512":
		return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism(), nil
	default:
		return nil, propErr(key, "%q: want PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER or GSSAPI", name)
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
