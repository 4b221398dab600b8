package main

import (
	"fmt"
	"math"
	"strings"
)

// target is one performance target of an issue, judged from benchmark
// metrics. It is met when every check holds.
type target struct {
	issue  int
	what   string
	checks []check
}

// check compares one metric of one benchmark with a limit.
type check struct {
	pkg   string // package below the module, e.g. runner/loadgen
	bench string // name without "Benchmark"
	unit  string // the metric's unit as go test prints it
	op    string // "<", ">=", "|x|<=" or "=="
	limit float64
}

// targets are the speed and memory targets of the issues, checked by
// `make bench` (never by timed tests).
var targets = []target{
	{3, "load generator rate within ±0.5% at 10k, 50k and 100k msg/s of 1 KiB", []check{
		{"runner/loadgen", "RateAccuracy/10k", "rate_err_%", "|x|<=", 0.5},
		{"runner/loadgen", "RateAccuracy/50k", "rate_err_%", "|x|<=", 0.5},
		{"runner/loadgen", "RateAccuracy/100k", "rate_err_%", "|x|<=", 0.5},
	}},
	{3, "load generator send-delay p99 under 1 ms at those rates", []check{
		{"runner/loadgen", "RateAccuracy/10k", "send_delay_p99_ms", "<", 1},
		{"runner/loadgen", "RateAccuracy/50k", "send_delay_p99_ms", "<", 1},
		{"runner/loadgen", "RateAccuracy/100k", "send_delay_p99_ms", "<", 1},
	}},
	{3, "`--rate max` at least 80% of a bare franz-go produce loop", []check{
		{"runner/loadgen", "Ceiling/loadgen_max", "%_of_bare", ">=", 80},
	}},
	{3, "load generator under 300 MiB RSS at 100k msg/s of 1 KiB for 60 s, healthy", []check{
		{"runner/loadgen", "Memory", "MiB_rss", "<", 300},
		{"runner/loadgen", "Memory", "healthy", "==", 1},
	}},
	{4, "per-run overhead under 1 s on the local target", []check{
		{"runner", "Runner/overhead_and_evidence", "overhead_max_s", "<", 1},
	}},
	{4, "evidence under 128 KiB per 30 s run", []check{
		{"runner", "Runner/overhead_and_evidence", "KiB/30s_run_extrapolated", "<", 128},
	}},
	{4, "`xp status` under 200 ms on a 5,184-row campaign", []check{
		{"runner", "Runner/status_5184_rows", "ms/status", "<", 200},
		{"runner", "Runner/status_5184_rows_cli", "ms/status", "<", 200},
	}},
	{5, "`xp analyse` of 5,184 runs, 10,000 resamples, under 10 s and 1 GiB", []check{
		{"analysis/export", "Analyse5184/xp_analyse", "s/analyse", "<", 10},
		{"analysis/export", "Analyse5184/xp_analyse", "MiB_rss", "<", 1024},
	}},
	{6, "gateway adds under 0.2 ms to publish p50 at 10k msg/s of 1 KiB", []check{
		{"infra/gateway", "GatewayPublishLatency/plaintext/gateway", "added_p50_ms", "<", 0.2},
		{"infra/gateway", "GatewayPublishLatency/tls/gateway", "added_p50_ms", "<", 0.2},
	}},
	// The gateway has no CPU target (issues #6 and #7 set some; the
	// project dropped them): its CPU per record is reported beside
	// Kroxylicious's (writeGatewayPeers) and in the table, not tuned.
	{27, "`xp analyse` of 100,000 runs, either shape (factorial 6 factors x 4 levels; a configuration id column), under 60 s and 2 GiB", []check{
		{"analysis/export", "Analyse100k/factorial_6x4", "s/analyse", "<", 60},
		{"analysis/export", "Analyse100k/factorial_6x4", "MiB_rss", "<", 2048},
		{"analysis/export", "Analyse100k/config_id_25000", "s/analyse", "<", 60},
		{"analysis/export", "Analyse100k/config_id_25000", "MiB_rss", "<", 2048},
	}},
	{35, "`xp plan power --effect 2%` on the README's tls-cost campaign under 10 s", []check{
		{"cmd/xp", "PlanPower/readme_tls_cost", "s/power", "<", 10},
	}},
	{39, "`xp explore` static site of 5,184 runs (histograms, 60 s series) under 50 MB; its effects page drawn in headless Chromium in under 2 s", []check{
		{"analysis/explore", "Explore5184", "MB_site", "<", 50},
		{"analysis/explore", "Explore5184", "s/effects_render", "<", 2},
	}},
	{39, "`xp explore` of 100,224 runs degrades gracefully: its effects, runs and run pages draw (paged tables, sampled series)", []check{
		{"analysis/explore", "Explore100k", "rendered", "==", 1},
	}},
	{23, "`xp loadgen --rate max` at least 90% of Kafka's ProducerPerformance (--throughput -1) on one Apache Kafka broker, plaintext and tls, 1 KiB, acks all", []check{
		{"runner/perftest", "ProducerPerformance/apache/plaintext/kafka_perf_test", "xp_%_of_perf_test", ">=", 90},
		{"runner/perftest", "ProducerPerformance/apache/tls/kafka_perf_test", "xp_%_of_perf_test", ">=", 90},
	}},
	{36, "each client (franz-go, java, librdkafka) within ±0.5% of 10k and 50k msg/s of 1 KiB on one Apache Kafka broker", []check{
		{"runner/perftest", "Clients/rate/franz-go/10k", "rate_err_%", "|x|<=", 0.5},
		{"runner/perftest", "Clients/rate/franz-go/50k", "rate_err_%", "|x|<=", 0.5},
		{"runner/perftest", "Clients/rate/java/10k", "rate_err_%", "|x|<=", 0.5},
		{"runner/perftest", "Clients/rate/java/50k", "rate_err_%", "|x|<=", 0.5},
		{"runner/perftest", "Clients/rate/librdkafka/10k", "rate_err_%", "|x|<=", 0.5},
		{"runner/perftest", "Clients/rate/librdkafka/50k", "rate_err_%", "|x|<=", 0.5},
	}},
	{36, "each client's send-delay p99 under 1 ms at those rates", []check{
		{"runner/perftest", "Clients/rate/franz-go/10k", "send_delay_p99_ms", "<", 1},
		{"runner/perftest", "Clients/rate/franz-go/50k", "send_delay_p99_ms", "<", 1},
		{"runner/perftest", "Clients/rate/java/10k", "send_delay_p99_ms", "<", 1},
		{"runner/perftest", "Clients/rate/java/50k", "send_delay_p99_ms", "<", 1},
		{"runner/perftest", "Clients/rate/librdkafka/10k", "send_delay_p99_ms", "<", 1},
		{"runner/perftest", "Clients/rate/librdkafka/50k", "send_delay_p99_ms", "<", 1},
	}},
	{36, "`client: java` at --rate max within ±10% of ProducerPerformance --payload-file (same settings, alternated, medians of 5 rounds)", []check{
		{"runner/perftest", "Clients/saturated/java_vs_perf_test", "java_minus_perf_test_%", "|x|<=", 10},
	}},
}

