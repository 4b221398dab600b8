package main

import (
	"context"
	"strings"
	"testing"

	"github.com/xp-bench/xp/infra/local"
)

// TestAgentKafkaReady runs `xp agent kafka-ready` against the embedded
// cluster (a Kafka-protocol cluster with every mode's listener): the SCRAM
// user is created through the plaintext listener and every mode sees both
// brokers; a broker that is not there fails within the timeout naming the
// modes and the broker; bad arguments (ACLs without the admin connection
// that makes them, a negative count) are usage errors.
func TestAgentKafkaReady(t *testing.T) {
	c, err := local.Start(context.Background(), local.Options{Brokers: 2, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m := c.Modes()
	modes := []string{"plaintext=" + m["plaintext"].ClientConfig, "tls=" + m["tls"].ClientConfig,
		"mtls=" + m["mtls"].ClientConfig, "sasl_ssl=" + m["sasl_ssl"].ClientConfig, "sasl_ssl-plain=" + c.SASLPlainConfig()}
	scram := []string{"--scram-admin", m["plaintext"].ClientConfig, "--scram-user-from", m["sasl_ssl"].ClientConfig}
	args := func(extra ...string) []string {
		return append(append([]string{"agent", "kafka-ready"}, extra...), modes...)
	}
	cases := []struct {
		name   string
		args   []string
		code   int
		stderr []string
	}{
		{"ready", args(append([]string{"--brokers", "0,1", "--timeout", "30s"}, scram...)...), exitOK, []string{"kafka ready in", "brokers 0,1 through 5 modes"}},
		{"a broker missing", args("--brokers", "0,1,5", "--timeout", "1s"), exitFailure,
			[]string{"kafka not ready after 1s", "mode plaintext: brokers 5 not seen", "mode tls: brokers 5 not seen"}},
		{"bad broker ids", args("--brokers", "one"), exitUsage, []string{`--brokers "one": want node ids such as 1,2,3`}},
		{"a mode without its file", []string{"agent", "kafka-ready", "--brokers", "0", "plaintext"}, exitUsage, []string{`"plaintext": want MODE=CLIENT_CONFIG`}},
		{"scram admin alone", args("--brokers", "0", "--scram-admin", m["plaintext"].ClientConfig), exitUsage, []string{"--scram-admin and --scram-user-from go together"}},
		{"acls without an admin", args("--brokers", "0", "--acl-principal", "User:xp", "--acls", "10"), exitUsage, []string{"--acl-principal and --acls need --scram-admin"}},
		{"negative acls", args(append([]string{"--brokers", "0", "--acls", "-1"}, scram...)...), exitUsage, []string{"--acls -1: want 0 or more"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runXP(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, tc.code, stderr)
			}
			for _, w := range tc.stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not say %q", stderr, w)
				}
			}
		})
	}
}
