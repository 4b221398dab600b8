package runner

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/xp-bench/xp/infra/local/localtarget"
	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/results"
)

// paidLocal is the embedded cluster with a budget: it is over budget once
// allowed attempts have started, and it records what the runner tells it.
type paidLocal struct {
	*localtarget.Target
	allowed  int
	checks   int
	events   target.InfraEvents
	finished []bool
	downs    int
}

func (p *paidLocal) RecordEvents(e target.InfraEvents) { p.events = e }

func (p *paidLocal) OverBudget(ctx context.Context) error {
	p.checks++
	if p.checks > p.allowed {
		return fmt.Errorf("spent $%d reaches budget_usd $%d", p.checks-1, p.allowed)
	}
	return nil
}

func (p *paidLocal) Finish(ctx context.Context, ok bool) error {
	p.finished = append(p.finished, ok)
	return nil
}

func (p *paidLocal) Down(ctx context.Context) error {
	p.downs++
	return p.Target.Down(ctx)
}

func TestBudgetAndTeardownPolicy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		allowed  int
		keep     bool
		wantErr  error
		done     int
		finished []bool
	}{
		{name: "within budget", allowed: 10, done: 3, finished: []bool{true}},
		{name: "spending reaches the budget after the first run", allowed: 1, wantErr: ErrUnfinished, done: 1, finished: []bool{false}},
		{name: "--keep leaves the policy alone", allowed: 1, keep: true, wantErr: ErrUnfinished, done: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			plan := writePlan(t, dir, "paid", smallSpec("paid", []string{"plaintext", "tls", "mtls"}, 1))
			p := &paidLocal{Target: localtarget.New(filepath.Join(dir, "work")), allowed: tc.allowed}
			_, err := Run(ctx, Options{Platforms: only(p), Plan: plan, Keep: tc.keep, WarmupCap: noWarmup})
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("run: %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr != nil && !errors.Is(err, ErrUnfinished) {
				t.Fatalf("over budget is not unfinished (exit 3): %v", err)
			}
			st := readDB(t, DefaultDB(plan))
			done := 0
			for _, s := range st.states {
				if s == results.Done {
					done++
				}
			}
			if done != tc.done || len(st.states) != 3 {
				t.Fatalf("%d rows done, want %d: %v", done, tc.done, st.states)
			}
			if p.events == nil {
				t.Fatal("the runner did not hand the target its db")
			}
			if fmt.Sprint(p.finished) != fmt.Sprint(tc.finished) {
				t.Fatalf("Finish calls %v, want %v", p.finished, tc.finished)
			}
			if wantDowns := map[bool]int{false: 1, true: 0}[tc.keep]; p.downs != wantDowns {
				t.Fatalf("%d downs, want %d", p.downs, wantDowns)
			}
		})
	}
}
