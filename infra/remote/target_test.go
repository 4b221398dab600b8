package remote

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xp-bench/xp/infra/ssh"
	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/infra/targetfile"
	"github.com/xp-bench/xp/infra/tf"
	"github.com/xp-bench/xp/internal/netnstest"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/results"
	"github.com/xp-bench/xp/runner/loadgen"
)

// TestTerraformHostsTarget drives namespace hosts the way `xp run` on the
// hosts platform will: terraform/hosts (the real terraform binary)
// describes them as broker, gateway and client machines, tf.Target applies
// it and hands the inventory to the Deployer, which deploys the embedded
// cluster; a load runs through the gateway mode; Down stops every service
// and destroys the group, its host keys with it: a new group takes the
// new key of a rebuilt host, and a key changed within a group is refused.
func TestTerraformHostsTarget(t *testing.T) {
	bin := buildXP(t)
	n := netnstest.New(t, 4)
	dir := t.TempDir()
	roles := []string{"broker", "gateway", "client", "client"}
	var machines []string
	for i, h := range n.Hosts {
		machines = append(machines, fmt.Sprintf("    - {name: %s-%d, address: %s, role: %s}", roles[i], i, h.Addr, roles[i]))
	}
	text := fmt.Sprintf(`platform: hosts
vars:
  client_count: 2
  machines:
%s
ssh: {user: %s, private_key: %s, known_hosts: accept-new}
kafka: {version: 3.9.1, distribution: embedded}
teardown: always
`, strings.Join(machines, "\n"), n.User, n.UserKey)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	db := filepath.Join(dir, "c.db")
	store, err := results.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	exec, err := tf.Find(ctx, filepath.Join(dir, "cache"))
	if err != nil {
		t.Fatal(err)
	}
	tfile, err := targetfile.Parse(filepath.Join(dir, "target.yaml"), []byte(text), os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	log := &syncBuf{}
	dep, err := NewDeployer(DeployerOptions{Campaign: "c1", SSH: tfile.SSH, Kafka: tfile.Kafka,
		KnownHosts: db + ".known_hosts", Binary: bin, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	defer dep.Close()
	cfg := target.Config{Platform: "hosts", Path: filepath.Join(dir, "target.yaml"), Text: []byte(text), DB: db}
	tg, err := tf.NewTarget(cfg, "c1", tf.TargetOptions{Deployer: dep, Events: store, ExecPath: exec, Log: log, Getenv: os.Getenv})
	if err != nil {
		t.Fatal(err)
	}
	row := planner.Row{Platform: "hosts", Brokers: 1, Gateways: 1, GatewayKind: "builtin", Security: "proxy", KafkaVersion: "3.9.1"}
	g := target.Group{Key: row.InfraKey(), Rows: []planner.Row{row}}
	ep, err := tg.Up(ctx, g)
	if err != nil {
		t.Fatalf("up: %v\nlog:\n%s", err, log.String())
	}
	if got := strings.Join(ep.Hosts, ","); got != "broker-0,gateway-1,client-2,client-3" {
		t.Errorf("hosts %s", got)
	}
	// The direct modes are the embedded cluster's, on the broker host;
	// the row's proxy runs on the gateway host, and a gateway mode no row
	// needs runs nowhere (the broker host serves only the direct modes).
	for _, m := range []string{"plaintext", "tls", "mtls", "sasl_ssl"} {
		e := ep.Modes[m]
		if len(e.Bootstrap) == 0 || !strings.HasPrefix(e.Bootstrap[0], n.Hosts[0].Addr+":") {
			t.Errorf("mode %s: %+v, want on the broker host", m, e)
		}
	}
	if e, ok := ep.Modes["encrypt"]; ok {
		t.Errorf("mode encrypt, which no row needs, is served: %+v", e)
	}
	if e := ep.Modes["proxy"]; len(e.Bootstrap) != 1 || !strings.HasPrefix(e.Bootstrap[0], n.Hosts[1].Addr+":") || e.Crypto == nil || e.Crypto.Requested != "std" {
		t.Errorf("mode proxy: %+v, want on the gateway host with crypto std", e)
	}
	recs := dep.Deployment().Hosts()
	if len(recs) != 4 || recs[0].Name != "broker-0" || recs[0].Kafka != target.KfakeBroker().String() || recs[0].InstanceType != "own" {
		t.Errorf("host records %+v", recs)
	}
	// The runner reaches loads, telemetry, logs and restarts through the
	// target's optional interfaces.
	var phases []string
	var pmu sync.Mutex
	lcfg := loadgen.Config{Rate: 200, MessageSize: 128, Partitions: 2, ConsumerGroups: 1, LingerMs: 1, Warmup: time.Second, Duration: 2 * time.Second,
		DrainTimeout: 10 * time.Second, Seed: 7, OnPhase: func(p string, _ time.Time) {
			pmu.Lock()
			phases = append(phases, p)
			pmu.Unlock()
		}}
	res, err := tg.RunLoad(ctx, target.Load{Row: &row, Endpoint: ep.Modes["proxy"], Config: lcfg})
	if err != nil || !res.Healthy || res.TargetRate != 200 || res.Published < 300 {
		t.Fatalf("load through the gateway mode: %v %+v", err, res)
	}
	pmu.Lock()
	if got := strings.Join(phases, ","); got != "warmup,measure,drain,done" {
		t.Errorf("phases %s", got)
	}
	pmu.Unlock()
	var hs []target.HostSample
	for deadline := time.Now().Add(15 * time.Second); len(hs) < 4; time.Sleep(100 * time.Millisecond) {
		if hs, err = tg.Sample(ctx); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("samples of %d hosts, want 4: %+v", len(hs), hs)
		}
	}
	for _, h := range hs {
		if h.CPU <= 0 || h.MemMiB <= 0 || h.Net == nil || h.Net.In == 0 {
			t.Errorf("host sample %+v", h)
		}
	}
	logs, err := tg.CollectLogs(ctx, time.Time{})
	if err != nil || len(logs) == 0 || logs[0].Name != "broker-0/cluster.log" || !strings.Contains(string(logs[0].Text), "cluster starting") {
		t.Errorf("logs %v %v", len(logs), err)
	}
	if !slices.ContainsFunc(logs, func(l target.Log) bool { return l.Name == "gateway-1/gateway-proxy-0.log" }) {
		t.Errorf("no gateway log among the logs collected")
	}
	ep2, err := tg.Restart(ctx, g)
	if err != nil || len(ep2.Modes["tls"].Bootstrap) == 0 {
		t.Fatalf("restart: %v %+v\nlog:\n%s", err, ep2, log.String())
	}
	if err := tg.Down(ctx); err != nil {
		t.Fatal(err)
	}
	for _, h := range n.Hosts {
		waitNoXP(t, h)
		// The machines stay; the campaign's files (keys, the SASL
		// password, the binary) go.
		if _, err := os.Stat(filepath.Join(h.Home(), "xp", "c1")); !os.IsNotExist(err) {
			t.Errorf("%s: ~/xp/c1 left after the group was destroyed: %v", h.Name, err)
		}
	}
	es, err := store.InfraEvents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var evs []string
	for _, e := range es {
		evs = append(evs, e.Event)
	}
	if got := strings.Join(evs, ","); got != "applying,up,down" {
		t.Errorf("infra events %s", got)
	}

	// Host keys belong to the group: its working directory, removed with
	// it, holds them. The next group on the same address (a cloud's
	// recycled public address) meets a new key and takes it.
	dep.Close()
	if err := n.Hosts[0].ChangeHostKey(); err != nil {
		t.Fatal(err)
	}
	if _, err := tg.Up(ctx, g); err != nil {
		t.Fatalf("up of a new group on the address of a destroyed one with another key: %v", err)
	}
	if kh, err := os.ReadFile(filepath.Join(tg.Inventory().Dir, "known_hosts")); err != nil || !strings.Contains(string(kh), n.Hosts[0].Addr) {
		t.Errorf("the group's known_hosts: %v\n%s", err, kh)
	}
	// Within the group a changed key is refused.
	dep.Close()
	if err := n.Hosts[0].ChangeHostKey(); err != nil {
		t.Fatal(err)
	}
	_, err = tg.Restart(ctx, g)
	var he *ssh.HostKeyError
	if !errors.As(err, &he) || !strings.Contains(err.Error(), "has CHANGED") {
		t.Fatalf("restart after the broker's key changed within its group: %v", err)
	}
	// Stopping the services fails on the refused key; the destroy, which
	// takes the group's known_hosts with it, does not.
	tg.Down(ctx)
	if left, _ := filepath.Glob(filepath.Join(tf.WorkRoot(db), "*", "known_hosts")); len(left) > 0 {
		t.Errorf("known_hosts left after the group was destroyed: %v", left)
	}
}

// waitNoXP waits until no xp process runs in h's namespace, or fails.
func waitNoXP(t *testing.T, h *netnstest.Host) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		procs, err := h.Processes()
		if err != nil {
			t.Fatal(err)
		}
		left := 0
		for _, p := range procs {
			if p == "xp" {
				left++
			}
		}
		if left == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d xp processes left after teardown: %v", h.Name, left, procs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
