// Package explore is xp's results explorer: the pages (campaigns, effects,
// configuration, run, compare) that browse one or more campaign databases
// down to one attempt's evidence. The same pages are written as a static,
// self-contained site (WriteSite) or served from the databases while a
// campaign runs (Server). The pages draw with Observable Plot and d3,
// vendored and pinned under assets/ with their checksums; the data travels
// as gzip-compressed JSON inside script files, so that a site opened from
// disk needs no request beyond its own directory.
package explore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/xp-bench/xp/analysis"
	"github.com/xp-bench/xp/results"
)

// Options tune what the explorer computes.
type Options struct {
	// Analysis is passed to analysis.Analyse for every campaign (the
	// bootstrap's resamples, method, confidence and seed).
	Analysis analysis.Options
	// RunsPerChunk is how many attempts' evidence one data file holds;
	// default 64. A run page loads only its own chunk.
	RunsPerChunk int
	// MaxSeriesPoints bounds every per-second or telemetry series of a
	// run page; a longer series is sampled evenly. Default 600.
	MaxSeriesPoints int
}

func (o Options) withDefaults() Options {
	if o.RunsPerChunk <= 0 {
		o.RunsPerChunk = 64
	}
	if o.MaxSeriesPoints <= 0 {
		o.MaxSeriesPoints = 600
	}
	return o
}

// Campaign is what the pages know of one campaign database, as JSON.
type Campaign struct {
	Index int    `json:"index"`
	Name  string `json:"name"`
	DB    string `json:"db"`
	// Info is the campaign's description as analysis.Load gives it (plan,
	// target, brokers measured, dates, cost), in display order.
	Info [][2]string `json:"info"`
	// Progress is the campaign's rows by state and attempts' times;
	// Provisional is true while rows are pending or running: effects are
	// recomputed as sets complete and may still move.
	Progress    Progress `json:"progress"`
	Provisional bool     `json:"provisional"`
	Treatment   string   `json:"treatment"`
	// Levels are the treatment's levels, the baseline first.
	Levels      []string `json:"levels"`
	Factors     []string `json:"factors"`
	CellFactors []string `json:"cellFactors"`
	// FactorLevels lists each cell factor's levels as the cells hold them.
	FactorLevels map[string][]string `json:"factorLevels"`
	Metrics      []Metric            `json:"metrics"`
	Cells        []Cell              `json:"cells"`
	// Effects is effects.csv's table (EffectColumns), row for row. The
	// pages load it in parts, one data file per treatment and statistic
	// (EffectParts), so that a page reads only what it draws.
	Effects     [][]any      `json:"-"`
	EffectParts []EffectPart `json:"effectParts"`
	// Runs lists every attempt (RunColumns), in plan order; RunMetrics
	// names the metric values at the end of each row.
	Runs       [][]any  `json:"runs"`
	RunMetrics []string `json:"runMetrics"`
	// Chunks is the number of run-evidence data files; attempt i's is
	// i / RunsPerChunk.
	Chunks       int `json:"chunks"`
	RunsPerChunk int `json:"runsPerChunk"`
	// Notes are the analysis's caveats and why there are no effects yet.
	Notes []string `json:"notes"`
	// Generated is when this view was computed (UTC).
	Generated string `json:"generated"`

	// runs keeps the dataset's attempts for the run pages; attemptIDs
	// maps them to the evidence store's attempt ids (0: never attempted).
	runs       []analysis.Run
	attemptIDs []int64
	result     *analysis.Result
}

// Progress is a campaign's rows by state, as xp status counts them.
type Progress struct {
	Total        int            `json:"total"`
	Rows         map[string]int `json:"rows"`
	Cost         float64        `json:"cost"`
	FirstStarted string         `json:"firstStarted,omitempty"`
	LastEnded    string         `json:"lastEnded,omitempty"`
	// ETA is the expected end (UTC) from the mean attempt time and the
	// rows left; empty when finished or unknown.
	ETA string `json:"eta,omitempty"`
	// Running is the run in flight and its phase, "" when none.
	Running string `json:"running,omitempty"`
	// Writer is true while an xp process holds the database.
	Writer bool `json:"writer"`
	// Latest are the attempts that ended last, the latest first: their
	// positions in Campaign.Runs (runs.csv's columns, outcome and reasons
	// there) and when they ended.
	Latest []LatestRun `json:"latest"`
}

// LatestRun is an attempt that ended lately.
type LatestRun struct {
	Index int    `json:"index"`
	Ended string `json:"ended"`
}

// latestShown is how many of the latest attempts the campaigns page lists.
const latestShown = 5

