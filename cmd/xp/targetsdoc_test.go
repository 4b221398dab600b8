package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/xp-bench/xp/infra/kafkaconf"
)

// TestTargetsDocSaysWhatAHostNeeds: docs/targets.md tells an operator
// what a host needs (OS and architecture, sudo and for what, outbound
// downloads and the alternative, ports, how many client hosts, where
// sha512 comes from), in agreement with the code (the install script's
// sudo and Java package, the hosts module's client_count default), and
// its cost section says budget and teardown apply to xp run too.
func TestTargetsDocSaysWhatAHostNeeds(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "targets.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	_, needs, ok := strings.Cut(doc, "\n### What a host needs\n")
	if !ok {
		t.Fatal(`docs/targets.md has no "### What a host needs" section`)
	}
	needs, _, _ = strings.Cut(needs, "\n### ")
	script, err := kafkaconf.Install{Version: "3.9.1", URL: "https://downloads.apache.org/kafka/3.9.1/kafka_2.13-3.9.1.tgz",
		SHA512: strings.Repeat("ab", 64), Dir: "/home/bench/xp/kafka", LogDirs: "/home/bench/xp/kafka/data", ClusterID: kafkaconf.NewClusterID()}.Script()
	if err != nil {
		t.Fatal(err)
	}
	vars, err := os.ReadFile(filepath.Join(repoRoot, "terraform", "hosts", "variables.tf"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)variable "client_count" \{.*?default\s*=\s*(\d+)`).FindSubmatch(vars)
	if m == nil {
		t.Fatal("terraform/hosts/variables.tf: no client_count default")
	}
	for _, c := range []struct{ what, want string }{
		{"the OS", "**Linux**"},
		{"the architecture", "architecture of\n  the xp binary"},
		{"how to build for another", "GOOS=linux GOARCH=arm64 go build"},
		{"sudo, as the install script runs it", "`sudo -n`"},
		{"the Java package the script installs", "openjdk-17-jre-headless"},
		{"outbound downloads", "**Outbound downloads**"},
		{"hosts without Internet access", "Hosts without Internet access need neither download"},
		{"the broker ports", "9092–9097"},
		{"the client hosts used", "`client_count` load-generator clients\n(default " + string(m[1]) + ")"},
		{"where sha512 comes from", "kafka_2.13-3.9.1.tgz.sha512"},
	} {
		if !strings.Contains(needs, c.want) {
			t.Errorf("What a host needs: does not say %s (%q)", c.what, c.want)
		}
	}
	for _, w := range []string{"sudo -n", "apt-get install", "openjdk-17-jre-headless", "sha512sum"} {
		if !strings.Contains(string(script), w) {
			t.Errorf("the Kafka install script no longer holds %q: update docs/targets.md's What a host needs", w)
		}
	}
	_, cost, _ := strings.Cut(doc, "\n## Cost and budget\n")
	if cost == "" || strings.Contains(cost, "apply to `xp infra` only") || !strings.Contains(cost, "Budget and teardown apply alike to `xp run --target") {
		t.Error("docs/targets.md's cost section does not say budget and teardown apply to xp run --target")
	}
}
