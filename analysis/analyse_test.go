package analysis

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

func smallShape() []SyntheticFactor {
	return []SyntheticFactor{
		{"message_size", []string{"1024", "10240"}},
		{"acks", []string{"1", "all"}},
	}
}

func TestAnalyseRecoversKnownPenalty(t *testing.T) {
	d := Synthetic(SyntheticConfig{Seed: 1, Levels: []string{"plaintext", "tls", "mtls"}, Factors: smallShape(),
		Replicates: 5, Penalty: map[string]float64{"tls": 10, "mtls": 20}})
	res, err := Analyse(d, Options{Resamples: 2000})
	if err != nil {
		t.Fatal(err)
	}
	// message_size 1024: 10% * (1+log10(2)) ; 10240: 10% * (1+log10(11)).
	want := map[string]float64{
		"tls":  10 * ((1 + math.Log10(2)) + (1 + math.Log10(11))) / 2,
		"mtls": 20 * ((1 + math.Log10(2)) + (1 + math.Log10(11))) / 2,
	}
	found := 0
	for _, e := range res.Effects {
		if e.Scope != ScopeAll || e.Metric != "publish_ms_p99" || e.Statistic != "mean_penalty" {
			continue
		}
		found++
		w := want[e.Treatment]
		if !(e.Low < e.Estimate && e.Estimate < e.High) {
			t.Errorf("%s: estimate %v outside its interval [%v,%v]", e.Treatment, e.Estimate, e.Low, e.High)
		}
		if math.Abs(e.Estimate-w) > 2 {
			t.Errorf("%s: mean penalty %v, generated %v", e.Treatment, e.Estimate, w)
		}
		if e.Method != "student-t-strata" || e.N != 20 {
			t.Errorf("%s: method %s n %d, want student-t-strata over 20 sets", e.Treatment, e.Method, e.N)
		}
	}
	if found != 2 {
		t.Fatalf("found %d pooled mean penalties for publish_ms_p99, want 2", found)
	}
	// Sensitivity must rank message_size first for every latency metric.
	for _, term := range res.Terms {
		if term.Rank == 1 && term.Factor != "message_size" {
			t.Errorf("%s %s: top factor %s, want message_size", term.Treatment, term.Metric, term.Factor)
		}
	}
}

func TestAnalyseBadInput(t *testing.T) {
	cases := []struct {
		name    string
		mutate  func(*Dataset)
		opt     Options
		wantErr func(error) bool
	}{
		{"baseline-not-a-level", nil, Options{Baseline: "sasl"}, func(err error) bool {
			var be *BaselineError
			return errors.As(err, &be) && len(be.Levels) == 2 && be.Levels[0] == "plaintext"
		}},
		{"no-healthy-set", func(d *Dataset) {
			for i := range d.Runs {
				if d.Runs[i].Factors[0] == "tls" {
					d.Runs[i].Outcome = OutcomeFailed
				}
			}
		}, Options{}, func(err error) bool { return errors.Is(err, ErrNoHealthySet) }},
		{"bad-confidence", nil, Options{Confidence: 1.5}, func(err error) bool { return errors.Is(err, ErrBadOption) }},
		{"one-level", func(d *Dataset) {
			var keep []Run
			for _, r := range d.Runs {
				if r.Factors[0] == "plaintext" {
					keep = append(keep, r)
				}
			}
			d.Runs = keep
		}, Options{}, func(err error) bool {
			return errors.Is(err, ErrOneLevel) && strings.Contains(err.Error(), "security = plaintext")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Synthetic(SyntheticConfig{Seed: 2, Levels: []string{"plaintext", "tls"}, Factors: smallShape(),
				Replicates: 2, Penalty: map[string]float64{"tls": 10}})
			if c.mutate != nil {
				c.mutate(d)
			}
			c.opt.Resamples = 200
			res, err := Analyse(d, c.opt)
			if !c.wantErr(err) {
				t.Fatalf("err = %v", err)
			}
			if errors.Is(err, ErrNoHealthySet) && (res == nil || res.Counts[0].Excluded != 8) {
				t.Fatalf("partial result must count 8 excluded sets: %+v", res)
			}
		})
	}
}

