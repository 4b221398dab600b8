package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	_ "modernc.org/sqlite"

	"github.com/xp-bench/xp/infra/gateway/envelope"
	"github.com/xp-bench/xp/infra/local"
	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/internal/netnstest"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/results"
	"github.com/xp-bench/xp/runner/loadgen"
)

const remoteSpec = `campaign: remote-e2e
seed: 5
replicates: 2
treatment: security
baseline: plaintext
factors:
  security: [plaintext, tls, proxy, encrypt]
fixed:
  platform: hosts
  brokers: 1
  gateways: 1
  message_size: 128
  acks: all
  target_rate: 100
  warmup_s: 1
  duration_s: 1
  drain_timeout_s: 5
`

// remoteE2ESpec is remoteSpec's four modes and two more matched sets whose
// gateway rows go through the gateway host over the other client
// transports: field_encrypt of Avro records over mtls, and proxy over
// sasl_ssl (16 rows); no warm-up, so that a row's warmup_s 0 reaches the
// client hosts as none.
const remoteE2ESpec = `campaign: remote-e2e
seed: 5
replicates: 2
treatment: security
baseline: plaintext
factors:
  security: [plaintext, tls, proxy, encrypt, field_encrypt]
  gateway_transport: [tls, mtls, sasl_ssl]
  encoding: [bytes, avro]
include:
  - {gateway_transport: tls, encoding: bytes}
  - {gateway_transport: mtls, encoding: avro}
  - {gateway_transport: sasl_ssl, encoding: bytes}
exclude:
  - {gateway_transport: mtls, security: tls}
  - {gateway_transport: mtls, security: proxy}
  - {gateway_transport: mtls, security: encrypt}
  - {gateway_transport: sasl_ssl, security: tls}
  - {gateway_transport: sasl_ssl, security: encrypt}
fixed:
  platform: hosts
  brokers: 1
  gateways: 1
  message_size: 128
  acks: all
  target_rate: 100
  warmup_s: 0
  duration_s: 1
  drain_timeout_s: 5
`

// duringRun is work a test does beside a running `xp run` (on the
// campaign's db, plan and hosts); ctx ends when xp run returns.
type duringRun func(ctx context.Context, db, plan string, n *netnstest.Net) error

// runOnNamespaceHosts runs spec with xp run on four namespace hosts (a
// broker, a gateway, two clients) described by terraform/hosts, each of
// during beside it, and returns the campaign db, its directory and the
// hosts.
func runOnNamespaceHosts(tb testing.TB, spec string, during ...duringRun) (db, dir string, n *netnstest.Net) {
	dir = tb.TempDir()
	n = netnstest.New(tb, 4)
	tpath := hostsTarget(tb, dir, n)
	// The group stays after the run, with the campaign's files on the
	// hosts for the caller to read; xp infra down removes both.
	text, _ := os.ReadFile(tpath)
	tpath = writeRunFile(tb, dir, "target.yaml", strings.Replace(string(text), "teardown: always", "teardown: never", 1))
	return runOnHosts(tb, dir, n, tpath, spec, during...), dir, n
}

// runOnHosts runs spec with xp run on the hosts of n that the TARGET.yaml
// tpath describes, each of during beside it, and returns the campaign db
// (in dir).
func runOnHosts(tb testing.TB, dir string, n *netnstest.Net, tpath, spec string, during ...duringRun) (db string) {
	bin := filepath.Join(dir, "xp")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		tb.Fatalf("go build: %v\n%s", err, out)
	}
	plan := expandSpec(tb, dir, "remote", spec)
	db = filepath.Join(dir, "remote.db")
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, len(during))
	for _, f := range during {
		go func() { errs <- f(ctx, db, plan, n) }()
	}
	defer func() {
		cancel()
		for range during {
			if err := <-errs; err != nil {
				tb.Error(err)
			}
		}
	}()

	st, stdout, stderr := testState()
	st.getenv = func(k string) string {
		if k == "XP_AGENT_BINARY" {
			return bin
		}
		return os.Getenv(k)
	}
	start := time.Now()
	code := execute(st, []string{"run", plan, "--target", tpath, "--db", db})
	tb.Logf("xp run: %.1fs", time.Since(start).Seconds())
	if code != exitOK {
		tb.Fatalf("xp run exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, tail(stderr.String(), 6000))
	}
	return db
}

