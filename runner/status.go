package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/xp-bench/xp/results"
)

// Status is a campaign's progress as `xp status --json` prints it.
type Status struct {
	Campaign   string    `json:"campaign"`
	DB         string    `json:"db"`
	PlanSHA256 string    `json:"plan_sha256"`
	Target     string    `json:"target"`
	Created    time.Time `json:"created"`
	// Writer is the pid of the xp process writing the db, 0 when none.
	Writer   int            `json:"writer_pid"`
	Rows     StatusRows     `json:"rows"`
	Attempts StatusAttempts `json:"attempts"`
	// Current is the row being run (or left running by a killed process).
	Current *StatusCurrent `json:"current"`
	// ElapsedS runs from the first attempt's start to now while a writer
	// runs, else to the latest attempt's start or end.
	ElapsedS float64 `json:"elapsed_s"`
	// LeftS is the rows left times the mean attempt time: the running
	// time the campaign still needs; null before any attempt completed.
	// ETAS is the same while an xp process runs the campaign, null when
	// none does (nothing is counting down).
	LeftS          *float64    `json:"left_s"`
	ETAS           *float64    `json:"eta_s"`
	Infrastructure StatusInfra `json:"infrastructure"`
	// Stage is the two-stage design's progress, null without one.
	Stage *StatusStage `json:"stage"`
	// Finished is true when no row is pending or running (and a two-stage
	// design has appended its second stage).
	Finished bool `json:"finished"`
}

// StatusStage is where a two-stage design (xp run --halfwidth) stands.
type StatusStage struct {
	// Stage is 1 until the first stage is done and the second decided,
	// then 2.
	Stage         int     `json:"stage"`
	HalfWidthPct  float64 `json:"halfwidth_pct"`
	Metric        string  `json:"metric"`
	MaxReplicates int     `json:"max_replicates"`
	FirstStage    int     `json:"first_stage_replicates"`
	// Configurations counts the configurations; Extended those the second
	// stage gave more matched sets (0 before it is decided).
	Configurations int `json:"configurations"`
	Extended       int `json:"extended"`
	// SecondStageSets counts the second stage's matched sets, and
	// RemainingSets those with a row pending or running.
	SecondStageSets int `json:"second_stage_sets"`
	RemainingSets   int `json:"remaining_sets"`
}

// readStage reads the two-stage design's progress, nil without one.
func readStage(ctx context.Context, s *results.Store) (*StatusStage, error) {
	ts, ok, err := s.ReadTwoStage(ctx)
	if err != nil || !ok {
		return nil, err
	}
	st := &StatusStage{Stage: 1, HalfWidthPct: ts.HalfWidth, Metric: ts.Metric, MaxReplicates: ts.MaxReplicates, FirstStage: ts.FirstStage}
	rows, err := s.Rows(ctx)
	if err != nil {
		return nil, err
	}
	type setKey struct {
		pair string
		rep  int
	}
	pairs := map[string]bool{}
	sets := map[setKey]bool{} // second-stage set -> remaining
	for _, r := range rows {
		pairs[r.Pair] = true
		if ts.Stage(r.Replicate) != 2 {
			continue
		}
		k := setKey{r.Pair, r.Replicate}
		sets[k] = sets[k] || r.State == results.Pending || r.State == results.Running
	}
	st.Configurations = len(pairs)
	if ts.Decided.IsZero() {
		return st, nil
	}
	st.Stage = 2
	for _, d := range ts.Decisions {
		if d.Replicates > ts.FirstStage {
			st.Extended++
		}
	}
	st.SecondStageSets = len(sets)
	for _, remaining := range sets {
		if remaining {
			st.RemainingSets++
		}
	}
	return st, nil
}

// StatusRows counts rows by state.
type StatusRows struct {
	Total   int `json:"total"`
	Pending int `json:"pending"`
	Running int `json:"running"`
	Done    int `json:"done"`
	Invalid int `json:"invalid"`
	Failed  int `json:"failed"`
}

// StatusAttempts counts attempts by outcome.
type StatusAttempts struct {
	Total       int `json:"total"`
	Done        int `json:"done"`
	Invalid     int `json:"invalid"`
	Failed      int `json:"failed"`
	Interrupted int `json:"interrupted"`
	Running     int `json:"running"`
	// Superseded attempts finished but their matched set ran again whole
	// (after an interrupt or a restart); they count here only.
	Superseded int `json:"superseded"`
}

