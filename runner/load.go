package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/results"
	"github.com/xp-bench/xp/runner/loadgen"
)

// loadConfig is the load generator configuration of a row, without the
// endpoint's bootstrap servers and client properties.
func loadConfig(row *planner.Row, o Options) loadgen.Config {
	rate := int64(row.TargetRate)
	if row.TargetRate.IsMax() {
		rate = 0
	}
	return loadgen.Config{
		Mode:              row.Security,
		Topics:            row.Topics,
		Partitions:        row.Partitions,
		ReplicationFactor: row.ReplicationFactor,
		MinInsyncReplicas: row.MinInsyncReplicas,
		MessageSize:       row.MessageSize,
		Rate:              rate,
		Concurrency:       row.Concurrency,
		Producers:         row.Producers,
		ConsumerGroups:    row.ConsumerGroups,
		ConsumersPerGroup: row.ConsumersPerGroup,
		Acks:              row.Acks,
		LingerMs:          row.LingerMs,
		BatchBytes:        row.BatchBytes,
		Compression:       row.Compression,
		Encoding:          row.Encoding,
		Warmup:            time.Duration(row.WarmupS) * time.Second,
		Duration:          time.Duration(row.DurationS) * time.Second,
		DrainTimeout:      time.Duration(row.DrainTimeoutS) * time.Second,
		Seed:              rowSeed(row),
		Client:            row.Client,
		JavaClient:        o.JavaClient,
		RdkafkaClient:     o.RdkafkaClient,
		JVMOpts:           o.JVMOpts,
		TLSVersion:        row.TLSVersion,
		TLSCipher:         row.TLSCipher,
		SASLMechanism:     row.SASLMechanism,
		ConnectionChurn:   row.ConnectionChurn,
	}
}

// checkLoad validates a row's load generator settings before anything
// starts (endpoints come later, so placeholders stand in for them).
func checkLoad(row *planner.Row, o Options) error {
	cfg := loadConfig(row, o)
	cfg.Bootstrap, cfg.ClientConfig = []string{"127.0.0.1:9"}, map[string]string{}
	return cfg.WithDefaults().Validate()
}

// runLoad runs one row's load against ep: on the target's own clients when
// it is a target.LoadRunner, else in this process.
// warmup marks a group's warm-up load (target.Load.Warmup).
func (r *run) runLoad(ctx context.Context, row planner.Row, ep target.Endpoint, onPhase func(string, time.Time), warmup bool) (*loadgen.Result, error) {
	cfg := loadConfig(&row, r.o)
	cfg.Bootstrap, cfg.OnPhase = ep.Bootstrap, onPhase
	l := target.Load{Row: &row, Endpoint: ep, Config: cfg, Warmup: warmup}
	if lr, ok := r.target.(target.LoadRunner); ok {
		return lr.RunLoad(ctx, l)
	}
	return target.RunLoadHere(ctx, l)
}

// histogramFailure marks an attempt failed for a histogram that cannot be
// stored, keeping its other evidence.
func histogramFailure(ev results.Evidence, kind string, second int, err error) results.Evidence {
	ev.Histograms = nil
	ev.Outcome = results.OutcomeFailed
	ev.Error = fmt.Sprintf("load generator histogram %s second %d: %v", kind, second, err)
	return ev
}