// TestRunOnNamespaceHosts is the remote path end to end: namespace hosts
// described by terraform/hosts as broker, gateway and client machines,
// kafka.distribution embedded; xp run provisions, deploys, runs every row
// from the client hosts, samples telemetry on every host and tears down;
// every gateway row goes through xp's gateway on the gateway host (proxy
// and encrypt over tls, proxy over sasl_ssl, field_encrypt of Avro records
// over mtls, whose records reach the broker with the field sealed) while
// the broker host serves only the direct modes; a client host whose link
// goes down mid-run fails that attempt, naming the host, and the row is
// retried on restarted services with its matched set; xp analyse makes the
// report; no xp process is left on any host.
func TestRunOnNamespaceHosts(t *testing.T) {
	t.Parallel()
	var down linkDown
	var sealed sealedRecord
	db, dir, n := runOnNamespaceHosts(t, remoteE2ESpec, down.run, sealed.run)
	// The telemetry streams end at their next write once their sessions
	// are closed: noXPLeft waits for that, within a bound.
	noXPLeft(t, n)

	raw, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var done int
	if err := raw.QueryRow(`SELECT count(*) FROM row WHERE state = 'done'`).Scan(&done); err != nil || done != 16 {
		t.Errorf("%d rows done (%v), want 16", done, err)
	}
	var env string
	if err := raw.QueryRow(`SELECT environment FROM attempt LIMIT 1`).Scan(&env); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"name":"broker-0"`, `"role":"broker"`, `"instance_type":"own"`, `"kernel":"`, `"kafka":"` + target.KfakeBroker().String() + `"`, `"broker":{"kind":"kfake","version":"` + target.KfakeBroker().Version + `"}`, `"group":"hosts brokers=1 kfake=`} {
		if !strings.Contains(env, want) {
			t.Errorf("attempt environment lacks %s: %s", want, env)
		}
	}

	// The link went down in the measurement of down.run: that attempt
	// failed naming the client host, the row was retried on restarted
	// services and its matched set's earlier member ran again with it.
	type att struct {
		run, outcome, errText, superseded string
	}
	ars, err := raw.Query(`SELECT run, coalesce(outcome, ''), error, superseded FROM attempt ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	var atts []att
	for ars.Next() {
		var a att
		if err := ars.Scan(&a.run, &a.outcome, &a.errText, &a.superseded); err != nil {
			t.Fatal(err)
		}
		atts = append(atts, a)
	}
	ars.Close()
	var failed, superseded []att
	for _, a := range atts {
		if a.outcome == "failed" {
			failed = append(failed, a)
		}
		if a.superseded != "" {
			superseded = append(superseded, a)
		}
	}
	if len(failed) != 1 || failed[0].run != down.target || !strings.Contains(failed[0].errText, "client-3") {
		t.Errorf("failed attempts %+v, want one of %s naming client-3", failed, down.target)
	}
	if len(superseded) != 1 || superseded[0].run != down.mate || superseded[0].outcome != "done" {
		t.Errorf("superseded attempts %+v, want the done attempt of %s (the matched set's earlier member)", superseded, down.mate)
	}
	if len(atts) != 16+2 {
		t.Errorf("%d attempts, want 18 (16 rows, one failed and one superseded)", len(atts))
	}

	// Every gateway row went through xp's gateway on the gateway host:
	// its bootstrap is that host's address, and the gateway there
	// forwarded to the broker host's address, ran under the agent in the
	// gateway namespace and was stopped at teardown.
	gw, broker := n.Hosts[1], n.Hosts[0]
	ers, err := raw.Query(`SELECT a.environment, r.plan_row FROM attempt a JOIN row r ON r.run = a.run`)
	if err != nil {
		t.Fatal(err)
	}
	through := map[string]int{}
	for ers.Next() {
		var e struct {
			Bootstrap []string `json:"bootstrap"`
		}
		var row planner.Row
		var text, plan string
		if err := ers.Scan(&text, &plan); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(text), &e); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(plan), &row); err != nil {
			t.Fatal(err)
		}
		if !row.NeedsGateway() {
			continue
		}
		key := planner.GatewayModeName(row.Security, row.GatewayTransport, row.Encoding, row.FieldCipher)
		through[key]++
		if len(e.Bootstrap) != 1 || !strings.HasPrefix(e.Bootstrap[0], gw.Addr+":") {
			t.Errorf("%s attempt bootstraps from %v, want the gateway host %s", key, e.Bootstrap, gw.Addr)
		}
	}
	ers.Close()
	for _, k := range []string{"proxy", "encrypt", "proxy.sasl_ssl", "field_encrypt.avro.mtls"} {
		if through[k] < 2 {
			t.Errorf("attempts through the gateway host: %v, want at least 2 of %s", through, k)
		}
	}
	gdir := filepath.Join(gw.Home(), "xp", "remote-e2e", "gateway-1")
	for svc, transport := range map[string]string{"gateway-proxy-0": "tls", "gateway-encrypt-0": "tls",
		"gateway-proxy.sasl_ssl-0": "sasl_ssl", "gateway-field_encrypt.avro.mtls-0": "mtls"} {
		cfg, err := os.ReadFile(filepath.Join(gdir, "gateway", svc+".yaml"))
		if err != nil {
			t.Fatalf("the %s config on the gateway host: %v", svc, err)
		}
		if !strings.Contains(string(cfg), "host: "+gw.Addr) || !strings.Contains(string(cfg), "- "+broker.Addr+":") ||
			!strings.Contains(string(cfg), "transport: "+transport) {
			t.Errorf("%s does not listen on %s over %s and forward to %s:\n%s", svc, gw.Addr, transport, broker.Addr, cfg)
		}
		log, err := os.ReadFile(filepath.Join(gdir, "logs", svc+".log"))
		if err != nil || !strings.Contains(string(log), "gateway stopping") {
			t.Errorf("%s's log on the gateway host (%v):\n%s", svc, err, log)
		}
	}
	for _, f := range []string{"pki/gateway-key.pem", "vault.keys", "schema/record.avsc"} {
		if fi, err := os.Stat(filepath.Join(gdir, "gateway", f)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s on the gateway host: %v %v, want mode 0600", f, fi, err)
		}
	}
	// The records of the field_encrypt row reached the broker with ssn
	// sealed in an envelope and the other fields readable.
	if err := sealed.check(); err != nil {
		t.Error(err)
	}
	// The broker host served only the direct modes: the gateway modes
	// were the gateway host's.
	cl, err := os.ReadFile(filepath.Join(broker.Home(), "xp", "remote-e2e", "broker-0", "cluster", local.ClusterFile))
	if err != nil {
		t.Fatal(err)
	}
	var cluster struct {
		Modes map[string]json.RawMessage `json:"modes"`
	}
	if err := json.Unmarshal(cl, &cluster); err != nil {
		t.Fatal(err)
	}
	var modes []string
	for m := range cluster.Modes {
		modes = append(modes, m)
	}
	sort.Strings(modes)
	if got := strings.Join(modes, ","); got != "mtls,plaintext,sasl_ssl,tls" {
		t.Errorf("the broker host's cluster serves %s, want only the direct modes", got)
	}

	rs, err := raw.Query(`SELECT DISTINCT host FROM telemetry ORDER BY host`)
	if err != nil {
		t.Fatal(err)
	}
	var hosts []string
	for rs.Next() {
		var h string
		rs.Scan(&h)
		hosts = append(hosts, h)
	}
	rs.Close()
	sort.Strings(hosts)
	if got := strings.Join(hosts, ","); got != "broker-0,client-2,client-3,gateway-1" {
		t.Errorf("telemetry of hosts %s, want every host", got)
	}

	st2, _, stderr2 := testState()
	out := filepath.Join(dir, "out")
	if code := execute(st2, []string{"analyse", "--db", db, "--out", out}); code != exitOK {
		t.Fatalf("xp analyse exit %d: %s", code, stderr2)
	}
	if _, err := os.Stat(filepath.Join(out, "report.html")); err != nil {
		t.Fatal(err)
	}
	// Hosts by role: each role's machines, whole-machine CPU and memory,
	// and the network traffic of the namespaces' own links.
	roles := map[string]string{}
	for _, r := range analysisReadCSV(t, filepath.Join(out, "telemetry.csv"))[1:] {
		level, role := r[1], r[2]
		roles[role] = r[3]
		v := make([]float64, 6)
		for i := range v {
			var err error
			if v[i], err = strconv.ParseFloat(r[5+i], 64); err != nil || v[i] < 0 {
				t.Errorf("telemetry.csv row %v: column %d not a measured value", r, 5+i)
			}
		}
		cpu, mem, rx, tx := v[0], v[1], v[2], v[3]
		through := role != "gateway" || level != "plaintext" && level != "tls"
		if cpu <= 0 || mem <= 0 || (through && (rx <= 0 || tx <= 0)) {
			t.Errorf("telemetry.csv row %v: want CPU and memory used, and traffic through the host (%v)", r, through)
		}
	}
	if want := map[string]string{"broker": "broker-0", "client": "client-2;client-3", "gateway": "gateway-1"}; !maps.Equal(roles, want) {
		t.Errorf("telemetry.csv roles and hosts %v, want %v", roles, want)
	}

	// teardown: never kept the group; xp infra down destroys it and, the
	// machines staying, removes the campaign's files from them.
	infraDown(t, dir, filepath.Join(dir, "target.yaml"), db)
	campaignFilesGone(t, n, "remote-e2e")
}