// TestMergedHistogramPercentiles: percentiles of histograms merged across
// replicates agree with the raw values they were recorded from, within
// HDR's 3 significant digits (relative error <= 1e-3, plus one unit).
func TestMergedHistogramPercentiles(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	var raw []float64
	var blobs [][]byte
	var who []*Run
	for rep := range 4 {
		h := hdrhistogram.New(1, 60_000_000, 3)
		for range 20000 {
			v := int64(2000 * math.Exp(0.6*r.NormFloat64()) * float64(rep+1))
			h.RecordValue(v)
			raw = append(raw, float64(v))
		}
		b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
		if err != nil {
			t.Fatal(err)
		}
		blobs = append(blobs, b)
		who = append(who, &Run{Run: fmt.Sprintf("r%d", rep), Attempt: 1})
	}
	m, err := MergeHistograms(blobs, who, "publish")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(raw)
	for _, p := range []float64{50, 90, 99, 99.9, 99.99} {
		// The HDR percentile is the value at rank ceil(p/100*n).
		rank := int(math.Ceil(p/100*float64(len(raw)))) - 1
		want := raw[rank]
		got := float64(m.ValueAtQuantile(p))
		if math.Abs(got-want) > want*1e-3+1 {
			t.Errorf("p%v: merged %v, raw %v", p, got, want)
		}
	}
	// A corrupt blob names its run and attempt.
	blobs[2] = []byte("HISTFAAAAgarbage")
	_, err = MergeHistograms(blobs, who, "e2e")
	var he *HistogramError
	if !errors.As(err, &he) || he.Run != "r2" || !strings.Contains(err.Error(), "run r2 attempt 1: e2e histogram") {
		t.Fatalf("corrupt blob: err = %v", err)
	}
}

// TestCappedAndSaturatingNeverPooled: a campaign with capped and
// saturating configurations gets one pooled scope per rate class, and
// throughput only where the rows saturate.
func TestCappedAndSaturatingNeverPooled(t *testing.T) {
	d := Synthetic(SyntheticConfig{Seed: 3, Levels: []string{"plaintext", "tls"},
		Factors:    []SyntheticFactor{{Name: "target_rate", Levels: []string{"1000", "max"}}, {Name: "acks", Levels: []string{"1", "all"}}},
		Replicates: 3, Penalty: map[string]float64{"tls": 10}})
	for i := range d.Runs {
		r := &d.Runs[i]
		if r.Factors[1] == "max" {
			r.Saturating = true
			r.Metrics["publish_rate"] = 50000 / (1 + 0.1*float64(i%2))
		}
	}
	res, err := Analyse(d, Options{Resamples: 300})
	if err != nil {
		t.Fatal(err)
	}
	sat := map[string]bool{}
	for _, c := range res.Cells {
		sat[c.Pair] = c.Saturating
	}
	scopes := map[string]int{}
	for _, e := range res.Effects {
		switch e.Scope {
		case ScopeAll:
			t.Fatalf("scope all in a mixed campaign: %+v", e)
		case ScopeAllCapped, ScopeAllMax:
			scopes[e.Scope]++
			if e.N != 6 {
				t.Errorf("%s %s pools %d sets, want the 6 of its rate class", e.Scope, e.Metric, e.N)
			}
		}
		if e.Metric == "publish_rate" && (e.Scope == ScopeAllCapped || (e.Scope != ScopeAllMax && !sat[e.Scope])) {
			t.Errorf("throughput estimated for capped rows: %+v", e)
		}
	}
	if scopes[ScopeAllCapped] == 0 || scopes[ScopeAllMax] == 0 {
		t.Fatalf("pooled scopes: %v", scopes)
	}
}

