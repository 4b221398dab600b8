package runner

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/xp-bench/xp/analysis"
	"github.com/xp-bench/xp/analysis/export"
	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/results"
	"github.com/xp-bench/xp/runner/loadgen"
)

// synthetic is a target whose loads are made up: every second of a run
// publishes at the target rate with a publish latency p50 of the run's
// level (2 ms, +5% per replicate, tls 10% above plaintext: a known truth),
// unless shape reshapes the per-second levels and backlog of a run. Its
// warm-up loads are flat.
type synthetic struct {
	shape func(row *planner.Row, levels []float64, backlog []int64)

	mu    sync.Mutex
	loads int
}

var _ target.LoadRunner = (*synthetic)(nil)

func (s *synthetic) Up(_ context.Context, g target.Group) (target.Endpoints, error) {
	ep := target.Endpoints{Modes: map[string]target.Endpoint{}}
	for _, r := range g.Rows {
		ep.Modes[target.ModeKey(&r)] = target.Endpoint{Bootstrap: []string{"127.0.0.1:9"}}
	}
	return ep, nil
}

func (s *synthetic) Down(context.Context) error { return nil }

func (s *synthetic) RunLoad(_ context.Context, l target.Load) (*loadgen.Result, error) {
	s.mu.Lock()
	s.loads++
	s.mu.Unlock()
	n := int(l.Config.Duration.Seconds())
	level := 2 * (1 + 0.05*float64(l.Row.Replicate))
	if l.Row.Security == "tls" {
		level *= 1.1
	}
	levels, backlog := make([]float64, n), make([]int64, n)
	for i := range levels {
		levels[i], backlog[i] = level, 3
	}
	if s.shape != nil && !l.Warmup {

		s.shape(l.Row, levels, backlog)
	}
	return syntheticResult(l.Config, levels, backlog)
}

// syntheticResult is a capped run of cfg whose second i has publish
// latencies spread around levels[i] ms (p50 levels[i]) and ends with
// backlog[i] records unconsumed, with its histograms as the load generator
// encodes them.
func syntheticResult(cfg loadgen.Config, levels []float64, backlog []int64) (*loadgen.Result, error) {
	rate := cfg.Rate
	res := &loadgen.Result{Healthy: true, Reasons: []string{}, TargetRate: loadgen.Rate(rate), PublishRate: float64(rate), ConsumeRate: float64(rate),
		Published: rate * int64(len(levels)), Consumed: rate * int64(len(levels)), Config: loadgen.ConfigEcho{Rate: loadgen.Rate(rate), DurationS: cfg.Duration.Seconds()}}
	pub, e2e, sd := loadgen.NewHistogram(), loadgen.NewHistogram(), loadgen.NewHistogram()
	for i, lv := range levels {
		h := loadgen.NewHistogram()
		for j := range 200 {
			// Evenly spread from ×0.8 to ×1.2 of the level: p50 is the level.
			us := int64(lv * 1e3 * (0.8 + 0.4*float64(j)/199))
			h.RecordValue(us)
			pub.RecordValue(us)
			e2e.RecordValue(us * 3 / 2)
			sd.RecordValue(10)
		}
		b, err := loadgen.EncodeHistogram(h)
		if err != nil {
			return nil, err
		}
		res.Intervals = append(res.Intervals, loadgen.Interval{Second: i, Publish: b})
		res.Series = append(res.Series, loadgen.Second{Second: i, Published: rate, Consumed: rate, Backlog: backlog[i]})
	}
	res.PublishLatencyMs, res.E2ELatencyMs, res.SendDelayMs = loadgen.Summarize(pub), loadgen.Summarize(e2e), loadgen.Summarize(sd)
	for _, h := range []struct {
		dst *string
		h   *hdrhistogram.Histogram
	}{{&res.Histograms.Publish, pub}, {&res.Histograms.E2E, e2e}, {&res.Histograms.SendDelay, sd}} {
		b, err := loadgen.EncodeHistogram(h.h)
		if err != nil {
			return nil, err
		}
		*h.dst = string(b)
	}
	return res, nil
}

