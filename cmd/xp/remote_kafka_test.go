package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/internal/disttest"
	"github.com/xp-bench/xp/internal/netnstest"
	"github.com/xp-bench/xp/planner"
)

// kafkaHostsSpec is every direct mode and one gateway mode on a 3-broker
// Apache Kafka cluster (replication factor 3, min.insync.replicas 2, acks
// all), two replicates, short rows.
const kafkaHostsSpec = `campaign: remote-kafka
seed: 7
replicates: 2
treatment: security
baseline: plaintext
factors:
  security: [plaintext, tls, mtls, sasl_ssl, proxy]
fixed:
  platform: hosts
  brokers: 3
  gateways: 1
  kafka_version: %s
  message_size: 128
  acks: all
  target_rate: 100
  warmup_s: 0
  duration_s: 2
  drain_timeout_s: 20
`

// testJVMFlags make the test's brokers start fast on a busy machine; the
// tests of infra/remote run Kafka's own flags too.
const testJVMFlags = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"

// TestRunKafkaOnNamespaceHosts runs a campaign with xp run on six namespace
// hosts that terraform/hosts describes as three brokers, a gateway and two
// clients, kafka.distribution the Apache Kafka 4 release make kafka-dist
// assembled (a file here, uploaded to each broker host): every direct
// mode (plaintext, tls, mtls, sasl_ssl with SCRAM-SHA-512) against
// Kafka's own listeners and proxy through xp's gateway on the gateway
// host, two replicates. One broker's JVM is SIGKILLed in the measurement
// of one attempt: that attempt fails naming the broker host and its
// service, its log and Kafka's are kept, the row and its matched set's
// earlier member run again on a restarted cluster, and every row ends
// done. Every attempt records the broker it measured: apache and the
// version, the Java runtime and the JVM flags of each broker host. No xp
// and no java process is left on any host.
func TestRunKafkaOnNamespaceHosts(t *testing.T) {
	t.Parallel()
	rel := disttest.Kafka(t, 4)
	dir := t.TempDir()
	n := netnstest.New(t, 6)
	roles := []string{"broker", "broker", "broker", "gateway", "client", "client"}
	var machines []string
	for i, h := range n.Hosts {
		machines = append(machines, fmt.Sprintf("    - {name: %s-%d, address: %s, role: %s}", roles[i], i, h.Addr, roles[i]))
	}
	tpath := writeRunFile(t, dir, "target.yaml", fmt.Sprintf(`platform: hosts
vars:
  client_count: 2
  machines:
%s
ssh: {user: %s, private_key: %s, known_hosts: accept-new, keepalive: 1s}
kafka: {distribution: %s, sha512: %s, heap: 384m, jvm_flags: %s}
teardown: never
`, strings.Join(machines, "\n"), n.User, n.UserKey, rel.Path, rel.SHA512, testJVMFlags))

	kill := &brokerKill{host: n.Hosts[1]}
	start := time.Now()
	db := runOnHosts(t, dir, n, tpath, fmt.Sprintf(kafkaHostsSpec, rel.Version), kill.run)
	t.Logf("xp run on Apache Kafka %s: %.1fs", rel.Version, time.Since(start).Seconds())
	// teardown: never keeps the group, and the brokers' files with it, for
	// the checks below; xp infra down then stops and removes everything.
	defer func() {
		infraDown(t, dir, tpath, db)
		campaignFilesGone(t, n, "remote-kafka")
		noXPLeft(t, n)
		for _, h := range n.Hosts {
			if procs, _ := h.Processes(); slices.Contains(procs, "java") {
				t.Errorf("%s: a java process is left: %v", h.Name, procs)
			}
		}
	}()

	raw, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var done int
	if err := raw.QueryRow(`SELECT count(*) FROM row WHERE state = 'done'`).Scan(&done); err != nil || done != 10 {
		t.Errorf("%d rows done (%v), want 10", done, err)
	}
	rs, err := raw.Query(`SELECT a.id, a.run, coalesce(a.outcome, ''), a.error, a.superseded, a.environment, r.plan_row FROM attempt a JOIN row r ON r.run = a.run ORDER BY a.id`)
	if err != nil {
		t.Fatal(err)
	}
	type att struct {
		id                                     int64
		run, outcome, errText, superseded, env string
		row                                    planner.Row
	}
	var atts []att
	for rs.Next() {
		var a att
		var plan string
		if err := rs.Scan(&a.id, &a.run, &a.outcome, &a.errText, &a.superseded, &a.env, &plan); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(plan), &a.row); err != nil {
			t.Fatal(err)
		}
		atts = append(atts, a)
	}
	rs.Close()
	if len(atts) != 12 {
		t.Errorf("%d attempts, want 12 (10 rows, one failed and one superseded)", len(atts))
	}
	var failed, superseded []att
	modes := map[string]int{}
	for _, a := range atts {
		if a.outcome == "failed" {
			failed = append(failed, a)
		}
		if a.superseded != "" {
			superseded = append(superseded, a)
		}
		if a.outcome == "done" && a.superseded == "" {
			modes[a.row.Security]++
		}
		var env struct {
			Bootstrap []string          `json:"bootstrap"`
			Machines  []target.HostInfo `json:"machines"`
		}
		if err := json.Unmarshal([]byte(a.env), &env); err != nil {
			t.Fatal(err)
		}
		brokers := 0
		for _, m := range env.Machines {
			if m.Role != "broker" {
				if m.Kafka != "" {
					t.Errorf("attempt %d: %s (%s) records Kafka %q", a.id, m.Name, m.Role, m.Kafka)
				}
				continue
			}
			brokers++
			if m.Kafka != "apache "+rel.Version || m.JVMFlags != "-Xmx384m -Xms384m "+testJVMFlags || !strings.Contains(m.Java, "version \"") {
				t.Errorf("attempt %d: broker host %s records Kafka %q, JVM flags %q, Java %q; want apache %s with its flags and runtime", a.id, m.Name, m.Kafka, m.JVMFlags, m.Java, rel.Version)
			}
		}
		if brokers != 3 {
			t.Errorf("attempt %d records %d broker hosts, want 3: %s", a.id, brokers, a.env)
		}
		gw := n.Hosts[3].Addr + ":"
		if through := len(env.Bootstrap) > 0 && strings.HasPrefix(env.Bootstrap[0], gw); through != a.row.NeedsGateway() {
			t.Errorf("attempt %d (%s) bootstraps from %v", a.id, a.row.Security, env.Bootstrap)
		}
	}
	for _, m := range []string{"plaintext", "tls", "mtls", "sasl_ssl", "proxy"} {
		if modes[m] != 2 {
			t.Errorf("attempts done per mode %v, want 2 of %s", modes, m)
		}
	}

	// The broker's JVM killed in the measurement: that attempt failed,
	// naming the host and its service, with the brokers' logs kept; its
	// matched set's earlier member ran again with it on the restarted
	// cluster.
	if kill.target == "" || len(failed) != 1 || failed[0].run != kill.target || !strings.Contains(failed[0].errText, "host broker-1: service kafka is not running") {
		t.Errorf("failed attempts %+v, want one of %s naming service kafka on broker-1", failed, kill.target)
	}
	if len(superseded) != 1 || superseded[0].run != kill.mate || superseded[0].outcome != "done" {
		t.Errorf("superseded attempts %+v, want the done attempt of %s (the matched set's earlier member)", superseded, kill.mate)
	}
	if len(failed) == 1 {
		var names []string
		ls, err := raw.Query(`SELECT name FROM log WHERE attempt = ? ORDER BY name`, failed[0].id)
		if err != nil {
			t.Fatal(err)
		}
		for ls.Next() {
			var name string
			ls.Scan(&name)
			names = append(names, name)
		}
		ls.Close()
		for _, want := range []string{"target/broker-0/server.log", "target/broker-1/kafka.log", "target/broker-1/server.log"} {
			if !slices.Contains(names, want) {
				t.Errorf("logs of the failed attempt %v lack %s", names, want)
			}
		}
	}
	// Every broker ran from the release's libs/, not a bin/ script.
	for i := range 3 {
		b, err := os.ReadFile(filepath.Join(n.Hosts[i].Home(), "xp", "remote-kafka", fmt.Sprintf("broker-%d", i), "logs", "kafka.log"))
		if err != nil || !strings.Contains(string(b), "/kafka-"+rel.Version+"/libs/* kafka.Kafka ") {
			t.Errorf("broker-%d's service log (%v):\n%s", i, err, tail(string(b), 2000))
		}
	}
}

