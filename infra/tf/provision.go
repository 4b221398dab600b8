package tf

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"time"

	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/infra/targetfile"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/results"
)

// Infrastructure events a Provisioner records (results.InfraEvent.Event).
const (
	EventApplying      = "applying"
	EventUp            = "up"
	EventApplyFailed   = "apply-failed"
	EventDown          = "down"
	EventDestroyFailed = "destroy-failed"
)

// Provisioner applies and destroys a campaign's infrastructure groups, each
// in a working directory of its own under Root, and records every apply and
// destroy (outputs, timing, error, cost) in Store.
type Provisioner struct {
	Target   *targetfile.File
	Campaign string
	// Root holds one working directory per group (DB path + ".tf").
	Root     string
	ExecPath string
	Store    Events
	// Log receives Terraform's output (the campaign log).
	Log io.Writer
	// Prices price machines whose module does not (plans/prices.yaml).
	Prices *planner.Prices
	Now    func() time.Time
	Getenv func(string) string
	// Activity, when set, learns of every terraform apply and destroy
	// while it runs (the signal handler's view).
	Activity *Activity
}

// Events is where a Provisioner records and reads infrastructure events:
// a *results.Store, the campaign db's.
type Events = target.InfraEvents

// WorkRoot is where a campaign db's Terraform working directories live.
func WorkRoot(db string) string { return db + ".tf" }

// eventOutputs is what an event's outputs column holds.
type eventOutputs struct {
	Module    string         `json:"module"`
	Platform  string         `json:"platform"`
	Dir       string         `json:"dir"`
	Vars      map[string]any `json:"vars,omitempty"`
	Inventory *Inventory     `json:"inventory,omitempty"`
	// Unpriced lists roles priced at 0 for want of a price.
	Unpriced []string `json:"unpriced,omitempty"`
}

// Group is an applied infrastructure group.
type Group struct {
	Key       string
	Dir       string
	Inventory *Inventory
	// HourlyUSD is what the group's machines cost an hour.
	HourlyUSD float64
	// Reused is set when Up found the group already applied with the same
	// variables (a resumed campaign) and applied nothing.
	Reused bool
}

func (p *Provisioner) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

func (p *Provisioner) getenv(k string) string {
	if p.Getenv != nil {
		return p.Getenv(k)
	}
	return os.Getenv(k)
}

func (p *Provisioner) record(ctx context.Context, e results.InfraEvent, o eventOutputs) error {
	b, err := json.Marshal(o)
	if err != nil {
		return err
	}
	e.Outputs = b
	if e.Time.IsZero() {
		e.Time = p.now()
	}
	_, err = p.Store.AddInfraEvent(ctx, e)
	return err
}

// terraformEvents are the events a Provisioner recorded (their outputs
// name a working directory); the runner's own "up" and "down" events of
// the same groups are left out.
func terraformEvents(ctx context.Context, store Events) ([]results.InfraEvent, error) {
	events, err := store.InfraEvents(ctx)
	if err != nil {
		return nil, err
	}
	out := events[:0]
	for _, e := range events {
		var o eventOutputs
		if json.Unmarshal(e.Outputs, &o) == nil && o.Dir != "" {
			out = append(out, e)
		}
	}
	return out, nil
}

// latest is each group's latest event.
func (p *Provisioner) latest(ctx context.Context) (map[string]results.InfraEvent, []string, error) {
	events, err := terraformEvents(ctx, p.Store)
	if err != nil {
		return nil, nil, err
	}
	last := map[string]results.InfraEvent{}
	var order []string
	for _, e := range events {
		if _, ok := last[e.Group]; !ok {
			order = append(order, e.Group)
		}
		last[e.Group] = e
	}
	return last, order, nil
}

// Plan is what Up would apply for one group.
type Plan struct {
	Key  string
	Dir  string
	Vars map[string]any
}

// PlanGroup says what Up(key, rows) would apply, applying nothing.
func (p *Provisioner) PlanGroup(key planner.InfraKey, rows []planner.Row) (Plan, error) {
	vars, err := GroupVars(p.Target, p.Campaign, key, rows)
	if err != nil {
		return Plan{}, err
	}
	return Plan{Key: key.ID(), Dir: filepath.Join(p.Root, GroupSlug(key)), Vars: vars}, nil
}

