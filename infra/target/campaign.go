package target

import (
	"context"

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
