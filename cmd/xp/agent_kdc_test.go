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

// TestAgentIDPUsage: xp agent idp refuses, as usage errors, a call
// without its certificate and a secret file it cannot read; off
// loopback it serves HTTPS only. (TestSurfaceOnKafkaHosts in
// infra/remote runs it as a host's service.)
func TestAgentIDPUsage(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no certificate", []string{"--listen", "127.0.0.1:0", "--client-id", "xp", "--secret-file", dir + "/s", "--ready", dir + "/ready"}, "--listen, --cert, --key, --client-id, --secret-file and --ready are required"},
		{"no secret file", []string{"--listen", "127.0.0.1:0", "--cert", dir + "/c", "--key", dir + "/k", "--client-id", "xp", "--secret-file", dir + "/s", "--ready", dir + "/ready"}, "--secret-file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runXP(t, append([]string{"agent", "idp"}, tc.args...)...)
			if code != exitUsage || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d saying %q", code, stderr, exitUsage, tc.want)
			}
		})
	}
}
