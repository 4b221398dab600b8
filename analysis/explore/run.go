package explore

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/xp-bench/xp/analysis"
	"github.com/xp-bench/xp/results"
)

// RunDetail is everything the evidence store holds about one attempt, as
// the run page draws it.
type RunDetail struct {
	Index   int    `json:"index"`
	Run     string `json:"run"`
	Attempt int    `json:"attempt"`
	// Settings is the plan row; Environment what the attempt recorded
	// (broker, Java, gateway and its crypto, machines).
	Settings    json.RawMessage `json:"settings,omitempty"`
	Environment json.RawMessage `json:"environment,omitempty"`
	Started     string          `json:"started,omitempty"`
	Ended       string          `json:"ended,omitempty"`
	Phases      []Phase         `json:"phases,omitempty"`
	// Percentiles maps a histogram kind (publish, e2e, send_delay) to its
	// whole-run percentile curve: [percentile, ms] pairs read from the
	// stored HDR histogram.
	Percentiles map[string][][2]float64 `json:"percentiles,omitempty"`
	// Series is the per-second series: second, published, consumed,
	// backlog, and the second's publish and e2e p99 in ms where
	// per-second histograms are stored (null otherwise).
	Series        [][]any `json:"series,omitempty"`
	SeriesSampled bool    `json:"seriesSampled,omitempty"`
	// Telemetry is each sampled host's metrics over the attempt.
	Telemetry []Telemetry `json:"telemetry,omitempty"`
	Logs      []Log       `json:"logs,omitempty"`
}

// Phase is one phase of an attempt and when it began, in seconds from
// the attempt's start.
type Phase struct {
	Name string  `json:"name"`
	At   string  `json:"at"`
	S    float64 `json:"s"`
}

// Telemetry is one host's metric over an attempt: rates for counters
// (cpu_s as cores, bytes as bytes/s), values for gauges.
type Telemetry struct {
	Role    string       `json:"role"`
	Host    string       `json:"host"`
	Metric  string       `json:"metric"`
	Unit    string       `json:"unit"`
	Points  [][2]float64 `json:"points"`
	Sampled bool         `json:"sampled,omitempty"`
}

// Log is one log the attempt kept.
type Log struct {
	Name string `json:"name"`
	Text string `json:"text"`
}

// percentileGrid is where a percentile curve is read: 0, 50, 75, then
// every tenth of a nine up to five nines, and the maximum.
var percentileGrid = func() []float64 {
	g := []float64{0, 50, 75}
	for k := 10; k <= 50; k++ {
		g = append(g, 100*(1-math.Pow(10, -float64(k)/10)))
	}
	return append(g, 100)
}()

// evidenceIndex is what the run pages need of a whole campaign, read once:
// each run's plan row and each attempt by id.
type evidenceIndex struct {
	plans    map[string]json.RawMessage
	attempts map[int64]results.Attempt
}

func readEvidenceIndex(ctx context.Context, st *results.Store) (*evidenceIndex, error) {
	rows, err := st.Rows(ctx)
	if err != nil {
		return nil, err
	}
	atts, err := st.Attempts(ctx)
	if err != nil {
		return nil, err
	}
	ix := &evidenceIndex{plans: make(map[string]json.RawMessage, len(rows)), attempts: make(map[int64]results.Attempt, len(atts))}
	for _, r := range rows {
		ix.plans[r.Run] = r.Plan
	}
	for _, a := range atts {
		a.Metrics = nil // runs.csv's columns travel in the campaign file
		ix.attempts[a.ID] = a
	}
	return ix, nil
}

// runDetails reads the evidence of the campaign's attempts [from, to).
func (c *Campaign) runDetails(ctx context.Context, st *results.Store, from, to int, ix *evidenceIndex, maxPoints int) ([]RunDetail, error) {
	var out []RunDetail
	plans, byID := ix.plans, ix.attempts
	for i := from; i < to && i < len(c.runs); i++ {
		r := c.runs[i]
		d := RunDetail{Index: i, Run: r.Run, Attempt: r.Attempt, Settings: plans[r.Run]}
		id := c.attemptIDs[i]
		if a, ok := byID[id]; ok && id != 0 {
			if err := d.read(ctx, st, a, maxPoints); err != nil {
				return nil, fmt.Errorf("attempt %d of %s: %w", a.Number, a.Run, err)
			}
		}
		out = append(out, d)
	}
	return out, nil
}

