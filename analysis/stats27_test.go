package analysis

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xp-bench/xp/results"
)

// TestSpearmanMatchesScipy checks the split-half check's rank correlation
// and its one-sided p against scipy.stats.spearmanr.
func TestSpearmanMatchesScipy(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 2))
	var x, y []float64
	for range 40 {
		a := r.NormFloat64()
		x = append(x, math.Round((a+r.NormFloat64())*4)/4)
		y = append(y, a+r.NormFloat64())
	}
	var out struct{ Rho, P float64 }
	runPython(t, scipyStats+`
d = json.load(sys.stdin)
res = stats.spearmanr(d["x"], d["y"], alternative="greater")
print(json.dumps({"rho": float(res.statistic), "p": float(res.pvalue)}))
`, map[string]any{"x": x, "y": y}, &out)
	rho, p := SpearmanGreater(x, y)
	if !closeRel(rho, out.Rho, 1e-12) || !closeRel(p, out.P, 1e-9) {
		t.Errorf("rho %v p %v; scipy rho %v p %v", rho, p, out.Rho, out.P)
	}
}

// TestPooledTestReachesSignificance: a campaign of 2 configurations x 6
// replicates with a consistent +20% effect gets a pooled headline p-value
// below 0.05 from the log-ratio t-test (every matched set, configurations
// as strata), so do 2 x 3 and 2 x 2; every pooled row's p-value is its
// interval's test; and a per-configuration median of 3 sets, whose sign
// test cannot reach significance, says the smallest p-value it could give.
func TestPooledTestReachesSignificance(t *testing.T) {
	for _, replicates := range []int{6, 3, 2} {
		t.Run(fmt.Sprintf("2x%d", replicates), func(t *testing.T) {
			d := Synthetic(SyntheticConfig{Seed: 3, Levels: []string{"plaintext", "tls"},
				Factors: []SyntheticFactor{{"message_size", []string{"1024", "10240"}}}, Replicates: replicates,
				Penalty: map[string]float64{"tls": 20}})
			res, err := Analyse(d, Options{Resamples: 500})
			if err != nil {
				t.Fatal(err)
			}
			checkAgreement(t, res)
			found := false
			for _, e := range res.Effects {
				if e.Metric != "publish_ms_p99" {
					continue
				}
				if e.Scope == ScopeAll && e.Statistic == StatHeadline {
					found = true
					if e.Test != TestLogRatioT || e.Method != string(MethodLogRatioTStrata) || !(e.P < 0.05) || e.PMin != 0 {
						t.Errorf("pooled headline: test %s method %s p %v smallest %v, want %s %s p < 0.05", e.Test, e.Method, e.P, e.PMin, TestLogRatioT, MethodLogRatioTStrata)
					}
				}
				if replicates == 3 && e.Scope != ScopeAll && e.Statistic == "median_penalty" {
					want := math.Ldexp(2, -replicates)
					if e.Test != TestSign || e.PMin != math.Min(1, want) || !strings.Contains(e.Note, "cannot reach significance") {
						t.Errorf("%s median: test %s smallest p %v note %q, want %s %v and a note", e.Scope, e.Test, e.PMin, e.Note, TestSign, want)
					}
				}
			}
			if !found {
				t.Fatal("no pooled headline")
			}
		})
	}
}

