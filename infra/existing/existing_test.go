package existing

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/local"
	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/results"
	"github.com/xp-bench/xp/runner"
)

// embedded starts an embedded cluster with a proxy gateway in front of
// its tls mode: a cluster the tests' campaigns did not start.
func embedded(t *testing.T, brokers int) *local.Cluster {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c, err := local.Start(ctx, local.Options{Brokers: brokers, Dir: filepath.Join(t.TempDir(), "cluster")})
	if err != nil {
		t.Fatal(err)
	}
	g, err := local.StartGateway(ctx, c, local.GatewayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		g.Close()
		c.Close()
		cancel()
	})
	return c
}

// yamlEndpoint is one entry of a test's TARGET.yaml.
type yamlEndpoint struct {
	mode, bootstrap, config string
}

// endpointsOf are the cluster's modes as TARGET.yaml endpoints.
func endpointsOf(c *local.Cluster, modes ...string) []yamlEndpoint {
	var out []yamlEndpoint
	for _, m := range modes {
		mm := c.Modes()[m]
		out = append(out, yamlEndpoint{m, strings.Join(mm.Bootstrap, ","), mm.ClientConfig})
	}
	return out
}

// targetYAML writes a TARGET.yaml of platform existing into dir.
func targetYAML(t *testing.T, dir string, eps []yamlEndpoint, extra string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("platform: existing\nendpoints:\n")
	for _, e := range eps {
		var boot []string
		for _, a := range strings.Split(e.bootstrap, ",") {
			boot = append(boot, fmt.Sprintf("%q", a))
		}
		fmt.Fprintf(&b, "  %s: {bootstrap: [%s], client_config: %s}\n", e.mode, strings.Join(boot, ", "), e.config)
	}
	b.WriteString(extra)
	path := filepath.Join(dir, "existing.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func open(t *testing.T, path, db string) (*Target, error) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return Open(target.Config{Platform: "existing", Path: path, Text: b, DB: db, Campaign: "c"}, Options{})
}

func rowsOf(brokers int, modes ...string) []planner.Row {
	var out []planner.Row
	for i, m := range modes {
		out = append(out, planner.Row{Campaign: "c", Run: fmt.Sprintf("r%d", i), Security: m, Brokers: brokers,
			GatewayTransport: planner.DefaultGatewayTransport, GatewayCrypto: planner.GatewayCryptoStd})
	}
	return out
}

// writeConfig writes a client config file.
func writeConfig(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestOpenRefuses: a TARGET.yaml whose client configs xp would not honour,
// or do not speak their mode, is refused before anything connects, naming
// the file and line.
func TestOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	plain := writeConfig(t, dir, "plain.properties", "security.protocol=PLAINTEXT\n")
	typo := writeConfig(t, dir, "typo.properties", "security.protocol=SSL\nssl.trustore.location=/t.jks\n")
	ssl := writeConfig(t, dir, "ssl.properties", "security.protocol=SSL\n")
	other := writeConfig(t, dir, "other.properties", "bootstrap.servers=elsewhere:9092\nsecurity.protocol=PLAINTEXT\n")
	sasl := writeConfig(t, dir, "sasl.properties", "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.username=u\nsasl.password=p\n")
	cases := []struct {
		name string
		eps  []yamlEndpoint
		want []string
	}{
		{"tls endpoint with a plaintext config", []yamlEndpoint{{"tls", "k:9093", plain}},
			[]string{"existing.yaml:3: endpoints.tls: client config " + plain + " says security.protocol=PLAINTEXT, which is not mode tls"}},
		{"mtls endpoint without a client certificate", []yamlEndpoint{{"mtls", "k:9094", ssl}},
			[]string{"existing.yaml:3: endpoints.mtls:", "without a client certificate, which is not mode mtls"}},
		{"proxy over sasl_ssl with an ssl config", []yamlEndpoint{{"proxy.sasl_ssl", "gw:6969", ssl}},
			[]string{"endpoints.proxy.sasl_ssl:", "which is not mode proxy.sasl_ssl (clients speak sasl_ssl to the gateway): want security.protocol=SASL_SSL"}},
		{"plaintext endpoint with sasl", []yamlEndpoint{{"plaintext", "k:9092", sasl}}, []string{"says security.protocol=SASL_SSL, which is not mode plaintext"}},
		{"unknown property", []yamlEndpoint{{"tls", "k:9093", typo}},
			[]string{"existing.yaml:3: endpoints.tls: client config " + typo + `:2: unknown property "ssl.trustore.location"`}},
		{"other bootstrap", []yamlEndpoint{{"plaintext", "k:9092", other}},
			[]string{"client config " + other + ":1: bootstrap.servers elsewhere:9092 differs from the endpoint's bootstrap k:9092"}},
		{"missing config", []yamlEndpoint{{"plaintext", "k:9092", filepath.Join(dir, "nope.properties")}}, []string{"existing.yaml:3: endpoints.plaintext:", "no such file"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := open(t, targetYAML(t, dir, tc.eps, ""), "")
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v, want %q", err, w)
				}
			}
		})
	}
}

