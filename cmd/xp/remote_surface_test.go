package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xp-bench/xp/internal/disttest"
	"github.com/xp-bench/xp/planner"
)

// TestRunChecksSurfaceOnHosts: xp run on the hosts platform with Apache
// Kafka accepts rows of inter-broker TLS, the ACL authorizer, a TLS 1.3
// suite, scram-sha-256, gssapi and oauthbearer (a dry run, on
// documentation addresses that route nowhere); the same rows on the
// hosts' embedded cluster are refused naming inter_broker_security before
// anything is provisioned or written.
func TestRunChecksSurfaceOnHosts(t *testing.T) {
	rel := disttest.Kafka(t, 4)
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	target := func(name, kafka string) string {
		return writeRunFile(t, dir, name, fmt.Sprintf(`platform: hosts
vars:
  machines:
    - {name: b0, address: 192.0.2.10, role: broker}
    - {name: b1, address: 192.0.2.11, role: broker}
    - {name: b2, address: 192.0.2.12, role: broker}
    - {name: c0, address: 192.0.2.20, role: client}
ssh: {user: xp, private_key: %s, known_hosts: accept-new}
kafka: %s
`, writeRunFile(t, dir, "id_test", "not a key, never read by a dry run\n"), kafka))
	}
	onKafka := target("kafka.yaml", fmt.Sprintf("{distribution: %s, sha512: %s}", rel.Path, rel.SHA512))
	embedded := target("embedded.yaml", fmt.Sprintf("{version: %s, distribution: embedded}", rel.Version))
	plan := func(name, mechanisms string) string {
		spec := fmt.Sprintf(`campaign: %s
seed: 3
treatment: sasl_mechanism
baseline: scram-sha-512
factors:
  sasl_mechanism: [%s]
fixed:
  platform: hosts
  brokers: 3
  kafka_version: %s
  security: sasl_ssl
  inter_broker_security: tls
  authorizer: acl
  acls: 1000
  tls_version: "1.3"
  tls_cipher: chacha20-poly1305
  message_size: 128
  acks: all
  target_rate: 100
  duration_s: 1
`, name, mechanisms, rel.Version)
		s, err := planner.ParseSpec(name+".yaml", []byte(spec))
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if _, err := planner.Expand(s, &b); err != nil {
			t.Fatal(err)
		}
		return writeRunFile(t, dir, name+".jsonl", b.String())
	}
	served := plan("served", "scram-sha-512, scram-sha-256, gssapi, oauthbearer")
	for _, tc := range []struct {
		name, plan, target string
		code               int
		want               string
	}{
		{"served on kafka", served, onKafka, exitOK, "would run"},
		{"on the embedded cluster", served, embedded, exitUsage, "inter_broker_security tls: the embedded cluster"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".db")
			code, stdout, stderr := runXP(t, "run", tc.plan, "--target", tc.target, "--db", db, "--dry-run")
			if code != tc.code || !strings.Contains(stdout+stderr, tc.want) {
				t.Errorf("exit %d, want %d saying %q:\n%s%s", code, tc.code, tc.want, stdout, stderr)
			}
		})
	}
}
