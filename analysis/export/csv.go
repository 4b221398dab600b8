// Package export writes an analysis result as files a researcher can use
// without xp: CSV tables, booktabs LaTeX, SVG figures with embedded fonts
// and a single self-contained HTML report. The same result gives the same
// bytes: nothing depends on time, map order or the machine.
package export

import (
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/xp-bench/xp/analysis"
)

// num formats a float for CSV: shortest exact form, empty for NaN.
func num(v float64) string {
	if math.IsNaN(v) {
		return ""
	}
	if math.IsInf(v, 1) {
		return "inf"
	}
	if math.IsInf(v, -1) {
		return "-inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func writeCSV(path string, header []string, rows [][]string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	w.Write(header)
	w.WriteAll(rows)
	if err := w.Error(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

// EffectsHeader is the exact column list of effects.csv. Columns are only
// ever added at the end: scripts read the others by name and position.
var EffectsHeader = []string{"treatment", "baseline", "metric", "scope", "n", "statistic", "unit",
	"estimate", "ci_low", "ci_high", "method", "p_value", "p_holm", "note",
	"test", "p_min", "bounded", "outlier_sets",
	"log_estimate", "log_se", "df", "holm_family", "fragile", "fragile_sets", "better_than_baseline", "driving_runs"}

// headlineCols are effects.csv's columns of the headline procedure: the
// mean log ratio, its standard error and degrees of freedom, the Holm
// family, and whether the row is fragile or says the treatment does
// better than the baseline (headline rows; empty on the others).
func headlineCols(e analysis.Effect) []string {
	if e.Statistic != analysis.StatGeoPenalty && e.Statistic != analysis.StatGeoRatio {
		return []string{"", "", "", "", "", "", "", ""}
	}
	fragile, better := "", ""
	if !math.IsNaN(e.Low) {
		fragile, better = strconv.FormatBool(e.Fragile), strconv.FormatBool(e.Better)
	}
	return []string{num(e.LogEstimate), num(e.LogSE), num(e.DF), e.Family, fragile, strings.Join(e.FragileSets, ";"), better, strings.Join(e.Drivers, ";")}
}

func effectsRows(res *analysis.Result) [][]string {
	rows := make([][]string, 0, len(res.Effects))
	for _, e := range res.Effects {
		rows = append(rows, effectRow(e))
	}
	return rows
}

// effectRow is one line of effects.csv.
func effectRow(e analysis.Effect) []string {
	bounded := ""
	if !math.IsNaN(e.Low) {
		bounded = strconv.FormatBool(!e.Unbounded)
	}
	return append([]string{e.Treatment, e.Baseline, e.Metric, e.Scope, strconv.Itoa(e.N),
		e.Statistic, e.Unit, num(e.Estimate), num(e.Low), num(e.High), e.Method, num(e.P), num(e.PHolm), e.Note,
		e.Test, num(e.PMin), bounded, strconv.Itoa(e.OutlierSets)}, headlineCols(e)...)
}

// RunsHeader returns the columns of runs.csv: identity, factors, outcome,
// reasons, error, the record layer and cipher the gateway ran, the TLS
// legs crypto/tls kept instead of tlsrec, the metrics for which the run is
// flagged as an outlier (joined by ";"), the hosts whose telemetry covers
// less than the measured window, the broker software measured (broker:
// "apache 4.1.0" or "kfake VERSION") and Apache Kafka's Java runtime and
// JVM flags (broker_runtime), then every metric (the analysed ones first,
// others by name). A metric named like an earlier column (target_rate,
// which the load generator also reports) is left out: the column is the
// row's setting, and a name appears once.
func RunsHeader(res *analysis.Result) (header, metrics []string) {
	d := res.Dataset
	header = []string{"run", "cell", "pair", "replicate", "attempt", "final", "saturating"}
	header = append(header, d.Factors...)
	header = append(header, "outcome", "reasons", "error", "gateway_record_layer", "gateway_cipher", "gateway_tls_kept", "outliers", "telemetry_gaps", "broker", "broker_runtime")
	seen := map[string]bool{}
	for _, h := range header {
		seen[h] = true
	}
	for _, m := range d.Metrics {
		if seen[m.Name] {
			continue
		}
		metrics = append(metrics, m.Name)
		seen[m.Name] = true
	}
	var extra []string
	for _, r := range d.Runs {
		for k := range r.Metrics {
			if !seen[k] {
				seen[k] = true
				extra = append(extra, k)
			}
		}
	}
	slices.Sort(extra)
	metrics = append(metrics, extra...)
	return append(header, metrics...), metrics
}

func runsRows(res *analysis.Result, metrics []string) [][]string {
	var rows [][]string
	for _, r := range res.Dataset.Runs {
		row := []string{r.Run, r.Cell, r.Pair, strconv.Itoa(r.Replicate), strconv.Itoa(r.Attempt),
			strconv.FormatBool(r.Final), strconv.FormatBool(r.Saturating)}
		row = append(row, r.Factors...)
		for len(row) < 7+len(res.Dataset.Factors) {
			row = append(row, "")
		}
		outcome := r.Outcome
		if outcome == "" {
			outcome = "pending"
		}
		row = append(row, outcome, strings.Join(r.Reasons, "; "), r.Error, r.GatewayRecordLayer, r.GatewayCipher, r.GatewayTLSKept,
			strings.Join(r.Outliers, ";"), r.TelemetryGaps, r.Broker, r.BrokerRuntime)
		for _, m := range metrics {
			if v, ok := r.Metrics[m]; ok {
				row = append(row, num(v))
			} else {
				row = append(row, "")
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// SensitivityHeader is the column list of sensitivity.csv: one row per
// level of a factor, carrying its factor's F-test.
var SensitivityHeader = []string{"treatment", "baseline", "metric", "scope", "factor", "level", "n", "cells",
	"mean_penalty", "ci_low", "ci_high", "method", "spread", "factor_rank", "df", "df_resid", "ss", "f", "p_value", "share", "r2", "note"}

func sensitivityRows(res *analysis.Result) [][]string {
	type k struct{ tr, metric, scope, factor string }
	terms := map[k]analysis.FactorTerm{}
	for _, t := range res.Terms {
		terms[k{t.Treatment, t.Metric, t.Scope, t.Factor}] = t
	}
	type mk struct{ tr, metric, scope string }
	models := map[mk]analysis.FactorModel{}
	for _, m := range res.Models {
		models[mk{m.Treatment, m.Metric, m.Scope}] = m
	}
	var rows [][]string
	for _, s := range res.Sensitivity {
		row := []string{s.Treatment, res.Levels[0], s.Metric, s.Scope, s.Factor, s.Level, strconv.Itoa(s.N),
			strconv.Itoa(s.Cells), num(s.Mean), num(s.Low), num(s.High), s.Method, num(s.Spread)}
		note := s.Note
		if t, ok := terms[k{s.Treatment, s.Metric, s.Scope, s.Factor}]; ok && t.Note != "" {
			row = append(row, "", "", "", "", "", "", "", "")
			note = strings.TrimPrefix(note+"; "+t.Note, "; ")
		} else if ok {
			m := models[mk{s.Treatment, s.Metric, s.Scope}]
			row = append(row, strconv.Itoa(t.Rank), strconv.Itoa(t.DF), strconv.Itoa(m.DFResid), num(t.SS), num(t.F), num(t.P), num(t.Share), num(m.R2))
		} else {
			row = append(row, "", "", "", "", "", "", "", "")
		}
		row = append(row, note)
		rows = append(rows, row)
	}
	// Factors not fitted without level rows (a configuration id): one row
	// each says why.
	type fk struct{ tr, metric, scope, factor string }
	leveled := map[fk]bool{}
	for _, s := range res.Sensitivity {
		leveled[fk{s.Treatment, s.Metric, s.Scope, s.Factor}] = true
	}
	for _, t := range res.Terms {
		if t.Note == "" || leveled[fk{t.Treatment, t.Metric, t.Scope, t.Factor}] {
			continue
		}
		row := []string{t.Treatment, res.Levels[0], t.Metric, t.Scope, t.Factor, "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", t.Note}
		rows = append(rows, row)
	}
	return rows
}

func cellsTable(res *analysis.Result) (header []string, rows [][]string) {
	header = append([]string{"pair"}, res.CellFactors...)
	header = append(header, "saturating")
	for _, tr := range res.Treatments {
		header = append(header, "healthy_sets_"+tr, "excluded_sets_"+tr)
	}
	for _, c := range res.Cells {
		row := append([]string{c.Pair}, c.Factors...)
		row = append(row, strconv.FormatBool(c.Saturating))
		for i := range res.Treatments {
			row = append(row, strconv.Itoa(c.Healthy[i]), strconv.Itoa(c.Excluded[i]))
		}
		rows = append(rows, row)
	}
	return header, rows
}

var significanceHeader = []string{"treatment", "baseline", "metric", "scope", "pair", "n", "mean_difference",
	"dz", "wilcoxon_t", "exact", "p_value", "p_holm", "test", "holm_family", "p_wilcoxon"}

func significanceRows(res *analysis.Result) [][]string {
	var rows [][]string
	for _, t := range res.Tests {
		rows = append(rows, []string{t.Treatment, res.Levels[0], t.Metric, t.Scope, t.Pair, strconv.Itoa(t.N),
			num(t.MeanDifference), num(t.Dz), num(t.T), strconv.FormatBool(t.Exact), num(t.P), num(t.PHolm), t.Test, t.Family, num(t.PWilcoxon)})
	}
	return rows
}

var excludedHeader = []string{"treatment", "baseline", "pair", "replicate", "reasons"}

func excludedRows(res *analysis.Result) [][]string {
	var rows [][]string
	for _, e := range res.Excluded {
		rows = append(rows, []string{e.Treatment, res.Levels[0], e.Pair, strconv.Itoa(e.Replicate), strings.Join(e.Reasons, " | ")})
	}
	return rows
}

var latencyHeader = []string{"pair", "kind", "level", "runs", "percentile", "ms"}

func latencyRows(res *analysis.Result) [][]string {
	var rows [][]string
	for _, c := range res.Curves {
		for _, p := range c.Points {
			rows = append(rows, []string{c.Pair, c.Kind, c.Level, strconv.Itoa(c.Runs), num(p.Percentile), num(p.Ms)})
		}
	}
	return rows
}

// writeCSVs writes every CSV file into dir.
func writeCSVs(dir string, res *analysis.Result) error {
	header, metrics := RunsHeader(res)
	if err := writeCSV(filepath.Join(dir, "runs.csv"), header, runsRows(res, metrics)); err != nil {
		return err
	}
	if err := writeCSV(filepath.Join(dir, "excluded.csv"), excludedHeader, excludedRows(res)); err != nil {
		return err
	}
	if len(res.Levels) == 0 {
		return nil // partial result: nothing was estimated
	}
	ch, cr := cellsTable(res)
	files := []struct {
		name   string
		header []string
		rows   [][]string
	}{
		{"effects.csv", EffectsHeader, effectsRows(res)},
		{"sensitivity.csv", SensitivityHeader, sensitivityRows(res)},
		{"cells.csv", ch, cr},
		{"significance.csv", significanceHeader, significanceRows(res)},
		{"latency.csv", latencyHeader, latencyRows(res)},
		{"percentiles.csv", percentilesHeader, percentilesRows(res)},
		{"telemetry.csv", telemetryHeader, telemetryRows(res)},
	}
	for _, f := range files {
		if err := writeCSV(filepath.Join(dir, f.name), f.header, f.rows); err != nil {
			return err
		}
	}
	return writeTwoStageCSV(dir, res)
}

// telemetryHeader is the column list of telemetry.csv: per configuration,
// treatment level and host role, the role's hosts over the healthy final
// attempts' measured windows (analysis.RoleUse).
var telemetryHeader = []string{"pair", "level", "role", "hosts", "attempts", "cpu_cores", "mem_max_mib",
	"net_rx_mib_s", "net_tx_mib_s", "disk_read_mib_s", "disk_write_mib_s"}

func telemetryRows(res *analysis.Result) [][]string {
	var rows [][]string
	for _, u := range res.Telemetry {
		rows = append(rows, []string{u.Pair, u.Level, u.Role, strings.Join(u.Hosts, ";"), strconv.Itoa(u.Attempts),
			num(u.CPUCores), num(u.MemMaxMiB), num(u.NetRxMiBs), num(u.NetTxMiBs), num(u.DiskReadMiBs), num(u.DiskWriteMiBs)})
	}
	return rows
}

// percentilesHeader is the column list of percentiles.csv: per
// configuration and latency percentile, whether its runs hold the samples
// the percentile needs (10/(1-q)).
var percentilesHeader = []string{"pair", "metric", "needs_samples", "runs", "runs_supported", "min_samples", "supported"}

func percentilesRows(res *analysis.Result) [][]string {
	var rows [][]string
	for _, p := range res.Percentiles {
		rows = append(rows, []string{p.Pair, p.Metric, strconv.Itoa(p.Needs), strconv.Itoa(p.Runs),
			strconv.Itoa(p.Supported), strconv.Itoa(p.MinSamples), strconv.FormatBool(p.Supported == p.Runs)})
	}
	return rows
}

// supportSummary lists, per configuration, the percentiles all its runs
// support and those some do not.
func supportSummary(res *analysis.Result) (header []string, rows [][]string) {
	header = []string{"pair", "supported percentiles", "not supported (fewest samples / needed)"}
	for i := 0; i < len(res.Percentiles); {
		e := i
		var yes, no []string
		for e < len(res.Percentiles) && res.Percentiles[e].Pair == res.Percentiles[i].Pair {
			p := res.Percentiles[e]
			if p.Supported == p.Runs {
				yes = append(yes, p.Metric)
			} else {
				no = append(no, fmt.Sprintf("%s (%d / %d)", p.Metric, p.MinSamples, p.Needs))
			}
			e++
		}
		rows = append(rows, []string{res.Percentiles[i].Pair, strings.Join(yes, " "), strings.Join(no, " ")})
		i = e
	}
	return header, rows
}
