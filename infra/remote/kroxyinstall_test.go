package remote

import (
	"testing"

	"github.com/xp-bench/xp/infra/targetfile"
)

// A host installs into dir/kroxylicious; a release file on this machine is
// uploaded into it; the in-memory KMS is asked of the release and Vault
// installed only when the deployment encrypts on them; the minimum Java
// follows the release.
func TestKroxyliciousInstall(t *testing.T) {
	url := "https://example.org/kroxylicious-app-0.13.0-bin.tar.gz"
	for _, c := range []struct {
		name            string
		k               targetfile.Kroxylicious
		encrypts, vault bool
		want            KroxyliciousInstall
	}{
		{"passthrough from a URL", targetfile.Kroxylicious{Version: "0.13.0", URL: url, SHA512: "s", Java: "openjdk-17-jre-headless", KMS: targetfile.KMSInMemory}, false, false,
			KroxyliciousInstall{Version: "0.13.0", URL: url, SHA512: "s", Dir: "/x/kroxylicious", Java: "openjdk-17-jre-headless", MinJava: 17}},
		{"encrypt in memory", targetfile.Kroxylicious{Version: "0.13.0", URL: url, KMS: targetfile.KMSInMemory}, true, false,
			KroxyliciousInstall{Version: "0.13.0", URL: url, Dir: "/x/kroxylicious", MinJava: 17, InMemoryKMS: true}},
		{"encrypt on vault", targetfile.Kroxylicious{Version: "0.13.0", URL: url, KMS: targetfile.KMSVault, VaultURL: "https://example.org/vault.zip", VaultSHA256: "v"}, true, true,
			KroxyliciousInstall{Version: "0.13.0", URL: url, Dir: "/x/kroxylicious", MinJava: 17, VaultURL: "https://example.org/vault.zip", VaultSHA256: "v"}},
		{"a release file uploaded", targetfile.Kroxylicious{Version: "0.22.0", URL: "/home/me/kroxylicious-app-0.22.0-bin.tar.gz"}, false, false,
			KroxyliciousInstall{Version: "0.22.0", URL: "/home/me/kroxylicious-app-0.22.0-bin.tar.gz", Dir: "/x/kroxylicious", MinJava: 21,
				Uploaded: "/x/kroxylicious/kroxylicious-app-0.22.0-bin.tar.gz"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := kroxyliciousInstall(&c.k, "/x", c.encrypts, c.vault); got != c.want {
				t.Errorf("got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

// The Vault dev server listens on loopback when its host is the only
// gateway host, else on the host's private address.
func TestVaultAddr(t *testing.T) {
	for _, c := range []struct {
		hosts int
		want  string
	}{{1, "127.0.0.1:8200"}, {2, "10.0.1.5:8200"}} {
		if got := vaultAddr(c.hosts, "10.0.1.5"); got != c.want {
			t.Errorf("vaultAddr(%d) = %s, want %s", c.hosts, got, c.want)
		}
	}
}
