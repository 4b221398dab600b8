package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/results"
)

// TwoStage asks for a two-stage design (Stein 1945): the plan's
// replicates are the first stage; when they are done, every configuration
// whose interval of the mean penalty would be wider than HalfWidth gets
// the matched sets that bring it there, at most MaxReplicates in all,
// appended as new matched sets in the plan's randomized interleaved order.
type TwoStage struct {
	// HalfWidth is the half-width asked of each configuration's interval
	// of the mean penalty of Metric, in percentage points (2 for "2%").
	HalfWidth float64
	// Metric is the metric whose penalty is sized; default publish_ms_p99.
	Metric string
	// MaxReplicates bounds any configuration's replicates, first stage
	// included; default 4 times the first stage's.
	MaxReplicates int
	// Confidence of the interval; default 0.95.
	Confidence float64
}

// DefaultStageMetric is the metric a two-stage design sizes by default.
const DefaultStageMetric = "publish_ms_p99"

// stageConfig returns the design to record for a plan of firstStage
// replicates, defaults filled in, or why it cannot be.
func (t TwoStage) stageConfig(firstStage int) (results.TwoStage, error) {
	if t.Metric == "" {
		t.Metric = DefaultStageMetric
	}
	if t.Confidence == 0 {
		t.Confidence = 0.95
	}
	if t.MaxReplicates == 0 {
		t.MaxReplicates = 4 * firstStage
	}
	switch {
	case !(t.HalfWidth > 0) || math.IsInf(t.HalfWidth, 0):
		return results.TwoStage{}, fmt.Errorf("--halfwidth %g: want a positive half-width in percent, e.g. --halfwidth 2%%", t.HalfWidth)
	case !(t.Confidence > 0 && t.Confidence < 1):
		return results.TwoStage{}, fmt.Errorf("confidence %g: want a level between 0 and 1", t.Confidence)
	case firstStage < 2:
		return results.TwoStage{}, fmt.Errorf("--halfwidth needs a first stage of 2 or more replicates to measure each configuration's spread; the plan has %d (re-expand it with --replicates 3 or more)", firstStage)
	case t.MaxReplicates < firstStage:
		return results.TwoStage{}, fmt.Errorf("--max-replicates %d is below the plan's %d replicates (the first stage): want at least %d", t.MaxReplicates, firstStage, firstStage)
	}
	return results.TwoStage{HalfWidth: t.HalfWidth, Metric: t.Metric, Confidence: t.Confidence,
		MaxReplicates: t.MaxReplicates, FirstStage: firstStage}, nil
}

// SteinSets is the number of matched sets Stein's two-stage procedure
// asks of a configuration whose first n sets have standard deviation sd:
// N = max(n, ⌈(t·sd/h)²⌉), t the two-sided Student quantile at conf with
// n-1 degrees of freedom. The interval mean(all N) ± t·sd/√N then has
// half-width at most h, and under normal noise coverage of at least conf
// whatever the true spread (Stein 1945). 0 when n < 2 (no spread).
func SteinSets(n int, sd, h, conf float64) int {
	if n < 2 || math.IsNaN(sd) {
		return 0
	}
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}.Quantile(1 - (1-conf)/2)
	return max(n, int(math.Ceil((t*sd/h)*(t*sd/h)-1e-9)))
}

// penaltyOf is the penalty in percent of t against b, positive worse:
// throughput (publish_rate) is better higher.
func penaltyOf(metric string, t, b float64) float64 {
	if metric == "publish_rate" {
		return (b - t) / b * 100
	}
	return (t - b) / b * 100
}

