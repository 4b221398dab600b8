package existing

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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

// TestCampaignOnApacheKafka runs campaigns on one Apache Kafka broker the
// test starts, through Java client configs with JKS and PKCS12 stores and a
// SCRAM JAAS config: refusals against the real listeners, a topic_prefix
// Kafka reserves or one covering an internal topic refused, a campaign
// that leaves no topic or consumer group and records one up and one down
// for its group and the cluster as its attempts' broker, and endpoints
// imported from OMB driver files written PROTOCOL://HOST:PORT, whose
// groups left with --keep a later run deletes.
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
	platforms := target.Platforms{"existing": Opener(Options{})}

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
	// What is on the cluster, read by a fresh client each time: a client
	// answers repeated metadata requests from its cache for a while.
	topics := func() []string {
		td, err := kadmOf(t, k.plaintext).ListTopicsWithInternal(ctx)
		if err != nil {
			t.Fatal(err)
		}
		names := td.Names()
		slices.Sort(names)
		return names
	}
	groups := func() []string {
		gs, err := kadmOf(t, k.plaintext).ListGroups(ctx)
		if err != nil {
			t.Fatal(err)
		}
		names := gs.Groups()
		slices.Sort(names)
		return names
	}

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
	t.Run("a prefix Kafka reserves", func(t *testing.T) {
		tdir := t.TempDir()
		reserved := targetYAML(t, tdir, eps, "topic_prefix: \"__\"\n")
		db := filepath.Join(tdir, "reserved.db")
		_, err := runner.Run(ctx, runner.Options{Plan: plan, DB: db, Target: reserved, Platforms: platforms})
		want := reserved + `:7: topic_prefix: "__": Kafka reserves names starting with "__" for its internal topics`
		if !errors.Is(err, runner.ErrBadInput) || !strings.Contains(err.Error(), want) {
			t.Fatalf("error %v, want bad input and %q", err, want)
		}
		if _, err := os.Stat(db); !os.IsNotExist(err) {
			t.Errorf("the refused campaign wrote its db: %v", err)
		}
		for _, n := range topics() {
			if n != "payments" && n != "__consumer_offsets" {
				t.Errorf("topic %s on the cluster", n)
			}
		}
	})

	t.Run("campaign", func(t *testing.T) {
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
		if names := topics(); !slices.Equal(names, []string{"__consumer_offsets", "payments"}) {
			t.Errorf("topics after the campaign: %v", names)
		}
		if gs := groups(); len(gs) != 0 {
			t.Errorf("consumer groups left after the campaign: %v", gs)
		}
		// The load generator deleted each load's group, not the sweep at
		// the campaign's end.
		if strings.Contains(stderr.String(), "consumer groups an earlier run") || strings.Contains(stderr.String(), "not deleted") {
			t.Errorf("the loads left their consumer groups:\n%s", stderr.String())
		}
		s, err := results.OpenReadOnly(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		checkEvents(t, s, 4, false)
		// The load generator deleted each load's consumer group itself.
		logs, err := s.NamedLogs(ctx, "loadgen.json")
		if err != nil || len(logs) != 4 {
			t.Fatalf("loadgen.json logs: %v, %d", err, len(logs))
		}
		for _, l := range logs {
			if bytes.Contains(l, []byte("not deleted")) {
				t.Errorf("a load left what it made: %s", l)
			}
		}
		for _, m := range []string{"plaintext", "tls", "mtls", "sasl_ssl"} {
			atts, err := s.RunAttempts(ctx, mustRun(t, plan, m))
			if err != nil || len(atts) != 1 {
				t.Fatalf("%s: attempts %v %v", m, err, atts)
			}
			var env struct {
				Broker   target.Broker     `json:"broker"`
				Machines []target.HostInfo `json:"machines"`
				Group    string            `json:"group"`
			}
			if err := json.Unmarshal(atts[0].Environment, &env); err != nil {
				t.Fatal(err)
			}
			b := env.Broker
			if b.Kind != target.BrokerExisting || !strings.HasPrefix(b.Version, "v4.") || !b.VersionGuessed || b.ClusterID == "" || !slices.Equal(b.BrokerIDs, []int32{1}) {
				t.Errorf("%s: broker %+v", m, b)
			}
			if len(env.Machines) != 1 || env.Machines[0].Name != "broker-1" || env.Machines[0].Address != k.bootstrap(m) ||
				env.Machines[0].Kafka != b.String() || !strings.HasSuffix(b.String(), "(guessed from ApiVersions)") {
				t.Errorf("%s: machines %+v, want broker-1 at %s", m, env.Machines, k.bootstrap(m))
			}
		}
		for _, secret := range []string{"alice-secret", st.Password} {
			if bytes.Contains(dbBytes(t, db), []byte(secret)) {
				t.Errorf("the db holds the secret %q", secret)
			}
		}
	})

	t.Run("a prefix over an internal topic", func(t *testing.T) {
		// The campaign's consumer groups made __consumer_offsets.
		if !slices.Contains(topics(), "__consumer_offsets") {
			t.Fatalf("no __consumer_offsets on the cluster: %v", topics())
		}
		under := targetYAML(t, t.TempDir(), eps[:1], "# one under Kafka's own\ntopic_prefix: _\n")
		tgt, err := open(t, under, "")
		if err != nil {
			t.Fatal(err)
		}
		_, err = tgt.Preflight(ctx, rowsOf(1, "plaintext"), nil)
		want := under + `:5: topic_prefix "_" covers the cluster's internal topics __consumer_offsets`
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("error %v, want %q", err, want)
		}
	})

	t.Run("omb drivers written PROTOCOL://HOST:PORT", func(t *testing.T) {
		odir := t.TempDir()
		drivers := map[string]string{
			"plaintext": "  bootstrap.servers=PLAINTEXT://" + plainBoot + "\n",
			"tls":       "  bootstrap.servers=SSL://" + tlsBoot + "\n  security.protocol=SSL\n  " + strings.ReplaceAll(trust(st.TrustJKS, "JKS"), "\n", "\n  "),
		}
		var oeps []yamlEndpoint
		for _, m := range []string{"plaintext", "tls"} {
			p := writeConfig(t, odir, "omb-"+m+".yaml", "name: Kafka\ndriverClass: "+OMBKafkaDriver+"\nreplicationFactor: 1\ncommonConfig: |\n"+drivers[m]+
				"\nproducerConfig: |\n  acks=all\nconsumerConfig: |\n  auto.offset.reset=earliest\n")
			b, _ := os.ReadFile(p)
			d, err := ImportOMBDriver(p, b, m)
			if err != nil {
				t.Fatal(err)
			}
			if want := k.bootstrap(m); strings.Join(d.Bootstrap, ",") != want {
				t.Errorf("%s: bootstrap %v, want %s", m, d.Bootstrap, want)
			}
			oeps = append(oeps, yamlEndpoint{m, strings.Join(d.Bootstrap, ","), writeConfig(t, odir, m+".properties", d.Properties)})
		}
		opath := targetYAML(t, odir, oeps, "topic_prefix: xp-omb-\n")
		oplan := writePlan(t, odir, campaignSpec("omb", 1, "plaintext", "tls"))
		db := filepath.Join(odir, "omb.db")
		// Kept, the campaign's topics and groups stay, recorded in its db.
		if _, err := runner.Run(ctx, runner.Options{Plan: oplan, DB: db, Target: opath, Keep: true, Platforms: platforms}); err != nil {
			t.Fatal(err)
		}
		s, err := results.OpenReadOnly(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		ours := checkEvents(t, s, 2, true)
		s.Close()
		kept := groups()
		if !slices.Equal(kept, ours) {
			t.Errorf("groups kept %v, recorded %v", kept, ours)
		}
		// Run again without --keep: nothing of the campaign's is left.
		if _, err := runner.Run(ctx, runner.Options{Plan: oplan, DB: db, Target: opath, Resume: true, Platforms: platforms}); err != nil {
			t.Fatal(err)
		}
		if gs := groups(); len(gs) != 0 {
			t.Errorf("consumer groups left: %v", gs)
		}
		if names := topics(); !slices.Equal(names, []string{"__consumer_offsets", "payments"}) {
			t.Errorf("topics left: %v", names)
		}
	})
}

