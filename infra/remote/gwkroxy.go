package remote

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"path"
	"regexp"
	"strconv"
	"strings"
	"text/template"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/xp-bench/xp/infra/local"
	"github.com/xp-bench/xp/infra/ssh"
	"github.com/xp-bench/xp/infra/tf"
	"github.com/xp-bench/xp/internal/shfetch"
	"github.com/xp-bench/xp/planner"
)

// Kroxylicious (gateway_kind kroxylicious) on the gateway hosts: the
// release tarball and a Java 21 runtime installed by a script, one proxy
// process per gateway with a config rendered here, and for the encrypt
// mode its RecordEncryption filter on a Vault dev server's transit engine.
//
// The config follows Kroxylicious's config model as its source defines it
// at release 0.23.0 (the Jackson records of kroxylicious-runtime, -api, the
// record encryption filter and the Vault KMS; testdata/kroxylicious/
// config-model.txt lists them and a test checks every rendered key against
// that list): virtualClusters as a list with gateways, management
// endpoints, RecordEncryption with VaultKmsService. Every key xp renders
// has the same name and meaning in every release from 0.11.0 on, except
// that 0.22.0 deprecated a virtual cluster's inline targetCluster for a
// named entry of clusterDefinitions (rendered for 0.22.0 and later).
// None of this has run against a real Kroxylicious or Vault: neither can
// be downloaded where xp is built and tested; the rendering and the
// install script are golden-tested.

// KroxyliciousInstall is what a gateway host needs to run Kroxylicious.
type KroxyliciousInstall struct {
	// Version, URL and SHA512: the release tarball
	// (kroxylicious-app-VERSION-bin.tar.gz) and its hex SHA-512.
	Version, URL, SHA512 string
	// Dir is the directory on the host it is installed in:
	// kroxylicious-VERSION/ (the release), java-home (the JAVA_HOME of a
	// Java 21 or later), vault (the Vault binary) are written there.
	Dir string
	// Java is the Debian/Ubuntu package installed when no Java 21 or later
	// is found.
	Java string
	// VaultURL and VaultSHA256: the Vault release zip and its hex SHA-256;
	// empty when no row encrypts.
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
	case !safeURLRE.MatchString(in.URL) || strings.Contains(in.URL, "'"):
		return fmt.Errorf("kroxylicious url %q: want an http(s) URL without quotes or spaces", in.URL)
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
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}
tools=
command -v curl >/dev/null 2>&1 || tools="$tools curl"
{{- if .VaultURL}}
command -v unzip >/dev/null 2>&1 || tools="$tools unzip"
{{- end}}
if [ -n "$tools" ]; then apt $tools; fi

# The release, checked against its SHA-512 before it is unpacked.
if [ ! -x "$kroxy/bin/kroxylicious-start.sh" ]; then
{{download "kroxylicious" .URL .SHA512 "sha512" "$dir/kroxylicious.tgz.part"}}
	rm -rf "$kroxy.part"
	mkdir -p "$kroxy.part"
	tar -xzf "$dir/kroxylicious.tgz.part" -C "$kroxy.part" --strip-components=1
	rm -f "$dir/kroxylicious.tgz.part"
	mv "$kroxy.part" "$kroxy"
fi
echo "kroxylicious: $kroxy"
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

