package target

import (
	"context"
	"encoding/json"

	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/results"
)

// What a target that provisions paid infrastructure may need from the
// campaign around it, each an interface the runner finds by type
// assertion.

// InfraEvents is the campaign db's record of infrastructure events.
type InfraEvents interface {
	AddInfraEvent(ctx context.Context, e results.InfraEvent) (int64, error)
	InfraEvents(ctx context.Context) ([]results.InfraEvent, error)
}

// EventRecorder is a Target that records infrastructure events of its own
// (each Terraform apply and destroy). The runner hands it the campaign db
// it holds open before the first Up.
type EventRecorder interface {
	RecordEvents(InfraEvents)
}

// Finisher is a Target with a teardown policy: the runner calls Finish
// once at the end of the campaign (after the last Down, also on a fatal
// error or an interrupt, never with --keep), ok when every row it ran
// ended done.
type Finisher interface {
	Finish(ctx context.Context, ok bool) error
}

// BudgetKeeper is a Target that knows what its infrastructure has cost.
// The runner asks after every run; an error stops the campaign there (the
// run in flight is finished and recorded), tears down and exits 3.
type BudgetKeeper interface {
	OverBudget(ctx context.Context) error
}

// Pricer is a Target that knows what the group that is up costs an hour
// (a cluster someone else runs, at the price its file gives). The runner
// records the price on the group's "up" event and the cost of its time up
// on its "down" event: one event each, the target records none of its own.
type Pricer interface {
	HourlyUSD() float64
}

// Preflighter is a Target that checks, before the first row runs, what
// only the infrastructure itself can say: a cluster someone else runs has
// its endpoints reached and their security verified, its brokers counted
// against the rows'. The runner calls Preflight once, after every row
// passed CheckRow and before the campaign is recorded or anything runs
// (also for --dry-run). events is the campaign db's record from earlier
// runs of the campaign, nil when there is no db yet; Preflight only reads
// it. An error refuses the campaign (exit 2) with nothing run; a report is
// recorded with the campaign as the infrastructure event "preflight" and
// its summary logged.
type Preflighter interface {
	Preflight(ctx context.Context, rows []planner.Row, events InfraEvents) (PreflightReport, error)
}

// PreflightReport is what a Preflight found.
type PreflightReport struct {
	// Summary is a few lines for people (the log, --dry-run's listing).
	Summary []string
	// Outputs is recorded as the event's outputs (JSON).
	Outputs json.RawMessage
}
