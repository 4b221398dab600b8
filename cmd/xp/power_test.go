package main

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xp-bench/xp/analysis"
	"github.com/xp-bench/xp/internal/golden"
	"github.com/xp-bench/xp/planner"
)

func TestPlanPower(t *testing.T) {
	d := analysis.Synthetic(analysis.SyntheticConfig{Seed: 3, Levels: []string{"plaintext", "tls", "mtls"},
		Factors:    []analysis.SyntheticFactor{{Name: "message_size", Levels: []string{"1024", "10240"}}},
		Replicates: 20, Penalty: map[string]float64{"tls": 10, "mtls": 15}})
	db := filepath.Join(t.TempDir(), "pilot.db")
	if err := analysis.Save(context.Background(), db, d, analysis.SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runXP(t, "plan", "power", "--db", db, "--effect", "2%", "--treatment", "tls", "--metric", "publish_ms_p99", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var ans []analysis.PowerAnswer
	if err := json.Unmarshal([]byte(stdout), &ans); err != nil || len(ans) != 1 {
		t.Fatalf("%v: %s", err, stdout)
	}
	a := ans[0]
	want := max(analysis.NormalSampleSize(a.SD, 2, 0.05, 0.8), 3)
	if a.Treatment != "tls" || a.Metric != "publish_ms_p99" || a.PilotSets != 40 || a.Method != analysis.PowerNormal || a.Replicates != want {
		t.Errorf("%+v, want %d replicates by the normal approximation", a, want)
	}
	// The text form names the method; the answer applies to a spec.
	_, text, _ := runXP(t, "plan", "power", "--db", db, "--effect", "2")
	if !strings.Contains(text, "normal-approximation") || strings.Count(text, "\n") != 8 || !strings.Contains(text, "no wall time or cost: the pilot's plan is not an xp campaign") {
		t.Errorf("text output:\n%s", text)
	}
	spec := filepath.Join(t.TempDir(), "s.yaml")
	os.WriteFile(spec, []byte("campaign: s\nfactors:\n  security: [plaintext, tls]\nfixed:\n  brokers: 1\n  message_size: 1024\n  acks: \"1\"\n  target_rate: 1000\n"), 0o600)
	code, _, stderr = runXP(t, "plan", "expand", spec, "--replicates", "7", "-o", filepath.Join(t.TempDir(), "s.jsonl"))
	if code != 0 || !strings.Contains(stderr, "14 rows") {
		t.Errorf("expand --replicates 7: exit %d: %s", code, stderr)
	}

	bad := []struct {
		name string
		args []string
		want string
	}{
		{"no db", []string{"--effect", "2%"}, "--db PILOT.db is required"},
		{"no effect", []string{"--db", db}, "--effect is required"},
		{"bad effect", []string{"--db", db, "--effect", "two"}, `--effect "two"`},
		{"unknown metric", []string{"--db", db, "--effect", "2%", "--metric", "nope"}, "--metric nope is not a metric"},
		{"unknown treatment", []string{"--db", db, "--effect", "2%", "--treatment", "sasl"}, "--treatment sasl is not a level"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runXP(t, append([]string{"plan", "power"}, c.args...)...)
			if code != exitUsage || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q, want 2 and %q", code, stderr, c.want)
			}
		})
	}
	if code, _, stderr := runXP(t, "plan", "expand", spec, "--replicates", "0"); code != exitUsage || !strings.Contains(stderr, "--replicates 0: want 1..1000") {
		t.Errorf("--replicates 0: exit %d: %s", code, stderr)
	}
}