# Java 21 or later: the java on PATH or one installed beside it, else the
# distribution's package; its home is what the gateways start with.
java_ok() {
	v=$("$1" -version 2>&1 | sed -n 's/.*version "\([0-9][0-9]*\).*/\1/p' | head -n 1)
	[ -n "$v" ] && [ "$v" -ge 21 ]
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
		echo "kroxylicious: no Java 21 or later, even after installing {{.Java}} (set gateway.kroxylicious.java)" >&2
		exit 1
	fi
fi
dirname "$(dirname "$java")" >"$dir/java-home"
"$java" -version 2>&1 | head -n 1
`))

// KroxyliciousSetup is one Kroxylicious gateway: one virtual cluster in
// front of one direct mode of the cluster.
type KroxyliciousSetup struct {
	// Version is the Kroxylicious release (tf.KroxyliciousMinVersion or
	// later): from 0.22.0 on the upstream is a clusterDefinitions entry
	// the virtual cluster names as its target, before that the virtual
	// cluster's inline targetCluster (deprecated by 0.22.0).
	Version string
	// Name names the virtual cluster (the agent's service name, made a DNS
	// label as Kroxylicious requires).
	Name string
	// Host is the gateway host's private address; Port the bootstrap port
	// xp chose. Brokers get the ports from Port+1 on (portIdentifiesNode),
	// node ids FirstNodeID to FirstNodeID+Brokers-1.
	Host               string
	Port               int
	Brokers            int
	FirstNodeID        int
	Upstream           []string
	Transport          string
	CA, Cert, Key      string
	Mode               string
	ManagementPort     int
	VaultURL, VaultKey string
	// VaultTokenFile is the file holding the Vault token (0600).
	VaultTokenFile string
}

// kroxyKEK is the one Vault transit key every topic's records are
// encrypted under (TemplateKekSelector with a constant template). Its
// KEK- prefix is the naming convention of Kroxylicious's Vault guide, whose
// least-privilege token policy grants transit/keys/KEK-*.
const kroxyKEK = "KEK-xp"

// kroxyClusterDefinitions is the release that deprecated a virtual
// cluster's inline targetCluster for clusterDefinitions and target.cluster.
const kroxyClusterDefinitions = "0.22.0"

var notDNSLabel = regexp.MustCompile(`[^a-z0-9-]+`)

// kroxyClusterName makes name a DNS label (at most 63 of a-z, 0-9 and -,
// starting and ending with a letter or digit): Kroxylicious refuses any
// other virtual cluster name, and service names may hold . and _
// (gateway-encrypt.fast-0).
func kroxyClusterName(name string) string {
	l := strings.Trim(notDNSLabel.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if len(l) > 63 {
		l = strings.TrimRight(l[:63], "-")
	}
	if l == "" {
		l = "xp"
	}
	return l
}

// KroxyliciousConfig renders the proxy config of s (YAML).
func KroxyliciousConfig(s KroxyliciousSetup) ([]byte, error) {
	if s.Brokers < 1 || s.Port < 1 || s.Port+s.Brokers > 65535 {
		return nil, fmt.Errorf("kroxylicious %s: port %d with %d brokers", s.Name, s.Port, s.Brokers)
	}
	if !versionWordRE.MatchString(s.Version) || !tf.ReleaseAtLeast(s.Version, tf.KroxyliciousMinVersion) {
		return nil, fmt.Errorf("kroxylicious %s: version %q: xp renders the config of Kroxylicious %s or later", s.Name, s.Version, tf.KroxyliciousMinVersion)
	}
	type m = map[string]any
	pemTrust := func() m { return m{"storeFile": s.CA, "storeType": "PEM"} }
	pemKey := func() m { return m{"privateKeyFile": s.Key, "certificateFile": s.Cert} }
	gw := m{
		"name": "xp",
		"portIdentifiesNode": m{
			"bootstrapAddress":               net.JoinHostPort(s.Host, strconv.Itoa(s.Port)),
			"advertisedBrokerAddressPattern": s.Host,
			"nodeIdRanges":                   []m{{"name": "brokers", "start": s.FirstNodeID, "end": s.FirstNodeID + s.Brokers - 1}},
		},
	}
	target := m{"bootstrapServers": strings.Join(s.Upstream, ",")}
	switch s.Transport {
	case local.Plaintext:
	case planner.SecurityTLS, planner.SecuritySASLSSL:
		// sasl_ssl: the clients' SASL exchange passes through to the
		// brokers' SASL_SSL listener.
		gw["tls"] = m{"key": pemKey()}
		target["tls"] = m{"trust": pemTrust()}
	case local.MTLS:
		trust := pemTrust()
		trust["trustOptions"] = m{"clientAuth": "REQUIRED"}
		gw["tls"] = m{"key": pemKey(), "trust": trust}
		target["tls"] = m{"key": pemKey(), "trust": pemTrust()}
	default:
		return nil, fmt.Errorf("kroxylicious %s: transport %q is not one of plaintext, tls, mtls, sasl_ssl", s.Name, s.Transport)
	}
	name := kroxyClusterName(s.Name)
	vc := m{"name": name, "gateways": []m{gw}}
	cfg := m{
		// Prometheus text at /metrics of this port, on loopback only.
		"management":      m{"bindAddress": "127.0.0.1", "port": s.ManagementPort, "endpoints": m{"prometheus": m{}}},
		"virtualClusters": []m{vc},
	}
	if tf.ReleaseAtLeast(s.Version, kroxyClusterDefinitions) {
		target["name"] = name
		cfg["clusterDefinitions"] = []m{target}
		vc["target"] = m{"cluster": name}
	} else {
		vc["targetCluster"] = target
	}
	switch s.Mode {
	case planner.SecurityProxy:
	case planner.SecurityEncrypt:
		if s.VaultURL == "" || s.VaultTokenFile == "" {
			return nil, fmt.Errorf("kroxylicious %s: encrypt needs a Vault (its URL and token file)", s.Name)
		}
		cfg["filterDefinitions"] = []m{{
			"name": "encrypt",
			"type": "RecordEncryption",
			"config": m{
				"kms": "VaultKmsService",
				"kmsConfig": m{
					"vaultTransitEngineUrl": strings.TrimSuffix(s.VaultURL, "/") + "/v1/transit",
					"vaultToken":            m{"passwordFile": s.VaultTokenFile},
				},
				"selector":       "TemplateKekSelector",
				"selectorConfig": m{"template": s.VaultKey},
				// A record whose key cannot be found fails its produce
				// rather than passing unencrypted: an encrypt row never
				// measures plaintext.
				"unresolvedKeyPolicy": "REJECT",
			},
		}}
		cfg["defaultFilters"] = []string{"encrypt"}
	default:
		return nil, fmt.Errorf("kroxylicious %s: mode %q: Kroxylicious runs proxy and encrypt", s.Name, s.Mode)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# written by xp: Kroxylicious %s %s gateway %s\n", s.Version, s.Mode, s.Name)
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(cfg); err != nil {
		return nil, err
	}
	enc.Close()
	return b.Bytes(), nil
}

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
	return fmt.Sprintf(`VAULT_DEV_ROOT_TOKEN_ID="$(cat %s)" %s server -dev -dev-no-store-token -dev-listen-address=%s 2>&1 | grep --line-buffered -v -e 'Root Token:' -e 'Unseal Key:'`,
		ssh.Quote(tokenFile), ssh.Quote(bin), addr)
}

// vaultTransit is the command line (for sh) that enables the transit
// engine of the Vault at addr and creates the key kroxyKEK, of the type
// Kroxylicious requires (aes256-gcm96, Vault's default, named rather than
// relied on); the token, read from tokenFile, passes in the environment.
func vaultTransit(bin, tokenFile, addr string) string {
	return fmt.Sprintf(`export VAULT_ADDR=http://%s VAULT_TOKEN="$(cat %s)"; %s secrets enable transit && %s write -f transit/keys/%s type=aes256-gcm96`,
		addr, ssh.Quote(tokenFile), ssh.Quote(bin), ssh.Quote(bin), kroxyKEK)
}

