package tf

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

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

// KroxyliciousMinVersion is the oldest Kroxylicious release whose config
// format xp renders: 0.11.0 made virtualClusters a list with gateways and
// adminHttp management; older releases want a map and
// clusterNetworkAddressConfigProvider.
const KroxyliciousMinVersion = "0.11.0"

// ReleaseAtLeast says whether release number v (MAJOR.MINOR.PATCH with an
// optional suffix, as releaseRE) is min or later, by its three numbers; a
// suffix (0.23.0-rc1) is not ordered.
func ReleaseAtLeast(v, min string) bool {
	a, b := releaseNumbers(v), releaseNumbers(min)
	for i := range a {
		if a[i] != b[i] {
			return a[i] > b[i]
		}
	}
	return true
}

func releaseNumbers(v string) [3]int {
	var n [3]int
	for i, f := range strings.SplitN(v, ".", 3) {
		end := 0
		for end < len(f) && f[end] >= '0' && f[end] <= '9' {
			end++
		}
		n[i], _ = strconv.Atoi(f[:end])
	}
	return n
}

// Kroxylicious is gateway.kroxylicious: the Kroxylicious release the
// gateway machines install, and for the encrypt mode the Vault release
// whose dev server holds the record encryption keys.
type Kroxylicious struct {
	Version string
	// URL is the release tarball (kroxylicious-app-VERSION-bin.tar.gz),
	// SHA512 its hex SHA-512.
	URL, SHA512 string
	// Java is the Debian/Ubuntu package of a Java 21 runtime; default
	// openjdk-21-jre-headless.
	Java string
	// VaultURL is the Vault release zip and VaultSHA256 its hex SHA-256
	// (HashiCorp publishes SHA-256 sums); required for encrypt rows.
	VaultURL, VaultSHA256 string
}

var (
	gatewayKeys      = []string{"command", "kroxylicious"}
	commandKeys      = []string{"start", "config", "files", "ready", "modes"}
	readyKeys        = []string{"check", "timeout"}
	kroxyliciousKeys = []string{"version", "url", "sha512", "java", "vault"}
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
	k := &Kroxylicious{Java: "openjdk-21-jre-headless"}
	p.mapping(n, "gateway.kroxylicious.", kroxyliciousKeys, func(key string, v *yaml.Node) {
		switch key {
		case "version":
			k.Version = p.str(v, "gateway.kroxylicious.version")
			switch {
			case !releaseRE.MatchString(k.Version):
				p.bad(v, "gateway.kroxylicious.version: %q: want a release number such as 0.23.0", k.Version)
			case !ReleaseAtLeast(k.Version, KroxyliciousMinVersion):
				p.bad(v, "gateway.kroxylicious.version: %s: xp renders the config of Kroxylicious %s or later (virtualClusters as a list with gateways); use a newer release", k.Version, KroxyliciousMinVersion)
			}
		case "url":
			k.URL = p.url(v, "gateway.kroxylicious.url")
		case "sha512":
			k.SHA512 = p.hexSum(v, "gateway.kroxylicious.sha512", "the tarball's SHA-512", 128)
		case "java":
			k.Java = p.str(v, "gateway.kroxylicious.java")
			if !packageRE.MatchString(k.Java) {
				p.bad(v, "gateway.kroxylicious.java: %q is not a package name", k.Java)
			}
		case "vault":
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
	if n.Kind == yaml.MappingNode {
		var missing []string
		for _, f := range []struct{ name, v string }{{"version", k.Version}, {"url", k.URL}, {"sha512", k.SHA512}} {
			if f.v == "" {
				missing = append(missing, f.name)
			}
		}
		if len(missing) > 0 {
			p.bad(n, "gateway.kroxylicious: no %s (the release xp installs: version, url, sha512)", strings.Join(missing, ", "))
		}
	}
	return k
}

// hexSum is a checksum of digits hex digits (any case; returned lower).
func (p *fileParser) hexSum(n *yaml.Node, what, of string, digits int) string {
	s := strings.ToLower(p.str(n, what))
	if !isHex(s, digits) {
		p.bad(n, "%s: want %s as %d hex digits", what, of, digits)
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
			if g.Kroxylicious.VaultURL == "" {
				return "gateway_kind kroxylicious with security encrypt: its RecordEncryption filter needs a Vault; give gateway.kroxylicious.vault (url, sha256)"
			}
		default:
			return "gateway_kind kroxylicious runs proxy and encrypt, not " + security + " (Kroxylicious has no field-level encryption filter); run these rows with gateway_kind builtin"
		}
	}
	return ""
}
