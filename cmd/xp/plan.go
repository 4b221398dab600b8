package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/plans"
)

func newPlanCmd(st *state) *cobra.Command {
	c := &cobra.Command{
		Use:   "plan",
		Short: "Expand factor specs into campaigns; validate and describe campaigns",
	}
	c.AddCommand(newPlanExpandCmd(st), newPlanValidateCmd(st), newPlanShowCmd(st), newPlanImportOMBCmd(st), newPlanImportOMBDriverCmd(st), newPlanPowerCmd(st))
	return c
}

func newPlanExpandCmd(st *state) *cobra.Command {
	var out string
	var seed int64
	var replicates int
	c := &cobra.Command{
		Use:   "expand SPEC.yaml [-o FILE] [--seed N] [--replicates N]",
		Short: "Expand a factor spec into a JSONL campaign (stdout, or -o FILE)",
		Long: `Expand turns a factor spec into a campaign: one JSON line per run, in the
order the runs will execute. A minimal spec:

` + indent(minimalSpec) + `

gives 2 levels x 3 replicates = 6 runs. Every field, include and exclude
lists, and the row format: docs/spec.md. Ready specs: plans/*.yaml.

  xp plan expand my-first.yaml -o my-first.jsonl && xp run my-first.jsonl`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if looksLikeJSONL(args[0]) {
				return usageErrf("xp plan expand takes a factor spec (YAML); %s is a campaign (JSONL) already: run it with xp run %s, or describe it with xp plan show %s",
					args[0], args[0], args[0])
			}
			spec, err := readSpec(args[0])
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("seed") {
				spec.Seed, spec.HasSeed = seed, true
			}
			if cmd.Flags().Changed("replicates") {
				if replicates < 1 || replicates > planner.MaxReplicates {
					if replicates > planner.MaxReplicates {
						return usageErrf("--replicates %d: want 1..%d; an effect that needs more replicates is not detectable in practice with the pilot's noise: run longer (duration_s), choose a steadier metric, or size for a larger effect (xp plan power --effect)", replicates, planner.MaxReplicates)
					}
					return usageErrf("--replicates %d: want 1..%d (xp plan power says how many a wanted effect needs)", replicates, planner.MaxReplicates)
				}
				spec.Replicates = replicates
			}
			var sum planner.Summary
			err = writeOutput(st, out, func(w io.Writer) error {
				var err error
				sum, err = planner.Expand(spec, w)
				return err
			})
			if errors.Is(err, planner.ErrNoRows) {
				_ = sum.WriteText(st.stderr)
				return usageErrf("%s: %w", args[0], err)
			}
			if err != nil {
				return err
			}
			return sum.WriteText(st.stderr)
		},
	}
	c.Flags().StringVarP(&out, "output", "o", "", "write the campaign to `FILE` (only when expansion succeeds) instead of stdout")
	c.Flags().Int64Var(&seed, "seed", 0, "campaign seed `N` (default: the spec's seed, else derived from the campaign name)")
	c.Flags().IntVar(&replicates, "replicates", 0, "replicates `N` of every cell, replacing the spec's (e.g. the answer of xp plan power)")
	return c
}

// readSpec reads a spec; bad content and a missing file are usage errors.
func readSpec(path string) (*planner.Spec, error) {
	spec, err := planner.ReadSpec(path)
	if err != nil {
		return nil, usageErr(err)
	}
	return spec, nil
}

// writeOutput runs write against stdout, or against a temporary file beside
// path that replaces path only when write succeeds.
func writeOutput(st *state, path string, write func(io.Writer) error) error {
	if path == "" || path == "-" {
		return write(st.stdout)
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return usageErrf("cannot write %s: directory %s does not exist", path, dir)
		case errors.Is(err, fs.ErrPermission):
			return usageErrf("cannot write %s: no permission to create files in %s", path, dir)
		}
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func newPlanValidateCmd(st *state) *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE.jsonl",
		Short: "Check a campaign: schema, ranges, identities, order, complete matched sets",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rows, err := planner.ReadPlan(args[0])
			var perrs planner.PlanErrors
			switch {
			case errors.As(err, &perrs):
				for _, e := range perrs {
					fmt.Fprintln(st.stderr, e.Error())
				}
				return withCode(exitFailure, fmt.Errorf("%s: %d problem(s)", args[0], len(perrs)))
			case err != nil:
				return usageErr(err)
			}
			o := planner.Describe(rows, nil)
			fmt.Fprintf(st.stdout, "%s: valid: %d rows, %d cells, %d matched sets, %s\n",
				args[0], o.Rows, o.Cells, o.MatchedSets, planner.Plural(len(o.Groups), "infrastructure group"))
			return nil
		},
	}
}

