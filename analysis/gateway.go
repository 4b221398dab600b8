package analysis

import (
	"maps"
	"slices"

	"github.com/xp-bench/xp/planner"
)

// GatewayCPUMetric is the gateway's CPU time per published message.
const GatewayCPUMetric = "gateway_cpu_us_per_msg"

// withoutIdleGateway returns d with the gateway's CPU metric and its
// hosts' telemetry removed from the runs whose security mode has no
// gateway in the path. The evidence store records 0 for them (none of the
// gateway's CPU went to the run), and a local gateway process idles
// beside a direct run; neither is a measurement of that run, so the
// outputs show them empty, not zero. Runs without a security factor keep
// everything. d itself is not changed.
func withoutIdleGateway(d *Dataset) *Dataset {
	si := slices.Index(d.Factors, "security")
	if si < 0 {
		return d
	}
	out := *d
	out.Runs = slices.Clone(d.Runs)
	for i := range out.Runs {
		r := &out.Runs[i]
		if si >= len(r.Factors) || r.Factors[si] == "" || planner.NeedsGateway(r.Factors[si]) {
			continue
		}
		if _, ok := r.Metrics[GatewayCPUMetric]; ok {
			r.Metrics = maps.Clone(r.Metrics)
			delete(r.Metrics, GatewayCPUMetric)
		}
		if slices.ContainsFunc(r.Hosts, func(h HostUse) bool { return h.Role == planner.RoleGateway }) {
			r.Hosts = slices.DeleteFunc(slices.Clone(r.Hosts), func(h HostUse) bool { return h.Role == planner.RoleGateway })
		}
	}
	return &out
}
