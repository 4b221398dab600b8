package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/results"
)

// TestSteinTwoStageSynthetic checks the two-stage design on synthetic
// campaigns of known spread, through DecideStage as the runner calls it:
// quiet configurations (penalty sd 0.5 points) stop at the first stage,
// noisy ones (sd 6) get more matched sets, and over 4,000 configurations
// of normal penalty with spreads from 0.5 to 8 points Stein's interval
// (mean of every set ± t(n0-1)·s1/√N) is never wider than asked and holds
// the true mean at least at the level (Monte Carlo standard error of a
// 0.95 coverage: 0.0035).
func TestSteinTwoStageSynthetic(t *testing.T) {
	const (
		first = 4
		h     = 2.0
		conf  = 0.95
	)
	ts := results.TwoStage{HalfWidth: h, Metric: "publish_ms_p99", Confidence: conf, MaxReplicates: 1000, FirstStage: first}
	r := rand.New(rand.NewPCG(27, 4))
	// rowsOf builds the first stage's rows and attempts for pairs with the
	// given penalty sds (mean penalty 5 points, baseline 10 ms).
	rowsOf := func(sds []float64) ([]results.Row, []results.Attempt, map[string][]float64) {
		var rows []results.Row
		var atts []results.Attempt
		pens := map[string][]float64{}
		for i, sd := range sds {
			pair := fmt.Sprintf("p%04d", i)
			for rep := 1; rep <= first; rep++ {
				b := 10 * math.Exp(0.05*r.NormFloat64())
				pen := 5 + sd*r.NormFloat64()
				pens[pair] = append(pens[pair], pen)
				for _, lv := range []string{"plaintext", "tls"} {
					pr := planner.Row{Security: lv, Treatment: "security", Baseline: "plaintext", Pair: pair}
					plan, _ := json.Marshal(pr)
					run := fmt.Sprintf("%s-%s-r%d", pair, lv, rep)
					rows = append(rows, results.Row{Run: run, Pair: pair, Replicate: rep, Plan: plan, State: results.Done})
					v := b
					if lv == "tls" {
						v = b * (1 + pen/100)
					}
					atts = append(atts, results.Attempt{Run: run, Number: 1, Outcome: results.OutcomeDone, Metrics: map[string]float64{"publish_ms_p99": v}})
				}
			}
		}
		return rows, atts, pens
	}

	rows, atts, _ := rowsOf([]float64{0.5, 6})
	dec, total, err := DecideStage(ts, rows, atts)
	if err != nil {
		t.Fatal(err)
	}
	if total["p0000"] != first || dec[0].Needed > first || total["p0001"] <= first || dec[1].Treatment != "tls" || dec[1].Sets != first {
		t.Fatalf("quiet and noisy: decisions %+v, totals %v", dec, total)
	}

	var sds []float64
	for range 4000 {
		sds = append(sds, 0.5+7.5*r.Float64())
	}
	rows, atts, pens := rowsOf(sds)
	dec, total, err = DecideStage(ts, rows, atts)
	if err != nil {
		t.Fatal(err)
	}
	tq := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: first - 1}.Quantile(1 - (1-conf)/2)
	hit := 0
	for i, d := range dec {
		p := pens[d.Pair]
		for len(p) < total[d.Pair] {
			p = append(p, 5+sds[i]*r.NormFloat64())
		}
		var mean float64
		for _, x := range p {
			mean += x
		}
		mean /= float64(len(p))
		half := tq * d.SD / math.Sqrt(float64(len(p)))
		if half > h+1e-9 {
			t.Fatalf("%s: half-width %v with %d sets, asked %v", d.Pair, half, len(p), h)
		}
		if math.Abs(mean-5) <= half {
			hit++
		}
	}
	cov := float64(hit) / float64(len(dec))
	t.Logf("Stein coverage %d/%d = %.3f", hit, len(dec), cov)
	if cov < conf-3*0.0035 {
		t.Errorf("Stein's intervals held the truth in %.3f, want at least %.3f", cov, conf)
	}
}

// TestTwoStageRun runs a two-stage campaign on the embedded cluster: a
// first stage of 2 replicates, a half-width no real run reaches, at most
// 3 replicates. When the first stage is done the decision is recorded and
// a third matched set appended; the infrastructure stays up for it; an
// interrupt during the second stage resumes (without the flags) to finish
// it, and xp status reports the stage. Asking another design of the same
// db is refused.
func TestTwoStageRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plan := writePlan(t, dir, "two", smallSpec("two", []string{"plaintext", "tls"}, 2))
	db := DefaultDB(plan)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Interrupt once a second-stage row measures.
	go func() {
		deadline := time.Now().Add(3 * time.Minute)
		for time.Now().Before(deadline) {
			if st, err := ReadStatus(context.Background(), db, time.Now()); err == nil &&
				st.Current != nil && st.Current.Phase == "measure" && strings.HasSuffix(st.Current.Run, "-r3") {
				cancel()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	var stderr syncBuffer
	ts := &TwoStage{HalfWidth: 0.0001, MaxReplicates: 3}
	_, err := Run(ctx, Options{Platforms: localPlatforms, Plan: plan, Stderr: &stderr, TwoStage: ts, WarmupCap: noWarmup})
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("run: %v, want ErrInterrupted in the second stage\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "first stage done: 1 of 1 configurations need more matched sets") {
		t.Errorf("no word of the second stage:\n%s", stderr.String())
	}
	st, err := ReadStatus(context.Background(), db, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if st.Stage == nil || st.Stage.Stage != 2 || st.Stage.Extended != 1 || st.Stage.SecondStageSets != 1 || st.Stage.RemainingSets != 1 || st.Finished {
		t.Fatalf("status after the interrupt: %+v finished %v", st.Stage, st.Finished)
	}
	var text strings.Builder
	st.WriteText(&text)
	if !strings.Contains(text.String(), "stage      2 of 2 (half-width 0.0001% on publish_ms_p99): 1 of 1 configurations got more matched sets; 1 second-stage sets, 1 remaining") {
		t.Errorf("status text:\n%s", text.String())
	}
	s, err := results.OpenReadOnly(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.ReadTwoStage(context.Background())
	events, _ := s.InfraEvents(context.Background())
	s.Close()
	if err != nil || !ok || got.FirstStage != 2 || len(got.Decisions) != 1 || got.Decisions[0].Replicates != 3 || got.Decisions[0].Treatment != "tls" {
		t.Fatalf("decision %+v, %v, %v", got, ok, err)
	}
	ups := 0
	for _, e := range events {
		if e.Event == "up" {
			ups++
		}
	}
	if ups != 1 {
		t.Errorf("the infrastructure came up %d times, want once for both stages: %+v", ups, events)
	}

	other := &TwoStage{HalfWidth: 5, MaxReplicates: 3}
	if _, err := Run(context.Background(), Options{Platforms: localPlatforms, Plan: plan, Resume: true, TwoStage: other}); !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "two-stage design differs") {
		t.Fatalf("another design: %v", err)
	}
	if _, err := Run(context.Background(), Options{Platforms: localPlatforms, Plan: plan, Resume: true, WarmupCap: noWarmup}); err != nil {
		t.Fatalf("resume: %v", err)
	}
	dbs := readDB(t, db)
	if len(dbs.states) != 6 || len(dbs.runsIn(results.Done)) != 6 {
		t.Fatalf("after resume: %v", dbs.states)
	}
	st, err = ReadStatus(context.Background(), db, time.Now())
	if err != nil || !st.Finished || st.Stage.RemainingSets != 0 {
		t.Fatalf("final status %+v %v", st.Stage, err)
	}
}
