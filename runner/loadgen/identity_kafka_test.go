package loadgen

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/kdc"
	"github.com/xp-bench/xp/infra/local/kafkaproc"
	"github.com/xp-bench/xp/infra/oauthidp"
	"github.com/xp-bench/xp/internal/disttest"
	"github.com/xp-bench/xp/internal/kafkatest"
	"github.com/xp-bench/xp/planner"
)

// TestIdentitySASLOnKafka runs every SASL mechanism on one Apache Kafka 4
// broker whose SASL_SSL listener also validates JWTs against xp's
// identity provider and Kerberos tickets from a real MIT KDC. For
// OAUTHBEARER and GSSAPI xp's load generator produces and consumes;
// tokens that expire during the run are renewed and the connections
// re-authenticate; a token signed with another key and a keytab of
// replaced keys are refused. For every mechanism Kafka's own console
// producer writes a record its console consumer reads back, and where
// Debian's kcat (librdkafka 2.0.2) can speak the mechanism to Kafka 4
// (PLAIN, GSSAPI) kcat writes and reads one too. xp's Java load
// generator runs on the same broker with every mechanism and every
// tls_version and tls_cipher (subtest java), and churns its connections.
func TestIdentitySASLOnKafka(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// Tokens live 6 s: a run of 1 s warm-up and 6 s measured outlives
	// them, and every client renews its token at 80 % of its lifetime.
	// (4 s tokens left 0.8 s between renewal and expiry, and on a loaded
	// host librdkafka once re-authenticated with an expiring token: its
	// consumer reported an authentication failure.)
	idp, err := oauthidp.Start(oauthidp.Options{ClientID: "xp", ClientSecret: "s3cret", Lifetime: 6 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer idp.Close()
	k, err := kdc.Start(ctx, kdc.Options{Dir: filepath.Join(t.TempDir(), "kdc"), Realm: "XP.TEST"})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	c := kafkatest.Start(t, kafkatest.Options{Major: 4, KDC: k,
		OAuth: &kafkaconf.OAuthServer{JWKSURL: idp.JWKSURL(), Issuer: idp.Issuer(), Audience: oauthidp.Audience}})
	base, err := kafkaconf.ReadClientConfig(c.Modes()[planner.SecuritySASLSSL].ClientConfig)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	keytab, err := k.Keytab(ctx, filepath.Join(dir, "xp.keytab"), "xp")
	if err != nil {
		t.Fatal(err)
	}
	oauthProps := kafkaconf.WithIdentity(base, "OAUTHBEARER", map[string]string{kafkaconf.OAuthMethod: "oidc",
		kafkaconf.OAuthTokenURL: idp.TokenURL(), kafkaconf.OAuthClientID: "xp", kafkaconf.OAuthClientSecret: "s3cret"})
	krbProps := kafkaconf.WithIdentity(base, "GSSAPI", map[string]string{kafkaconf.KerberosPrincipal: "xp@XP.TEST",
		kafkaconf.KerberosKeytab: keytab, kafkaconf.KerberosKrb5Conf: k.Krb5Conf, kafkaconf.KerberosServiceName: kafkaproc.KerberosService})
	admin := adminClient(t, c)
	// The broker logs each re-authentication at DEBUG; raise that one
	// logger (a broker logger config, as kafka-configs --entity-type
	// broker-loggers would).
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeBrokerLogger, strconv.Itoa(c.Brokers()[0].ID)
	lc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	lc.Name, lc.Value = "org.apache.kafka.common.security.authenticator.SaslServerAuthenticator", kmsg.StringPtr("DEBUG")
	res.Configs = append(res.Configs, lc)
	req.Resources = append(req.Resources, res)
	if resp, err := req.RequestWith(ctx, admin); err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("raising the authenticator's log level: %v %+v", err, resp)
	}
	serverLog := filepath.Join(c.Brokers()[0].Dir, "logs", "server.log")
	withMech := func(mech string) map[string]string {
		p := maps.Clone(base)
		p[kafkaconf.SASLMechanism] = planner.KafkaSASLMechanism(mech)
		return p
	}
	for _, tc := range []struct {
		mech     string
		props    map[string]string
		jvmFlags []string
	}{
		{planner.SASLScramSHA512, withMech(planner.SASLScramSHA512), nil},
		{planner.SASLScramSHA256, withMech(planner.SASLScramSHA256), nil},
		{planner.SASLPlain, withMech(planner.SASLPlain), nil},
		{planner.SASLOAuthBearer, oauthProps, []string{kafkaconf.AllowedURLsFlag(idp.TokenURL())}},
		{planner.SASLGSSAPI, krbProps, []string{"-Djava.security.krb5.conf=" + k.Krb5Conf}},
	} {
		t.Run(tc.mech, func(t *testing.T) {
			topic := "java-" + tc.mech
			if _, err := kadm.NewClient(admin).CreateTopic(ctx, 1, -1, nil, topic); err != nil {
				t.Fatal(err)
			}
			javaConf := filepath.Join(dir, tc.mech+".java.properties")
			if err := kafkaconf.WriteJavaClientConfig(javaConf, tc.props); err != nil {
				t.Fatal(err)
			}
			// Kafka's own console producer and consumer with the
			// mechanism: one record written and read back (the consumer
			// assigned its partition, without a group to join).
			tool := func(stdin, class string, args ...string) string {
				t.Helper()
				args = append(append(append([]string{}, tc.jvmFlags...), "-cp", filepath.Join(c.Release().Dir, "libs", "*"),
					class, "--bootstrap-server", kafkaconf.Bootstrap(tc.props)[0], "--topic", topic), args...)
				cmd := exec.CommandContext(ctx, javaPath(t), args...)
				var out, errb bytes.Buffer
				cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &out, &errb
				if err := cmd.Run(); err != nil {
					t.Fatalf("%s: %v\n%s", class, err, errb.String())
				}
				return out.String()
			}
			tool("from-java\n", "org.apache.kafka.tools.ConsoleProducer", "--producer.config", javaConf)
			if got := tool("", "org.apache.kafka.tools.consumer.ConsoleConsumer", "--command-config", javaConf,
				"--partition", "0", "--offset", "earliest", "--max-messages", "1", "--timeout-ms", "30000"); got != "from-java\n" {
				t.Errorf("console consumer read %q over %s, want the console producer's record", got, tc.mech)
			}
			if tc.mech == planner.SASLPlain || tc.mech == planner.SASLGSSAPI {
				kcatRoundTrip(t, ctx, tc.props, topic, tc.mech)
			}
			if tc.mech != planner.SASLOAuthBearer && tc.mech != planner.SASLGSSAPI {
				return // xp's load generator: TestSecuritySurfaceOnKafka, and java below
			}
			issued := idp.Issued()
			cfg := quick(tc.props)
			cfg.SASLMechanism = tc.mech
			cfg.Duration = 6 * time.Second
			res, err := Run(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Healthy || res.Consumed != res.Published || res.Connections.SASLMechanism != planner.KafkaSASLMechanism(tc.mech) {
				t.Fatalf("healthy %v %v, published %d consumed %d, connections %+v", res.Healthy, res.Reasons, res.Published, res.Consumed, res.Connections)
			}
			if tc.mech == planner.SASLOAuthBearer {
				// 7 s of warm-up and run with 6 s tokens renewed at 4.8 s: the
				// broker ends each session at its token's expiry and the
				// connections re-authenticate with new tokens.
				log, err := os.ReadFile(serverLog)
				if err != nil {
					t.Fatal(err)
				}
				reauths := bytes.Count(log, []byte("Beginning re-authentication"))
				if got := idp.Issued() - issued; got < 2 || reauths < 2 {
					t.Errorf("%d tokens issued and %d re-authentications in the broker's log over the run; want at least 2 of each", got, reauths)
				}
				t.Logf("%d tokens issued, %d re-authentications logged by the broker", idp.Issued()-issued, reauths)
			}
		})
	}
	// The librdkafka client logs in with the same token endpoint (its own
	// OIDC client) and renews its tokens as they expire.
	t.Run("librdkafka/"+planner.SASLOAuthBearer, func(t *testing.T) {
		// Every client has its token by the end of the warm-up: a token
		// issued after it is a renewal.
		var measuring atomic.Int64
		measuring.Store(-1)
		cfg := quick(oauthProps)
		cfg.SASLMechanism, cfg.Duration = planner.SASLOAuthBearer, 6*time.Second
		cfg.OnPhase = func(phase string, _ time.Time) {
			if phase == "measure" {
				measuring.Store(idp.Issued())
			}
		}
		cfg.Client, cfg.RdkafkaClient, cfg.CacheDir = planner.ClientLibrdkafka, disttest.RdkafkaClient(t).Path, t.TempDir()
		res, err := Run(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Healthy || res.Published == 0 || res.Consumed != res.Published || res.Client.Name != planner.ClientLibrdkafka {
			t.Fatalf("healthy %v %v %v, published %d consumed %d, client %q", res.Healthy, res.Reasons, res.ErrorSamples, res.Published, res.Consumed, res.Client.Name)
		}
		if m := measuring.Load(); m < 0 || idp.Issued()-m < 2 {
			t.Errorf("tokens issued: %d by the measured window, %d in all; want renewals by the producer and the consumer during the run", m, idp.Issued())
		}
		t.Logf("librdkafka: %d tokens issued by the measured window, %d in all", measuring.Load(), idp.Issued())
	})
	// The librdkafka client churns its connections as the Go client does:
	// each of its two producers' clients is destroyed and created again
	// every 1500 records, so the 3000 each sends in the window make 2
	// reconnects over SCRAM apiece, each timed and with its handshakes
	// counted. Both come with a second or more of the schedule after them:
	// a fresh idempotent client's flush, TLS and SCRAM take up to a second
	// and a half on a loaded host, which the producer then catches up.
	t.Run("librdkafka/churn", func(t *testing.T) {
		cfg := quick(base)
		cfg.Producers, cfg.ConnectionChurn = 2, 1500
		cfg.Client, cfg.RdkafkaClient, cfg.CacheDir = planner.ClientLibrdkafka, disttest.RdkafkaClient(t).Path, t.TempDir()
		res, err := Run(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Healthy || res.Published != 6000 || res.Consumed != 6000 || res.Duplicates != 0 {
			t.Fatalf("healthy %v %v %v, published %d consumed %d duplicates %d", res.Healthy, res.Reasons, res.ErrorSamples, res.Published, res.Consumed, res.Duplicates)
		}
		cn := res.Connections
		if cn == nil || cn.Churn != 1500 || cn.Reconnects != 4 || cn.SASLMechanism == "" {
			t.Fatalf("connections %+v, want 4 reconnects of churn 1500 over the row's mechanism", cn)
		}
		h, err := hdrhistogram.Decode([]byte(cn.Reconnect))
		if err != nil {
			t.Fatal(err)
		}
		if cn.Handshakes < cn.Reconnects || cn.HandshakesPerS != float64(cn.Handshakes)/3 || cn.ReconnectMs.P50 <= 0 || h.TotalCount() != cn.Reconnects {
			t.Errorf("handshakes %d (%v/s), reconnect %+v with %d timed: want a handshake and a time for each reconnect", cn.Handshakes, cn.HandshakesPerS, cn.ReconnectMs, h.TotalCount())
		}
		t.Logf("librdkafka churn: %d reconnects, %d handshakes, reconnect p50 %.1f ms", cn.Reconnects, cn.Handshakes, cn.ReconnectMs.P50)
	})
	mtls, err := kafkaconf.ReadClientConfig(c.Modes()[planner.SecurityMTLS].ClientConfig)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("java", func(t *testing.T) {
		javaSurface(t, ctx, map[string]map[string]string{planner.SASLScramSHA512: base, planner.SASLScramSHA256: base, planner.SASLPlain: base,
			planner.SASLOAuthBearer: oauthProps, planner.SASLGSSAPI: krbProps, "": mtls}, func() int {
			log, err := os.ReadFile(serverLog)
			if err != nil {
				t.Fatal(err)
			}
			return bytes.Count(log, []byte("Beginning re-authentication"))
		})
	})
	t.Run("forged token", func(t *testing.T) {
		other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		now := time.Now()
		forged, err := oauthidp.SignES256(other, "forged", oauthidp.Claims{Issuer: idp.Issuer(), Audience: oauthidp.Audience,
			Subject: "xp", IssuedAt: now.Unix(), Expiry: now.Add(time.Minute).Unix()})
		if err != nil {
			t.Fatal(err)
		}
		// The SASL_SSL listener's TLS from xp's config, the forged token as
		// the only SASL.
		tlsOnly := map[string]string{}
		for k, v := range oauthProps {
			if !strings.HasPrefix(k, "sasl.") && !strings.HasPrefix(k, "xp.") {
				tlsOnly[k] = v
			}
		}
		tlsOnly[kafkaconf.SecurityProtocol] = "ssl"
		opts, err := kafkaconf.ClientOpts(tlsOnly)
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, kgo.SASL(oauth.Auth{Token: forged}.AsMechanism()))
		if err := pingErr(ctx, opts); err == nil || !strings.Contains(err.Error(), "SASL") {
			t.Errorf("a token signed with another key: %v, want a SASL authentication failure", err)
		}
	})
	t.Run("replaced keytab", func(t *testing.T) {
		old := krbProps[kafkaconf.KerberosKeytab]
		if _, err := k.Keytab(ctx, filepath.Join(dir, "new.keytab"), "xp"); err != nil {
			t.Fatal(err)
		}
		opts, err := kafkaconf.ClientOpts(krbProps)
		if err != nil {
			t.Fatal(err)
		}
		if err := pingErr(ctx, opts); err == nil {
			t.Errorf("keytab %s, whose keys the KDC replaced, authenticated", old)
		}
	})
}

func adminClient(t *testing.T, c *kafkaproc.Cluster) *kgo.Client {
	t.Helper()
	props, err := kafkaconf.ReadClientConfig(c.Modes()[planner.SecurityPlaintext].ClientConfig)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := kafkaconf.ClientOpts(props)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func javaPath(t *testing.T) string {
	t.Helper()
	j, err := kafkaproc.FindJava(context.Background(), "", os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	return j.Path
}

// pingErr is the error of one metadata request with opts.
func pingErr(ctx context.Context, opts []kgo.Opt) error {
	cl, err := kgo.NewClient(append(opts, kgo.RequestRetries(0))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	return cl.Ping(pctx)
}
