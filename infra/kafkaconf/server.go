package kafkaconf

import (
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	"github.com/xp-bench/xp/planner"
)

// Listener names of a rendered broker. Every direct security mode has a
// listener of its own, so one cluster serves all of them at once.
const (
	ListenerPlaintext  = "PLAINTEXT"  // mode plaintext
	ListenerSSL        = "SSL"        // mode tls
	ListenerMTLS       = "MTLS"       // mode mtls: SSL with ssl.client.auth=required
	ListenerSASLSSL    = "SASL_SSL"   // mode sasl_ssl: PLAIN and SCRAM-SHA-512
	ListenerInternal   = "INTERNAL"   // inter-broker traffic
	ListenerController = "CONTROLLER" // the KRaft quorum
)

// ModeListeners maps each direct security mode (the planner's names) to
// its listener.
var ModeListeners = map[string]string{
	planner.SecurityPlaintext: ListenerPlaintext,
	planner.SecurityTLS:       ListenerSSL,
	planner.SecurityMTLS:      ListenerMTLS,
	planner.SecuritySASLSSL:   ListenerSASLSSL,
}

// Ports are the listener ports of every node; DefaultPorts when zero.
type Ports struct {
	Plaintext, SSL, MTLS, SASLSSL, Internal, Controller int
}

// DefaultPorts are 9092 (plaintext) to 9097 (controller).
var DefaultPorts = Ports{Plaintext: 9092, SSL: 9093, MTLS: 9094, SASLSSL: 9095, Internal: 9096, Controller: 9097}

// Node is one KRaft process.
type Node struct {
	// ID is node.id, unique in the cluster.
	ID int
	// Roles is process.roles: planner.RoleBroker, planner.RoleController,
	// or both.
	Roles []string
	// Address is the host's private address: listeners bind to it and
	// brokers advertise it.
	Address string
}

func (n Node) has(role string) bool {
	for _, r := range n.Roles {
		if r == role {
			return true
		}
	}
	return false
}

// Server is what every node of a cluster shares.
type Server struct {
	Nodes []Node
	Ports Ports
	// LogDirs is log.dirs on every node.
	LogDirs string
	// Keystore and Truststore are the paths, on the hosts, of a PEM key
	// store (key, certificate, CA: pki.Authority.Keystore) and of the CA
	// certificate (ssl.keystore.type and ssl.truststore.type PEM).
	Keystore, Truststore string
	// SASLUser and SASLPassword are the user of the SASL_SSL listener.
	// PLAIN reads them from the JAAS configuration, so the password ends up
	// in server.properties (write it 0600); SCRAM-SHA-512 credentials live
	// in the cluster's metadata and are added once it runs (kadm
	// AlterUserSCRAMs over the plaintext listener), never on a command
	// line.
	SASLUser, SASLPassword string
	// TLS narrows every TLS listener to a row's tls_version and tls_cipher
	// (ssl.enabled.protocols, ssl.cipher.suites); the zero value leaves
	// Kafka's defaults.
	TLS TLSChoice
	// ReplicationFactor is the default and the internal topics' replication
	// factor; default min(3, brokers).
	ReplicationFactor int
	// MinInsync is min.insync.replicas; default min(2, ReplicationFactor).
	MinInsync int
	// OAuth and Kerberos, when set, add OAUTHBEARER and GSSAPI to the
	// SASL_SSL listener (saslserver.go); ReauthMs is then its
	// connections.max.reauth.ms, default ReauthMs.
	OAuth    *OAuthServer
	Kerberos *KerberosServer
	ReauthMs int
	// InterBroker is the protocol brokers replicate over, a row's
	// inter_broker_security: plaintext ("" too), tls (the INTERNAL
	// listener speaks SSL) or mtls (SSL with ssl.client.auth=required,
	// each broker presenting its own certificate as a client). The
	// KRaft controller listener stays plaintext either way.
	InterBroker string
	// SuperUsers, when set, turn on KRaft's StandardAuthorizer with these
	// principals (e.g. "User:ANONYMOUS") as super.users; nil runs no
	// authorizer.
	SuperUsers []string
	// Extra are further broker configs of every node, written after the
	// rendered ones (e.g. the local target's longer quorum timeouts); a
	// key rendered above may not be repeated here.
	Extra map[string]string
}

// Brokers returns the nodes with the broker role.
func (s *Server) Brokers() []Node {
	var out []Node
	for _, n := range s.Nodes {
		if n.has(planner.RoleBroker) {
			out = append(out, n)
		}
	}
	return out
}

// Controllers returns the nodes with the controller role.
func (s *Server) Controllers() []Node {
	var out []Node
	for _, n := range s.Nodes {
		if n.has(planner.RoleController) {
			out = append(out, n)
		}
	}
	return out
}

