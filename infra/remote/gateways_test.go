package remote

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xp-bench/xp/infra/gateway"
	"github.com/xp-bench/xp/infra/gateway/encrypt"
	"github.com/xp-bench/xp/infra/gateway/envelope"
	"github.com/xp-bench/xp/infra/local"
	"github.com/xp-bench/xp/infra/pki"
	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/planner"
)

// TestGatewayConfigYAML renders the config of a remote gateway and loads it
// as `xp gateway --config` does: listening on and advertising the gateway
// host, forwarding to the broker's listener of the fronted mode, with the
// encrypt section on the uploaded vault for the encrypting modes.
func TestGatewayConfigYAML(t *testing.T) {
	dir := t.TempDir()
	ca, err := pki.New(filepath.Join(dir, "pki"))
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := ca.Gateway("gateway-gw", "198.18.0.21")
	if err != nil {
		t.Fatal(err)
	}
	vault := filepath.Join(dir, "vault.keys")
	if err := envelope.AddKey(vault, "k1"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		spec       GatewaySpec
		upstream   string
		wantFilter bool
		wantErr    string
	}{
		{name: "proxy over tls", spec: GatewaySpec{Key: "proxy", Security: "proxy", Transport: "tls"}, upstream: gateway.TLS},
		{name: "encrypt over tls", spec: GatewaySpec{Key: "encrypt", Security: "encrypt", Transport: "tls"}, upstream: gateway.TLS, wantFilter: true},
		{name: "field_encrypt over mtls, fast", spec: GatewaySpec{Key: "field_encrypt.mtls.fast", Security: "field_encrypt", Transport: "mtls", Encoding: "json", Crypto: "fast"}, upstream: gateway.MTLS, wantFilter: true},
		{name: "proxy over plaintext", spec: GatewaySpec{Key: "proxy.plaintext", Security: "proxy", Transport: "plaintext"}, upstream: gateway.Plaintext},
		{name: "not a gateway mode", spec: GatewaySpec{Key: "tls", Security: "tls", Transport: "tls"}, wantErr: `"tls" is not a gateway mode`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := GatewayConfigYAML(local.GatewaySetup{Host: "198.18.0.21", Transport: tc.spec.Transport,
				Upstream: []string{"198.18.0.11:30001"}, CA: ca.CAPath(), Cert: cert, Key: key, Crypto: tc.spec.Crypto}, tc.spec, vault)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := gateway.ParseConfig(b, dir, encrypt.Extension())
			if err != nil {
				t.Fatalf("%v\n%s", err, b)
			}
			if cfg.Listen.Host != "198.18.0.21" || !slices.Equal(cfg.Upstream.Bootstrap, []string{"198.18.0.11:30001"}) ||
				cfg.Upstream.Transport != tc.upstream || cfg.Client.Transport != tc.spec.Transport {
				t.Errorf("listen %s, upstream %v over %s, client %s:\n%s", cfg.Listen.Host, cfg.Upstream.Bootstrap, cfg.Upstream.Transport, cfg.Client.Transport, b)
			}
			if got := len(cfg.Filters) > 0; got != tc.wantFilter {
				t.Errorf("filters %d, want filter %v", len(cfg.Filters), tc.wantFilter)
			}
			if tc.wantFilter && (!strings.Contains(string(b), "vault: "+vault) || !strings.Contains(string(b), "create_vault: false")) {
				t.Errorf("the encrypt section is not on the uploaded vault:\n%s", b)
			}
		})
	}
}

// TestGatewaySpecs: one spec per mode key the rows run through; direct
// rows and schema-bound field_encrypt encodings are left out.
func TestGatewaySpecs(t *testing.T) {
	rows := []planner.Row{
		{Security: "plaintext"},
		{Security: "proxy", GatewayTransport: "tls", GatewayCrypto: "std"},
		{Security: "proxy", GatewayTransport: "tls", GatewayCrypto: "std"},
		{Security: "encrypt", GatewayTransport: "tls", GatewayCrypto: "fast"},
		{Security: "field_encrypt", GatewayTransport: "tls", Encoding: "avro", GatewayCrypto: "std"},
		{Security: "field_encrypt", GatewayTransport: "sasl_ssl", Encoding: "json", GatewayCrypto: "std"},
	}
	var keys []string
	for _, s := range GatewaySpecs(rows, target.ModeKey) {
		keys = append(keys, s.Key+"/"+s.Transport)
	}
	if got, want := strings.Join(keys, ","), "encrypt.fast/tls,field_encrypt.sasl_ssl/sasl_ssl,proxy/tls"; got != want {
		t.Errorf("specs %s, want %s", got, want)
	}
}
