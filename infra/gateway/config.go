package gateway

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/xp-bench/xp/infra/pki"
	"github.com/xp-bench/xp/internal/yamlcheck"
	"github.com/xp-bench/xp/planner"
)

// Defaults.
const (
	DefaultBootstrapPort = 9192
	DefaultMaxFrameBytes = 100 << 20 // Kafka: socket.request.max.bytes
	DefaultMaxInFlight   = 256
	DefaultBufferBytes   = 64 << 10
	DefaultDialTimeout   = 10 * time.Second
	DefaultMetricsListen = "127.0.0.1:0"
)

// Config is the gateway's configuration, read from YAML by LoadConfig or
// built in code. Paths are absolute or relative to the config file.
type Config struct {
	Listen   Listen   `yaml:"listen"`
	Client   Client   `yaml:"client"`
	Upstream Upstream `yaml:"upstream"`
	Limits   Limits   `yaml:"limits"`
	Metrics  Metrics  `yaml:"metrics"`
	// Crypto is the implementation of the gateway's cryptography, the
	// plan row's gateway_crypto. planner.GatewayCryptoStd (default) is the
	// standard library's: crypto/tls carries the TLS legs' records and
	// crypto/cipher's AES-GCM seals envelopes. planner.GatewayCryptoFast
	// (opt-in) is xp's own, each part where this binary and CPU allow it:
	// the TLS 1.3 record layer internal/tlsrec (after crypto/tls's
	// handshake, for TLS 1.3 AES-GCM sessions) and the VAES AES-GCM
	// internal/aesgcm for those records and for envelopes. What runs is
	// Gateway.Crypto.
	Crypto string `yaml:"crypto"`

	// Filters see produce requests and fetch responses (the encrypting
	// modes); built from extension keys by LoadConfig, or set in code.
	// Empty for passthrough: produce and fetch are then never decoded.
	Filters []RecordFilter `yaml:"-"`

	// dir resolves relative paths; the config file's directory.
	dir string
}

// Listen is where clients connect: a bootstrap port and one port per
// upstream node.
type Listen struct {
	// Host is the address listeners bind; default 127.0.0.1.
	Host string `yaml:"host"`
	// AdvertisedHost is the host put in rewritten metadata; default
	// Host (required when Host is a wildcard address).
	AdvertisedHost string `yaml:"advertised_host"`
	// BootstrapPort is the port of the bootstrap listener; default 9192,
	// 0 picks a free port.
	BootstrapPort *int `yaml:"bootstrap_port"`
	// NodePortBase puts upstream node id N on port NodePortBase+N;
	// default BootstrapPort+1, 0 picks a free port per node. Node
	// listeners open when a node is first seen in upstream metadata.
	NodePortBase *int `yaml:"node_port_base"`
}

// Client is the client leg.
type Client struct {
	// Transport: plaintext (default), tls, mtls or sasl_ssl, by the
	// planner's names of the direct security modes. sasl_ssl is TLS
	// towards clients with SASL forwarded to the brokers: the brokers
	// authenticate the client, the gateway only relays SaslHandshake and
	// SaslAuthenticate (Kafka: security.protocol=SASL_SSL).
	Transport string `yaml:"transport"`
	// Cert and Key are the gateway's server certificate (PEM); required
	// for every transport but plaintext.
	Cert string `yaml:"cert"`
	Key  string `yaml:"key"`
	// CA verifies client certificates; required for mtls (Kafka:
	// ssl.client.auth=required with ssl.truststore.location).
	CA string `yaml:"ca"`
	// TLSVersion narrows the client leg to one TLS version, as a plan
	// row's tls_version names it: default (1.2 or 1.3, whichever both
	// sides prefer), 1.2 or 1.3 (Kafka: ssl.enabled.protocols).
	TLSVersion string `yaml:"tls_version,omitempty"`
	// TLSCipher narrows the client leg to the ECDHE suites of one
	// cipher, as a row's tls_cipher names it: default, aes128-gcm,
	// aes256-gcm or chacha20-poly1305 (Kafka: ssl.cipher.suites). It
	// needs tls_version 1.2: Go's crypto/tls lets a server choose no TLS
	// 1.3 suite (it picks among those the client offers).
	TLSCipher string `yaml:"tls_cipher,omitempty"`
}