// TestCheckRow: a row whose mode has no endpoint is refused, naming the
// mode and the file.
func TestCheckRow(t *testing.T) {
	dir := t.TempDir()
	plain := writeConfig(t, dir, "plain.properties", "security.protocol=PLAINTEXT\n")
	tgt, err := open(t, targetYAML(t, dir, []yamlEndpoint{{"plaintext", "k:9092", plain}}, ""), "")
	if err != nil {
		t.Fatal(err)
	}
	rows := rowsOf(1, "plaintext", "tls")
	if err := tgt.CheckRow(&rows[0]); err != nil {
		t.Fatal(err)
	}
	err = tgt.CheckRow(&rows[1])
	if want := "security mode tls has no endpoint in " + filepath.Join(dir, "existing.yaml") + ":2 (it has plaintext): add endpoints.tls:"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("%v, want %q", err, want)
	}
	rows[0].GatewayCrypto = planner.GatewayCryptoFast
	if err := tgt.CheckRow(&rows[0]); err == nil || !strings.Contains(err.Error(), "gateway_crypto fast") {
		t.Fatalf("%v", err)
	}
}

// events is a campaign db's infrastructure events held in memory.
type events struct{ evs []results.InfraEvent }

func (e *events) AddInfraEvent(_ context.Context, ev results.InfraEvent) (int64, error) {
	e.evs = append(e.evs, ev)
	return int64(len(e.evs)), nil
}
func (e *events) InfraEvents(context.Context) ([]results.InfraEvent, error) { return e.evs, nil }

