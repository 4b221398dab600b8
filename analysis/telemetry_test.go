package analysis

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/xp-bench/xp/results"
)

// TestSummariseHosts checks one attempt's per-host use over its measured
// window against numbers worked out by hand.
func TestSummariseHosts(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	const mib = 1 << 20
	sample := func(host string, s float64, metric string, v float64) results.Sample {
		return results.Sample{Host: host, TS: at(s), Metric: metric, Value: v}
	}
	nan := math.NaN()
	tests := []struct {
		name       string
		samples    []results.Sample
		start, end float64
		want       HostUse
	}{
		{
			// CPU at 10 s: between 5 (9.5 s) and 6 (10.5 s) = 5.5; at 20 s:
			// between 15 (15 s) and 26 (20.5 s) = 25; (25-5.5)/10 = 1.95.
			// Memory: only the samples at 10.5 and 15 s lie inside.
			// Network in: 10 MiB at 10 s, 30 MiB at 20 s: 2 MiB/s; out
			// grows 50 MiB over 0..25 s: 2 MiB/s throughout.
			name: "window inside the samples, ends interpolated",
			samples: []results.Sample{
				sample("broker-1", 0, telCPU, 0), sample("broker-1", 9.5, telCPU, 5), sample("broker-1", 10.5, telCPU, 6),
				sample("broker-1", 15, telCPU, 15), sample("broker-1", 20.5, telCPU, 26), sample("broker-1", 25, telCPU, 30),
				sample("broker-1", 9.5, telMem, 500), sample("broker-1", 10.5, telMem, 100),
				sample("broker-1", 15, telMem, 120), sample("broker-1", 20.5, telMem, 900),
				sample("broker-1", 0, telNetIn, 0), sample("broker-1", 10, telNetIn, 10*mib),
				sample("broker-1", 20, telNetIn, 30*mib), sample("broker-1", 25, telNetIn, 100*mib),
				sample("broker-1", 0, telNetOut, 0), sample("broker-1", 25, telNetOut, 50*mib),
			},
			start: 10, end: 20,
			want: HostUse{Host: "broker-1", Role: "broker", CPUCores: 1.95, MemMaxMiB: 120, NetRxMiBs: 2, NetTxMiBs: 2,
				DiskReadMiBs: nan, DiskWriteMiBs: nan},
		},
		{
			// Samples from 12 to 18 s only: the window is clipped to them,
			// 3 CPU seconds over 6 s. A host not among the machines is its
			// own role.
			name:    "window wider than the samples, clipped",
			samples: []results.Sample{sample("client", 12, telCPU, 0), sample("client", 18, telCPU, 3), sample("client", 12, telMem, 10)},
			start:   10, end: 20,
			want: HostUse{Host: "client", Role: "client", CPUCores: 0.5, MemMaxMiB: 10, NetRxMiBs: nan, NetTxMiBs: nan,
				DiskReadMiBs: nan, DiskWriteMiBs: nan},
		},
		{
			// The store returns samples as written: order is not trusted.
			name:    "samples out of time order",
			samples: []results.Sample{sample("client", 18, telCPU, 3), sample("client", 12, telMem, 10), sample("client", 12, telCPU, 0)},
			start:   10, end: 20,
			want: HostUse{Host: "client", Role: "client", CPUCores: 0.5, MemMaxMiB: 10, NetRxMiBs: nan, NetTxMiBs: nan,
				DiskReadMiBs: nan, DiskWriteMiBs: nan},
		},
		{
			name: "disk bytes",
			samples: []results.Sample{sample("broker-1", 10, telDiskRead, 0), sample("broker-1", 20, telDiskRead, 5*mib),
				sample("broker-1", 10, telDiskWrite, 0), sample("broker-1", 20, telDiskWrite, 40*mib)},
			start: 10, end: 20,
			want: HostUse{Host: "broker-1", Role: "broker", CPUCores: nan, MemMaxMiB: nan, NetRxMiBs: nan, NetTxMiBs: nan,
				DiskReadMiBs: 0.5, DiskWriteMiBs: 4},
		},
		{
			name:    "one sample: no rate",
			samples: []results.Sample{sample("broker-1", 15, telCPU, 3)},
			start:   10, end: 20,
			want: HostUse{Host: "broker-1", Role: "broker", CPUCores: nan, MemMaxMiB: nan, NetRxMiBs: nan, NetTxMiBs: nan,
				DiskReadMiBs: nan, DiskWriteMiBs: nan},
		},
		{
			name:    "samples all after the window: nothing",
			samples: []results.Sample{sample("broker-1", 30, telCPU, 0), sample("broker-1", 31, telCPU, 1), sample("broker-1", 30, telMem, 7)},
			start:   10, end: 20,
			want: HostUse{Host: "broker-1", Role: "broker", CPUCores: nan, MemMaxMiB: nan, NetRxMiBs: nan, NetTxMiBs: nan,
				DiskReadMiBs: nan, DiskWriteMiBs: nan},
		},
	}
	roles := map[string]string{"broker-1": "broker"}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := summariseHosts(tc.samples, roles, at(tc.start), at(tc.end))
			if len(got) != 1 {
				t.Fatalf("%d hosts, want 1: %+v", len(got), got)
			}
			g, w := got[0], tc.want
			if g.Host != w.Host || g.Role != w.Role {
				t.Errorf("host %s role %s, want %s %s", g.Host, g.Role, w.Host, w.Role)
			}
			for _, f := range []struct {
				name      string
				got, want float64
			}{{"cpu", g.CPUCores, w.CPUCores}, {"mem", g.MemMaxMiB, w.MemMaxMiB}, {"net rx", g.NetRxMiBs, w.NetRxMiBs},
				{"net tx", g.NetTxMiBs, w.NetTxMiBs}, {"disk read", g.DiskReadMiBs, w.DiskReadMiBs}, {"disk write", g.DiskWriteMiBs, w.DiskWriteMiBs}} {
				if !sameFloat(f.got, f.want) {
					t.Errorf("%s = %v, want %v", f.name, f.got, f.want)
				}
			}
		})
	}
}

