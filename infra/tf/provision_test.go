package tf

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xp-bench/xp/infra/targetfile"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/results"
)

// hostsTarget is a TARGET.yaml for terraform/hosts with two brokers, a
// gateway and a client (addresses from the benchmarking range; nothing
// connects to them: terraform_data only records them).
const hostsTarget = `platform: hosts
vars:
  machines:
    - {name: b1, address: 198.18.0.11, role: broker}
    - {name: b2, address: 198.18.0.12, role: broker, ssh_port: 2222}
    - {name: gw, address: 198.18.0.21, private_address: 10.0.0.21, role: gateway}
    - {name: c1, address: 198.18.0.31, role: client}
ssh: {user: bench, private_key: ~/.ssh/xp_ed25519}
teardown: always
`

func terraformPath(t *testing.T) string {
	t.Helper()
	path, err := Find(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return path
}

func newProvisioner(t *testing.T, target string) (*Provisioner, *results.Store) {
	t.Helper()
	dir := t.TempDir()
	tpath := filepath.Join(dir, "target.yaml")
	if err := os.WriteFile(tpath, []byte(target), 0o600); err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) string {
		if k == "HOME" {
			return dir
		}
		return ""
	}
	tf, err := targetfile.Read(tpath, getenv)
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "c.db")
	store, err := results.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return &Provisioner{Target: tf, Campaign: "Demo_Campaign", Root: WorkRoot(db), ExecPath: terraformPath(t),
		Store: store, Log: &strings.Builder{}, Getenv: getenv}, store
}

func group(brokers int, security string) (planner.InfraKey, []planner.Row) {
	r := planner.Row{Platform: "hosts", Brokers: brokers, Gateways: 1, GatewayKind: "builtin", Security: security, KafkaVersion: "3.9.1"}
	return r.InfraKey(), []planner.Row{r}
}

func events(t *testing.T, s *results.Store) []string {
	t.Helper()
	es, err := s.InfraEvents(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Event)
	}
	return out
}