// Upstream is the broker leg.
type Upstream struct {
	// Bootstrap lists the upstream brokers' host:port; required. The
	// gateway dials these and the addresses the upstream itself
	// advertises in metadata, nothing else.
	Bootstrap []string `yaml:"bootstrap"`
	// Transport: plaintext (default), tls or mtls. For clients on
	// sasl_ssl, point Bootstrap at the brokers' SASL_SSL (tls) or
	// SASL_PLAINTEXT (plaintext) listener.
	Transport string `yaml:"transport"`
	// CA verifies broker certificates (system roots when empty).
	CA string `yaml:"ca"`
	// Cert and Key are the gateway's client certificate for mtls.
	Cert string `yaml:"cert"`
	Key  string `yaml:"key"`
	// ServerName overrides the name verified in broker certificates;
	// default the dialled host.
	ServerName string `yaml:"server_name"`
	// DialTimeout bounds connecting (and the TLS handshake) to a broker;
	// default 10s.
	DialTimeout time.Duration `yaml:"dial_timeout"`
}

// Limits bound what one connection may hold.
type Limits struct {
	// MaxFrameBytes is the largest request or response accepted; a larger
	// one closes its connection. Default 100 MiB (Kafka:
	// socket.request.max.bytes).
	MaxFrameBytes int `yaml:"max_frame_bytes"`
	// MaxInFlight is how many requests a connection may have awaiting a
	// response before the gateway stops reading from the client
	// (backpressure); default 256.
	MaxInFlight int `yaml:"max_in_flight"`
	// BufferBytes is the read and write buffer per socket; default 64 KiB.
	BufferBytes int `yaml:"buffer_bytes"`
}

// Metrics is the Prometheus endpoint.
type Metrics struct {
	// Listen is the host:port serving /metrics; default 127.0.0.1:0 (a
	// free loopback port, printed at start). "off" disables it.
	Listen string `yaml:"listen"`
}

// Extension is a top-level config key handled outside this package (the
// encrypting modes): Build decodes the key's YAML, strictly, and returns
// the filter it configures. dir resolves relative paths.
type Extension struct {
	Key   string
	Build func(node *yaml.Node, dir string) (RecordFilter, error)
}

// ConfigError is bad configuration: the message names the file, line or key
// and the fix. The CLI exits 2 on it.
type ConfigError struct {
	File string
	Line int
	Msg  string
}

func (e *ConfigError) Error() string {
	switch {
	case e.File != "" && e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	case e.File != "":
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	}
	return "gateway config: " + e.Msg
}

// LoadConfig reads a YAML config. Unknown keys, missing certificate files
// and invalid values are a *ConfigError. Keys named by exts are handed to
// their Build in file order and the filters they return appended to
// Config.Filters.
func LoadConfig(path string, exts ...Extension) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &ConfigError{File: path, Msg: fmt.Sprintf("cannot read: %v", errors.Unwrap(err))}
	}
	cfg, err := ParseConfig(b, filepath.Dir(path), exts...)
	if err != nil {
		var ce *ConfigError
		if errors.As(err, &ce) && ce.File == "" {
			ce.File = path
		}
		return nil, err
	}
	return cfg, nil
}

// ParseConfig is LoadConfig on bytes; dir resolves relative paths.
func ParseConfig(b []byte, dir string, exts ...Extension) (*Config, error) {
	root, _, err := yamlcheck.Document(b)
	if err != nil {
		return nil, &ConfigError{Msg: "not YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	if root.Kind != yaml.MappingNode {
		return nil, &ConfigError{Line: root.Line, Msg: "the config must be a YAML mapping (listen, client, upstream, limits, metrics, crypto)"}
	}
	cfg := &Config{dir: dir}
	// Extension keys leave the tree before the strict check.
	var kept []*yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		idx := slices.IndexFunc(exts, func(e Extension) bool { return e.Key == k.Value })
		if idx < 0 {
			kept = append(kept, k, v)
			continue
		}
		f, err := exts[idx].Build(v, dir)
		if err != nil {
			var ce *ConfigError
			if errors.As(err, &ce) {
				return nil, err
			}
			return nil, &ConfigError{Line: k.Line, Msg: fmt.Sprintf("%s: %v", k.Value, err)}
		}
		if f != nil {
			cfg.Filters = append(cfg.Filters, f)
		}
	}
	root.Content = kept
	for i := 0; i+1 < len(root.Content); i += 2 {
		if k := root.Content[i]; k.Value == "tls" {
			return nil, &ConfigError{Line: k.Line, Msg: "tls (record_layer) is gone: use crypto: std (crypto/tls, the default) or crypto: fast (xp's record layer and AES-GCM)"}
		}
	}
	var extra []string
	for _, e := range exts {
		extra = append(extra, e.Key)
	}
	if e := yamlcheck.StructKeys(root, reflect.TypeOf(*cfg), extra...); e != nil {
		return nil, keyError(e)
	}
	if err := root.Decode(cfg); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) && len(te.Errors) > 0 {
			return nil, &ConfigError{Msg: strings.TrimSpace(te.Errors[0])}
		}
		return nil, &ConfigError{Msg: err.Error()}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// keyError is a key of the config given twice or unknown, at its line;
