package localtarget

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/planner"
)

// TestRestartSampleLogs: the local target samples its processes by role,
// hands out their logs, and Restart replaces the processes with new ones
// serving new endpoints.
func TestRestartSampleLogs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tg := New(t.TempDir())
	defer tg.Down(context.Background())
	g := target.Group{Key: planner.InfraKey{Platform: "local", Brokers: 1},
		Rows: []planner.Row{{Security: "plaintext"}, {Security: "proxy", Gateways: 1, GatewayTransport: "tls"}}}
	ep, err := tg.Up(ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ep.Modes["proxy"]; !ok {
		t.Fatalf("endpoints %v: no proxy", ep.Modes)
	}
	samples, err := tg.Sample(ctx)
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
	want := map[string]string{HostCluster: planner.RoleCluster, HostGateway: planner.RoleGateway, target.HostClient: planner.RoleClient}
	if len(roles) != len(want) {
		t.Fatalf("sampled hosts %v, want %v", roles, want)
	}
	for h, r := range want {
		if roles[h] != r {
			t.Errorf("host %s has role %q, want %q", h, roles[h], r)
		}
	}
	// A child's stderr reaches its log through a pipe xp reads on its own
	// goroutine, so a line written just before the child answered may
	// arrive a moment after Up returned: wait for both start-up lines.
	var logs []target.Log
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if logs, err = tg.CollectLogs(ctx, time.Time{}); err != nil {
			t.Fatal(err)
		}
		started := 0
		for _, l := range logs {
			if strings.Contains(string(l.Text), "embedded cluster serving") || strings.Contains(string(l.Text), "gateway listening") {
				started++
			}
		}
		if started == 2 || time.Now().After(deadline) {
			break
		}
	}
	names := []string{}
	for _, l := range logs {
		names = append(names, l.Name)
		if l.Name == "cluster.log" && !strings.Contains(string(l.Text), "embedded cluster serving") {
			t.Errorf("cluster.log %q has no start-up line", l.Text)
		}
		if l.Name == "gateway.log" && !strings.Contains(string(l.Text), "gateway listening") {
			t.Errorf("gateway.log %q has no start-up line", l.Text)
		}
	}
	if !slices.Equal(names, []string{"cluster.log", "gateway.log"}) {
		t.Fatalf("logs %v, want cluster.log and gateway.log", names)
	}

	tg.mu.Lock()
	oldCluster, oldGateways := tg.cluster, tg.gateways
	tg.mu.Unlock()
	ep2, err := tg.Restart(ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []*childProc{oldCluster, oldGateways} {
		select {
		case <-p.done:
		default:
			t.Errorf("process %d still runs after Restart", p.pid())
		}
	}
	tg.mu.Lock()
	if tg.cluster == nil || tg.cluster == oldCluster || tg.gateways == nil || tg.gateways == oldGateways {
		t.Errorf("Restart did not start new processes")
	}
	tg.mu.Unlock()
	if _, ok := ep2.Modes["proxy"]; !ok {
		t.Fatalf("after Restart: no proxy in %v", ep2.Modes)
	}
	if err := tg.Down(ctx); err != nil {
		t.Fatal(err)
	}
	samples, _ = tg.Sample(ctx)
	if len(samples) != 1 || samples[0].Host != target.HostClient {
		t.Fatalf("after Down the samples are %+v, want only the client", samples)
	}
}