// brokerKill SIGKILLs the Kafka JVM of one broker host in the measurement
// of one attempt: the second row of the first matched set of replicate 2,
// so that its retry on a restarted cluster reruns the set's earlier
// member.
type brokerKill struct {
	host         *netnstest.Host
	target, mate string
}

func (k *brokerKill) run(ctx context.Context, db, plan string, n *netnstest.Net) error {
	var err error
	if k.target, k.mate, err = secondOfSet(plan); err != nil {
		return fmt.Errorf("brokerKill: %w", err)
	}
	if err := waitDB(ctx, db, `SELECT count(*) FROM attempt WHERE run = ? AND phase = 'measure' AND outcome IS NULL`, k.target); err != nil {
		return fmt.Errorf("brokerKill: %s never measured: %w", k.target, err)
	}
	pids, err := k.host.Pids()
	if err != nil {
		return err
	}
	killed := 0
	for _, p := range pids {
		if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p)); strings.TrimSpace(string(comm)) == "java" {
			if syscall.Kill(p, syscall.SIGKILL) == nil {
				killed++
			}
		}
	}
	if killed != 1 {
		return fmt.Errorf("brokerKill: %d java processes killed on %s, want its broker", killed, k.host.Name)
	}
	if err := waitDB(ctx, db, `SELECT count(*) FROM attempt WHERE run = ? AND outcome = 'failed'`, k.target); err != nil {
		return fmt.Errorf("brokerKill: the attempt of %s without its broker never failed: %w", k.target, err)
	}
	return nil
}
