package targetfile

import (
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/xp-bench/xp/planner"
)

// docExamples are the YAML blocks of docs/targets.md: the TARGET.yaml
// files (and parts of them) a reader copies.
func docExamples(tb testing.TB) [][]byte {
	b, err := os.ReadFile("../../docs/targets.md")
	if err != nil {
		tb.Fatal(err)
	}
	var out [][]byte
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllSubmatch(b, -1) {
		out = append(out, m[1])
	}
	if len(out) < 5 {
		tb.Fatalf("docs/targets.md has %d yaml examples", len(out))
	}
	return out
}

// FuzzTargetFile: no TARGET.yaml makes the reader or the checks xp run
// --dry-run applies with it (CheckRow's CheckVersion and CheckGatewayKind
// for every row, the heap, the budget, the module) panic; every refusal
// is a *Error naming the file. Seeds: the examples of docs/targets.md and
// the checksums that crashed xp run before.
func FuzzTargetFile(f *testing.F) {
	for _, ex := range docExamples(f) {
		f.Add(ex)
	}
	sha := strings.Repeat("0a", 64)
	for _, s := range []string{
		"platform: hosts\nkafka: {distribution: ./k.tgz, sha512: abc}\n",
		"platform: aws\nkafka: {version: 4.1.0, distribution: https://example.org/k.tgz, sha512: " + strings.ToUpper(sha) + "}\n",
		"platform: local\nkafka: {distribution: embedded}\ngateway:\n  kroxylicious: {url: ./k.tgz, sha512: " + sha + ", kms: inmemory}\n",
		"platform: existing\n",
	} {
		f.Add([]byte(s))
	}
	rows := fuzzRows()
	getenv := func(k string) string {
		if k == "HOME" {
			return "/nonexistent"
		}
		return ""
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tf, err := Parse("t.yaml", data, getenv)
		if err != nil {
			var te *Error
			if !errors.As(err, &te) || te.File != "t.yaml" || te.Msg == "" {
				t.Fatalf("refusal %q (%T) is no *Error naming the file", err, err)
			}
			return
		}
		versions := append([]string{"", "4.1.0", "3.9.2", "x"}, tf.Kafka.Versions()...)
		for _, v := range versions {
			why := tf.Kafka.CheckVersion(tf.Path, v)
			if _, ok := tf.Kafka.Release(v); ok && why != "" && !tf.Kafka.Embedded() {
				t.Fatalf("version %s: has a release, yet %s", v, why)
			}
		}
		for _, kind := range append(gatewayKinds(), "", "x") {
			for _, sec := range append(securityModes(), "") {
				tf.Gateway.CheckGatewayKind(kind, sec)
			}
		}
		tf.Kafka.HeapMiB()
		for _, key := range []string{"", "heap", "sha512", "distribution"} {
			tf.Kafka.Where(tf.Path, key)
		}
		if k := tf.Gateway.Kroxylicious; k != nil {
			k.Where(tf.Path, "url")
		}
		tf.ModuleName()
		if tf.Platform != "local" && tf.Platform != PlatformExisting {
			if _, err := tf.ModuleFS(); err != nil {
				t.Fatalf("module read, yet: %v", err)
			}
		}
		for i := range rows {
			rows[i].Platform = tf.Platform
		}
		est, err := CheckBudget(tf, rows, nil)
		var be *BudgetError
		if err != nil && !errors.As(err, &be) {
			t.Fatalf("budget: %v", err)
		}
		if (err != nil) != (tf.BudgetUSD > 0 && est.Cost > tf.BudgetUSD) {
			t.Fatalf("budget %v, estimate %v: err %v", tf.BudgetUSD, est.Cost, err)
		}
		if v, ok := tf.Vars["operator_cidr"]; ok && CheckOperatorCIDR(v) != "" {
			t.Fatalf("operator_cidr %v accepted", v)
		}
	})
}

// fuzzRows are a small campaign's rows, every security mode and gateway
// kind among them.
func fuzzRows() []planner.Row {
	var rows []planner.Row
	for _, sec := range securityModes() {
		for _, kind := range gatewayKinds() {
			rows = append(rows, planner.Row{Security: sec, GatewayKind: kind, KafkaVersion: "4.1.0", Brokers: 3,
				Replicate: 1, DurationS: 30, WarmupS: 5})
		}
	}
	return rows
}

func securityModes() []string { return append(planner.DirectModes(), planner.GatewayModes()...) }

func gatewayKinds() []string {
	return []string{planner.GatewayKindBuiltin, planner.GatewayKindKroxylicious, planner.GatewayKindCommand}
}
