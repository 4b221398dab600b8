package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/xp-bench/xp/infra/targetfile"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/runner"
	"github.com/xp-bench/xp/runner/loadgen"
)

func newRunCmd(st *state) *cobra.Command {
	var o runner.Options
	var halfwidth string
	var ts runner.TwoStage
	var jvmOpts string
	c := &cobra.Command{
		Use:   "run PLAN.jsonl [--db FILE] [--target local|TARGET.yaml] [--resume] [--max-attempts N] [--keep] [--dry-run] [--spec SPEC.yaml] [--halfwidth 2% [--halfwidth-metric M] [--max-replicates N]]",
		Short: "Run (or resume) a campaign, checkpointing every run into the evidence store",
		Long: `Run executes every row of a JSONL campaign in plan order: each infrastructure
group is brought up once, then every row runs on a fresh topic, is health-gated,
and its evidence is stored in SQLite, one transaction per state change.

The db defaults to the plan's path with .db. An existing db with progress needs
--resume: rows left running become interrupted attempts and run again, failed
rows are retried up to --max-attempts, done and invalid rows are skipped.

--target local (the default) runs on the embedded cluster. --target
TARGET.yaml names where clusters come from: platform (local, aws, azure,
hosts), the Terraform module and its vars, ssh (user, key, known_hosts
policy), kafka (version, distribution and its SHA-512, or embedded),
teardown and budget_usd. Every key, and which platforms this build runs:
docs/targets.md.

--halfwidth 2% runs a two-stage design (Stein's): the plan's replicates are
the first stage; then every configuration whose interval of the mean penalty
of --halfwidth-metric (default publish_ms_p99) would be wider than 2 points
gets the matched sets that bring it there, at most --max-replicates in all
(default 4 times the plan's), appended in the plan's randomized interleaved
order and recorded in the db; --resume continues either stage. See
docs/analysis.md#two-stage-design.

First Ctrl-C stops the run in flight, records it interrupted, brings the
infrastructure down (unless --keep) and exits 130; a second exits at once.
Exit codes: 0 every row done, 2 bad input, 3 finished with invalid or failed
rows, 130 interrupted, 1 other failures.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if looksLikeSpec(args[0]) {
				plan := withoutExt(args[0]) + ".jsonl"
				return usageErrf("xp run takes a campaign (JSONL), and %s is a factor spec: expand it first: xp plan expand %s -o %s && xp run %s",
					args[0], args[0], plan, plan)
			}
			if o.MaxAttempts < 1 {
				// runner.Options takes 0 as "default"; a 0 typed here is a mistake.
				return usageErrf("--max-attempts %d: want 1 or more (default 3)", o.MaxAttempts)
			}
			if halfwidth != "" {
				h, err := parseHalfWidth(halfwidth)
				if err != nil {
					return usageErr(err)
				}
				ts.HalfWidth = h
				o.TwoStage = &ts
			} else if cmd.Flags().Changed("max-replicates") || cmd.Flags().Changed("halfwidth-metric") {
				return usageErrf("--max-replicates and --halfwidth-metric size a two-stage design: give --halfwidth too (e.g. --halfwidth 2%%)")
			}
			if o.WarmupCap <= 0 {
				o.WarmupCap = -1 // none
			}
			o.Plan = args[0]
			o.JVMOpts = strings.Fields(jvmOpts)
			if o.JavaClient == "" {
				o.JavaClient = defaultJavaClient(st.getenv)
			}
			if o.RdkafkaClient == "" {
				o.RdkafkaClient = defaultRdkafkaClient(st.getenv)
			}
			o.Stdout, o.Stderr, o.Terminal, o.Now = st.stdout, st.stderr, st.isTerminal, st.now
			o.Platforms = platforms(st, st.stderr)
			if err := refuseOverBudget(st, o.Target, o.Plan); err != nil {
				return err
			}
			ctx, stop := st.interruptible(cmd.Context(), "stopping the run in flight, recording it as interrupted, taking the infrastructure down")
			defer stop()
			_, err := runner.Run(ctx, o)
			switch {
			case err == nil:
				return nil
			case errors.Is(err, runner.ErrBadInput):
				return usageErr(err)
			case errors.Is(err, runner.ErrInterrupted):
				return withCode(exitInterrupted, errors.New("interrupted; run again with --resume to continue"))
			case errors.Is(err, runner.ErrUnfinished):
				return withCode(exitInvalidRuns, err)
			}
			return err
		},
	}
	f := c.Flags()
	f.StringVar(&o.DB, "db", "", "evidence store (default: the plan's path with .db)")
	f.StringVar(&o.Spec, "spec", "", "factor spec the plan came from, kept in the db (default: the plan's name with .yaml, if it expands to the plan)")
	f.StringVar(&o.Target, "target", "local", "where to run: local (embedded cluster) or a TARGET.yaml")
	f.BoolVar(&o.Resume, "resume", false, "continue a campaign that has progress in --db")
	f.BoolVar(&o.DryRun, "dry-run", false, "validate and print what would run; write nothing")
	f.StringVar(&o.JavaClient, "java-client", "", "the Java client release rows with client: java run, its .tgz or unpacked directory (default $XP_JAVA_CLIENT, else the newest out/dist/xp-java-client-*.tgz; make java-client)")
	f.StringVar(&o.RdkafkaClient, "rdkafka-client", "", "the librdkafka client release rows with client: librdkafka run, its .tgz or unpacked directory (default $XP_RDKAFKA_CLIENT, else the newest out/dist/xp-rdkafka-client-*.tgz; make rdkafka-client)")
	f.StringVar(&jvmOpts, "jvm-opts", "", "JVM flags of the Java client, space-separated, replacing the default "+strings.Join(loadgen.DefaultJVMOpts, " "))
	f.IntVar(&o.MaxAttempts, "max-attempts", 3, "failed attempts allowed per row before it stays failed")
	f.BoolVar(&o.Keep, "keep", false, "leave the infrastructure up at the end and keep DB.work (local Apache Kafka brokers keep running; the embedded cluster still ends with the process)")
	f.DurationVar(&o.WarmupCap, "warmup-cap", runner.DefaultWarmupCap, "longest discarded warm-up load after a group's cluster comes up or restarts, until it is warm (0: none)")
	f.StringVar(&halfwidth, "halfwidth", "", "two-stage design: half-width asked of each configuration's interval of the mean penalty, e.g. 2%")
	f.StringVar(&ts.Metric, "halfwidth-metric", runner.DefaultStageMetric, "metric whose mean penalty --halfwidth sizes")
	f.IntVar(&ts.MaxReplicates, "max-replicates", 0, "two-stage design: most replicates of any configuration, first stage included (default 4 times the plan's)")
	return c
}

// parseHalfWidth reads a half-width in percent: "2%" or "2".
func parseHalfWidth(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "%"), 64)
	if err != nil || !(v > 0) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("--halfwidth %q: want a positive half-width in percent, e.g. --halfwidth 2%%", s)
	}
	return v, nil
}

// refuseOverBudget refuses, before anything starts, a campaign whose
// estimated cost exceeds the budget_usd of its TARGET.yaml, naming both.
// Other problems of the plan or the target are left to the runner.
func refuseOverBudget(st *state, targetArg, planPath string) error {
	if targetArg == "" || targetArg == "local" {
		return nil
	}
	t, err := targetfile.Read(targetArg, st.getenv)
	if err != nil {
		return usageErr(err)
	}
	if t.BudgetUSD == 0 {
		return nil
	}
	rows, err := planner.ReadPlan(planPath)
	if err != nil {
		return nil
	}
	_, err = checkBudget(t, rows)
	return err
}