// NewServer lays out a cluster on broker addresses and, when given,
// dedicated controller addresses. Without dedicated controllers the first
// 1, 3 or 5 brokers (the largest odd number up to 5 that there are) are
// also controllers. Node ids are 1.. for brokers and 101.. for dedicated
// controllers.
func NewServer(brokers, controllers []string) *Server {
	s := &Server{}
	for i, a := range brokers {
		n := Node{ID: i + 1, Roles: []string{planner.RoleBroker}, Address: a}
		if len(controllers) == 0 && i < combinedVoters(len(brokers)) {
			n.Roles = []string{planner.RoleBroker, planner.RoleController}
		}
		s.Nodes = append(s.Nodes, n)
	}
	for i, a := range controllers {
		s.Nodes = append(s.Nodes, Node{ID: 101 + i, Roles: []string{planner.RoleController}, Address: a})
	}
	return s
}

// combinedVoters is how many of n combined nodes vote in the quorum: an
// odd number, at most 5 (more voters slow every metadata commit).
func combinedVoters(n int) int {
	switch {
	case n >= 5:
		return 5
	case n >= 3:
		return 3
	}
	return 1
}

func (s *Server) validate() error {
	if len(s.Brokers()) == 0 {
		return errors.New("kafkaconf: no broker node")
	}
	if len(s.Controllers()) == 0 {
		return errors.New("kafkaconf: no controller node")
	}
	ids := map[int]bool{}
	for _, n := range s.Nodes {
		if ids[n.ID] {
			return fmt.Errorf("kafkaconf: node.id %d used twice", n.ID)
		}
		ids[n.ID] = true
		if net.ParseIP(n.Address) == nil {
			return fmt.Errorf("kafkaconf: node %d: address %q is not an IP address", n.ID, n.Address)
		}
		if len(n.Roles) == 0 {
			return fmt.Errorf("kafkaconf: node %d has no role", n.ID)
		}
	}
	if s.LogDirs == "" {
		return errors.New("kafkaconf: no log.dirs")
	}
	if s.Keystore == "" || s.Truststore == "" {
		return errors.New("kafkaconf: TLS listeners need a PEM keystore and truststore")
	}
	if s.SASLUser == "" || s.SASLPassword == "" {
		return errors.New("kafkaconf: the SASL_SSL listener needs a user and password")
	}
	switch s.InterBroker {
	case "", planner.SecurityPlaintext, planner.SecurityTLS, planner.SecurityMTLS:
	default:
		return fmt.Errorf("kafkaconf: inter-broker security %q: want plaintext, tls or mtls", s.InterBroker)
	}
	for _, u := range s.SuperUsers {
		if !strings.HasPrefix(u, "User:") || strings.ContainsAny(u, ";\n") {
			return fmt.Errorf("kafkaconf: super user %q: want User:<name> without ';' or line breaks", u)
		}
	}
	if strings.ContainsAny(s.SASLUser+s.SASLPassword, "\"\\\n") {
		return errors.New("kafkaconf: SASL user and password may not hold quotes, backslashes or newlines")
	}
	return nil
}

func (s *Server) ports() Ports {
	p := s.Ports
	if p == (Ports{}) {
		p = DefaultPorts
	}
	return p
}

// QuorumVoters is controller.quorum.voters: id@address:port of every
// controller.
func (s *Server) QuorumVoters() string {
	var v []string
	for _, n := range s.Controllers() {
		v = append(v, fmt.Sprintf("%d@%s", n.ID, net.JoinHostPort(n.Address, strconv.Itoa(s.ports().Controller))))
	}
	return strings.Join(v, ",")
}

// Bootstrap returns bootstrap.servers of a direct mode: every broker's
// address and the mode's listener port.
func (s *Server) Bootstrap(mode string) (string, error) {
	p := s.ports()
	port := map[string]int{planner.SecurityPlaintext: p.Plaintext, planner.SecurityTLS: p.SSL, planner.SecurityMTLS: p.MTLS,
		planner.SecuritySASLSSL: p.SASLSSL}[mode]
	if port == 0 {
		return "", fmt.Errorf("kafkaconf: %q is not a direct security mode (want plaintext, tls, mtls or sasl_ssl)", mode)
	}
	var out []string
	for _, n := range s.Brokers() {
		out = append(out, net.JoinHostPort(n.Address, strconv.Itoa(port)))
	}
	return strings.Join(out, ","), nil
}