// Up makes one group's infrastructure exist and reads its inventory. A
// group the db records as up with the same variables is reused as it is
// (a resumed campaign applies nothing new). A failed apply is recorded
// with Terraform's message, and whatever it created is destroyed.
func (p *Provisioner) Up(ctx context.Context, key planner.InfraKey, rows []planner.Row) (*Group, error) {
	plan, err := p.PlanGroup(key, rows)
	if err != nil {
		return nil, err
	}
	o := eventOutputs{Module: p.Target.ModuleName(), Platform: p.Target.Platform, Dir: plan.Dir, Vars: plan.Vars}
	last, _, err := p.latest(ctx)
	if err != nil {
		return nil, err
	}
	if e, ok := last[plan.Key]; ok && e.Event == EventUp {
		var was eventOutputs
		if json.Unmarshal(e.Outputs, &was) == nil && was.Inventory != nil && was.Dir == plan.Dir && sameVars(was.Vars, plan.Vars) {
			was.Inventory.Dir = plan.Dir
			return &Group{Key: plan.Key, Dir: plan.Dir, Inventory: was.Inventory, HourlyUSD: e.HourlyUSD, Reused: true}, nil
		}
	}
	if err := CheckCredentials(p.Target.Platform, p.getenv); err != nil {
		return nil, err
	}
	fsys, err := p.Target.ModuleFS()
	if err != nil {
		return nil, err
	}
	started := p.now()
	if err := p.record(ctx, results.InfraEvent{Event: EventApplying, Group: plan.Key, Time: started}, o); err != nil {
		return nil, err
	}
	// Cancelling ctx (an interrupt) sends Terraform one SIGINT and waits
	// for it: it stops after the calls in flight and saves its state, so
	// nothing it created is unknown to it. A killed terraform could leave
	// cloud resources its state does not know.
	inv, applyErr := func() (*Inventory, error) {
		w, err := NewWorkspace(ctx, p.ExecPath, fsys, plan.Dir, plan.Vars, p.Log)
		if err != nil {
			return nil, err
		}
		var inv *Inventory
		err = p.terraform("apply", plan.Key, plan.Dir, func() (err error) {
			inv, err = w.Apply(ctx)
			return err
		})
		var killed *KilledError
		if errors.As(err, &killed) {
			// Not destroyed here: the running mark stays, and xp infra
			// down destroys what the state holds and says where to
			// look for what it may not.
			return nil, err
		}
		if err != nil && ctx.Err() != nil {
			// Terraform exited on its own after xp's interrupt: what
			// the interrupted apply made is in the state, for the
			// caller's teardown or xp infra down.
			return nil, errors.Join(interrupted("apply"), err)
		}
		if err != nil {
			// Nothing of a failed apply is left up.
			dctx := context.WithoutCancel(ctx)
			if left, rerr := w.Resources(dctx); rerr != nil || len(left) > 0 {
				derr := p.terraform("destroy", plan.Key, plan.Dir, func() error { return w.Destroy(dctx) })
				if derr != nil {
					return nil, errors.Join(err, fmt.Errorf("destroying what the failed apply left: %w", derr))
				}
			}
		}
		return inv, err
	}()
	ended := p.now()
	ev := results.InfraEvent{Group: plan.Key, Time: ended, Started: started, Duration: ended.Sub(started)}
	if applyErr != nil {
		ev.Event, ev.Error = EventApplyFailed, applyErr.Error()
		if err := p.record(context.WithoutCancel(ctx), ev, o); err != nil {
			return nil, errors.Join(applyErr, err)
		}
		return nil, applyErr
	}
	inv.Dir = plan.Dir
	hourly, unpriced := HourlyUSD(inv, p.Target.Platform, p.Prices)
	o.Inventory, o.Unpriced = inv, unpriced
	ev.Event, ev.HourlyUSD = EventUp, hourly
	if err := p.record(context.WithoutCancel(ctx), ev, o); err != nil {
		return nil, err
	}
	return &Group{Key: plan.Key, Dir: plan.Dir, Inventory: inv, HourlyUSD: hourly}, nil
}