// read fills the detail from attempt a's evidence.
func (d *RunDetail) read(ctx context.Context, st *results.Store, a results.Attempt, maxPoints int) error {
	if len(a.Environment) > 0 && json.Valid(a.Environment) {
		d.Environment = a.Environment
	}
	d.Started = a.Started.UTC().Format(time.RFC3339Nano)
	if !a.Ended.IsZero() {
		d.Ended = a.Ended.UTC().Format(time.RFC3339Nano)
	}
	perSecond := map[string]map[int]float64{}
	d.Percentiles = map[string][][2]float64{}
	for _, kind := range []string{results.KindPublish, results.KindE2E, results.KindSendDelay} {
		hs, err := st.Histograms(ctx, a.ID, kind)
		if err != nil {
			return err
		}
		for _, h := range hs {
			dh, err := results.DecodeHistogram(h.Data)
			if err != nil {
				return fmt.Errorf("%s histogram: %w", kind, err)
			}
			if h.Second == results.WholeRun {
				d.Percentiles[kind] = percentileCurve(dh.ValueAtQuantile, dh.TotalCount())
				continue
			}
			if dh.TotalCount() > 0 {
				if perSecond[kind] == nil {
					perSecond[kind] = map[int]float64{}
				}
				perSecond[kind][h.Second] = float64(dh.ValueAtQuantile(99)) / 1000
			}
		}
	}
	series, err := st.Series(ctx, a.ID)
	if err != nil {
		return err
	}
	keep := sampleIndexes(len(series), maxPoints)
	d.SeriesSampled = len(keep) < len(series)
	for _, i := range keep {
		p := series[i]
		row := []any{p.Second, p.Published, p.Consumed, p.Backlog, nil, nil}
		if v, ok := perSecond[results.KindPublish][p.Second]; ok {
			row[4] = v
		}
		if v, ok := perSecond[results.KindE2E][p.Second]; ok {
			row[5] = v
		}
		d.Series = append(d.Series, row)
	}
	samples, err := st.Telemetry(ctx, a.ID)
	if err != nil {
		return err
	}
	d.Telemetry = telemetrySeries(samples, a.Started, analysis.HostRoles(a.Environment), maxPoints)
	d.Phases = []Phase{{Name: "started", At: d.Started}}
	logs, err := st.Logs(ctx, a.ID)
	if err != nil {
		return err
	}
	for _, l := range logs {
		if l.Name == "runner" {
			d.Phases = append(d.Phases, phasesOf(l.Text, a.Started)...)
		}
		// A healthy attempt's logs are its load generator's report, which
		// runs.csv and the series already carry; a failed or invalid
		// attempt keeps every log, as the store does.
		if a.Outcome == results.OutcomeDone && l.Name != "runner" {
			continue
		}
		d.Logs = append(d.Logs, Log{Name: l.Name, Text: string(l.Text)})
	}
	if !a.Ended.IsZero() {
		d.Phases = append(d.Phases, Phase{Name: "ended", At: d.Ended, S: a.Ended.Sub(a.Started).Seconds()})
	}
	return nil
}

// percentileCurve reads a histogram (µs) at percentileGrid, in ms; nil
// when it is empty.
func percentileCurve(at func(q float64) int64, count int64) [][2]float64 {
	if count == 0 {
		return nil
	}
	out := make([][2]float64, 0, len(percentileGrid))
	for _, p := range percentileGrid {
		out = append(out, [2]float64{p, float64(at(p)) / 1000})
	}
	return out
}

// sampleIndexes returns the indexes of n points to draw, at most max of
// them, evenly spread, the first and last always kept.
func sampleIndexes(n, max int) []int {
	out := make([]int, 0, min(n, max))
	if n <= max {
		for i := range n {
			out = append(out, i)
		}
		return out
	}
	for k := range max {
		out = append(out, int(math.Round(float64(k)*float64(n-1)/float64(max-1))))
	}
	return out
}

// counterUnits names the per-second rate of each cumulative counter the
// samplers record; any other metric is a gauge.
var counterUnits = map[string]string{"cpu_s": "cores", "net_in_bytes": "bytes/s", "net_out_bytes": "bytes/s",
	"disk_read_bytes": "bytes/s", "disk_write_bytes": "bytes/s"}

// telemetrySeries groups samples by host and metric, counters as rates
// between samples, at most max points each, in seconds from start. A
// host without a recorded role is its own role.
func telemetrySeries(samples []results.Sample, start time.Time, roles map[string]string, max int) []Telemetry {
	type key struct{ host, metric string }
	var keys []key
	pts := map[key][][2]float64{}
	for _, s := range samples {
		k := key{s.Host, s.Metric}
		if _, ok := pts[k]; !ok {
			keys = append(keys, k)
		}
		pts[k] = append(pts[k], [2]float64{s.TS.Sub(start).Seconds(), s.Value})
	}
	var out []Telemetry
	for _, k := range keys {
		p := pts[k]
		unit, counter := counterUnits[k.metric]
		if counter {
			var rates [][2]float64
			for i := 1; i < len(p); i++ {
				if dt := p[i][0] - p[i-1][0]; dt > 0 {
					rates = append(rates, [2]float64{p[i][0], (p[i][1] - p[i-1][1]) / dt})
				}
			}
			p = rates
		} else if strings.HasSuffix(k.metric, "_mib") {
			unit = "MiB"
		}
		keep := sampleIndexes(len(p), max)
		t := Telemetry{Role: roles[k.host], Host: k.host, Metric: k.metric, Unit: unit, Sampled: len(keep) < len(p)}
		if t.Role == "" {
			t.Role = k.host
		}
		for _, i := range keep {
			t.Points = append(t.Points, p[i])
		}
		out = append(out, t)
	}
	slices.SortStableFunc(out, func(a, b Telemetry) int {
		return strings.Compare(a.Role+"\x00"+a.Host, b.Role+"\x00"+b.Host)
	})
	return out
}

// phasesOf reads the phases from the runner's log of an attempt (lines
// "15:04:05.000 phase NAME", UTC, on the attempt's day).
func phasesOf(log []byte, started time.Time) []Phase {
	started = started.UTC()
	var out []Phase
	sc := bufio.NewScanner(bytes.NewReader(log))
	for sc.Scan() {
		clock, rest, ok := strings.Cut(sc.Text(), " ")
		name, isPhase := strings.CutPrefix(rest, "phase ")
		if !ok || !isPhase {
			continue
		}
		t, err := time.Parse("15:04:05.000", clock)
		if err != nil {
			continue
		}
		at := time.Date(started.Year(), started.Month(), started.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
		if at.Before(started.Add(-time.Second)) {
			at = at.Add(24 * time.Hour) // the attempt ran over midnight
		}
		out = append(out, Phase{Name: name, At: at.Format(time.RFC3339Nano), S: at.Sub(started).Seconds()})
	}
	return out
}
