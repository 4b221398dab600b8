package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/results"
)

// Retry bounds how often the runner repeats a target's Up or Restart that
// failed with a transient error (target.IsTransient). Zero fields take the
// defaults.
type Retry struct {
	// Tries is how many times a step is tried in all; default 4.
	Tries int
	// Backoff is the wait before the second try, doubled before each
	// further one up to MaxBackoff; defaults 10s and 2m.
	Backoff, MaxBackoff time.Duration
}

func (r *Retry) defaults() {
	if r.Tries == 0 {
		r.Tries = 4
	}
	if r.Backoff == 0 {
		r.Backoff = 10 * time.Second
	}
	if r.MaxBackoff == 0 {
		r.MaxBackoff = 2 * time.Minute
	}
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// groupFailure is a group the target could not bring up (or restart) for
// good: its rows fail with it and the campaign goes on to the next group.
type groupFailure struct {
	step  string // "bring up" or "restart"
	group string // r.groupName
	tries int
	err   error
}

func (e *groupFailure) Error() string {
	kind := "permanent error"
	if target.IsTransient(e.err) {
		kind = fmt.Sprintf("still failing after %d tries", e.tries)
	}
	return fmt.Sprintf("%s %s (%s): %v", e.step, e.group, kind, e.err)
}

func (e *groupFailure) Unwrap() error { return e.err }

// up brings a group up and records it. A group that cannot be brought up
// is a *groupFailure, after the transient errors' retries and with what
// the failed tries left taken down again.
func (r *run) up(ctx, wctx context.Context, g target.Group) (target.Endpoints, error) {
	r.prog.setPhase("provision", time.Time{})
	r.prog.logf("phase=provision group=%q rows=%d", r.groupName(g.Key), len(g.Rows))
	ep, err := r.retrying(ctx, wctx, "bring up", "up-failed", g, func() (target.Endpoints, error) { return r.target.Up(ctx, g) })
	if err != nil {
		// Whatever the failed tries left: on a cloud, machines that cost.
		if derr := r.target.Down(wctx); derr != nil {
			r.prog.logf("taking down what the failed bring-up of %s left: %v", r.groupName(g.Key), derr)
		}
		return ep, err
	}
	ev := results.InfraEvent{Event: "up", Group: g.Key.ID(), Time: r.o.Now(), Outputs: endpointsJSON(ep)}
	if p, ok := r.target.(target.Pricer); ok {
		ev.HourlyUSD = p.HourlyUSD()
	}
	_, err = r.store.AddInfraEvent(wctx, ev)
	return ep, err
}

// restart restarts the services of the group that is up and records it.
func (r *run) restart(ctx, wctx context.Context, g target.Group, rs target.Restarter) (target.Endpoints, error) {
	r.prog.setPhase("restart", time.Time{})
	r.prog.logf("phase=restart group=%q", r.groupName(g.Key))
	ep, err := r.retrying(ctx, wctx, "restart", "restart-failed", g, func() (target.Endpoints, error) { return rs.Restart(ctx, g) })
	if err != nil {
		return ep, err
	}
	_, err = r.store.AddInfraEvent(wctx, results.InfraEvent{
		Event: "restart", Group: g.Key.ID(), Time: r.o.Now(), Outputs: endpointsJSON(ep)})
	return ep, err
}

// retrying calls step until it succeeds, fails with an error that is not
// transient, or has been tried r.o.UpRetry.Tries times, waiting with
// backoff between tries. Every failed try is an infrastructure event
// named event.
func (r *run) retrying(ctx, wctx context.Context, name, event string, g target.Group,
	step func() (target.Endpoints, error)) (target.Endpoints, error) {
	wait := r.o.UpRetry.Backoff
	for try := 1; ; try++ {
		started := r.o.Now()
		ep, err := step()
		if err == nil {
			return ep, nil
		}
		if ctx.Err() != nil {
			return ep, ErrInterrupted
		}
		ended := r.o.Now()
		if _, serr := r.store.AddInfraEvent(wctx, results.InfraEvent{Event: event, Group: g.Key.ID(),
			Time: ended, Started: started, Duration: ended.Sub(started), Error: err.Error()}); serr != nil {
			return ep, serr
		}
		if !target.IsTransient(err) || try >= r.o.UpRetry.Tries {
			gf := &groupFailure{step: name, group: r.groupName(g.Key), tries: try, err: err}
			r.prog.logf("%v", gf)
			return ep, gf
		}
		r.prog.logf("%s %s failed (transient, try %d of %d), trying again in %s: %v",
			name, r.groupName(g.Key), try, r.o.UpRetry.Tries, wait, err)
		if r.o.Sleep(ctx, wait) != nil {
			return ep, ErrInterrupted
		}
		wait = min(2*wait, r.o.UpRetry.MaxBackoff)
	}
}

// groupName names group k in the log and in errors: by the broker
// software the target will run for it (target.BrokerPlanner), not the
// kafka_version its rows ask for, when the target says; else by k.
func (r *run) groupName(k planner.InfraKey) string { return groupName(r.target, k) }

func groupName(t target.Target, k planner.InfraKey) string {
	if bp, ok := t.(target.BrokerPlanner); ok {
		if b := bp.PlannedBroker(k); b.Kind != "" {
			return k.WithBroker(b.Kind, b.Version)
		}
	}
	return k.String()
}

// down takes the group down and records it.
func (r *run) down(wctx context.Context, g target.Group) error {
	r.prog.logf("phase=teardown group=%q", r.groupName(g.Key))
	ev := results.InfraEvent{Event: "down", Group: g.Key.ID()}
	derr := r.target.Down(wctx)
	if derr != nil {
		r.prog.logf("infrastructure down: %v", derr)
		ev.Event, ev.Error = "down-failed", derr.Error()
	}
	ev.Time = r.o.Now()
	if derr == nil {
		ev.Cost = r.costUp(wctx, g, ev.Time)
	}
	r.store.AddInfraEvent(wctx, ev)
	if derr != nil {
		return fmt.Errorf("bring infrastructure down: %w", derr)
	}
	return nil
}

// costUp is what g's time up until down cost, at the price its "up"
// event recorded (target.Pricer); 0 for a target that prices nothing.
func (r *run) costUp(wctx context.Context, g target.Group, down time.Time) float64 {
	if _, ok := r.target.(target.Pricer); !ok {
		return 0
	}
	evs, err := r.store.InfraEvents(wctx)
	if err != nil {
		r.prog.logf("the cost of %s is not recorded: %v", g.Key, err)
		return 0
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if e := evs[i]; e.Group == g.Key.ID() && e.Event == "up" {
			return e.HourlyUSD * down.Sub(e.Time).Hours()
		}
	}
	return 0
}

// failRows records a failed attempt, with the group's failure as its
// error, for each row that has attempts left.
func (r *run) failRows(wctx context.Context, rows []planner.Row, gf *groupFailure) error {
	n := 0
	for _, row := range rows {
		atts, err := r.store.RunAttempts(wctx, row.Run)
		if err != nil {
			return err
		}
		failed := 0
		for _, a := range atts {
			if a.Outcome == results.OutcomeFailed {
				failed++
			}
		}
		if failed >= r.o.MaxAttempts {
			continue
		}
		now := r.o.Now()
		// No broker ran: the group names none.
		env, _ := json.Marshal(attemptEnv{Security: row.Security, Mode: target.ModeKey(&row),
			Group: row.InfraKey().WithBroker("", ""), XPVersion: r.o.XPVersion})
		ev := results.Evidence{Outcome: results.OutcomeFailed, Error: gf.Error(), Ended: now}
		if _, err := r.store.RecordAttempt(wctx, row.Run, now, env, ev); err != nil {
			return fmt.Errorf("record the failure of %s: %w", row.Run, err)
		}
		r.ran++
		n++
		if failed+1 >= r.o.MaxAttempts {
			r.prog.rowFailed()
		}
	}
	r.prog.logf("%d rows of %s recorded failed; going on with the next group", n, gf.group)
	return nil
}

// collectLogs fetches the target's logs after a failed attempt, within
// r.o.LogTimeout, noting in the attempt's log what it could not fetch.
func (r *run) collectLogs(wctx context.Context, since time.Time, log *attemptLog) []results.Log {
	lc, ok := r.target.(target.LogCollector)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(wctx, r.o.LogTimeout)
	defer cancel()
	logs, err := lc.CollectLogs(ctx, since)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("not all within %s: %w", r.o.LogTimeout, err)
		}
		log.printf("collecting the target's logs: %v", err)
	}
	var out []results.Log
	for _, l := range logs {
		out = append(out, results.Log{Name: "target/" + l.Name, Text: l.Text})
	}
	log.printf("collected %d logs of the target", len(out))
	return out
}
