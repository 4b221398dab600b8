package targetfile

import (
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/xp-bench/xp/internal/yamlcheck"
	"github.com/xp-bench/xp/planner"
)

// PlatformExisting is the platform of a cluster someone else runs: xp
// provisions and installs nothing, and reaches it through the endpoints of
// the TARGET.yaml.
const PlatformExisting = "existing"

// DefaultTopicPrefix is topic_prefix unless the file gives one.
const DefaultTopicPrefix = "xp-"

// ReservedTopicPrefix starts the names of Kafka's internal topics
// (__consumer_offsets, __transaction_state, __share_group_state): no
// topic_prefix may start with it.
const ReservedTopicPrefix = "__"

// Existing is the part of a TARGET.yaml of platform existing.
type Existing struct {
	// Endpoints maps a mode key (target.ModeKey: plaintext, tls, mtls,
	// sasl_ssl, proxy, proxy.sasl_ssl, ...) to how to reach the cluster
	// in that mode.
	Endpoints map[string]Endpoint
	// EndpointsLine is the line of endpoints: (0 when absent).
	EndpointsLine int
	// TopicPrefix starts the name of every topic xp creates, uses and
	// deletes there; default DefaultTopicPrefix. It never starts with
	// "__", the names Kafka reserves for its internal topics.
	TopicPrefix string
	// TopicPrefixLine is the line of topic_prefix: (0 when absent).
	TopicPrefixLine int
	// Telemetry, when set, samples the cluster's machines over SSH.
	Telemetry *Telemetry
	// HourlyPriceUSD is what the cluster costs an hour, for the cost of a
	// campaign; 0: nothing.
	HourlyPriceUSD float64
}

// Endpoint is one way into an existing cluster.
type Endpoint struct {
	Bootstrap []string `json:"bootstrap"`
	// ClientConfig is the client config file (librdkafka's or the Java
	// client's properties), made absolute: a relative path is taken from
	// the TARGET.yaml's directory.
	ClientConfig string `json:"client_config"`
	// Line is the endpoint's line in the file.
	Line int `json:"-"`
}

// Telemetry is how xp samples the machines of an existing cluster: over
// SSH, with its agent uploaded for the campaign and removed at its end.
type Telemetry struct {
	SSH   SSH
	Hosts []TelemetryHost
}

// TelemetryHost is one machine of an existing cluster that telemetry samples.
type TelemetryHost struct {
	Name    string `json:"name"`
	Address string `json:"address"`
	// SSHPort is the port sshd listens on; default 22.
	SSHPort int `json:"ssh_port,omitempty"`
	// Role is broker, controller or gateway.
	Role string `json:"role"`
	Line int    `json:"-"`
}

var (
	existingKeys  = []string{"endpoints", "topic_prefix", "telemetry", "hourly_price_usd"}
	endpointKeys  = []string{"bootstrap", "client_config"}
	telemetryKeys = []string{"ssh", "hosts"}
	machineKeys   = []string{"name", "address", "ssh_port", "role"}
	machineRoles  = []string{planner.RoleBroker, planner.RoleController, planner.RoleGateway}
	// notExistingKeys are the keys of platforms xp provisions.
	notExistingKeys = []string{"module", "vars", "ssh", "kafka", "gateway", "teardown"}
	// topicPrefixRE is what Kafka allows in a topic name, which the
	// prefix starts.
	topicPrefixRE  = regexp.MustCompile(`^[A-Za-z0-9._-]{1,100}$`)
	hostNameRE     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	modeTransports = []string{planner.SecurityPlaintext, planner.SecurityMTLS, planner.SecuritySASLSSL}
	modeEncodings  = []string{"avro", "protobuf", "bytes"}
)

