package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/xp-bench/xp/analysis"
	"github.com/xp-bench/xp/results"
)

func newPlanPowerCmd(st *state) *cobra.Command {
	var (
		db, effect, treatment string
		metrics               []string
		power, alpha          float64
		asJSON                bool
	)
	c := &cobra.Command{
		Use:   "power --db PILOT.db --effect 2% [--metric M]... [--power 0.8] [--alpha 0.05] [--treatment T] [--json]",
		Short: "Replicates a campaign needs to detect a penalty, from a pilot campaign",
		Long: `Power reads a pilot campaign and prints, per treatment and metric, the
pilot's matched sets and the spread of the paired penalty, and the
replicates per configuration (and matched sets pooled over configurations)
that detect the given mean penalty with the given power by a two-sided
paired t-test at level alpha. Method: the normal approximation from 30
pilot sets, else a simulation that resamples the pilot's residuals.
Apply the answer with xp plan expand SPEC --replicates N (docs/analysis.md).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if db == "" {
				return usageErrf("--db PILOT.db is required: the pilot campaign to size from")
			}
			e, err := parseEffect(effect)
			if err != nil {
				return usageErr(err)
			}
			ctx, stop := st.interruptible(cmd.Context())
			defer stop()
			d, err := analysis.Load(ctx, db)
			if err != nil {
				if errors.Is(err, results.ErrNoDatabase) || errors.Is(err, results.ErrNotCampaign) ||
					errors.Is(err, results.ErrNoCampaign) || errors.Is(err, results.ErrNewerSchema) || errors.Is(err, results.ErrOlderSchema) {
					return usageErr(err)
				}
				return err
			}
			ans, err := analysis.Power(d, analysis.PowerOptions{Effect: e, Power: power, Alpha: alpha,
				Metrics: metrics, Treatment: treatment})
			var be *analysis.BaselineError
			if errors.Is(err, analysis.ErrBadOption) || errors.Is(err, analysis.ErrNoPilotData) ||
				errors.Is(err, analysis.ErrOneLevel) || errors.As(err, &be) {
				return usageErrf("%s: %w", db, err)
			}
			if errors.Is(err, analysis.ErrNoHealthySet) {
				return withCode(exitFailure, fmt.Errorf("%s: %w", db, err))
			}
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(st.stdout).Encode(ans)
			}
			fmt.Fprintf(st.stdout, "effect %g%% (mean penalty), power %g, two-sided alpha %g\n", e, orDefault(power, 0.8), orDefault(alpha, 0.05))
			tw := tabwriter.NewWriter(st.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "treatment\tmetric\tpilot sets\tconfigurations\tsd of penalty %%\treplicates per configuration\tmatched sets pooled\tmethod\n")
			for _, a := range ans {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.3g\t%d\t%d (%d per configuration)\t%s\n", a.Treatment, a.Metric, a.PilotSets,
					a.PilotConfigs, a.SD, a.Replicates, a.PooledSets, a.PooledReplicates, a.Method)
			}
			return tw.Flush()
		},
	}
	c.Flags().StringVar(&db, "db", "", "pilot campaign `FILE`")
	c.Flags().StringVar(&effect, "effect", "", "mean penalty to detect, in percent, e.g. `2%`")
	c.Flags().StringSliceVar(&metrics, "metric", nil, "metric `M` to size for (repeatable; default publish_ms_p99 and e2e_ms_p99)")
	c.Flags().Float64Var(&power, "power", 0.8, "wanted probability of detecting the effect")
	c.Flags().Float64Var(&alpha, "alpha", 0.05, "two-sided significance level")
	c.Flags().StringVar(&treatment, "treatment", "", "size for treatment level `T` only (default every level)")
	c.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return c
}

func orDefault(v, def float64) float64 {
	if v == 0 {
		return def
	}
	return v
}

// parseEffect reads "2%" or "2" as 2 percentage points of penalty.
func parseEffect(s string) (float64, error) {
	if s == "" {
		return 0, fmt.Errorf("--effect is required: the mean penalty to detect, e.g. --effect 2%%")
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(s, "%")), 64)
	if err != nil || !(v > 0) {
		return 0, fmt.Errorf("--effect %q: want a positive penalty in percent, e.g. 2%%", s)
	}
	return v, nil
}
