package existing

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/infra/agent"
	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/local/kafkaproc"
	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/internal/kafkatest"
	"github.com/xp-bench/xp/internal/keytooltest"
	"github.com/xp-bench/xp/results"
	"github.com/xp-bench/xp/runner"
)

// apacheKafka is one Apache Kafka broker (a local JVM of the release in
// out/dist, internal/kafkatest) with a listener per direct mode.
type apacheKafka struct {
	c *kafkaproc.Cluster
	// plaintext is a librdkafka config of the plaintext listener.
	plaintext map[string]string
}

func startApacheKafka(t *testing.T) *apacheKafka {
	t.Helper()
	c := kafkatest.Start(t, kafkatest.Options{})
	props, err := kafkaconf.ReadClientConfig(c.Modes()["plaintext"].ClientConfig)
	if err != nil {
		t.Fatal(err)
	}
	return &apacheKafka{c: c, plaintext: props}
}

// bootstrap is a direct mode's bootstrap servers.
func (k *apacheKafka) bootstrap(mode string) string {
	return strings.Join(k.c.Modes()[mode].Bootstrap, ",")
}

func TestCampaignOnApacheKafka(t *testing.T) {
	k := startApacheKafka(t)
	ctx := context.Background()
	dir := t.TempDir()
	ccert, ckey, err := k.c.Authority().Client("client")
	if err != nil {
		t.Fatal(err)
	}
	st := keytooltest.Make(t, dir, k.c.Authority().CAPath(), ccert, ckey)
	// The SCRAM user the JAAS config names, as an operator creates one.
	uctx, cancel := context.WithTimeout(ctx, time.Minute)
	if err := agent.UpsertSCRAM(uctx, k.plaintext, "alice", "alice-secret"); err != nil {
		t.Fatal(err)
	}
	cancel()

	trust := func(path, typ string) string {
		return fmt.Sprintf("ssl.truststore.location=%s\nssl.truststore.password=%s\nssl.truststore.type=%s\n", path, st.Password, typ)
	}
	configs := map[string]string{
		"plaintext": "# plaintext, as the Java client writes it\nsecurity.protocol: PLAINTEXT\n",
		"tls":       "security.protocol=SSL\n" + trust(filepath.Base(st.TrustJKS), "JKS"),
		"mtls": "security.protocol=SSL\n" + trust(st.TrustPKCS12, "PKCS12") +
			fmt.Sprintf("ssl.keystore.location=%s\nssl.keystore.password=%s\nssl.key.password=%s\n", st.KeyJKS, st.Password, st.Password),
		"sasl_ssl": "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n" + trust(st.TrustJKS, "JKS") +
			"sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n" +
			"    username=\"alice\" \\\n    password=\"alice-secret\";\n",
	}
	var eps []yamlEndpoint
	for _, m := range []string{"plaintext", "tls", "mtls", "sasl_ssl"} {
		boot := k.bootstrap(m)
		eps = append(eps, yamlEndpoint{m, boot, writeConfig(t, dir, m+".properties", configs[m])})
	}
	tpath := targetYAML(t, dir, eps, "topic_prefix: xp-bench-\n")

	// Someone else's topic, with records.
	adm := kadmOf(t, k.plaintext)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "payments"); err != nil {
		t.Fatal(err)
	}
	opts, _ := kafkaconf.ClientOpts(k.plaintext)
	prod, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "payments", Value: []byte("p" + strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	prod.Close()
	plainFile := writeConfig(t, dir, "admin.properties", string(kafkaconf.FormatClientConfig(k.plaintext)))
	before := snapshotTopic(t, plainFile, "payments")

	// Refusals against the real listeners.
	tlsBoot := k.bootstrap("tls")
	plainBoot := k.bootstrap("plaintext")
	for _, tc := range []struct {
		name, mode, boot, want string
	}{
		{"tls endpoint on the plaintext port", "tls", plainBoot, "answers Kafka requests in plaintext"},
		{"sasl endpoint on the tls port", "sasl_ssl", tlsBoot, "answers a Metadata request without SASL authentication"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tgt, err := open(t, targetYAML(t, t.TempDir(), []yamlEndpoint{{tc.mode, tc.boot, filepath.Join(dir, tc.mode+".properties")}}, ""), "")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tgt.Preflight(ctx, rowsOf(1, tc.mode), nil); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}

	plan := writePlan(t, dir, campaignSpec("kafka", 1, "plaintext", "tls", "mtls", "sasl_ssl"))
	var stderr bytes.Buffer
	db := filepath.Join(dir, "kafka.db")
	sum, err := runner.Run(ctx, runner.Options{Plan: plan, DB: db, Target: tpath, Stderr: &stderr,
		Platforms: target.Platforms{"existing": Opener(Options{Log: &stderr})}})
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if sum.Rows[results.Done] != 4 {
		t.Fatalf("rows %v, want 4 done\n%s", sum.Rows, stderr.String())
	}
	if !strings.Contains(stderr.String(), "endpoint sasl_ssl") || !strings.Contains(stderr.String(), "SASL SCRAM-SHA-512 login") {
		t.Errorf("the log does not show the sasl_ssl checks:\n%s", stderr.String())
	}
	if after := snapshotTopic(t, plainFile, "payments"); !slices.Equal(after.records, before.records) || len(after.records) != 10 {
		t.Errorf("payments changed: %v, then %v", before.records, after.records)
	}
	td, err := kadmOf(t, k.plaintext).ListTopics(ctx) // a fresh client: no cached metadata
	if err != nil {
		t.Fatal(err)
	}
	if names := td.Names(); !slices.Equal(names, []string{"payments"}) {
		t.Errorf("topics after the campaign: %v", names)
	}
	s, err := results.OpenReadOnly(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	atts, err := s.RunAttempts(ctx, mustRun(t, plan, "sasl_ssl"))
	if err != nil || len(atts) != 1 || !strings.Contains(string(atts[0].Environment), `"name":"broker-1"`) {
		t.Errorf("attempt environment: %v %s", err, atts[0].Environment)
	}
	for _, secret := range []string{"alice-secret", st.Password} {
		if bytes.Contains(dbBytes(t, db), []byte(secret)) {
			t.Errorf("the db holds the secret %q", secret)
		}
	}
}

func kadmOf(t *testing.T, props map[string]string) *kadm.Client {
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

// dbBytes is the db and its write-ahead log, raw.
func dbBytes(t *testing.T, db string) []byte {
	var out []byte
	for _, f := range []string{db, db + "-wal"} {
		b, _ := os.ReadFile(f)
		out = append(out, b...)
	}
	return out
}
