package analysis

import (
	"testing"

	"github.com/xp-bench/xp/planner"
)

// TestDirectRowsShowNoGateway: a direct mode (plaintext, tls) has no
// gateway in the path; the 0 the evidence store records for its gateway
// CPU, and the idle local gateway process's telemetry, are left out of
// the analysed runs and the hosts table, so the outputs show them empty,
// not zero. A gateway mode keeps both.
func TestDirectRowsShowNoGateway(t *testing.T) {
	d := Synthetic(SyntheticConfig{Seed: 6, Levels: []string{"plaintext", "proxy", "tls"}, Replicates: 3,
		Penalty: map[string]float64{"proxy": 20, "tls": 10}})
	for i := range d.Runs {
		r := &d.Runs[i]
		r.Metrics[GatewayCPUMetric] = 0
		if r.Factors[0] == "proxy" {
			r.Metrics[GatewayCPUMetric] = 12.5
		}
		r.Hosts = []HostUse{{Host: "cluster", Role: "cluster", CPUCores: 0.2, MemMaxMiB: 50},
			{Host: "gateway", Role: planner.RoleGateway, CPUCores: 0, MemMaxMiB: 40}}
	}
	d.Metrics = append(d.Metrics, ExtraMetrics([]string{GatewayCPUMetric})...)
	res, err := Analyse(d, Options{Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Dataset.Runs {
		_, has := r.Metrics[GatewayCPUMetric]
		if want := r.Factors[0] == "proxy"; has != want {
			t.Errorf("%s: gateway CPU present %v, want %v", r.Run, has, want)
		}
	}
	roles := map[string]bool{}
	for _, u := range res.Telemetry {
		roles[u.Level+"/"+u.Role] = true
	}
	for lv, want := range map[string]bool{"plaintext": false, "tls": false, "proxy": true} {
		if roles[lv+"/"+planner.RoleGateway] != want || !roles[lv+"/cluster"] {
			t.Errorf("%s: hosts by role %v, want a gateway row %v", lv, roles, want)
		}
	}
	// The input is not changed.
	if _, ok := d.Runs[0].Metrics[GatewayCPUMetric]; !ok || len(d.Runs[0].Hosts) != 2 {
		t.Error("Analyse changed its input")
	}
}
