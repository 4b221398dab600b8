package kafkaconf

import (
	"crypto/tls"
	"fmt"
	"maps"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/planner"
)

// TLSChoice narrows TLS to a row's tls_version and tls_cipher (planner
// levels; "" or planner.TLSDefault for either leaves it open).
type TLSChoice struct {
	Version string
	Cipher  string
}

// Protocols is the Kafka ssl.enabled.protocols value of the choice's
// version ("TLSv1.2" or "TLSv1.3"), "" when open.
func (c TLSChoice) Protocols() string {
	switch c.Version {
	case planner.TLSVersion12:
		return "TLSv1.2"
	case planner.TLSVersion13:
		return "TLSv1.3"
	}
	return ""
}

// JavaProperties are the Java client's (JSSE's) properties narrowing its
// TLS to the choice: ssl.enabled.protocols and ssl.protocol for the
// version, ssl.cipher.suites for the cipher (the IANA names, which are
// JSSE's); none when open.
func (c TLSChoice) JavaProperties() map[string]string {
	out := map[string]string{}
	if p := c.Protocols(); p != "" {
		out["ssl.enabled.protocols"], out["ssl.protocol"] = p, p
	}
	if cs := c.CipherSuites(); cs != nil {
		out["ssl.cipher.suites"] = strings.Join(cs, ",")
	}
	return out
}

// CipherSuites are the IANA names (Kafka's ssl.cipher.suites, which are
// also Go's tls.CipherSuiteName) of the suites the choice allows: under
// TLS 1.2 the ECDHE suite of the cipher for RSA and for ECDSA
// certificates, under TLS 1.3 the one suite of that cipher; nil when the
// cipher is open. A cipher with an open version has no suites: the
// planner refuses that row.
func (c TLSChoice) CipherSuites() []string {
	tls12 := map[string][]string{
		planner.TLSCipherAES128GCM: {"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"},
		planner.TLSCipherAES256GCM: {"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"},
		planner.TLSCipherChaCha20:  {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"},
	}
	tls13 := map[string][]string{
		planner.TLSCipherAES128GCM: {"TLS_AES_128_GCM_SHA256"},
		planner.TLSCipherAES256GCM: {"TLS_AES_256_GCM_SHA384"},
		planner.TLSCipherChaCha20:  {"TLS_CHACHA20_POLY1305_SHA256"},
	}
	switch c.Version {
	case planner.TLSVersion12:
		return tls12[c.Cipher]
	case planner.TLSVersion13:
		return tls13[c.Cipher]
	}
	return nil
}

// apply narrows cfg to the choice as far as a Go client can: the version
// always, the suite under TLS 1.2 only (crypto/tls offers every TLS 1.3
// suite; the server picks, so Check must confirm what it picked).
func (c TLSChoice) apply(cfg *tls.Config) error {
	switch c.Version {
	case "", planner.TLSDefault:
	case planner.TLSVersion12:
		cfg.MinVersion, cfg.MaxVersion = tls.VersionTLS12, tls.VersionTLS12
	case planner.TLSVersion13:
		cfg.MinVersion, cfg.MaxVersion = tls.VersionTLS13, tls.VersionTLS13
	default:
		return fmt.Errorf("kafkaconf: tls_version %q: want default, 1.2 or 1.3", c.Version)
	}
	if c.Cipher == "" || c.Cipher == planner.TLSDefault {
		return nil
	}
	names := c.CipherSuites()
	if names == nil {
		return fmt.Errorf("kafkaconf: tls_cipher %q needs tls_version 1.2 or 1.3", c.Cipher)
	}
	if c.Version == planner.TLSVersion12 {
		cfg.CipherSuites = nil
		for _, s := range tls.CipherSuites() {
			for _, n := range names {
				if s.Name == n {
					cfg.CipherSuites = append(cfg.CipherSuites, s.ID)
				}
			}
		}
	}
	return nil
}

// Check says how a connection's negotiated TLS departs from the choice,
// or "" when it is what was asked.
func (c TLSChoice) Check(cs tls.ConnectionState) string {
	want := map[string]uint16{planner.TLSVersion12: tls.VersionTLS12, planner.TLSVersion13: tls.VersionTLS13}
	if v, ok := want[c.Version]; ok && cs.Version != v {
		return fmt.Sprintf("negotiated %s, but tls_version is %s", tls.VersionName(cs.Version), c.Version)
	}
	if names := c.CipherSuites(); names != nil {
		got := tls.CipherSuiteName(cs.CipherSuite)
		for _, n := range names {
			if n == got {
				return ""
			}
		}
		return fmt.Sprintf("negotiated %s, but tls_cipher is %s", got, c.Cipher)
	}
	return ""
}

// ClientOptsChoosing is ClientOpts with the TLS narrowed to choice and, on
// SASL connections, the mechanism mech (Kafka's name, e.g.
// "SCRAM-SHA-256"; "" keeps the properties').
func ClientOptsChoosing(props map[string]string, choice TLSChoice, mech string) ([]kgo.Opt, error) {
	if mech != "" && Protocol(props) == "sasl_ssl" {
		props = maps.Clone(props)
		props[SASLMechanism] = mech
		delete(props, SASLMechanisms)
	}
	return clientOpts(props, choice)
}
