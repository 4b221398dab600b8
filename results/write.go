package results

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// PlanMismatchError reports a plan that differs from the registered one.
type PlanMismatchError struct {
	Path       string
	Registered string // SHA-256 of the registered plan
	Given      string
}

func (e *PlanMismatchError) Error() string {
	return fmt.Sprintf("%s already holds a different plan (sha256 %.12s…, this plan %.12s…): use a new --db for a new plan",
		e.Path, e.Registered, e.Given)
}

func (e *PlanMismatchError) Unwrap() error { return ErrPlanMismatch }

// PlanSHA256 returns the hex SHA-256 of plan bytes.
func PlanSHA256(plan []byte) string {
	h := sha256.Sum256(plan)
	return hex.EncodeToString(h[:])
}

// Register records the campaign and its rows (all pending) in one
// transaction. If the database already holds a campaign, it checks that the
// plan is the same (by SHA-256) and changes nothing: created is false. A
// different plan fails with a *PlanMismatchError.
func (s *Store) Register(ctx context.Context, c Campaign, rows []Row) (created bool, err error) {
	if s.readOnly {
		return false, ErrReadOnly
	}
	if c.PlanSHA256 == "" {
		c.PlanSHA256 = PlanSHA256(c.Plan)
	}
	if c.Created.IsZero() {
		c.Created = time.Now()
	}
	if len(c.Host) == 0 {
		c.Host = json.RawMessage("{}")
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		var have string
		switch err := tx.QueryRowContext(ctx, `SELECT plan_sha256 FROM campaign WHERE id = 1`).Scan(&have); {
		case err == nil:
			if have != c.PlanSHA256 {
				return &PlanMismatchError{Path: s.path, Registered: have, Given: c.PlanSHA256}
			}
			return nil
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO campaign
			(id, name, spec, plan, plan_sha256, target, seed, xp_version, host, created)
			VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			c.Name, c.Spec, c.Plan, c.PlanSHA256, c.Target, c.Seed, c.XPVersion, string(c.Host),
			formatTime(c.Created)); err != nil {
			return err
		}
		st, err := tx.PrepareContext(ctx, `INSERT INTO row
			(run, plan_order, cell, pair, replicate, block, plan_row, state)
			VALUES (?, ?, ?, ?, ?, ?, ?, 'pending')`)
		if err != nil {
			return err
		}
		defer st.Close()
		for _, r := range rows {
			plan := r.Plan
			if len(plan) == 0 {
				plan = json.RawMessage("{}")
			}
			if _, err := st.ExecContext(ctx, r.Run, r.Order, r.Cell, r.Pair, r.Replicate, r.Block, string(plan)); err != nil {
				return fmt.Errorf("register row %q: %w", r.Run, err)
			}
		}
		created = true
		return nil
	})
	return created, err
}