// holds reports whether v satisfies the check.
func (c check) holds(v float64) bool {
	switch c.op {
	case "<":
		return v < c.limit
	case ">=":
		return v >= c.limit
	case "|x|<=":
		return math.Abs(v) <= c.limit
	case "==":
		return v == c.limit
	}
	panic("xpbench: unknown check op " + c.op)
}

// verdict judges a target against the results: "met", "not met", or "no
// data" when a benchmark or metric is missing from this run. measured
// lists each checked value.
func (t target) verdict(rows []result) (measured, verdict string) {
	var parts []string
	failed, missing := false, false
	for _, c := range t.checks {
		v, ok := lookup(rows, c)
		switch {
		case !ok:
			missing = true
			parts = append(parts, fmt.Sprintf("%s: no %s", c.bench, c.unit))
		case !c.holds(v):
			failed = true
			parts = append(parts, fmt.Sprintf("%s: **%s %s**", c.bench, format(v), c.unit))
		default:
			parts = append(parts, fmt.Sprintf("%s: %s %s", c.bench, format(v), c.unit))
		}
	}
	switch {
	case failed:
		verdict = "**not met**"
	case missing:
		verdict = "no data"
	default:
		verdict = "met"
	}
	return strings.Join(parts, "; "), verdict
}

// lookup finds a check's metric; when a benchmark appears twice (-count),
// the last result counts.
func lookup(rows []result, c check) (float64, bool) {
	v, found := 0.0, false
	for _, r := range rows {
		if strings.TrimPrefix(r.pkg, modulePrefix) != c.pkg || r.name != "Benchmark"+c.bench {
			continue
		}
		for _, m := range r.metrics {
			if m.unit == c.unit {
				v, found = m.value, true
			}
		}
	}
	return v, found
}
