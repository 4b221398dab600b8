package main

import (
	"strings"
	"testing"
)

// TestAgentKDCUsage: xp agent kdc refuses, as usage errors, a call
// without its directory, address or ready file, and a keytab without
// its principals. (TestSurfaceOnKafkaHosts in infra/remote runs it as a
// host's service.)
func TestAgentKDCUsage(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no ready file", []string{"--dir", dir, "--listen", "127.0.0.1"}, "--dir, --listen and --ready are required"},
		{"a keytab without principals", []string{"--dir", dir, "--listen", "127.0.0.1", "--ready", dir + "/ready", "--keytab", dir + "/x.keytab"}, `--keytab "` + dir + `/x.keytab": want FILE=PRINCIPAL,...`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runXP(t, append([]string{"agent", "kdc"}, tc.args...)...)
			if code != exitUsage || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d saying %q", code, stderr, exitUsage, tc.want)
			}
		})
	}
}