// ReconcileInterrupted turns every attempt left without an outcome (its
// process died) into an interrupted one ended at `at`, and puts running rows
// back to pending, in one transaction. It returns the attempts changed.
func (s *Store) ReconcileInterrupted(ctx context.Context, at time.Time) (int, error) {
	if s.readOnly {
		return 0, ErrReadOnly
	}
	var n int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE attempt SET outcome = 'interrupted', ended = ?,
			error = 'the xp process ended before the attempt was recorded'
			WHERE outcome IS NULL`, formatTime(at))
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		_, err = tx.ExecContext(ctx, `UPDATE row SET state = 'pending' WHERE state = 'running'`)
		return err
	})
	return int(n), err
}

// Supersede marks the latest finished (done or invalid) attempt of each
// run superseded with why, and puts the runs back to pending, in one
// transaction: their matched set runs again whole. It returns the attempts
// marked.
func (s *Store) Supersede(ctx context.Context, runs []string, why string) (int, error) {
	if s.readOnly {
		return 0, ErrReadOnly
	}
	if why == "" {
		why = "superseded"
	}
	var n int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		for _, run := range runs {
			res, err := tx.ExecContext(ctx, `UPDATE attempt SET superseded = ? WHERE id =
				(SELECT max(id) FROM attempt WHERE run = ? AND outcome IN ('done', 'invalid') AND superseded = '')`, why, run)
			if err != nil {
				return err
			}
			k, _ := res.RowsAffected()
			n += k
			if _, err := tx.ExecContext(ctx, `UPDATE row SET state = 'pending' WHERE run = ? AND state IN ('done', 'invalid')`, run); err != nil {
				return err
			}
		}
		return nil
	})
	return int(n), err
}

// StartAttempt records a new attempt of run (number = previous + 1) and
// marks the row running, in one transaction.
func (s *Store) StartAttempt(ctx context.Context, run string, started time.Time, env json.RawMessage) (Attempt, error) {
	if s.readOnly {
		return Attempt{}, ErrReadOnly
	}
	var a Attempt
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var err error
		a, err = startAttempt(ctx, tx, run, started, env)
		return err
	})
	return a, err
}

func startAttempt(ctx context.Context, tx *sql.Tx, run string, started time.Time, env json.RawMessage) (Attempt, error) {
	if len(env) == 0 {
		env = json.RawMessage("{}")
	}
	res, err := tx.ExecContext(ctx, `UPDATE row SET state = 'running' WHERE run = ?`, run)
	if err != nil {
		return Attempt{}, err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return Attempt{}, fmt.Errorf("start attempt: no row %q in the campaign", run)
	}
	var num int
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(number), 0) + 1 FROM attempt WHERE run = ?`, run).Scan(&num); err != nil {
		return Attempt{}, err
	}
	res, err = tx.ExecContext(ctx, `INSERT INTO attempt (run, number, started, environment) VALUES (?, ?, ?, ?)`,
		run, num, formatTime(started), string(env))
	if err != nil {
		return Attempt{}, err
	}
	id, err := res.LastInsertId()
	if err != nil {
		return Attempt{}, err
	}
	return Attempt{ID: id, Run: run, Number: num, Started: started, Environment: env}, nil
}

// SetPhase records the phase of a running attempt.
func (s *Store) SetPhase(ctx context.Context, attempt int64, phase string) error {
	if s.readOnly {
		return ErrReadOnly
	}
	_, err := s.db.ExecContext(ctx, `UPDATE attempt SET phase = ? WHERE id = ? AND outcome IS NULL`, phase, attempt)
	return err
}

// FinishAttempt writes the outcome and all evidence of an attempt and sets
// its row's state (Outcome.RowState), in one transaction.
func (s *Store) FinishAttempt(ctx context.Context, attempt int64, ev Evidence) error {
	if s.readOnly {
		return ErrReadOnly
	}
	return s.tx(ctx, func(tx *sql.Tx) error { return finishAttempt(ctx, tx, attempt, ev) })
}

// RecordAttempt adds a complete attempt of run with its evidence in one
// transaction (for imported evidence).
func (s *Store) RecordAttempt(ctx context.Context, run string, started time.Time, env json.RawMessage, ev Evidence) (Attempt, error) {
	if s.readOnly {
		return Attempt{}, ErrReadOnly
	}
	var a Attempt
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var err error
		if a, err = startAttempt(ctx, tx, run, started, env); err != nil {
			return err
		}
		return finishAttempt(ctx, tx, a.ID, ev)
	})
	return a, err
}

// NewAttempt is one complete attempt for RecordAttempts.
type NewAttempt struct {
	Run         string
	Started     time.Time
	Environment json.RawMessage
	Evidence    Evidence
}

