package analysis

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ImportOptions configure `xp import`.
type ImportOptions struct {
	// Treatment names the compared factor: for OMB results "driver"
	// (default) or "workload"; for CSV, a column (required).
	Treatment string
	// Baseline is the reference level; default: the level of the first
	// row read.
	Baseline string
	// Metrics are CSV metric columns as NAME or NAME:higher (larger is
	// better); required for CSV, ignored for OMB.
	Metrics []string
	// Campaign names the campaign; default: the db file name.
	Campaign  string
	XPVersion string
	// Created is recorded as the import time; default now.
	Created time.Time
}

// Errors callers branch on.
var (
	// ErrImportShape: a file is neither an OMB result nor a CSV with a header.
	ErrImportShape = errors.New("unknown import file shape")
	// ErrImportOption: a missing or bad import option.
	ErrImportOption = errors.New("bad import option")
)

// ImportError is bad import input, naming the file and what was expected.
type ImportError struct {
	File string
	Line int // 0 when not about one line
	Msg  string
	Err  error
}

func (e *ImportError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

func (e *ImportError) Unwrap() error { return e.Err }

// ombShape is the message for a file of unknown shape.
const ombShape = "neither an OpenMessaging Benchmark result (a JSON object with aggregatedPublishLatency99pct, " +
	"aggregatedEndToEndLatency99pct, publishRate, consumeRate, workload, driver) nor a per-run CSV (a header row " +
	"with the --treatment column and every --metric column)"

// Import reads outside evidence (OpenMessaging Benchmark result JSON, or a
// per-run CSV) and stores it as a new campaign database at db, analysable
// like a native one. Every file must have the same format.
func Import(ctx context.Context, db string, files []string, o ImportOptions) (*Dataset, error) {
	if len(files) == 0 {
		return nil, fmt.Errorf("%w: no files to import: give OMB result JSON or per-run CSV files", ErrImportOption)
	}
	var format string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		ff := sniff(b)
		if ff == "" {
			return nil, &ImportError{File: f, Msg: ombShape, Err: ErrImportShape}
		}
		if format != "" && ff != format {
			return nil, &ImportError{File: f, Msg: fmt.Sprintf("is %s but %s is %s: import one format at a time", ff, files[0], format), Err: ErrImportShape}
		}
		format = ff
	}
	if o.Campaign == "" {
		o.Campaign = strings.TrimSuffix(filepath.Base(db), filepath.Ext(db))
	}
	var d *Dataset
	var err error
	if format == "omb" {
		d, err = importOMB(files, &o)
	} else {
		d, err = importCSV(files, &o)
	}
	if err != nil {
		return nil, err
	}
	spec := ImportSpec{Format: format, Treatment: d.Treatment, Baseline: d.Baseline, Metrics: d.Metrics}
	for _, f := range files {
		spec.Files = append(spec.Files, filepath.Base(f))
	}
	sb, _ := json.MarshalIndent(map[string]any{"import": spec}, "", "  ")
	if err := Save(ctx, db, d, SaveOptions{Spec: string(sb), Target: "import", XPVersion: o.XPVersion, Created: o.Created}); err != nil {
		return nil, err
	}
	return d, nil
}

// sniff returns "omb", "csv" or "".
func sniff(b []byte) string {
	t := bytes.TrimSpace(b)
	if len(t) > 0 && t[0] == '{' {
		var m map[string]json.RawMessage
		if json.Unmarshal(t, &m) != nil {
			return ""
		}
		for _, k := range []string{"aggregatedPublishLatency99pct", "aggregatedEndToEndLatency99pct", "publishRate"} {
			if _, ok := m[k]; ok {
				return "omb"
			}
		}
		return ""
	}
	r := csv.NewReader(bytes.NewReader(b))
	header, err := r.Read()
	if err != nil || len(header) < 2 {
		return ""
	}
	if _, err := r.Read(); err != nil && err != io.EOF {
		return ""
	}
	return "csv"
}

// campaignSeed derives a seed from the campaign name.
func campaignSeed(name string) int64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return int64(h.Sum64() & math.MaxInt64)
}

