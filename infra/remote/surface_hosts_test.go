package remote

import (
	"cmp"
	"context"
	"crypto/rsa"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/infra/agent"
	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/infra/targetfile"
	"github.com/xp-bench/xp/infra/tf"
	"github.com/xp-bench/xp/internal/disttest"
	"github.com/xp-bench/xp/internal/kafkatest"
	"github.com/xp-bench/xp/internal/netnstest"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/runner/loadgen"
)

// TestSurfaceOnKafkaHosts deploys, as xp run on the hosts platform does,
// Apache Kafka 4 on three namespace broker hosts and a client host for a
// group whose security surface is inter_broker_security tls, authorizer
// acl with 100 ACLs, tls_version 1.2 with chacha20-poly1305 and tls_key
// rsa2048, with a gssapi row, so a KDC on the client host, an
// oauthbearer row, so xp's identity provider there over HTTPS, and a
// gateway row, so xp's gateway on a gateway host. Six rows run their load from
// the client host with replication factor 3 and acks all: mtls, which
// negotiates TLS 1.2 with that suite and the brokers' RSA key; sasl_ssl
// with scram-sha-256 and connection_churn 50, which authenticates with
// SCRAM-SHA-256 and reconnects; sasl_ssl with plain and with gssapi,
// which authenticate with PLAIN and with GSSAPI, the KDC having issued xp
// tickets for the brokers; sasl_ssl with oauthbearer, which authenticates
// with a token from the client host's identity provider (fetched over
// HTTPS, verified against the cluster's CA) that the brokers validate
// against its key set (fetched over HTTPS too), with xp's franz-go load
// generator and with its Java one (the token fetch trusting the CA
// through its login module's truststore); proxy over sasl_ssl with scram-sha-256, whose
// gateway's client leg negotiates TLS 1.2 with the suite and an RSA key
// of its own (the gateway host's certificate) and relays the SCRAM-SHA-256
// exchange to the brokers, which authorize xp's user; all healthy, the
// negotiated values in the result the attempt records. Every broker replicates over the other brokers' INTERNAL
// port, which speaks TLS 1.2 with the suite, the followers' connections
// there having received at least twice the bytes produced, and no broker
// holds a connection to another's plaintext port. The cluster holds the
// run's ACLs and the 100 others; xp's user is refused a topic outside
// xp's prefix. The broker the attempts record names the inter-broker
// protocol, the authorizer and the ACLs.
func TestSurfaceOnKafkaHosts(t *testing.T) {
	bin := buildXP(t)
	rel := disttest.Kafka(t, 4)
	n := netnstest.New(t, 5)
	host := func(i int, name string) tf.Host {
		return tf.Host{Name: name, PublicAddress: n.Hosts[i].Addr, PrivateAddress: n.Hosts[i].Addr, SSHPort: n.Hosts[i].SSHPort}
	}
	inv := &tf.Inventory{SSHUser: n.User, Hosts: tf.Hosts{
		Brokers: []tf.Host{host(0, "broker-0"), host(1, "broker-1"), host(2, "broker-2")},
		Clients: []tf.Host{host(3, "client-3")}, Gateways: []tf.Host{host(4, "gateway-4")}}}
	log := &syncBuf{}
	d, err := NewDeployer(DeployerOptions{Campaign: "s1",
		Kafka:      targetfile.Kafka{Version: rel.Version, Distribution: rel.Path, SHA512: rel.SHA512, Heap: "384m", JVMFlags: "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"},
		SSH:        targetfile.SSH{User: n.User, PrivateKey: n.UserKey, KnownHosts: targetfile.KnownHostsAcceptNew},
		KnownHosts: filepath.Join(t.TempDir(), "known_hosts"), Binary: bin, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()

	const acls = 100
	base := planner.Row{Platform: "hosts", Brokers: 3, KafkaVersion: rel.Version, InterBrokerSecurity: planner.SecurityTLS,
		Authorizer: planner.AuthorizerACL, ACLs: acls, TLSVersion: planner.TLSVersion12, TLSCipher: planner.TLSCipherChaCha20,
		TLSKey: planner.TLSKeyRSA2048, SASLMechanism: planner.SASLScramSHA512, GatewayKind: planner.GatewayKindBuiltin, Gateways: 1}
	mtls, scram, plain, gssapi, oauth, oauthJava, proxy := base, base, base, base, base, base, base
	mtls.Security = planner.SecurityMTLS
	scram.Security, scram.SASLMechanism, scram.ConnectionChurn = planner.SecuritySASLSSL, planner.SASLScramSHA256, 50
	plain.Security, plain.SASLMechanism = planner.SecuritySASLSSL, planner.SASLPlain
	gssapi.Security, gssapi.SASLMechanism = planner.SecuritySASLSSL, planner.SASLGSSAPI
	oauth.Security, oauth.SASLMechanism = planner.SecuritySASLSSL, planner.SASLOAuthBearer
	oauthJava = oauth
	oauthJava.Client = planner.ClientJava
	proxy.Security, proxy.GatewayTransport, proxy.SASLMechanism = planner.SecurityProxy, planner.SecuritySASLSSL, planner.SASLScramSHA256
	for _, r := range []*planner.Row{&mtls, &scram, &plain, &gssapi, &oauth, &oauthJava, &proxy} {
		if err := d.ServesSurface(r); err != nil {
			t.Fatalf("%s row refused: %v", r.Security, err)
		}
	}
	g := target.Group{Key: mtls.InfraKey(), Rows: []planner.Row{mtls, scram, plain, gssapi, oauth, oauthJava, proxy}}
	start := time.Now()
	ep, err := d.Deploy(ctx, g, inv)
	if err != nil {
		t.Fatalf("deploy: %v\nlog:\n%s", err, log.String())
	}
	defer d.Undeploy(context.Background())
	t.Logf("3 brokers with inter-broker TLS and %d ACLs up in %.1fs", acls, time.Since(start).Seconds())
	// What every attempt records as its broker.
	if b := d.Broker(); b.Kind != target.BrokerApache || b.Version != rel.Version || b.InterBrokerSecurity != planner.SecurityTLS ||
		b.Authorizer != kafkaconf.StandardAuthorizer || b.ACLs != acls || !strings.Contains(b.Java, "version") {
		t.Errorf("broker %+v, want apache %s with inter-broker tls, the StandardAuthorizer and %d ACLs", b, rel.Version, acls)
	}

	javaClient := disttest.JavaClient(t).Path
	var produced int64
	for _, tc := range []struct {
		row                               *planner.Row
		wantVersion, wantCipher, wantMech string
	}{
		{&mtls, "TLS 1.2", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", ""},
		{&scram, "TLS 1.2", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "SCRAM-SHA-256"},
		{&plain, "TLS 1.2", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "PLAIN"},
		{&gssapi, "TLS 1.2", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "GSSAPI"},
		{&oauth, "TLS 1.2", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "OAUTHBEARER"},
		{&oauthJava, "TLS 1.2", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "OAUTHBEARER"},
		{&proxy, "TLS 1.2", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "SCRAM-SHA-256"},
	} {
		r := tc.row
		cfg := loadgen.Config{Rate: 200, MessageSize: 128, Partitions: 3, ReplicationFactor: 3, MinInsyncReplicas: 2, Acks: "all",
			ConsumerGroups: 1, LingerMs: 1, Warmup: time.Second, Duration: 2 * time.Second, DrainTimeout: 20 * time.Second, Seed: 7,
			TLSVersion: r.TLSVersion, TLSCipher: r.TLSCipher, SASLMechanism: r.SASLMechanism, ConnectionChurn: r.ConnectionChurn,
			Client: r.Client, JavaClient: javaClient}
		res, err := d.RunLoad(ctx, target.Load{Row: r, Endpoint: ep.Modes[target.ModeKey(r)], Config: cfg})
		if err != nil || !res.Healthy {
			t.Fatalf("%s %s load: %v %+v\nserver logs:\n%s", r.Security, r.Client, err, res, serverLogs(d.Deployment()))
		}
		if want := cmp.Or(r.Client, planner.ClientFranzGo); res.Client.Name != want {
			t.Errorf("%s load ran client %q, want %s", r.Security, res.Client.Name, want)
		}
		produced += res.Published + res.Warmup.Published
		c := res.Connections
		if c == nil || c.TLSVersion != tc.wantVersion || c.TLSCipher != tc.wantCipher || c.SASLMechanism != tc.wantMech || c.TLSKey != planner.TLSKeyRSA2048 {
			t.Errorf("%s load negotiated %+v, want %s %s %q", r.Security, c, tc.wantVersion, tc.wantCipher, tc.wantMech)
			continue
		}
		if r.ConnectionChurn > 0 && (c.Churn != r.ConnectionChurn || c.Reconnects == 0 || c.Handshakes < c.Reconnects) {
			t.Errorf("%s load with churn %d: %+v, want reconnects and a handshake each", r.Security, r.ConnectionChurn, c)
		}
	}

	// The gateway row ran through xp's gateway on the gateway host,
	// whose listener is narrowed to TLS 1.2 with the suite (a client
	// offering TLS 1.3 gets 1.2) and serves an RSA 2048 certificate.
	gwMode := ep.Modes[target.ModeKey(&proxy)]
	if gwMode.Upstream == nil || len(gwMode.Bootstrap) != 1 || !strings.HasPrefix(gwMode.Bootstrap[0], n.Hosts[4].Addr+":") {
		t.Errorf("mode %s bootstraps from %v, want the gateway host %s", target.ModeKey(&proxy), gwMode.Bootstrap, n.Hosts[4].Addr)
	}
	for _, addr := range gwMode.Bootstrap {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr,
			&tls.Config{RootCAs: d.Deployment().ca.CertPool(), ServerName: strings.Split(addr, ":")[0], MaxVersion: tls.VersionTLS13})
		if err != nil {
			t.Errorf("gateway %s: %v", addr, err)
			continue
		}
		st := conn.ConnectionState()
		conn.Close()
		leaf := st.PeerCertificates[0]
		rsaKey, isRSA := leaf.PublicKey.(*rsa.PublicKey)
		if st.Version != tls.VersionTLS12 || st.CipherSuite != tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256 || !isRSA || rsaKey.N.BitLen() != 2048 {
			t.Errorf("gateway %s negotiated %s %s with a %s key, want TLS 1.2 with ChaCha20-Poly1305 and RSA 2048", addr, tls.VersionName(st.Version), tls.CipherSuiteName(st.CipherSuite), leaf.PublicKeyAlgorithm)
		}
	}

	// The OAUTHBEARER load's tokens came from the identity provider on
	// the client host, over HTTPS with a certificate from the cluster's
	// CA; the client secret is in the 0600 client config only.
	sasl := hostClientProps(t, n.Hosts[3], "s1", "sasl_ssl.properties")
	if u := sasl[kafkaconf.OAuthTokenURL]; u != "https://"+n.Hosts[3].Addr+":8443/token" {
		t.Errorf("token endpoint %q, want the client host's, over HTTPS", u)
	}
	idp, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", n.Hosts[3].Addr+":8443",
		&tls.Config{RootCAs: d.Deployment().ca.CertPool(), ServerName: n.Hosts[3].Addr})
	if err != nil {
		t.Errorf("the identity provider's TLS, verified against the cluster's CA: %v", err)
	} else {
		idp.Close()
	}

	// The GSSAPI load's tickets came from the KDC on the client host,
	// for the brokers' principals.
	kdcLog, err := os.ReadFile(filepath.Join(n.Hosts[3].Home(), "xp", "s1", "client-3", kdcDir, "kdc.log"))
	if err != nil || !regexp.MustCompile(`TGS_REQ .*xp@XP\.TEST for kafka/`+regexp.QuoteMeta(n.Hosts[0].Addr)+`@XP\.TEST`).Match(kdcLog) {
		t.Errorf("the client host's KDC issued no ticket for broker-0 to xp (%v):\n%s", err, kdcLog[max(0, len(kdcLog)-2000):])
	}

	// Replication: every broker follows the others over their INTERNAL
	// listener, and never over a plaintext one.
	brokers := n.Hosts[:3]
	internal, plaintext := map[string]string{}, map[string]string{}
	for i, h := range brokers {
		internal[net.JoinHostPort(h.Addr, strconv.Itoa(kafkaconf.DefaultPorts.Internal))] = fmt.Sprint("broker-", i)
		plaintext[net.JoinHostPort(h.Addr, strconv.Itoa(kafkaconf.DefaultPorts.Plaintext))] = fmt.Sprint("broker-", i)
	}
	var replicated int64
	for i, h := range brokers {
		peers := map[string]bool{}
		for _, s := range tcpSockets(ctx, t, h) {
			if name, ok := plaintext[s.peer]; ok && s.local != s.peer && isBroker(s.local, brokers) {
				t.Errorf("broker-%d holds a connection to %s's plaintext listener %s", i, name, s.peer)
			}
			if name, ok := internal[s.peer]; ok && name != fmt.Sprint("broker-", i) {
				peers[name] = true
				replicated += s.received
			}
		}
		if len(peers) != 2 {
			out, _ := h.Command(ctx, "ss", "-tn").CombinedOutput()
			t.Errorf("broker-%d fetches from %v over INTERNAL, want both other brokers; its connections:\n%s", i, peers, out)
		}
	}
	if replicated < 2*produced*128 {
		t.Errorf("the followers' INTERNAL connections received %d bytes, want at least twice the %d records of 128 bytes produced", replicated, produced)
	}
	t.Logf("%d records produced; the followers' INTERNAL connections received %d bytes", produced, replicated)
	dep := d.Deployment()
	for addr := range internal {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, &tls.Config{RootCAs: dep.ca.CertPool(), ServerName: strings.Split(addr, ":")[0]})
		if err != nil {
			t.Errorf("INTERNAL listener %s: %v", addr, err)
			continue
		}
		st := conn.ConnectionState()
		conn.Close()
		if st.Version != tls.VersionTLS12 || st.CipherSuite != tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256 {
			t.Errorf("INTERNAL listener %s negotiated %s %s, want TLS 1.2 with ChaCha20-Poly1305", addr, tls.VersionName(st.Version), tls.CipherSuiteName(st.CipherSuite))
		}
	}

	// The authorizer: the run's ACLs and the others, and xp's user kept
	// to xp's topics.
	client := n.Hosts[3]
	admin := hostClientProps(t, client, "s1", "tls.properties")
	opts, err := kafkaconf.ClientOpts(admin)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	described, err := kadm.NewClient(cl).DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow().AllowHosts().Deny().DenyHosts().
		ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny))
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for _, r := range described {
		got += len(r.Described)
	}
	if want := acls + 3*2; got != want {
		t.Errorf("the cluster holds %d ACLs, want %d others and 3 for each of the 2 run principals", got, want)
	}
	xp := hostClientProps(t, client, "s1", "sasl_ssl.properties")
	if err := kafkatest.ProduceOne(ctx, xp, "elsewhere"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("xp's user outside %s*: %v, want TOPIC_AUTHORIZATION_FAILED", agent.ACLPrefix, err)
	}
}