func sameFloat(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b))
}

// TestBuildTelemetry checks the aggregation over a role's hosts and over
// the healthy final attempts of a configuration and level, by hand.
func TestBuildTelemetry(t *testing.T) {
	nan := math.NaN()
	h := func(host, role string, cpu, mem, rx float64) HostUse {
		return HostUse{Host: host, Role: role, CPUCores: cpu, MemMaxMiB: mem, NetRxMiBs: rx, NetTxMiBs: nan,
			DiskReadMiBs: nan, DiskWriteMiBs: nan}
	}
	run := func(pair, level string, rep, attempt int, final bool, outcome string, hosts ...HostUse) Run {
		return Run{Run: pair + level, Pair: pair, Replicate: rep, Attempt: attempt, Final: final, Outcome: outcome,
			Factors: []string{level, "1024"}, Hosts: hosts}
	}
	d := &Dataset{Treatment: "security", Factors: []string{"security", "message_size"}, Runs: []Run{
		run("p1", "plaintext", 1, 1, true, OutcomeDone,
			h("broker-1", "broker", 2, 600, 1), h("broker-2", "broker", 4, 800, nan), h("client-1", "client", 0.5, 40, nan)),
		// A retried run: only its final attempt counts.
		run("p1", "plaintext", 2, 1, false, OutcomeDone, h("broker-1", "broker", 50, 5000, 50)),
		run("p1", "plaintext", 2, 2, true, OutcomeDone, h("broker-1", "broker", 3, 700, nan), h("client-1", "client", 1.5, 50, nan)),
		// Unhealthy: left out.
		run("p1", "plaintext", 3, 1, true, "invalid", h("broker-3", "broker", 100, 9000, 9)),
		// No telemetry: no row of its own, and it counts in no role.
		run("p1", "tls", 2, 1, true, OutcomeDone),
		run("p1", "tls", 1, 1, true, OutcomeDone, h("broker-1", "broker", 5, 650, 2)),
		run("p0", "tls", 1, 1, true, OutcomeDone, h("cluster", "cluster", 0.25, 30, nan)),
	}}
	res := &Result{Dataset: d, Levels: []string{"plaintext", "tls"}}
	res.buildTelemetry()
	want := []RoleUse{
		{Pair: "p0", Level: "tls", Role: "cluster", Hosts: []string{"cluster"}, Attempts: 1, CPUCores: 0.25, MemMaxMiB: 30,
			NetRxMiBs: nan, NetTxMiBs: nan, DiskReadMiBs: nan, DiskWriteMiBs: nan},
		// CPU: attempt 1 mean(2, 4) = 3, attempt 2: 3; mean 3. Network in
		// measured on broker-1 in attempt 1 only: 1. Memory: the largest.
		{Pair: "p1", Level: "plaintext", Role: "broker", Hosts: []string{"broker-1", "broker-2"}, Attempts: 2, CPUCores: 3,
			MemMaxMiB: 800, NetRxMiBs: 1, NetTxMiBs: nan, DiskReadMiBs: nan, DiskWriteMiBs: nan},
		{Pair: "p1", Level: "plaintext", Role: "client", Hosts: []string{"client-1"}, Attempts: 2, CPUCores: 1,
			MemMaxMiB: 50, NetRxMiBs: nan, NetTxMiBs: nan, DiskReadMiBs: nan, DiskWriteMiBs: nan},
		{Pair: "p1", Level: "tls", Role: "broker", Hosts: []string{"broker-1"}, Attempts: 1, CPUCores: 5,
			MemMaxMiB: 650, NetRxMiBs: 2, NetTxMiBs: nan, DiskReadMiBs: nan, DiskWriteMiBs: nan},
	}
	if len(res.Telemetry) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(res.Telemetry), len(want), res.Telemetry)
	}
	for i, w := range want {
		g := res.Telemetry[i]
		if g.Pair != w.Pair || g.Level != w.Level || g.Role != w.Role || !slices.Equal(g.Hosts, w.Hosts) || g.Attempts != w.Attempts {
			t.Errorf("row %d: %s %s %s %v n=%d, want %s %s %s %v n=%d", i, g.Pair, g.Level, g.Role, g.Hosts, g.Attempts,
				w.Pair, w.Level, w.Role, w.Hosts, w.Attempts)
		}
		for _, f := range []struct {
			name      string
			got, want float64
		}{{"cpu", g.CPUCores, w.CPUCores}, {"mem", g.MemMaxMiB, w.MemMaxMiB}, {"net rx", g.NetRxMiBs, w.NetRxMiBs},
			{"net tx", g.NetTxMiBs, w.NetTxMiBs}, {"disk read", g.DiskReadMiBs, w.DiskReadMiBs}, {"disk write", g.DiskWriteMiBs, w.DiskWriteMiBs}} {
			if !sameFloat(f.got, f.want) {
				t.Errorf("row %d (%s %s %s): %s = %v, want %v", i, g.Pair, g.Level, g.Role, f.name, f.got, f.want)
			}
		}
	}
}