// RecordAttempts adds many complete attempts in one transaction (bulk
// import): all or none are stored.
func (s *Store) RecordAttempts(ctx context.Context, atts []NewAttempt) ([]Attempt, error) {
	if s.readOnly {
		return nil, ErrReadOnly
	}
	out := make([]Attempt, 0, len(atts))
	err := s.tx(ctx, func(tx *sql.Tx) error {
		for _, na := range atts {
			a, err := startAttempt(ctx, tx, na.Run, na.Started, na.Environment)
			if err != nil {
				return err
			}
			if err := finishAttempt(ctx, tx, a.ID, na.Evidence); err != nil {
				return err
			}
			out = append(out, a)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func finishAttempt(ctx context.Context, tx *sql.Tx, id int64, ev Evidence) error {
	if !ev.Outcome.valid() {
		return fmt.Errorf("finish attempt %d: unknown outcome %q", id, ev.Outcome)
	}
	if ev.Ended.IsZero() {
		ev.Ended = time.Now()
	}
	reasons := ev.Reasons
	if reasons == nil {
		reasons = []string{}
	}
	rj, err := json.Marshal(reasons)
	if err != nil {
		return err
	}
	var run string
	if err := tx.QueryRowContext(ctx, `SELECT run FROM attempt WHERE id = ? AND outcome IS NULL`, id).Scan(&run); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("finish attempt %d: no such running attempt", id)
		}
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE attempt SET outcome = ?, ended = ?, reasons = ?, error = ? WHERE id = ?`,
		string(ev.Outcome), formatTime(ev.Ended), string(rj), ev.Error, id); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE row SET state = ? WHERE run = ?`, string(ev.Outcome.RowState()), run); err != nil {
		return err
	}
	if len(ev.Environment) > 0 {
		if !json.Valid(ev.Environment) || bytes.TrimSpace(ev.Environment)[0] != '{' {
			return fmt.Errorf("finish attempt %d: environment is not a JSON object", id)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE attempt SET environment = ? WHERE id = ?`, string(ev.Environment), id); err != nil {
			return err
		}
	}
	if len(ev.Metrics) > 0 {
		st, err := tx.PrepareContext(ctx, `INSERT OR REPLACE INTO metric (attempt, name, value) VALUES (?, ?, ?)`)
		if err != nil {
			return err
		}
		defer st.Close()
		for name, v := range ev.Metrics {
			if _, err := st.ExecContext(ctx, id, name, v); err != nil {
				return fmt.Errorf("metric %s: %w", name, err)
			}
		}
	}
	if len(ev.Histograms) > 0 {
		st, err := tx.PrepareContext(ctx, `INSERT OR REPLACE INTO histogram (attempt, kind, second, data) VALUES (?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer st.Close()
		for _, h := range ev.Histograms {
			if _, err := st.ExecContext(ctx, id, h.Kind, h.Second, h.Data); err != nil {
				return fmt.Errorf("histogram %s/%d: %w", h.Kind, h.Second, err)
			}
		}
	}
	if len(ev.Series) > 0 {
		st, err := tx.PrepareContext(ctx, `INSERT OR REPLACE INTO series (attempt, second, published, consumed, backlog) VALUES (?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer st.Close()
		for _, p := range ev.Series {
			if _, err := st.ExecContext(ctx, id, p.Second, p.Published, p.Consumed, p.Backlog); err != nil {
				return err
			}
		}
	}
	if len(ev.Telemetry) > 0 {
		st, err := tx.PrepareContext(ctx, `INSERT INTO telemetry (attempt, host, ts, metric, value) VALUES (?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer st.Close()
		for _, m := range ev.Telemetry {
			ts := float64(m.TS.UnixNano()) / 1e9
			if _, err := st.ExecContext(ctx, id, m.Host, ts, m.Metric, m.Value); err != nil {
				return err
			}
		}
	}
	for _, l := range ev.Logs {
		z, err := gzipBytes(l.Text)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO log (attempt, name, encoding, data) VALUES (?, ?, 'gzip', ?)`,
			id, l.Name, z); err != nil {
			return err
		}
	}
	return nil
}

// AddInfraEvent records an infrastructure event.
func (s *Store) AddInfraEvent(ctx context.Context, e InfraEvent) (int64, error) {
	if s.readOnly {
		return 0, ErrReadOnly
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	if len(e.Outputs) == 0 {
		e.Outputs = json.RawMessage("{}")
	}
	started := ""
	if !e.Started.IsZero() {
		started = formatTime(e.Started)
	}
	res, err := s.db.ExecContext(ctx, `INSERT INTO infra (event, group_key, time, outputs, cost, started, duration_s, error, hourly_usd)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		e.Event, e.Group, formatTime(e.Time), string(e.Outputs), e.Cost, started, e.Duration.Seconds(), e.Error, e.HourlyUSD)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// tx runs f in one (immediate) transaction.
func (s *Store) tx(ctx context.Context, f func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

func gzipBytes(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
