package main

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/xp-bench/xp/analysis"
	"github.com/xp-bench/xp/analysis/export"
	"github.com/xp-bench/xp/results"
	"github.com/xp-bench/xp/runner"
)

func newAnalyseCmd(st *state) *cobra.Command {
	var (
		db, out, baseline, method string
		resamples                 int
		confidence                float64
		seed                      int64
	)
	c := &cobra.Command{
		Use:     "analyse [--db FILE] [--out DIR] [--baseline LEVEL] [--method bca|percentile] [--resamples N] [--confidence C] [--seed N]",
		Aliases: []string{"analyze"},
		Short:   "Paired effects with bootstrap intervals, significance and factor sensitivity: CSV, LaTeX, SVG, HTML",
		Long: `Analyse reads a campaign db and writes, into --out: runs.csv, effects.csv,
sensitivity.csv, cells.csv, significance.csv, excluded.csv, latency.csv,
tables.tex, figures/*.svg and report.html (see docs/analysis.md).
The same db and seed give byte-identical files. Exit 3 when no matched set
is healthy (a partial report is still written).`,
		Args: dbFlagArgs("analyse"),
		RunE: func(cmd *cobra.Command, args []string) error {
			// The analysis options take 0 as "default"; a 0 typed on the
			// command line is a mistake, not a request for the default.
			if cmd.Flags().Changed("resamples") && resamples == 0 {
				return usageErrf("--resamples 0: want at least 100 (default 10000)")
			}
			if cmd.Flags().Changed("confidence") && confidence == 0 {
				return usageErrf("--confidence 0 out of range: want a level between 0 and 1, e.g. 0.95")
			}
			if db == "" {
				found, err := runner.FindDB(".")
				if err != nil {
					return usageErr(err)
				}
				db = found
			}
			if out == "" {
				out = strings.TrimSuffix(db, filepath.Ext(db)) + "-analysis"
			}
			ctx, stop := st.interruptible(cmd.Context())
			defer stop()
			d, err := analysis.Load(ctx, db)
			if err != nil {
				if errors.Is(err, results.ErrNoDatabase) || errors.Is(err, results.ErrNotCampaign) ||
					errors.Is(err, results.ErrNoCampaign) || errors.Is(err, results.ErrNewerSchema) || errors.Is(err, results.ErrOlderSchema) {
					return usageErr(err)
				}
				return fmt.Errorf("analyse %s: %w", db, err)
			}
			opt := analysis.Options{Baseline: baseline, Method: analysis.Method(method), Resamples: resamples,
				Confidence: confidence, Seed: seed, SeedSet: cmd.Flags().Changed("seed")}
			res, err := analysis.Analyse(d, opt)
			if res != nil {
				if msg, nothing := runningCampaign(db, res); msg != "" {
					if nothing {
						return withCode(exitFailure, errors.New(msg))
					}
					fmt.Fprintln(st.stderr, msg)
				}
			}
			var be *analysis.BaselineError
			switch {
			case errors.As(err, &be), errors.Is(err, analysis.ErrBadOption), errors.Is(err, analysis.ErrOneLevel):
				return usageErr(err)
			case errors.Is(err, analysis.ErrNoHealthySet):
				if werr := export.Write(out, res); werr != nil {
					return werr
				}
				writeCounts(st, res)
				fmt.Fprintf(st.stdout, "partial report in %s\n", out)
				return withCode(exitInvalidRuns, fmt.Errorf("%s: %w; the partial report lists every excluded set and why", db, err))
			case err != nil:
				return fmt.Errorf("analyse %s: %w", db, err)
			}
			if err := export.Write(out, res); err != nil {
				return err
			}
			writeCounts(st, res)
			writeHeadline(st, res)
			fmt.Fprintf(st.stdout, "report: %s\n", filepath.Join(out, "report.html"))
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&db, "db", "", "campaign db (default: the only *.db in the current directory)")
	f.StringVar(&out, "out", "", "output directory (default: <db name>-analysis)")
	f.StringVar(&baseline, "baseline", "", "treatment level every other level is compared with (default: the campaign's)")
	f.StringVar(&method, "method", "bca", "bootstrap interval: bca or percentile")
	f.IntVar(&resamples, "resamples", 10000, "bootstrap resamples")
	f.Float64Var(&confidence, "confidence", 0.95, "confidence level of the intervals")
	f.Int64Var(&seed, "seed", 0, "bootstrap seed (default: the campaign seed)")
	return c
}

// writeCounts tells, on stderr, how many matched sets each comparison used
// and how many it left out.
func writeCounts(st *state, res *analysis.Result) {
	for _, c := range res.Counts {
		fmt.Fprintf(st.stderr, "%s vs %s: %d matched sets, %d healthy, %d excluded\n",
			c.Treatment, res.Levels[0], c.Sets, c.Healthy, c.Excluded)
	}
}

// writeHeadline prints the pooled headline penalties (geometric mean
// ratio) on stdout with their Holm-adjusted p-values; † marks an interval
// whose runs alone cannot bound the mean, fragile and better-than-baseline
// rows say so.
func writeHeadline(st *state, res *analysis.Result) {
	tw := tabwriter.NewWriter(st.stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "treatment\tmetric\tscope\tn\tpenalty %% (geometric mean ratio)\tinterval\tp (Holm)\n")
	for _, e := range res.Effects {
		if e.Statistic != analysis.StatHeadline || (e.Scope != analysis.ScopeAll && e.Scope != analysis.ScopeAllCapped && e.Scope != analysis.ScopeAllMax) {
			continue
		}
		iv, p := "none: "+e.Note, ""
		if !math.IsNaN(e.Low) {
			iv = fmt.Sprintf("[%.2f, %.2f] %s", e.Low, e.High, e.Method)
			p = fmt.Sprintf("%.3g", e.PHolm)
			if e.Unbounded {
				iv += " † (its runs alone cannot bound the mean: effects.csv note)"
			}
			if e.Fragile {
				iv += " fragile (effects.csv fragile_sets)"
			}
			if e.Better {
				iv += " better than " + e.Baseline + " (effects.csv driving_runs)"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%.2f\t%s\t%s\n", e.Treatment, e.Metric, e.Scope, e.N, e.Estimate, iv, p)
	}
	tw.Flush()
}

// runningCampaign describes a campaign with matched sets not finished yet
// (its xp run still working, or stopped): how many sets are finished, and
// that the analysis is of those. nothing is true when no set has finished,
// so there is nothing to analyse yet. "" when every set is finished.
func runningCampaign(db string, res *analysis.Result) (msg string, nothing bool) {
	unfinished := res.Unfinished
	finished := res.MatchedSets - unfinished
	if unfinished == 0 {
		return "", false
	}
	state := "is stopped with sets not run (xp run --resume continues it)"
	if pid, alive := results.Writer(db); alive {
		state = fmt.Sprintf("is still running (xp pid %d)", pid)
	}
	if finished == 0 {
		return fmt.Sprintf("%s: campaign %s %s: no matched set has finished yet (%d to go); xp analyse gives a partial analysis once one has (xp status --db %s shows progress)",
			db, res.Dataset.Campaign, state, unfinished, db), true
	}
	return fmt.Sprintf("%s: campaign %s %s: partial analysis of the %d matched sets finished of %d; the %d unfinished are left out, not counted as excluded",
		db, res.Dataset.Campaign, state, finished, finished+unfinished, unfinished), false
}