// an unknown key's message lists the keys that are known.
func keyError(e *yamlcheck.KeyError) *ConfigError {
	where := "at the top level"
	if e.Path != "" {
		where = "in " + e.Path
	}
	if e.Twice() {
		return &ConfigError{Line: e.Key.Line, Msg: fmt.Sprintf("key %q %s appears twice (first at line %d)", e.Key.Value, where, e.First)}
	}
	return &ConfigError{Line: e.Key.Line, Msg: fmt.Sprintf("unknown key %q %s (known: %s)", e.Key.Value, where, strings.Join(e.Known, ", "))}
}

// Validate fills defaults and checks the config, including that every
// certificate file exists and loads.
func (c *Config) Validate() error {
	if err := c.Listen.validate(); err != nil {
		return err
	}
	if err := c.Client.validate(); err != nil {
		return err
	}
	if err := c.Upstream.validate(); err != nil {
		return err
	}
	if err := c.Limits.validate(); err != nil {
		return err
	}
	switch c.Crypto {
	case "":
		c.Crypto = planner.GatewayCryptoStd
	case planner.GatewayCryptoStd, planner.GatewayCryptoFast:
	default:
		return badConfig("crypto: %q is not one of std, fast", c.Crypto)
	}
	if err := c.Metrics.validate(); err != nil {
		return err
	}
	return c.checkFiles()
}

// badConfig is a *ConfigError without a file.
func badConfig(format string, a ...any) error {
	return &ConfigError{Msg: fmt.Sprintf(format, a...)}
}

// validate fills the listeners' defaults and checks their ports.
func (l *Listen) validate() error {
	if l.Host == "" {
		l.Host = "127.0.0.1"
	}
	if l.AdvertisedHost == "" {
		if ip := net.ParseIP(l.Host); ip != nil && ip.IsUnspecified() {
			return badConfig("listen.advertised_host: required when listen.host is %s (the address clients reach the gateway at)", l.Host)
		}
		l.AdvertisedHost = l.Host
	}
	if l.BootstrapPort == nil {
		p := DefaultBootstrapPort
		l.BootstrapPort = &p
	}
	if *l.BootstrapPort < 0 || *l.BootstrapPort > 65535 {
		return badConfig("listen.bootstrap_port: %d is not a port (0..65535)", *l.BootstrapPort)
	}
	if l.NodePortBase == nil {
		p := 0
		if *l.BootstrapPort != 0 {
			p = *l.BootstrapPort + 1
		}
		l.NodePortBase = &p
	}
	if *l.NodePortBase < 0 || *l.NodePortBase > 65535 {
		return badConfig("listen.node_port_base: %d is not a port (0..65535)", *l.NodePortBase)
	}
	if *l.NodePortBase != 0 && *l.BootstrapPort != 0 && *l.NodePortBase <= *l.BootstrapPort {
		return badConfig("listen.node_port_base: %d would put a node on the bootstrap port %d; use a base above it", *l.NodePortBase, *l.BootstrapPort)
	}
	return nil
}

// validate fills the client leg's default transport and checks that it
// names the certificates the transport needs.
func (cl *Client) validate() error {
	switch cl.Transport {
	case "":
		cl.Transport = planner.SecurityPlaintext
	case planner.SecurityPlaintext, planner.SecurityTLS, planner.SecurityMTLS, planner.SecuritySASLSSL:
	default:
		return badConfig("client.transport: %q is not one of plaintext, tls, mtls, sasl_ssl", cl.Transport)
	}
	if cl.Transport != planner.SecurityPlaintext {
		if cl.Cert == "" || cl.Key == "" {
			return badConfig("client.cert and client.key: required for client.transport %s", cl.Transport)
		}
	}
	if cl.Transport == planner.SecurityMTLS && cl.CA == "" {
		return badConfig("client.ca: required for client.transport mtls (the CA that signs client certificates)")
	}
	return cl.validateTLS()
}

