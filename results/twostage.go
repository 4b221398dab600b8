package results

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"time"
)

// TwoStage is a campaign's two-stage design (Stein 1945): the plan's
// replicates are the first stage; once they are done, each configuration
// gets the matched sets its interval needs to reach the asked half-width.
type TwoStage struct {
	// HalfWidth is the asked half-width of each configuration's interval
	// of the mean penalty of Metric, in percentage points, at Confidence.
	HalfWidth  float64
	Metric     string
	Confidence float64
	// MaxReplicates bounds the replicates of any configuration.
	MaxReplicates int
	// FirstStage is the plan's replicates: the first stage.
	FirstStage int
	// Decided is when the second stage was appended; zero before.
	Decided time.Time
	// Decisions hold, per configuration, what the first stage showed and
	// what was decided (sorted by pair).
	Decisions []StageDecision
}

// StageDecision is the second-stage decision for one configuration.
type StageDecision struct {
	Pair string
	// Treatment is the level whose penalty needs the most sets.
	Treatment string
	// Sets is the first stage's healthy matched sets of that level; SD the
	// standard deviation of the penalty over them, in points (NaN below
	// two sets).
	Sets int
	SD   float64
	// Needed is the healthy sets Stein's rule asks for (0 when it cannot
	// say: fewer than two healthy sets).
	Needed int
	// Replicates is the configuration's replicates in all, first stage
	// included, at most MaxReplicates.
	Replicates int
}

// Stage returns the stage a replicate belongs to: 1 for the plan's, 2 for
// appended ones.
func (t TwoStage) Stage(replicate int) int {
	if replicate > t.FirstStage {
		return 2
	}
	return 1
}

// ErrTwoStageMismatch: the db's two-stage design differs from the one asked.
var ErrTwoStageMismatch = errors.New("the campaign's two-stage design differs")

// hasTable reports whether the database has the named table (older
// schemas a read-only store reads lack the newer ones).
func (s *Store) hasTable(ctx context.Context, name string) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, name).Scan(&n)
	return n > 0, err
}

// ReadTwoStage returns the campaign's two-stage design; ok is false for a
// campaign without one.
func (s *Store) ReadTwoStage(ctx context.Context) (t TwoStage, ok bool, err error) {
	if has, err := s.hasTable(ctx, "two_stage"); err != nil || !has {
		return t, false, err
	}
	var decided string
	err = s.db.QueryRowContext(ctx, `SELECT halfwidth, metric, confidence, max_replicates, first_stage, decided FROM two_stage WHERE id = 1`).
		Scan(&t.HalfWidth, &t.Metric, &t.Confidence, &t.MaxReplicates, &t.FirstStage, &decided)
	if errors.Is(err, sql.ErrNoRows) {
		return t, false, nil
	}
	if err != nil {
		return t, false, err
	}
	if decided != "" {
		if t.Decided, err = parseTime(decided); err != nil {
			return t, false, fmt.Errorf("two_stage decided: %w", err)
		}
	}
	rs, err := s.db.QueryContext(ctx, `SELECT pair, treatment, sets, sd, needed, replicates FROM stage_decision ORDER BY pair`)
	if err != nil {
		return t, false, err
	}
	defer rs.Close()
	for rs.Next() {
		var d StageDecision
		var sd sql.NullFloat64
		if err := rs.Scan(&d.Pair, &d.Treatment, &d.Sets, &sd, &d.Needed, &d.Replicates); err != nil {
			return t, false, err
		}
		d.SD = math.NaN()
		if sd.Valid {
			d.SD = sd.Float64
		}
		t.Decisions = append(t.Decisions, d)
	}
	return t, true, rs.Err()
}

// SetTwoStage records the campaign's two-stage design (without decisions)
// if it has none; if it has one, it must be the same (ErrTwoStageMismatch
// otherwise, naming both).
func (s *Store) SetTwoStage(ctx context.Context, t TwoStage) error {
	if s.readOnly {
		return ErrReadOnly
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		var have TwoStage
		err := tx.QueryRowContext(ctx, `SELECT halfwidth, metric, confidence, max_replicates, first_stage FROM two_stage WHERE id = 1`).
			Scan(&have.HalfWidth, &have.Metric, &have.Confidence, &have.MaxReplicates, &have.FirstStage)
		switch {
		case err == nil:
			if have.HalfWidth != t.HalfWidth || have.Metric != t.Metric || have.Confidence != t.Confidence ||
				have.MaxReplicates != t.MaxReplicates || have.FirstStage != t.FirstStage {
				return fmt.Errorf("%w: %s has half-width %g%% of %s at %g, at most %d replicates; asked %g%% of %s at %g, at most %d",
					ErrTwoStageMismatch, s.path, have.HalfWidth, have.Metric, have.Confidence, have.MaxReplicates,
					t.HalfWidth, t.Metric, t.Confidence, t.MaxReplicates)
			}
			return nil
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO two_stage (id, halfwidth, metric, confidence, max_replicates, first_stage)
			VALUES (1, ?, ?, ?, ?, ?)`, t.HalfWidth, t.Metric, t.Confidence, t.MaxReplicates, t.FirstStage)
		return err
	})
}

// AppendStage records the second-stage decisions and appends the second
// stage's rows (pending) in one transaction, so that a kill leaves either
// no decision or the decision with every row it asked for.
func (s *Store) AppendStage(ctx context.Context, decided time.Time, decisions []StageDecision, rows []Row) error {
	if s.readOnly {
		return ErrReadOnly
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE two_stage SET decided = ? WHERE id = 1 AND decided = ''`, formatTime(decided))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return fmt.Errorf("%s: no two-stage design awaiting its second stage", s.path)
		}
		for _, d := range decisions {
			var sd any
			if !math.IsNaN(d.SD) {
				sd = d.SD
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO stage_decision (pair, treatment, sets, sd, needed, replicates) VALUES (?, ?, ?, ?, ?, ?)`,
				d.Pair, d.Treatment, d.Sets, sd, d.Needed, d.Replicates); err != nil {
				return err
			}
		}
		st, err := tx.PrepareContext(ctx, `INSERT INTO row (run, plan_order, cell, pair, replicate, block, plan_row, state)
			VALUES (?, ?, ?, ?, ?, ?, ?, 'pending')`)
		if err != nil {
			return err
		}
		defer st.Close()
		for _, r := range rows {
			if _, err := st.ExecContext(ctx, r.Run, r.Order, r.Cell, r.Pair, r.Replicate, r.Block, string(r.Plan)); err != nil {
				return fmt.Errorf("append row %q: %w", r.Run, err)
			}
		}
		return nil
	})
}