// wildPilot is the README's tls-cost campaign as a loaded 2-core machine
// runs it: tail latencies whose penalty spreads by hundreds of percentage
// points between replicates (a stall in one run of a set), a median that
// spreads by a few.
func wildPilot(t testing.TB) (db, spec string) {
	rng := rand.New(rand.NewPCG(21, 22))
	stall := func() float64 {
		if rng.IntN(4) == 0 {
			return 6 * rng.Float64()
		}
		return 0
	}
	return nativeCampaign(t, tlsCostSpec, func(r planner.Row) map[string]float64 {
		pen := map[string]float64{"plaintext": 0, "tls": 0.1, "mtls": 0.15}[r.Security]
		return map[string]float64{
			"publish_ms_p99": 3 * (1 + pen + stall()),
			"e2e_ms_p99":     4 * (1 + pen + 0.5*stall()),
			"publish_ms_p50": 1 * (1 + pen + 0.03*rng.NormFloat64()),
		}
	})
}

// TestPlanPowerGolden: xp plan power's text on the README's campaign, as
// a reader sees it: percentages without exponents, thousands with commas,
// advice that follows from the answers (the noisiest metric and why; what
// helps each answer over the limit, the pooled size first where it fits)
// and the xp plan expand lines for the answers within the limit.
func TestPlanPowerGolden(t *testing.T) {
	db, _ := wildPilot(t)
	code, text, stderr := runXP(t, "plan", "power", "--db", db, "--effect", "2%",
		"--metric", "publish_ms_p99", "--metric", "e2e_ms_p99", "--metric", "publish_ms_p50")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	golden.Check(t, "power.golden", []byte(text))
	for _, bad := range []string{"e+", "e-0", "(over 1000)"} {
		if strings.Contains(text, bad) {
			t.Errorf("output has %q:\n%s", bad, text)
		}
	}
}

// TestPercentAsPeopleWriteIt: percent and thousands never print an
// exponent.
func TestPercentAsPeopleWriteIt(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{{770.4, "770%"}, {38.2, "38%"}, {4.54, "4.5%"}, {0.624, "0.62%"}, {0.0372, "0.037%"}, {0, "0%"}, {-12.6, "-13%"}, {1234.5, "1,235%"}} {
		if got := percent(c.v); got != c.want {
			t.Errorf("percent(%v) = %q, want %q", c.v, got, c.want)
		}
	}
	for _, c := range []struct {
		n    int
		want string
	}{{7, "7"}, {1000, "1,000"}, {171667, "171,667"}, {-1234567, "-1,234,567"}} {
		if got := thousands(c.n); got != c.want {
			t.Errorf("thousands(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}

// TestPlanPowerProgress: past a second, xp plan power says on stderr how
// many answers are done (a bar on a terminal), and stdout keeps only the
// answers.
func TestPlanPowerProgress(t *testing.T) {
	db, _ := noisyPilot(t)
	for _, terminal := range []bool{false, true} {
		st, out, errb := testState()
		st.isTerminal = terminal
		clock := time.Unix(0, 0)
		st.now = func() time.Time { clock = clock.Add(700 * time.Millisecond); return clock }
		if code := execute(st, []string{"plan", "power", "--db", db, "--effect", "2%", "--metric", "publish_ms_p99", "--metric", "publish_ms_p50", "--json"}); code != exitOK {
			t.Fatalf("exit %d: %s", code, errb)
		}
		want := "xp plan power: 2 of 4 answers\n"
		if terminal {
			want = "\rxp plan power [###############...............] 2/4 answers"
		}
		if !strings.Contains(errb.String(), want) || strings.Contains(out.String(), "answers") {
			t.Errorf("terminal %v: stderr %q, want %q", terminal, errb, want)
		}
	}
}

// BenchmarkPlanPower times xp plan power on the README's tls-cost
// campaign with a loaded machine's noise (make bench: under 10 s).
func BenchmarkPlanPower(b *testing.B) {
	db, _ := wildPilot(b)
	b.Run("readme_tls_cost", func(b *testing.B) {
		start := time.Now()
		for b.Loop() {
			if code, _, stderr := runXP(b, "plan", "power", "--db", db, "--effect", "2%"); code != exitOK {
				b.Fatalf("exit %d: %s", code, stderr)
			}
		}
		b.ReportMetric(time.Since(start).Seconds()/float64(b.N), "s/power")
	})
}
