package main

import (
	"fmt"
	"io"
	"strings"
)

// surfaceBench names the benchmark that measures each setting of Kafka's
// security surface against its own baseline on Apache Kafka, in one run:
// SecuritySurface/DIMENSION/SETTING/vs_BASELINE.
const surfaceBench = "BenchmarkSecuritySurface/"

// surfaceDims are the dimensions in the order their tables appear, each
// with the sentence that says what its rows compare; a dimension not
// listed follows them, in the order of the run.
var surfaceDims = []struct{ name, what string }{
	{"sasl_mechanism", "Each `sasl_mechanism` against `scram-sha-512` and against `tls` (no SASL), on a steady connection and at a reconnect every 100 records (`_churn_100`), where the mechanism's authentication is paid again and again."},
	{"authorizer", "KRaft's `StandardAuthorizer` holding N ACLs for other principals (half literal, half prefixed) against no authorizer, on `sasl_ssl` (`scram-sha-512`); each size alternated with its baseline over three rounds."},
	{"tls", "`tls_version` and, under TLS 1.2, each `tls_cipher` against `default` (TLS 1.3 as the broker prefers it) on a steady `tls` connection: the bulk cost. `tls_key` against `ecdsa-p256` at a reconnect every 100 records: the handshake cost, which is where the key is used."},
	{"connection_churn", "A reconnect every 1,000 and every 100 records (`MODE_N`) against one connection for the run (`MODE_0`), on `tls`, `mtls` and `sasl_ssl` (`scram-sha-512`)."},
}

// surfaceRow is one comparison of the surface benchmark.
type surfaceRow struct {
	setting, baseline string
	m                 map[string]float64
}

// writeSurface writes one table per dimension of
// SecuritySurface/DIM/SETTING/vs_BASELINE: the setting's throughput and
// its penalties against the baseline, the broker CPU per message it adds
// and, with churn, its handshakes per second and reconnect p99. Nothing
// when the run has none.
func writeSurface(w io.Writer, rows []result) {
	byDim := map[string][]surfaceRow{}
	var dims []string
	for _, r := range rows {
		if strings.TrimPrefix(r.pkg, modulePrefix) != perftestPkg {
			continue
		}
		rest, ok := strings.CutPrefix(r.name, surfaceBench)
		if !ok {
			continue
		}
		parts := strings.Split(rest, "/")
		if len(parts) != 3 || !strings.HasPrefix(parts[2], "vs_") {
			continue
		}
		if _, seen := byDim[parts[0]]; !seen {
			dims = append(dims, parts[0])
		}
		byDim[parts[0]] = append(byDim[parts[0]], surfaceRow{setting: parts[1],
			baseline: strings.TrimPrefix(parts[2], "vs_"), m: metrics(r)})
	}
	if len(dims) == 0 {
		return
	}
	fmt.Fprint(w, "## Kafka's security surface, each setting against its baseline\n\n"+
		"xp's load generator (franz-go) saturated, 1 KiB records, acks all, one\n"+
		"producer, on single Apache Kafka brokers on this machine\n"+
		"(runner/perftest SecuritySurface): the throughput penalty and the publish\n"+
		"p99 penalty against the baseline, the broker's CPU per record in the\n"+
		"measurement window and what the setting adds to it, and with churn the\n"+
		"handshakes per second and the reconnect p99 (dialling to an authenticated\n"+
		"connection; the baseline's in brackets). Each value is the median of three\n"+
		"rounds that visit the settings in turn, each round in another order. At\n"+
		"saturation the publish p99 is mostly the wait in a full producer queue,\n"+
		"so its penalty tends to follow the throughput's. Where other work shares\n"+
		"the machine, throughput moves with it; the broker's CPU per record moves\n"+
		"least. One benchmark run: a rough comparison, not a campaign's interval.\n\n")
	for _, d := range orderedDims(dims) {
		fmt.Fprintf(w, "### %s\n\n", d.name)
		if d.what != "" {
			fmt.Fprintf(w, "%s\n\n", d.what)
		}
		fmt.Fprint(w, "| setting | against | msg/s | throughput penalty | publish p99 penalty | broker CPU µs/msg | broker CPU added µs/msg | handshakes/s | reconnect p99 ms |\n"+
			"|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, r := range byDim[d.name] {
			reconnect := value(r.m, "reconnect_p99_ms", "%.1f")
			if base := value(r.m, "base_reconnect_p99_ms", "%.1f"); base != "–" {
				reconnect += " (" + base + ")"
			}
			fmt.Fprintf(w, "| `%s` | `%s` | %s | %s | %s | %s | %s | %s | %s |\n", r.setting, r.baseline,
				value(r.m, "msg/s", "%.0f"), value(r.m, "tput_penalty_%", "%.1f%%"), value(r.m, "p99_penalty_%", "%.0f%%"),
				value(r.m, "broker_cpu_us/msg", "%.1f"), value(r.m, "broker_cpu_added_us/msg", "%+.1f"),
				value(r.m, "handshakes/s", "%.0f"), reconnect)
		}
		fmt.Fprint(w, "\n")
	}
}

// orderedDims puts the known dimensions first, in surfaceDims' order,
// then the others as the run had them.
func orderedDims(seen []string) []struct{ name, what string } {
	var out []struct{ name, what string }
	for _, d := range surfaceDims {
		if contains(seen, d.name) {
			out = append(out, d)
		}
	}
	for _, s := range seen {
		known := false
		for _, d := range surfaceDims {
			known = known || d.name == s
		}
		if !known {
			out = append(out, struct{ name, what string }{s, ""})
		}
	}
	return out
}

// metrics is a result's metrics by unit; with -count the last counts.
func metrics(r result) map[string]float64 {
	m := map[string]float64{}
	for _, x := range r.metrics {
		m[x.unit] = x.value
	}
	return m
}

// value formats metric unit of m, or "–" when it is missing.
func value(m map[string]float64, unit, format string) string {
	v, ok := m[unit]
	if !ok {
		return "–"
	}
	return fmt.Sprintf(format, v)
}