// validateTLS fills the client leg's default TLS version and cipher and
// checks that the transport and version allow them.
func (cl *Client) validateTLS() error {
	if cl.TLSVersion == "" {
		cl.TLSVersion = planner.TLSDefault
	}
	if cl.TLSCipher == "" {
		cl.TLSCipher = planner.TLSDefault
	}
	switch cl.TLSVersion {
	case planner.TLSDefault, planner.TLSVersion12, planner.TLSVersion13:
	default:
		return badConfig("client.tls_version: %q is not one of default, 1.2, 1.3", cl.TLSVersion)
	}
	switch cl.TLSCipher {
	case planner.TLSDefault, planner.TLSCipherAES128GCM, planner.TLSCipherAES256GCM, planner.TLSCipherChaCha20:
	default:
		return badConfig("client.tls_cipher: %q is not one of default, aes128-gcm, aes256-gcm, chacha20-poly1305", cl.TLSCipher)
	}
	switch {
	case cl.Transport == planner.SecurityPlaintext && (cl.TLSVersion != planner.TLSDefault || cl.TLSCipher != planner.TLSDefault):
		return badConfig("client.tls_version and client.tls_cipher: client.transport plaintext has no TLS; remove them or use tls, mtls or sasl_ssl")
	case cl.TLSCipher != planner.TLSDefault && cl.TLSVersion == planner.TLSDefault:
		return badConfig("client.tls_cipher %s: needs client.tls_version 1.2 (under default the version, and with it the suite, is what the two sides prefer)", cl.TLSCipher)
	case cl.TLSCipher != planner.TLSDefault && cl.TLSVersion == planner.TLSVersion13:
		return badConfig("client.tls_cipher %s with client.tls_version 1.3: Go's crypto/tls lets a server choose no TLS 1.3 suite (it takes one the client offers); use tls_version 1.2, or narrow the client's suites", cl.TLSCipher)
	}
	return nil
}

// narrow restricts cfg, the client leg's server side, to the leg's TLS
// version and, under TLS 1.2, to the ECDHE suites (RSA and ECDSA
// certificates) of its cipher.
func (cl *Client) narrow(cfg *tls.Config) {
	switch cl.TLSVersion {
	case planner.TLSVersion12:
		cfg.MinVersion, cfg.MaxVersion = tls.VersionTLS12, tls.VersionTLS12
	case planner.TLSVersion13:
		cfg.MinVersion, cfg.MaxVersion = tls.VersionTLS13, tls.VersionTLS13
	}
	if cl.TLSCipher == planner.TLSDefault || cl.TLSCipher == "" {
		return
	}
	cfg.CipherSuites = tls12Suites(cl.TLSCipher)
}

// tls12Suites are the TLS 1.2 ECDHE suites of a tls_cipher level: the
// RSA and the ECDSA one, by their IANA names.
func tls12Suites(cipher string) []uint16 {
	part := map[string]string{planner.TLSCipherAES128GCM: "_WITH_AES_128_GCM_", planner.TLSCipherAES256GCM: "_WITH_AES_256_GCM_",
		planner.TLSCipherChaCha20: "_WITH_CHACHA20_POLY1305_"}[cipher]
	var ids []uint16
	for _, s := range tls.CipherSuites() {
		if strings.HasPrefix(s.Name, "TLS_ECDHE_") && strings.Contains(s.Name, part) && slices.Contains(s.SupportedVersions, tls.VersionTLS12) {
			ids = append(ids, s.ID)
		}
	}
	return ids
}

