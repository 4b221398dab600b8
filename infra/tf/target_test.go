package tf

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xp-bench/xp/infra/endpoint"
	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/infra/targetfile"
	"github.com/xp-bench/xp/results"
)

// deployLog is a Deployer that starts nothing: it records the inventories
// it is handed and answers with the brokers' addresses, so the tests see
// what Target hands a real deployer and when.
type deployLog struct {
	deployed   []*Inventory
	undeployed int
}

func (d *deployLog) Deploy(ctx context.Context, g target.Group, inv *Inventory) (target.Endpoints, error) {
	d.deployed = append(d.deployed, inv)
	var boot []string
	for _, b := range inv.Hosts.Brokers {
		boot = append(boot, b.PrivateAddress+":9092")
	}
	return target.Endpoints{Modes: map[string]endpoint.Endpoint{"plaintext": {Bootstrap: boot}}}, nil
}

func (d *deployLog) Undeploy(ctx context.Context) error { d.undeployed++; return nil }

func openTarget(t *testing.T, dir string, store *results.Store, teardown string, d Deployer) *Target {
	t.Helper()
	text := strings.Replace(hostsTarget, "teardown: always", "teardown: "+teardown, 1)
	cfg := target.Config{Platform: "hosts", Path: filepath.Join(dir, "target.yaml"), Text: []byte(text), DB: filepath.Join(dir, "c.db")}
	tg, err := NewTarget(cfg, "c", TargetOptions{Deployer: d, ExecPath: terraformPath(t), Log: &strings.Builder{}})
	if err != nil {
		t.Fatal(err)
	}
	tg.RecordEvents(store)
	return tg
}