// TestWorkersDoNotChangeResults: the estimates are the same for one worker
// or many.
func TestWorkersDoNotChangeResults(t *testing.T) {
	d := Synthetic(SyntheticConfig{Seed: 9, Levels: []string{"plaintext", "tls", "mtls"}, Factors: smallShape(),
		Replicates: 3, Penalty: map[string]float64{"tls": 10, "mtls": 20}})
	a, err := Analyse(d, Options{Resamples: 500, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Analyse(d, Options{Resamples: 500, Workers: 5})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(a.Effects, a.Sensitivity, a.Terms) != fmt.Sprint(b.Effects, b.Sensitivity, b.Terms) {
		t.Fatal("results depend on the number of workers")
	}
}

// TestBaselineOverride compares against another level: plaintext is then
// cheaper than tls, a negative penalty.
func TestBaselineOverride(t *testing.T) {
	d := Synthetic(SyntheticConfig{Seed: 10, Levels: []string{"plaintext", "tls", "mtls"}, Factors: smallShape(),
		Replicates: 3, Penalty: map[string]float64{"tls": 10, "mtls": 20}})
	res, err := Analyse(d, Options{Baseline: "tls", Resamples: 300})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(res.Levels, ",") != "tls,mtls,plaintext" {
		t.Fatalf("levels %v", res.Levels)
	}
	for _, e := range res.Effects {
		if e.Scope != ScopeAll || e.Statistic != "mean_penalty" {
			continue
		}
		if e.Baseline != "tls" || (e.Treatment == "plaintext") != (e.Estimate < 0) {
			t.Errorf("%s vs %s %s: penalty %v", e.Treatment, e.Baseline, e.Metric, e.Estimate)
		}
	}
}

// TestIntervalMethodByN: the interval method follows the number of matched
// sets an estimate rests on, and an estimate without an interval says why.
func TestIntervalMethodByN(t *testing.T) {
	cases := []struct {
		name               string
		replicates         int
		cell, pooled       Method
		cellNote, cellNone bool
	}{
		{"two sets: no interval per configuration", 2, MethodNone, MethodStudentTStrata, true, true},
		{"five sets: Student-t, its runs alone cannot bound the mean", 5, MethodStudentT, MethodStudentTStrata, true, false},
		{"25 sets per configuration, 100 pooled: bootstrap pooled", 25, MethodStudentT, "bca-cluster", false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Synthetic(SyntheticConfig{Seed: 7, Levels: []string{"plaintext", "tls"}, Factors: smallShape(),
				Replicates: c.replicates, Penalty: map[string]float64{"tls": 10}})
			res, err := Analyse(d, Options{Resamples: 500})
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range res.Effects {
				if e.Metric != "publish_ms_p99" || e.Statistic != "mean_penalty" {
					continue
				}
				want := c.cell
				if e.Scope == ScopeAll {
					want = c.pooled
				}
				if Method(e.Method) != want {
					t.Errorf("%s: method %s, want %s", e.Scope, e.Method, want)
				}
				if e.Scope == ScopeAll {
					continue
				}
				if c.cellNone != math.IsNaN(e.Low) || (e.Note != "") != c.cellNote {
					t.Errorf("%s n=%d: interval [%v, %v] note %q", e.Scope, e.N, e.Low, e.High, e.Note)
				}
				if c.cellNone && !strings.Contains(e.Note, "n=2: too few matched sets for an interval") {
					t.Errorf("%s: note %q", e.Scope, e.Note)
				}
				alone := !c.cellNone && e.N < MinSetsAlone
				if e.Unbounded != alone || alone != strings.Contains(e.Note, "its runs alone cannot bound the mean") {
					t.Errorf("%s n=%d: unbounded %v, note %q", e.Scope, e.N, e.Unbounded, e.Note)
				}
			}
		})
	}
}
