package targetfile

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestParseGatewaySection: the gateway: section of a TARGET.yaml, parsed as
// strictly as the rest (unknown keys and bad values name the line).
func TestParseGatewaySection(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"gw.yaml.tmpl", "extra.pem", "sub/extra.pem"} {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o700)
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sha512, sha256 := strings.Repeat("ab", 64), strings.Repeat("cd", 32)
	tests := []struct {
		name  string
		yaml  string
		check func(t *testing.T, g Gateway)
		want  []string // error substrings; nil = parses
	}{
		{name: "none", yaml: "platform: hosts\n", check: func(t *testing.T, g Gateway) {
			if g.Command != nil || g.Kroxylicious != nil {
				t.Fatalf("%+v", g)
			}
		}},
		{name: "command in full", yaml: `platform: hosts
gateway:
  command:
    start: "{{.XP}} gateway --config {{.Config}}"
    config: gw.yaml.tmpl
    files: [extra.pem]
    ready: {check: tcp, timeout: 90s}
    modes: [proxy, encrypt]
`, check: func(t *testing.T, g Gateway) {
			c := g.Command
			if c == nil || c.Start != "{{.XP}} gateway --config {{.Config}}" || c.StartLine != 4 || c.Config != filepath.Join(dir, "gw.yaml.tmpl") ||
				!slices.Equal(c.Files, []string{filepath.Join(dir, "extra.pem")}) || c.Ready != ReadyTCP || c.ReadyTimeout != 90*time.Second ||
				!slices.Equal(c.Modes, []string{"proxy", "encrypt"}) {
				t.Fatalf("%+v", c)
			}
		}},
		{name: "command defaults", yaml: "platform: hosts\ngateway:\n  command: {start: run-gw, modes: [proxy]}\n", check: func(t *testing.T, g Gateway) {
			if c := g.Command; c.Ready != ReadyKafka || c.ReadyTimeout != DefaultReadyTimeout || c.Config != "" {
				t.Fatalf("%+v", c)
			}
		}},
		{name: "kroxylicious", yaml: `platform: hosts
gateway:
  kroxylicious:
    version: 0.23.0
    url: https://github.com/kroxylicious/kroxylicious/releases/download/v0.23.0/kroxylicious-app-0.23.0-bin.tar.gz
    sha512: ` + sha512 + `
    vault: {url: https://releases.hashicorp.com/vault/1.18.3/vault_1.18.3_linux_amd64.zip, sha256: ` + sha256 + `}
`, check: func(t *testing.T, g Gateway) {
			k := g.Kroxylicious
			if k == nil || k.Version != "0.23.0" || k.SHA512 != sha512 || k.Java != "openjdk-21-jre-headless" || k.VaultSHA256 != sha256 {
				t.Fatalf("%+v", k)
			}
		}},
		{name: "unknown gateway key", yaml: "platform: hosts\ngateway:\n  comand: {}\n", want: []string{`target.yaml:3: unknown key gateway."comand"; did you mean "command"?`}},
		{name: "unknown command key", yaml: "platform: hosts\ngateway:\n  command:\n    start: x\n    modes: [proxy]\n    confg: gw.yaml.tmpl\n",
			want: []string{`target.yaml:6: unknown key gateway.command."confg"; did you mean "config"?`}},
		{name: "no start", yaml: "platform: hosts\ngateway:\n  command: {modes: [proxy]}\n", want: []string{"target.yaml:3: gateway.command: no start"}},
		{name: "no modes", yaml: "platform: hosts\ngateway:\n  command: {start: x}\n", want: []string{"target.yaml:3: gateway.command: no modes"}},
		{name: "unknown mode", yaml: "platform: hosts\ngateway:\n  command: {start: x, modes: [proxi]}\n",
			want: []string{`target.yaml:3: gateway.command.modes: "proxi" is not one of`, `did you mean "proxy"?`}},
		{name: "direct mode is no gateway mode", yaml: "platform: hosts\ngateway:\n  command: {start: x, modes: [tls]}\n", want: []string{`gateway.command.modes: "tls" is not one of`}},
		{name: "config missing", yaml: "platform: hosts\ngateway:\n  command:\n    start: x\n    modes: [proxy]\n    config: nowhere.tmpl\n",
			want: []string{"target.yaml:6: gateway.command.config:", "no such file"}},
		{name: "files clash", yaml: "platform: hosts\ngateway:\n  command:\n    start: x\n    modes: [proxy]\n    files: [extra.pem, sub/extra.pem]\n",
			want: []string{"target.yaml:6: gateway.command.files: a second file named extra.pem"}},
		{name: "bad ready check", yaml: "platform: hosts\ngateway:\n  command:\n    start: x\n    modes: [proxy]\n    ready: {check: http}\n",
			want: []string{`target.yaml:6: gateway.command.ready.check: "http" is not one of kafka, tcp`}},
		{name: "bad ready timeout", yaml: "platform: hosts\ngateway:\n  command:\n    start: x\n    modes: [proxy]\n    ready: {timeout: soon}\n",
			want: []string{"target.yaml:6: gateway.command.ready.timeout: want a duration"}},
		{name: "kroxylicious incomplete", yaml: "platform: hosts\ngateway:\n  kroxylicious: {version: 0.23.0}\n", want: []string{"target.yaml:3: gateway.kroxylicious: no url, sha512"}},
		{name: "kroxylicious bad sha", yaml: "platform: hosts\ngateway:\n  kroxylicious: {version: 0.23.0, url: https://example.org/k.tgz, sha512: abc}\n",
			want: []string{"target.yaml:3: gateway.kroxylicious.sha512: 3 characters, want the tarball's SHA-512"}},
		{name: "kroxylicious url with a quote", yaml: "platform: hosts\ngateway:\n  kroxylicious: {version: 0.23.0, url: \"https://example.org/k'.tgz\", sha512: " + sha512 + "}\n",
			want: []string{"gateway.kroxylicious.url: quotes"}},
		{name: "kroxylicious too old", yaml: "platform: hosts\ngateway:\n  kroxylicious: {version: 0.10.0, url: https://example.org/k.tgz, sha512: " + sha512 + "}\n",
			want: []string{"target.yaml:3: gateway.kroxylicious.version: 0.10.0: xp renders the config of Kroxylicious 0.11.0 or later"}},
		{name: "vault without sum", yaml: "platform: hosts\ngateway:\n  kroxylicious: {version: 0.23.0, url: https://example.org/k.tgz, sha512: " + sha512 + ", vault: {url: https://example.org/v.zip}}\n",
			want: []string{"gateway.kroxylicious.vault: give both url and sha256"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tf, err := Parse(filepath.Join(dir, "target.yaml"), []byte(tc.yaml), os.Getenv)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				tc.check(t, tf.Gateway)
				return
			}
			var te *Error
			if !errors.As(err, &te) {
				t.Fatalf("error %v is no *targetfile.Error", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestCheckGatewayKind: which gateway rows a target's gateway: section can
// run, and the fix the refusal names.
func TestCheckGatewayKind(t *testing.T) {
	full := Gateway{Command: &GatewayCommand{Modes: []string{"proxy", "encrypt"}},
		Kroxylicious: &Kroxylicious{Version: "0.23.0", KMS: KMSVault, VaultURL: "https://example.org/v.zip"}}
	inMemory := Gateway{Kroxylicious: &Kroxylicious{Version: "0.12.0", KMS: KMSInMemory}}
	noVault := Gateway{Kroxylicious: &Kroxylicious{Version: "0.23.0"}}
	tests := []struct {
		name           string
		g              Gateway
		kind, security string
		want           string // "" = runs
	}{
		{name: "builtin needs nothing", g: Gateway{}, kind: "builtin", security: "field_encrypt"},
		{name: "command proxy", g: full, kind: "command", security: "proxy"},
		{name: "command mode it lacks", g: full, kind: "command", security: "field_encrypt", want: "add field_encrypt to gateway.command.modes"},
		{name: "command without section", g: Gateway{}, kind: "command", security: "proxy", want: "no gateway.command section"},
		{name: "kroxylicious encrypt", g: full, kind: "kroxylicious", security: "encrypt"},
		{name: "kroxylicious encrypt without vault", g: noVault, kind: "kroxylicious", security: "encrypt", want: "give gateway.kroxylicious.vault (url, sha256: a Vault dev server) or kms: inmemory"},
		{name: "kroxylicious encrypt in memory", g: inMemory, kind: "kroxylicious", security: "encrypt"},
		{name: "kroxylicious field_encrypt", g: full, kind: "kroxylicious", security: "field_encrypt", want: "no field-level encryption filter"},
		{name: "kroxylicious without section", g: Gateway{}, kind: "kroxylicious", security: "proxy", want: "no gateway.kroxylicious section"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.g.CheckGatewayKind(tc.kind, tc.security)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