// DecideStage decides the second stage from the campaign's rows and
// attempts: per configuration (pair) and treatment level, the penalties
// of ts.Metric over its healthy first-stage matched sets (each row's
// latest attempt, done, not superseded), Stein's sets for the level, and
// for the pair the level that needs most. It returns the decisions and
// the replicates each pair gets in all.
func DecideStage(ts results.TwoStage, rows []results.Row, atts []results.Attempt) ([]results.StageDecision, map[string]int, error) {
	latest := map[string]results.Attempt{}
	for _, a := range atts {
		if a.Superseded != "" || a.Outcome == "" {
			continue
		}
		if l, ok := latest[a.Run]; !ok || a.Number > l.Number {
			latest[a.Run] = a
		}
	}
	type setKey struct {
		pair string
		rep  int
	}
	values := map[setKey]map[string]float64{}
	levelsOf := map[string][]string{}
	baseline := ""
	var pairs []string
	for _, r := range rows {
		var pr planner.Row
		if err := json.Unmarshal(r.Plan, &pr); err != nil {
			return nil, nil, fmt.Errorf("row %s: plan row: %w", r.Run, err)
		}
		level, _ := pr.Get(pr.Treatment)
		baseline = pr.Baseline
		if !slices.Contains(pairs, r.Pair) {
			pairs = append(pairs, r.Pair)
		}
		if !slices.Contains(levelsOf[r.Pair], level) {
			levelsOf[r.Pair] = append(levelsOf[r.Pair], level)
		}
		if r.Replicate > ts.FirstStage {
			continue
		}
		a, ok := latest[r.Run]
		if !ok || a.Outcome != results.OutcomeDone {
			continue
		}
		v, ok := a.Metrics[ts.Metric]
		if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		k := setKey{r.Pair, r.Replicate}
		if values[k] == nil {
			values[k] = map[string]float64{}
		}
		values[k][level] = v
	}
	slices.Sort(pairs)
	var out []results.StageDecision
	total := map[string]int{}
	for _, p := range pairs {
		levels := slices.Clone(levelsOf[p])
		slices.Sort(levels)
		d := results.StageDecision{Pair: p, SD: math.NaN(), Replicates: ts.FirstStage}
		worst := -1
		for _, lv := range levels {
			if lv == baseline {
				continue
			}
			var pen []float64
			for rep := 1; rep <= ts.FirstStage; rep++ {
				m := values[setKey{p, rep}]
				b, okb := m[baseline]
				t, okt := m[lv]
				if okb && okt && b != 0 {
					pen = append(pen, penaltyOf(ts.Metric, t, b))
				}
			}
			sd := math.NaN()
			if len(pen) >= 2 {
				var mean, ss float64
				for _, x := range pen {
					mean += x
				}
				mean /= float64(len(pen))
				for _, x := range pen {
					ss += (x - mean) * (x - mean)
				}
				sd = math.Sqrt(ss / float64(len(pen)-1))
			}
			need := SteinSets(len(pen), sd, ts.HalfWidth, ts.Confidence)
			more := 0
			if need > 0 {
				more = need - len(pen)
			}
			if worst < 0 || more > worst {
				worst = more
				d.Treatment, d.Sets, d.SD, d.Needed = lv, len(pen), sd, need
			}
		}
		if worst > 0 {
			d.Replicates = min(ts.MaxReplicates, ts.FirstStage+worst)
		}
		total[p] = d.Replicates
		out = append(out, d)
	}
	return out, total, nil
}

// loadStage records the two-stage design asked for (o.TwoStage) or finds
// the one the db has, and, once its second stage was appended, adds the
// second stage's rows to the plan this run executes.
func (r *run) loadStage(ctx context.Context) error {
	first := 0
	for _, row := range r.plan.rows {
		first = max(first, row.Replicate)
	}
	if r.o.TwoStage != nil {
		ts, err := r.o.TwoStage.stageConfig(first)
		if err != nil {
			return &badInput{err}
		}
		if err := r.store.SetTwoStage(ctx, ts); err != nil {
			if errors.Is(err, results.ErrTwoStageMismatch) {
				return &badInput{fmt.Errorf("%w: give the same --halfwidth, --halfwidth-metric and --max-replicates as when it started, or none", err)}
			}
			return err
		}
	}
	ts, ok, err := r.store.ReadTwoStage(ctx)
	if err != nil || !ok {
		return err
	}
	r.stage = &ts
	if ts.Decided.IsZero() {
		return nil
	}
	return r.addStoredRows(ctx)
}

// addStoredRows adds the db's rows that the plan file does not hold (the
// second stage's) to the plan and its groups.
func (r *run) addStoredRows(ctx context.Context) error {
	rows, err := r.store.Rows(ctx)
	if err != nil {
		return err
	}
	have := make(map[string]bool, len(r.plan.rows))
	for _, row := range r.plan.rows {
		have[row.Run] = true
	}
	for _, row := range rows {
		if have[row.Run] {
			continue
		}
		var pr planner.Row
		if err := json.Unmarshal(row.Plan, &pr); err != nil {
			return fmt.Errorf("row %s: plan row: %w", row.Run, err)
		}
		r.plan.rows = append(r.plan.rows, pr)
	}
	r.groups = groupRows(r.plan.rows)
	return nil
}

// secondStage decides and appends the second stage once the first is
// done, and adds its rows to todo. It reports whether rows were added.
func (r *run) secondStage(ctx, wctx context.Context, todo map[string]bool) (bool, error) {
	if r.stage == nil || !r.stage.Decided.IsZero() {
		return false, nil
	}
	rows, err := r.store.Rows(wctx)
	if err != nil {
		return false, err
	}
	atts, err := r.store.Attempts(wctx)
	if err != nil {
		return false, err
	}
	decisions, total, err := DecideStage(*r.stage, rows, atts)
	if err != nil {
		return false, err
	}
	more := planner.Extend(r.plan.rows, total)
	now := r.o.Now()
	if err := r.store.AppendStage(wctx, now, decisions, (&plan{rows: more}).storeRows()); err != nil {
		return false, err
	}
	r.stage.Decided, r.stage.Decisions = now, decisions
	extended := 0
	for _, d := range decisions {
		if d.Replicates > r.stage.FirstStage {
			extended++
		}
	}
	r.prog.logf("first stage done: %d of %d configurations need more matched sets for a half-width of %g%% on %s; %d rows appended (second stage)",
		extended, len(decisions), r.stage.HalfWidth, r.stage.Metric, len(more))
	if len(more) == 0 {
		return false, nil
	}
	if err := r.addStoredRows(wctx); err != nil {
		return false, err
	}
	for _, row := range more {
		todo[row.Run] = true
	}
	r.prog.grow(len(more))
	return true, ctx.Err()
}
