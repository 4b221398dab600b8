package tf

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/planner"
)

// TestTargetCheckRow: the runner's RowChecker refuses gateway rows the
// target file's gateway: section cannot run, naming the file; direct rows
// and builtin gateway rows pass.
func TestTargetCheckRow(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "target.yaml")
	text := "platform: hosts\ngateway:\n  command: {start: run-gw, modes: [proxy]}\n"
	tg, err := NewTarget(target.Config{Platform: "hosts", Path: path, Text: []byte(text), DB: filepath.Join(dir, "c.db")}, "c",
		TargetOptions{Deployer: &deployLog{}, ExecPath: "terraform", Log: &strings.Builder{}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		row  planner.Row
		want string
	}{
		{name: "direct", row: planner.Row{Security: "tls", GatewayKind: "command"}},
		{name: "builtin encrypt", row: planner.Row{Security: "encrypt", GatewayKind: "builtin"}},
		{name: "command proxy", row: planner.Row{Security: "proxy", GatewayKind: "command"}},
		{name: "command encrypt", row: planner.Row{Security: "encrypt", GatewayKind: "command"}, want: path + ": gateway_kind command implements proxy, not encrypt"},
		{name: "kroxylicious", row: planner.Row{Security: "proxy", GatewayKind: "kroxylicious"}, want: "no gateway.kroxylicious section"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tg.CheckRow(&tc.row)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("CheckRow: %v, want %q", err, tc.want)
			}
		})
	}
}

// TestTargetCheckRowKafkaVersion: a row whose kafka_version has no release
// in the target file is refused before anything is provisioned, naming
// the file and the kafka: line; with embedded any version passes.
func TestTargetCheckRowKafkaVersion(t *testing.T) {
	sha := strings.Repeat("ab", 64)
	releases := "platform: hosts\nkafka:\n  releases:\n    - {version: 3.9.1, distribution: https://example.org/a.tgz, sha512: " + sha + "}\n    - {version: 4.1.0, distribution: https://example.org/b.tgz, sha512: " + sha + "}\n"
	tests := []struct {
		name, text, version, want string
	}{
		{name: "listed release", text: releases, version: "4.1.0"},
		{name: "default release", text: releases, version: "3.9.1"},
		{name: "missing release", text: releases, version: "3.8.1", want: ":2: kafka: rows ask for kafka_version 3.8.1 but the file has a release of 3.9.1, 4.1.0 only; add {version: 3.8.1"},
		{name: "single release", text: "platform: hosts\nkafka: {version: 3.9.1, distribution: https://example.org/a.tgz, sha512: " + sha + "}\n", version: "4.1.0", want: ":2: kafka: rows ask for kafka_version 4.1.0 but the file has a release of 3.9.1 only"},
		{name: "embedded", text: "platform: hosts\nkafka: {distribution: embedded}\n", version: "4.1.0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "target.yaml")
			tg, err := NewTarget(target.Config{Platform: "hosts", Path: path, Text: []byte(tc.text), DB: filepath.Join(dir, "c.db")}, "c",
				TargetOptions{Deployer: &deployLog{}, ExecPath: "terraform", Log: &strings.Builder{}})
			if err != nil {
				t.Fatal(err)
			}
			err = tg.CheckRow(&planner.Row{Security: "tls", KafkaVersion: tc.version})
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), path+tc.want)) {
				t.Fatalf("CheckRow: %v, want %q", err, tc.want)
			}
		})
	}
}

// surfaceDeployer is a Deployer that serves the security surface but
// plain.
type surfaceDeployer struct{ deployLog }

func (*surfaceDeployer) ServesSurface(r *planner.Row) error {
	if r.SASLMechanism == planner.SASLPlain {
		return errors.New("sasl_mechanism plain: not here")
	}
	return nil
}

// TestTargetServesSurface: the runner's SurfaceServer asks the Deployer;
// a Deployer that is none serves the security surface at its defaults
// only, naming the first setting away from them.
func TestTargetServesSurface(t *testing.T) {
	dir := t.TempDir()
	open := func(d Deployer) *Target {
		tg, err := NewTarget(target.Config{Platform: "hosts", Path: filepath.Join(dir, "target.yaml"), Text: []byte("platform: hosts\n"), DB: filepath.Join(dir, "c.db")}, "c",
			TargetOptions{Deployer: d, ExecPath: "terraform", Log: &strings.Builder{}})
		if err != nil {
			t.Fatal(err)
		}
		return tg
	}
	row := func(mech string, churn int) *planner.Row {
		return &planner.Row{Security: planner.SecuritySASLSSL, InterBrokerSecurity: planner.SecurityPlaintext, SASLMechanism: mech,
			Authorizer: planner.AuthorizerNone, TLSVersion: planner.TLSDefault, TLSCipher: planner.TLSDefault, TLSKey: planner.TLSKeyECDSAP256, ConnectionChurn: churn}
	}
	for _, tc := range []struct {
		name string
		d    Deployer
		row  *planner.Row
		want string // "" serves
	}{
		{"defaults, plain deployer", &deployLog{}, row(planner.SASLScramSHA512, 0), ""},
		{"churn, plain deployer", &deployLog{}, row(planner.SASLScramSHA512, 100), "connection_churn 100: *tf.deployLog does not set it up"},
		{"scram-sha-256, surface deployer", &surfaceDeployer{}, row(planner.SASLScramSHA256, 0), ""},
		{"plain, surface deployer", &surfaceDeployer{}, row(planner.SASLPlain, 0), "sasl_mechanism plain: not here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := open(tc.d).ServesSurface(tc.row)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("ServesSurface: %v, want %q", err, tc.want)
			}
		})
	}
}