// ombMetrics maps OMB aggregate fields to xp metrics (OMB reports
// latencies in ms, publish delay in µs).
var ombMetrics = []struct {
	field, metric string
	scale         float64
}{
	{"aggregatedPublishLatency50pct", "publish_ms_p50", 1},
	{"aggregatedPublishLatency95pct", "publish_ms_p95", 1},
	{"aggregatedPublishLatency99pct", "publish_ms_p99", 1},
	{"aggregatedPublishLatency999pct", "publish_ms_p999", 1},
	{"aggregatedPublishLatency9999pct", "publish_ms_p9999", 1},
	{"aggregatedEndToEndLatency50pct", "e2e_ms_p50", 1},
	{"aggregatedEndToEndLatency95pct", "e2e_ms_p95", 1},
	{"aggregatedEndToEndLatency99pct", "e2e_ms_p99", 1},
	{"aggregatedEndToEndLatency999pct", "e2e_ms_p999", 1},
	{"aggregatedEndToEndLatency9999pct", "e2e_ms_p9999", 1},
	{"aggregatedPublishDelayLatency99pct", "send_delay_ms_p99", 0.001},
}

// ombFactors are the OMB result fields that describe the setting.
var ombFactors = []string{"workload", "driver", "messageSize", "topics", "partitions", "producersPerTopic", "consumersPerTopic"}

func importOMB(files []string, o *ImportOptions) (*Dataset, error) {
	if o.Treatment == "" {
		o.Treatment = "driver"
	}
	if o.Treatment != "driver" && o.Treatment != "workload" {
		return nil, fmt.Errorf("%w: --treatment %q: for OpenMessaging Benchmark results it is driver or workload", ErrImportOption, o.Treatment)
	}
	d := &Dataset{Campaign: o.Campaign, Seed: campaignSeed(o.Campaign), Treatment: o.Treatment}
	d.Metrics = []MetricDef{{Name: "publish_rate", Unit: "msg/s", Higher: true}, {Name: "consume_rate", Unit: "msg/s", Higher: true}}
	for _, m := range ombMetrics {
		d.Metrics = append(d.Metrics, MetricDef{Name: m.metric, Unit: "ms"})
	}
	var recs []csvRecord
	present := map[string]bool{}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, &ImportError{File: f, Msg: "invalid JSON: " + err.Error(), Err: ErrImportShape}
		}
		rec := csvRecord{file: f, factors: map[string]string{}, metrics: map[string]float64{}}
		for _, k := range ombFactors {
			if v, ok := m[k]; ok {
				rec.factors[k] = canonical(v)
				present[k] = true
			}
		}
		if rec.factors[o.Treatment] == "" {
			return nil, &ImportError{File: f, Msg: fmt.Sprintf("has no %q field to use as the treatment", o.Treatment), Err: ErrImportShape}
		}
		for _, mm := range ombMetrics {
			if v, ok := m[mm.field]; ok {
				var x float64
				if json.Unmarshal(v, &x) == nil {
					rec.metrics[mm.metric] = x * mm.scale
				}
			}
		}
		for _, k := range []struct{ field, metric string }{{"publishRate", "publish_rate"}, {"consumeRate", "consume_rate"}} {
			if v, ok := m[k.field]; ok {
				var xs []float64
				if json.Unmarshal(v, &xs) == nil && len(xs) > 0 {
					var s float64
					for _, x := range xs {
						s += x
					}
					rec.metrics[k.metric] = s / float64(len(xs))
				}
			}
		}
		recs = append(recs, rec)
	}
	for _, k := range ombFactors {
		if present[k] {
			d.Factors = append(d.Factors, k)
		}
	}
	return buildImported(d, recs, o, false)
}

// csvRecord is one imported run before identities are assigned.
type csvRecord struct {
	file      string
	line      int
	factors   map[string]string
	metrics   map[string]float64
	pair      string
	replicate int
	outcome   string
}

