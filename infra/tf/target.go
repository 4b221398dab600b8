package tf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/infra/targetfile"
	"github.com/xp-bench/xp/planner"
)

// Deployer configures the machines of an applied group (Kafka, gateways,
// load generators over SSH) and says how to reach them. The remote target
// implements it; Target provisions the machines it configures.
type Deployer interface {
	// Deploy makes the services the rows of g need run on inv's machines.
	Deploy(ctx context.Context, g target.Group, inv *Inventory) (target.Endpoints, error)
	// Undeploy stops what Deploy started; the machines stay.
	Undeploy(ctx context.Context) error
}

// Remover is a Deployer that can take everything of the campaign off the
// machines of its latest deployment. On the hosts platform, whose
// machines outlive their group, Target calls it before a group is
// destroyed.
type Remover interface {
	Remove(ctx context.Context) error
}

// TargetOptions are what NewTarget needs beside the target file.
type TargetOptions struct {
	Deployer Deployer
	// Events is the campaign db the applies and destroys are recorded in;
	// when the db is opened after the target, RecordEvents sets it before
	// the first Up.
	Events Events
	// ExecPath is terraform's path (Find).
	ExecPath string
	// Log receives Terraform's output.
	Log    io.Writer
	Prices *planner.Prices
	Now    func() time.Time
	Getenv func(string) string
	// Activity learns of every terraform apply and destroy while it runs.
	Activity *Activity
}

// Target is a target.Target whose machines come from Terraform. Up applies
// the group's module, or reuses the group the db records as up with the
// same variables (a resumed campaign applies nothing new), and hands the
// inventory to the Deployer. Down stops the services and destroys the
// machines when the teardown policy is always; otherwise they stay until a
// different group's Up, Finish, or `xp infra down`.
type Target struct {
	prov     *Provisioner
	deployer Deployer
	// cur is the group the last Up applied, nil when none.
	cur *Group
}

var (
	_ target.Target        = (*Target)(nil)
	_ target.Restarter     = (*Target)(nil)
	_ target.EventRecorder = (*Target)(nil)
	_ target.Finisher      = (*Target)(nil)
	_ target.BudgetKeeper  = (*Target)(nil)
)

// NewTarget opens the TARGET.yaml of cfg as a Terraform-backed target.
// Its errors are bad input naming the file.
func NewTarget(cfg target.Config, campaign string, o TargetOptions) (*Target, error) {
	if o.Deployer == nil {
		return nil, errors.New("tf.NewTarget: a Deployer is required")
	}
	get := o.Getenv
	if get == nil {
		get = func(string) string { return "" }
	}
	t, err := targetfile.Parse(cfg.Path, cfg.Text, get)
	if err != nil {
		return nil, err
	}
	if t.Platform != cfg.Platform {
		return nil, fmt.Errorf("%s: platform %s, want %s", cfg.Path, t.Platform, cfg.Platform)
	}
	return &Target{
		prov: &Provisioner{Target: t, Campaign: campaign, Root: WorkRoot(cfg.DB), ExecPath: o.ExecPath,
			Store: o.Events, Log: o.Log, Prices: o.Prices, Now: o.Now, Getenv: o.Getenv, Activity: o.Activity},
		deployer: o.Deployer,
	}, nil
}

// RecordEvents sets the campaign db the applies and destroys are recorded
// in (the runner's, which holds the db's writer lock).
func (t *Target) RecordEvents(e Events) { t.prov.Store = e }

// Up brings the group's machines up (destroying the previous group's
// first when it differs) and deploys onto them.
func (t *Target) Up(ctx context.Context, g target.Group) (target.Endpoints, error) {
	if t.cur != nil && t.cur.Key != g.Key.ID() {
		if err := t.destroy(ctx, t.cur.Key); err != nil {
			return target.Endpoints{}, fmt.Errorf("destroy the previous group %s: %w", t.cur.Key, err)
		}
		t.cur = nil
	}
	if t.prov.Store == nil {
		return target.Endpoints{}, errors.New("tf.Target: no event store (RecordEvents)")
	}
	grp, err := t.prov.Up(ctx, g.Key, g.Rows)
	if err != nil {
		if ctx.Err() != nil {
			// An interrupted apply keeps in its state what it made:
			// Down and Finish destroy it as they would the group.
			t.cur = &Group{Key: g.Key.ID()}
		}
		return target.Endpoints{}, err
	}
	t.cur = grp
	return t.deploy(ctx, g)
}

