package remote

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/xp-bench/xp/infra/endpoint"
	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/kroxylicious"
	"github.com/xp-bench/xp/infra/release"
	"github.com/xp-bench/xp/infra/ssh"
	"github.com/xp-bench/xp/infra/targetfile"
	"github.com/xp-bench/xp/internal/shfetch"
	"github.com/xp-bench/xp/planner"
)

// Kroxylicious (gateway_kind kroxylicious) on the gateway hosts: the
// release tarball (downloaded, or uploaded from the operator's machine)
// and a Java runtime installed by a script, one proxy process per gateway
// with a config rendered by package kroxylicious, and for the encrypt mode
// its RecordEncryption filter on a KMS: Kroxylicious's in-memory KMS with
// one KEK xp makes per deployment and gives every gateway, or a Vault dev
// server's transit engine.

// KroxyliciousInstall is what a gateway host needs to run Kroxylicious.
type KroxyliciousInstall struct {
	// Version, URL and SHA512: the release tarball
	// (kroxylicious-app-VERSION-bin.tar.gz) and its hex SHA-512.
	Version, URL, SHA512 string
	// Uploaded, when set, is the path on the host of the release tarball,
	// uploaded there from the operator's machine (URL is then where it
	// came from, for messages); it is checked as a download is.
	Uploaded string
	// Dir is the directory on the host it is installed in:
	// kroxylicious-VERSION/ (the release), java-home (the JAVA_HOME of a
	// Java the release runs on), vault (the Vault binary) are written
	// there.
	Dir string
	// Java is the Debian/Ubuntu package installed when no Java of
	// MinJava or later is found.
	Java    string
	MinJava int
	// InMemoryKMS: the release must hold Kroxylicious's in-memory KMS.
	InMemoryKMS bool
	// VaultURL and VaultSHA256: the Vault release zip and its hex SHA-256;
	// empty when no row encrypts on Vault.
	VaultURL, VaultSHA256 string
}

