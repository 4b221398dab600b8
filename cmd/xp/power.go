package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
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
			bar := newPowerProgress(st)
			ans, err := analysis.Power(d, analysis.PowerOptions{Effect: e, Power: power, Alpha: alpha,
				Metrics: metrics, Treatment: treatment, Progress: bar.update})
			bar.done()
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

// writePowerText prints the answers as a table, then what the numbers
// say: which metric is noisiest, for each answer xp plan expand would
// refuse what would help most, and the command that applies the answers
// within its limit.
func writePowerText(w io.Writer, effect, power, alpha float64, ans []pricedAnswer, why string) {
	fmt.Fprintf(w, "effect %g%% (mean penalty), power %g, two-sided alpha %g; wall time and cost: the pilot's campaign run with that many replicates, as xp plan show estimates it\n", effect, power, alpha)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "treatment\tmetric\tpilot sets\tconfigurations\tsd of penalty\treplicates per configuration\tmatched sets pooled\tmethod\n")
	cost := func(wall, c *float64, cur string) string {
		if wall == nil {
			return ""
		}
		return fmt.Sprintf(", %s, %s %.2f", roughDuration(*wall), cur, *c)
	}
	for _, a := range ans {
		reps := fmt.Sprintf("%s%s", thousands(a.Replicates), cost(a.WallS, a.Cost, a.Currency))
		if !a.WithinLimit {
			reps += fmt.Sprintf(" (over %s)", thousands(planner.MaxReplicates))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s (%s per configuration%s)\t%s\n", a.Treatment, a.Metric, a.PilotSets,
			a.PilotConfigs, percent(a.SD), reps, thousands(a.PooledSets), thousands(a.PooledReplicates), cost(a.PooledWallS, a.PooledCost, a.Currency), a.Method)
	}
	tw.Flush()
	if why != "" {
		fmt.Fprintln(w, why)
	}
	for _, line := range powerAdvice(effect, ans) {
		fmt.Fprintln(w, line)
	}
}

// powerAdvice is what the answers say, one line each: the noisiest and
// steadiest metric when they differ; for each answer over xp plan
// expand's limit the smallest effect the limit detects and what would
// help, from the numbers; the xp plan expand commands that apply the
// answers within the limit, per configuration and pooled.
func powerAdvice(effect float64, ans []pricedAnswer) []string {
	var out []string
	if len(ans) == 0 {
		return nil
	}
	noisy, steady := ans[0], ans[0]
	for _, a := range ans {
		if a.SD > noisy.SD {
			noisy = a
		}
		if a.SD < steady.SD {
			steady = a
		}
	}
	if noisy.SD > 2*steady.SD {
		why := ""
		if isTail(noisy.Metric) {
			why = ": a tail percentile rests on a run's few slowest samples, so one stall moves it"
		}
		out = append(out, fmt.Sprintf("noisiest: %s %s (sd of penalty %s%s); steadiest: %s %s (sd %s).",
			noisy.Treatment, noisy.Metric, percent(noisy.SD), why, steady.Treatment, steady.Metric, percent(steady.SD)))
	}
	limit := planner.MaxReplicates
	perConfig, pooled := 0, 0
	var perWhat, pooledWhat []string
	for _, a := range ans {
		name := a.Treatment + " " + a.Metric
		if a.WithinLimit {
			perConfig = max(perConfig, a.Replicates)
			perWhat = append(perWhat, name)
		}
		if a.PooledReplicates <= limit {
			pooled = max(pooled, a.PooledReplicates)
			pooledWhat = append(pooledWhat, name)
		}
		if a.WithinLimit {
			continue
		}
		var help []string
		if a.PooledReplicates <= limit && a.PilotConfigs > 1 {
			help = append(help, fmt.Sprintf("size for the penalty pooled over the %d configurations, not each one: %s replicates per configuration",
				a.PilotConfigs, thousands(a.PooledReplicates)))
		}
		pooledNote := ""
		if a.PilotConfigs > 1 && a.PooledReplicates > limit {
			pooledNote = fmt.Sprintf(" Pooled over the %d configurations it still needs %s matched sets in all: more replicates alone will not do.",
				a.PilotConfigs, thousands(a.PooledSets))
		}
		if isTail(a.Metric) {
			help = append(help, "longer runs (duration_s): a tail percentile steadies as a run holds more samples beyond it")
		}
		for _, b := range ans {
			if b.Treatment == a.Treatment && b.Metric != a.Metric && b.WithinLimit && b.SD < a.SD/2 {
				help = append(help, fmt.Sprintf("the steadier %s (sd %s, %s replicates) if it answers your question", b.Metric, percent(b.SD), thousands(b.Replicates)))
				break
			}
		}
		help = append(help, fmt.Sprintf("a larger effect: %s replicates detect %s", thousands(limit), percent(a.DetectableAtLimit)))
		out = append(out, fmt.Sprintf("%s %s: not detectable in practice with this noise: %s replicates per configuration is over xp plan expand's limit of %s (sd of penalty %s against an effect of %s).%s What would help: %s.",
			a.Treatment, a.Metric, thousands(a.Replicates), thousands(limit), percent(a.SD), fmt.Sprintf("%g%%", effect), pooledNote, strings.Join(help, "; ")))
	}
	if perConfig > 0 {
		out = append(out, fmt.Sprintf("apply: xp plan expand SPEC.yaml --replicates %d (detects the effect in each configuration for %s)", perConfig, strings.Join(perWhat, ", ")))
	}
	if pooled > 0 && pooled != perConfig && len(pooledWhat) > len(perWhat) {
		out = append(out, fmt.Sprintf("apply: xp plan expand SPEC.yaml --replicates %d (detects the penalty pooled over configurations for %s)", pooled, strings.Join(pooledWhat, ", ")))
	}
	return out
}

// isTail reports whether a metric is a tail latency percentile (p95 and
// above).
func isTail(metric string) bool {
	for _, p := range []string{"_p95", "_p99", "_p999", "_p9999"} {
		if strings.HasSuffix(metric, p) {
			return true
		}
	}
	return false
}

// percent writes a percentage as people do: "770%", "38%", "4.5%",
// "0.62%"; never an exponent.
func percent(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1000:
		return thousands(int(math.Round(v))) + "%"
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 0, 64) + "%"
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 1, 64) + "%"
	case a == 0:
		return "0%"
	}
	return strconv.FormatFloat(v, 'f', max(2, 1-int(math.Floor(math.Log10(a)))), 64) + "%"
}

// thousands writes n with commas between thousands: 171,667.
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// powerProgress draws xp plan power's progress on stderr once it has
// taken more than a second: a bar redrawn in place on a terminal, a line
// per answer otherwise.
type powerProgress struct {
	st    *state
	start time.Time
	drawn bool
}

func newPowerProgress(st *state) *powerProgress { return &powerProgress{st: st, start: st.now()} }

func (p *powerProgress) update(done, total int) {
	if p.st.now().Sub(p.start) < time.Second && !p.drawn {
		return
	}
	p.drawn = true
	if !p.st.isTerminal {
		fmt.Fprintf(p.st.stderr, "xp plan power: %d of %d answers\n", done, total)
		return
	}
	const width = 30
	fill := width * done / max(total, 1)
	fmt.Fprintf(p.st.stderr, "\rxp plan power [%s%s] %d/%d answers", strings.Repeat("#", fill), strings.Repeat(".", width-fill), done, total)
}

// done ends the bar's line.
func (p *powerProgress) done() {
	if p.drawn && p.st.isTerminal {
		fmt.Fprintln(p.st.stderr)
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