// evidenceOf turns a load run into an attempt's evidence: outcome by the
// health gate, metrics, histograms (raw V2-compressed, see
// results.DecodeHistogram; per-second ones at results.PerSecondDigits),
// series, telemetry, and the load generator's JSON (without histograms) as
// a log.
func evidenceOf(res *loadgen.Result, runErr error, samples []results.Sample) results.Evidence {
	ev := results.Evidence{Telemetry: samples, Metrics: map[string]float64{}}
	m := ev.Metrics
	if rss, ok := maxOf(samples, target.HostClient, MetricRSS); ok {
		m["client_rss_max_mib"] = rss
	}
	if res == nil {
		ev.Outcome = results.OutcomeFailed
		ev.Error = fmt.Sprint(runErr)
		return ev
	}
	m["target_rate"] = float64(res.TargetRate)
	m["publish_rate"] = res.PublishRate
	m["consume_rate"] = res.ConsumeRate
	m["published"] = float64(res.Published)
	m["consumed"] = float64(res.Consumed)
	m["errors"] = float64(res.Errors)
	m["backlog_max"] = float64(res.BacklogMax)
	m["drain_s"] = res.DrainS
	m["client_cpu_s"] = res.ClientCPUS
	if res.Published > 0 {
		m["client_cpu_us_per_msg"] = res.ClientCPUS * 1e6 / float64(res.Published)
	}
	if s := res.Scheduling; s != nil {
		m["pacer_wait_ms"] = s.PacerWaitMs
		m["host_steal_pct"] = s.StealPct
	}
	if res.ClientRSSMaxMiB > m["client_rss_max_mib"] {
		m["client_rss_max_mib"] = res.ClientRSSMaxMiB
	}
	for _, l := range []struct {
		prefix string
		p      loadgen.Percentiles
	}{{"publish_ms", res.PublishLatencyMs}, {"e2e_ms", res.E2ELatencyMs}, {"send_delay_ms", res.SendDelayMs}} {
		p := l.p
		for k, v := range map[string]float64{"p50": p.P50, "p75": p.P75, "p90": p.P90, "p95": p.P95,
			"p99": p.P99, "p999": p.P999, "p9999": p.P9999, "max": p.Max, "mean": p.Mean} {
			m[l.prefix+"_"+k] = v
		}
	}
	if c := res.Connections; c != nil && c.Churn > 0 {
		m["reconnects"] = float64(c.Reconnects)
		m["handshakes"] = float64(c.Handshakes)
		m["handshakes_per_s"] = c.HandshakesPerS
		p := c.ReconnectMs
		for k, v := range map[string]float64{"p50": p.P50, "p90": p.P90, "p99": p.P99, "max": p.Max, "mean": p.Mean} {
			m["reconnect_ms_"+k] = v
		}
	}
	for _, h := range []struct {
		kind string
		data string
	}{{results.KindPublish, res.Histograms.Publish}, {results.KindE2E, res.Histograms.E2E},
		{results.KindSendDelay, res.Histograms.SendDelay}} {
		if h.data != "" {
			blob, err := results.HistogramBlob([]byte(h.data))
			if err != nil {
				return histogramFailure(ev, h.kind, results.WholeRun, err)
			}
			ev.Histograms = append(ev.Histograms, results.Histogram{Kind: h.kind, Second: results.WholeRun, Data: blob})
		}
	}
	for _, iv := range res.Intervals {
		for _, h := range []struct {
			kind string
			data []byte
		}{{results.KindPublish, iv.Publish}, {results.KindE2E, iv.E2E}, {results.KindSendDelay, iv.SendDelay}} {
			if len(h.data) > 0 {
				blob, err := results.HistogramBlob(h.data)
				if err == nil {
					blob, err = results.CoarsenHistogram(blob, results.PerSecondDigits)
				}
				if err != nil {
					return histogramFailure(ev, h.kind, iv.Second, err)
				}
				ev.Histograms = append(ev.Histograms, results.Histogram{Kind: h.kind, Second: iv.Second, Data: blob})
			}
		}
	}
	for _, p := range res.Series {
		ev.Series = append(ev.Series, results.SeriesPoint{Second: p.Second, Published: p.Published,
			Consumed: p.Consumed, Backlog: p.Backlog})
	}
	// Keep loadgen's own JSON, minus the histograms stored above.
	doc := *res
	doc.Histograms = loadgen.Histograms{}
	if b, err := json.Marshal(&doc); err == nil {
		ev.Logs = append(ev.Logs, results.Log{Name: "loadgen.json", Text: b})
	}
	switch {
	case runErr != nil:
		ev.Outcome, ev.Error, ev.Reasons = results.OutcomeFailed, runErr.Error(), res.Reasons
	case res.Healthy:
		ev.Outcome = results.OutcomeDone
	default:
		ev.Outcome, ev.Reasons = results.OutcomeInvalid, res.Reasons
		if len(ev.Reasons) == 0 {
			ev.Reasons = []string{"the load generator reported the run unhealthy without a reason"}
		}
	}
	return ev
}
