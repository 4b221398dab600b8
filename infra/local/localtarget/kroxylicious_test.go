package localtarget

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/internal/disttest"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/runner/loadgen"
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

// TestKroxyliciousGroup: a group of kroxylicious proxy rows over mtls and
// sasl_ssl in front of the embedded cluster runs one Kroxylicious JVM
// each, whose bootstrap and client config the endpoint names (a client
// with the mtls mode's certificate reaches the cluster through it), with
// its provenance; each row's load (SCRAM-SHA-256 and PLAIN relayed to the
// cluster) negotiates the client leg's tls_version 1.3, tls_cipher
// aes256-gcm and tls_key rsa2048, read back from its connections;
// telemetry samples it as kroxylicious-proxy.mtls, role gateway; its log is
// collected; Down stops it.
func TestKroxyliciousGroup(t *testing.T) {
	kx := disttest.Kroxylicious(t)
	dir := t.TempDir()
	tg, err := openFile(t, dir, fmt.Sprintf("platform: local\ngateway:\n  kroxylicious: {url: %s, sha512: %s}\n", kx.Path, kx.SHA512),
		testEnv(filepath.Join(dir, "cache"), nil))
	if err != nil {
		t.Fatal(err)
	}
	lt := tg.(*Target)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	defer lt.Down(ctx)
	// The client legs' TLS of the rows: TLS 1.3 narrowed to AES-256-GCM,
	// which only the server can choose (a Go client offers every TLS 1.3
	// suite), and an RSA 2048 certificate (the embedded cluster's own
	// listeners keep ECDSA P-256).
	rows := []planner.Row{{Security: "proxy", GatewayKind: "kroxylicious", GatewayTransport: "mtls", Gateways: 1, Brokers: 1},
		{Security: "proxy", GatewayKind: "kroxylicious", GatewayTransport: "sasl_ssl", Gateways: 1, Brokers: 1, SASLMechanism: planner.SASLScramSHA256},
		{Security: "proxy", GatewayKind: "kroxylicious", GatewayTransport: "sasl_ssl", Gateways: 1, Brokers: 1, SASLMechanism: planner.SASLPlain}}
	for i := range rows {
		r := &rows[i]
		r.Platform, r.TLSVersion, r.TLSCipher, r.TLSKey = "local", planner.TLSVersion13, planner.TLSCipherAES256GCM, planner.TLSKeyRSA2048
		r.InterBrokerSecurity, r.Authorizer = planner.SecurityPlaintext, planner.AuthorizerNone
		if r.SASLMechanism == "" {
			r.SASLMechanism = planner.SASLScramSHA512
		}
		if err := servesSurface(r, false); err != nil {
			t.Fatal(err)
		}
	}
	g := target.Group{Key: rows[0].InfraKey(), Rows: rows}
	ep, err := lt.Up(ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	// Each row's load, the SASL ones with their mechanism relayed to the
	// cluster, negotiates the rows' TLS with Kroxylicious, read back from
	// the client's connections.
	for _, r := range rows {
		mode := target.ModeKey(&r)
		props, err := kafkaconf.ReadClientConfig(ep.Modes[mode].ClientConfig)
		if err != nil {
			t.Fatal(err)
		}
		res, err := loadgen.Run(ctx, loadgen.Config{ClientConfig: props, TLSVersion: r.TLSVersion, TLSCipher: r.TLSCipher, SASLMechanism: r.SASLMechanism,
			Rate: 300, Partitions: 1, ConsumerGroups: 1, Duration: time.Second, DrainTimeout: 10 * time.Second, Seed: 1})
		if err != nil {
			t.Fatalf("%s %s: %v", mode, r.SASLMechanism, err)
		}
		c := res.Connections
		wantMech := ""
		if r.GatewayTransport == planner.SecuritySASLSSL {
			wantMech = planner.KafkaSASLMechanism(r.SASLMechanism)
		}
		if !res.Healthy || res.Published == 0 || res.Consumed != res.Published || c == nil ||
			c.TLSVersion != "TLS 1.3" || c.TLSCipher != "TLS_AES_256_GCM_SHA384" || c.TLSKey != planner.TLSKeyRSA2048 || c.SASLMechanism != wantMech {
			t.Errorf("%s %s: healthy %v %v, published %d consumed %d, connections %+v; want TLS 1.3, TLS_AES_256_GCM_SHA384, rsa2048, %q",
				mode, r.SASLMechanism, res.Healthy, res.Reasons, res.Published, res.Consumed, c, wantMech)
		}
	}
	e, ok := ep.Modes["proxy.mtls"]
	if !ok || len(e.Bootstrap) != 1 || e.Gateway == nil || e.Gateway.Kind != "kroxylicious" || e.Gateway.Version != kx.Version || e.Gateway.KMS != "" {
		t.Fatalf("endpoint %+v (gateway %+v), want proxy.mtls through one Kroxylicious %s", e, e.Gateway, kx.Version)
	}
	props, err := kafkaconf.ReadClientConfig(e.ClientConfig)
	if err != nil {
		t.Fatal(err)
	}
	if props[kafkaconf.BootstrapServers] != e.Bootstrap[0] {
		t.Errorf("client config bootstrap %q, want %q", props[kafkaconf.BootstrapServers], e.Bootstrap[0])
	}
	opts, err := kafkaconf.ClientOpts(props)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	brokers, err := kadm.NewClient(cl).ListBrokers(ctx)
	cl.Close()
	if err != nil || len(brokers) != 1 || brokers[0].Host != "127.0.0.1" {
		t.Errorf("brokers through Kroxylicious: %v, %v; want one, advertised on 127.0.0.1", brokers, err)
	}
	samples, err := lt.Sample(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pid := 0
	for _, s := range samples {
		if s.Host == "kroxylicious-proxy.mtls" {
			if s.Role != planner.RoleGateway || s.CPU <= 0 || s.MemMiB <= 0 {
				t.Errorf("sample %+v: want role gateway with CPU and memory", s)
			}
			pid = lt.kroxies[0].proc.Pid()
		}
	}
	if pid == 0 {
		t.Fatalf("samples %+v: no kroxylicious-proxy.mtls", samples)
	}
	logs, err := lt.CollectLogs(ctx, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range logs {
		if l.Name == "kroxylicious-proxy.mtls.log" {
			found = strings.Contains(string(l.Text), "kroxylicious: "+kx.Version)
		}
	}
	if !found {
		t.Errorf("logs %v: no kroxylicious-proxy.mtls.log naming Kroxylicious %s", logs, kx.Version)
	}
	if err := lt.Down(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
		t.Errorf("Kroxylicious %d still runs after Down", pid)
	}
}
