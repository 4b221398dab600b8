package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/xp-bench/xp/infra/remote"
	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/infra/targetfile"
	"github.com/xp-bench/xp/infra/tf"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/plans"
	"github.com/xp-bench/xp/results"
	"github.com/xp-bench/xp/runner"
)

func newInfraCmd(st *state) *cobra.Command {
	c := &cobra.Command{
		Use:   "infra up|down|show",
		Short: "Make a campaign's Terraform infrastructure exist, take it away, or show it",
		Long: `Infra drives the Terraform module a TARGET.yaml names (docs/targets.md), one
working directory per infrastructure group beside the campaign db (DB.tf/),
and records every apply and destroy in the db.`,
	}
	c.AddCommand(newInfraUpCmd(st), newInfraDownCmd(st), newInfraShowCmd(st))
	return c
}

// infraFlags are the flags every infra subcommand shares.
type infraFlags struct {
	target string
	db     string
}

func (f *infraFlags) register(c *cobra.Command) {
	c.Flags().StringVar(&f.target, "target", "", "TARGET.yaml (platform, module, vars, ssh, kafka, teardown, budget_usd)")
	c.Flags().StringVar(&f.db, "db", "", "campaign db (default: the plan's path with .db, else the only *.db in the current directory)")
}

// readTarget reads --target as a usage error when it is bad.
func readTarget(st *state, path string) (*targetfile.File, error) {
	if path == "" {
		return nil, usageErrf("--target TARGET.yaml is required (docs/targets.md)")
	}
	t, err := targetfile.Read(path, st.getenv)
	if err != nil {
		return nil, usageErr(err)
	}
	if t.Platform == "local" {
		return nil, usageErrf("%s: platform local has no Terraform infrastructure (the embedded cluster lives in xp run)", path)
	}
	if t.Platform == targetfile.PlatformExisting {
		// Not an error: there is nothing to do, and nothing was done.
		return nil, withCode(exitOK, fmt.Errorf("%s: platform existing: nothing to provision: the cluster is someone else's and xp installs "+
			"nothing on it (xp run --target %s checks its endpoints, runs the plan and deletes its topics; docs/targets.md)", path, path))
	}
	return t, nil
}

// infraGroups splits rows into their infrastructure groups
// (planner.GroupByInfra: in run order), skipping rows on the local
// platform.
func infraGroups(rows []planner.Row) []target.Group {
	remote := slices.DeleteFunc(slices.Clone(rows), func(r planner.Row) bool { return r.Platform == "local" })
	var out []target.Group
	for _, rs := range planner.GroupByInfra(remote) {
		out = append(out, target.Group{Key: rs[0].InfraKey(), Rows: rs})
	}
	return out
}

// planRows reads the rows of PLAN.jsonl, else of the campaign in db.
func planRows(ctx context.Context, planPath, db string) ([]planner.Row, error) {
	if planPath != "" {
		rows, err := planner.ReadPlan(planPath)
		if err != nil {
			return nil, usageErrf("%s: %v (see xp plan validate)", planPath, err)
		}
		return rows, nil
	}
	s, err := results.OpenReadOnly(ctx, db)
	if err != nil {
		return nil, usageErrf("--db %s: %v (give the plan: xp infra up PLAN.jsonl)", db, err)
	}
	defer s.Close()
	stored, err := s.Rows(ctx)
	if err != nil {
		return nil, usageErrf("--db %s: %v (give the plan: xp infra up PLAN.jsonl)", db, err)
	}
	rows := make([]planner.Row, 0, len(stored))
	for _, r := range stored {
		var pr planner.Row
		if err := json.Unmarshal(r.Plan, &pr); err != nil {
			return nil, fmt.Errorf("--db %s: row %s: %w", db, r.Run, err)
		}
		rows = append(rows, pr)
	}
	if len(rows) == 0 {
		return nil, usageErrf("--db %s holds no campaign: give the plan (xp infra up PLAN.jsonl)", db)
	}
	return rows, nil
}

func resolveDB(db, planPath string) (string, error) {
	switch {
	case db != "":
		return db, nil
	case planPath != "":
		return runner.DefaultDB(planPath), nil
	}
	found, err := runner.FindDB(".")
	if err != nil {
		return "", usageErr(err)
	}
	return found, nil
}