func (t *Target) deploy(ctx context.Context, g target.Group) (target.Endpoints, error) {
	ep, err := t.deployer.Deploy(ctx, g, t.cur.Inventory)
	if err != nil {
		return target.Endpoints{}, fmt.Errorf("deploy onto %s: %w", g.Key, err)
	}
	if len(ep.Hosts) == 0 {
		for _, m := range t.cur.Inventory.Machines() {
			ep.Hosts = append(ep.Hosts, m.Name)
		}
	}
	return ep, nil
}

// Restart stops and deploys the group's services again on the same
// machines: a failed attempt never destroys and re-applies them.
func (t *Target) Restart(ctx context.Context, g target.Group) (target.Endpoints, error) {
	if t.cur == nil || t.cur.Key != g.Key.ID() || t.cur.Inventory == nil {
		return t.Up(ctx, g)
	}
	if err := t.deployer.Undeploy(ctx); err != nil {
		return target.Endpoints{}, fmt.Errorf("stop services of %s: %w", g.Key, err)
	}
	return t.deploy(ctx, g)
}

// Down stops the services and, under teardown always, destroys the
// machines. Safe to call when nothing is up.
func (t *Target) Down(ctx context.Context) error {
	if t.cur == nil {
		return nil
	}
	err := t.deployer.Undeploy(ctx)
	if t.prov.Target.Teardown == targetfile.TeardownAlways {
		if derr := t.destroy(ctx, t.cur.Key); derr != nil {
			return errors.Join(err, derr)
		}
		t.cur = nil
	}
	return err
}

// Finish applies the teardown policy at the end of a campaign: always
// destroys, on-success destroys when ok, never keeps the machines for
// `xp infra down`.
func (t *Target) Finish(ctx context.Context, ok bool) error {
	if t.cur == nil {
		return nil
	}
	switch t.prov.Target.Teardown {
	case targetfile.TeardownNever:
		return nil
	case targetfile.TeardownOnSuccess:
		if !ok {
			return nil
		}
	}
	err := t.destroy(ctx, t.cur.Key)
	if err == nil {
		t.cur = nil
	}
	return err
}

// destroy destroys group key; on the hosts platform the Deployer first
// removes what the campaign left on the machines, which stay.
func (t *Target) destroy(ctx context.Context, key string) error {
	var rerr error
	if r, ok := t.deployer.(Remover); ok && t.prov.Target.Platform == "hosts" {
		if rerr = r.Remove(ctx); rerr != nil {
			rerr = fmt.Errorf("removing the campaign's files from the machines: %w", rerr)
		}
	}
	return errors.Join(rerr, t.prov.Down(ctx, key))
}

// Inventory is the inventory of the group up now, nil when none.
func (t *Target) Inventory() *Inventory {
	if t.cur == nil {
		return nil
	}
	return t.cur.Inventory
}

// SpendError is spending that reached the target's budget_usd.
type SpendError struct {
	SpentUSD, BudgetUSD float64
	Target              string
}

func (e *SpendError) Error() string {
	return fmt.Sprintf("spent $%.2f reaches budget_usd $%.2f of %s", e.SpentUSD, e.BudgetUSD, e.Target)
}

// OverBudget returns a *SpendError once what the campaign's infrastructure
// has cost reaches budget_usd (no budget: never).
func (t *Target) OverBudget(ctx context.Context) error {
	budget := t.prov.Target.BudgetUSD
	if budget <= 0 || t.prov.Store == nil {
		return nil
	}
	spent, err := SpentUSD(ctx, t.prov.Store, t.prov.now())
	if err != nil {
		return err
	}
	if spent >= budget {
		return &SpendError{SpentUSD: spent, BudgetUSD: budget, Target: t.prov.Target.Path}
	}
	return nil
}
