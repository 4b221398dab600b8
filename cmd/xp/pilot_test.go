package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/xp-bench/xp/analysis"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/plans"
	"github.com/xp-bench/xp/results"
)

// tlsCostSpec is the README's campaign: plaintext, tls and mtls at two
// record sizes, 3 replicates.
const tlsCostSpec = `campaign: tls-cost
replicates: 3
factors:
  security: [plaintext, tls, mtls]
  message_size: [1024, 10240]
fixed:
  brokers: 1
  acks: all
  target_rate: 5000
`

// nativeCampaign expands spec into a real plan, registers it in a new
// campaign db (as xp run does) and records one finished attempt for each
// row metrics returns values for; a row it returns nil for stays pending.
// It returns the db's path and the spec's.
func nativeCampaign(t testing.TB, spec string, metrics func(r planner.Row) map[string]float64) (db, specPath string) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	specPath = filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(specPath, []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := planner.ReadSpec(specPath)
	if err != nil {
		t.Fatal(err)
	}
	var plan bytes.Buffer
	if _, err := planner.Expand(s, &plan); err != nil {
		t.Fatal(err)
	}
	rows, err := planner.ValidatePlan(bytes.NewReader(plan.Bytes()), "plan.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(plan.String()), "\n")
	var srows []results.Row
	for i, r := range rows {
		srows = append(srows, results.Row{Run: r.Run, Order: r.Order, Cell: r.Cell, Pair: r.Pair, Replicate: r.Replicate,
			Block: r.Block, Plan: json.RawMessage(lines[i])})
	}
	db = filepath.Join(dir, "c.db")
	st, err := results.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Register(ctx, results.Campaign{Name: rows[0].Campaign, Spec: spec, Plan: plan.Bytes(), Target: "local", Seed: rows[0].Seed}, srows); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().Add(-time.Hour)
	var atts []results.NewAttempt
	for i, r := range rows {
		m := metrics(r)
		if m == nil {
			continue
		}
		start := t0.Add(time.Duration(i) * 10 * time.Second)
		atts = append(atts, results.NewAttempt{Run: r.Run, Started: start,
			Evidence: results.Evidence{Outcome: results.OutcomeDone, Metrics: m, Ended: start.Add(8 * time.Second)}})
	}
	if _, err := st.RecordAttempts(ctx, atts); err != nil {
		t.Fatal(err)
	}
	return db, specPath
}

// noisyPilot is a tls-cost pilot whose publish p99 penalty spreads with sd
// about 30 percentage points, and whose p50 penalty with about 1.
func noisyPilot(t *testing.T) (db, spec string) {
	rng := rand.New(rand.NewPCG(11, 12))
	return nativeCampaign(t, tlsCostSpec, func(r planner.Row) map[string]float64 {
		pen := map[string]float64{"plaintext": 0, "tls": 0.1, "mtls": 0.15}[r.Security]
		return map[string]float64{
			"publish_ms_p99": 2 * (1 + pen + 0.3*rng.NormFloat64()*boolF(pen != 0)),
			"publish_ms_p50": 1 * (1 + pen + 0.01*rng.NormFloat64()*boolF(pen != 0)),
		}
	})
}

func boolF(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// TestPlanPowerWallTimeAndLimit: each answer of xp plan power comes with
// the wall time and cost of the pilot's campaign run with that many
// replicates, the same estimate xp plan show makes of the spec expanded
// with them; an answer over xp plan expand's limit says it is not
// detectable in practice and what would help, and xp plan expand's refusal
// of such a number says the same.
func TestPlanPowerWallTimeAndLimit(t *testing.T) {
	db, spec := noisyPilot(t)
	code, stdout, stderr := runXP(t, "plan", "power", "--db", db, "--effect", "2%", "--treatment", "tls",
		"--metric", "publish_ms_p99", "--metric", "publish_ms_p50", "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var ans []pricedAnswer
	if err := json.Unmarshal([]byte(stdout), &ans); err != nil || len(ans) != 2 {
		t.Fatalf("%v: %s", err, stdout)
	}
	prices, err := planner.ParsePrices(plans.Prices)
	if err != nil {
		t.Fatal(err)
	}
	byMetric := map[string]pricedAnswer{}
	for _, a := range ans {
		byMetric[a.Metric] = a
		if a.WallS == nil || a.Cost == nil || a.PooledWallS == nil {
			t.Fatalf("%s: no wall time or cost: %s", a.Metric, stdout)
		}
		if a.WithinLimit != (a.Replicates <= planner.MaxReplicates) {
			t.Errorf("%s: %d replicates, within the limit %v", a.Metric, a.Replicates, a.WithinLimit)
		}
		if a.Replicates > planner.MaxReplicates {
			continue
		}
		// The estimate xp plan show makes of the spec with that many
		// replicates.
		s, err := planner.ReadSpec(spec)
		if err != nil {
			t.Fatal(err)
		}
		s.Replicates = a.Replicates
		o, err := planner.DescribeSpec(s, prices)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(*a.WallS-o.Estimate.WallS) > 1e-6 || math.Abs(*a.Cost-o.Estimate.Cost) > 1e-9 {
			t.Errorf("%s: %d replicates: wall %v s cost %v, xp plan show says %v s, %v", a.Metric, a.Replicates, *a.WallS, *a.Cost, o.Estimate.WallS, o.Estimate.Cost)
		}
	}
	p99, p50 := byMetric["publish_ms_p99"], byMetric["publish_ms_p50"]
	if p99.WithinLimit || !p50.WithinLimit {
		t.Fatalf("pilot: p99 %d replicates, p50 %d: want the first over %d, the second within", p99.Replicates, p50.Replicates, planner.MaxReplicates)
	}
	if want := analysis.DetectableEffect(p99.SD, planner.MaxReplicates, 0.05, 0.8); math.Abs(p99.DetectableAtLimit-want) > 1e-9 || want <= 2 {
		t.Errorf("detectable at the limit %v, want %v (> 2)", p99.DetectableAtLimit, want)
	}

	// The text: wall time beside every answer; the one over the limit
	// said to be not detectable in practice, with what would help; the
	// command that applies the largest answer within it.
	code, text, _ := runXP(t, "plan", "power", "--db", db, "--effect", "2%", "--treatment", "tls", "--metric", "publish_ms_p99", "--metric", "publish_ms_p50")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, w := range []string{
		fmt.Sprintf("%s, %s, USD 0.00 (over 1,000)", thousands(p99.Replicates), roughDuration(*p99.WallS)),
		fmt.Sprintf("%d, %s, USD 0.00", p50.Replicates, roughDuration(*p50.WallS)),
		"tls publish_ms_p99: not detectable in practice with this noise",
		"longer runs", "the steadier publish_ms_p50", "a larger effect",
		fmt.Sprintf("apply: xp plan expand SPEC.yaml --replicates %d", p50.Replicates),
	} {
		if !strings.Contains(text, w) {
			t.Errorf("text output lacks %q:\n%s", w, text)
		}
	}
	if regexp.MustCompile(`(?m)^tls\s+publish_ms_p50.*not detectable`).MatchString(text) {
		t.Errorf("p50 said not detectable:\n%s", text)
	}
	// xp plan expand refuses the p99 answer, and says why in the same
	// words, not pointing back to xp plan power as if it could help.
	code, _, stderr = runXP(t, "plan", "expand", spec, "--replicates", fmt.Sprint(p99.Replicates))
	if code != exitUsage || !strings.Contains(stderr, "not detectable in practice") || !strings.Contains(stderr, "run longer") {
		t.Errorf("expand --replicates %d: exit %d: %s", p99.Replicates, code, stderr)
	}
}

// TestAnalyseRunningCampaign: xp analyse on a campaign whose xp run is
// still working says so and how many matched sets have finished, and
// analyses those (the unfinished are not counted as excluded); before the
// first set finishes it says there is nothing to analyse yet, not "no
// healthy matched set".
func TestAnalyseRunningCampaign(t *testing.T) {
	for _, c := range []struct {
		name   string
		done   int // rows done, in execution order
		code   int
		stderr []string
	}{
		{"two sets finished", 7, exitOK, []string{"is still running (xp pid", "partial analysis of the 2 matched sets finished of 6", "the 4 unfinished are left out"}},
		{"none finished", 2, exitFailure, []string{"is still running (xp pid", "no matched set has finished yet (6 to go)", "partial analysis once one has"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			db, _ := nativeCampaign(t, tlsCostSpec, func(r planner.Row) map[string]float64 {
				if r.Order > c.done {
					return nil
				}
				return map[string]float64{"publish_ms_p50": 1 + 0.1*rng.Float64(), "publish_ms_p99": 2 + 0.2*rng.Float64(), "published": 5000, "consumed": 5000}
			})
			// The campaign's xp run: a live process holding the lock.
			if err := os.WriteFile(db+".lock", []byte(fmt.Sprint(os.Getpid())), 0o600); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "out")
			code, _, stderr := runXP(t, "analyse", "--db", db, "--out", out, "--resamples", "200")
			if code != c.code {
				t.Fatalf("exit %d, want %d: %s", code, c.code, stderr)
			}
			for _, w := range c.stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q: %s", w, stderr)
				}
			}
			if strings.Contains(stderr, "no healthy matched set") {
				t.Errorf("a running campaign reported as having no healthy matched set: %s", stderr)
			}
			if c.code != exitOK {
				return
			}
			ex, err := os.ReadFile(filepath.Join(out, "excluded.csv"))
			if err != nil || strings.Count(string(ex), "\n") != 1 {
				t.Errorf("excluded.csv lists unfinished sets: %s", ex)
			}
			report, _ := os.ReadFile(filepath.Join(out, "report.html"))
			if !strings.Contains(string(report), "Partial analysis: 4 of 6 matched sets have a run not finished yet") {
				t.Error("the report does not say the analysis is partial")
			}
		})
	}
}