// checkEvents checks a campaign's infrastructure events: one "up" for
// each group and, unless it was kept up, one "down"; and a topics event
// for each of its rows, each naming one consumer group. It returns the
// consumer groups recorded, sorted.
func checkEvents(t *testing.T, s *results.Store, rows int, kept bool) []string {
	t.Helper()
	evs, err := s.InfraEvents(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ups, downs := map[string]int{}, map[string]int{}
	var groups []string
	loads := 0
	for _, e := range evs {
		switch e.Event {
		case "up":
			ups[e.Group]++
		case "down":
			downs[e.Group]++
		case EventTopics:
			var te topicsEvent
			if err := json.Unmarshal(e.Outputs, &te); err != nil || len(te.Groups) != 1 || te.Groups[0] != te.Topics[0]+"-g0" {
				t.Errorf("topics event %s: %v", e.Outputs, err)
			}
			groups = append(groups, te.Groups...)
			loads++
		}
	}
	if loads != rows {
		t.Errorf("%d topics events, want %d", loads, rows)
	}
	if len(ups) == 0 {
		t.Errorf("no up event: %+v", evs)
	}
	wantDowns := 1
	if kept {
		wantDowns = 0
	}
	for g, n := range ups {
		if n != 1 || downs[g] != wantDowns {
			t.Errorf("group %s: %d up and %d down events, want 1 and %d", g, n, downs[g], wantDowns)
		}
	}
	slices.Sort(groups)
	return groups
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
