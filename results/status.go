package results

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"
)

// Progress is a campaign's progress, read with a handful of indexed queries
// so that it stays fast on campaigns of thousands of rows.
type Progress struct {
	Campaign   string
	PlanSHA256 string
	Target     string
	Created    time.Time
	Rows       map[State]int // every state present, zero when none
	Total      int
	// Attempts counts attempts by outcome; "" counts running ones.
	// Superseded attempts are counted in Superseded only.
	Attempts   map[Outcome]int
	Superseded int
	// Current is the attempt running now (or left running by a killed
	// process), nil when none.
	Current *Attempt
	// CurrentPlan is the plan row of Current.
	CurrentPlan json.RawMessage
	// FirstStarted and LastStarted are when the first and the latest
	// attempt started; LastEnded when the latest one ended (zero if none).
	FirstStarted, LastStarted, LastEnded time.Time
	// MeanAttempt is the mean wall time of attempts that completed (done,
	// invalid or failed).
	MeanAttempt time.Duration
	// InfraUp lists each group still up (its latest event is "up", its
	// warm-up, or a restart of its services: "restart", "restart-failed") by its first
	// "up" since it was last down, with its latest outputs.
	InfraUp []InfraEvent
	// Cost is the sum of the cost of every infrastructure event, USD.
	Cost float64
}

// Progress reads the campaign's progress.
func (s *Store) Progress(ctx context.Context) (Progress, error) {
	var p Progress
	c, err := s.campaignHead(ctx)
	if err != nil {
		return p, err
	}
	p.Campaign, p.PlanSHA256, p.Target, p.Created = c.Name, c.PlanSHA256, c.Target, c.Created
	for _, read := range []func(context.Context, *Progress) error{
		s.countRows, s.countAttempts, s.countSuperseded, s.attemptTimes, s.currentAttempt,
	} {
		if err := read(ctx, &p); err != nil {
			return p, err
		}
	}
	events, err := s.InfraEvents(ctx)
	if err != nil {
		return p, err
	}
	p.InfraUp, p.Cost = infraUp(events)
	return p, nil
}

// countRows counts the rows per state (every state present, 0 if none)
// and in total.
func (s *Store) countRows(ctx context.Context, p *Progress) error {
	p.Rows = map[State]int{}
	for _, st := range States {
		p.Rows[st] = 0
	}
	rs, err := s.db.QueryContext(ctx, `SELECT state, count(*) FROM row GROUP BY state`)
	if err != nil {
		return err
	}
	defer rs.Close()
	for rs.Next() {
		var st string
		var n int
		if err := rs.Scan(&st, &n); err != nil {
			return err
		}
		p.Rows[State(st)] = n
		p.Total += n
	}
	return rs.Err()
}

// countAttempts counts the attempts in force per outcome ("" for one
// under way).
func (s *Store) countAttempts(ctx context.Context, p *Progress) error {
	p.Attempts = map[Outcome]int{}
	rs, err := s.db.QueryContext(ctx, `SELECT coalesce(outcome, ''), count(*) FROM attempt WHERE superseded = '' GROUP BY outcome`)
	if err != nil {
		return err
	}
	defer rs.Close()
	for rs.Next() {
		var o string
		var n int
		if err := rs.Scan(&o, &n); err != nil {
			return err
		}
		p.Attempts[Outcome(o)] = n
	}
	return rs.Err()
}

// countSuperseded counts the superseded attempts.
func (s *Store) countSuperseded(ctx context.Context, p *Progress) error {
	return s.db.QueryRowContext(ctx, `SELECT count(*) FROM attempt WHERE superseded != ''`).Scan(&p.Superseded)
}

// attemptTimes reads when the first attempt started, the last started and
// the last ended, and the mean duration of a finished attempt.
func (s *Store) attemptTimes(ctx context.Context, p *Progress) error {
	var first, lastStart, last sql.NullString
	var mean sql.NullFloat64
	if err := s.db.QueryRowContext(ctx, `SELECT min(started), max(started), max(ended),
		avg(CASE WHEN outcome IN ('done', 'invalid', 'failed')
			THEN (julianday(ended) - julianday(started)) * 86400.0 END)
		FROM attempt`).Scan(&first, &lastStart, &last, &mean); err != nil {
		return err
	}
	var err error
	if p.FirstStarted, err = parseTime(first.String); err != nil {
		return err
	}
	if p.LastEnded, err = parseTime(last.String); err != nil {
		return err
	}
	if p.LastStarted, err = parseTime(lastStart.String); err != nil {
		return err
	}
	// julianday() carries about a millisecond of rounding.
	p.MeanAttempt = time.Duration(mean.Float64 * float64(time.Second)).Round(time.Millisecond)
	return nil
}

// currentAttempt reads the latest attempt under way, if any, with its
// row's plan.
func (s *Store) currentAttempt(ctx context.Context, p *Progress) error {
	var cur Attempt
	var started, plan string
	err := s.db.QueryRowContext(ctx, `SELECT a.id, a.run, a.number, a.started, a.phase, r.plan_row
		FROM attempt a JOIN row r ON r.run = a.run WHERE a.outcome IS NULL ORDER BY a.id DESC LIMIT 1`).
		Scan(&cur.ID, &cur.Run, &cur.Number, &started, &cur.Phase, &plan)
	switch {
	case err == nil:
		if cur.Started, err = parseTime(started); err != nil {
			return err
		}
		p.Current, p.CurrentPlan = &cur, json.RawMessage(plan)
	case !errors.Is(err, sql.ErrNoRows):
		return err
	}
	return nil
}

// infraUp lists, from the infrastructure events in order, each group
// still up (its latest event "up", "restart" or "restart-failed") in the
// order groups first appear, and sums every event's cost. A group is
// reported by its first "up" since it was last down (when its machines
// came up, with their price: a provisioner records its own "up" before
// the runner's), with the outputs of its latest "up" or "restart" (how to
// reach it now).
func infraUp(events []InfraEvent) (up []InfraEvent, cost float64) {
	latest, firstUp := map[string]InfraEvent{}, map[string]InfraEvent{}
	outputs := map[string][]byte{}
	var order []string
	for _, e := range events {
		cost += e.Cost
		if _, ok := latest[e.Group]; !ok {
			order = append(order, e.Group)
		}
		latest[e.Group] = e
		switch e.Event {
		case "down":
			delete(firstUp, e.Group)
		case "up":
			if _, ok := firstUp[e.Group]; !ok {
				firstUp[e.Group] = e
			}
		}
		if (e.Event == "up" || e.Event == "restart") && len(e.Outputs) > 0 {
			outputs[e.Group] = e.Outputs
		}
	}
	for _, g := range order {
		switch latest[g].Event {
		case "up", "warmup", "restart", "restart-failed":
			e, ok := firstUp[g]
			if !ok {
				e = latest[g]
			}
			e.Outputs = outputs[g]
			up = append(up, e)
		}
	}
	return up, cost
}

// campaignHead reads the campaign without its plan and spec bytes.
func (s *Store) campaignHead(ctx context.Context) (Campaign, error) {
	var c Campaign
	var created string
	err := s.db.QueryRowContext(ctx, `SELECT name, plan_sha256, target, created FROM campaign WHERE id = 1`).
		Scan(&c.Name, &c.PlanSHA256, &c.Target, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return c, ErrNoCampaign
	}
	if err != nil {
		return c, err
	}
	c.Created, err = parseTime(created)
	return c, err
}