// Metric is one analysed metric.
type Metric struct {
	Name   string `json:"name"`
	Unit   string `json:"unit"`
	Higher bool   `json:"higher"`
}

// Cell is one matched configuration: its pair id and its cell factors'
// levels (aligned with CellFactors).
type Cell struct {
	Pair       string   `json:"pair"`
	Levels     []string `json:"levels"`
	Saturating bool     `json:"saturating"`
}

// EffectPart names the data file holding the effects of one treatment
// and statistic: data/c{campaign}-e{Part}.js.
type EffectPart struct {
	Treatment string `json:"treatment"`
	Statistic string `json:"statistic"`
	Part      int    `json:"part"`
	Rows      int    `json:"rows"`
}

// effectPart returns part k's rows.
func (c *Campaign) effectPart(k int) [][]any {
	p := c.EffectParts[k]
	out := [][]any{}
	for _, e := range c.Effects {
		if e[0] == p.Treatment && e[5] == p.Statistic {
			out = append(out, e)
		}
	}
	return out
}

// EffectColumns names the columns of Campaign.Effects: effects.csv's, in
// its order (numbers as numbers, NaN as null).
var EffectColumns = []string{"treatment", "baseline", "metric", "scope", "n", "statistic", "unit",
	"estimate", "ci_low", "ci_high", "method", "p_value", "p_holm", "note",
	"test", "p_min", "bounded", "outlier_sets"}

// RunColumns names the columns of Campaign.Runs before the metrics.
var RunColumns = []string{"run", "cell", "pair", "replicate", "attempt", "final", "level",
	"outcome", "reasons", "outliers", "superseded"}

// LoadCampaign reads one campaign database, read-only (it takes no lock
// and may run beside `xp run`), and analyses it. A campaign with no
// healthy matched set yet is no error: it has no effects, and a note says
// why.
func LoadCampaign(ctx context.Context, path string, index int, opt Options) (*Campaign, error) {
	opt = opt.withDefaults()
	d, err := analysis.Load(ctx, path)
	if err != nil {
		return nil, err
	}
	st, err := results.OpenReadOnly(ctx, path)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	c := &Campaign{Index: index, Name: d.Campaign, DB: filepath.Base(path), Treatment: d.Treatment,
		Factors: d.Factors, RunsPerChunk: opt.RunsPerChunk, FactorLevels: map[string][]string{},
		Generated: time.Now().UTC().Format(time.RFC3339),
		// Lists the pages read are empty, not null, when there is nothing.
		Info: [][2]string{}, Levels: []string{}, CellFactors: []string{}, Metrics: []Metric{}, Cells: []Cell{},
		Effects: [][]any{}, EffectParts: []EffectPart{}, Runs: [][]any{}, RunMetrics: []string{}, Notes: []string{}}
	for _, f := range d.Info {
		c.Info = append(c.Info, [2]string{f.Name, f.Value})
	}
	if err := c.readProgress(ctx, st, path); err != nil {
		return nil, err
	}
	if err := c.mapAttempts(ctx, st, d); err != nil {
		return nil, err
	}
	res, err := analysis.Analyse(d, opt.Analysis)
	switch {
	case errors.Is(err, analysis.ErrNoHealthySet), errors.Is(err, analysis.ErrOneLevel):
		c.Notes = append(c.Notes, "no effects yet: "+err.Error())
	case err != nil:
		return nil, fmt.Errorf("analyse %s: %w", path, err)
	}
	if res == nil {
		res = &analysis.Result{Dataset: d}
	}
	c.result = res
	c.fromResult(res)
	c.Chunks = (len(c.runs) + opt.RunsPerChunk - 1) / opt.RunsPerChunk
	return c, nil
}

// readProgress fills the rows by state, cost, times and ETA.
func (c *Campaign) readProgress(ctx context.Context, st *results.Store, path string) error {
	p, err := st.Progress(ctx)
	if err != nil {
		return fmt.Errorf("%s: progress: %w", path, err)
	}
	c.Progress = Progress{Total: p.Total, Rows: map[string]int{}, Cost: p.Cost}
	for s, n := range p.Rows {
		c.Progress.Rows[string(s)] = n
	}
	if !p.FirstStarted.IsZero() {
		c.Progress.FirstStarted = p.FirstStarted.UTC().Format(time.RFC3339)
	}
	if !p.LastEnded.IsZero() {
		c.Progress.LastEnded = p.LastEnded.UTC().Format(time.RFC3339)
	}
	left := p.Rows[results.Pending] + p.Rows[results.Running]
	c.Provisional = left > 0
	if p.Current != nil {
		c.Progress.Running = p.Current.Run + " (" + p.Current.Phase + ")"
	}
	_, c.Progress.Writer = results.Writer(path)
	if left > 0 && p.MeanAttempt > 0 && c.Progress.Writer {
		c.Progress.ETA = time.Now().Add(time.Duration(left) * p.MeanAttempt).UTC().Format(time.RFC3339)
	}
	return nil
}

