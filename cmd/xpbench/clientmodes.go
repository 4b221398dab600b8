package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/xp-bench/xp/planner"
)

// clientModesBench names the rows of the client benchmark that run each
// client saturated in every direct mode: Clients/modes/CLIENT/MODE.
const clientModesBench = "BenchmarkClients/modes/"

// writeClientModes writes, for every client the run measured, each
// security mode's throughput and publish p99 penalties against the
// client's plaintext, beside the wall time each record took longer and
// the client CPU each record added: where the CPU added comes near the
// time added, the client's own work is much of the penalty. Clients and
// modes appear in the run's order; nothing when it has none.
func writeClientModes(w io.Writer, rows []result) {
	type key struct{ client, mode string }
	vals := map[key]map[string]float64{}
	var clients, modes []string
	for _, r := range rows {
		if strings.TrimPrefix(r.pkg, modulePrefix) != perftestPkg {
			continue
		}
		rest, ok := strings.CutPrefix(r.name, clientModesBench)
		if !ok {
			continue
		}
		parts := strings.Split(rest, "/")
		if len(parts) != 2 {
			continue
		}
		vals[key{parts[0], parts[1]}] = metrics(r)
		if !contains(clients, parts[0]) {
			clients = append(clients, parts[0])
		}
		if !contains(modes, parts[1]) {
			modes = append(modes, parts[1])
		}
	}
	if len(clients) == 0 {
		return
	}
	fmt.Fprint(w, "## Each client's security penalties\n\n"+
		"Each client saturated (1 KiB records, acks all, no consumers) in every\n"+
		"direct mode on the same Apache Kafka broker, the clients and modes\n"+
		"alternated over three rounds, medians (runner/perftest Clients/modes): the\n"+
		"throughput and publish p99 penalty of each mode against the same client's\n"+
		"plaintext, the wall time each record took longer (1/rate against\n"+
		"plaintext's 1/rate) and the client CPU each record added. Client and\n"+
		"broker share this machine's cores, so a client whose CPU added comes near\n"+
		"the time added pays much of the penalty itself; the rest is the broker's\n"+
		"(and waiting). One benchmark run: a rough comparison, not a campaign's\n"+
		"interval.\n\n")
	fmt.Fprint(w, "| client | mode | msg/s | throughput penalty | publish p99 penalty | time added µs/msg | client CPU µs/msg | client CPU added µs/msg |\n"+
		"|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, c := range clients {
		base := vals[key{c, planner.SecurityPlaintext}]
		for _, m := range modes {
			v, ok := vals[key{c, m}]
			if !ok {
				continue
			}
			added := "–"
			if r, b := v["msg/s"], base["msg/s"]; r > 0 && b > 0 && m != planner.SecurityPlaintext {
				added = fmt.Sprintf("%+.1f", 1e6/r-1e6/b)
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", c, m,
				value(v, "msg/s", "%.0f"), value(v, "tput_penalty_%", "%.1f%%"), value(v, "p99_penalty_%", "%.0f%%"),
				added, value(v, "client_cpu_us/msg", "%.2f"), value(v, "client_cpu_added_us/msg", "%+.2f"))
		}
	}
	fmt.Fprint(w, "\n")
}
