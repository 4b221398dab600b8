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
	// Levels give OMB result files their treatment level instead of the
	// value of their driver (or workload) field, as LEVEL=PATTERN: files
	// whose path or base name matches the filepath.Match PATTERN take
	// LEVEL. With any Levels, every file must match exactly one level.
	Levels []string
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
	if format == "csv" && len(o.Levels) > 0 {
		return nil, fmt.Errorf("%w: --level is for OpenMessaging Benchmark results; a CSV gives each run's level in its --treatment column", ErrImportOption)
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
	levelOf, err := fileLevels(files, o.Levels)
	if err != nil {
		return nil, err
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
		if l, ok := levelOf[f]; ok {
			rec.factors[o.Treatment] = l
			present[o.Treatment] = true
		}
		if rec.factors[o.Treatment] == "" {
			return nil, &ImportError{File: f, Msg: fmt.Sprintf("has no %q field to use as the treatment: give its level with --level LEVEL=%s", o.Treatment, filepath.Base(f)), Err: ErrImportShape}
		}
		for _, mm := range ombMetrics {
			x, ok, err := ombNumber(b, m, mm.field)
			if err != nil {
				return nil, &ImportError{File: f, Line: err.line, Msg: err.msg}
			}
			if ok {
				rec.metrics[mm.metric] = x * mm.scale
			}
		}
		series, err := ombSeries(f, b, m)
		if err != nil {
			return nil, err
		}
		rec.series = series.points
		if series.samples > 0 {
			rec.metrics["publish_rate"] = series.publish
			rec.metrics["consume_rate"] = series.consume
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

// fileLevels matches each file against --level LEVEL=PATTERN flags.
func fileLevels(files, flags []string) (map[string]string, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	type lp struct{ level, pattern string }
	var lps []lp
	for _, fl := range flags {
		l, p, ok := strings.Cut(fl, "=")
		if !ok || l == "" || p == "" {
			return nil, fmt.Errorf("%w: --level %q: want LEVEL=FILE or LEVEL=PATTERN, e.g. --level tls='ssl-*.json'", ErrImportOption, fl)
		}
		if _, err := filepath.Match(p, ""); err != nil {
			return nil, fmt.Errorf("%w: --level %q: bad pattern: %v", ErrImportOption, fl, err)
		}
		lps = append(lps, lp{l, p})
	}
	out := map[string]string{}
	for _, f := range files {
		for _, x := range lps {
			m1, _ := filepath.Match(x.pattern, f)
			m2, _ := filepath.Match(x.pattern, filepath.Base(f))
			if !m1 && !m2 {
				continue
			}
			if prev, dup := out[f]; dup && prev != x.level {
				return nil, fmt.Errorf("%w: %s matches both --level %s and --level %s: make the patterns exclusive", ErrImportOption, f, prev, x.level)
			}
			out[f] = x.level
		}
		if _, ok := out[f]; !ok {
			return nil, fmt.Errorf("%w: %s matches no --level pattern: with --level, give every file its level", ErrImportOption, f)
		}
	}
	return out, nil
}

// lineError is a bad value at a line of a JSON file.
type lineError struct {
	line int
	msg  string
}

// lineOf returns the 1-based line of the first occurrence of key (as a
// JSON object key) in b, or 0.
func lineOf(b []byte, key string) int {
	i := bytes.Index(b, []byte(`"`+key+`"`))
	if i < 0 {
		return 0
	}
	return bytes.Count(b[:i], []byte("\n")) + 1
}

// ombNumber reads an OMB number field. A missing field or null (OMB writes
// null when it measured nothing) is not a value: ok is false. Anything
// else that is not a finite number is an error.
func ombNumber(b []byte, m map[string]json.RawMessage, field string) (float64, bool, *lineError) {
	v, ok := m[field]
	if !ok || string(bytes.TrimSpace(v)) == "null" {
		return 0, false, nil
	}
	var x float64
	if err := json.Unmarshal(v, &x); err != nil || !finite(x) {
		return 0, false, &lineError{lineOf(b, field), fmt.Sprintf("%s: %s is not a finite number", field, bytes.TrimSpace(v))}
	}
	return x, true, nil
}

// ombRates is an OMB result's per-sample rates and their means.
type ombRates struct {
	points           []SeriesPoint
	samples          int // samples in the producing period
	publish, consume float64
}

// ombSamplePeriod is OMB's statistics interval: one publishRate,
// consumeRate and backlog sample every 10 s (its charts plot sample i at
// 10*i s).
const ombSamplePeriod = 10

// ombSeries reads publishRate, consumeRate and backlog. The rates are
// means over the period the producers ran: from the first sample to the
// last with a non-zero publish rate. OMB keeps sampling after its
// producers stop, and those trailing zero samples are no part of the
// run's rate.
func ombSeries(f string, b []byte, m map[string]json.RawMessage) (ombRates, error) {
	read := func(field string) ([]float64, error) {
		v, ok := m[field]
		if !ok || string(bytes.TrimSpace(v)) == "null" {
			return nil, nil
		}
		var raw []json.RawMessage
		if err := json.Unmarshal(v, &raw); err != nil {
			return nil, &ImportError{File: f, Line: lineOf(b, field), Msg: field + ": want an array of numbers"}
		}
		xs := make([]float64, len(raw))
		for i, r := range raw {
			if err := json.Unmarshal(r, &xs[i]); err != nil || !finite(xs[i]) || xs[i] < 0 {
				return nil, &ImportError{File: f, Line: lineOf(b, field),
					Msg: fmt.Sprintf("%s[%d]: %s is not a finite non-negative number", field, i, bytes.TrimSpace(r))}
			}
		}
		return xs, nil
	}
	var out ombRates
	pub, err := read("publishRate")
	if err != nil {
		return out, err
	}
	con, err := read("consumeRate")
	if err != nil {
		return out, err
	}
	backlog, err := read("backlog")
	if err != nil {
		return out, err
	}
	n := len(pub)
	for n > 0 && pub[n-1] == 0 {
		n--
	}
	out.samples = n
	if n == 0 {
		return out, nil
	}
	for i := range n {
		out.publish += pub[i]
		if i < len(con) {
			out.consume += con[i]
		}
	}
	out.publish /= float64(n)
	out.consume /= float64(n)
	for i := range max(len(pub), len(con)) {
		p := SeriesPoint{Second: ombSamplePeriod * i}
		if i < len(pub) {
			p.Published = int64(math.Round(pub[i]))
		}
		if i < len(con) {
			p.Consumed = int64(math.Round(con[i]))
		}
		if i < len(backlog) {
			p.Backlog = int64(math.Round(backlog[i]))
		}
		out.points = append(out.points, p)
	}
	return out, nil
}

// csvRecord is one imported run before identities are assigned.
type csvRecord struct {
	file      string
	line      int
	factors   map[string]string
	metrics   map[string]float64
	series    []SeriesPoint
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

// importCSV reads per-run CSV files (a header row, then a run a row) into
// a Dataset: o.Treatment and o.Metrics name columns, every other column is
// a factor, and pair, replicate and outcome columns are optional.
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
	ci := &csvImport{o: o, metrics: metrics, isMetric: map[string]bool{},
		d: &Dataset{Campaign: o.Campaign, Seed: campaignSeed(o.Campaign), Treatment: o.Treatment, Metrics: metrics}}
	for _, m := range metrics {
		ci.isMetric[m.Name] = true
	}
	for fi, f := range files {
		if err := ci.readFile(f, fi == 0, files[0]); err != nil {
			return nil, err
		}
	}
	if len(ci.recs) == 0 {
		return nil, &ImportError{File: files[0], Msg: "no data rows after the header", Err: ErrImportShape}
	}
	return buildImported(ci.d, ci.recs, o, ci.explicitRep)
}

// csvImport is a CSV import under way: the dataset whose factors the
// headers name, and the records read so far.
type csvImport struct {
	o        *ImportOptions
	d        *Dataset
	metrics  []MetricDef
	isMetric map[string]bool
	// explicitPair and explicitRep say whether the first file has pair and
	// replicate columns; every other file must agree.
	explicitPair, explicitRep bool
	recs                      []csvRecord
}

// readFile reads one CSV file's header and records. first says whether it
// is the first file, named firstName.
func (ci *csvImport) readFile(f string, first bool, firstName string) error {
	fh, err := os.Open(f)
	if err != nil {
		return err
	}
	defer fh.Close()
	r := csv.NewReader(fh)
	r.FieldsPerRecord = 0
	header, err := ci.readHeader(f, r, first, firstName)
	if err != nil {
		return err
	}
	line := 1
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return nil
		}
		line++
		if err != nil {
			return &ImportError{File: f, Line: line, Msg: err.Error(), Err: ErrImportShape}
		}
		cr, err := ci.record(f, line, header, rec)
		if err != nil {
			return err
		}
		ci.recs = append(ci.recs, cr)
	}
}

// readHeader reads and checks a file's header: no column twice, the
// treatment and every metric present, pair and replicate columns as in the
// first file. Every other column is a factor, added to the dataset's.
func (ci *csvImport) readHeader(f string, r *csv.Reader, first bool, firstName string) ([]string, error) {
	header, err := r.Read()
	if err != nil {
		return nil, &ImportError{File: f, Line: 1, Msg: "want a header row: " + err.Error(), Err: ErrImportShape}
	}
	if len(header) > 0 {
		header[0] = strings.TrimPrefix(header[0], "\ufeff") // a UTF-8 byte-order mark, as spreadsheets write
	}
	col := map[string]int{}
	for i, h := range header {
		h = strings.TrimSpace(h)
		if _, dup := col[h]; dup {
			return nil, &ImportError{File: f, Line: 1, Msg: fmt.Sprintf("column %q appears twice", h), Err: ErrImportShape}
		}
		col[h] = i
	}
	var missing []string
	if _, ok := col[ci.o.Treatment]; !ok {
		missing = append(missing, ci.o.Treatment+" (--treatment)")
	}
	for _, m := range ci.metrics {
		if _, ok := col[m.Name]; !ok {
			missing = append(missing, m.Name+" (--metric)")
		}
	}
	if len(missing) > 0 {
		return nil, &ImportError{File: f, Line: 1, Msg: fmt.Sprintf("header lacks column(s) %s; it has: %s",
			strings.Join(missing, ", "), strings.Join(header, ", ")), Err: ErrImportShape}
	}
	_, hasPair := col["pair"]
	_, hasRep := col["replicate"]
	if first {
		ci.explicitPair, ci.explicitRep = hasPair, hasRep
	} else if hasPair != ci.explicitPair || hasRep != ci.explicitRep {
		return nil, &ImportError{File: f, Line: 1, Msg: "pair/replicate columns differ from " + firstName, Err: ErrImportShape}
	}
	for _, h := range header {
		h = strings.TrimSpace(h)
		if ci.isMetric[h] || h == "pair" || h == "replicate" || h == "outcome" {
			continue
		}
		if !slices.Contains(ci.d.Factors, h) {
			ci.d.Factors = append(ci.d.Factors, h)
		}
	}
	return header, nil
}

// record reads one data row (at line of file f): finite metrics (an empty
// cell is no value), pair, a positive replicate, outcome, and the factors,
// the treatment not empty.
func (ci *csvImport) record(f string, line int, header, rec []string) (csvRecord, error) {
	cr := csvRecord{file: f, line: line, factors: map[string]string{}, metrics: map[string]float64{}}
	for i, h := range header {
		h = strings.TrimSpace(h)
		v := strings.TrimSpace(rec[i])
		switch {
		case ci.isMetric[h]:
			if v == "" {
				continue
			}
			x, err := strconv.ParseFloat(v, 64)
			if err != nil && !errors.Is(err, strconv.ErrRange) {
				return cr, &ImportError{File: f, Line: line, Msg: fmt.Sprintf("metric %s: %q is not a number", h, v)}
			}
			if !finite(x) {
				return cr, &ImportError{File: f, Line: line, Msg: fmt.Sprintf("metric %s: %q is not a finite number: leave the cell empty when there is no value", h, v)}
			}
			cr.metrics[h] = x
		case h == "pair":
			cr.pair = v
		case h == "replicate":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return cr, &ImportError{File: f, Line: line, Msg: fmt.Sprintf("replicate %q: want a positive integer", v)}
			}
			cr.replicate = n
		case h == "outcome":
			cr.outcome = v
		default:
			cr.factors[h] = v
		}
	}
	if cr.factors[ci.o.Treatment] == "" {
		return cr, &ImportError{File: f, Line: line, Msg: fmt.Sprintf("empty treatment column %s", ci.o.Treatment)}
	}
	return cr, nil
}