// TestPreflight checks an embedded cluster's endpoints: what is right is
// verified and recorded, every refusal says why.
func TestPreflight(t *testing.T) {
	c := embedded(t, 2)
	ctx := context.Background()
	dir := t.TempDir()
	modes := c.Modes()
	good := endpointsOf(c, "plaintext", "tls", "mtls", "sasl_ssl", "proxy")

	t.Run("verified", func(t *testing.T) {
		tgt, err := open(t, targetYAML(t, dir, good, ""), "")
		if err != nil {
			t.Fatal(err)
		}
		rep, err := tgt.Preflight(ctx, rowsOf(2, "plaintext", "tls", "mtls", "sasl_ssl", "proxy"), nil)
		if err != nil {
			t.Fatal(err)
		}
		var cl Cluster
		if err := json.Unmarshal(rep.Outputs, &cl); err != nil {
			t.Fatal(err)
		}
		if len(cl.Brokers) != 2 || cl.ID == "" || cl.VersionGuess == "" || cl.From != "mtls" && cl.From != "plaintext" || len(cl.Endpoints) != 5 {
			t.Fatalf("%+v", cl)
		}
		checks := map[string]string{"plaintext": "metadata and API versions", "tls": "TLS handshake verified", "mtls": "client certificate required",
			"sasl_ssl": "SASL required before any request", "proxy": "no plaintext answer"}
		for m, want := range checks {
			if got := strings.Join(cl.Endpoints[m].Checks, "; "); !strings.Contains(got, want) {
				t.Errorf("%s: checks %q lack %q", m, got, want)
			}
		}
		if !strings.Contains(strings.Join(rep.Summary, "\n"), "2 brokers") {
			t.Errorf("summary %q", rep.Summary)
		}
		hosts := tgt.DescribeHosts()
		if len(hosts) != 2 || hosts[0].Role != planner.RoleBroker || !strings.Contains(hosts[0].Kafka, "guessed from ApiVersions") {
			t.Errorf("hosts %+v", hosts)
		}
	})

	refusals := []struct {
		name string
		eps  []yamlEndpoint
		rows []planner.Row
		want string
	}{
		{"tls endpoint answering plaintext", []yamlEndpoint{{"tls", strings.Join(modes["plaintext"].Bootstrap, ","), modes["tls"].ClientConfig}}, rowsOf(2, "tls"),
			"answers Kafka requests in plaintext: it is no TLS listener, so it cannot serve tls"},
		{"mtls endpoint without client authentication", []yamlEndpoint{{"mtls", strings.Join(modes["tls"].Bootstrap, ","), modes["mtls"].ClientConfig}}, rowsOf(2, "mtls"),
			"answers a client without a certificate: it does not require one, so it is tls, not mtls"},
		{"sasl_ssl endpoint without SASL", []yamlEndpoint{{"sasl_ssl", strings.Join(modes["tls"].Bootstrap, ","), modes["sasl_ssl"].ClientConfig}}, rowsOf(2, "sasl_ssl"),
			"answers a Metadata request without SASL authentication: it is not a SASL listener"},
		{"brokers differ", good[:1], rowsOf(3, "plaintext"),
			"1 rows (e.g. r0) have brokers 3 but the cluster of " + filepath.Join(dir, "existing.yaml") + " has 2 brokers"},
		{"unreachable", []yamlEndpoint{{"plaintext", closedPort(t), modes["plaintext"].ClientConfig}}, rowsOf(2, "plaintext"), "not reached"},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			// The client configs name the cluster's own servers.
			var eps []yamlEndpoint
			for _, e := range tc.eps {
				eps = append(eps, yamlEndpoint{e.mode, e.bootstrap, stripBootstrap(t, e.config)})
			}
			tgt, err := open(t, targetYAML(t, dir, eps, ""), "")
			if err != nil {
				t.Fatal(err)
			}
			_, err = tgt.Preflight(ctx, tc.rows, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}

	t.Run("topics under the prefix", func(t *testing.T) {
		adm := admin(t, modes["plaintext"].ClientConfig)
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, "xp-someone-elses"); err != nil {
			t.Fatal(err)
		}
		defer adm.DeleteTopics(ctx, "xp-someone-elses")
		tgt, err := open(t, targetYAML(t, dir, good[:1], ""), filepath.Join(dir, "c.db"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = tgt.Preflight(ctx, rowsOf(2, "plaintext"), nil)
		want := `the cluster has 1 topics under topic_prefix "xp-" that this campaign's db (` + filepath.Join(dir, "c.db") + `) does not record: xp-someone-elses`
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("error %v, want %q", err, want)
		}
		// Recorded by the campaign (a killed run's): accepted.
		ev := &events{}
		out, _ := json.Marshal(topicsEvent{Run: "r0", Topics: []string{"xp-someone-elses"}})
		ev.AddInfraEvent(ctx, results.InfraEvent{Event: EventTopics, Outputs: out})
		if _, err := tgt.Preflight(ctx, rowsOf(2, "plaintext"), ev); err != nil {
			t.Fatal(err)
		}
		// Under another prefix, it is not xp's business.
		tgt, err = open(t, targetYAML(t, dir, good[:1], "topic_prefix: bench-\n"), "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tgt.Preflight(ctx, rowsOf(2, "plaintext"), nil); err != nil {
			t.Fatal(err)
		}
	})
}

// closedPort is an address nothing listens on.
func closedPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// stripBootstrap copies a client config without bootstrap.servers (the
// endpoint gives the servers).
func stripBootstrap(t *testing.T, path string) string {
	props, err := kafkaconf.ReadClientConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	delete(props, kafkaconf.BootstrapServers)
	out := filepath.Join(t.TempDir(), filepath.Base(path))
	if err := kafkaconf.WriteClientConfig(out, props); err != nil {
		t.Fatal(err)
	}
	return out
}

func admin(t *testing.T, config string) *kadm.Client {
	t.Helper()
	props, err := kafkaconf.ReadClientConfig(config)
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
	return kadm.NewClient(cl)
}

// campaignSpec is a small campaign on an existing cluster.
func campaignSpec(name string, brokers int, modes ...string) string {
	return fmt.Sprintf(`campaign: %s
seed: 7
treatment: security
baseline: plaintext
factors:
  security: [%s]
fixed:
  platform: existing
  brokers: %d
  message_size: 128
  acks: all
  target_rate: 200
  partitions: 2
  warmup_s: 0
  duration_s: 1
  drain_timeout_s: 5
`, name, strings.Join(modes, ", "), brokers)
}

func writePlan(t *testing.T, dir, spec string) string {
	t.Helper()
	s, err := planner.ParseSpec("spec.yaml", []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := planner.Expand(s, &buf); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "plan.jsonl")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// snapshot is what a topic holds: its partitions' records and configs.
type snapshot struct {
	records []string
	configs map[string]string
}

func snapshotTopic(t *testing.T, config, topic string) snapshot {
	t.Helper()
	props, _ := kafkaconf.ReadClientConfig(config)
	opts, _ := kafkaconf.ClientOpts(props)
	cl, err := kgo.NewClient(append(opts, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	total := int64(0)
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	var s snapshot
	for int64(len(s.records)) < total {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records of %s", len(s.records), total, topic)
		}
		fs.EachRecord(func(r *kgo.Record) {
			s.records = append(s.records, fmt.Sprintf("%d/%d %s=%s", r.Partition, r.Offset, r.Key, r.Value))
		})
	}
	slices.Sort(s.records)
	rc, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	s.configs = map[string]string{}
	for _, c := range rc {
		for _, kv := range c.Configs {
			if kv.Value != nil {
				s.configs[kv.Key] = *kv.Value
			}
		}
	}
	return s
}

// TestCampaignOnEmbeddedCluster runs a campaign on an embedded cluster it
// did not start: every row done through the endpoints of the TARGET.yaml;
// a topic that was there before, and its records, untouched; xp's topics
// recorded in the db and gone at the end; the cluster's brokers and
// version in the evidence.
func TestCampaignOnEmbeddedCluster(t *testing.T) {
	c := embedded(t, 1)
	ctx := context.Background()
	dir := t.TempDir()
	modes := []string{"plaintext", "tls", "mtls", "sasl_ssl", "proxy"}
	tpath := targetYAML(t, dir, endpointsOf(c, modes...), "hourly_price_usd: 3.6\n")
	plan := writePlan(t, dir, campaignSpec("emb", 1, modes...))

	// Someone else's topic, under the prefix's look-alike and not, with
	// records.
	pc := c.Modes()["plaintext"].ClientConfig
	adm := admin(t, pc)
	for _, topic := range []string{"orders", "xp_orders"} {
		if _, err := adm.CreateTopic(ctx, 2, 1, map[string]*string{"retention.ms": ptr("86400000")}, topic); err != nil {
			t.Fatal(err)
		}
	}
	props, _ := kafkaconf.ReadClientConfig(pc)
	opts, _ := kafkaconf.ClientOpts(props)
	prod, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		for _, topic := range []string{"orders", "xp_orders"} {
			if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("order-%d", i))}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	prod.Close()
	before := snapshotTopic(t, pc, "orders")
	beforeLike := snapshotTopic(t, pc, "xp_orders")

	var stderr bytes.Buffer
	db := filepath.Join(dir, "emb.db")
	sum, err := runner.Run(ctx, runner.Options{Plan: plan, DB: db, Target: tpath, Stderr: &stderr,
		Platforms: target.Platforms{"existing": Opener(Options{Log: &stderr})}})
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if sum.Rows[results.Done] != len(modes) {
		t.Fatalf("rows %v, want %d done\n%s", sum.Rows, len(modes), stderr.String())
	}
	if after := snapshotTopic(t, pc, "orders"); !slices.Equal(after.records, before.records) || len(before.records) != 20 ||
		after.configs["retention.ms"] != "86400000" {
		t.Errorf("orders changed: %d records before, %d after; configs %v", len(before.records), len(after.records), after.configs)
	}
	if after := snapshotTopic(t, pc, "xp_orders"); !slices.Equal(after.records, beforeLike.records) {
		t.Errorf("xp_orders changed")
	}
	// No topic of xp's is left, and every one it made was recorded first.
	td, err := admin(t, pc).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names := td.Names()
	slices.Sort(names)
	if !slices.Equal(names, []string{"orders", "xp_orders"}) {
		t.Errorf("topics after the campaign: %v", names)
	}
	s, err := results.OpenReadOnly(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	evs, _ := s.InfraEvents(ctx)
	recorded := 0
	var pre *Cluster
	cost := 0.0
	ups, downs := 0, 0
	for _, e := range evs {
		cost += e.Cost
		switch e.Event {
		case "up":
			ups++
			if e.HourlyUSD != 3.6 {
				t.Errorf("up event at $%v/h, want hourly_price_usd 3.6", e.HourlyUSD)
			}
		case "down":
			downs++
		case EventTopics:
			var te topicsEvent
			json.Unmarshal(e.Outputs, &te)
			for _, n := range te.Topics {
				if !strings.HasPrefix(n, "xp-emb-") {
					t.Errorf("topic %s is not under the prefix", n)
				}
			}
			recorded++
		case "preflight":
			pre = &Cluster{}
			json.Unmarshal(e.Outputs, pre)
		}
	}
	if recorded != len(modes) {
		t.Errorf("%d topics events, want one per row (%d)", recorded, len(modes))
	}
	if pre == nil || len(pre.Brokers) != 1 || pre.VersionGuess == "" || len(pre.Endpoints) != len(modes) {
		t.Errorf("preflight event %+v", pre)
	}
	if cost <= 0 {
		t.Errorf("no cost recorded at hourly_price_usd 3.6: events %+v", evs)
	}
	if ups != 1 || downs != 1 {
		t.Errorf("%d up and %d down events for the campaign's one group, want one each", ups, downs)
	}
	atts, err := s.RunAttempts(ctx, mustRun(t, plan, "proxy"))
	if err != nil || len(atts) != 1 || !strings.Contains(string(atts[0].Environment), "guessed from ApiVersions") {
		t.Errorf("attempt environment lacks the brokers: %v %+v", err, atts)
	}
}

func ptr(s string) *string { return &s }

// mustRun is the run of plan's row of security mode.
func mustRun(t *testing.T, plan, mode string) string {
	rows, err := planner.ReadPlan(plan)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Security == mode {
			return r.Run
		}
	}
	t.Fatalf("no %s row", mode)
	return ""
}

// TestKeepTopics: with --keep a campaign's topics stay; another campaign
// with the same prefix is then refused (they are not its own), and the
// first campaign, run again without --keep, deletes them.
func TestKeepTopics(t *testing.T) {
	c := embedded(t, 1)
	ctx := context.Background()
	dir := t.TempDir()
	tpath := targetYAML(t, dir, endpointsOf(c, "plaintext", "tls"), "")
	platforms := target.Platforms{"existing": Opener(Options{})}
	plan := writePlan(t, dir, campaignSpec("kept", 1, "plaintext", "tls"))
	db := filepath.Join(dir, "kept.db")
	if _, err := runner.Run(ctx, runner.Options{Plan: plan, DB: db, Target: tpath, Keep: true, Platforms: platforms}); err != nil {
		t.Fatal(err)
	}
	topics := func() []string {
		// A client of its own each time: franz-go answers a client's
		// repeated metadata requests from its cache for a few seconds.
		td, err := admin(t, c.Modes()["plaintext"].ClientConfig).ListTopics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		names := td.Names()
		slices.Sort(names)
		return names
	}
	kept := topics()
	if len(kept) != 2 || !strings.HasPrefix(kept[0], "xp-kept-") {
		t.Fatalf("topics after --keep: %v", kept)
	}

	other := filepath.Join(t.TempDir(), "plan.jsonl")
	os.Rename(writePlan(t, filepath.Dir(other), campaignSpec("other", 1, "plaintext", "tls")), other)
	_, err := runner.Run(ctx, runner.Options{Plan: other, DB: filepath.Join(dir, "other.db"), Target: tpath, Platforms: platforms})
	if err == nil || !errors.Is(err, runner.ErrBadInput) || !strings.Contains(err.Error(), "the cluster has 2 topics under topic_prefix \"xp-\"") {
		t.Fatalf("another campaign: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "other.db")); !os.IsNotExist(err) {
		t.Errorf("the refused campaign wrote its db: %v", err)
	}

	if _, err := runner.Run(ctx, runner.Options{Plan: plan, DB: db, Target: tpath, Resume: true, Platforms: platforms}); err != nil {
		t.Fatal(err)
	}
	if left := topics(); len(left) != 0 {
		t.Fatalf("topics after the campaign ran again without --keep: %v", left)
	}
}