// The hosts module applied for real: inventory from its outputs, events
// recorded, a second Up reuses the group, Down leaves no state.
func TestProvisionerUpDown(t *testing.T) {
	ctx := context.Background()
	p, store := newProvisioner(t, hostsTarget)
	key, rows := group(2, "proxy")
	g, err := p.Up(ctx, key, rows)
	if err != nil {
		t.Fatalf("up: %v\n%s", err, p.Log)
	}
	inv := g.Inventory
	if len(inv.Hosts.Brokers) != 2 || inv.Hosts.Brokers[1] != (Host{Name: "b2", PublicAddress: "198.18.0.12", PrivateAddress: "198.18.0.12", SSHPort: 2222}) {
		t.Fatalf("brokers %+v", inv.Hosts.Brokers)
	}
	if len(inv.Hosts.Gateways) != 1 || inv.Hosts.Gateways[0].PrivateAddress != "10.0.0.21" || len(inv.Hosts.Clients) != 1 || len(inv.Hosts.Controllers) != 0 {
		t.Fatalf("hosts %+v", inv.Hosts)
	}
	var names []string
	for _, m := range inv.Machines() {
		names = append(names, m.Role+":"+m.Name+":"+m.InstanceType)
	}
	if got := strings.Join(names, ","); got != "broker:b1:own,broker:b2:own,gateway:gw:own,client:c1:own" {
		t.Fatalf("machines %s", got)
	}
	if inv.SSHUser != "bench" || inv.Region != "hosts" || inv.InstanceTypes["broker"] != "own" || inv.HourlyPriceUSD["broker"] == nil || *inv.HourlyPriceUSD["broker"] != 0 {
		t.Fatalf("inventory %+v", inv)
	}
	if got := strings.Join(events(t, store), ","); got != "applying,up" {
		t.Fatalf("events %s", got)
	}
	es, _ := store.InfraEvents(ctx)
	if up := es[1]; up.Started.IsZero() || up.Duration <= 0 || up.Error != "" || !strings.Contains(string(up.Outputs), `"public_address":"198.18.0.11"`) {
		t.Fatalf("up event %+v", up)
	}
	w, err := OpenWorkspace(ctx, p.ExecPath, g.Dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := w.Resources(ctx); err != nil || len(res) != 1 {
		t.Fatalf("state holds %v, %v", res, err)
	}

	// The runner records its own "up" of the group (endpoints, no working
	// directory); the provisioner reads past it.
	if _, err := store.AddInfraEvent(ctx, results.InfraEvent{Event: "up", Group: key.ID(), Outputs: []byte(`{"modes":{}}`)}); err != nil {
		t.Fatal(err)
	}
	again, err := p.Up(ctx, key, rows)
	if err != nil || !again.Reused || again.Inventory.Hosts.Brokers[0].Name != "b1" {
		t.Fatalf("second up: %+v, %v", again, err)
	}
	if got := strings.Join(events(t, store), ","); got != "applying,up,up" {
		t.Fatalf("a reused group recorded events: %s", got)
	}

	if err := p.Down(ctx, key.ID()); err != nil {
		t.Fatalf("down: %v\n%s", err, p.Log)
	}
	if got := strings.Join(events(t, store), ","); got != "applying,up,up,down" {
		t.Fatalf("events %s", got)
	}
	if _, err := os.Stat(g.Dir); !os.IsNotExist(err) {
		t.Fatalf("working directory left after down: %v", err)
	}
	if inv, _ := Inventories(ctx, store); len(inv) != 0 {
		t.Fatalf("inventories after down: %v", inv)
	}
}

// A failing apply is recorded with Terraform's own message and leaves
// nothing up.
func TestProvisionerFailedApply(t *testing.T) {
	tests := []struct {
		name    string
		target  string
		brokers int
		want    string
	}{
		{name: "bad role", target: strings.Replace(hostsTarget, "role: client", "role: clinet", 1), brokers: 1,
			want: "Every machine's role must be broker, controller, gateway or client"},
		{name: "too few machines", target: hostsTarget, brokers: 3, want: "Not enough machines: the group needs 3 brokers"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			p, store := newProvisioner(t, tc.target)
			key, rows := group(tc.brokers, "tls")
			_, err := p.Up(ctx, key, rows)
			if err == nil || !strings.Contains(strings.Join(strings.Fields(err.Error()), " "), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			es, _ := store.InfraEvents(ctx)
			if len(es) != 2 || es[1].Event != EventApplyFailed || !strings.Contains(strings.Join(strings.Fields(es[1].Error), " "), tc.want) {
				t.Fatalf("events %+v", es)
			}
			w, err := OpenWorkspace(ctx, p.ExecPath, filepath.Join(p.Root, GroupSlug(key)), nil)
			if err != nil {
				t.Fatal(err)
			}
			if res, err := w.Resources(ctx); err != nil || len(res) != 0 {
				t.Fatalf("a failed apply left %v (%v)", res, err)
			}
		})
	}
}

// terraform init of the hosts module needs no provider, so no network.
func TestHostsInitOffline(t *testing.T) {
	p, _ := newProvisioner(t, hostsTarget)
	fsys, err := p.Target.ModuleFS()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command(p.ExecPath, "version")
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "Terraform v") {
		t.Fatalf("terraform version: %s %v", out, err)
	}
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:9") // any download would fail
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:9")
	if _, err := NewWorkspace(context.Background(), p.ExecPath, fsys, dir, map[string]any{}, nil); err != nil {
		t.Fatalf("init without network: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".terraform", "providers")); !os.IsNotExist(err) {
		t.Fatalf("init fetched providers: %v", err)
	}
}

// A module whose outputs name a machine by anything but an IP address is
// refused when its outputs are read (addresses go into shell lines and
// certificates on the machines), and nothing of the apply stays up.
func TestProvisionerRefusesAddressesThatAreNotIPs(t *testing.T) {
	for _, bad := range []string{"broker.example.com", "198.18.0.11; rm -rf ~"} {
		t.Run(bad, func(t *testing.T) {
			p, store := newProvisioner(t, strings.Replace(hostsTarget, "address: 198.18.0.11,", fmt.Sprintf("address: %q,", bad), 1))
			key, rows := group(1, "proxy")
			_, err := p.Up(context.Background(), key, rows)
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("module outputs broker b1 with public_address %q: want an IP address", bad)) {
				t.Fatalf("up: %v", err)
			}
			if got := strings.Join(events(t, store), ","); got != "applying,apply-failed" {
				t.Fatalf("events %s", got)
			}
		})
	}
}
