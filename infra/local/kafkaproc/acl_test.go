package kafkaproc

import (
	"context"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/infra/agent"
	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/planner"
)

// TestInterBrokerMTLSWithACLs: three Apache Kafka 4.x brokers replicating
// over mutual TLS with KRaft's StandardAuthorizer and 100,000 ACLs for
// other principals. A topic of replication factor 3 produced to with
// acks=all keeps all three replicas in sync, and every follower fetches
// over the INTERNAL listener's port, which speaks TLS and wants a client
// certificate, and over no plaintext port; xp's SASL user produces and
// consumes under xp's prefix, and a user without an ACL is refused.
func TestInterBrokerMTLSWithACLs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	c, err := Start(ctx, Options{Release: testRelease(t, 4), Java: testJava(t), Brokers: 3, Dir: t.TempDir(), Heap: "320m", ReadyTimeout: 150 * time.Second,
		InterBroker: planner.SecurityMTLS, Authorizer: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const others = 100_000
	began := time.Now()
	if err := c.CreateACLs(ctx, others); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d ACLs created in %s", others, time.Since(began).Round(time.Millisecond))
	admin := readProps(t, c.Modes()[planner.SecurityTLS].ClientConfig)
	// The controller answers CreateAcls before every broker has applied
	// the last batch: count until the broker asked has them all.
	want := others + 3*len(c.RunPrincipals())
	for n := countACLs(ctx, t, admin); n != want; n = countACLs(ctx, t, admin) {
		if n > want || time.Since(began) > 3*time.Minute {
			t.Fatalf("the cluster holds %d ACLs, want %d others and 3 for each of %d run principals", n, others, len(c.RunPrincipals()))
		}
	}

	xp := readProps(t, c.Modes()[planner.SecuritySASLSSL].ClientConfig)
	topic := ACLPrefix + "replicated"
	rctx, rcancel := context.WithTimeout(ctx, time.Minute)
	if err := roundTrip(rctx, xp, topic); err != nil {
		t.Fatalf("xp's user on %s: %v", topic, err)
	}
	rcancel()
	if err := roundTrip(ctx, xp, "elsewhere"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("xp's user outside %s*: %v, want TOPIC_AUTHORIZATION_FAILED", ACLPrefix, err)
	}
	if err := agent.UpsertSCRAM(ctx, admin, "intruder", "intruder-password"); err != nil {
		t.Fatal(err)
	}
	intruder := xp
	intruder[kafkaconf.SASLUsername], intruder[kafkaconf.SASLPassword] = "intruder", "intruder-password"
	if err := produceOnce(ctx, intruder, topic); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("a user without an ACL: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	// Replication: all three replicas in sync, the followers' fetch
	// connections on the leaders' INTERNAL (TLS) ports only.
	isr := inSync(ctx, t, admin, topic)
	if isr != 3 {
		t.Errorf("%s has %d replicas in sync, want 3", topic, isr)
	}
	internal, plaintext := map[string]string{}, map[string]string{}
	for _, b := range c.Brokers() {
		internal[listenerAddr(t, b, kafkaconf.ListenerInternal)] = b.Name
		plaintext[listenerAddr(t, b, kafkaconf.ListenerPlaintext)] = b.Name
	}
	for _, b := range c.Brokers() {
		remotes := established(t, b.Pid)
		var tlsPeers []string
		for _, r := range remotes {
			if n, ok := internal[r]; ok && n != b.Name {
				tlsPeers = append(tlsPeers, n)
			}
			if n, ok := plaintext[r]; ok {
				t.Errorf("%s holds a connection to %s's plaintext listener %s", b.Name, n, r)
			}
		}
		if len(tlsPeers) == 0 {
			t.Errorf("%s fetches from no other broker's INTERNAL listener (its connections: %v)", b.Name, remotes)
		}
	}
	for addr := range internal {
		if err := tlsHandshake(c, addr); err != nil {
			t.Errorf("INTERNAL listener %s: %v", addr, err)
		}
	}
}

func readProps(t *testing.T, path string) map[string]string {
	t.Helper()
	p, err := kafkaconf.ReadClientConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// produceOnce produces one record to topic and returns the error.
func produceOnce(ctx context.Context, props map[string]string, topic string) error {
	opts, err := kafkaconf.ClientOpts(props)
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return cl.ProduceSync(pctx, &kgo.Record{Topic: topic, Value: []byte("x")}).FirstErr()
}

func admClient(t *testing.T, props map[string]string) *kadm.Client {
	t.Helper()
	opts, err := kafkaconf.ClientOpts(props)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// countACLs is the number of ACLs the cluster holds.
func countACLs(ctx context.Context, t *testing.T, admin map[string]string) int {
	t.Helper()
	rs, err := admClient(t, admin).DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow().AllowHosts().
		Deny().DenyHosts().ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range rs {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		n += len(r.Described)
	}
	return n
}

// inSync is the number of in-sync replicas of topic's partition 0.
func inSync(ctx context.Context, t *testing.T, admin map[string]string, topic string) int {
	t.Helper()
	td, err := admClient(t, admin).ListTopics(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	return len(td[topic].Partitions[0].ISR)
}

// listenerAddr is broker b's address:port of listener name, from its
// server.properties.
func listenerAddr(t *testing.T, b Broker, name string) string {
	t.Helper()
	props, err := os.ReadFile(filepath.Join(b.Dir, "server.properties"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(props), "\n") {
		if v, ok := strings.CutPrefix(line, "listeners="); ok {
			for _, l := range strings.Split(v, ",") {
				if a, ok := strings.CutPrefix(l, name+"://"); ok {
					return a
				}
			}
		}
	}
	t.Fatalf("%s has no listener %s", b.Name, name)
	return ""
}

// established are the remote addresses of process pid's established TCP
// connections (/proc/<pid>/fd's sockets in /proc/net/tcp and tcp6, IPv4
// and IPv4-mapped).
func established(t *testing.T, pid int) []string {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if in, ok := strings.CutPrefix(l, "socket:["); ok {
			inodes[strings.TrimSuffix(in, "]")] = true
		}
	}
	var out []string
	for _, f := range []string{"tcp", "tcp6"} {
		tab, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(tab), "\n")[1:] {
			fs := strings.Fields(line)
			if len(fs) < 10 || fs[3] != "01" || !inodes[fs[9]] {
				continue
			}
			if a, ok := procAddr(fs[2]); ok {
				out = append(out, a)
			}
		}
	}
	return out
}

// procAddr decodes /proc/net/tcp's HEXIP:HEXPORT, the IP in 32-bit host
// (little-endian) words, IPv4 or IPv4-mapped IPv6.
func procAddr(s string) (string, bool) {
	ip, port, ok := strings.Cut(s, ":")
	if !ok || len(ip) < 8 {
		return "", false
	}
	b, err := hex.DecodeString(ip[len(ip)-8:])
	if err != nil {
		return "", false
	}
	if len(ip) == 32 && !strings.HasPrefix(ip, "0000000000000000FFFF0000") {
		return "", false
	}
	p, err := strconv.ParseUint(port, 16, 16)
	if err != nil {
		return "", false
	}
	return net.JoinHostPort(net.IPv4(b[3], b[2], b[1], b[0]).String(), strconv.Itoa(int(p))), true
}

// tlsHandshake completes a TLS handshake with addr as a client with c's
// client certificate, verifying the broker's against c's CA, and reads
// nothing: the listener speaks TLS.
func tlsHandshake(c *Cluster, addr string) error {
	props, err := kafkaconf.ReadClientConfig(c.Modes()[planner.SecurityMTLS].ClientConfig)
	if err != nil {
		return err
	}
	pair, err := tls.LoadX509KeyPair(props[kafkaconf.SSLCertificate], props[kafkaconf.SSLKey])
	if err != nil {
		return err
	}
	host, _, _ := net.SplitHostPort(addr)
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr,
		&tls.Config{RootCAs: c.Authority().CertPool(), ServerName: host, Certificates: []tls.Certificate{pair}})
	if err != nil {
		return err
	}
	return conn.Close()
}