// sameVars compares variables as JSON sees them (numbers read back from
// the db are float64).
func sameVars(a, b map[string]any) bool {
	norm := func(m map[string]any) any {
		j, _ := json.Marshal(m)
		var x any
		json.Unmarshal(j, &x)
		return x
	}
	return reflect.DeepEqual(norm(a), norm(b))
}

// Down destroys one group the db records (by its key), whatever state it
// was left in, and records its cost since it came up.
func (p *Provisioner) Down(ctx context.Context, group string) error {
	last, _, err := p.latest(ctx)
	if err != nil {
		return err
	}
	e, ok := last[group]
	if !ok || e.Event == EventDown {
		return nil
	}
	return p.down(ctx, e)
}

// DownAll destroys every group whose latest recorded event is not "down"
// (up, applying or failed when a process died), and returns the keys
// destroyed.
func (p *Provisioner) DownAll(ctx context.Context) ([]string, error) {
	last, order, err := p.latest(ctx)
	if err != nil {
		return nil, err
	}
	var done []string
	var errs []error
	for _, g := range order {
		if e := last[g]; e.Event != EventDown {
			if err := p.down(ctx, e); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", g, err))
				continue
			}
			done = append(done, g)
		}
	}
	return done, errors.Join(errs...)
}

// down destroys the group e is the latest event of.
func (p *Provisioner) down(ctx context.Context, e results.InfraEvent) error {
	var o eventOutputs
	if err := json.Unmarshal(e.Outputs, &o); err != nil || o.Dir == "" {
		return fmt.Errorf("the db records no working directory for %s", e.Group)
	}
	if !Initialized(o.Dir) {
		// Never applied: the process died before terraform could run.
		if err := p.record(ctx, results.InfraEvent{Event: EventDown, Group: e.Group}, eventOutputs{Module: o.Module, Platform: o.Platform, Dir: o.Dir}); err != nil {
			return err
		}
		return os.RemoveAll(o.Dir)
	}
	if err := CheckCredentials(o.Platform, p.getenv); err != nil {
		return err
	}
	upAt, hourly := p.upSince(ctx, e.Group)
	// Read before the destroy, which removes the directory and the mark.
	abandoned, wasAbandoned := abandonedIn(e.Group, o)
	started := p.now()
	// As in Up, cancelling ctx interrupts Terraform once and waits for it
	// to save its state; the group stays recorded as not down.
	derr := func() error {
		w, err := OpenWorkspace(ctx, p.ExecPath, o.Dir, p.Log)
		if err != nil {
			return err
		}
		err = p.terraform("destroy", e.Group, o.Dir, func() error { return w.Destroy(ctx) })
		var killed *KilledError
		if err != nil && ctx.Err() != nil && !errors.As(err, &killed) {
			return errors.Join(interrupted("destroy"), err)
		}
		return err
	}()
	ended := p.now()
	ev := results.InfraEvent{Group: e.Group, Time: ended, Started: started, Duration: ended.Sub(started)}
	out := eventOutputs{Module: o.Module, Platform: o.Platform, Dir: o.Dir}
	if derr != nil {
		ev.Event, ev.Error = EventDestroyFailed, derr.Error()
		return errors.Join(derr, p.record(context.WithoutCancel(ctx), ev, out))
	}
	ev.Event = EventDown
	if !upAt.IsZero() {
		ev.Cost = hourly * ended.Sub(upAt).Hours()
	}
	if err := p.record(context.WithoutCancel(ctx), ev, out); err != nil {
		return err
	}
	if wasAbandoned && p.Log != nil {
		// Said in the campaign log too, as xp run's teardown removes the
		// mark xp infra down and show would have found.
		fmt.Fprintf(p.Log, "xp: warning: %s\n", abandoned.Advice())
	}
	return os.RemoveAll(o.Dir)
}

// upSince is when a group's machines started costing (the start of its
// last apply) and its hourly price.
func (p *Provisioner) upSince(ctx context.Context, group string) (time.Time, float64) {
	events, err := terraformEvents(ctx, p.Store)
	if err != nil {
		return time.Time{}, 0
	}
	var at time.Time
	var hourly float64
	for _, e := range events {
		if e.Group != group {
			continue
		}
		switch e.Event {
		case EventApplying:
			if at.IsZero() {
				at = e.Time
			}
		case EventUp:
			hourly = e.HourlyUSD
		case EventDown:
			at, hourly = time.Time{}, 0
		}
	}
	return at, hourly
}

