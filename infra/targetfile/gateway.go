package targetfile

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/xp-bench/xp/infra/release"
	"github.com/xp-bench/xp/planner"
)

// Gateway is the TARGET.yaml's gateway: section: how the gateway kinds
// other than builtin run on the gateway machines. A row's gateway_kind
// picks the kind; builtin (xp's own gateway) needs no section.
type Gateway struct {
	// Command is gateway_kind command: a gateway xp does not know,
	// started from the operator's command line and config templates.
	Command *GatewayCommand
	// Kroxylicious is gateway_kind kroxylicious: the release xp installs.
	Kroxylicious *Kroxylicious
}

// Ready checks of a command gateway.
const (
	ReadyKafka = "kafka" // the listening port answers a Kafka ApiVersions request
	ReadyTCP   = "tcp"   // the listening port accepts a TCP connection
)

// GatewayCommand is gateway.command: a user-supplied gateway.
type GatewayCommand struct {
	// Start is the command line (run by sh on the gateway host), a Go
	// text/template; StartLine is its line in the TARGET.yaml.
	Start     string
	StartLine int
	// Config is the absolute path of a config template on this machine,
	// rendered and uploaded 0600 for every gateway ("" = none).
	Config string
	// Files are absolute paths of further files on this machine, uploaded
	// 0600 beside the config as they are.
	Files []string
	// Ready is how xp knows a gateway serves: ReadyKafka (default) or
	// ReadyTCP, within ReadyTimeout (default 60s).
	Ready        string
	ReadyTimeout time.Duration
	// Modes are the gateway modes (proxy, encrypt, field_encrypt) the
	// command implements; rows of other modes are refused before anything
	// is provisioned.
	Modes []string
}

// DefaultReadyTimeout bounds a command gateway's start when ready.timeout
// is not set.
const DefaultReadyTimeout = 60 * time.Second

// Kroxylicious is gateway.kroxylicious: the Kroxylicious release the
// gateway machines install, and for the encrypt mode the KMS its Record
// Encryption filter takes its keys from.
type Kroxylicious struct {
	Version string
	// URL is the release tarball (kroxylicious-app-VERSION-bin.tar.gz):
	// an http(s) URL the gateway hosts download, or the absolute path of a
	// file on this machine (given relative to the TARGET.yaml or absolute),
	// which Read has checked against SHA512 and found to hold
	// Kroxylicious Version; it is uploaded where it runs. SHA512 is its
	// hex SHA-512.
	URL, SHA512 string
	// Java is the Debian/Ubuntu package of a Java runtime the release runs
	// on, installed where none is found; default openjdk-21-jre-headless
	// from 0.22.0 on, openjdk-17-jre-headless before.
	Java string
	// KMS is the encrypt mode's key management: KMSVault (a Vault dev
	// server xp runs, from VaultURL) or KMSInMemory (Kroxylicious's
	// in-memory KMS, its keys made by xp and given in the config); "" when
	// neither is set (no encrypt rows can run).
	KMS string
	// VaultURL is the Vault release zip and VaultSHA256 its hex SHA-256
	// (HashiCorp publishes SHA-256 sums); with KMSVault.
	VaultURL, VaultSHA256 string
	// Line is the section's line in the TARGET.yaml, Lines each key's.
	Line  int
	Lines map[string]int
}

// Where is "FILE:LINE" of key in the section (of the section when the
// key is not given), for messages.
func (k Kroxylicious) Where(file, key string) string {
	if l := k.Lines[key]; l > 0 {
		return fmt.Sprintf("%s:%d", file, l)
	}
	if k.Line > 0 {
		return fmt.Sprintf("%s:%d", file, k.Line)
	}
	return file
}

// Local reports whether the release is a file on this machine rather than
// a URL.
func (k Kroxylicious) Local() bool { return !isURL(k.URL) }

// Kroxylicious KMSes (gateway.kroxylicious.kms).
const (
	KMSVault    = "vault"
	KMSInMemory = "inmemory"
)