// existing reads the keys of platform existing (nodes by key, each with
// the line of its key), and refuses the keys of provisioned platforms.
func (p *fileParser) existing(nodes map[string]*yaml.Node, lines map[string]int, getenv func(string) string) *Existing {
	e := &Existing{TopicPrefix: DefaultTopicPrefix, Endpoints: map[string]Endpoint{}}
	for _, k := range notExistingKeys {
		if n := nodes[k]; n != nil {
			p.badAt(lines[k], "%s: not used with platform existing: the cluster is someone else's, xp provisions and installs nothing on it "+
				"(telemetry: {ssh: ..., hosts: ...} samples its machines)", k)
		}
	}
	if n := nodes["endpoints"]; n != nil {
		e.EndpointsLine = lines["endpoints"]
		p.mapping(n, "endpoints.", nil, func(mode string, v *yaml.Node) {
			if msg := CheckModeKey(mode); msg != "" {
				p.bad(v, "endpoints.%s: %s", mode, msg)
				return
			}
			ep := Endpoint{Line: lineOfKey(n, mode)}
			what := "endpoints." + mode
			p.mapping(v, what+".", endpointKeys, func(k string, v *yaml.Node) {
				switch k {
				case "bootstrap":
					ep.Bootstrap = p.addresses(v, what+".bootstrap")
				case "client_config":
					c := expandHome(p.str(v, what+".client_config"), getenv)
					if c != "" && !filepath.IsAbs(c) {
						c = filepath.Join(filepath.Dir(p.path), c)
					}
					if abs, err := filepath.Abs(c); err == nil && c != "" {
						c = abs
					}
					ep.ClientConfig = c
				}
			})
			if v.Kind != yaml.MappingNode {
				return
			}
			if len(ep.Bootstrap) == 0 || ep.ClientConfig == "" {
				p.badAt(ep.Line, "%s: needs bootstrap (a list of host:port) and client_config (a client properties file, librdkafka's or the Java client's)", what)
				return
			}
			e.Endpoints[mode] = ep
		})
	}
	if len(e.Endpoints) == 0 && nodes["endpoints"] == nil {
		p.bad(nil, "platform existing needs endpoints: one {bootstrap, client_config} per security mode the plan's rows use (docs/targets.md)")
	}
	if n := nodes["topic_prefix"]; n != nil {
		e.TopicPrefix, e.TopicPrefixLine = p.str(n, "topic_prefix"), lines["topic_prefix"]
		switch {
		case !topicPrefixRE.MatchString(e.TopicPrefix):
			p.bad(n, "topic_prefix: %q: want 1 to 100 of the characters Kafka allows in topic names (letters, digits, '.', '_', '-')", e.TopicPrefix)
		case strings.HasPrefix(e.TopicPrefix, ReservedTopicPrefix):
			p.bad(n, "topic_prefix: %q: Kafka reserves names starting with %q for its internal topics (__consumer_offsets, __transaction_state): "+
				"choose a prefix that does not start with %q, e.g. %q", e.TopicPrefix, ReservedTopicPrefix, ReservedTopicPrefix, DefaultTopicPrefix)
		}
	}
	if n := nodes["hourly_price_usd"]; n != nil {
		if err := n.Decode(&e.HourlyPriceUSD); err != nil || e.HourlyPriceUSD < 0 {
			p.bad(n, "hourly_price_usd: want a number of US dollars, 0 or more")
		}
	}
	if n := nodes["telemetry"]; n != nil {
		e.Telemetry = p.telemetry(n, getenv)
	}
	return e
}

// telemetry parses telemetry: {ssh: {...}, hosts: [{name, address, role}]}.
func (p *fileParser) telemetry(n *yaml.Node, getenv func(string) string) *Telemetry {
	t := &Telemetry{SSH: SSH{KnownHosts: KnownHostsAcceptNew}}
	var hosts *yaml.Node
	p.mapping(n, "telemetry.", telemetryKeys, func(k string, v *yaml.Node) {
		switch k {
		case "ssh":
			t.SSH = p.ssh(v, "telemetry.ssh.", getenv)
		case "hosts":
			hosts = v
		}
	})
	if n.Kind != yaml.MappingNode {
		return t
	}
	if hosts == nil || hosts.Kind != yaml.SequenceNode || len(hosts.Content) == 0 {
		p.bad(n, "telemetry.hosts: want a list of {name, address, role} (role broker, controller or gateway)")
		return t
	}
	seen := map[string]int{}
	for i, hn := range hosts.Content {
		what := fmt.Sprintf("telemetry.hosts[%d]", i)
		m := TelemetryHost{Line: hn.Line}
		p.mapping(hn, what+".", machineKeys, func(k string, v *yaml.Node) {
			switch k {
			case "name":
				m.Name = p.str(v, what+".name")
			case "address":
				m.Address = p.str(v, what+".address")
			case "ssh_port":
				if err := v.Decode(&m.SSHPort); err != nil || m.SSHPort < 1 || m.SSHPort > 65535 {
					p.bad(v, "%s.ssh_port: want a port, 1..65535", what)
				}
			case "role":
				m.Role = p.str(v, what+".role")
				p.oneOf(v, what+".role", m.Role, machineRoles)
			}
		})
		if hn.Kind != yaml.MappingNode {
			continue
		}
		if !hostNameRE.MatchString(m.Name) || m.Address == "" || m.Role == "" {
			p.bad(hn, "%s: needs name (letters, digits, '.', '_', '-'), address and role", what)
			continue
		}
		if first, dup := seen[m.Name]; dup {
			p.bad(hn, "%s: name %s is used twice (first at line %d)", what, m.Name, first)
			continue
		}
		seen[m.Name] = hn.Line
		t.Hosts = append(t.Hosts, m)
	}
	return t
}

