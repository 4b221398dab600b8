package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/xp-bench/xp/internal/netnstest"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/results"
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

// runOnNamespaceHosts runs spec with xp run on four namespace hosts (a
// broker, a gateway, two clients) described by terraform/hosts, and
// returns the campaign db, its directory and the hosts.
func runOnNamespaceHosts(tb testing.TB, spec string) (db, dir string, n *netnstest.Net) {
	dir = tb.TempDir()
	bin := filepath.Join(dir, "xp")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		tb.Fatalf("go build: %v\n%s", err, out)
	}
	n = netnstest.New(tb, 4)
	tpath := hostsTarget(tb, dir, n)
	plan := expandSpec(tb, dir, "remote", spec)
	db = filepath.Join(dir, "remote.db")

	st, stdout, stderr := testState()
	st.getenv = func(k string) string {
		if k == "XP_AGENT_BINARY" {
			return bin
		}
		return os.Getenv(k)
	}
	if code := execute(st, []string{"run", plan, "--target", tpath, "--db", db}); code != exitOK {
		tb.Fatalf("xp run exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, tail(stderr.String(), 6000))
	}
	return db, dir, n
}

// TestRunOnNamespaceHosts is the remote path end to end: namespace hosts
// described by terraform/hosts as broker, gateway and client machines,
// kafka.distribution embedded; xp run provisions, deploys, runs every row
// from the client hosts, samples telemetry on every host and tears down;
// the proxy and encrypt rows go through xp's gateway on the gateway host;
// xp analyse makes the report; no xp process is left on any host.
func TestRunOnNamespaceHosts(t *testing.T) {
	db, dir, n := runOnNamespaceHosts(t, remoteSpec)
	// The telemetry streams end at their next write once their sessions
	// are closed: wait for that, within a bound.
	for _, h := range n.Hosts {
		deadline := time.Now().Add(10 * time.Second)
		for {
			procs, err := h.Processes()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(procs, "xp") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: an xp process is left after the campaign: %v", h.Name, procs)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	raw, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var done int
	if err := raw.QueryRow(`SELECT count(*) FROM row WHERE state = 'done'`).Scan(&done); err != nil || done != 8 {
		t.Errorf("%d rows done (%v), want 8", done, err)
	}
	var env string
	if err := raw.QueryRow(`SELECT environment FROM attempt LIMIT 1`).Scan(&env); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"name":"broker-0"`, `"role":"broker"`, `"instance_type":"own"`, `"kernel":"`, `"kafka":"embedded (kfake)"`} {
		if !strings.Contains(env, want) {
			t.Errorf("attempt environment lacks %s: %s", want, env)
		}
	}
	// The proxy and encrypt rows went through xp's gateway on the gateway
	// host: their bootstrap is that host's address, and the gateway there
	// forwarded to the broker host's address, ran under the agent in the
	// gateway namespace and was stopped at teardown.
	gw, broker := n.Hosts[1], n.Hosts[0]
	ers, err := raw.Query(`SELECT environment FROM attempt`)
	if err != nil {
		t.Fatal(err)
	}
	through := map[string]int{}
	for ers.Next() {
		var e struct {
			Security  string   `json:"security"`
			Bootstrap []string `json:"bootstrap"`
		}
		var text string
		if err := ers.Scan(&text); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(text), &e); err != nil {
			t.Fatal(err)
		}
		if !planner.NeedsGateway(e.Security) {
			continue
		}
		through[e.Security]++
		if len(e.Bootstrap) != 1 || !strings.HasPrefix(e.Bootstrap[0], gw.Addr+":") {
			t.Errorf("%s attempt bootstraps from %v, want the gateway host %s", e.Security, e.Bootstrap, gw.Addr)
		}
	}
	ers.Close()
	if through["proxy"] != 2 || through["encrypt"] != 2 {
		t.Errorf("attempts through a gateway: %v, want 2 proxy and 2 encrypt", through)
	}
	gdir := filepath.Join(gw.Home(), "xp", "remote-e2e", "gateway-1")
	for _, svc := range []string{"gateway-proxy-0", "gateway-encrypt-0"} {
		cfg, err := os.ReadFile(filepath.Join(gdir, "gateway", svc+".yaml"))
		if err != nil {
			t.Fatalf("the %s config on the gateway host: %v", svc, err)
		}
		if !strings.Contains(string(cfg), "host: "+gw.Addr) || !strings.Contains(string(cfg), "- "+broker.Addr+":") {
			t.Errorf("%s does not listen on %s and forward to %s:\n%s", svc, gw.Addr, broker.Addr, cfg)
		}
		log, err := os.ReadFile(filepath.Join(gdir, "logs", svc+".log"))
		if err != nil || !strings.Contains(string(log), "gateway stopping") {
			t.Errorf("%s's log on the gateway host (%v):\n%s", svc, err, log)
		}
	}
	for _, f := range []string{"pki/gateway-key.pem", "vault.keys"} {
		if fi, err := os.Stat(filepath.Join(gdir, "gateway", f)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s on the gateway host: %v %v, want mode 0600", f, fi, err)
		}
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
// (a broker, a gateway and two clients) with the embedded cluster.
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
ssh: {user: %s, private_key: %s, known_hosts: accept-new}
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