// tcpSocket is one established TCP connection of ss -tni.
type tcpSocket struct {
	local, peer string
	received    int64
}

var bytesReceived = regexp.MustCompile(`\bbytes_received:(\d+)`)

// tcpSockets lists h's established TCP connections with the bytes each
// received (ss -tni, in h's namespace).
func tcpSockets(ctx context.Context, t *testing.T, h *netnstest.Host) []tcpSocket {
	t.Helper()
	out, err := h.Command(ctx, "ss", "-tniH", "state", "established").Output()
	if err != nil {
		t.Fatalf("%s: ss: %v", h.Name, err)
	}
	var socks []tcpSocket
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 4 && !strings.HasPrefix(line, "\t"):
			// Recv-Q Send-Q Local:Port Peer:Port; its details follow on
			// a line of their own, indented.
			socks = append(socks, tcpSocket{local: unmapped(f[2]), peer: unmapped(f[3])})
		case len(socks) > 0:
			if m := bytesReceived.FindStringSubmatch(line); m != nil {
				socks[len(socks)-1].received, _ = strconv.ParseInt(m[1], 10, 64)
			}
		}
	}
	return socks
}

// unmapped is addr (address:port) with an IPv4-mapped IPv6 address, as
// ss shows a JVM's dual-stack sockets, as IPv4.
func unmapped(addr string) string {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return addr
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()).String()
}

// isBroker reports whether addr (address:port) is on one of brokers.
func isBroker(addr string, brokers []*netnstest.Host) bool {
	a, _, _ := net.SplitHostPort(addr)
	for _, h := range brokers {
		if h.Addr == a {
			return true
		}
	}
	return false
}

// hostClientProps reads client config name of campaign on h, its files'
// paths turned from the home directory h's logins see to where it is
// here (netnstest.Host.Home).
func hostClientProps(t *testing.T, h *netnstest.Host, campaign, name string) map[string]string {
	t.Helper()
	p, err := kafkaconf.ReadClientConfig(filepath.Join(h.Home(), "xp", campaign, kafkaClients, name))
	if err != nil {
		t.Fatal(err)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range p {
		if strings.HasPrefix(v, home+"/") {
			p[k] = h.Home() + strings.TrimPrefix(v, home)
		}
	}
	return p
}
