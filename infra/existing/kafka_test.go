package existing

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/infra/agent"
	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/pki"
	"github.com/xp-bench/xp/infra/release"
	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/internal/disttest"
	"github.com/xp-bench/xp/internal/keytooltest"
	"github.com/xp-bench/xp/results"
	"github.com/xp-bench/xp/runner"
)

// apacheKafka is one Apache Kafka broker (combined KRaft node) the test
// started, with a listener per direct mode on loopback.
type apacheKafka struct {
	server *kafkaconf.Server
	ca     *pki.Authority
	// plaintext is a librdkafka config of the plaintext listener.
	plaintext map[string]string
}

// startApacheKafka runs the Kafka 4 release of out/dist (make kafka-dist)
// as one broker with `java -cp 'libs/*'`, its server.properties rendered
// by kafkaconf, until the test ends.
func startApacheKafka(t *testing.T) *apacheKafka {
	t.Helper()
	if _, err := exec.LookPath("java"); err != nil {
		t.Fatal("java not on PATH: install openjdk-17-jre-headless")
	}
	rel := disttest.Kafka(t, 4)
	dir := t.TempDir()
	home := filepath.Join(dir, "kafka")
	if err := release.Unpack(rel.Path, home); err != nil {
		t.Fatal(err)
	}
	tops, _ := filepath.Glob(filepath.Join(home, "kafka_*"))
	if len(tops) == 1 {
		home = tops[0]
	}
	ca, err := pki.New(filepath.Join(dir, "pki"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ca.Server("broker", "127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	ks, err := ca.Keystore("broker")
	if err != nil {
		t.Fatal(err)
	}
	s := kafkaconf.NewServer([]string{"127.0.0.1"}, nil)
	ports := freePorts(t, 6)
	s.Ports = kafkaconf.Ports{Plaintext: ports[0], SSL: ports[1], MTLS: ports[2], SASLSSL: ports[3], Internal: ports[4], Controller: ports[5]}
	s.LogDirs = filepath.Join(dir, "data")
	s.Keystore, s.Truststore = ks, ca.CAPath()
	s.SASLUser, s.SASLPassword = "xp", "plain-secret"
	props, err := s.Properties(1)
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(conf, props, 0o600); err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(home, "libs", "*")
	logf, err := os.Create(filepath.Join(dir, "kafka.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	format := exec.Command("java", "-cp", cp, release.KafkaStorageClass, "format", "-t", kafkaconf.NewClusterID(), "-c", conf)
	if out, err := format.CombinedOutput(); err != nil {
		t.Fatalf("kafka storage format: %v\n%s", err, out)
	}
	cmd := exec.Command("java", "-Xmx512m", "-Xms256m", "-cp", cp, release.KafkaServerClass, conf)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
	k := &apacheKafka{server: s, ca: ca}
	k.plaintext, _ = s.ClientProps("plaintext", "", "", "", "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for {
		if err := agent.KafkaReady(ctx, strings.Split(k.plaintext[kafkaconf.BootstrapServers], ",")[0], nil); err == nil {
			break
		}
		select {
		case err := <-exited:
			b, _ := os.ReadFile(logf.Name())
			t.Fatalf("kafka exited: %v\n%s", err, tail(b))
		case <-ctx.Done():
			b, _ := os.ReadFile(logf.Name())
			t.Fatalf("kafka not ready within 2 minutes\n%s", tail(b))
		case <-time.After(200 * time.Millisecond):
		}
	}
	return k
}

func tail(b []byte) []byte { return b[max(0, len(b)-4096):] }

func freePorts(t *testing.T, n int) []int {
	var out []int
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return out
}

// TestCampaignOnApacheKafka runs a campaign on an Apache Kafka broker the
// test started, through the client configs a Java shop has: a JKS trust
// store, a JKS key store, a PKCS12 trust store and a SCRAM JAAS config
// made with keytool. It checks that every row is done, that a topic that
// was there before keeps its records, that xp's topics are gone, and that
// a TLS endpoint pointed at the plaintext port and a SASL endpoint pointed
// at the TLS port are refused before anything runs.
func TestCampaignOnApacheKafka(t *testing.T) {
	k := startApacheKafka(t)
	ctx := context.Background()
	dir := t.TempDir()
	ccert, ckey, err := k.ca.Client("client")
	if err != nil {
		t.Fatal(err)
	}
	st := keytooltest.Make(t, dir, k.ca.CAPath(), ccert, ckey)
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
	var eps []endpoint
	for _, m := range []string{"plaintext", "tls", "mtls", "sasl_ssl"} {
		boot, _ := k.server.Bootstrap(m)
		eps = append(eps, endpoint{m, boot, writeConfig(t, dir, m+".properties", configs[m])})
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
	tlsBoot, _ := k.server.Bootstrap("tls")
	plainBoot, _ := k.server.Bootstrap("plaintext")
	for _, tc := range []struct {
		name, mode, boot, want string
	}{
		{"tls endpoint on the plaintext port", "tls", plainBoot, "answers Kafka requests in plaintext"},
		{"sasl endpoint on the tls port", "sasl_ssl", tlsBoot, "answers a Metadata request without SASL authentication"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tgt, err := open(t, targetYAML(t, t.TempDir(), []endpoint{{tc.mode, tc.boot, filepath.Join(dir, tc.mode+".properties")}}, ""), "")
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
