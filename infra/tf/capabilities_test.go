package tf

import (
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
