package remote

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xp-bench/xp/internal/golden"
)

var (
	testKroxySHA  = strings.Repeat("0123456789abcdef", 8)
	testVaultSHA  = strings.Repeat("fedcba9876543210", 4)
	testKroxyFrom = "https://github.com/kroxylicious/kroxylicious/releases/download/v0.13.0/kroxylicious-app-0.13.0-bin.tar.gz"
)

func testKroxyInstall() KroxyliciousInstall {
	return KroxyliciousInstall{Version: "0.13.0", URL: testKroxyFrom, SHA512: testKroxySHA,
		Dir: "/home/xp/xp/c1/gateway-1/kroxylicious", Java: "openjdk-21-jre-headless", MinJava: 21}
}

// TestKroxyliciousInstallGolden: the install script, with and without
// Vault, and of a release uploaded from this machine for the in-memory
// KMS on Java 17, as golden files that sh parses.
func TestKroxyliciousInstallGolden(t *testing.T) {
	withVault := testKroxyInstall()
	withVault.VaultURL, withVault.VaultSHA256 = "https://releases.hashicorp.com/vault/1.18.3/vault_1.18.3_linux_amd64.zip", testVaultSHA
	uploaded := testKroxyInstall()
	uploaded.Version, uploaded.URL, uploaded.Uploaded = "0.12.0", "/home/me/xp/out/dist/kroxylicious-app-0.12.0-bin.tar.gz", "/home/xp/xp/c1/gateway-1/kroxylicious/kroxylicious-app-0.12.0-bin.tar.gz"
	uploaded.Java, uploaded.MinJava, uploaded.InMemoryKMS = "openjdk-17-jre-headless", 17, true
	for name, in := range map[string]KroxyliciousInstall{"install.sh": testKroxyInstall(), "install-vault.sh": withVault, "install-uploaded-inmemory.sh": uploaded} {
		t.Run(name, func(t *testing.T) {
			b, err := in.Script()
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, "kroxylicious/"+name, b)
			if !strings.Contains(string(b), testKroxySHA+"  ") || strings.Contains(string(b), "vault") != (in.VaultURL != "") {
				t.Error("the checksums are not in the script as given")
			}
			path := filepath.Join(t.TempDir(), name)
			os.WriteFile(path, b, 0o700)
			if out, err := exec.Command("sh", "-n", path).CombinedOutput(); err != nil {
				t.Fatalf("sh -n: %v: %s", err, out)
			}
		})
	}
	bad := []struct {
		name string
		edit func(*KroxyliciousInstall)
		want string
	}{
		{"short sha", func(i *KroxyliciousInstall) { i.SHA512 = "abc" }, "128 lower-case hex"},
		{"quote in url", func(i *KroxyliciousInstall) { i.URL = "https://x/k'.tgz" }, "without quotes"},
		{"shell in url", func(i *KroxyliciousInstall) { i.URL = "https://x/$(id).tgz" }, "without quotes"},
		{"relative dir", func(i *KroxyliciousInstall) { i.Dir = "xp/c1" }, "absolute path"},
		{"bad version", func(i *KroxyliciousInstall) { i.Version = "latest" }, "release number"},
		{"vault sum", func(i *KroxyliciousInstall) { i.VaultURL, i.VaultSHA256 = "https://x/v.zip", "" }, "vault sha256"},
		{"no java version", func(i *KroxyliciousInstall) { i.MinJava = 0 }, "minimum Java"},
		{"relative upload", func(i *KroxyliciousInstall) { i.Uploaded = "k.tgz" }, "absolute path"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			in := testKroxyInstall()
			tc.edit(&in)
			if _, err := in.Script(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// TestKroxyliciousInstallChecksums runs the install script against
// releases served on loopback: a tarball or a Vault zip whose checksum is
// not the one given is refused before it is unpacked, saying so, with
// nothing left behind. (The script's Java step is not reached: this
// machine's Java is older than 21 and installing one is not a test's
// business.)
func TestKroxyliciousInstallChecksums(t *testing.T) {
	release := tarball(t, map[string]string{"kroxylicious-app-0.13.0/bin/kroxylicious-start.sh": "#!/bin/sh\n",
		"kroxylicious-app-0.13.0/libs/kroxylicious-runtime-0.13.0.jar": "jar"})
	vault := zipFile(t, "vault", "#!/bin/sh\necho Vault v1.18.3\n")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/kroxylicious.tar.gz":
			w.Write(release)
		case "/vault.zip":
			w.Write(vault)
		default:
			http.NotFound(w, r)
		}
	})}
	go srv.Serve(ln)
	defer srv.Shutdown(context.Background())
	sum512, sum256 := sha512.Sum512(release), sha256.Sum256(vault)
	tests := []struct {
		name, sha512, sha256 string
		want                 string
		left                 []string // files that must not exist after
	}{
		{name: "release", sha512: testKroxySHA, want: "kroxylicious.tgz.part from http://", left: []string{"kroxylicious-0.13.0", "kroxylicious.tgz.part", "kroxylicious-0.13.0.part"}},
		{name: "vault", sha512: hex.EncodeToString(sum512[:]), sha256: testVaultSHA, want: "vault.zip.part from http://", left: []string{"vault", "vault.zip.part"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			in := KroxyliciousInstall{Version: "0.13.0", URL: "http://" + ln.Addr().String() + "/kroxylicious.tar.gz", SHA512: tc.sha512,
				Dir: dir, Java: "openjdk-21-jre-headless", MinJava: 21, VaultURL: "http://" + ln.Addr().String() + "/vault.zip", VaultSHA256: tc.sha256}
			if in.VaultSHA256 == "" {
				in.VaultSHA256 = hex.EncodeToString(sum256[:])
			}
			b, err := in.Script()
			if err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command("sh", "-c", string(b)).CombinedOutput()
			if err == nil || !strings.Contains(string(out), tc.want) || !strings.Contains(string(out), "does not match the sha") {
				t.Fatalf("script accepted a download with the wrong checksum: %v\n%s", err, out)
			}
			for _, f := range tc.left {
				if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
					t.Errorf("%s left behind", f)
				}
			}
			if tc.name == "vault" {
				// The release before it passed its check and is unpacked.
				if _, err := os.Stat(filepath.Join(dir, "kroxylicious-0.13.0", "bin", "kroxylicious-start.sh")); err != nil {
					t.Errorf("the release with the right checksum is not unpacked: %v\n%s", err, out)
				}
			}
		})
	}
}

