package targetfile

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xp-bench/xp/planner"
)

func TestParseTargetFileExisting(t *testing.T) {
	env := func(k string) string {
		if k == "HOME" {
			return "/home/op"
		}
		return ""
	}
	dir := t.TempDir()
	tests := []struct {
		name  string
		yaml  string
		check func(t *testing.T, tf *File)
		want  []string // error substrings; nil = parses
	}{
		{name: "in full", yaml: `platform: existing
endpoints:
  plaintext: {bootstrap: ["kafka-1.stg:9092", "kafka-2.stg:9092"], client_config: plaintext.properties}
  tls:       {bootstrap: ["kafka-1.stg:9093"], client_config: /etc/kafka/tls.properties}
  proxy.sasl_ssl: {bootstrap: ["gw.stg:6969"], client_config: ~/gw.properties}
  field_encrypt.avro.mtls: {bootstrap: ["gw.stg:6970"], client_config: fe.properties}
  field_encrypt.fpe: {bootstrap: ["gw.stg:6971"], client_config: fpe.properties}
topic_prefix: bench.
telemetry:
  ssh: {user: ops, private_key: ~/.ssh/id_ed25519, known_hosts: strict}
  hosts:
    - {name: b1, address: 10.0.0.11, role: broker}
    - {name: gw, address: 10.0.0.21, ssh_port: 2222, role: gateway}
hourly_price_usd: 1.25
budget_usd: 10
`, check: func(t *testing.T, tf *File) {
			e := tf.Existing
			if e == nil || tf.Platform != PlatformExisting {
				t.Fatalf("%+v", tf)
			}
			if got := e.Endpoints["plaintext"]; !slices.Equal(got.Bootstrap, []string{"kafka-1.stg:9092", "kafka-2.stg:9092"}) ||
				got.ClientConfig != filepath.Join(dir, "plaintext.properties") || got.Line != 3 {
				t.Errorf("plaintext %+v", got)
			}
			if got := e.Endpoints["tls"].ClientConfig; got != "/etc/kafka/tls.properties" {
				t.Errorf("tls %s", got)
			}
			if got := e.Endpoints["proxy.sasl_ssl"].ClientConfig; got != "/home/op/gw.properties" {
				t.Errorf("proxy %s", got)
			}
			if e.EndpointsLine != 2 || e.TopicPrefix != "bench." || e.TopicPrefixLine != 8 || e.HourlyPriceUSD != 1.25 || tf.BudgetUSD != 10 {
				t.Errorf("%+v", e)
			}
			tel := e.Telemetry
			if tel == nil || tel.SSH.User != "ops" || tel.SSH.PrivateKey != "/home/op/.ssh/id_ed25519" || tel.SSH.KnownHosts != KnownHostsStrict ||
				len(tel.Hosts) != 2 || tel.Hosts[1] != (TelemetryHost{Name: "gw", Address: "10.0.0.21", SSHPort: 2222, Role: "gateway", Line: 13}) {
				t.Errorf("telemetry %+v", tel)
			}
		}},
		{name: "defaults", yaml: "platform: existing\nendpoints:\n  plaintext: {bootstrap: [\"k:9092\"], client_config: p.properties}\n",
			check: func(t *testing.T, tf *File) {
				if tf.Existing.TopicPrefix != DefaultTopicPrefix || tf.Existing.Telemetry != nil || tf.Existing.HourlyPriceUSD != 0 {
					t.Fatalf("%+v", tf.Existing)
				}
			}},
		{name: "no endpoints", yaml: "platform: existing\n", want: []string{"target.yaml: platform existing needs endpoints"}},
		{name: "mode typo", yaml: "platform: existing\nendpoints:\n  tsl: {bootstrap: [\"k:1\"], client_config: c}\n",
			want: []string{`target.yaml:3: endpoints.tsl: "tsl" is not a security mode`, `did you mean "tls"?`}},
		{name: "direct mode with suffix", yaml: "platform: existing\nendpoints:\n  tls.mtls: {bootstrap: [\"k:1\"], client_config: c}\n",
			want: []string{"target.yaml:3: endpoints.tls.mtls: a direct mode's key is its name alone"}},
		{name: "gateway crypto fast", yaml: "platform: existing\nendpoints:\n  proxy.fast: {bootstrap: [\"k:1\"], client_config: c}\n",
			want: []string{"endpoints.proxy.fast: gateway_crypto fast is the crypto of xp's own gateway"}},
		{name: "unknown gateway part", yaml: "platform: existing\nendpoints:\n  proxy.ssl: {bootstrap: [\"k:1\"], client_config: c}\n",
			want: []string{`endpoints.proxy.ssl: "ssl": after the mode`}},
		{name: "endpoint without config", yaml: "platform: existing\nendpoints:\n  tls: {bootstrap: [\"k:1\"]}\n",
			want: []string{"target.yaml:3: endpoints.tls: needs bootstrap (a list of host:port) and client_config"}},
		{name: "endpoint key typo", yaml: "platform: existing\nendpoints:\n  tls: {bootstrap: [\"k:1\"], client_conf: c}\n",
			want: []string{`target.yaml:3: unknown key endpoints.tls."client_conf"; did you mean "client_config"?`}},
		{name: "bad address", yaml: "platform: existing\nendpoints:\n  tls: {bootstrap: [\"k\"], client_config: c}\n",
			want: []string{`target.yaml:3: endpoints.tls.bootstrap: "k" is not host:port`}},
		{name: "bad prefix", yaml: "platform: existing\nendpoints:\n  tls: {bootstrap: [\"k:1\"], client_config: c}\ntopic_prefix: \"a b\"\n",
			want: []string{`target.yaml:4: topic_prefix: "a b"`}},
		{name: "reserved prefix", yaml: "platform: existing\nendpoints:\n  tls: {bootstrap: [\"k:1\"], client_config: c}\ntopic_prefix: \"__bad-\"\n",
			want: []string{`target.yaml:4: topic_prefix: "__bad-": Kafka reserves names starting with "__" for its internal topics`, `e.g. "xp-"`}},
		{name: "provisioning keys", yaml: "platform: existing\nendpoints:\n  tls: {bootstrap: [\"k:1\"], client_config: c}\nteardown: never\nvars: {a: 1}\n",
			want: []string{"target.yaml:4: teardown: not used with platform existing", "target.yaml:5: vars: not used with platform existing"}},
		{name: "existing keys elsewhere", yaml: "platform: hosts\ntopic_prefix: x-\nhourly_price_usd: 2\n",
			want: []string{"target.yaml:2: topic_prefix: only with platform: existing", "target.yaml:3: hourly_price_usd: only with platform: existing"}},
		{name: "telemetry without hosts", yaml: "platform: existing\nendpoints:\n  tls: {bootstrap: [\"k:1\"], client_config: c}\ntelemetry: {ssh: {user: u}}\n",
			want: []string{"target.yaml:4: telemetry.hosts: want a list"}},
		{name: "telemetry bad role", yaml: "platform: existing\nendpoints:\n  tls: {bootstrap: [\"k:1\"], client_config: c}\ntelemetry:\n  hosts: [{name: b, address: 10.0.0.1, role: brokr}]\n",
			want: []string{`target.yaml:5: telemetry.hosts[0].role: "brokr" is not one of broker, controller, gateway; did you mean "broker"?`}},
		{name: "negative price", yaml: "platform: existing\nendpoints:\n  tls: {bootstrap: [\"k:1\"], client_config: c}\nhourly_price_usd: -1\n",
			want: []string{"target.yaml:4: hourly_price_usd: want a number"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "target.yaml")
			tf, err := Parse(path, []byte(tc.yaml), env)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				tc.check(t, tf)
				return
			}
			if err == nil {
				t.Fatalf("parsed: %+v", tf)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestModeTransport(t *testing.T) {
	for key, want := range map[string]string{"plaintext": "plaintext", "mtls": "mtls", "proxy": "tls", "proxy.sasl_ssl": "sasl_ssl",
		"field_encrypt.avro.mtls": "mtls", "encrypt.plaintext": "plaintext"} {
		if got := ModeTransport(key); got != want {
			t.Errorf("%s: %s, want %s", key, got, want)
		}
	}
}

// TestCheckBudgetExisting: an existing cluster's estimate is its wall time
// at hourly_price_usd.
func TestCheckBudgetExisting(t *testing.T) {
	rows := []planner.Row{{Platform: PlatformExisting, Brokers: 3, WarmupS: 1800, DurationS: 1800, DrainTimeoutS: 30}}
	tf := &File{Path: "x.yaml", BudgetUSD: 1, Existing: &Existing{HourlyPriceUSD: 2}}
	est, err := CheckBudget(tf, rows, nil)
	if err == nil || est.Cost < 2 || !strings.Contains(err.Error(), "exceeds budget_usd $1.00 of x.yaml") {
		t.Fatalf("%v, cost %v", err, est.Cost)
	}
}