func defaultPrices() *planner.Prices {
	p, err := planner.ParsePrices(plans.Prices)
	if err != nil {
		panic(err) // the built-in table is checked by planner's tests
	}
	return p
}

// openProvisioner opens db for writing and finds terraform.
func openProvisioner(ctx context.Context, st *state, t *targetfile.File, db, campaign string) (*tf.Provisioner, func(), error) {
	store, err := results.Open(ctx, db)
	if err != nil {
		return nil, nil, usageErrf("--db %s: %v", db, err)
	}
	exec, err := tf.Find(ctx, tf.CacheDir(st.getenv))
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	root := tf.WorkRoot(db)
	if err := os.MkdirAll(root, 0o700); err != nil {
		store.Close()
		return nil, nil, err
	}
	logf, err := os.OpenFile(filepath.Join(root, "terraform.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	p := &tf.Provisioner{Target: t, Campaign: campaign, Root: root, ExecPath: exec, Store: store,
		Log: logf, Prices: defaultPrices(), Now: st.now, Getenv: st.getenv, Activity: st.terraform}
	return p, func() { logf.Close(); store.Close() }, nil
}

// stopLeftovers stops, over SSH, the services an xp killed before its
// teardown left on the machines of every group the db records as up.
// Without kafka.distribution embedded xp deploys no services, so there is
// nothing to stop.
func stopLeftovers(ctx context.Context, st *state, t *targetfile.File, db string, p *tf.Provisioner) error {
	invs, err := tf.Inventories(ctx, p.Store)
	if err != nil || len(invs) == 0 {
		return err
	}
	store, ok := p.Store.(*results.Store)
	if !ok {
		return nil
	}
	c, err := store.Campaign(ctx)
	if errors.Is(err, results.ErrNoCampaign) {
		// Brought up by xp infra up alone: no xp run started services.
		return nil
	}
	if err != nil {
		return err
	}
	d, err := remote.NewDeployer(remote.DeployerOptions{Campaign: c.Name, SSH: t.SSH, Kafka: t.Kafka,
		KnownHosts: db + ".known_hosts", Binary: st.getenv(remote.BinaryEnv), Log: p.Log})
	if err != nil {
		return nil
	}
	defer d.Close()
	var errs []error
	for _, g := range slices.Sorted(maps.Keys(invs)) {
		stop := d.StopLeftovers
		if t.Platform == "hosts" {
			// The machines stay: nothing of the campaign may.
			stop = d.RemoveLeftovers
		}
		unreachable, err := stop(ctx, invs[g])
		if err != nil {
			errs = append(errs, fmt.Errorf("group %s: stopping the services left on its hosts: %w", g, err))
		}
		for _, u := range unreachable {
			fmt.Fprintf(st.stderr, "xp: warning: group %s: host %s is not reachable over SSH: services an earlier xp run left there "+
				"were not stopped (destroying the group takes them down; on the hosts platform, stop them by hand: xp agent stop --dir ~/xp/%s/HOST)\n",
				g, u, c.Name)
		}
	}
	return errors.Join(errs...)
}

// checkBudget refuses rows whose estimated cost exceeds t's budget.
func checkBudget(t *targetfile.File, rows []planner.Row) (planner.Estimate, error) {
	est, err := targetfile.CheckBudget(t, rows, defaultPrices())
	if err != nil {
		return est, usageErr(err)
	}
	return est, nil
}

func newInfraUpCmd(st *state) *cobra.Command {
	var f infraFlags
	var dryRun bool
	c := &cobra.Command{
		Use:   "up [PLAN.jsonl] --target TARGET.yaml [--db FILE] [--dry-run]",
		Short: "Apply every infrastructure group of a campaign and print its hosts",
		Long: `Up applies the Terraform module of TARGET.yaml once per infrastructure group of
the plan (or of the campaign already in --db), and prints each group's hosts.
A group the db records as up with the same variables is not applied again.
--dry-run prints the variables each group would be applied with and the
estimated cost, and applies nothing. An estimate above budget_usd is refused
(exit 2).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := st.interruptible(cmd.Context(), "Terraform stops after the calls in flight and saves its state")
			defer stop()
			planPath := ""
			if len(args) == 1 {
				planPath = args[0]
			}
			t, err := readTarget(st, f.target)
			if err != nil {
				return err
			}
			db, err := resolveDB(f.db, planPath)
			if err != nil {
				return err
			}
			rows, err := planRows(ctx, planPath, db)
			if err != nil {
				return err
			}
			groups := infraGroups(rows)
			if len(groups) == 0 {
				return usageErrf("no row of the plan runs on %s (every row is on platform local)", t.Platform)
			}
			for _, g := range groups {
				if g.Key.Platform != t.Platform {
					return usageErrf("rows of group %s run on %s, but %s is platform %s", g.Key, g.Key.Platform, t.Path, t.Platform)
				}
			}
			est, err := checkBudget(t, rows)
			if dryRun {
				p := &tf.Provisioner{Target: t, Campaign: rows[0].Campaign, Root: tf.WorkRoot(db)}
				for _, g := range groups {
					plan, perr := p.PlanGroup(g.Key, g.Rows)
					if perr != nil {
						return usageErr(perr)
					}
					b, _ := json.MarshalIndent(plan.Vars, "  ", "  ")
					fmt.Fprintf(st.stdout, "group %s (%d rows) in %s, module %s:\n  %s\n", g.Key, len(g.Rows), plan.Dir, t.ModuleName(), b)
				}
				writeEstimate(st.stdout, est, t)
				return err
			}
			if err != nil {
				return err
			}
			if err := tf.CheckCredentials(t.Platform, st.getenv); err != nil {
				return usageErr(err)
			}
			p, done, err := openProvisioner(ctx, st, t, db, rows[0].Campaign)
			if err != nil {
				return err
			}
			defer done()
			for _, g := range groups {
				up, err := p.Up(ctx, g.Key, g.Rows)
				if errors.Is(err, tf.ErrNoCredentials) {
					return usageErr(err)
				}
				if err != nil && ctx.Err() != nil {
					return withCode(exitInterrupted, fmt.Errorf("group %s: %w (Terraform's output: %s)", g.Key, err, filepath.Join(p.Root, "terraform.log")))
				}
				if err != nil {
					return fmt.Errorf("group %s: %w (Terraform's output: %s)", g.Key, err, filepath.Join(p.Root, "terraform.log"))
				}
				verb := "applied"
				if up.Reused {
					verb = "already up"
				}
				fmt.Fprintf(st.stdout, "group %s: %s, $%.3f/h\n", g.Key, verb, up.HourlyUSD)
				writeHosts(st.stdout, up.Inventory)
			}
			return nil
		},
	}
	f.register(c)
	c.Flags().BoolVar(&dryRun, "dry-run", false, "print each group's variables and the estimated cost; apply nothing")
	return c
}

func writeEstimate(w io.Writer, est planner.Estimate, t *targetfile.File) {
	fmt.Fprintf(w, "estimated cost: $%.2f (up to $%.2f), %d infrastructure group(s), wall time %s", est.Cost, est.CostMax, est.Provisionings, est.Wall.Round(1e9))
	if t.BudgetUSD > 0 {
		fmt.Fprintf(w, "; budget_usd $%.2f", t.BudgetUSD)
	}
	fmt.Fprintln(w)
	if len(est.Unpriced) > 0 {
		fmt.Fprintf(w, "no price for %s: left out of the estimate (add it to plans/prices.yaml)\n", strings.Join(est.Unpriced, ", "))
	}
}

func writeHosts(w io.Writer, inv *tf.Inventory) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, role := range tf.Roles {
		for _, h := range inv.Hosts.Role(role) {
			fmt.Fprintf(tw, "  %s\t%s\t%s@%s:%d\t%s\t%s\n", role, h.Name, inv.SSHUser, h.PublicAddress, h.SSHPort, h.PrivateAddress, inv.InstanceTypes[role])
		}
	}
	tw.Flush()
}

func newInfraDownCmd(st *state) *cobra.Command {
	var f infraFlags
	c := &cobra.Command{
		Use:   "down [--target TARGET.yaml] [--db FILE]",
		Short: "Destroy every infrastructure group the db records as not down, also after a crash",
		Long: `Down destroys, in each group's working directory beside the db, every group
whose latest recorded event is not "down": up, half-applied by a process that
was killed, or a failed destroy. The working directories hold the module and
its variables, so --target is not required; given, down first stops over SSH
the services a killed xp run left on the group's machines.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := st.interruptible(cmd.Context(), "Terraform stops after the calls in flight and saves its state")
			defer stop()
			var t *targetfile.File
			if f.target != "" {
				var err error
				if t, err = readTarget(st, f.target); err != nil {
					return err
				}
			}
			db, err := resolveDB(f.db, "")
			if err != nil {
				return err
			}
			if _, err := os.Stat(db); err != nil {
				return usageErrf("--db %s: %v", db, err)
			}
			p, done, err := openProvisioner(ctx, st, t, db, "")
			if err != nil {
				return err
			}
			defer done()
			var stopErr error
			if t != nil {
				stopErr = stopLeftovers(ctx, st, t, db, p)
			}
			// Read before the destroy, which removes the working
			// directories that hold the marks.
			abandoned, aerr := p.Abandoned(ctx)
			downed, err := p.DownAll(ctx)
			if errors.Is(err, tf.ErrNoCredentials) {
				return usageErr(err)
			}
			if stopErr != nil || aerr != nil {
				err = errors.Join(stopErr, aerr, err)
			}
			for _, g := range downed {
				fmt.Fprintf(st.stdout, "group %s: destroyed\n", g)
			}
			for _, a := range abandoned {
				fmt.Fprintf(st.stderr, "xp: warning: %s\n", a.Advice())
			}
			if err != nil && ctx.Err() != nil {
				return withCode(exitInterrupted, fmt.Errorf("%w (Terraform's output: %s)", err, filepath.Join(p.Root, "terraform.log")))
			}
			if err != nil {
				return fmt.Errorf("%w (Terraform's output: %s)", err, filepath.Join(p.Root, "terraform.log"))
			}
			if len(downed) == 0 {
				fmt.Fprintln(st.stdout, "nothing is up")
			}
			return nil
		},
	}
	f.register(c)
	return c
}

