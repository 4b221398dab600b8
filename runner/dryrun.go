package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/results"
)

// dryRun prints what Run would do, reading the db (if any) read-only.
func dryRun(ctx context.Context, o Options, p *plan, t target.Target, groups []target.Group, pre *target.PreflightReport) (Summary, error) {
	sum := Summary{DB: o.DB, Total: len(p.rows), Rows: map[results.State]int{}}
	states := map[string]results.State{}
	failedCounts := map[string]map[results.Outcome]int{}
	if _, err := os.Stat(o.DB); err == nil {
		s, err := results.OpenReadOnly(ctx, o.DB)
		if err != nil {
			return sum, &badInput{err}
		}
		defer s.Close()
		c, err := s.Campaign(ctx)
		switch {
		case errors.Is(err, results.ErrNoCampaign):
		case err != nil:
			return sum, err
		case c.PlanSHA256 != results.PlanSHA256(p.bytes):
			return sum, &badInput{&results.PlanMismatchError{Path: o.DB, Registered: c.PlanSHA256,
				Given: results.PlanSHA256(p.bytes)}}
		default:
			rows, err := s.Rows(ctx)
			if err != nil {
				return sum, err
			}
			for _, r := range rows {
				states[r.Run] = r.State
			}
			if failedCounts, err = s.AttemptCounts(ctx); err != nil {
				return sum, err
			}
			if prog, _ := s.HasProgress(ctx); prog && !o.Resume {
				return sum, badInputf("%s already has progress: add --resume to continue it, or give a new --db", o.DB)
			}
		}
	}
	w := o.Stdout
	fmt.Fprintf(w, "plan %s: campaign %s, %d rows, %d infrastructure groups; db %s; target %s\n",
		o.Plan, p.rows[0].Campaign, len(p.rows), len(groups), o.DB, o.Target)
	if pre != nil {
		for _, line := range pre.Summary {
			fmt.Fprintf(w, "target: %s\n", line)
		}
	}
	// Rows to run, and the finished members of matched sets that have one
	// (they run again with it, as xp run keeps sets whole).
	type setKey struct {
		pair string
		rep  int
	}
	willRun := map[string]bool{}
	setRuns := map[setKey]bool{}
	for _, r := range p.rows {
		st, ok := states[r.Run]
		if !ok {
			st = results.Pending
		}
		if st == results.Pending || st == results.Running ||
			st == results.Failed && failedCounts[r.Run][results.OutcomeFailed] < o.MaxAttempts {
			willRun[r.Run] = true
			setRuns[setKey{r.Pair, r.Replicate}] = true
		}
	}
	for _, r := range p.rows {
		if st := states[r.Run]; (st == results.Done || st == results.Invalid) && setRuns[setKey{r.Pair, r.Replicate}] {
			willRun[r.Run] = true
		}
	}
	var total time.Duration
	torun := 0
	for i, g := range groups {
		n := 0
		var est time.Duration
		for _, r := range g.Rows {
			st, ok := states[r.Run]
			if !ok {
				st = results.Pending
			}
			sum.Rows[st]++
			if willRun[r.Run] {
				n++
				est += time.Duration(r.WarmupS+r.DurationS)*time.Second + time.Second
			}
		}
		fmt.Fprintf(w, "group %d: %s: %d rows, %d to run, at least %s\n", i+1, groupName(t, g.Key), len(g.Rows), n, est)
		torun += n
		total += est
	}
	fmt.Fprintf(w, "would run %d rows, at least %s (warm-up and measurement, plus drain and overhead)\n", torun, total)
	return sum, nil
}