// HourlyUSD is what an applied group's machines cost an hour: each role's
// machines at the module's price, else the price table's for the role's
// instance type on platform. Roles priced by neither are listed (and
// count 0).
func HourlyUSD(inv *Inventory, platform string, prices *planner.Prices) (float64, []string) {
	var sum float64
	var unpriced []string
	for _, role := range Roles {
		n := len(inv.Hosts.Role(role))
		if n == 0 {
			continue
		}
		if p := inv.HourlyPriceUSD[role]; p != nil {
			sum += float64(n) * *p
			continue
		}
		if price, ok := prices.Hourly(platform, inv.InstanceTypes[role]); ok {
			sum += float64(n) * price
			continue
		}
		unpriced = append(unpriced, role+"/"+inv.InstanceTypes[role])
	}
	return sum, unpriced
}

// Inventories returns the inventory of every group the db records as up,
// by group key.
func Inventories(ctx context.Context, store Events) (map[string]*Inventory, error) {
	events, err := terraformEvents(ctx, store)
	if err != nil {
		return nil, err
	}
	out := map[string]*Inventory{}
	for _, e := range events {
		switch e.Event {
		case EventUp:
			var o eventOutputs
			if err := json.Unmarshal(e.Outputs, &o); err == nil && o.Inventory != nil {
				o.Inventory.Dir = o.Dir
				out[e.Group] = o.Inventory
			}
		case EventDown:
			delete(out, e.Group)
		}
	}
	return out, nil
}

// GroupState is one infrastructure group as the db records it.
type GroupState struct {
	Key string `json:"group"`
	// State is the group's latest event (EventUp, EventDown, ...), Since
	// when it was recorded.
	State string    `json:"state"`
	Since time.Time `json:"since"`
	Dir   string    `json:"dir"`
	// HourlyUSD is the price of the group while up; CostUSD what it has
	// cost so far, counting the time up to now when it is up.
	HourlyUSD float64    `json:"hourly_usd"`
	CostUSD   float64    `json:"cost_usd"`
	Error     string     `json:"error,omitempty"`
	Inventory *Inventory `json:"inventory,omitempty"`
}

// ReadGroups reads every group's state, in the order the groups first
// appear in the db.
func ReadGroups(ctx context.Context, store Events, now time.Time) ([]GroupState, error) {
	events, err := terraformEvents(ctx, store)
	if err != nil {
		return nil, err
	}
	at := map[string]int{}
	var out []GroupState
	upAt := map[string]time.Time{}
	for _, e := range events {
		i, ok := at[e.Group]
		if !ok {
			i = len(out)
			at[e.Group] = i
			out = append(out, GroupState{Key: e.Group})
		}
		g := &out[i]
		var o eventOutputs
		json.Unmarshal(e.Outputs, &o)
		g.State, g.Since, g.Error, g.CostUSD = e.Event, e.Time, e.Error, g.CostUSD+e.Cost
		if o.Dir != "" {
			g.Dir = o.Dir
		}
		switch e.Event {
		case EventApplying:
			if upAt[e.Group].IsZero() {
				upAt[e.Group] = e.Time
			}
		case EventUp:
			g.HourlyUSD, g.Inventory = e.HourlyUSD, o.Inventory
		case EventDown:
			delete(upAt, e.Group)
			g.Inventory = nil
		}
	}
	for i := range out {
		if g := &out[i]; g.State == EventUp && !upAt[g.Key].IsZero() {
			g.CostUSD += g.HourlyUSD * now.Sub(upAt[g.Key]).Hours()
		}
	}
	return out, nil
}

// SpentUSD is what every group the db records has cost up to now: the
// recorded cost of destroyed groups and, for a group still up, its hourly
// price since its apply began.
func SpentUSD(ctx context.Context, store Events, now time.Time) (float64, error) {
	groups, err := ReadGroups(ctx, store, now)
	if err != nil {
		return 0, err
	}
	var sum float64
	for _, g := range groups {
		sum += g.CostUSD
	}
	return sum, nil
}