func parseMetricFlags(specs []string) ([]MetricDef, error) {
	var out []MetricDef
	for _, s := range specs {
		name, dir, _ := strings.Cut(s, ":")
		if name == "" || (dir != "" && dir != "higher" && dir != "lower") {
			return nil, fmt.Errorf("%w: --metric %q: want NAME or NAME:higher (larger is better)", ErrImportOption, s)
		}
		unit := "value"
		switch {
		case strings.Contains(name, "_ms"):
			unit = "ms"
		case strings.HasSuffix(name, "_rate"):
			unit = "msg/s"
		}
		out = append(out, MetricDef{Name: name, Unit: unit, Higher: dir == "higher"})
	}
	return out, nil
}

func importCSV(files []string, o *ImportOptions) (*Dataset, error) {
	if o.Treatment == "" {
		return nil, fmt.Errorf("%w: --treatment COLUMN is required for a CSV import: the column whose levels are compared", ErrImportOption)
	}
	metrics, err := parseMetricFlags(o.Metrics)
	if err != nil {
		return nil, err
	}
	if len(metrics) == 0 {
		return nil, fmt.Errorf("%w: --metric NAME[:higher] is required for a CSV import (repeat it for every metric column)", ErrImportOption)
	}
	d := &Dataset{Campaign: o.Campaign, Seed: campaignSeed(o.Campaign), Treatment: o.Treatment, Metrics: metrics}
	isMetric := map[string]bool{}
	for _, m := range metrics {
		isMetric[m.Name] = true
	}
	var recs []csvRecord
	explicitPair, explicitRep := false, false
	for fi, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return nil, err
		}
		r := csv.NewReader(fh)
		r.FieldsPerRecord = 0
		header, err := r.Read()
		if err != nil {
			fh.Close()
			return nil, &ImportError{File: f, Line: 1, Msg: "want a header row: " + err.Error(), Err: ErrImportShape}
		}
		col := map[string]int{}
		for i, h := range header {
			h = strings.TrimSpace(h)
			if _, dup := col[h]; dup {
				fh.Close()
				return nil, &ImportError{File: f, Line: 1, Msg: fmt.Sprintf("column %q appears twice", h), Err: ErrImportShape}
			}
			col[h] = i
		}
		var missing []string
		if _, ok := col[o.Treatment]; !ok {
			missing = append(missing, o.Treatment+" (--treatment)")
		}
		for _, m := range metrics {
			if _, ok := col[m.Name]; !ok {
				missing = append(missing, m.Name+" (--metric)")
			}
		}
		if len(missing) > 0 {
			fh.Close()
			return nil, &ImportError{File: f, Line: 1, Msg: fmt.Sprintf("header lacks column(s) %s; it has: %s",
				strings.Join(missing, ", "), strings.Join(header, ", ")), Err: ErrImportShape}
		}
		_, hasPair := col["pair"]
		_, hasRep := col["replicate"]
		if fi == 0 {
			explicitPair, explicitRep = hasPair, hasRep
		} else if hasPair != explicitPair || hasRep != explicitRep {
			fh.Close()
			return nil, &ImportError{File: f, Line: 1, Msg: "pair/replicate columns differ from " + files[0], Err: ErrImportShape}
		}
		for i, h := range header {
			h = strings.TrimSpace(h)
			if isMetric[h] || h == "pair" || h == "replicate" || h == "outcome" {
				continue
			}
			if !slices.Contains(d.Factors, h) {
				d.Factors = append(d.Factors, h)
			}
			_ = i
		}
		line := 1
		for {
			rec, err := r.Read()
			if err == io.EOF {
				break
			}
			line++
			if err != nil {
				fh.Close()
				return nil, &ImportError{File: f, Line: line, Msg: err.Error(), Err: ErrImportShape}
			}
			cr := csvRecord{file: f, line: line, factors: map[string]string{}, metrics: map[string]float64{}}
			for i, h := range header {
				h = strings.TrimSpace(h)
				v := strings.TrimSpace(rec[i])
				switch {
				case isMetric[h]:
					if v == "" {
						continue
					}
					x, err := strconv.ParseFloat(v, 64)
					if err != nil {
						fh.Close()
						return nil, &ImportError{File: f, Line: line, Msg: fmt.Sprintf("metric %s: %q is not a number", h, v)}
					}
					cr.metrics[h] = x
				case h == "pair":
					cr.pair = v
				case h == "replicate":
					n, err := strconv.Atoi(v)
					if err != nil || n < 1 {
						fh.Close()
						return nil, &ImportError{File: f, Line: line, Msg: fmt.Sprintf("replicate %q: want a positive integer", v)}
					}
					cr.replicate = n
				case h == "outcome":
					cr.outcome = v
				default:
					cr.factors[h] = v
				}
			}
			if cr.factors[o.Treatment] == "" {
				fh.Close()
				return nil, &ImportError{File: f, Line: line, Msg: fmt.Sprintf("empty treatment column %s", o.Treatment)}
			}
			recs = append(recs, cr)
		}
		fh.Close()
	}
	if len(recs) == 0 {
		return nil, &ImportError{File: files[0], Msg: "no data rows after the header", Err: ErrImportShape}
	}
	return buildImported(d, recs, o, explicitRep)
}

