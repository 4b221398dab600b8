package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/xp-bench/xp/analysis"
	"github.com/xp-bench/xp/analysis/export"
	"github.com/xp-bench/xp/results"
)

func newCompareCmd(st *state) *cobra.Command {
	var (
		out, baseline string
		confidence    float64
	)
	c := &cobra.Command{
		Use:   "compare A.db B.db [--out DIR] [--baseline LEVEL] [--confidence C]",
		Short: "Does it replicate? Two campaigns' headline rows side by side, with a combined estimate",
		Long: `Compare analyses two campaigns of one plan (or of plans sharing
configurations) over the configurations both have, and sets each headline
row (treatment level × metric × scope) side by side: A's estimate and
interval, B's, whether each estimate lies inside the other's interval,
whether the signs agree, and a fixed- and random-effects combination on
the log-ratio scale with the heterogeneity (Cochran's Q, I², tau²). See
docs/analysis.md.

Without --out the rows go to stdout as CSV (compare.csv's columns); with
--out DIR, compare.csv and compare.html (one page, no network) go there.
The summary, how many rows replicated, goes to stderr (stdout with --out).
Two honest 95% intervals capture each other's estimate about 83% of the
time. Exit 2 for a file that is not a campaign, the same campaign twice
or two sharing no configuration; 3 when a campaign has no healthy matched
set in them.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return fmt.Errorf("want two campaign dbs, got %d argument(s): xp compare A.db B.db", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("confidence") && (confidence <= 0 || confidence >= 1) {
				return usageErrf("--confidence %g out of range: want a level between 0 and 1, e.g. 0.95", confidence)
			}
			a, b := args[0], args[1]
			if sameFile(a, b) {
				return usageErrf("%s and %s are the same file: a campaign replicates itself trivially; give the dbs of two runs of one plan", a, b)
			}
			ctx, stop := st.interruptible(cmd.Context())
			defer stop()
			var ds [2]*analysis.Dataset
			for i, path := range args {
				d, err := analysis.Load(ctx, path)
				if err != nil {
					if errors.Is(err, results.ErrNoDatabase) || errors.Is(err, results.ErrNotCampaign) ||
						errors.Is(err, results.ErrNoCampaign) || errors.Is(err, results.ErrNewerSchema) || errors.Is(err, results.ErrOlderSchema) {
						return usageErr(fmt.Errorf("%w: xp compare takes two campaign dbs (xp run writes them)", err))
					}
					return fmt.Errorf("compare %s: %w", path, err)
				}
				ds[i] = d
			}
			opt := analysis.Options{Baseline: baseline, Confidence: confidence}
			cmp, err := analysis.Compare(ds[0], ds[1], a, b, opt)
			var be *analysis.BaselineError
			switch {
			case errors.As(err, &be), errors.Is(err, analysis.ErrBadOption), errors.Is(err, analysis.ErrOneLevel),
				errors.Is(err, analysis.ErrNotComparable):
				return usageErr(err)
			case err != nil && !errors.Is(err, analysis.ErrNoHealthySet):
				return fmt.Errorf("compare: %w", err)
			}
			summary := st.stderr
			if out != "" {
				if werr := export.WriteCompare(out, cmp); werr != nil {
					return werr
				}
				summary = st.stdout
			} else if werr := export.WriteCompareCSV(st.stdout, cmp); werr != nil {
				return werr
			}
			for _, n := range cmp.Notes {
				fmt.Fprintln(st.stderr, n)
			}
			fmt.Fprintln(summary, cmp.Summary())
			if out != "" {
				fmt.Fprintf(st.stdout, "report: %s\n", filepath.Join(out, "compare.html"))
			}
			if err != nil {
				return withCode(exitInvalidRuns, fmt.Errorf("%w; the rows of the other campaign are listed as its only", err))
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&out, "out", "", "output directory for compare.csv and compare.html (default: CSV on stdout)")
	f.StringVar(&baseline, "baseline", "", "treatment level every other level is compared with (default: each campaign's)")
	f.Float64Var(&confidence, "confidence", 0.95, "confidence level of the intervals")
	return c
}

// sameFile says whether a and b name one file (a path and a link to it
// included); false when either cannot be read (Load says why).
func sameFile(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}