// Properties renders server.properties of node id.
func (s *Server) Properties(id int) ([]byte, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	var node *Node
	for i := range s.Nodes {
		if s.Nodes[i].ID == id {
			node = &s.Nodes[i]
		}
	}
	if node == nil {
		return nil, fmt.Errorf("kafkaconf: no node %d", id)
	}
	var w propsWriter
	w.WriteString("# written by xp: KRaft node; may hold a password, keep it 0600\n")
	w.kv("node.id", strconv.Itoa(node.ID))
	w.kv("process.roles", strings.Join(node.Roles, ","))
	w.kv("controller.quorum.voters", s.QuorumVoters())
	w.kv("controller.listener.names", ListenerController)
	w.kv("log.dirs", s.LogDirs)
	s.writeListeners(&w, node)
	if node.has(planner.RoleBroker) {
		s.writeBrokerSecurity(&w)
		s.writeIdentitySASL(&w, node)
		s.writeTopics(&w)
	}
	s.writeAuthorizer(&w)
	if err := s.writeExtra(&w); err != nil {
		return nil, err
	}
	return []byte(w.String()), nil
}

// propsWriter renders a Java properties file.
type propsWriter struct{ strings.Builder }

func (w *propsWriter) kv(k, v string)   { fmt.Fprintf(w, "%s=%s\n", k, v) }
func (w *propsWriter) comment(c string) { fmt.Fprintf(w, "\n# %s\n", c) }

// writeListeners writes node's listeners: one per direct security mode,
// one between brokers and one for the quorum.
func (s *Server) writeListeners(w *propsWriter, node *Node) {
	p := s.ports()
	hp := func(port int) string { return net.JoinHostPort(node.Address, strconv.Itoa(port)) }
	w.comment("listeners: one per direct security mode, one between brokers, one for the quorum")
	var listeners, advertised []string
	if node.has(planner.RoleBroker) {
		for _, l := range []struct {
			name string
			port int
		}{{ListenerPlaintext, p.Plaintext}, {ListenerSSL, p.SSL}, {ListenerMTLS, p.MTLS}, {ListenerSASLSSL, p.SASLSSL}, {ListenerInternal, p.Internal}} {
			listeners = append(listeners, l.name+"://"+hp(l.port))
			advertised = append(advertised, l.name+"://"+hp(l.port))
		}
	}
	if node.has(planner.RoleController) {
		listeners = append(listeners, ListenerController+"://"+hp(p.Controller))
	}
	w.kv("listeners", strings.Join(listeners, ","))
	if node.has(planner.RoleBroker) {
		w.kv("advertised.listeners", strings.Join(advertised, ","))
		w.kv("inter.broker.listener.name", ListenerInternal)
	}
	w.kv("listener.security.protocol.map", strings.Join([]string{
		ListenerPlaintext + ":PLAINTEXT", ListenerSSL + ":SSL", ListenerMTLS + ":SSL",
		ListenerSASLSSL + ":SASL_SSL", ListenerInternal + ":" + s.internalProtocol(), ListenerController + ":PLAINTEXT"}, ","))
}

// internalProtocol is the security protocol of the INTERNAL listener,
// the one brokers replicate over: SSL for inter-broker tls and mtls.
func (s *Server) internalProtocol() string {
	if s.InterBroker == planner.SecurityTLS || s.InterBroker == planner.SecurityMTLS {
		return "SSL"
	}
	return "PLAINTEXT"
}

// writeBrokerSecurity writes a broker's TLS (PEM key and trust stores, a
// client certificate required on mtls, the version and suites of TLS)
// and SASL_SSL (PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512) settings.
func (s *Server) writeBrokerSecurity(w *propsWriter) {
	w.comment("TLS: PEM key store (key, certificate, CA) and trust store")
	w.kv("ssl.keystore.type", "PEM")
	w.kv("ssl.keystore.location", s.Keystore)
	w.kv("ssl.truststore.type", "PEM")
	w.kv("ssl.truststore.location", s.Truststore)
	w.kv("ssl.endpoint.identification.algorithm", "https")
	w.kv("listener.name.mtls.ssl.client.auth", "required")
	if s.InterBroker == planner.SecurityMTLS {
		// Each broker's key store doubles as its client certificate
		// when it fetches from a leader.
		w.kv("listener.name.internal.ssl.client.auth", "required")
	}
	if p := s.TLS.Protocols(); p != "" {
		w.kv("ssl.enabled.protocols", p)
		w.kv("ssl.protocol", p)
	}
	if cs := s.TLS.CipherSuites(); cs != nil {
		w.kv("ssl.cipher.suites", strings.Join(cs, ","))
	}

	w.comment("SASL_SSL: PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512")
	w.kv("listener.name.sasl_ssl.sasl.enabled.mechanisms", s.saslMechanisms())
	w.kv("listener.name.sasl_ssl.plain.sasl.jaas.config",
		fmt.Sprintf(`org.apache.kafka.common.security.plain.PlainLoginModule required user_%s="%s";`, s.SASLUser, s.SASLPassword))
	w.kv("listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config",
		"org.apache.kafka.common.security.scram.ScramLoginModule required;")
	w.kv("listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config",
		"org.apache.kafka.common.security.scram.ScramLoginModule required;")
}