// validate fills the broker leg's defaults and checks its brokers'
// addresses, its transport and its dial timeout.
func (u *Upstream) validate() error {
	if len(u.Bootstrap) == 0 {
		return badConfig("upstream.bootstrap: list at least one broker host:port")
	}
	for _, a := range u.Bootstrap {
		if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
			return badConfig("upstream.bootstrap: %q is not host:port", a)
		} else if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
			return badConfig("upstream.bootstrap: %q has no valid port", a)
		}
	}
	switch u.Transport {
	case "":
		u.Transport = planner.SecurityPlaintext
	case planner.SecurityPlaintext, planner.SecurityTLS, planner.SecurityMTLS:
	default:
		return badConfig("upstream.transport: %q is not one of plaintext, tls, mtls (SASL is forwarded from clients)", u.Transport)
	}
	if u.Transport == planner.SecurityMTLS && (u.Cert == "" || u.Key == "") {
		return badConfig("upstream.cert and upstream.key: required for upstream.transport mtls")
	}
	if u.DialTimeout == 0 {
		u.DialTimeout = DefaultDialTimeout
	}
	if u.DialTimeout < 0 {
		return badConfig("upstream.dial_timeout: must be positive")
	}
	return nil
}

// validate fills the limits' defaults and checks their ranges.
func (lim *Limits) validate() error {
	if lim.MaxFrameBytes == 0 {
		lim.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if lim.MaxFrameBytes < 1024 || lim.MaxFrameBytes > 1<<30 {
		return badConfig("limits.max_frame_bytes: %d is outside 1024..1073741824", lim.MaxFrameBytes)
	}
	if lim.MaxInFlight == 0 {
		lim.MaxInFlight = DefaultMaxInFlight
	}
	if lim.MaxInFlight < 1 || lim.MaxInFlight > 1<<16 {
		return badConfig("limits.max_in_flight: %d is outside 1..65536", lim.MaxInFlight)
	}
	if lim.BufferBytes == 0 {
		lim.BufferBytes = DefaultBufferBytes
	}
	if lim.BufferBytes < 4096 || lim.BufferBytes > 16<<20 {
		return badConfig("limits.buffer_bytes: %d is outside 4096..16777216", lim.BufferBytes)
	}
	return nil
}

// validate fills the metrics endpoint's default and checks it.
func (m *Metrics) validate() error {
	if m.Listen == "" {
		m.Listen = DefaultMetricsListen
	}
	if m.Listen != "off" {
		if _, _, err := net.SplitHostPort(m.Listen); err != nil {
			return badConfig("metrics.listen: %q is not host:port (or off)", m.Listen)
		}
	}
	return nil
}

// checkFiles checks that every certificate file named exists now, not at
// the first connection, and that both legs' TLS configs load.
func (c *Config) checkFiles() error {
	u := &c.Upstream
	for _, f := range []struct{ key, path string }{
		{"client.cert", c.Client.Cert}, {"client.key", c.Client.Key}, {"client.ca", c.Client.CA},
		{"upstream.ca", u.CA}, {"upstream.cert", u.Cert}, {"upstream.key", u.Key},
	} {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(c.path(f.path)); err != nil {
			return badConfig("%s: %s: %v", f.key, c.path(f.path), errors.Unwrap(err))
		}
	}
	if _, err := c.clientTLS(); err != nil {
		return badConfig("client: %v", err)
	}
	if _, err := c.upstreamTLS(); err != nil {
		return badConfig("upstream: %v", err)
	}
	return nil
}

func (c *Config) path(p string) string {
	if p == "" || filepath.IsAbs(p) || c.dir == "" {
		return p
	}
	return filepath.Join(c.dir, p)
}

// clientTLS is the server side of the client leg; nil for plaintext.
func (c *Config) clientTLS() (*tls.Config, error) {
	if c.Client.Transport == planner.SecurityPlaintext {
		return nil, nil
	}
	cfg, err := pki.ServerTLS(c.path(c.Client.CA), c.path(c.Client.Cert), c.path(c.Client.Key), c.Client.Transport == planner.SecurityMTLS)
	if err != nil {
		return nil, err
	}
	c.Client.narrow(cfg)
	return cfg, nil
}

// upstreamTLS is the client side of the broker leg; nil for plaintext.
func (c *Config) upstreamTLS() (*tls.Config, error) {
	u := c.Upstream
	if u.Transport == planner.SecurityPlaintext {
		return nil, nil
	}
	cert, key := "", ""
	if u.Transport == planner.SecurityMTLS {
		cert, key = c.path(u.Cert), c.path(u.Key)
	}
	cfg, err := pki.ClientTLS(c.path(u.CA), cert, key, u.ServerName)
	if err != nil {
		return nil, err
	}
	cfg.ClientSessionCache = tls.NewLRUClientSessionCache(64)
	return cfg, nil
}