func newInfraShowCmd(st *state) *cobra.Command {
	var f infraFlags
	var asJSON bool
	c := &cobra.Command{
		Use:   "show [--db FILE] [--json]",
		Short: "Show each infrastructure group's state, hosts, price and cost from the db",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if f.target != "" {
				if _, err := readTarget(st, f.target); err != nil {
					return err
				}
			}
			db, err := resolveDB(f.db, "")
			if err != nil {
				return err
			}
			s, err := results.OpenReadOnly(ctx, db)
			if err != nil {
				return usageErrf("--db %s: %v", db, err)
			}
			defer s.Close()
			groups, err := tf.ReadGroups(ctx, s, st.now())
			if err != nil {
				return err
			}
			abandoned, err := (&tf.Provisioner{Store: s}).Abandoned(ctx)
			if err != nil {
				return err
			}
			for _, a := range abandoned {
				fmt.Fprintf(st.stderr, "xp: warning: %s\n", a.Advice())
			}
			if asJSON {
				return json.NewEncoder(st.stdout).Encode(groups)
			}
			if len(groups) == 0 {
				fmt.Fprintln(st.stdout, "no infrastructure recorded")
				return nil
			}
			var total float64
			for _, g := range groups {
				total += g.CostUSD
				fmt.Fprintf(st.stdout, "group %s: %s since %s, $%.3f/h, cost $%.2f\n", g.Key, g.State, g.Since.Format("2006-01-02 15:04:05Z07:00"), g.HourlyUSD, g.CostUSD)
				if g.Error != "" {
					fmt.Fprintf(st.stdout, "  error: %s\n", firstLine(g.Error))
				}
				if g.Inventory != nil && g.State == tf.EventUp {
					writeHosts(st.stdout, g.Inventory)
				}
			}
			fmt.Fprintf(st.stdout, "total cost: $%.2f\n", total)
			return nil
		},
	}
	f.register(c)
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON array of groups")
	return c
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}
