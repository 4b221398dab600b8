package kroxylicious

import (
	"net"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/release"
	"github.com/xp-bench/xp/internal/golden"
	"github.com/xp-bench/xp/planner"
)

// testInMemory is an in-memory KMS with one fixed KEK (so golden files
// stay the same).
func testInMemory() *InMemory {
	key := make([]byte, 32)
	for i := range key {
		key[i] = byte(i)
	}
	return &InMemory{Alias: DefaultKEK, KEKs: []KEK{{Alias: DefaultKEK, UUID: "00000000-0000-4000-8000-000000000001", Key: key}}}
}

func kroxySetup(mode, transport string, brokers int) Setup {
	s := Setup{Version: "0.23.0", Name: "gateway-" + mode + "-0", Host: "198.18.0.21", Port: 19192, Brokers: brokers,
		Transport: transport, CA: "/home/xp/xp/c1/gateway-1/gateway/pki/ca.pem", Cert: "/home/xp/xp/c1/gateway-1/gateway/pki/gateway.pem",
		Key: "/home/xp/xp/c1/gateway-1/gateway/pki/gateway-key.pem", Mode: mode, ManagementPort: 19192 + 99}
	for i := 0; i < brokers; i++ {
		s.Upstream = append(s.Upstream, net.JoinHostPort("198.18.0.11", []string{"30001", "30002", "30003"}[i]))
	}
	if mode == "encrypt" {
		s.KMS.Vault = &Vault{URL: "http://127.0.0.1:8200", Key: DefaultKEK, TokenFile: "/home/xp/xp/c1/gateway-1/gateway/vault-token"}
	}
	return s
}

// TestKroxyliciousConfigGolden: the Kroxylicious config of proxy and
// encrypt gateways in front of 1 and 3 brokers, over tls and mtls: one
// virtual cluster whose gateway gives each broker a port of its own
// (portIdentifiesNode) on the gateway host, TLS on both legs from PEM
// files, and for encrypt the RecordEncryption filter on Vault's transit
// engine, refusing records whose key it cannot find; a row's tls_version
// and tls_cipher as the client leg's allowed protocols and cipher
// suites. From 0.22.0 the
// upstream is a named clusterDefinitions entry, before it the virtual
// cluster's inline targetCluster.
func TestKroxyliciousConfigGolden(t *testing.T) {
	tests := []struct {
		file, mode, transport string
		brokers               int
		version               string
	}{
		{"proxy-1.yaml", "proxy", "tls", 1, "0.23.0"},
		{"proxy-3.yaml", "proxy", "tls", 3, "0.23.0"},
		{"encrypt-1.yaml", "encrypt", "tls", 1, "0.23.0"},
		{"encrypt-3.yaml", "encrypt", "tls", 3, "0.23.0"},
		{"proxy-3-mtls.yaml", "proxy", "mtls", 3, "0.23.0"},
		{"proxy-1-plaintext.yaml", "proxy", "plaintext", 1, "0.23.0"},
		{"encrypt-3-v0.21.yaml", "encrypt", "tls", 3, "0.21.0"},
		{"encrypt-1-inmemory-v0.12.yaml", "encrypt-inmemory", "tls", 1, "0.12.0"},
		{"proxy-1-tls13-aes256-v0.12.yaml", "proxy", "tls", 1, "0.12.0"},
		{"proxy-1-tls12-chacha20.yaml", "proxy", "sasl_ssl", 1, "0.23.0"},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			mode := tc.mode
			s := kroxySetup("encrypt", tc.transport, tc.brokers)
			if m, ok := strings.CutSuffix(mode, "-inmemory"); ok {
				mode, s.KMS = m, KMS{InMemory: testInMemory()}
			} else {
				s = kroxySetup(mode, tc.transport, tc.brokers)
			}
			s.Version = tc.version
			switch {
			case strings.Contains(tc.file, "tls13-aes256"):
				s.TLS = kafkaconf.TLSChoice{Version: planner.TLSVersion13, Cipher: planner.TLSCipherAES256GCM}
			case strings.Contains(tc.file, "tls12-chacha20"):
				s.TLS = kafkaconf.TLSChoice{Version: planner.TLSVersion12, Cipher: planner.TLSCipherChaCha20}
			}
			b, err := Config(s)
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, tc.file, b)
			// What matters, read back as data rather than as text.
			type upstream struct {
				Name             string         `yaml:"name"`
				BootstrapServers string         `yaml:"bootstrapServers"`
				TLS              map[string]any `yaml:"tls"`
			}
			var cfg struct {
				ClusterDefinitions []upstream `yaml:"clusterDefinitions"`
				VirtualClusters    []struct {
					Name          string    `yaml:"name"`
					TargetCluster *upstream `yaml:"targetCluster"`
					Target        struct {
						Cluster string `yaml:"cluster"`
					} `yaml:"target"`
					Gateways []struct {
						PortIdentifiesNode struct {
							BootstrapAddress string `yaml:"bootstrapAddress"`
							NodeIDRanges     []struct {
								Start int `yaml:"start"`
								End   int `yaml:"end"`
							} `yaml:"nodeIdRanges"`
						} `yaml:"portIdentifiesNode"`
						TLS map[string]any `yaml:"tls"`
					} `yaml:"gateways"`
				} `yaml:"virtualClusters"`
				DefaultFilters []string `yaml:"defaultFilters"`
			}
			if err := yaml.Unmarshal(b, &cfg); err != nil {
				t.Fatal(err)
			}
			vc := cfg.VirtualClusters[0]
			up := vc.TargetCluster
			if release.AtLeast(tc.version, clusterDefinitions) {
				if up != nil || len(cfg.ClusterDefinitions) != 1 || vc.Target.Cluster != cfg.ClusterDefinitions[0].Name || vc.Target.Cluster == "" {
					t.Fatalf("version %s: want the upstream as the clusterDefinitions entry the virtual cluster targets: %+v", tc.version, cfg)
				}
				up = &cfg.ClusterDefinitions[0]
			} else if up == nil || cfg.ClusterDefinitions != nil || vc.Target.Cluster != "" {
				t.Fatalf("version %s: want the upstream inline as targetCluster: %+v", tc.version, cfg)
			}
			gw := vc.Gateways[0].PortIdentifiesNode
			if gw.BootstrapAddress != "198.18.0.21:19192" || gw.NodeIDRanges[0].Start != 0 || gw.NodeIDRanges[0].End != tc.brokers-1 ||
				strings.Count(up.BootstrapServers, ",") != tc.brokers-1 {
				t.Errorf("gateway %+v, upstream %s", gw, up.BootstrapServers)
			}
			if tls := tc.transport != "plaintext"; (vc.Gateways[0].TLS != nil) != tls || (up.TLS != nil) != tls {
				t.Errorf("TLS on the client leg %v, on the broker leg %v, want %v", vc.Gateways[0].TLS != nil, up.TLS != nil, tls)
			}
			// The client leg's protocols and suites: the choice's, by
			// the JDK's names, or none.
			gwTLS := vc.Gateways[0].TLS
			wantProtocols, wantSuites := []any(nil), []any(nil)
			if p := s.TLS.Protocols(); p != "" {
				wantProtocols = []any{p}
			}
			for _, n := range s.TLS.CipherSuites() {
				wantSuites = append(wantSuites, n)
			}
			allowed := func(key string) []any {
				if v, ok := gwTLS[key].(map[string]any); ok {
					l, _ := v["allowed"].([]any)
					return l
				}
				return nil
			}
			if !reflect.DeepEqual(allowed("protocols"), wantProtocols) || !reflect.DeepEqual(allowed("cipherSuites"), wantSuites) {
				t.Errorf("client leg tls %v, want protocols %v and cipher suites %v allowed", gwTLS, wantProtocols, wantSuites)
			}
			if _, ok := up.TLS["protocols"]; ok {
				t.Errorf("broker leg tls %v: the choice is the client leg's", up.TLS)
			}
			if got := strings.Join(cfg.DefaultFilters, ","); (mode == "encrypt") != (got == "encrypt") {
				t.Errorf("default filters %q for mode %s", got, mode)
			}
		})
	}
}

