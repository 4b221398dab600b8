package main

import (
	"fmt"
	"io"
	"strings"
)

// gatewayPeersPkg and gatewayPeersBench name the benchmark that runs xp's
// gateway and Kroxylicious in front of the same broker in one run:
// GatewayVsKroxylicious/{fixed_2k,saturation}/{builtin,kroxylicious}_{proxy,encrypt}.
const (
	gatewayPeersPkg   = "infra/kroxylicious"
	gatewayPeersBench = "BenchmarkGatewayVsKroxylicious/"
)

// writeGatewayPeers writes the gateway's cost beside Kroxylicious's, each
// as passthrough and as encrypting gateway: CPU per record and records/s
// at saturation, the publish latency each adds at a fixed rate, and peak
// RSS. The gateway has no CPU target; its cost is reported beside its
// peer's. Nothing when the run has neither.
func writeGatewayPeers(w io.Writer, rows []result) {
	vals := map[string]map[string]float64{} // "saturation/builtin_proxy" -> metrics
	for _, r := range rows {
		if strings.TrimPrefix(r.pkg, modulePrefix) != gatewayPeersPkg {
			continue
		}
		if rest, ok := strings.CutPrefix(r.name, gatewayPeersBench); ok {
			vals[rest] = metrics(r)
		}
	}
	if len(vals) == 0 {
		return
	}
	fmt.Fprint(w, "## The gateway beside Kroxylicious\n\n"+
		"xp's gateway (crypto std) and Kroxylicious (Record Encryption on its\n"+
		"in-memory KMS), each as passthrough (proxy) and encrypting gateway, TLS\n"+
		"on both legs, in front of the same Apache Kafka broker in one run\n"+
		"(infra/kroxylicious GatewayVsKroxylicious): gateway CPU per record\n"+
		"(produce and fetch) and records/s at saturation, publish latency added\n"+
		"against the direct path at 2,000 msg/s, and peak RSS. The gateway has no\n"+
		"CPU target: its cost is reported here beside its peer's, not tuned.\n\n")
	fmt.Fprint(w, "| gateway | mode | CPU µs/record, saturated | records/s, saturated | added publish p50 ms | added publish p99 ms | peak RSS MiB |\n"+
		"|---|---|---:|---:|---:|---:|---:|\n")
	for _, mode := range []string{"proxy", "encrypt"} {
		for _, gw := range []struct{ name, key string }{{"xp", "builtin"}, {"Kroxylicious", "kroxylicious"}} {
			sat, fixed := vals["saturation/"+gw.key+"_"+mode], vals["fixed_2k/"+gw.key+"_"+mode]
			if sat == nil && fixed == nil {
				continue
			}
			rss := sat
			if _, ok := rss["gw_peak_rss_MiB"]; !ok {
				rss = fixed
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", gw.name, mode,
				value(sat, "gw_cpu_us/record", "%.2f"), value(sat, "records/s", "%.0f"),
				value(fixed, "added_p50_ms", "%.3f"), value(fixed, "added_p99_ms", "%.2f"), value(rss, "gw_peak_rss_MiB", "%.0f"))
		}
	}
	fmt.Fprint(w, "\n")
}
