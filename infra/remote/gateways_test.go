package remote

import (
	"cmp"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/xp-bench/xp/infra/endpoint"
	"github.com/xp-bench/xp/infra/gateway"
	"github.com/xp-bench/xp/infra/gateway/encrypt"
	"github.com/xp-bench/xp/infra/gateway/envelope"
	"github.com/xp-bench/xp/infra/local"
	"github.com/xp-bench/xp/infra/pki"
	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/infra/targetfile"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/runner/loadgen"
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
	// The schemas as uploadSchemas leaves them on a gateway host.
	schemaDir := filepath.Join(dir, "schema")
	if err := os.Mkdir(schemaDir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"record.avsc", "record.pb"} {
		b, err := loadgen.Schema.ReadFile("schema/" + f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(schemaDir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name       string
		spec       GatewaySpec
		upstream   string
		wantFilter bool
		// wantSchema is the schema file the encrypt section names.
		wantSchema string
		wantErr    string
		// noSchemas renders with an empty schema directory.
		noSchemas bool
	}{
		{name: "proxy over tls", spec: GatewaySpec{Key: "proxy", Security: "proxy", Transport: "tls"}, upstream: planner.SecurityTLS},
		{name: "encrypt over tls", spec: GatewaySpec{Key: "encrypt", Security: "encrypt", Transport: "tls"}, upstream: planner.SecurityTLS, wantFilter: true},
		{name: "field_encrypt over mtls, fast", spec: GatewaySpec{Key: "field_encrypt.mtls.fast", Security: "field_encrypt", Transport: "mtls", Encoding: "json", Crypto: "fast"}, upstream: planner.SecurityMTLS, wantFilter: true},
		{name: "field_encrypt of avro over sasl_ssl", spec: GatewaySpec{Key: "field_encrypt.avro.sasl_ssl", Security: "field_encrypt", Transport: "sasl_ssl", Encoding: "avro"},
			upstream: planner.SecurityTLS, wantFilter: true, wantSchema: "avro_schema: " + filepath.Join(schemaDir, "record.avsc")},
		{name: "field_encrypt of protobuf over tls", spec: GatewaySpec{Key: "field_encrypt.protobuf", Security: "field_encrypt", Transport: "tls", Encoding: "protobuf"},
			upstream: planner.SecurityTLS, wantFilter: true, wantSchema: "protobuf_descriptor_set: " + filepath.Join(schemaDir, "record.pb")},
		{name: "field_encrypt fpe of protobuf", spec: GatewaySpec{Key: "field_encrypt.fpe.protobuf", Security: "field_encrypt", Transport: "tls", Encoding: "protobuf", Cipher: "fpe"},
			upstream: planner.SecurityTLS, wantFilter: true, wantSchema: "cipher: fpe"},
		{name: "field_encrypt of avro without its schema", spec: GatewaySpec{Key: "field_encrypt.avro", Security: "field_encrypt", Transport: "tls", Encoding: "avro"},
			wantErr: "record.avsc", noSchemas: true},
		{name: "proxy over sasl_ssl narrowed to tls 1.2 with a suite", spec: GatewaySpec{Key: "proxy.sasl_ssl", Security: "proxy", Transport: "sasl_ssl",
			TLSVersion: planner.TLSVersion12, TLSCipher: planner.TLSCipherAES256GCM}, upstream: planner.SecurityTLS},
		{name: "proxy over plaintext", spec: GatewaySpec{Key: "proxy.plaintext", Security: "proxy", Transport: "plaintext"}, upstream: planner.SecurityPlaintext},
		{name: "not a gateway mode", spec: GatewaySpec{Key: "tls", Security: "tls", Transport: "tls"}, wantErr: `"tls" is not a gateway mode`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sd := schemaDir
			if tc.noSchemas {
				sd = t.TempDir()
			}
			b, err := GatewayConfigYAML(local.GatewaySetup{Host: "198.18.0.21", Transport: tc.spec.Transport,
				Upstream: []string{"198.18.0.11:30001"}, CA: ca.CAPath(), Cert: cert, Key: key, Crypto: tc.spec.Crypto}, tc.spec, vault, sd)
			if err == nil && tc.wantErr != "" {
				// A missing schema is found when the gateway loads its config.
				_, err = gateway.ParseConfig(b, dir, encrypt.Extension())
			}
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
			wantVersion, wantCipher := cmp.Or(tc.spec.TLSVersion, planner.TLSDefault), cmp.Or(tc.spec.TLSCipher, planner.TLSDefault)
			if cfg.Client.TLSVersion != wantVersion || cfg.Client.TLSCipher != wantCipher {
				t.Errorf("client leg narrowed to %q %q, want %q %q", cfg.Client.TLSVersion, cfg.Client.TLSCipher, wantVersion, wantCipher)
			}
			if got := len(cfg.Filters) > 0; got != tc.wantFilter {
				t.Errorf("filters %d, want filter %v", len(cfg.Filters), tc.wantFilter)
			}
			if tc.wantSchema != "" && !strings.Contains(string(b), tc.wantSchema) {
				t.Errorf("the encrypt section lacks %q:\n%s", tc.wantSchema, b)
			}
			if tc.wantFilter && (!strings.Contains(string(b), "vault: "+vault) || !strings.Contains(string(b), "create_vault: false")) {
				t.Errorf("the encrypt section is not on the uploaded vault:\n%s", b)
			}
		})
	}
}

// TestGatewaySpecs: one spec per mode key the rows run through, with the
// record encoding of field_encrypt; direct rows are left out.
func TestGatewaySpecs(t *testing.T) {
	rows := []planner.Row{
		{Security: "plaintext"},
		{Security: "proxy", GatewayTransport: "tls", GatewayCrypto: "std"},
		{Security: "proxy", GatewayTransport: "tls", GatewayCrypto: "std"},
		{Security: "encrypt", GatewayTransport: "tls", GatewayCrypto: "fast"},
		{Security: "field_encrypt", GatewayTransport: "tls", Encoding: "avro", GatewayCrypto: "std"},
		{Security: "field_encrypt", GatewayTransport: "sasl_ssl", Encoding: "json", GatewayCrypto: "std"},
		{Security: "field_encrypt", GatewayTransport: "sasl_ssl", Encoding: "json", FieldCipher: "fpe", GatewayCrypto: "std"},
	}
	var keys []string
	for _, s := range GatewaySpecs(rows, target.ModeKey) {
		keys = append(keys, s.Key+"/"+s.Transport+"/"+s.Encoding+s.Cipher)
	}
	if got, want := strings.Join(keys, ","), "encrypt.fast/tls/json,field_encrypt.avro/tls/avro,field_encrypt.fpe.sasl_ssl/sasl_ssl/jsonfpe,field_encrypt.sasl_ssl/sasl_ssl/json,proxy/tls/json"; got != want {
		t.Errorf("specs %s, want %s", got, want)
	}
}

// TestGatewaySpecsTLS: a gateway spec carries its rows' tls_version,
// tls_cipher and tls_key for the client leg (each default as ""), none
// for a plaintext client leg; the gateway hosts' certificate takes the
// key the specs name.
func TestGatewaySpecsTLS(t *testing.T) {
	row := func(tr, version, cipher, key string) planner.Row {
		return planner.Row{Security: planner.SecurityProxy, GatewayTransport: tr, TLSVersion: version, TLSCipher: cipher, TLSKey: key}
	}
	for _, tc := range []struct {
		name    string
		row     planner.Row
		want    [3]string
		wantKey string
	}{
		{"defaults", row(planner.SecurityTLS, planner.TLSDefault, planner.TLSDefault, planner.TLSKeyECDSAP256), [3]string{}, ""},
		{"tls 1.2 with a suite and an rsa key", row(planner.SecuritySASLSSL, planner.TLSVersion12, planner.TLSCipherAES256GCM, planner.TLSKeyRSA2048),
			[3]string{planner.TLSVersion12, planner.TLSCipherAES256GCM, planner.TLSKeyRSA2048}, planner.TLSKeyRSA2048},
		{"plaintext client leg", row(planner.SecurityPlaintext, planner.TLSVersion13, planner.TLSDefault, planner.TLSKeyRSA4096), [3]string{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			specs := GatewaySpecs([]planner.Row{tc.row}, target.ModeKey)
			if len(specs) != 1 {
				t.Fatalf("%d specs", len(specs))
			}
			s := specs[0]
			if got := [3]string{s.TLSVersion, s.TLSCipher, s.TLSKey}; got != tc.want {
				t.Errorf("client leg TLS %q, want %q", got, tc.want)
			}
			if k := gatewayKey(specs); k != tc.wantKey {
				t.Errorf("gateway certificate key %q, want %q", k, tc.wantKey)
			}
		})
	}
}

// TestGatewayInfo: every gateway mode a deploy serves names its gateway in
// the endpoints (and so in each attempt's environment): Kroxylicious with
// its release and, for encrypt, its KMS; a command gateway with its start
// line; xp's own with the crypto the rows asked for.
func TestGatewayInfo(t *testing.T) {
	d := &Deployer{o: DeployerOptions{Gateway: targetfile.Gateway{
		Kroxylicious: &targetfile.Kroxylicious{Version: "0.12.0", KMS: targetfile.KMSInMemory},
		Command:      &targetfile.GatewayCommand{Start: "exec /opt/gw --config {{.Config}}"},
	}}}
	tests := []struct {
		kind string
		spec GatewaySpec
		want endpoint.GatewayInfo
	}{
		{planner.GatewayKindKroxylicious, GatewaySpec{Security: "encrypt"}, endpoint.GatewayInfo{Kind: "kroxylicious", Version: "0.12.0", KMS: "inmemory"}},
		{planner.GatewayKindKroxylicious, GatewaySpec{Security: "proxy"}, endpoint.GatewayInfo{Kind: "kroxylicious", Version: "0.12.0"}},
		{planner.GatewayKindCommand, GatewaySpec{Security: "proxy"}, endpoint.GatewayInfo{Kind: "command", Start: "exec /opt/gw --config {{.Config}}"}},
		{planner.GatewayKindBuiltin, GatewaySpec{Security: "encrypt", Crypto: "fast"}, endpoint.GatewayInfo{Kind: "builtin", Crypto: "fast"}},
		{"", GatewaySpec{Security: "proxy"}, endpoint.GatewayInfo{Kind: "builtin", Crypto: "std"}},
	}
	for _, tc := range tests {
		if got := d.gatewayInfo(tc.kind, tc.spec); got == nil || !reflect.DeepEqual(*got, tc.want) {
			t.Errorf("gatewayInfo(%q, %+v) = %+v, want %+v", tc.kind, tc.spec, got, tc.want)
		}
	}
}