// mapAttempts keeps the dataset's attempts and their store ids.
func (c *Campaign) mapAttempts(ctx context.Context, st *results.Store, d *analysis.Dataset) error {
	atts, err := st.Attempts(ctx)
	if err != nil {
		return err
	}
	type key struct {
		run string
		n   int
	}
	ids := make(map[key]int64, len(atts))
	for _, a := range atts {
		ids[key{a.Run, a.Number}] = a.ID
	}
	ended := map[int64]time.Time{}
	for _, a := range atts {
		if !a.Ended.IsZero() {
			ended[a.ID] = a.Ended
		}
	}
	c.runs = d.Runs
	c.attemptIDs = make([]int64, len(d.Runs))
	var done []int
	for i, r := range d.Runs {
		c.attemptIDs[i] = ids[key{r.Run, r.Attempt}]
		if _, ok := ended[c.attemptIDs[i]]; ok {
			done = append(done, i)
		}
	}
	slices.SortStableFunc(done, func(x, y int) int { return ended[c.attemptIDs[y]].Compare(ended[c.attemptIDs[x]]) })
	c.Progress.Latest = []LatestRun{}
	for _, i := range done[:min(len(done), latestShown)] {
		c.Progress.Latest = append(c.Progress.Latest, LatestRun{Index: i, Ended: ended[c.attemptIDs[i]].UTC().Format(time.RFC3339)})
	}
	return nil
}

// fromResult fills levels, cells, metrics, effects and runs.
func (c *Campaign) fromResult(res *analysis.Result) {
	d := res.Dataset
	if res.Levels != nil {
		c.Levels = res.Levels
	}
	if res.CellFactors != nil {
		c.CellFactors = res.CellFactors
	}
	for _, m := range d.Metrics {
		c.Metrics = append(c.Metrics, Metric{m.Name, m.Unit, m.Higher})
	}
	for _, cell := range res.Cells {
		c.Cells = append(c.Cells, Cell{Pair: cell.Pair, Levels: cell.Factors, Saturating: cell.Saturating})
		for i, f := range res.CellFactors {
			if i < len(cell.Factors) && !slices.Contains(c.FactorLevels[f], cell.Factors[i]) {
				c.FactorLevels[f] = append(c.FactorLevels[f], cell.Factors[i])
			}
		}
	}
	for _, e := range res.Effects {
		var bounded any
		if !math.IsNaN(e.Low) {
			bounded = !e.Unbounded
		}
		c.Effects = append(c.Effects, []any{e.Treatment, e.Baseline, e.Metric, e.Scope, e.N, e.Statistic, e.Unit,
			jsonNum(e.Estimate), jsonNum(e.Low), jsonNum(e.High), e.Method, jsonNum(e.P), jsonNum(e.PHolm), e.Note,
			e.Test, jsonNum(e.PMin), bounded, e.OutlierSets})
		k := slices.IndexFunc(c.EffectParts, func(p EffectPart) bool { return p.Treatment == e.Treatment && p.Statistic == e.Statistic })
		if k < 0 {
			k = len(c.EffectParts)
			c.EffectParts = append(c.EffectParts, EffectPart{Treatment: e.Treatment, Statistic: e.Statistic, Part: k})
		}
		c.EffectParts[k].Rows++
	}
	c.Notes = append(c.Notes, res.Notes...)
	for _, m := range d.Metrics {
		c.RunMetrics = append(c.RunMetrics, m.Name)
	}
	for i, r := range d.Runs {
		outcome := r.Outcome
		if outcome == "" {
			outcome = "pending"
		}
		row := []any{r.Run, r.Cell, r.Pair, r.Replicate, r.Attempt, r.Final, d.Level(&d.Runs[i], d.Treatment),
			outcome, strings.Join(r.Reasons, "; "), strings.Join(r.Outliers, ";"), r.Superseded}
		for _, m := range c.RunMetrics {
			if v, ok := r.Metrics[m]; ok {
				row = append(row, jsonNum(v))
			} else {
				row = append(row, nil)
			}
		}
		c.Runs = append(c.Runs, row)
	}
}

// jsonNum is v as JSON can carry it: nil for NaN, a string for an
// infinity (as effects.csv writes it).
func jsonNum(v float64) any {
	switch {
	case math.IsNaN(v):
		return nil
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	}
	return v
}