var (
	gatewayKeys      = []string{"command", "kroxylicious"}
	commandKeys      = []string{"start", "config", "files", "ready", "modes"}
	readyKeys        = []string{"check", "timeout"}
	kroxyliciousKeys = []string{"version", "url", "sha512", "java", "kms", "vault"}
	kmsKinds         = []string{KMSVault, KMSInMemory}
	vaultKeys        = []string{"url", "sha256"}
	readyChecks      = []string{ReadyKafka, ReadyTCP}
	releaseRE        = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+[A-Za-z0-9.-]*$`)
	packageRE        = regexp.MustCompile(`^[a-z0-9][a-z0-9.+-]*$`)
)

// gateway parses the gateway: section.
func (p *fileParser) gateway(n *yaml.Node, getenv func(string) string) Gateway {
	var g Gateway
	p.mapping(n, "gateway.", gatewayKeys, func(k string, v *yaml.Node) {
		switch k {
		case "command":
			g.Command = p.gatewayCommand(v, getenv)
		case "kroxylicious":
			g.Kroxylicious = p.kroxylicious(v)
		}
	})
	return g
}

func (p *fileParser) gatewayCommand(n *yaml.Node, getenv func(string) string) *GatewayCommand {
	c := &GatewayCommand{Ready: ReadyKafka, ReadyTimeout: DefaultReadyTimeout}
	var modesNode *yaml.Node
	p.mapping(n, "gateway.command.", commandKeys, func(k string, v *yaml.Node) {
		switch k {
		case "start":
			c.Start, c.StartLine = p.str(v, "gateway.command.start"), v.Line
			if c.Start == "" && v.Kind == yaml.ScalarNode {
				p.bad(v, "gateway.command.start: empty; give the command line that starts the gateway")
			}
		case "config":
			c.Config = p.localFile(v, "gateway.command.config", getenv)
		case "files":
			if v.Kind != yaml.SequenceNode {
				p.bad(v, "gateway.command.files: want a list of paths on this machine")
				return
			}
			seen := map[string]bool{}
			for _, f := range v.Content {
				path := p.localFile(f, "gateway.command.files", getenv)
				if path == "" {
					continue
				}
				if base := filepath.Base(path); seen[base] {
					p.bad(f, "gateway.command.files: a second file named %s (they are uploaded side by side)", base)
				} else {
					seen[base] = true
				}
				c.Files = append(c.Files, path)
			}
		case "ready":
			p.mapping(v, "gateway.command.ready.", readyKeys, func(k string, v *yaml.Node) {
				switch k {
				case "check":
					c.Ready = p.str(v, "gateway.command.ready.check")
					p.oneOf(v, "gateway.command.ready.check", c.Ready, readyChecks)
				case "timeout":
					d, err := time.ParseDuration(p.str(v, "gateway.command.ready.timeout"))
					if err != nil || d <= 0 || d > 30*time.Minute {
						p.bad(v, "gateway.command.ready.timeout: want a duration such as 60s (at most 30m)")
						return
					}
					c.ReadyTimeout = d
				}
			})
		case "modes":
			modesNode = v
			if v.Kind != yaml.SequenceNode {
				p.bad(v, "gateway.command.modes: want a list of %s", strings.Join(planner.GatewayModes(), ", "))
				return
			}
			for _, m := range v.Content {
				s := p.str(m, "gateway.command.modes")
				p.oneOf(m, "gateway.command.modes", s, planner.GatewayModes())
				c.Modes = append(c.Modes, s)
			}
		}
	})
	if n.Kind == yaml.MappingNode {
		if c.StartLine == 0 {
			p.bad(n, "gateway.command: no start: give the command line that starts the gateway")
		}
		if len(c.Modes) == 0 && modesNode == nil {
			p.bad(n, "gateway.command: no modes: list the gateway modes the command implements (%s)", strings.Join(planner.GatewayModes(), ", "))
		}
	}
	return c
}

// localFile is a path on this machine: ~ expanded, relative to the
// TARGET.yaml's directory; it must be a readable file.
func (p *fileParser) localFile(n *yaml.Node, what string, getenv func(string) string) string {
	s := p.str(n, what)
	if s == "" {
		return ""
	}
	path := expandHome(s, getenv)
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(p.path), path)
	}
	st, err := os.Stat(path)
	switch {
	case err != nil:
		p.bad(n, "%s: %v", what, err)
		return ""
	case !st.Mode().IsRegular():
		p.bad(n, "%s: %s is not a file", what, path)
		return ""
	}
	return path
}

func (p *fileParser) kroxylicious(n *yaml.Node) *Kroxylicious {
	k := &Kroxylicious{Line: n.Line, Lines: map[string]int{}}
	var versionNode, kmsNode, vaultNode *yaml.Node
	p.mapping(n, "gateway.kroxylicious.", kroxyliciousKeys, func(key string, v *yaml.Node) {
		k.Lines[key] = v.Line
		switch key {
		case "version":
			versionNode = v
			k.Version = p.str(v, "gateway.kroxylicious.version")
			switch {
			case !releaseRE.MatchString(k.Version):
				p.bad(v, "gateway.kroxylicious.version: %q: want a release number such as 0.12.0", k.Version)
			case !release.AtLeast(k.Version, release.KroxyliciousMinVersion):
				p.bad(v, "gateway.kroxylicious.version: %s: xp renders the config of Kroxylicious %s or later (virtualClusters as a list with gateways); use a newer release", k.Version, release.KroxyliciousMinVersion)
			}
		case "url":
			k.URL = p.releaseFile(v, "gateway.kroxylicious.url", "make kroxylicious-dist writes out/dist/kroxylicious-app-VERSION-bin.tar.gz")
		case "sha512":
			k.SHA512 = p.hexSum(v, "gateway.kroxylicious.sha512", "the tarball's SHA-512", 128)
		case "java":
			k.Java = p.str(v, "gateway.kroxylicious.java")
			if !packageRE.MatchString(k.Java) {
				p.bad(v, "gateway.kroxylicious.java: %q is not a package name", k.Java)
			}
		case "kms":
			kmsNode = v
			k.KMS = p.str(v, "gateway.kroxylicious.kms")
			p.oneOf(v, "gateway.kroxylicious.kms", k.KMS, kmsKinds)
		case "vault":
			vaultNode = v
			p.mapping(v, "gateway.kroxylicious.vault.", vaultKeys, func(key string, v *yaml.Node) {
				switch key {
				case "url":
					k.VaultURL = p.url(v, "gateway.kroxylicious.vault.url")
				case "sha256":
					k.VaultSHA256 = p.hexSum(v, "gateway.kroxylicious.vault.sha256", "the zip's SHA-256", 64)
				}
			})
			if (k.VaultURL == "") != (k.VaultSHA256 == "") {
				p.bad(v, "gateway.kroxylicious.vault: give both url and sha256")
			}
		}
	})
	if n.Kind != yaml.MappingNode {
		return k
	}
	switch {
	case k.KMS == "" && vaultNode != nil:
		k.KMS = KMSVault
	case k.KMS == KMSVault && vaultNode == nil:
		p.bad(kmsNode, "gateway.kroxylicious.kms: vault needs gateway.kroxylicious.vault (url, sha256 of the Vault release xp runs a dev server of)")
	case k.KMS == KMSInMemory && vaultNode != nil:
		p.bad(vaultNode, "gateway.kroxylicious.vault: the keys are in Kroxylicious's in-memory KMS (kms: inmemory); leave vault out, or set kms: vault")
	}
	var missing []string
	if k.URL == "" {
		missing = append(missing, "url")
	}
	if k.SHA512 == "" {
		missing = append(missing, "sha512")
	}
	if k.Version == "" && (k.URL == "" || !k.Local()) {
		missing = append(missing, "version")
	}
	if len(missing) > 0 {
		p.bad(n, "gateway.kroxylicious: no %s (the release xp installs: url or file, sha512, and version for a URL)", strings.Join(missing, ", "))
		return k
	}
	if k.Local() && isHex(k.SHA512, 128) {
		p.checkKroxyliciousFile(n, versionNode, k)
	}
	if k.Java == "" {
		k.Java = fmt.Sprintf("openjdk-%d-jre-headless", release.KroxyliciousMinJava(k.Version))
	}
	return k
}

// releaseFile reads a release's location: an http(s) URL, or a file on
// this machine, made absolute (relative paths are taken from the
// TARGET.yaml's directory) and required to exist; make says how one is
// made.
func (p *fileParser) releaseFile(n *yaml.Node, what, make string) string {
	s := p.str(n, what)
	if s == "" {
		return ""
	}
	if isURL(s) {
		return p.url(n, what)
	}
	return p.localRelease(n, what, s, "an http(s) URL or a file", make)
}

// localRelease resolves s, a release given by something other than a URL:
// a file on this machine, made absolute (relative paths are taken from the
// TARGET.yaml's directory) and required to exist. want is what the key
// takes, make how a release file is made; both go into the messages.
func (p *fileParser) localRelease(n *yaml.Node, what, s, want, make string) string {
	if strings.Contains(s, "://") {
		p.bad(n, "%s: %q: want %s", what, s, want)
		return ""
	}
	if !filepath.IsAbs(s) {
		s = filepath.Join(filepath.Dir(p.path), s)
	}
	abs, err := filepath.Abs(s)
	if err == nil {
		_, err = os.Stat(abs)
	}
	if err != nil {
		p.bad(n, "%s: %s: no such release file (%s; a relative path is taken from this file's directory)", what, s, make)
		return ""
	}
	return abs
}

// checkKroxyliciousFile checks a release file against its sha512, finds
// Kroxylicious in it and takes its version (which must be the one given,
// if given); kms inmemory needs the in-memory KMS's jar in the release.
func (p *fileParser) checkKroxyliciousFile(n, versionNode *yaml.Node, k *Kroxylicious) {
	sum, err := release.SHA512File(k.URL)
	if err != nil {
		p.bad(n, "gateway.kroxylicious.url: %v", err)
		return
	}
	if sum != k.SHA512 {
		p.bad(n, "gateway.kroxylicious: %s has SHA-512 %s…, not the %s… of gateway.kroxylicious.sha512: the file is not the release named (assemble or download it again, or correct sha512)",
			k.URL, sum[:16], k.SHA512[:16])
		return
	}
	r, err := release.InspectKroxylicious(k.URL)
	if err != nil {
		p.bad(n, "gateway.kroxylicious.url: %v", err)
		return
	}
	switch {
	case k.Version == "":
		k.Version = r.Version
		if !release.AtLeast(k.Version, release.KroxyliciousMinVersion) {
			p.bad(n, "gateway.kroxylicious.url: %s holds Kroxylicious %s: xp renders the config of Kroxylicious %s or later", k.URL, r.Version, release.KroxyliciousMinVersion)
		}
	case k.Version != r.Version:
		p.bad(versionNode, "gateway.kroxylicious.version: %s, but %s holds Kroxylicious %s (libs/kroxylicious-runtime-%s.jar): correct version, or leave it out for a file",
			k.Version, k.URL, r.Version, r.Version)
	}
	if k.KMS == KMSInMemory && !r.InMemoryKMS {
		p.bad(n, "gateway.kroxylicious: kms inmemory, but %s has no libs/kroxylicious-kms-provider-kroxylicious-inmemory-*.jar (make kroxylicious-dist assembles a release with it)", k.URL)
	}
}

// hexSum is a checksum of digits hex digits. Lowercase without spaces is
// canonical (as sha512sum and Maven Central's .sha512 files write it);
// uppercase is read as its lowercase, and spaces (Apache's .sha512 files
// group the digits by eight) are dropped. A checksum of the wrong length or with a non-hex
// character is refused, naming the key and its line (what is returned
// then is no checksum: callers check isHex before they use it).
func (p *fileParser) hexSum(n *yaml.Node, what, of string, digits int) string {
	raw := p.str(n, what)
	if raw == "" {
		return "" // refused by str, or missing: said where it is needed
	}
	s := strings.ToLower(strings.Join(strings.Fields(raw), ""))
	if len(s) != digits {
		p.bad(n, "%s: %d characters, want %s as %d hex digits (lowercase, as sha%dsum prints it)", what, len(s), of, digits, digits*4)
		return s
	}
	if i := strings.IndexFunc(s, func(c rune) bool { return !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') }); i >= 0 {
		p.bad(n, "%s: %q at position %d is not a hex digit; want %s as %d hex digits (lowercase, as sha%dsum prints it)",
			what, []rune(s[i:])[0], i+1, of, digits, digits*4)
		return s
	}
	return s
}

// url is an http(s) URL with nothing a shell would interpret.
func (p *fileParser) url(n *yaml.Node, what string) string {
	s := p.str(n, what)
	if !strings.HasPrefix(s, "https://") && !strings.HasPrefix(s, "http://") {
		p.bad(n, "%s: %q is not an http(s) URL", what, s)
		return s
	}
	if strings.ContainsAny(s, "'\"\\$` \n") {
		p.bad(n, "%s: quotes, spaces, backslashes, $ and ` are not allowed in the URL", what)
	}
	return s
}

