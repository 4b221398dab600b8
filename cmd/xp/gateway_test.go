package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGatewayBadConfigIsUsageError(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no config flag", []string{"gateway"}, "--config FILE is required"},
		{"unknown key", []string{"gateway", "--config", write("unknown.yaml", "upstream:\n  bootstrap: [127.0.0.1:9092]\n  transprt: tls\n")}, `unknown.yaml:3: unknown key "transprt" in upstream`},
		{"missing certificate", []string{"gateway", "--config", write("cert.yaml", "client: {transport: tls, cert: gw.pem, key: gw-key.pem}\nupstream: {bootstrap: [127.0.0.1:9092]}\n")}, "client.cert: " + filepath.Join(dir, "gw.pem")},
		{"missing file", []string{"gateway", "--config", filepath.Join(dir, "absent.yaml")}, "absent.yaml: cannot read"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runXP(t, tc.args...)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d (stderr %q)", code, exitUsage, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
			if strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, tc.want) {
				t.Fatalf("stderr %q, want one line containing %q", stderr, tc.want)
			}
		})
	}
}
