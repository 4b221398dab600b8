package localtarget

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/infra/agent"
	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/internal/disttest"
	"github.com/xp-bench/xp/internal/kafkatest"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/runner/loadgen"
)

// surfaceRow is a row of the local target with every security surface
// field at its default, then edited.
func surfaceRow(edit func(*planner.Row)) planner.Row {
	r := planner.Row{Platform: "local", Security: planner.SecuritySASLSSL, Brokers: 1, GatewayKind: planner.GatewayKindBuiltin,
		GatewayTransport: planner.SecurityTLS, InterBrokerSecurity: planner.SecurityPlaintext, SASLMechanism: planner.SASLScramSHA512,
		Authorizer: planner.AuthorizerNone, TLSVersion: planner.TLSDefault, TLSCipher: planner.TLSDefault, TLSKey: planner.TLSKeyECDSAP256}
	edit(&r)
	return r
}

// TestACLsAndKroxyliciousOnApacheKafka: a group of authorizer acl rows
// with acls 100 on Apache Kafka, as a campaign runs it: the ACLs the run
// needs and 100 others are there, counted through the Admin API, before
// the rows run. A direct sasl_ssl row and rows through Kroxylicious
// (gateway_transport sasl_ssl: SCRAM-SHA-256, and OAUTHBEARER with a
// token from the group's identity provider, which the broker validates
// against its key set) run healthy as xp's user, since the gateway
// relays the SASL exchange; a user without an ACL is refused, directly
// and through Kroxylicious. The rows' tls_version 1.2, tls_cipher
// aes128-gcm and tls_key rsa4096 reach the brokers' and Kroxylicious's
// listeners: every load negotiates them, read back from its connections,
// and Kroxylicious refuses a client offering TLS 1.3 only or other TLS
// 1.2 suites.
func TestACLsAndKroxyliciousOnApacheKafka(t *testing.T) {
	aclsThroughGateway(t, planner.GatewayKindKroxylicious)
}

// TestACLsThroughXPGatewayOnApacheKafka: the same through xp's own
// gateway, whose listener takes the rows' TLS 1.2 suite and key and
// which relays the SASL exchange as Kroxylicious does.
func TestACLsThroughXPGatewayOnApacheKafka(t *testing.T) {
	aclsThroughGateway(t, planner.GatewayKindBuiltin)
}