// CheckGatewayKind says why rows of gateway_kind kind and gateway mode
// security cannot run with this gateway section (nil when they can).
func (g Gateway) CheckGatewayKind(kind, security string) string {
	switch kind {
	case "", planner.DefaultGatewayKind:
	case "command":
		if g.Command == nil {
			return "gateway_kind command: the target file has no gateway.command section (start, config, modes; see docs/targets.md)"
		}
		if !slices.Contains(g.Command.Modes, security) {
			return "gateway_kind command implements " + strings.Join(g.Command.Modes, ", ") + ", not " + security +
				": add " + security + " to gateway.command.modes if the command implements it, or run these rows with gateway_kind builtin"
		}
	case "kroxylicious":
		if g.Kroxylicious == nil {
			return "gateway_kind kroxylicious: the target file has no gateway.kroxylicious section (version, url, sha512; see docs/targets.md)"
		}
		switch security {
		case planner.SecurityProxy:
		case planner.SecurityEncrypt:
			if g.Kroxylicious.KMS == "" {
				return "gateway_kind kroxylicious with security encrypt: its RecordEncryption filter needs a KMS; give gateway.kroxylicious.vault (url, sha256: a Vault dev server) or kms: inmemory (Kroxylicious's in-memory KMS)"
			}
		default:
			return "gateway_kind kroxylicious runs proxy and encrypt, not " + security + " (Kroxylicious has no field-level encryption filter); run these rows with gateway_kind builtin"
		}
	}
	return ""
}
