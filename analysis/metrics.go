package analysis

import "strings"

// Percentile suffixes analysed for publish and end-to-end latency.
var latencyPercentiles = []string{"p50", "p95", "p99", "p999", "p9999"}

// NativeMetrics is the metric list of a campaign run by xp: throughput
// (saturating rows only), publish and end-to-end latency at p50..p99.99,
// send delay p99 and client CPU per message. Gateway and host CPU are added
// by ExtraMetrics where a campaign has them.
func NativeMetrics() []MetricDef {
	m := []MetricDef{{Name: "publish_rate", Unit: "msg/s", Higher: true, MaxOnly: true}}
	for _, k := range []string{"publish_ms", "e2e_ms"} {
		for _, p := range latencyPercentiles {
			m = append(m, MetricDef{Name: k + "_" + p, Unit: "ms"})
		}
	}
	m = append(m, MetricDef{Name: "send_delay_ms_p99", Unit: "ms"},
		MetricDef{Name: "client_cpu_us_per_msg", Unit: "us/msg"})
	return m
}

// ExtraMetrics returns the definitions of telemetry metrics present in
// names (gateway_cpu_us_per_msg, host_cpu_*), in the order given.
func ExtraMetrics(names []string) []MetricDef {
	var out []MetricDef
	for _, n := range names {
		switch {
		case n == "gateway_cpu_us_per_msg":
			out = append(out, MetricDef{Name: n, Unit: "us/msg"})
		case strings.HasPrefix(n, "host_cpu_"):
			unit := "value"
			if strings.HasSuffix(n, "_us_per_msg") {
				unit = "us/msg"
			}
			out = append(out, MetricDef{Name: n, Unit: unit})
		}
	}
	return out
}
