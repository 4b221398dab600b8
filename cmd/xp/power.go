package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/xp-bench/xp/analysis"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/plans"
	"github.com/xp-bench/xp/results"
)

func newPlanPowerCmd(st *state) *cobra.Command {
	var (
		db, effect, treatment string
		pricesPath            string
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
Each answer comes with the wall time and cost of the pilot's campaign run
with that many replicates, as xp plan show estimates them. An answer above
xp plan expand's limit of 1000 replicates is an effect not detectable in
practice with this noise: power says the smallest effect 1000 replicates
detect and what would help. Apply an answer with
xp plan expand SPEC --replicates N (docs/analysis.md).`,
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
			priced, why, err := pricePowerAnswers(ctx, db, pricesPath, ans, orDefault(alpha, 0.05), orDefault(power, 0.8))
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(st.stdout).Encode(priced)
			}
			writePowerText(st.stdout, e, orDefault(power, 0.8), orDefault(alpha, 0.05), priced, why)
			return nil
		},
	}
	c.Flags().StringVar(&db, "db", "", "pilot campaign `FILE`")
	c.Flags().StringVar(&effect, "effect", "", "mean penalty to detect, in percent, e.g. `2%`")
	c.Flags().StringSliceVar(&metrics, "metric", nil, "metric `M` to size for (repeatable; default publish_ms_p99 and e2e_ms_p99)")
	c.Flags().Float64Var(&power, "power", 0.8, "wanted probability of detecting the effect")
	c.Flags().Float64Var(&alpha, "alpha", 0.05, "two-sided significance level")
	c.Flags().StringVar(&treatment, "treatment", "", "size for treatment level `T` only (default every level)")
	c.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	c.Flags().StringVar(&pricesPath, "prices", "", "price table `FILE` for the cost (default: the built-in plans/prices.yaml)")
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

// pricedAnswer is a power answer with the wall time and cost of the
// pilot's campaign run with the answer's replicates (per configuration, and
// pooled), as xp plan show estimates them; the estimates are absent when
// the pilot has no plan to time (imported evidence).
type pricedAnswer struct {
	analysis.PowerAnswer
	WallS       *float64 `json:"wall_s,omitempty"`
	Cost        *float64 `json:"cost,omitempty"`
	PooledWallS *float64 `json:"wall_s_pooled,omitempty"`
	PooledCost  *float64 `json:"cost_pooled,omitempty"`
	Currency    string   `json:"currency,omitempty"`
	// WithinLimit says whether xp plan expand takes the answer's
	// replicates per configuration (at most planner.MaxReplicates).
	WithinLimit bool `json:"within_expand_limit"`
	// DetectableAtLimit is the smallest mean penalty, in percent, that
	// planner.MaxReplicates replicates per configuration detect.
	DetectableAtLimit float64 `json:"detectable_effect_at_limit"`
}

// pricePowerAnswers prices each answer from the pilot's own plan; why says
// why there is no estimate when the plan cannot be timed.
func pricePowerAnswers(ctx context.Context, db, pricesPath string, ans []analysis.PowerAnswer, alpha, power float64) ([]pricedAnswer, string, error) {
	data := plans.Prices
	if pricesPath != "" {
		var err error
		if data, err = os.ReadFile(pricesPath); err != nil {
			return nil, "", usageErr(err)
		}
	}
	prices, err := planner.ParsePrices(data)
	if err != nil {
		return nil, "", usageErrf("%s: %w", pricesPath, err)
	}
	var rows []planner.Row
	why := ""
	s, err := results.OpenReadOnly(ctx, db)
	if err != nil {
		return nil, "", err
	}
	c, err := s.Campaign(ctx)
	s.Close()
	if err != nil {
		return nil, "", err
	}
	if rows, err = planner.ValidatePlan(bytes.NewReader(c.Plan), db); err != nil {
		rows, why = nil, "no wall time or cost: the pilot's plan is not an xp campaign (imported evidence)"
	}
	out := make([]pricedAnswer, len(ans))
	for i, a := range ans {
		p := pricedAnswer{PowerAnswer: a, WithinLimit: a.Replicates <= planner.MaxReplicates,
			DetectableAtLimit: analysis.DetectableEffect(a.SD, planner.MaxReplicates, alpha, power)}
		if rows != nil {
			e := planner.EstimateReplicates(rows, a.Replicates, prices)
			ep := planner.EstimateReplicates(rows, a.PooledReplicates, prices)
			w, cst, pw, pc := e.Wall.Seconds(), e.Cost, ep.Wall.Seconds(), ep.Cost
			p.WallS, p.Cost, p.PooledWallS, p.PooledCost, p.Currency = &w, &cst, &pw, &pc, e.Currency
		}
		out[i] = p
	}
	return out, why, nil
}

// writePowerText prints the answers as a table, then, for each answer xp
// plan expand would refuse, why and what would help.
func writePowerText(w io.Writer, effect, power, alpha float64, ans []pricedAnswer, why string) {
	fmt.Fprintf(w, "effect %g%% (mean penalty), power %g, two-sided alpha %g; wall time and cost: the pilot's campaign run with that many replicates, as xp plan show estimates it\n", effect, power, alpha)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "treatment\tmetric\tpilot sets\tconfigurations\tsd of penalty %%\treplicates per configuration\tmatched sets pooled\tmethod\n")
	cost := func(wall, c *float64, cur string) string {
		if wall == nil {
			return ""
		}
		return fmt.Sprintf(", %s, %s %.2f", roughDuration(*wall), cur, *c)
	}
	for _, a := range ans {
		reps := fmt.Sprintf("%d%s", a.Replicates, cost(a.WallS, a.Cost, a.Currency))
		if !a.WithinLimit {
			reps += fmt.Sprintf(" (over %d)", planner.MaxReplicates)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.3g\t%s\t%d (%d per configuration%s)\t%s\n", a.Treatment, a.Metric, a.PilotSets,
			a.PilotConfigs, a.SD, reps, a.PooledSets, a.PooledReplicates, cost(a.PooledWallS, a.PooledCost, a.Currency), a.Method)
	}
	tw.Flush()
	if why != "" {
		fmt.Fprintln(w, why)
	}
	largest := 0
	for _, a := range ans {
		if a.WithinLimit {
			largest = max(largest, a.Replicates)
			continue
		}
		help := "longer runs (duration_s: a tail percentile steadies with more samples), a steadier metric (a median, e.g. publish_ms_p50), or a larger effect (--effect)"
		if a.PooledReplicates <= planner.MaxReplicates {
			help += fmt.Sprintf("; or the pooled estimate over configurations, which needs %d replicates per configuration", a.PooledReplicates)
		}
		fmt.Fprintf(w, "%s %s: not detectable in practice with this noise: %d replicates per configuration is over xp plan expand's limit of %d; %d replicates detect %.2g%% at best. What would help: %s.\n",
			a.Treatment, a.Metric, a.Replicates, planner.MaxReplicates, planner.MaxReplicates, a.DetectableAtLimit, help)
	}
	if largest > 0 {
		fmt.Fprintf(w, "apply: xp plan expand SPEC.yaml --replicates %d (the largest answer within xp plan expand's limit of %d)\n", largest, planner.MaxReplicates)
	}
}

// roughDuration writes a wall time to the minute, in days and hours when
// long: "14m", "5h 12m", "3d 2h".
func roughDuration(s float64) string {
	d := time.Duration(s * float64(time.Second)).Round(time.Minute)
	switch {
	case d >= 24*time.Hour:
		return fmt.Sprintf("%dd %dh", d/(24*time.Hour), (d%(24*time.Hour))/time.Hour)
	case d >= time.Hour:
		return fmt.Sprintf("%dh %dm", d/time.Hour, (d%time.Hour)/time.Minute)
	case d >= time.Minute:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return time.Duration(s * float64(time.Second)).Round(time.Second).String()
}
