package localtarget

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/local/kafkaproc"
	"github.com/xp-bench/xp/infra/procstat"
	"github.com/xp-bench/xp/infra/release"
	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/internal/disttest"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/runner/loadgen"
)

// testEnv is the process environment with XDG_CACHE_HOME in dir, so the
// test's release cache is its own.
func testEnv(cache string, over map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := over[k]; ok {
			return v
		}
		if k == "XDG_CACHE_HOME" {
			return cache
		}
		return os.Getenv(k)
	}
}

// openFile opens a local target from TARGET.yaml text written in dir.
func openFile(t *testing.T, dir, text string, getenv func(string) string) (target.Target, error) {
	t.Helper()
	path := filepath.Join(dir, "target.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return Opener(getenv)(target.Config{Platform: "local", Path: path, Text: []byte(text), WorkDir: filepath.Join(dir, "work")})
}

// TestApacheKafkaGroup: with a Kafka release in TARGET.yaml the local
// target runs Apache Kafka: a group's broker serves every direct mode and
// the builtin gateway in front of it, and OAUTHBEARER and GSSAPI rows
// authenticate with the group's identity provider and KDC (OAUTHBEARER
// through xp's gateway too, as does SCRAM-SHA-256); telemetry samples the broker's JVM
// as broker-1; its logs are collected; the group says it ran apache at the
// release's version with the Java and JVM flags; Down leaves no JVM.
func TestApacheKafkaGroup(t *testing.T) {
	rel := disttest.Kafka(t, 4)
	dir := t.TempDir()
	tg, err := openFile(t, dir, fmt.Sprintf("platform: local\nkafka:\n  distribution: %s\n  sha512: %s\n  heap: 384m\n  jvm_flags: -XX:+UseG1GC -XX:MaxGCPauseMillis=20\n",
		rel.Path, rel.SHA512), testEnv(filepath.Join(dir, "cache"), nil))
	if err != nil {
		t.Fatal(err)
	}
	lt := tg.(*Target)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	defer lt.Down(context.Background())
	rows := []planner.Row{{Security: "plaintext", Brokers: 1, KafkaVersion: rel.Version},
		{Security: "encrypt", Brokers: 1, KafkaVersion: rel.Version, Gateways: 1, GatewayTransport: "tls"},
		{Security: "sasl_ssl", Brokers: 1, KafkaVersion: rel.Version, SASLMechanism: planner.SASLOAuthBearer},
		{Security: "sasl_ssl", Brokers: 1, KafkaVersion: rel.Version, SASLMechanism: planner.SASLGSSAPI},
		{Security: "proxy", Brokers: 1, KafkaVersion: rel.Version, Gateways: 1, GatewayTransport: "sasl_ssl", SASLMechanism: planner.SASLOAuthBearer},
		{Security: "proxy", Brokers: 1, KafkaVersion: rel.Version, Gateways: 1, GatewayTransport: "sasl_ssl", SASLMechanism: planner.SASLScramSHA256}}
	for i := range rows {
		if err := lt.CheckRow(&rows[i]); err != nil {
			t.Fatal(err)
		}
	}
	g := target.Group{Key: rows[0].InfraKey(), Rows: rows}
	ep, err := lt.Up(ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"plaintext", "tls", "mtls", "sasl_ssl", "encrypt", "proxy.sasl_ssl"} {
		if e, ok := ep.Modes[m]; !ok || len(e.Bootstrap) == 0 || e.ClientConfig == "" {
			t.Errorf("mode %s: %+v", m, e)
		}
	}
	// The group's identity provider and KDC: the sasl_ssl client config
	// authenticates with each mechanism a row names, directly and, for
	// OAUTHBEARER and SCRAM-SHA-256, through xp's gateway, which relays
	// the exchange to the broker.
	for _, r := range rows[2:] {
		mode := target.ModeKey(&r)
		props, err := kafkaconf.ReadClientConfig(ep.Modes[mode].ClientConfig)
		if err != nil {
			t.Fatal(err)
		}
		res, err := loadgen.Run(ctx, loadgen.Config{ClientConfig: props, SASLMechanism: r.SASLMechanism, Rate: 500, Partitions: 1, ConsumerGroups: 1,
			Duration: time.Second, DrainTimeout: 10 * time.Second, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Healthy || res.Consumed != res.Published || res.Connections.SASLMechanism != planner.KafkaSASLMechanism(r.SASLMechanism) {
			t.Errorf("%s %s: healthy %v %v, published %d consumed %d, connections %+v", mode, r.SASLMechanism, res.Healthy, res.Reasons, res.Published, res.Consumed, res.Connections)
		}
	}
	kdcAddr := lt.ident.kdc.Address
	b := lt.Broker()
	if b.Kind != target.BrokerApache || b.Version != rel.Version || !strings.Contains(b.Java, "version") ||
		len(b.JVMFlags) == 0 || !slices.Equal(b.JVMFlags[:len(b.JVMFlags)-1], []string{"-Xmx384m", "-Xms384m", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20"}) ||
		!strings.HasPrefix(b.JVMFlags[len(b.JVMFlags)-1], "-Djdk.net.hosts.file=") {
		t.Errorf("broker %+v", b)
	}
	samples, err := lt.Sample(ctx)
	if err != nil {
		t.Fatal(err)
	}
	roles := map[string]string{}
	for _, s := range samples {
		roles[s.Host] = s.Role
		if s.CPU <= 0 || s.MemMiB <= 0 {
			t.Errorf("sample %+v: want CPU time and memory", s)
		}
	}
	if roles["broker-1"] != planner.RoleBroker || roles[HostGateway] != planner.RoleGateway || roles[target.HostClient] != planner.RoleClient || len(roles) != 3 {
		t.Errorf("sampled %v", roles)
	}
	logs, err := lt.CollectLogs(ctx, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range logs {
		names = append(names, l.Name)
		if l.Name == "broker-1/server.log" && !strings.Contains(string(l.Text), "Kafka version: "+rel.Version) {
			t.Errorf("broker-1/server.log does not name Kafka %s", rel.Version)
		}
	}
	if !slices.Equal(names, []string{"broker-1/server.log", "broker-1/kafka.out", "gateway.log"}) {
		t.Errorf("logs %v", names)
	}
	pid := lt.kafka.Brokers()[0].Pid
	if err := lt.Down(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := procstat.CPU(pid); err == nil {
		t.Errorf("broker JVM %d still runs after Down", pid)
	}
	if c, err := net.DialTimeout("tcp", kdcAddr, time.Second); err == nil {
		c.Close()
		t.Errorf("the group's KDC still answers on %s after Down", kdcAddr)
	}
	if b := lt.Broker(); b.Kind != "" {
		t.Errorf("after Down the broker is %+v", b)
	}
}

// TestOpenRefuses: what an Apache Kafka group would trip on is refused
// when the target opens, before any group starts, naming the file, the
// line of the key and the fix.
func TestOpenRefuses(t *testing.T) {
	rel := disttest.Kafka(t, 4)
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	oldJava := filepath.Join(dir, "oldjava")
	os.MkdirAll(oldJava, 0o755)
	os.WriteFile(filepath.Join(oldJava, "java"), []byte("#!/bin/sh\necho 'openjdk version \"11.0.22\" 2024-01-16' >&2\n"), 0o755)
	notKafka := filepath.Join(dir, "other.tgz")
	if _, err := release.Pack(notKafka, "other-1", "libs", t.TempDir(), []release.File{{Path: "README", Data: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	otherSum, _ := release.SHA512File(notKafka)
	head := fmt.Sprintf("platform: local\nkafka:\n  distribution: %s\n  sha512: %s\n", rel.Path, rel.SHA512)
	for _, c := range []struct {
		name, yaml string
		env        map[string]string
		want       []string
	}{
		{"java too old", head, map[string]string{"JAVA_HOME": "", "PATH": oldJava},
			[]string{"target.yaml:3: kafka: Kafka " + rel.Version + " needs Java 17 or later, but " + filepath.Join(oldJava, "java") + " is Java 11", "install Java 17"}},
		{"no java", head, map[string]string{"JAVA_HOME": "", "PATH": t.TempDir()},
			[]string{"target.yaml:2: no java on PATH", "apt-get install openjdk-17-jre-headless"}},
		{"heap too large", head + "  heap: 65536g\n", nil,
			[]string{"target.yaml:5: kafka.heap 65536g does not fit: 1 broker(s) × (67108864 MiB heap", "more than this machine's", "lower kafka.heap"}},
		{"flag refused", head + "  jvm_flags: -XX:+NoSuchFlagAtAll\n", nil,
			[]string{"target.yaml:5: kafka.jvm_flags:", "refuses the brokers' JVM flags", "NoSuchFlagAtAll"}},
		{"checksum differs", strings.Replace(head, rel.SHA512, strings.Repeat("0", 128), 1), nil,
			[]string{"target.yaml:3: kafka: " + rel.Path + " has SHA-512", "not the release named"}},
		{"not kafka", fmt.Sprintf("platform: local\nkafka:\n  distribution: %s\n  sha512: %s\n", notKafka, otherSum), nil,
			[]string{"target.yaml:3: kafka.distribution: " + notKafka + ": not a Kafka release: no libs/kafka_2.13-*.jar"}},
		{"heap without a release", "platform: local\nkafka:\n  heap: 1g\n", nil,
			[]string{"target.yaml:3: kafka.heap: the embedded cluster runs in xp's own process", "name an Apache Kafka release"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := openFile(t, t.TempDir(), c.yaml, testEnv(cache, c.env))
			for _, w := range c.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v, want it to say %q", err, w)
				}
			}
		})
	}

	// A row whose brokers do not fit at the heap (half this machine's
	// memory: one fits, three do not), and a kafka_version without a
	// release, are refused by CheckRow.
	mem, err := kafkaproc.MemTotalMiB()
	if err != nil {
		t.Fatal(err)
	}
	heap := fmt.Sprintf("%dm", mem/2)
	tg, err := openFile(t, dir, head+"  heap: "+heap+"\n", testEnv(cache, nil))
	if err != nil {
		t.Fatal(err)
	}
	one := planner.Row{Security: "plaintext", Brokers: 1, KafkaVersion: rel.Version}
	if err := tg.(target.RowChecker).CheckRow(&one); err != nil {
		t.Errorf("CheckRow of one broker at %s: %v", heap, err)
	}
	three := planner.Row{Security: "plaintext", Brokers: 3, KafkaVersion: rel.Version}
	err = tg.(target.RowChecker).CheckRow(&three)
	if err == nil || !strings.Contains(err.Error(), "target.yaml:5: kafka.heap "+heap+" for brokers 3 does not fit") || !strings.Contains(err.Error(), "lower kafka.heap or the rows' brokers") {
		t.Errorf("CheckRow of three brokers at %s: %v", heap, err)
	}
	other := planner.Row{Security: "plaintext", Brokers: 1, KafkaVersion: "3.0.0"}
	if err := tg.(target.RowChecker).CheckRow(&other); err == nil || !strings.Contains(err.Error(), "rows ask for kafka_version 3.0.0 but the file has a release of "+rel.Version+" only") {
		t.Errorf("CheckRow of another version: %v", err)
	}
}