// infraDown runs xp infra down --target tpath on the campaign db (its xp
// binary built into dir by runOnHosts) and wants the group destroyed.
func infraDown(t *testing.T, dir, tpath, db string) {
	t.Helper()
	st, stdout, stderr := testState()
	st.getenv = func(k string) string {
		if k == "XP_AGENT_BINARY" {
			return filepath.Join(dir, "xp")
		}
		return os.Getenv(k)
	}
	if code := execute(st, []string{"infra", "down", "--target", tpath, "--db", db}); code != exitOK || !strings.Contains(stdout.String(), "destroyed") {
		t.Fatalf("xp infra down: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// linkDown takes the link of client host client-3 down in the measurement
// of one attempt and brings it back once that attempt is recorded failed.
// The row is the second of the first matched set of replicate 2, so that
// its retry on restarted services runs the set's earlier member again.
type linkDown struct {
	// target is the row whose attempt loses the link, mate the member of
	// its matched set run before it.
	target, mate string
}

func (l *linkDown) run(ctx context.Context, db, plan string, n *netnstest.Net) error {
	var err error
	if l.target, l.mate, err = secondOfSet(plan); err != nil {
		return fmt.Errorf("linkDown: %w", err)
	}
	client := n.Hosts[3]
	if err := waitDB(ctx, db, `SELECT count(*) FROM attempt WHERE run = ? AND phase = 'measure' AND outcome IS NULL`, l.target); err != nil {
		return fmt.Errorf("linkDown: %s never measured: %w", l.target, err)
	}
	if err := client.LinkDown(); err != nil {
		return err
	}
	err = waitDB(ctx, db, `SELECT count(*) FROM attempt WHERE run = ? AND outcome = 'failed'`, l.target)
	if uerr := client.LinkUp(); uerr != nil {
		return uerr
	}
	if err != nil {
		return fmt.Errorf("linkDown: the attempt of %s without %s's link never failed: %w", l.target, client.Name, err)
	}
	return nil
}

// secondOfSet picks the second row (in run order) of the first matched
// set of replicate 2 in plan, and the member of its set run before it: a
// failed attempt of target reruns mate with it on restarted services.
func secondOfSet(plan string) (target, mate string, err error) {
	text, err := os.ReadFile(plan)
	if err != nil {
		return "", "", err
	}
	var rows []planner.Row
	for _, line := range strings.Split(strings.TrimSpace(string(text)), "\n") {
		var r planner.Row
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return "", "", err
		}
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b planner.Row) int { return a.Order - b.Order })
	for i := 1; i < len(rows); i++ {
		if rows[i].Replicate == 2 && rows[i-1].Replicate == 2 && rows[i].Pair == rows[i-1].Pair {
			return rows[i].Run, rows[i-1].Run, nil
		}
	}
	return "", "", fmt.Errorf("the plan has no matched set of replicate 2")
}

// waitDB polls the campaign db until query (a count) is positive, or ctx
// ends.
func waitDB(ctx context.Context, db, query string, args ...any) error {
	for {
		if _, err := os.Stat(db); err == nil {
			raw, err := sql.Open("sqlite", "file:"+db+"?mode=ro&_pragma=busy_timeout(2000)")
			if err != nil {
				return err
			}
			var k int
			err = raw.QueryRowContext(ctx, query, args...).Scan(&k)
			raw.Close()
			if err == nil && k > 0 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// sealedRecord reads every topic of the broker host's cluster over its
// plaintext listener, as the broker stores the records, until it finds
// one that field_encrypt wrote (the xp.enc marker naming its fields).
type sealedRecord struct {
	rec *kgo.Record
}

func (s *sealedRecord) run(ctx context.Context, _, _ string, n *netnstest.Net) error {
	file := filepath.Join(n.Hosts[0].Home(), "xp", "remote-e2e", "broker-0", "cluster", local.ClusterFile)
	var cl struct {
		Modes map[string]struct {
			Bootstrap string `json:"bootstrap"`
		} `json:"modes"`
	}
	for {
		if b, err := os.ReadFile(file); err == nil && json.Unmarshal(b, &cl) == nil {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sealedRecord: no %s on the broker host", file)
		case <-time.After(50 * time.Millisecond):
		}
	}
	c, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(cl.Modes["plaintext"].Bootstrap, ",")...),
		kgo.ConsumeRegex(), kgo.ConsumeTopics(".*"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.MetadataMaxAge(100*time.Millisecond), kgo.MetadataMinAge(50*time.Millisecond))
	if err != nil {
		return err
	}
	defer c.Close()
	for ctx.Err() == nil {
		fs := c.PollFetches(ctx)
		for it := fs.RecordIter(); !it.Done(); {
			r := it.Next()
			for _, h := range r.Headers {
				if h.Key == "xp.enc" && strings.HasPrefix(string(h.Value), "1:") {
					s.rec = r
					return nil
				}
			}
		}
	}
	return nil
}

// check says whether the record found is an Avro record whose ssn is the
// base64 of an envelope, its other fields plaintext.
func (s *sealedRecord) check() error {
	if s.rec == nil {
		return fmt.Errorf("no record of the field_encrypt row was read from the broker host")
	}
	avsc, err := loadgen.Schema.ReadFile("schema/record.avsc")
	if err != nil {
		return err
	}
	schema, err := avro.Parse(string(avsc))
	if err != nil {
		return err
	}
	var rec struct {
		ID     string `avro:"id"`
		Status string `avro:"status"`
		SSN    string `avro:"ssn"`
		Notes  string `avro:"notes"`
	}
	if err := avro.Unmarshal(schema, s.rec.Value, &rec); err != nil {
		return fmt.Errorf("the record of topic %s on the broker is not Avro of record.avsc: %w", s.rec.Topic, err)
	}
	env, err := base64.StdEncoding.DecodeString(rec.SSN)
	if err != nil {
		return fmt.Errorf("ssn on the broker is %q, not the base64 of an envelope: %w", rec.SSN, err)
	}
	if _, err := envelope.HeaderLen(env); err != nil {
		return fmt.Errorf("ssn on the broker does not hold an envelope: %w", err)
	}
	if len(rec.ID) != 36 || !slices.Contains([]string{"ACTIVE", "CLOSED", "FROZEN", "REVIEW"}, rec.Status) {
		return fmt.Errorf("the fields left in plaintext are not: id %q, status %q", rec.ID, rec.Status)
	}
	return nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// BenchmarkRunOverheadHosts is what the runner adds around each load on
// the hosts target: per attempt, its wall time minus warm-up, measurement
// and drain (target < 1 s, as on local), with bring-up reported apart.
func BenchmarkRunOverheadHosts(b *testing.B) {
	for i := 0; i < b.N; i++ {
		db, _, _ := runOnNamespaceHosts(b, remoteSpec)
		ctx := context.Background()
		r, err := results.OpenReadOnly(ctx, db)
		if err != nil {
			b.Fatal(err)
		}
		atts, err := r.Attempts(ctx)
		if err != nil {
			b.Fatal(err)
		}
		c, err := r.Campaign(ctx)
		if err != nil {
			b.Fatal(err)
		}
		var sum, worst float64
		for _, a := range atts {
			// remoteSpec: warm-up 1 s, measurement 1 s.
			o := a.Ended.Sub(a.Started).Seconds() - 2 - a.Metrics["drain_s"]
			sum += o
			worst = max(worst, o)
		}
		if len(atts) > 0 {
			b.ReportMetric(sum/float64(len(atts)), "overhead_s/row")
			b.ReportMetric(worst, "overhead_max_s")
			b.ReportMetric(atts[0].Started.Sub(c.Created).Seconds(), "bringup_s")
		}
		r.Close()
	}
}

// hostsTarget writes a TARGET.yaml of platform hosts over n's four hosts
// (a broker, a gateway and two clients) with the embedded cluster; a host
// that leaves SSH keepalives unanswered for 3 s is taken for gone.
func hostsTarget(tb testing.TB, dir string, n *netnstest.Net) string {
	tb.Helper()
	roles := []string{"broker", "gateway", "client", "client"}
	var machines []string
	for i, h := range n.Hosts {
		machines = append(machines, fmt.Sprintf("    - {name: %s-%d, address: %s, role: %s}", roles[i], i, h.Addr, roles[i]))
	}
	return writeRunFile(tb, dir, "target.yaml", fmt.Sprintf(`platform: hosts
vars:
  client_count: 2
  machines:
%s
ssh: {user: %s, private_key: %s, known_hosts: accept-new, keepalive: 1s}
kafka: {version: 3.9.1, distribution: embedded}
teardown: always
`, strings.Join(machines, "\n"), n.User, n.UserKey))
}

// expandSpec expands a factor spec into dir/NAME.jsonl.
func expandSpec(tb testing.TB, dir, name, spec string) string {
	tb.Helper()
	s, err := planner.ParseSpec(name+".yaml", []byte(spec))
	if err != nil {
		tb.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := planner.Expand(s, &buf); err != nil {
		tb.Fatal(err)
	}
	return writeRunFile(tb, dir, name+".jsonl", buf.String())
}