// TestRatioPenaltySignAgreesWithDifference: on a skewed metric where the
// mean of per-set penalties is positive and the difference of means
// negative, the headline ratio penalty has the difference's sign.
func TestRatioPenaltySignAgreesWithDifference(t *testing.T) {
	d := &Dataset{Campaign: "skew", Seed: 1, Treatment: "security", Baseline: "plaintext",
		Factors: []string{"security"}, Metrics: []MetricDef{{Name: "encrypt_ms_p99", Unit: "ms"}}}
	// Small sets get slower by 10%, one large set gets much faster.
	base := []float64{2, 2, 2, 2, 200}
	treat := []float64{2.2, 2.2, 2.2, 2.2, 150}
	for i := range base {
		for lv, v := range map[string]float64{"plaintext": base[i], "tls": treat[i]} {
			d.Runs = append(d.Runs, Run{Run: fmt.Sprintf("%s-r%d", lv, i+1), Cell: lv, Pair: "p", Replicate: i + 1,
				Attempt: 1, Final: true, Factors: []string{lv}, Outcome: OutcomeDone, Metrics: map[string]float64{"encrypt_ms_p99": v}})
		}
	}
	res, err := Analyse(d, Options{Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Effect{}
	for _, e := range res.Effects {
		if e.Scope == ScopeAll {
			got[e.Statistic] = e
		}
	}
	mp, md, rp := got["mean_penalty"], got["mean_difference"], got[StatRatioPenalty]
	if !(mp.Estimate > 0 && md.Estimate < 0) {
		t.Fatalf("the example must disagree: mean penalty %v, mean difference %v", mp.Estimate, md.Estimate)
	}
	want := (got["ratio_of_means"].Estimate - 1) * 100
	if !(rp.Estimate < 0) || math.Abs(rp.Estimate-want) > 1e-12 || !(rp.Low <= rp.Estimate && rp.Estimate <= rp.High) {
		t.Errorf("ratio penalty %v [%v, %v], want %v with the difference's sign", rp.Estimate, rp.Low, rp.High, want)
	}
}

// TestOutlierFlagged plants one plaintext run with publish p99 443 ms
// among siblings near 6 ms (2 configurations x 3 replicates): it is
// flagged, listed, the pooled estimates count its set, and they are given
// again without it; no other run is flagged.
func TestOutlierFlagged(t *testing.T) {
	d := Synthetic(SyntheticConfig{Seed: 5, Levels: []string{"plaintext", "tls"},
		Factors: []SyntheticFactor{{"message_size", []string{"1024", "10240"}}}, Replicates: 3,
		Penalty: map[string]float64{"tls": 10}})
	var planted string
	for i := range d.Runs {
		r := &d.Runs[i]
		if r.Factors[0] == "plaintext" && r.Pair == "p00000" && r.Replicate == 2 {
			r.Metrics["publish_ms_p99"] = 443
			planted = r.Run
		}
	}
	res, err := Analyse(d, Options{Resamples: 500})
	if err != nil {
		t.Fatal(err)
	}
	var flagged []string
	for _, o := range res.Outliers {
		flagged = append(flagged, o.Run+" "+o.Metric)
	}
	if !slices.Equal(flagged, []string{planted + " publish_ms_p99"}) {
		t.Fatalf("flagged %v, want only %s publish_ms_p99", flagged, planted)
	}
	var with, without Effect
	for _, e := range res.Effects {
		if e.Metric == "publish_ms_p99" && e.Statistic == StatRatioPenalty {
			switch e.Scope {
			case ScopeAll:
				with = e
			case ScopeAll + ScopeSuffixWithoutOutliers:
				without = e
			}
		}
	}
	if with.OutlierSets != 1 || with.N != 6 || without.N != 5 || without.OutlierSets != 0 {
		t.Fatalf("with every run: n %d, %d outlier sets; without: n %d, %d", with.N, with.OutlierSets, without.N, without.OutlierSets)
	}
	// The generated penalty is 10% times a message-size effect of 1.3
	// and 2.0: 13 to 20%.
	if !(with.Estimate < 0 && without.Estimate > 10 && without.Estimate < 25) {
		t.Errorf("ratio penalty %v with the outlier, %v without; want negative, and 13 to 20", with.Estimate, without.Estimate)
	}
}

// TestOutlierRuleRarelyFlagsNormalNoise: on campaigns without outliers
// (lognormal run noise, 3 to 10 replicates) fewer than 1 run in 100 is
// flagged.
func TestOutlierRuleRarelyFlagsNormalNoise(t *testing.T) {
	for _, reps := range []int{3, 5, 10} {
		d := Synthetic(SyntheticConfig{Seed: uint64(reps), Levels: []string{"plaintext", "tls"},
			Factors: []SyntheticFactor{{"message_size", []string{"1024", "10240", "102400"}}, {"acks", []string{"1", "all"}},
				{"producers", []string{"1", "6", "12"}}}, Replicates: reps, Penalty: map[string]float64{"tls": 10}})
		res, err := Analyse(d, Options{Resamples: 200})
		if err != nil {
			t.Fatal(err)
		}
		checked := len(d.Runs) * len(d.Metrics)
		rate := float64(len(res.Outliers)) / float64(checked)
		t.Logf("%d replicates: %d of %d run metrics flagged", reps, len(res.Outliers), checked)
		if rate >= 0.01 {
			t.Errorf("%d replicates: %.3f of run metrics flagged, want under 0.01", reps, rate)
		}
	}
}

// TestSpreadCompatibility: with 40 configurations of 6 sets whose noise
// has one shape, the per-configuration intervals use the pooled spread
// where it is wider, and say so; when half the configurations are 3
// times noisier, the split-half check finds it and each configuration
// keeps its own t interval.
func TestSpreadCompatibility(t *testing.T) {
	for _, hetero := range []bool{false, true} {
		var csv strings.Builder
		csv.WriteString("security,config,lat_ms\n")
		r := rand.New(rand.NewPCG(27, 3))
		for c := range 40 {
			sd := 3.0
			if hetero && c%2 == 0 {
				sd = 9
			}
			for range 6 {
				b := 10 * math.Exp(0.05*r.NormFloat64())
				fmt.Fprintf(&csv, "plaintext,c%02d,%.17g\ntls,c%02d,%.17g\n", c, b, c, b*(1+(5+sd*r.NormFloat64())/100))
			}
		}
		d := coverageImport(t, t.TempDir()+"/c.csv", csv.String())
		res, err := Analyse(d, Options{Resamples: 200})
		if err != nil {
			t.Fatal(err)
		}
		methods := map[string]int{}
		for _, e := range res.Effects {
			if e.Statistic != "mean_penalty" || strings.HasPrefix(e.Scope, ScopeAll) {
				continue
			}
			methods[e.Method]++
			if hetero != strings.Contains(e.Note, "not compatible") || e.Unbounded != hetero {
				t.Errorf("heterogeneous %v: %s note %q unbounded %v", hetero, e.Method, e.Note, e.Unbounded)
			}
		}
		t.Logf("heterogeneous %v: %v", hetero, methods)
		if hetero != (methods[string(MethodStudentTPooled)] == 0) {
			t.Errorf("heterogeneous %v: methods %v", hetero, methods)
		}
	}
}

// TestTwoStageAchieved: a campaign whose db records a two-stage design
// (first stage 3 replicates, decided) loads with it, and the analysis
// reports per configuration and treatment the first stage's spread,
// Stein's needed sets and half-width t(n1-1)·s1/√N over every healthy
// set, and half the width of the configuration's mean-penalty interval.
func TestTwoStageAchieved(t *testing.T) {
	d := Synthetic(SyntheticConfig{Seed: 8, Levels: []string{"plaintext", "tls"},
		Factors: []SyntheticFactor{{"message_size", []string{"1024", "10240"}}}, Replicates: 6,
		Penalty: map[string]float64{"tls": 10}})
	path := filepath.Join(t.TempDir(), "two.db")
	ctx := context.Background()
	if err := Save(ctx, path, d, SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	s, err := results.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetTwoStage(ctx, results.TwoStage{HalfWidth: 1.5, Metric: "publish_ms_p99", Confidence: 0.95, MaxReplicates: 6, FirstStage: 3}); err != nil {
		t.Fatal(err)
	}
	dec := []results.StageDecision{{Pair: "p00000", Treatment: "tls", Sets: 3, SD: 1, Needed: 6, Replicates: 6},
		{Pair: "p00001", Treatment: "tls", Sets: 3, SD: 1, Needed: 6, Replicates: 6}}
	if err := s.AppendStage(ctx, time.Now(), dec, nil); err != nil {
		t.Fatal(err)
	}
	s.Close()
	ld, err := Load(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if ld.Stage == nil || !ld.Stage.Decided || ld.Stage.Replicates["p00001"] != 6 {
		t.Fatalf("stage %+v", ld.Stage)
	}
	res, err := Analyse(ld, Options{Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Stages) != 2 {
		t.Fatalf("stages %+v", res.Stages)
	}
	for _, st := range res.Stages {
		var first []float64
		for _, e := range res.Effects {
			if e.Scope == st.Pair && e.Metric == "publish_ms_p99" && e.Statistic == "mean_penalty" && !closeRel((e.High-e.Low)/2, st.Interval, 1e-12) {
				t.Errorf("%s: interval half-width %v, effects say %v", st.Pair, st.Interval, (e.High-e.Low)/2)
			}
		}
		for _, r := range ld.Runs {
			if r.Pair != st.Pair || r.Factors[0] != "tls" || r.Replicate > 3 {
				continue
			}
			for _, b := range ld.Runs {
				if b.Pair == r.Pair && b.Replicate == r.Replicate && b.Factors[0] == "plaintext" {
					first = append(first, penalty(r.Metrics["publish_ms_p99"], b.Metrics["publish_ms_p99"], false))
				}
			}
		}
		_, v := meanVar(first)
		tq := tQuantile(2, 0.95)
		want := tq * math.Sqrt(v) / math.Sqrt(6)
		if st.FirstSets != 3 || st.Sets != 6 || st.Replicates != 6 || !closeRel(st.FirstSD, math.Sqrt(v), 1e-12) || !closeRel(st.Stein, want, 1e-12) ||
			st.Needed != max(3, int(math.Ceil(math.Pow(tq*math.Sqrt(v)/1.5, 2)-1e-9))) {
			t.Errorf("%+v; want first sd %v, Stein half-width %v", st, math.Sqrt(v), want)
		}
	}
}