func tarball(t *testing.T, files map[string]string) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	tw := tar.NewWriter(zw)
	for name, text := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(text))}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(text))
	}
	tw.Close()
	zw.Close()
	return b.Bytes()
}

func zipFile(t *testing.T, name, text string) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	h := &zip.FileHeader{Name: name, Method: zip.Deflate}
	h.SetMode(0o755)
	w, err := zw.CreateHeader(h)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte(text))
	zw.Close()
	return b.Bytes()
}

// TestVaultCommands runs the Vault command lines xp sends to the gateway
// host against a stand-in vault executable that records its arguments and
// environment: the dev server gets -dev, -dev-no-store-token and the
// listen address, its root token only in VAULT_DEV_ROOT_TOKEN_ID (never
// an argument), and the lines printing the root token and unseal key never
// reach its log; the transit engine is enabled, then the key created with
// the token and address in the environment, and a failed enable stops
// there.
func TestVaultCommands(t *testing.T) {
	dir := t.TempDir()
	const token = "0123456789abcdef0123456789abcdef0123456789abcdef"
	tokenFile := filepath.Join(dir, "vault-token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	calls := filepath.Join(dir, "calls")
	bin := filepath.Join(dir, "vault")
	stub := `#!/bin/sh
echo "args=$* dev_token=${VAULT_DEV_ROOT_TOKEN_ID:-} addr=${VAULT_ADDR:-} token=${VAULT_TOKEN:-}" >>` + calls + `
if [ "$1" = server ]; then
	echo "==> Vault server started! Log data will stream in below:"
	echo "Unseal Key: c2VjcmV0IHVuc2VhbCBrZXk="
	echo "Root Token: $VAULT_DEV_ROOT_TOKEN_ID" >&2
	echo "Development mode should NOT be used in production installations!"
fi
if [ "$1" = secrets ] && [ -n "${FAIL_ENABLE:-}" ]; then echo "path is already in use at transit/" >&2; exit 2; fi
`
	if err := os.WriteFile(bin, []byte(stub), 0o700); err != nil {
		t.Fatal(err)
	}
	run := func(cmd string, env ...string) (string, error) {
		c := exec.Command("sh", "-c", cmd)
		c.Env = append(os.Environ(), env...)
		out, err := c.CombinedOutput()
		return string(out), err
	}
	readCalls := func() []string {
		b, _ := os.ReadFile(calls)
		os.Remove(calls)
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}

	start := vaultStart(bin, tokenFile, "198.18.0.21:8200")
	if strings.Contains(start, token) {
		t.Fatalf("the token is on the command line: %s", start)
	}
	log, err := run(start)
	if err != nil {
		t.Fatalf("%v: %s", err, log)
	}
	if strings.Contains(log, token) || strings.Contains(log, "Root Token:") || strings.Contains(log, "Unseal Key:") ||
		!strings.Contains(log, "Vault server started!") || !strings.Contains(log, "Development mode") {
		t.Errorf("the dev server's log:\n%s", log)
	}
	if got := readCalls(); len(got) != 1 || got[0] != "args=server -dev -dev-no-store-token -dev-listen-address=198.18.0.21:8200 dev_token="+token+" addr= token=" {
		t.Errorf("vault started as %q", got)
	}

	setup := vaultTransit(bin, tokenFile, "198.18.0.21:8200")
	if strings.Contains(setup, token) {
		t.Fatalf("the token is on the command line: %s", setup)
	}
	if out, err := run(setup); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	env := " dev_token= addr=http://198.18.0.21:8200 token=" + token
	want := []string{"args=secrets enable transit" + env, "args=write -f transit/keys/KEK-xp type=aes256-gcm96" + env}
	if got := readCalls(); !slices.Equal(got, want) {
		t.Errorf("vault called as\n%q\nwant\n%q", got, want)
	}
	if out, err := run(setup, "FAIL_ENABLE=1"); err == nil || !strings.Contains(out, "already in use") {
		t.Errorf("a failed enable did not fail the setup: %v %s", err, out)
	}
	if got := readCalls(); len(got) != 1 {
		t.Errorf("after a failed enable vault was called %q", got)
	}

	// Whatever the address holds reaches vault as one word, never the
	// shell.
	pwned := filepath.Join(dir, "pwned")
	hostile := "198.18.0.21:8200 $(touch " + pwned + ");touch " + pwned
	for _, cmd := range []string{vaultStart(bin, tokenFile, hostile), vaultTransit(bin, tokenFile, hostile)} {
		run(cmd)
		if _, err := os.Stat(pwned); err == nil {
			t.Fatalf("the address ran as shell: %s", cmd)
		}
	}
	got := readCalls()
	if len(got) != 3 || !strings.HasPrefix(got[0], "args=server -dev -dev-no-store-token -dev-listen-address="+hostile+" ") ||
		!strings.Contains(got[1], "addr=http://"+hostile+" ") {
		t.Errorf("vault called as %q", got)
	}
}
