package runner

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/results"
)

// What the runner does for targets of paid infrastructure
// (target.EventRecorder, target.BudgetKeeper, target.Finisher).

// recordEventsIn hands a target that records its own infrastructure
// events the campaign db the runner holds open.
func recordEventsIn(t target.Target, s *results.Store) {
	if er, ok := t.(target.EventRecorder); ok {
		er.RecordEvents(s)
	}
}

// checkBudget stops the campaign before another attempt once the target
// says its spending reached the budget: the caller's teardown runs, and
// the campaign ends unfinished (exit 3).
func (r *run) checkBudget(ctx context.Context) error {
	bk, ok := r.target.(target.BudgetKeeper)
	if !ok {
		return nil
	}
	if err := bk.OverBudget(ctx); err != nil {
		r.prog.logf("budget: %v; stopping the campaign", err)
		return fmt.Errorf("%w: %w", ErrUnfinished, err)
	}
	return nil
}

// finish applies the target's teardown policy at the end of the campaign
// (unless --keep): ok when the campaign ended with every row done.
func finish(ctx context.Context, t target.Target, keep, ok bool) error {
	f, is := t.(target.Finisher)
	if !is || keep {
		return nil
	}
	if err := f.Finish(context.WithoutCancel(ctx), ok); err != nil {
		return fmt.Errorf("teardown: %w", err)
	}
	return nil
}

// preflight asks a target that checks the infrastructure before the first
// row (target.Preflighter), handing it the events of the campaign db when
// there is one (read only). Its refusal is bad input: nothing was written
// and nothing runs.
func preflight(ctx context.Context, t target.Target, p *plan, o Options) (*target.PreflightReport, error) {
	pf, ok := t.(target.Preflighter)
	if !ok {
		return nil, nil
	}
	var events target.InfraEvents
	if _, err := os.Stat(o.DB); err == nil {
		s, err := results.OpenReadOnly(ctx, o.DB)
		switch {
		case errors.Is(err, results.ErrOlderSchema):
			// Read once --resume has migrated it; until then, no events.
		case err != nil:
			return nil, &badInput{err}
		default:
			defer s.Close()
			events = s
		}
	}
	rep, err := pf.Preflight(ctx, p.rows, events)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ErrInterrupted
		}
		return nil, &badInput{fmt.Errorf("target %s: %w", o.Target, err)}
	}
	for _, line := range rep.Summary {
		fmt.Fprintf(o.Stderr, "xp: target: %s\n", line)
	}
	return &rep, nil
}
