package main

import (
	"fmt"
	"io"
	"strings"
)

// perftestPkg and perftestBench name the benchmark that runs xp's load
// generator at saturation on the embedded cluster (kfake) and on Apache
// Kafka, every security mode, in one run.
const (
	perftestPkg   = "runner/perftest"
	perftestBench = "BenchmarkProducerPerformance/"
)

// writeSideBySide writes the embedded cluster's penalties against
// plaintext beside Apache Kafka's, per security mode, from
// ProducerPerformance/{kfake,apache}/MODE/xp_loadgen: the throughput
// penalty each row reports, and the publish p99 penalty from its
// publish_p99_ms against plaintext's. Nothing when the run has neither.
func writeSideBySide(w io.Writer, rows []result) {
	type key struct{ broker, mode string }
	vals := map[key]map[string]float64{}
	var modes []string
	for _, r := range rows {
		if strings.TrimPrefix(r.pkg, modulePrefix) != perftestPkg {
			continue
		}
		rest, ok := strings.CutPrefix(r.name, perftestBench)
		if !ok {
			continue
		}
		parts := strings.Split(rest, "/")
		if len(parts) != 3 || parts[2] != "xp_loadgen" || (parts[0] != "kfake" && parts[0] != "apache") {
			continue
		}
		k := key{parts[0], parts[1]}
		if vals[k] == nil {
			vals[k] = map[string]float64{}
		}
		for _, m := range r.metrics {
			vals[k][m.unit] = m.value
		}
		if parts[1] != "plaintext" && !contains(modes, parts[1]) {
			modes = append(modes, parts[1])
		}
	}
	if len(modes) == 0 {
		return
	}
	cell := func(broker, mode, unit string) string {
		v, ok := vals[key{broker, mode}][unit]
		if !ok {
			return "–"
		}
		return fmt.Sprintf("%.1f%%", v)
	}
	p99 := func(broker, mode string) string {
		base, ok1 := vals[key{broker, "plaintext"}]["publish_p99_ms"]
		v, ok2 := vals[key{broker, mode}]["publish_p99_ms"]
		if !ok1 || !ok2 || base == 0 {
			return "–"
		}
		return fmt.Sprintf("%.0f%%", (v/base-1)*100)
	}
	fmt.Fprint(w, "## Embedded cluster beside Apache Kafka\n\n"+
		"Penalty of each security mode against plaintext, xp's load generator at\n"+
		"saturation (1 KiB, acks all) on the embedded cluster and on one Apache\n"+
		"Kafka broker, in the same run (runner/perftest ProducerPerformance). The\n"+
		"embedded cluster compares modes on one machine; Apache Kafka's figures are\n"+
		"the ones to quote (docs/cluster.md). One saturated run per cell: a rough\n"+
		"comparison, not a campaign's interval.\n\n")
	fmt.Fprint(w, "| mode | throughput penalty, embedded | throughput penalty, Apache Kafka | publish p99 penalty, embedded | publish p99 penalty, Apache Kafka |\n|---|---|---|---|---|\n")
	for _, m := range modes {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", m, cell("kfake", m, "tput_penalty_%"), cell("apache", m, "tput_penalty_%"), p99("kfake", m), p99("apache", m))
	}
	fmt.Fprint(w, "\n")
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}