var (
	installPathRE = regexp.MustCompile(`^/[A-Za-z0-9._/-]*$`)
	safeURLRE     = regexp.MustCompile(`^https?://[A-Za-z0-9._~:/?#@!&()*+,;=%-]+$`)
	hexRE         = regexp.MustCompile(`^[0-9a-f]+$`)
	versionWordRE = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+[A-Za-z0-9.-]*$`)
	debPackageRE  = regexp.MustCompile(`^[a-z0-9][a-z0-9.+-]*$`)
)

func (in KroxyliciousInstall) check() error {
	switch {
	case !versionWordRE.MatchString(in.Version):
		return fmt.Errorf("kroxylicious version %q: want a release number such as 0.9.0", in.Version)
	case in.Uploaded == "" && (!safeURLRE.MatchString(in.URL) || strings.Contains(in.URL, "'")):
		return fmt.Errorf("kroxylicious url %q: want an http(s) URL without quotes or spaces", in.URL)
	case in.Uploaded != "" && !installPathRE.MatchString(in.Uploaded):
		return fmt.Errorf("kroxylicious upload %q: want an absolute path of letters, digits and ._-/", in.Uploaded)
	case in.MinJava < 8:
		return fmt.Errorf("kroxylicious: Java %d: want the release's minimum Java (17 or 21)", in.MinJava)
	case len(in.SHA512) != 128 || !hexRE.MatchString(in.SHA512):
		return fmt.Errorf("kroxylicious sha512: want 128 lower-case hex digits")
	case !installPathRE.MatchString(in.Dir):
		return fmt.Errorf("kroxylicious directory %q: want an absolute path of letters, digits and ._-/", in.Dir)
	case !debPackageRE.MatchString(in.Java):
		return fmt.Errorf("java package %q: not a package name", in.Java)
	case in.VaultURL != "" && (!safeURLRE.MatchString(in.VaultURL) || strings.Contains(in.VaultURL, "'")):
		return fmt.Errorf("vault url %q: want an http(s) URL without quotes or spaces", in.VaultURL)
	case in.VaultURL != "" && (len(in.VaultSHA256) != 64 || !hexRE.MatchString(in.VaultSHA256)):
		return fmt.Errorf("vault sha256: want 64 lower-case hex digits")
	}
	return nil
}

// Script renders the host's install script (POSIX sh, run over SSH).
// Running it again is safe: what is installed is left as it is. Every
// download is checked against its checksum before it is unpacked.
func (in KroxyliciousInstall) Script() ([]byte, error) {
	if err := in.check(); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := kroxyInstallTmpl.Execute(&b, in); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

var kroxyInstallTmpl = template.Must(template.New("install").Funcs(shfetch.Funcs).Parse(`#!/bin/sh
# written by xp: install Kroxylicious {{.Version}}{{if .VaultURL}} and Vault{{end}} on this gateway host
set -eu
dir={{.Dir}}
kroxy="$dir/kroxylicious-{{.Version}}"
mkdir -p "$dir"
sudo=
if [ "$(id -u)" != 0 ]; then sudo="sudo -n"; fi
apt() {
	# On a fresh machine cloud-init, and the unattended upgrades it
	# starts, hold dpkg's lock: wait for cloud-init, then let apt wait
	# for the lock rather than fail.
	if command -v cloud-init >/dev/null 2>&1; then cloud-init status --wait >/dev/null 2>&1 || true; fi
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq -o DPkg::Lock::Timeout={{aptLockTimeout}}
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout={{aptLockTimeout}} "$@" >/dev/null
}
tools=
command -v curl >/dev/null 2>&1 || tools="$tools curl"
{{- if .VaultURL}}
command -v unzip >/dev/null 2>&1 || tools="$tools unzip"
{{- end}}
if [ -n "$tools" ]; then apt $tools; fi

# The release, checked against its SHA-512 before it is unpacked.
if [ ! -x "$kroxy/bin/kroxylicious-start.sh" ]; then
{{- if .Uploaded}}
	echo "{{.SHA512}}  {{.Uploaded}}" | sha512sum -c --quiet - || {
		echo "kroxylicious: {{.Uploaded}} (uploaded from {{.URL}}) does not match the sha512 of the target file" >&2
		exit 1
	}
	tgz="{{.Uploaded}}"
{{- else}}
{{download "kroxylicious" .URL .SHA512 "sha512" "$dir/kroxylicious.tgz.part"}}
	tgz="$dir/kroxylicious.tgz.part"
{{- end}}
	rm -rf "$kroxy.part"
	mkdir -p "$kroxy.part"
	tar -xzf "$tgz" -C "$kroxy.part" --strip-components=1
	rm -f "$dir/kroxylicious.tgz.part"
	mv "$kroxy.part" "$kroxy"
fi
echo "kroxylicious: $kroxy"
# The release is the version the target file names (attempts record it).
if [ ! -f "$kroxy/libs/kroxylicious-runtime-{{.Version}}.jar" ]; then
	echo "kroxylicious: $kroxy has no libs/kroxylicious-runtime-{{.Version}}.jar: the release is not Kroxylicious {{.Version}} (correct gateway.kroxylicious.version)" >&2
	exit 1
fi
{{- if .InMemoryKMS}}
# kms inmemory: Kroxylicious's in-memory KMS must be in the release (xp's
# assembled releases have it; the project's archives do not).
if ! ls "$kroxy"/libs/kroxylicious-kms-provider-kroxylicious-inmemory-*.jar >/dev/null 2>&1; then
	echo "kroxylicious: $kroxy has no libs/kroxylicious-kms-provider-kroxylicious-inmemory-*.jar for kms inmemory (make kroxylicious-dist assembles a release with it)" >&2
	exit 1
fi
{{- end}}
{{- if .VaultURL}}

# Vault (its dev server holds the record encryption keys), checked against
# its SHA-256 before it is unpacked.
if [ ! -x "$dir/vault" ]; then
{{download "vault" .VaultURL .VaultSHA256 "sha256" "$dir/vault.zip.part"}}
	unzip -o -q "$dir/vault.zip.part" vault -d "$dir"
	rm -f "$dir/vault.zip.part"
fi
"$dir/vault" version
{{- end}}

# Java {{.MinJava}} or later: the java on PATH or one installed beside it, else
# the distribution's package; its home is what the gateways start with.
java_ok() {
	v=$("$1" -version 2>&1 | sed -n 's/.*version "\([0-9][0-9]*\).*/\1/p' | head -n 1)
	[ -n "$v" ] && [ "$v" -ge {{.MinJava}} ]
}
find_java() {
	for j in "$(command -v java || true)" /usr/lib/jvm/*/bin/java; do
		if [ -x "$j" ] && java_ok "$j"; then readlink -f "$j"; return; fi
	done
}
java=$(find_java)
if [ -z "$java" ]; then
	apt {{.Java}}
	java=$(find_java)
	if [ -z "$java" ]; then
		echo "kroxylicious: no Java {{.MinJava}} or later, even after installing {{.Java}} (set gateway.kroxylicious.java)" >&2
		exit 1
	fi
fi
dirname "$(dirname "$java")" >"$dir/java-home"
"$java" -version 2>&1 | head -n 1
`))

// kroxyKEK is the one Vault transit key every topic's records are
// encrypted under.
const kroxyKEK = kroxylicious.DefaultKEK

// vaultPort is where the Vault dev server listens on the first gateway
// host.
const vaultPort = 8200

// vaultStart is the command line (for sh) of the Vault dev server bin on
// addr (HOST:PORT), its root token read from tokenFile into the
// environment (VAULT_DEV_ROOT_TOKEN_ID), never onto a command line;
// -dev-no-store-token keeps it out of ~/.vault-token. The dev server
// prints its root token and unseal key: those lines stay out of its log,
// which failed runs bring home.
func vaultStart(bin, tokenFile, addr string) string {
	return fmt.Sprintf(`VAULT_DEV_ROOT_TOKEN_ID="$(cat %s)" %s server -dev -dev-no-store-token %s 2>&1 | grep --line-buffered -v -e 'Root Token:' -e 'Unseal Key:'`,
		ssh.Quote(tokenFile), ssh.Quote(bin), ssh.Quote("-dev-listen-address="+addr))
}

// vaultTransit is the command line (for sh) that enables the transit
// engine of the Vault at addr and creates the key kroxyKEK, of the type
// Kroxylicious requires (aes256-gcm96, Vault's default, named rather than
// relied on); the token, read from tokenFile, passes in the environment.
func vaultTransit(bin, tokenFile, addr string) string {
	return fmt.Sprintf(`export VAULT_ADDR=%s VAULT_TOKEN="$(cat %s)"; %s secrets enable transit && %s write -f transit/keys/%s type=aes256-gcm96`,
		ssh.Quote("http://"+addr), ssh.Quote(tokenFile), ssh.Quote(bin), ssh.Quote(bin), kroxyKEK)
}

// StartKroxylicious runs Kroxylicious (gateway_kind kroxylicious) on the
// gateway hosts for every spec, count per mode, placed and given TLS
// material as the builtin gateway is (startGateways): each gateway host
// gets the release (uploaded when it is a file on this machine) and runs
// the install script. With an encrypt spec, the KMS is set up first: for
// kms inmemory one KEK (random AES-256) that every gateway's config holds;
// for kms vault a Vault dev server under the agent on the first gateway
// host (on loopback when it is the only gateway host, else on its private
// address, plain HTTP), its transit engine enabled with one key, its token
// (random, never on a command line) uploaded 0600 to every gateway host.
// Then each gateway's config is uploaded 0600 and kroxylicious-start.sh
// started under the agent, ready when its bootstrap port answers
// ApiVersions; one that exits first fails the deploy with the end of its
// log.
func (d *Deployment) StartKroxylicious(ctx context.Context, k *targetfile.Kroxylicious, targetPath string, specs []GatewaySpec, count int) (map[string]endpoint.Endpoint, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	if k == nil {
		return nil, fmt.Errorf("%s: gateway_kind kroxylicious: no gateway.kroxylicious section", targetPath)
	}
	gws := d.names(planner.RoleGateway)
	if len(gws) == 0 {
		return nil, fmt.Errorf("%s: gateway_kind kroxylicious runs on gateway hosts; the group has none", targetPath)
	}
	encrypts := false
	for _, s := range specs {
		if why := (targetfile.Gateway{Kroxylicious: k}).CheckGatewayKind(planner.GatewayKindKroxylicious, s.Security); why != "" {
			return nil, fmt.Errorf("%s: mode %s: %s", targetPath, s.Key, why)
		}
		encrypts = encrypts || s.Security == planner.SecurityEncrypt
	}
	x := &kroxyDeploy{d: d, k: k, gws: gws, encrypts: encrypts, vault: encrypts && k.KMS == targetfile.KMSVault}
	if x.vault {
		b := make([]byte, 24)
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
		x.token = hex.EncodeToString(b)
	}
	if err := d.each(ctx, gws, x.install); err != nil {
		return nil, err
	}
	kms, err := x.startKMS(ctx)
	if err != nil {
		return nil, err
	}
	return d.startGateways(ctx, specs, count, func(ctx context.Context, h *deployed, in gatewayInstance) (gatewayStarted, error) {
		return x.startGateway(ctx, h, in, kms)
	})
}

// kroxyDeploy is one deployment of Kroxylicious on the gateway hosts gws.
type kroxyDeploy struct {
	d   *Deployment
	k   *targetfile.Kroxylicious
	gws []string
	// encrypts: a spec is the encrypt mode, so a KMS is needed; vault: on
	// Vault, whose token is token.
	encrypts, vault bool
	token           string
}

// kroxyliciousInstall is what a host installs Kroxylicious from into
// dir/kroxylicious: k's release (uploaded there when it is a file on this
// machine), with the in-memory KMS or Vault when the deployment encrypts
// on it.
func kroxyliciousInstall(k *targetfile.Kroxylicious, dir string, encrypts, vault bool) KroxyliciousInstall {
	in := KroxyliciousInstall{Version: k.Version, URL: k.URL, SHA512: k.SHA512, Dir: path.Join(dir, "kroxylicious"), Java: k.Java,
		MinJava: release.KroxyliciousMinJava(k.Version), InMemoryKMS: encrypts && k.KMS == targetfile.KMSInMemory}
	if k.Local() {
		in.Uploaded = path.Join(in.Dir, path.Base(filepath.ToSlash(k.URL)))
	}
	if vault {
		in.VaultURL, in.VaultSHA256 = k.VaultURL, k.VaultSHA256
	}
	return in
}

// installOf is host h's install.
func (x *kroxyDeploy) installOf(h *deployed) KroxyliciousInstall {
	return kroxyliciousInstall(x.k, h.dir, x.encrypts, x.vault)
}

// vaultTokenFile is where the Vault token is on gateway host h.
func vaultTokenFile(h *deployed) string {
	return path.Join(h.dir, "gateway", "vault-token")
}

// install installs Kroxylicious on gateway host h, and uploads the Vault
// token there.
func (x *kroxyDeploy) install(ctx context.Context, h *deployed) error {
	in := x.installOf(h)
	script, err := in.Script()
	if err != nil {
		return err
	}
	if in.Uploaded != "" {
		if _, err := h.c.Upload(ctx, x.k.URL, in.Uploaded, 0o600); err != nil {
			return fmt.Errorf("uploading the kroxylicious release: %w", err)
		}
	}
	sp := path.Join(h.dir, "kroxylicious", "install.sh")
	if err := h.c.WriteFile(ctx, sp, script, 0o600); err != nil {
		return err
	}
	if out, err := h.c.Output(ctx, "sh "+ssh.Quote(sp)); err != nil {
		return fmt.Errorf("installing kroxylicious: %w\n%s", err, out)
	}
	if x.vault {
		return h.c.WriteFile(ctx, vaultTokenFile(h), []byte(x.token), 0o600)
	}
	return nil
}

// startKMS sets up the encrypting gateways' KMS: a Vault dev server with
// its transit engine on the first gateway host, or one in-memory KEK; none
// when no spec encrypts.
func (x *kroxyDeploy) startKMS(ctx context.Context) (kroxylicious.KMS, error) {
	var kms kroxylicious.KMS
	switch {
	case x.vault:
		v := x.d.hosts[x.gws[0]]
		addr := vaultAddr(len(x.gws), v.Private)
		bin := path.Join(x.installOf(v).Dir, "vault")
		if err := startProbed(ctx, v, "vault", 60*time.Second, "--wait-tcp", addr, nil, vaultStart(bin, vaultTokenFile(v), addr)); err != nil {
			return kms, fmt.Errorf("remote: host %s: vault: %w", v.Name, err)
		}
		if out, err := v.c.Output(ctx, vaultTransit(bin, vaultTokenFile(v), addr)); err != nil {
			return kms, fmt.Errorf("remote: host %s: vault transit engine: %w\n%s", v.Name, err, out)
		}
		kms.Vault = &kroxylicious.Vault{URL: "http://" + addr, Key: kroxyKEK} // TokenFile: per host, in startGateway
	case x.encrypts:
		kek, err := kroxylicious.NewKEK(kroxylicious.DefaultKEK)
		if err != nil {
			return kms, err
		}
		kms.InMemory = &kroxylicious.InMemory{Alias: kek.Alias, KEKs: []kroxylicious.KEK{kek}}
	}
	return kms, nil
}

// vaultAddr is where the Vault dev server listens on the first of
// gatewayHosts, whose private address is private: loopback when it is
// the only gateway host, else its private address.
func vaultAddr(gatewayHosts int, private string) string {
	if gatewayHosts > 1 {
		return net.JoinHostPort(private, strconv.Itoa(vaultPort))
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(vaultPort))
}

// startGateway uploads the config of gateway in on host h, an encrypting
// one's on kms, and starts it.
func (x *kroxyDeploy) startGateway(ctx context.Context, h *deployed, in gatewayInstance, kms kroxylicious.KMS) (gatewayStarted, error) {
	s := in.Spec
	port := GatewayPortBase + 100*in.Slot
	setup := kroxylicious.Setup{Version: x.k.Version, Name: in.Service, Host: h.Private, Port: port, Brokers: x.d.brokers, FirstNodeID: x.d.firstNodeID, Upstream: in.Upstream,
		Transport: s.Transport, CA: in.TLS.CA, Cert: in.TLS.Cert, Key: in.TLS.Key, Mode: s.Security, ManagementPort: port + 99,
		TLS: kafkaconf.TLSChoice{Version: s.TLSVersion, Cipher: s.TLSCipher}}
	if s.Security == planner.SecurityEncrypt {
		setup.KMS = kms
		if kms.Vault != nil {
			v := *kms.Vault
			v.TokenFile = vaultTokenFile(h)
			setup.KMS.Vault = &v
		}
	}
	cfg, err := kroxylicious.Config(setup)
	if err != nil {
		return gatewayStarted{}, err
	}
	cfgPath := path.Join(in.Dir, in.Service+".kroxylicious.yaml")
	if err := h.c.WriteFile(ctx, cfgPath, cfg, 0o600); err != nil {
		return gatewayStarted{}, err
	}
	dir := x.installOf(h).Dir
	start := fmt.Sprintf(`JAVA_HOME="$(cat %[1]s/java-home)" PATH="$(cat %[1]s/java-home)/bin:$PATH" exec %[2]s --config %[3]s`,
		ssh.Quote(dir), ssh.Quote(path.Join(dir, "kroxylicious-"+x.k.Version, "bin", "kroxylicious-start.sh")), ssh.Quote(cfgPath))
	listen := net.JoinHostPort(h.Private, strconv.Itoa(port))
	if err := startProbed(ctx, h, in.Service, 2*time.Minute, "--wait-kafka", listen, probeTLSFlags(s.Transport, in.TLS), start); err != nil {
		return gatewayStarted{}, fmt.Errorf("kroxylicious gateway %s (mode %s): %w", in.Service, s.Key, err)
	}
	return gatewayStarted{Bootstrap: listen}, nil
}