func TestTargetTeardownPolicies(t *testing.T) {
	ctx := context.Background()
	k1, rows1 := group(1, "proxy")
	k2, rows2 := group(2, "proxy")
	g1, g2 := target.Group{Key: k1, Rows: rows1}, target.Group{Key: k2, Rows: rows2}
	tests := []struct {
		name     string
		teardown string
		steps    func(t *testing.T, tg func() *Target)
		want     string // events
	}{
		{name: "always destroys at Down", teardown: targetfile.TeardownAlways, steps: func(t *testing.T, tg func() *Target) {
			a := tg()
			ep, err := a.Up(ctx, g1)
			if err != nil || len(ep.Modes["plaintext"].Bootstrap) != 1 || ep.Modes["plaintext"].Bootstrap[0] != "198.18.0.11:9092" ||
				strings.Join(ep.Hosts, ",") != "b1,gw,c1" {
				t.Fatalf("up: %+v %v", ep, err)
			}
			// A restart deploys again on the same machines: no apply.
			if ep, err := a.Restart(ctx, g1); err != nil || strings.Join(ep.Hosts, ",") != "b1,gw,c1" {
				t.Fatalf("restart: %+v %v", ep, err)
			}
			if err := a.Down(ctx); err != nil {
				t.Fatal(err)
			}
		}, want: "applying,up,down"},
		{name: "never keeps the machines, and a resumed campaign applies nothing", teardown: targetfile.TeardownNever, steps: func(t *testing.T, tg func() *Target) {
			a := tg()
			if _, err := a.Up(ctx, g1); err != nil {
				t.Fatal(err)
			}
			a.Down(ctx)
			a.Finish(ctx, true)
			// A new process (resume after a kill) finds the group up.
			b := tg()
			if _, err := b.Up(ctx, g1); err != nil || b.Inventory() == nil || len(b.Inventory().Hosts.Brokers) != 1 {
				t.Fatalf("resumed up: %v", err)
			}
			// A different group destroys the previous one first.
			if _, err := b.Up(ctx, g2); err != nil {
				t.Fatal(err)
			}
		}, want: "applying,up,down,applying,up"},
		{name: "on-success keeps a failed campaign's machines", teardown: targetfile.TeardownOnSuccess, steps: func(t *testing.T, tg func() *Target) {
			a := tg()
			if _, err := a.Up(ctx, g1); err != nil {
				t.Fatal(err)
			}
			a.Down(ctx)
			if err := a.Finish(ctx, false); err != nil || a.Inventory() == nil {
				t.Fatalf("finish of a failed campaign: %v", err)
			}
		}, want: "applying,up"},
		{name: "on-success destroys a finished campaign's", teardown: targetfile.TeardownOnSuccess, steps: func(t *testing.T, tg func() *Target) {
			a := tg()
			if _, err := a.Up(ctx, g1); err != nil {
				t.Fatal(err)
			}
			a.Down(ctx)
			if err := a.Finish(ctx, true); err != nil || a.Inventory() != nil {
				t.Fatalf("finish: %v", err)
			}
		}, want: "applying,up,down"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			store, err := results.Open(ctx, filepath.Join(dir, "c.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			d := &deployLog{}
			tc.steps(t, func() *Target { return openTarget(t, dir, store, tc.teardown, d) })
			if got := strings.Join(events(t, store), ","); got != tc.want {
				t.Fatalf("events %s, want %s", got, tc.want)
			}
			if len(d.deployed) == 0 || d.undeployed == 0 {
				t.Fatalf("deployed %d, undeployed %d", len(d.deployed), d.undeployed)
			}
			for _, inv := range d.deployed {
				if len(inv.Hosts.Brokers) == 0 || inv.Hosts.Brokers[0].Name != "b1" {
					t.Fatalf("deployer handed %+v", inv.Hosts)
				}
			}
			if strings.HasSuffix(tc.want, "down") {
				if st, _ := filepath.Glob(filepath.Join(WorkRoot(filepath.Join(dir, "c.db")), "*", "terraform.tfstate")); len(st) != 0 {
					t.Fatalf("state left: %v", st)
				}
			}
		})
	}
}

// Spending is the hourly price (here the hosts module's, from its
// hourly_price_usd input) of every machine since its apply began; it
// reaches budget_usd at the hour it should.
func TestTargetOverBudget(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store, err := results.Open(ctx, filepath.Join(dir, "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	text := strings.Replace(hostsTarget, "teardown: always", "teardown: always\nbudget_usd: 10", 1)
	text = strings.Replace(text, "vars:\n", "vars:\n  hourly_price_usd: {own: 2}\n", 1)
	cfg := target.Config{Platform: "hosts", Path: filepath.Join(dir, "target.yaml"), Text: []byte(text), DB: filepath.Join(dir, "c.db")}
	tg, err := NewTarget(cfg, "c", TargetOptions{Deployer: &deployLog{}, ExecPath: terraformPath(t), Log: &strings.Builder{},
		Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	tg.RecordEvents(store)
	k, rows := group(1, "proxy") // a broker, a gateway, a client: $6 an hour
	if _, err := tg.Up(ctx, target.Group{Key: k, Rows: rows}); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		after time.Duration
		over  bool
	}{{0, false}, {time.Hour, false}, {100 * time.Minute, true}} {
		now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).Add(step.after)
		err := tg.OverBudget(ctx)
		var se *SpendError
		if step.over != errors.As(err, &se) {
			t.Fatalf("after %s: %v", step.after, err)
		}
		if step.over && (se.SpentUSD != 10 || se.BudgetUSD != 10 || !strings.Contains(err.Error(), "spent $10.00 reaches budget_usd $10.00")) {
			t.Fatalf("after %s: %+v", step.after, se)
		}
	}
	if err := tg.Down(ctx); err != nil {
		t.Fatal(err)
	}
	es, _ := store.InfraEvents(ctx)
	if last := es[len(es)-1]; last.Event != EventDown || last.Cost != 10 {
		t.Fatalf("down event %+v", last)
	}
	if spent, err := SpentUSD(ctx, store, now.Add(time.Hour)); err != nil || spent != 10 {
		t.Fatalf("spent after down %v, %v", spent, err)
	}
}