// ssh parses an ssh: section (user, private_key, known_hosts, keepalive,
// wait).
func (p *fileParser) ssh(n *yaml.Node, what string, getenv func(string) string) SSH {
	s := SSH{KnownHosts: KnownHostsAcceptNew}
	p.mapping(n, what, sshKeys, func(k string, v *yaml.Node) {
		switch k {
		case "user":
			s.User = p.str(v, what+"user")
		case "private_key":
			s.PrivateKey = expandHome(p.str(v, what+"private_key"), getenv)
		case "known_hosts":
			s.KnownHosts = p.str(v, what+"known_hosts")
			p.oneOf(v, what+"known_hosts", s.KnownHosts, knownHosts)
		case "keepalive":
			d, err := parseKeepalive(p.str(v, what+"keepalive"))
			if err != nil {
				p.bad(v, "%skeepalive: %v", what, err)
			}
			s.Keepalive = d
		case "wait":
			d, err := time.ParseDuration(p.str(v, what+"wait"))
			if err != nil || d < time.Second || d > time.Hour {
				p.bad(v, "%swait: want a duration from 1s to 1h, such as 5m", what)
			}
			s.Wait = d
		}
	})
	return s
}

// addresses reads a list of host:port.
func (p *fileParser) addresses(n *yaml.Node, what string) []string {
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		p.bad(n, "%s: want a list of host:port", what)
		return nil
	}
	var out []string
	for _, a := range n.Content {
		s := p.str(a, what)
		host, port, err := net.SplitHostPort(s)
		if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
			p.bad(a, "%s: %q is not host:port", what, s)
			continue
		}
		out = append(out, s)
	}
	return out
}

// CheckModeKey says what is wrong with an endpoints key, "" when nothing:
// a direct security mode, or a gateway mode's name as rows' mode keys
// spell it (planner.GatewayModeName: field_cipher fpe, encoding, transport;
// then encrypt_fields other than ssn joined with '+').
func CheckModeKey(key string) string {
	parts := strings.Split(key, ".")
	modes := append([]string{planner.SecurityPlaintext, planner.SecurityTLS, planner.SecurityMTLS, planner.SecuritySASLSSL},
		planner.GatewayModes()...)
	if !slices.Contains(modes, parts[0]) {
		return fmt.Sprintf("%q is not a security mode (%s)%s", parts[0], strings.Join(modes, ", "), yamlcheck.Suggestion(parts[0], modes))
	}
	if !planner.NeedsGateway(parts[0]) {
		if len(parts) > 1 {
			return fmt.Sprintf("a direct mode's key is its name alone (%s)", parts[0])
		}
		return ""
	}
	for _, x := range parts[1:] {
		fields := strings.Split(x, "+")
		isFields := true
		for _, f := range fields {
			isFields = isFields && slices.Contains(planner.RecordFields, f)
		}
		switch {
		case slices.Contains(modeTransports, x), slices.Contains(modeEncodings, x) && parts[0] == planner.SecurityFieldEncrypt,
			x == planner.FieldCipherFPE && parts[0] == planner.SecurityFieldEncrypt, isFields && parts[0] == planner.SecurityFieldEncrypt:
		case x == planner.GatewayCryptoFast:
			return "gateway_crypto fast is the crypto of xp's own gateway; on an existing cluster the gateway is yours"
		default:
			return fmt.Sprintf("%q: after the mode, a key names the gateway's client transport (%s; tls is the default and unnamed) "+
				"and, for field_encrypt, the field cipher, encoding and encrypted fields, as in proxy.sasl_ssl or field_encrypt.avro.mtls", x, strings.Join(modeTransports, ", "))
		}
	}
	return ""
}

// ModeTransport is the transport clients speak to the endpoint of a mode
// key: the direct mode itself, or a gateway mode's client transport (tls
// unless the key names another).
func ModeTransport(key string) string {
	parts := strings.Split(key, ".")
	if !planner.NeedsGateway(parts[0]) {
		return parts[0]
	}
	for _, x := range parts[1:] {
		if slices.Contains(modeTransports, x) {
			return x
		}
	}
	return planner.DefaultGatewayTransport
}

// lineOfKey is the line of key in mapping n.
func lineOfKey(n *yaml.Node, key string) int { return keyLine(n, key) }
