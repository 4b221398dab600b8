package localtarget

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xp-bench/xp/internal/disttest"
	"github.com/xp-bench/xp/planner"
)

// TestKroxyliciousOpen: a gateway.kroxylicious section is checked when
// the target opens (the release unpacked once into xp's cache, a Java too
// old for it refused naming the file, the line and the fix), and CheckRow
// refuses the kroxylicious rows the local target cannot run, each saying
// why: encrypt on Vault, field_encrypt, gateway_crypto fast, and any
// without a gateway.kroxylicious section.
func TestKroxyliciousOpen(t *testing.T) {
	kx := disttest.Kroxylicious(t)
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	section := func(kms string) string {
		return fmt.Sprintf("platform: local\ngateway:\n  kroxylicious:\n    url: %s\n    sha512: %s\n    %s\n", kx.Path, kx.SHA512, kms)
	}
	tg, err := openFile(t, dir, section("kms: inmemory"), testEnv(cache, nil))
	if err != nil {
		t.Fatal(err)
	}
	x := tg.(*Target).kroxy
	if x == nil || x.rel.Version != kx.Version || !strings.HasPrefix(x.rel.Home, filepath.Join(cache, "xp", "kroxylicious")+"/") {
		t.Fatalf("kroxylicious %+v, want release %s unpacked under %s", x, kx.Version, cache)
	}
	if _, err := os.Stat(filepath.Join(x.rel.Home, "bin", "kroxylicious-start.sh")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(x.javaHome, "bin", "java")); err != nil {
		t.Errorf("JAVA_HOME %s: %v", x.javaHome, err)
	}

	oldJava := t.TempDir()
	os.WriteFile(filepath.Join(oldJava, "java"), []byte("#!/bin/sh\necho 'openjdk version \"11.0.22\" 2024-01-16' >&2\n"), 0o755)
	_, err = openFile(t, dir, section("kms: inmemory"), testEnv(cache, map[string]string{"JAVA_HOME": "", "PATH": oldJava}))
	for _, w := range []string{"target.yaml:4: gateway.kroxylicious: Kroxylicious " + kx.Version + " needs Java 17 or later", "is Java 11", "openjdk-17-jre-headless"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("an old java: %v, want %q", err, w)
		}
	}

	vaultTg, err := openFile(t, dir, section("vault: {url: https://example.org/vault.zip, sha256: "+strings.Repeat("a", 64)+"}"), testEnv(cache, nil))
	if err != nil {
		t.Fatal(err)
	}
	row := func(kind, security, crypto string) *planner.Row {
		return &planner.Row{Security: security, GatewayKind: kind, GatewayTransport: "tls", GatewayCrypto: crypto, Encoding: "json", Brokers: 1}
	}
	for _, c := range []struct {
		name string
		t    *Target
		row  *planner.Row
		want string // "" = accepted
	}{
		{"proxy", tg.(*Target), row("kroxylicious", "proxy", "std"), ""},
		{"encrypt in memory", tg.(*Target), row("kroxylicious", "encrypt", "std"), ""},
		{"proxy beside vault", vaultTg.(*Target), row("kroxylicious", "proxy", "std"), ""},
		{"encrypt on vault", vaultTg.(*Target), row("kroxylicious", "encrypt", "std"),
			"target.yaml:6: gateway_kind kroxylicious with security encrypt: the local target runs Kroxylicious's in-memory KMS only; set kms: inmemory"},
		{"field_encrypt", tg.(*Target), row("kroxylicious", "field_encrypt", "std"), "Kroxylicious has no field-level encryption filter"},
		{"crypto fast", tg.(*Target), row("kroxylicious", "proxy", "fast"), "gateway_crypto fast is xp's builtin gateway's"},
		{"no section", New(""), row("kroxylicious", "proxy", "std"), "with a gateway.kroxylicious section"},
		{"command", tg.(*Target), row("command", "proxy", "std"), "the local target runs the builtin and kroxylicious gateways"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.t.CheckRow(c.row)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("CheckRow: %v, want %q", err, c.want)
			}
		})
	}
}