// TestSteadyStateCampaigns runs synthetic campaigns of known truth (tls
// publish p50 10% above plaintext in every matched set) through the runner
// and the analysis: one whose first run meets a cold cluster (its latency
// falls ×50 through the window) and one where a queue builds up in a run's
// window (latency ×50, backlog growing by 600 records a second). The run
// is invalid with its reason, its matched set is excluded with it
// (excluded.csv and the report), and the headline is the truth from the
// other sets, as in a campaign without it; every group's warm-up is
// recorded with its length.
func TestSteadyStateCampaigns(t *testing.T) {
	spec := `campaign: steady
seed: 34
replicates: 5
treatment: security
baseline: plaintext
factors:
  security: [plaintext, tls]
fixed:
  platform: local
  brokers: 1
  message_size: 256
  acks: all
  target_rate: 1000
  warmup_s: 1
  duration_s: 8
  drain_timeout_s: 5
`
	falling := func(_ *planner.Row, lv []float64, _ []int64) {
		for i := range lv {
			lv[i] *= math.Pow(50, 1-float64(i)/float64(len(lv)-1))
		}
	}
	rising := func(_ *planner.Row, lv []float64, bl []int64) {
		for i := range lv {
			lv[i] *= math.Pow(50, float64(i)/float64(len(lv)-1))
			bl[i] = int64(600 * i)
		}
	}
	dir := t.TempDir()
	plan := writePlan(t, dir, "steady", spec)
	rows, err := planner.ReadPlan(plan)
	if err != nil {
		t.Fatal(err)
	}
	first := rows[0].Run
	var tlsMid string
	for _, r := range rows {
		if r.Security == "tls" && r.Replicate == 3 {
			tlsMid = r.Run
		}
	}
	for _, tc := range []struct {
		name   string
		bad    string // the run reshaped, "" for none
		shape  func(*planner.Row, []float64, []int64)
		reason string
	}{
		{"clean", "", nil, ""},
		{"cold first run", first, falling, ReasonNotSteady + "publish latency p50 falls"},
		{"queue building up", tlsMid, rising, ReasonOverloaded + "publish latency p50 rises"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sub := t.TempDir()
			db := filepath.Join(sub, "steady.db")
			tgt := &synthetic{}
			if tc.shape != nil {
				tgt.shape = func(r *planner.Row, lv []float64, bl []int64) {
					if r.Run == tc.bad {
						tc.shape(r, lv, bl)
					}
				}
			}
			var stderr syncBuffer
			_, err := Run(context.Background(), Options{Platforms: only(tgt), Plan: plan, DB: db, Stderr: &stderr})
			if (err != nil) != (tc.bad != "") {
				t.Fatalf("run: %v\n%s", err, stderr.String())
			}
			st := readDB(t, db)
			if inv := st.runsIn(results.Invalid); tc.bad == "" && len(inv) > 0 || tc.bad != "" && (len(inv) != 1 || inv[0] != tc.bad) {
				t.Fatalf("invalid runs %v, want [%s]", inv, tc.bad)
			}
			checkWarmupRecorded(t, db, 1)

			d, err := analysis.Load(context.Background(), db)
			if err != nil {
				t.Fatal(err)
			}
			res, err := analysis.Analyse(d, analysis.Options{Resamples: 1000})
			if err != nil {
				t.Fatal(err)
			}
			wantN := 5
			if tc.bad != "" {
				wantN = 4
				if len(res.Excluded) != 1 || !strings.Contains(strings.Join(res.Excluded[0].Reasons, "; "), tc.reason) {
					t.Fatalf("excluded sets %+v, want one with %q", res.Excluded, tc.reason)
				}
				out := filepath.Join(sub, "out")
				if err := export.Write(out, res); err != nil {
					t.Fatal(err)
				}
				for _, f := range []string{"excluded.csv", "report.html"} {
					b, err := os.ReadFile(filepath.Join(out, f))
					if err != nil || !strings.Contains(string(b), tc.bad) || !strings.Contains(string(b), tc.reason) {
						t.Errorf("%s does not name %s and why (%q): %v", f, tc.bad, tc.reason, err)
					}
				}
			}
			found := false
			for _, e := range res.Effects {
				if e.Metric != "publish_ms_p50" || e.Scope != analysis.ScopeAll || e.Statistic != "mean_penalty" {
					continue
				}
				found = true
				if e.N != wantN || math.Abs(e.Estimate-10) > 0.5 {
					t.Errorf("headline tls publish p50: %+.2f%% from %d sets, want +10%% (the truth) from %d", e.Estimate, e.N, wantN)
				}
			}
			if !found {
				t.Fatal("no headline publish_ms_p50 mean_penalty")
			}
		})
	}
}

// checkWarmupRecorded checks that db records groups warm-ups, each with
// its length and every mode's seconds.
func checkWarmupRecorded(t *testing.T, db string, groups int) []results.InfraEvent {
	t.Helper()
	s, err := results.OpenReadOnly(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	evs, err := s.InfraEvents(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var warm []results.InfraEvent
	for _, e := range evs {
		if e.Event == "warmup" {
			warm = append(warm, e)
			if e.Duration <= 0 || e.Started.IsZero() || !strings.Contains(string(e.Outputs), `"load_s":`) || e.Error != "" {
				t.Errorf("warm-up event %+v: want its start, length, load seconds and no error", e)
			}
		}
	}
	if len(warm) != groups {
		t.Fatalf("%d warm-up events, want %d: %v", len(warm), groups, evs)
	}
	return warm
}