// StatusCurrent is the attempt in flight.
type StatusCurrent struct {
	Run     string          `json:"run"`
	Attempt int             `json:"attempt"`
	Phase   string          `json:"phase"`
	Started time.Time       `json:"started"`
	Row     json.RawMessage `json:"row"`
}

// StatusInfra is the infrastructure that is up and what it cost.
type StatusInfra struct {
	Up      []StatusGroup `json:"up"`
	CostUSD float64       `json:"cost_usd"`
}

// StatusGroup is one infrastructure group that is up.
type StatusGroup struct {
	Group   string          `json:"group"`
	Since   time.Time       `json:"since"`
	Outputs json.RawMessage `json:"outputs"`
}

// ReadStatus reads the status of the campaign in db without locking it.
func ReadStatus(ctx context.Context, db string, now time.Time) (Status, error) {
	s, err := results.OpenReadOnly(ctx, db)
	if err != nil {
		return Status{}, &badInput{err}
	}
	defer s.Close()
	p, err := s.Progress(ctx)
	if err != nil {
		return Status{}, fmt.Errorf("%s: %w", db, err)
	}
	st := Status{
		Campaign: p.Campaign, DB: db, PlanSHA256: p.PlanSHA256, Target: targetName(p.Target),
		Created: p.Created,
		Rows: StatusRows{Total: p.Total, Pending: p.Rows[results.Pending], Running: p.Rows[results.Running],
			Done: p.Rows[results.Done], Invalid: p.Rows[results.Invalid], Failed: p.Rows[results.Failed]},
		Attempts: StatusAttempts{Done: p.Attempts[results.OutcomeDone], Invalid: p.Attempts[results.OutcomeInvalid],
			Failed: p.Attempts[results.OutcomeFailed], Interrupted: p.Attempts[results.OutcomeInterrupted],
			Running: p.Attempts[""], Superseded: p.Superseded},
		Infrastructure: StatusInfra{Up: []StatusGroup{}, CostUSD: p.Cost},
	}
	st.Attempts.Total = st.Attempts.Done + st.Attempts.Invalid + st.Attempts.Failed +
		st.Attempts.Interrupted + st.Attempts.Running + st.Attempts.Superseded
	if pid, alive := results.Writer(db); alive {
		st.Writer = pid
	}
	if p.Current != nil {
		st.Current = &StatusCurrent{Run: p.Current.Run, Attempt: p.Current.Number, Phase: p.Current.Phase,
			Started: p.Current.Started, Row: p.CurrentPlan}
	}
	if !p.FirstStarted.IsZero() {
		end := p.LastEnded
		if p.LastStarted.After(end) {
			end = p.LastStarted
		}
		if st.Writer != 0 {
			end = now
		}
		st.ElapsedS = end.Sub(p.FirstStarted).Seconds()
	}
	left := st.Rows.Pending + st.Rows.Running
	if p.MeanAttempt > 0 {
		need := (p.MeanAttempt * time.Duration(left)).Seconds()
		st.LeftS = &need
		if st.Writer != 0 {
			eta := need
			st.ETAS = &eta
		}
	}
	// The embedded cluster lives and dies with its xp process.
	if st.Target == "local" && st.Writer == 0 {
		p.InfraUp = nil
	}
	for _, e := range p.InfraUp {
		st.Infrastructure.Up = append(st.Infrastructure.Up, StatusGroup{Group: e.Group, Since: e.Time, Outputs: e.Outputs})
		// A group still up has cost its hourly price since it came up.
		if e.HourlyUSD > 0 && now.After(e.Time) {
			st.Infrastructure.CostUSD += e.HourlyUSD * now.Sub(e.Time).Hours()
		}
	}
	if st.Stage, err = readStage(ctx, s); err != nil {
		return Status{}, fmt.Errorf("%s: two-stage design: %w", db, err)
	}
	st.Finished = left == 0 && (st.Stage == nil || st.Stage.Stage == 2)
	return st, nil
}

// targetName is "local" or the platform named in a target file's text.
func targetName(text string) string {
	if text == "local" || text == "" {
		return "local"
	}
	var tf targetFile
	if yaml.Unmarshal([]byte(text), &tf) == nil && tf.Platform != "" {
		return tf.Platform
	}
	return "file"
}