// TestKroxyliciousClusterName: a virtual cluster's name is a DNS label,
// as Kroxylicious requires, whatever the mode key in the service name.
func TestKroxyliciousClusterName(t *testing.T) {
	label := regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`) // VirtualCluster.DNS_LABEL_PATTERN
	tests := []struct{ service, want string }{
		{"gateway-encrypt-0", "gateway-encrypt-0"},
		{"gateway-encrypt.fast-1", "gateway-encrypt-fast-1"},
		{"gateway-proxy_tls-0", "gateway-proxy-tls-0"},
		{"gateway-" + strings.Repeat("x", 60) + "-0", "gateway-" + strings.Repeat("x", 55)},
		{"-._", "xp"},
	}
	for _, tc := range tests {
		got := ClusterName(tc.service)
		if got != tc.want || !label.MatchString(got) || len(got) > 63 {
			t.Errorf("ClusterName(%q) = %q, want %q (a DNS label)", tc.service, got, tc.want)
		}
	}
}

func TestKroxyliciousConfigRejects(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Setup)
		want string
	}{
		{"field_encrypt", func(s *Setup) { s.Mode = "field_encrypt" }, "Kroxylicious runs proxy and encrypt"},
		{"encrypt without a KMS", func(s *Setup) { s.Mode, s.KMS = "encrypt", KMS{} }, "encrypt needs a KMS"},
		{"encrypt on two KMSes", func(s *Setup) {
			s.Mode, s.KMS.Vault, s.KMS.InMemory = "encrypt", &Vault{URL: "http://v:8200", Key: "k", TokenFile: "t"}, testInMemory()
		}, "two KMSes"},
		{"in-memory without the alias", func(s *Setup) { s.Mode, s.KMS.InMemory = "encrypt", testInMemory(); s.KMS.InMemory.Alias = "KEK-other" }, `no KEK aliased "KEK-other"`},
		{"in-memory with a short key", func(s *Setup) {
			s.Mode, s.KMS.InMemory = "encrypt", testInMemory()
			s.KMS.InMemory.KEKs[0].Key = s.KMS.InMemory.KEKs[0].Key[:8]
		}, "AES-128 or AES-256 key"},
		{"unknown transport", func(s *Setup) { s.Transport = "ssl" }, `transport "ssl"`},
		{"no brokers", func(s *Setup) { s.Brokers = 0 }, "with 0 brokers"},
		{"too old", func(s *Setup) { s.Version = "0.10.0" }, "Kroxylicious 0.11.0 or later"},
		{"no version", func(s *Setup) { s.Version = "" }, "Kroxylicious 0.11.0 or later"},
		{"tls choice on plaintext", func(s *Setup) {
			s.Transport, s.TLS = "plaintext", kafkaconf.TLSChoice{Version: planner.TLSVersion13}
		}, "tls_version or tls_cipher on a plaintext client leg"},
		{"tls choice before 0.12.0", func(s *Setup) {
			s.Version, s.TLS = "0.11.0", kafkaconf.TLSChoice{Version: planner.TLSVersion12, Cipher: planner.TLSCipherAES128GCM}
		}, "tls_version and tls_cipher need Kroxylicious 0.12.0 or later"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := kroxySetup("proxy", "tls", 1)
			tc.edit(&s)
			if _, err := Config(s); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}