// writeAuthorizer writes KRaft's StandardAuthorizer and its super users,
// on brokers and controllers alike (a controller authorizes the brokers'
// registrations and heartbeats and the Admin API's ACL changes), when
// s.SuperUsers is set.
func (s *Server) writeAuthorizer(w *propsWriter) {
	if len(s.SuperUsers) == 0 {
		return
	}
	w.comment("authorization: KRaft's StandardAuthorizer, ACLs in the cluster's metadata")
	w.kv("authorizer.class.name", StandardAuthorizer)
	w.kv("super.users", strings.Join(s.SuperUsers, ";"))
}

// StandardAuthorizer is KRaft's ACL authorizer class.
const StandardAuthorizer = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

// writeTopics writes a broker's topic defaults.
func (s *Server) writeTopics(w *propsWriter) {
	w.comment("topics")
	rf, isr := topicReplication(s.ReplicationFactor, s.MinInsync, len(s.Brokers()))
	w.kv("default.replication.factor", strconv.Itoa(rf))
	w.kv("min.insync.replicas", strconv.Itoa(isr))
	w.kv("offsets.topic.replication.factor", strconv.Itoa(rf))
	w.kv("transaction.state.log.replication.factor", strconv.Itoa(rf))
	w.kv("transaction.state.log.min.isr", strconv.Itoa(isr))
	w.kv("auto.create.topics.enable", "false")
	w.kv("group.initial.rebalance.delay.ms", "0")
}

// topicReplication is the replication factor and min.insync.replicas of a
// cluster of brokers given rf and isr: each as given, or when not
// positive, by default min(3, brokers) and min(2, the replication
// factor).
func topicReplication(rf, isr, brokers int) (int, int) {
	if rf <= 0 {
		rf = min(3, brokers)
	}
	if isr <= 0 {
		isr = min(2, rf)
	}
	return rf, isr
}

// writeExtra writes s.Extra, sorted by key, after what w holds, which no
// extra key may repeat.
func (s *Server) writeExtra(w *propsWriter) error {
	if len(s.Extra) == 0 {
		return nil
	}
	rendered := w.String()
	keys := make([]string, 0, len(s.Extra))
	for k := range s.Extra {
		if strings.Contains(rendered, "\n"+k+"=") {
			return fmt.Errorf("kafkaconf: extra config %s is one xp renders itself", k)
		}
		if k == "" || strings.ContainsAny(k, "\n\r= ") || strings.ContainsAny(s.Extra[k], "\n\r") {
			return fmt.Errorf("kafkaconf: extra config %q: want a key without '=' or line breaks and a one-line value", k)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	w.comment("set for this cluster")
	for _, k := range keys {
		w.kv(k, s.Extra[k])
	}
	return nil
}

// ClientProps returns the librdkafka client properties of a direct mode
// against this cluster: CA, and for mtls the client certificate and key,
// at the given paths on the client host; for sasl_ssl, mech (PLAIN or
// SCRAM-SHA-512, default SCRAM-SHA-512) with the cluster's user.
func (s *Server) ClientProps(mode, caPath, certPath, keyPath, mech string) (map[string]string, error) {
	boot, err := s.Bootstrap(mode)
	if err != nil {
		return nil, err
	}
	props := map[string]string{BootstrapServers: boot}
	switch mode {
	case planner.SecurityPlaintext:
		props[SecurityProtocol] = "plaintext"
	case planner.SecurityTLS:
		props[SecurityProtocol] = "ssl"
		props[SSLCALocation] = caPath
	case planner.SecurityMTLS:
		props[SecurityProtocol] = "ssl"
		props[SSLCALocation] = caPath
		props[SSLCertificate] = certPath
		props[SSLKey] = keyPath
	case planner.SecuritySASLSSL:
		if mech == "" {
			mech = "SCRAM-SHA-512"
		}
		props[SecurityProtocol] = "sasl_ssl"
		props[SSLCALocation] = caPath
		props[SASLMechanism] = mech
		props[SASLUsername] = s.SASLUser
		props[SASLPassword] = s.SASLPassword
	}
	return props, nil
}

// FormatClientConfig renders props as WriteClientConfig writes them.
func FormatClientConfig(props map[string]string) []byte {
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("# written by xp; librdkafka property names (kcat -F)\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, props[k])
	}
	return []byte(b.String())
}

// CertPrincipal is the principal Kafka's default principal builder gives
// a client presenting a certificate of infra/pki named name (its subject,
// RFC 2253: CN=name,O=xp), as ACLs and super.users name it.
func CertPrincipal(name string) string { return "User:CN=" + name + ",O=xp" }