// WriteText writes the status for people.
func (st Status) WriteText(w io.Writer) {
	fmt.Fprintf(w, "campaign   %s (%s, target %s)\n", st.Campaign, st.DB, st.Target)
	r := st.Rows
	pct := 0.0
	if r.Total > 0 {
		pct = 100 * float64(r.Done+r.Invalid+r.Failed) / float64(r.Total)
	}
	fmt.Fprintf(w, "rows       %d total: %d done, %d invalid, %d failed, %d pending, %d running (%.0f%% finished)\n",
		r.Total, r.Done, r.Invalid, r.Failed, r.Pending, r.Running, pct)
	a := st.Attempts
	fmt.Fprintf(w, "attempts   %d: %d done, %d invalid, %d failed, %d interrupted, %d running",
		a.Total, a.Done, a.Invalid, a.Failed, a.Interrupted, a.Running)
	if a.Superseded > 0 {
		fmt.Fprintf(w, ", superseded %d", a.Superseded)
	}
	fmt.Fprintln(w)
	switch {
	case st.Current != nil && st.Writer != 0:
		fmt.Fprintf(w, "current    %s attempt %d, phase %s, since %s (xp pid %d)\n", st.Current.Run,
			st.Current.Attempt, orDash(st.Current.Phase), st.Current.Started.Local().Format(time.DateTime), st.Writer)
	case st.Current != nil:
		fmt.Fprintf(w, "current    %s attempt %d was left running by a process that ended; xp run --resume records it interrupted and runs it again\n",
			st.Current.Run, st.Current.Attempt)
	case st.Writer != 0:
		fmt.Fprintf(w, "current    xp pid %d is working (no row in flight)\n", st.Writer)
	}
	st.Stage.writeText(w)
	fmt.Fprintf(w, "elapsed    %s\n", fmtSeconds(st.ElapsedS))
	switch {
	case st.Finished:
	case st.ETAS != nil:
		fmt.Fprintf(w, "eta        %s\n", fmtSeconds(*st.ETAS))
	case st.LeftS != nil:
		fmt.Fprintf(w, "eta        none: not running; %d rows left, about %s of runs (xp run PLAN --db %s --resume continues)\n",
			st.Rows.Pending+st.Rows.Running, fmtSeconds(*st.LeftS), st.DB)
	default:
		fmt.Fprintf(w, "eta        none: not running; %d rows left (xp run PLAN --db %s --resume continues)\n", st.Rows.Pending+st.Rows.Running, st.DB)
	}
	var up []string
	for _, g := range st.Infrastructure.Up {
		up = append(up, fmt.Sprintf("%s (since %s)", g.Group, g.Since.Local().Format(time.DateTime)))
	}
	if len(up) == 0 {
		up = []string{"none"}
	}
	fmt.Fprintf(w, "infra up   %s; cost so far $%.2f\n", strings.Join(up, ", "), st.Infrastructure.CostUSD)
}

// writeText writes the stage line of a two-stage design (nothing without
// one).
func (s *StatusStage) writeText(w io.Writer) {
	if s == nil {
		return
	}
	if s.Stage == 1 {
		fmt.Fprintf(w, "stage      1 of 2 (half-width %g%% on %s, at most %d replicates): the plan's %d replicates; the second stage is decided when they are done\n",
			s.HalfWidthPct, s.Metric, s.MaxReplicates, s.FirstStage)
		return
	}
	fmt.Fprintf(w, "stage      2 of 2 (half-width %g%% on %s): %d of %d configurations got more matched sets; %d second-stage sets, %d remaining\n",
		s.HalfWidthPct, s.Metric, s.Extended, s.Configurations, s.SecondStageSets, s.RemainingSets)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func fmtSeconds(s float64) string {
	return (time.Duration(s) * time.Second).Round(time.Second).String()
}

// FindDB returns the only *.db file in dir, for `xp status` without --db.
func FindDB(dir string) (string, error) {
	m, err := filepath.Glob(filepath.Join(dir, "*.db"))
	if err != nil {
		return "", err
	}
	switch len(m) {
	case 1:
		return m[0], nil
	case 0:
		return "", badInputf("no campaign db in %s: give one with --db FILE", dir)
	}
	return "", badInputf("%d campaign dbs in %s (%s): choose one with --db FILE", len(m), dir, strings.Join(m, ", "))
}