// StartKroxylicious runs Kroxylicious (gateway_kind kroxylicious) on the
// gateway hosts for every spec, count per mode, placed and given TLS
// material as the builtin gateway is (startGateways): each gateway host
// runs the install script; with an encrypt spec, a Vault dev server runs
// under the agent on the first gateway host (on loopback when it is the
// only gateway host, else on its private address, plain HTTP), its
// transit engine enabled with one key, its token (random, never on a
// command line) uploaded 0600 to every gateway host; then each gateway's
// config is uploaded 0600 and kroxylicious-start.sh started under the
// agent, ready when its bootstrap port answers ApiVersions.
//
// It has not run against a real Kroxylicious (see the package comment
// above).
func (d *Deployment) StartKroxylicious(ctx context.Context, k *tf.Kroxylicious, targetPath string, specs []GatewaySpec, count int) (map[string]local.Mode, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	if k == nil {
		return nil, fmt.Errorf("%s: gateway_kind kroxylicious: no gateway.kroxylicious section", targetPath)
	}
	gws := d.names(RoleGateway)
	if len(gws) == 0 {
		return nil, fmt.Errorf("%s: gateway_kind kroxylicious runs on gateway hosts; the group has none", targetPath)
	}
	encrypts := false
	for _, s := range specs {
		if why := (tf.Gateway{Kroxylicious: k}).CheckGatewayKind(GatewayKroxylicious, s.Security); why != "" {
			return nil, fmt.Errorf("%s: mode %s: %s", targetPath, s.Key, why)
		}
		encrypts = encrypts || s.Security == planner.SecurityEncrypt
	}
	install := func(h *deployed) KroxyliciousInstall {
		in := KroxyliciousInstall{Version: k.Version, URL: k.URL, SHA512: k.SHA512, Dir: path.Join(h.dir, "kroxylicious"), Java: k.Java}
		if encrypts {
			in.VaultURL, in.VaultSHA256 = k.VaultURL, k.VaultSHA256
		}
		return in
	}
	var token string
	if encrypts {
		b := make([]byte, 24)
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
		token = hex.EncodeToString(b)
	}
	tokenFile := func(h *deployed) string { return path.Join(h.dir, "gateway", "vault-token") }
	err := d.each(ctx, gws, func(ctx context.Context, h *deployed) error {
		script, err := install(h).Script()
		if err != nil {
			return err
		}
		sp := path.Join(h.dir, "kroxylicious", "install.sh")
		if err := h.c.WriteFile(ctx, sp, script, 0o600); err != nil {
			return err
		}
		if out, err := h.c.Output(ctx, "sh "+ssh.Quote(sp)); err != nil {
			return fmt.Errorf("installing kroxylicious: %w\n%s", err, out)
		}
		if encrypts {
			return h.c.WriteFile(ctx, tokenFile(h), []byte(token), 0o600)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	vaultURL := ""
	if encrypts {
		v := d.hosts[gws[0]]
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(vaultPort))
		if len(gws) > 1 {
			addr = net.JoinHostPort(v.Private, strconv.Itoa(vaultPort))
		}
		bin := path.Join(install(v).Dir, "vault")
		if err := startProbed(ctx, v, "vault", 60*time.Second, "--wait-tcp", addr, nil, vaultStart(bin, tokenFile(v), addr)); err != nil {
			return nil, fmt.Errorf("remote: host %s: vault: %w", v.Name, err)
		}
		if out, err := v.c.Output(ctx, vaultTransit(bin, tokenFile(v), addr)); err != nil {
			return nil, fmt.Errorf("remote: host %s: vault transit engine: %w\n%s", v.Name, err, out)
		}
		vaultURL = "http://" + addr
	}
	return d.startGateways(ctx, specs, count, func(ctx context.Context, h *deployed, in gatewayInstance) (gatewayStarted, error) {
		s := in.Spec
		port := GatewayPortBase + 100*in.Slot
		setup := KroxyliciousSetup{Version: k.Version, Name: in.Service, Host: h.Private, Port: port, Brokers: d.brokers, FirstNodeID: d.firstNodeID, Upstream: in.Upstream,
			Transport: s.Transport, CA: in.TLS.CA, Cert: in.TLS.Cert, Key: in.TLS.Key, Mode: s.Security, ManagementPort: port + 99}
		if s.Security == planner.SecurityEncrypt {
			setup.VaultURL, setup.VaultKey, setup.VaultTokenFile = vaultURL, kroxyKEK, tokenFile(h)
		}
		cfg, err := KroxyliciousConfig(setup)
		if err != nil {
			return gatewayStarted{}, err
		}
		cfgPath := path.Join(in.Dir, in.Service+".kroxylicious.yaml")
		if err := h.c.WriteFile(ctx, cfgPath, cfg, 0o600); err != nil {
			return gatewayStarted{}, err
		}
		dir := install(h).Dir
		start := fmt.Sprintf(`JAVA_HOME="$(cat %[1]s/java-home)" PATH="$(cat %[1]s/java-home)/bin:$PATH" exec %[2]s --config %[3]s`,
			ssh.Quote(dir), ssh.Quote(path.Join(dir, "kroxylicious-"+k.Version, "bin", "kroxylicious-start.sh")), ssh.Quote(cfgPath))
		listen := net.JoinHostPort(h.Private, strconv.Itoa(port))
		if err := startProbed(ctx, h, in.Service, 2*time.Minute, "--wait-kafka", listen, probeTLSFlags(s.Transport, in.TLS), start); err != nil {
			return gatewayStarted{}, fmt.Errorf("kroxylicious gateway %s (mode %s): %w", in.Service, s.Key, err)
		}
		return gatewayStarted{Bootstrap: listen}, nil
	})
}