func aclsThroughGateway(t *testing.T, kind string) {
	rel := disttest.Kafka(t, 4)
	kx := disttest.Kroxylicious(t)
	dir := t.TempDir()
	tg, err := openFile(t, dir, fmt.Sprintf("platform: local\nkafka:\n  distribution: %s\n  sha512: %s\n  heap: 384m\ngateway:\n  kroxylicious: {url: %s, sha512: %s}\n",
		rel.Path, rel.SHA512, kx.Path, kx.SHA512), testEnv(filepath.Join(dir, "cache"), nil))
	if err != nil {
		t.Fatal(err)
	}
	lt := tg.(*Target)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	defer lt.Down(context.Background())
	const others = 100
	surface := func(r *planner.Row) {
		r.KafkaVersion, r.Gateways, r.GatewayKind, r.Authorizer, r.ACLs = rel.Version, 1, kind, planner.AuthorizerACL, others
		r.TLSVersion, r.TLSCipher, r.TLSKey = planner.TLSVersion12, planner.TLSCipherAES128GCM, planner.TLSKeyRSA4096
	}
	rows := []planner.Row{surfaceRow(surface)}
	for _, mech := range []string{planner.SASLScramSHA256, planner.SASLOAuthBearer} {
		rows = append(rows, surfaceRow(func(r *planner.Row) {
			surface(r)
			r.Security, r.GatewayTransport, r.SASLMechanism = planner.SecurityProxy, planner.SecuritySASLSSL, mech
		}))
	}
	for i := range rows {
		if err := lt.ServesSurface(&rows[i]); err != nil {
			t.Fatal(err)
		}
		if err := lt.CheckRow(&rows[i]); err != nil {
			t.Fatal(err)
		}
		if rows[i].InfraKey() != rows[0].InfraKey() {
			t.Fatalf("the rows' infrastructure differs: %+v and %+v", rows[0].InfraKey(), rows[i].InfraKey())
		}
	}
	ep, err := lt.Up(ctx, target.Group{Key: rows[0].InfraKey(), Rows: rows})
	if err != nil {
		t.Fatal(err)
	}
	if b := lt.Broker(); b.Authorizer != kafkaconf.StandardAuthorizer || b.ACLs != others {
		t.Errorf("broker %+v, want the StandardAuthorizer with %d ACLs", b, others)
	}
	gwMode := target.ModeKey(&rows[1])
	if e := ep.Modes[gwMode]; e.Gateway == nil || e.Gateway.Kind != kind || len(e.Bootstrap) != 1 {
		t.Fatalf("mode %s: %+v, want one %s gateway", gwMode, e, kind)
	}
	read := func(mode string) map[string]string {
		p, err := kafkaconf.ReadClientConfig(ep.Modes[mode].ClientConfig)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	admin := read(planner.SecurityTLS)
	want := others + 3*len(lt.kafka.RunPrincipals())
	for n := countACLs(ctx, t, admin); n != want; n = countACLs(ctx, t, admin) {
		if n > want || ctx.Err() != nil {
			t.Fatalf("the cluster holds %d ACLs, want %d others and 3 for each of %v", n, others, lt.kafka.RunPrincipals())
		}
	}

	for _, r := range rows {
		mode := target.ModeKey(&r)
		res, err := loadgen.Run(ctx, loadgen.Config{ClientConfig: read(mode), TLSVersion: r.TLSVersion, TLSCipher: r.TLSCipher, SASLMechanism: r.SASLMechanism,
			Rate: 300, Partitions: 1, ConsumerGroups: 1, Duration: time.Second, DrainTimeout: 15 * time.Second, Seed: 1})
		if err != nil {
			t.Fatalf("%s %s: %v", mode, r.SASLMechanism, err)
		}
		c := res.Connections
		if !res.Healthy || res.Published == 0 || res.Consumed != res.Published || c == nil || c.TLSVersion != "TLS 1.2" ||
			c.TLSCipher != "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256" || c.TLSKey != planner.TLSKeyRSA4096 ||
			c.SASLMechanism != planner.KafkaSASLMechanism(r.SASLMechanism) {
			t.Errorf("%s %s: healthy %v %v, published %d consumed %d, connections %+v", mode, r.SASLMechanism, res.Healthy, res.Reasons, res.Published, res.Consumed, c)
		}
	}
	// A user the broker knows but no ACL names is refused, directly and
	// through the gateway, which relays its SASL exchange.
	if err := agent.UpsertSCRAM(ctx, admin, "intruder", "intruder-password"); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{planner.SecuritySASLSSL, gwMode} {
		intruder := read(mode)
		intruder[kafkaconf.SASLMechanism] = planner.KafkaSASLMechanism(planner.SASLScramSHA256)
		intruder[kafkaconf.SASLUsername], intruder[kafkaconf.SASLPassword] = "intruder", "intruder-password"
		if err := kafkatest.ProduceOne(ctx, intruder, "xp-intruder"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Errorf("%s: a user without an ACL: %v, want TOPIC_AUTHORIZATION_FAILED", mode, err)
		}
	}

	// The gateway's listener itself holds to the rows' TLS, whatever a
	// client offers.
	for _, offer := range []*tls.Config{{MinVersion: tls.VersionTLS13},
		{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256}}} {
		offer.InsecureSkipVerify = true // only the handshake's outcome matters here
		if conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", ep.Modes[gwMode].Bootstrap[0], offer); err == nil {
			cs := conn.ConnectionState()
			conn.Close()
			t.Errorf("the %s gateway accepted a client offering %x..%x %v with %s %s", kind, offer.MinVersion, offer.MaxVersion, offer.CipherSuites,
				tls.VersionName(cs.Version), tls.CipherSuiteName(cs.CipherSuite))
		}
	}
}

// countACLs is how many ACLs the cluster holds, described through the
// Admin API as xp's admin.
func countACLs(ctx context.Context, t *testing.T, admin map[string]string) int {
	t.Helper()
	opts, err := kafkaconf.ClientOpts(admin)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	rs, err := kadm.NewClient(cl).DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow().AllowHosts().
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
