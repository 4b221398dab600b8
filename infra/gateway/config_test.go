package gateway

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.yaml.in/yaml/v3"

	"github.com/xp-bench/xp/planner"
)

// passFilter is a RecordFilter configured by an extension key in tests.
type passFilter struct{ Topics []string }

func (passFilter) ProduceRequest(context.Context, *kmsg.ProduceRequest) error { return nil }
func (passFilter) FetchResponse(context.Context, *kmsg.FetchRequest, *kmsg.FetchResponse) error {
	return nil
}

var testExtension = Extension{Key: "encrypt", Build: func(n *yaml.Node, dir string) (RecordFilter, error) {
	var f passFilter
	dec := yaml.Node(*n)
	if err := dec.Decode(&f); err != nil {
		return nil, err
	}
	if len(f.Topics) == 0 {
		return nil, errors.New("topics: list at least one topic pattern")
	}
	return &f, nil
}}

func TestLoadConfig(t *testing.T) {
	p := sharedPKI(t)
	dir := t.TempDir()
	// Relative certificate paths resolve against the config's directory.
	for _, f := range []string{p.gwCert, p.gwKey} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, dir, filepath.Base(f), string(b))
	}
	ca := p.ca.CAPath()
	cases := []struct {
		name    string
		yaml    string
		wantErr string // substring; "" means valid
		check   func(t *testing.T, c *Config)
	}{
		{"minimal: defaults filled", "upstream:\n  bootstrap: [127.0.0.1:9092]\n", "", func(t *testing.T, c *Config) {
			if c.Listen.Host != "127.0.0.1" || *c.Listen.BootstrapPort != 9192 || *c.Listen.NodePortBase != 9193 {
				t.Errorf("listen defaults: %+v %d %d", c.Listen, *c.Listen.BootstrapPort, *c.Listen.NodePortBase)
			}
			if c.Client.Transport != planner.SecurityPlaintext || c.Upstream.Transport != planner.SecurityPlaintext {
				t.Errorf("transports %q %q", c.Client.Transport, c.Upstream.Transport)
			}
			if c.Limits.MaxFrameBytes != DefaultMaxFrameBytes || c.Limits.MaxInFlight != DefaultMaxInFlight || c.Metrics.Listen != DefaultMetricsListen {
				t.Errorf("limits %+v metrics %+v", c.Limits, c.Metrics)
			}
			if len(c.Filters) != 0 {
				t.Errorf("passthrough config has %d filters", len(c.Filters))
			}
		}},
		{"full tls with relative paths and an extension", fmt.Sprintf(`
listen: {host: 127.0.0.1, advertised_host: localhost, bootstrap_port: 0, node_port_base: 0}
client: {transport: tls, cert: gateway.pem, key: gateway-key.pem}
upstream: {bootstrap: ["127.0.0.1:9093"], transport: tls, ca: %s, dial_timeout: 3s}
limits: {max_frame_bytes: 1048576, max_in_flight: 16, buffer_bytes: 131072}
metrics: {listen: off}
encrypt: {topics: ["secret-*"]}
`, ca), "", func(t *testing.T, c *Config) {
			if c.Listen.AdvertisedHost != "localhost" || c.Upstream.DialTimeout.Seconds() != 3 || c.Limits.MaxInFlight != 16 {
				t.Errorf("parsed %+v %+v %+v", c.Listen, c.Upstream, c.Limits)
			}
			if len(c.Filters) != 1 || c.Filters[0].(*passFilter).Topics[0] != "secret-*" {
				t.Errorf("filters %v", c.Filters)
			}
		}},
		{"unknown top-level key", "upstream:\n  bootstrap: [127.0.0.1:9092]\nlisten_port: 1\n", `:3: unknown key "listen_port" at the top level (known: listen, client, upstream, limits, metrics, crypto, encrypt)`, nil},
		{"unknown nested key", "upstream:\n  bootstrap: [127.0.0.1:9092]\n  tls: true\n", `:3: unknown key "tls" in upstream`, nil},
		{"field_encrypt without its extension", "upstream:\n  bootstrap: [127.0.0.1:9092]\nfield_encrypt: {}\n", `unknown key "field_encrypt"`, nil},
		{"extension rejects its settings", "upstream:\n  bootstrap: [127.0.0.1:9092]\nencrypt: {topics: []}\n", "encrypt: topics: list at least one topic pattern", nil},
		{"missing certificate", "client: {transport: tls, cert: nope.pem, key: gateway-key.pem}\nupstream:\n  bootstrap: [127.0.0.1:9092]\n", "client.cert: " + filepath.Join(dir, "nope.pem") + ": no such file", nil},
		{"missing upstream CA", "upstream: {bootstrap: [127.0.0.1:9092], transport: tls, ca: /nonexistent/ca.pem}\n", "upstream.ca: /nonexistent/ca.pem: no such file", nil},
		{"tls without a certificate", "client: {transport: tls}\nupstream:\n  bootstrap: [127.0.0.1:9092]\n", "client.cert and client.key: required", nil},
		{"mtls without a CA", "client: {transport: mtls, cert: gateway.pem, key: gateway-key.pem}\nupstream:\n  bootstrap: [127.0.0.1:9092]\n", "client.ca: required", nil},
		{"unknown client transport", "client: {transport: ssl}\nupstream:\n  bootstrap: [127.0.0.1:9092]\n", `client.transport: "ssl" is not one of`, nil},
		{"sasl on the broker leg", "upstream: {bootstrap: [127.0.0.1:9092], transport: sasl_ssl}\n", "SASL is forwarded from clients", nil},
		{"tls version and cipher", "client: {transport: tls, cert: gateway.pem, key: gateway-key.pem, tls_version: \"1.2\", tls_cipher: chacha20-poly1305}\nupstream:\n  bootstrap: [127.0.0.1:9092]\n", "", func(t *testing.T, c *Config) {
			if c.Client.TLSVersion != planner.TLSVersion12 || c.Client.TLSCipher != planner.TLSCipherChaCha20 {
				t.Errorf("client %+v", c.Client)
			}
		}},
		{"tls defaults", "client: {transport: tls, cert: gateway.pem, key: gateway-key.pem}\nupstream:\n  bootstrap: [127.0.0.1:9092]\n", "", func(t *testing.T, c *Config) {
			if c.Client.TLSVersion != planner.TLSDefault || c.Client.TLSCipher != planner.TLSDefault {
				t.Errorf("client %+v, want both default", c.Client)
			}
		}},
		{"unknown tls version", "client: {transport: tls, cert: gateway.pem, key: gateway-key.pem, tls_version: \"1.1\"}\nupstream:\n  bootstrap: [127.0.0.1:9092]\n", `client.tls_version: "1.1" is not one of default, 1.2, 1.3`, nil},
		{"unknown tls cipher", "client: {transport: tls, cert: gateway.pem, key: gateway-key.pem, tls_version: \"1.2\", tls_cipher: rc4}\nupstream:\n  bootstrap: [127.0.0.1:9092]\n", `client.tls_cipher: "rc4" is not one of`, nil},
		{"tls version on plaintext", "client: {tls_version: \"1.3\"}\nupstream:\n  bootstrap: [127.0.0.1:9092]\n", "client.transport plaintext has no TLS", nil},
		{"cipher without a version", "client: {transport: tls, cert: gateway.pem, key: gateway-key.pem, tls_cipher: aes128-gcm}\nupstream:\n  bootstrap: [127.0.0.1:9092]\n", "client.tls_cipher aes128-gcm: needs client.tls_version 1.2", nil},
		{"cipher under tls 1.3", "client: {transport: tls, cert: gateway.pem, key: gateway-key.pem, tls_version: \"1.3\", tls_cipher: aes256-gcm}\nupstream:\n  bootstrap: [127.0.0.1:9092]\n", "Go's crypto/tls lets a server choose no TLS 1.3 suite", nil},
		{"no upstream", "listen: {host: 127.0.0.1}\n", "upstream.bootstrap: list at least one", nil},
		{"upstream without a port", "upstream: {bootstrap: [kafka]}\n", `"kafka" is not host:port`, nil},
		{"wildcard host needs advertised host", "listen: {host: 0.0.0.0}\nupstream: {bootstrap: [127.0.0.1:9092]}\n", "listen.advertised_host: required", nil},
		{"node ports below the bootstrap port", "listen: {bootstrap_port: 9300, node_port_base: 9200}\nupstream: {bootstrap: [127.0.0.1:9092]}\n", "listen.node_port_base: 9200 would put a node on the bootstrap port", nil},
		{"unknown crypto", "crypto: vaes\nupstream: {bootstrap: [127.0.0.1:9092]}\n", `crypto: "vaes" is not one of std, fast`, nil},
		{"crypto defaults to std", "upstream: {bootstrap: [127.0.0.1:9092]}\n", "", func(t *testing.T, c *Config) {
			if c.Crypto != planner.GatewayCryptoStd {
				t.Errorf("crypto %q, want std", c.Crypto)
			}
		}},
		{"crypto fast", "crypto: fast\nupstream: {bootstrap: [127.0.0.1:9092]}\n", "", func(t *testing.T, c *Config) {
			if c.Crypto != planner.GatewayCryptoFast {
				t.Errorf("crypto %q, want fast", c.Crypto)
			}
		}},
		{"old record_layer key", "tls: {record_layer: go}\nupstream: {bootstrap: [127.0.0.1:9092]}\n", `:1: tls (record_layer) is gone: use crypto: std (crypto/tls, the default) or crypto: fast`, nil},
		{"frame limit too small", "limits: {max_frame_bytes: 10}\nupstream: {bootstrap: [127.0.0.1:9092]}\n", "limits.max_frame_bytes: 10 is outside", nil},
		{"wrong type", "limits: {max_in_flight: lots}\nupstream: {bootstrap: [127.0.0.1:9092]}\n", "cannot unmarshal", nil},
		{"not a mapping", "- a\n- b\n", "must be a YAML mapping", nil},
		{"not YAML", "upstream: [\n", "not YAML", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, dir, "gateway.yaml", tc.yaml)
			cfg, err := LoadConfig(path, testExtension)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				tc.check(t, cfg)
				return
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v (%T), want a *ConfigError", err, err)
			}
			if !strings.Contains(err.Error(), tc.wantErr) || !strings.HasPrefix(err.Error(), path) {
				t.Fatalf("error %q, want it to start with %s and contain %q", err, path, tc.wantErr)
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		_, err := LoadConfig(filepath.Join(dir, "absent.yaml"))
		var ce *ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "cannot read") {
			t.Fatalf("error %v", err)
		}
	})
}

// TestParseConfigKeyTwice: a key given twice is refused at its second
// line, naming the first, at the top level and within a section.
func TestParseConfigKeyTwice(t *testing.T) {
	cases := []struct{ name, yaml, want string }{
		{"top level", "crypto: std\nupstream: {bootstrap: [127.0.0.1:9092]}\ncrypto: fast\n", `gateway config: key "crypto" at the top level appears twice (first at line 1)`},
		{"within a section", "upstream:\n  bootstrap: [127.0.0.1:9092]\n  bootstrap: [127.0.0.1:9093]\n", `gateway config: key "bootstrap" in upstream appears twice (first at line 2)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.yaml), t.TempDir())
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Line != 3 || err.Error() != tc.want {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