// buildImported assigns identities: the pair is the given pair column or
// the hash of every factor but the treatment; replicates are given or
// numbered in file order per pair and level.
func buildImported(d *Dataset, recs []csvRecord, o *ImportOptions, explicitRep bool) (*Dataset, error) {
	if o.Baseline == "" {
		o.Baseline = recs[0].factors[d.Treatment]
	}
	d.Baseline = o.Baseline
	d.Imported = true
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
			Metrics: rec.metrics, Series: rec.series, Saturating: rec.factors["target_rate"] == "max"}
		for _, f := range d.Factors {
			r.Factors = append(r.Factors, rec.factors[f])
		}
		d.Runs = append(d.Runs, r)
	}
	levels := map[string]bool{}
	for _, r := range d.Runs {
		levels[r.Factors[slices.Index(d.Factors, d.Treatment)]] = true
	}
	var ls []string
	for l := range levels {
		ls = append(ls, l)
	}
	slices.Sort(ls)
	if !levels[d.Baseline] {
		return nil, &BaselineError{Baseline: d.Baseline, Treatment: d.Treatment, Levels: ls}
	}
	if len(ls) < 2 {
		hint := "import runs of at least two levels"
		if len(recs) > 0 && recs[0].line == 0 {
			hint += "; OMB results of different settings often share a driver name: give each file its level with --level LEVEL=FILE (or a pattern)"
		}
		return nil, &ImportError{File: recs[0].file, Msg: fmt.Sprintf("every run has %s = %s: there is nothing to compare it with; %s",
			d.Treatment, ls[0], hint), Err: ErrOneLevel}
	}
	return d, nil
}