func newPlanShowCmd(st *state) *cobra.Command {
	var pricesPath string
	var asJSON bool
	var maxReplicates int
	c := &cobra.Command{
		Use:   "show FILE.jsonl|SPEC.yaml [--max-replicates N]",
		Short: "Factors, levels, cells, rows, matched sets, infrastructure groups, estimated wall time and cost",
		Long: "Describe a campaign. Given the spec instead of the expanded JSONL, it also names\n" +
			"the reasons combinations were dropped. --max-replicates N adds the worst case of a\n" +
			"two-stage design (xp run --halfwidth): every configuration at N replicates.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data := plans.Prices
			if pricesPath != "" {
				var err error
				if data, err = os.ReadFile(pricesPath); err != nil {
					return usageErr(err)
				}
			}
			prices, err := planner.ParsePrices(data)
			if err != nil {
				return usageErrf("%s: %w", pricesPath, err)
			}
			var o planner.Overview
			if ext := strings.ToLower(filepath.Ext(args[0])); ext == ".yaml" || ext == ".yml" {
				spec, err := readSpec(args[0])
				if err != nil {
					return err
				}
				o, err = planner.DescribeSpec(spec, prices)
				if errors.Is(err, planner.ErrNoRows) {
					return usageErrf("%s: %w", args[0], err)
				}
				if err != nil {
					return err
				}
			} else {
				rows, err := planner.ReadPlan(args[0])
				var perrs planner.PlanErrors
				if errors.As(err, &perrs) {
					for _, e := range perrs {
						fmt.Fprintln(st.stderr, e.Error())
					}
					return withCode(exitFailure, fmt.Errorf("%s: %d problem(s); see xp plan validate", args[0], len(perrs)))
				}
				if err != nil {
					return usageErr(err)
				}
				o = planner.Describe(rows, prices)
				if maxReplicates > 0 {
					if maxReplicates < o.Replicates {
						return usageErrf("--max-replicates %d is below the plan's %d replicates (the first stage)", maxReplicates, o.Replicates)
					}
					o.AddWorstCase(rows, maxReplicates, prices)
				}
			}
			if maxReplicates > 0 && o.WorstCase == nil {
				return usageErrf("--max-replicates sizes a two-stage run of an expanded campaign: give the JSONL (xp plan expand %s -o FILE.jsonl)", args[0])
			}
			if asJSON {
				enc := json.NewEncoder(st.stdout)
				return enc.Encode(o)
			}
			return o.WriteText(st.stdout)
		},
	}
	c.Flags().StringVar(&pricesPath, "prices", "", "price table `FILE` (default: the built-in plans/prices.yaml)")
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	c.Flags().IntVar(&maxReplicates, "max-replicates", 0, "add the worst case of a two-stage design with at most N replicates a configuration")
	return c
}

func newPlanImportOMBCmd(st *state) *cobra.Command {
	var opt planner.ImportOptions
	var out string
	c := &cobra.Command{
		Use:   "import-omb WORKLOAD.yaml...",
		Short: "Turn OpenMessaging Benchmark workload files into one factor spec",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var files []planner.OMBFile
			for _, a := range args {
				data, err := os.ReadFile(a)
				if err != nil {
					return usageErr(err)
				}
				files = append(files, planner.OMBFile{Name: a, Data: data})
			}
			spec, warnings, err := planner.ImportOMB(files, opt)
			for _, w := range warnings {
				fmt.Fprintln(st.stderr, w)
			}
			if err != nil {
				return usageErr(err)
			}
			return writeOutput(st, out, func(w io.Writer) error {
				fmt.Fprintf(w, "# Imported by xp plan import-omb from %s.\n", strings.Join(args, ", "))
				return planner.WriteSpec(w, spec)
			})
		},
	}
	c.Flags().StringVarP(&out, "output", "o", "", "write the spec to `FILE` instead of stdout")
	c.Flags().StringVar(&opt.Campaign, "campaign", "", "campaign name (default: omb- and the first file's name)")
	c.Flags().StringSliceVar(&opt.Security, "security", nil, "compared security modes (default plaintext,tls,mtls,sasl_ssl)")
	c.Flags().StringVar(&opt.Baseline, "baseline", "", "baseline security mode (default: the first of --security)")
	c.Flags().IntVar(&opt.Brokers, "brokers", 3, "brokers")
	c.Flags().StringVar(&opt.Acks, "acks", "all", "producer acks: 0, 1 or all (OMB sets it in the driver file)")
	c.Flags().IntVar(&opt.Replicates, "replicates", 3, "replicates")
	return c
}

// indent indents every line of s by four spaces.
func indent(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}