// buildImported assigns identities: the pair is the given pair column or
// the hash of every factor but the treatment; replicates are given or
// numbered in file order per pair and level.
func buildImported(d *Dataset, recs []csvRecord, o *ImportOptions, explicitRep bool) (*Dataset, error) {
	if o.Baseline == "" {
		o.Baseline = recs[0].factors[d.Treatment]
	}
	d.Baseline = o.Baseline
	next := map[string]int{}
	seen := map[string]string{}
	for _, rec := range recs {
		others := map[string]string{}
		for _, f := range d.Factors {
			if f != d.Treatment {
				others[f] = rec.factors[f]
			}
		}
		pair := rec.pair
		if pair == "" {
			pair = identity(others)
		}
		all := map[string]string{"pair": pair, d.Treatment: rec.factors[d.Treatment]}
		if rec.pair == "" {
			all = map[string]string{d.Treatment: rec.factors[d.Treatment]}
			for k, v := range others {
				all[k] = v
			}
		}
		cell := identity(all)
		rep := rec.replicate
		if !explicitRep {
			next[cell]++
			rep = next[cell]
		}
		run := fmt.Sprintf("%s-r%d", cell, rep)
		where := rec.file
		if rec.line > 0 {
			where = fmt.Sprintf("%s:%d", rec.file, rec.line)
		}
		if prev, dup := seen[run]; dup {
			return nil, &ImportError{File: rec.file, Line: rec.line,
				Msg: fmt.Sprintf("duplicate run: %s %s replicate %d was already given at %s", d.Treatment, rec.factors[d.Treatment], rep, prev)}
		}
		seen[run] = where
		outcome := rec.outcome
		if outcome == "" {
			outcome = OutcomeDone
		}
		switch outcome {
		case OutcomeDone, OutcomeInvalid, OutcomeFailed:
		default:
			return nil, &ImportError{File: rec.file, Line: rec.line, Msg: fmt.Sprintf("outcome %q: want done, invalid or failed", outcome)}
		}
		r := Run{Run: run, Cell: cell, Pair: pair, Replicate: rep, Attempt: 1, Final: true, Outcome: outcome,
			Metrics: rec.metrics, Saturating: rec.factors["target_rate"] == "max"}
		for _, f := range d.Factors {
			r.Factors = append(r.Factors, rec.factors[f])
		}
		d.Runs = append(d.Runs, r)
	}
	levels := map[string]bool{}
	for _, r := range d.Runs {
		levels[r.Factors[slices.Index(d.Factors, d.Treatment)]] = true
	}
	if !levels[d.Baseline] {
		var ls []string
		for l := range levels {
			ls = append(ls, l)
		}
		slices.Sort(ls)
		return nil, &BaselineError{Baseline: d.Baseline, Treatment: d.Treatment, Levels: ls}
	}
	return d, nil
}
