package runner

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"
)

// TestMannKendall checks S, its tie-corrected variance, Z with the
// continuity correction, the two-sided p-value and Sen's slope on series
// worked by hand.
func TestMannKendall(t *testing.T) {
	for _, tc := range []struct {
		name string
		xs   []float64
		want mkResult
	}{
		{"strictly rising, n = 5", []float64{1, 2, 3, 4, 5}, mkResult{S: 10, Var: 50.0 / 3, Z: 9 / math.Sqrt(50.0/3), P: 0.027486, Slope: 1}},
		{"strictly falling, n = 6", []float64{5, 4, 3, 2, 1, 0}, mkResult{S: -15, Var: 85.0 / 3, Z: -14 / math.Sqrt(85.0/3), P: 0.0085354, Slope: -1}},
		{"two ties of two", []float64{1, 1, 2, 2}, mkResult{S: 4, Var: 20.0 / 3, Z: 3 / math.Sqrt(20.0/3), P: 0.24528, Slope: (1.0/3 + 0.5) / 2}},
		{"flat: no variance, no test", []float64{3, 3, 3, 3, 3}, mkResult{S: 0, Var: 0, Z: 0, P: 1, Slope: 0}},
		{"one value: no test", []float64{7}, mkResult{P: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := mannKendall(tc.xs)
			for _, c := range []struct {
				name      string
				got, want float64
			}{{"S", got.S, tc.want.S}, {"Var", got.Var, tc.want.Var}, {"Z", got.Z, tc.want.Z}, {"P", got.P, tc.want.P}, {"Slope", got.Slope, tc.want.Slope}} {
				if math.Abs(c.got-c.want) > 1e-4*math.Max(1, math.Abs(c.want)) {
					t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
				}
			}
		})
	}
}

// TestMannKendallAgainstScipy: S over the square root of its tie-corrected
// variance is scipy's Kendall tau-b z against time (method asymptotic,
// which has no continuity correction), and Sen's slope is scipy's
// theilslopes, on random series with and without ties.
func TestMannKendallAgainstScipy(t *testing.T) {
	r := rand.New(rand.NewPCG(34, 1))
	var series [][]float64
	for i := range 12 {
		n := 5 + r.IntN(40)
		xs := make([]float64, n)
		for j := range xs {
			xs[j] = 0.05*float64(i-6)*float64(j) + r.NormFloat64()
			if i%3 == 0 {
				xs[j] = math.Round(xs[j]) // ties
			}
		}
		series = append(series, xs)
	}
	script := `
import json, sys
from scipy.stats import kendalltau, norm, theilslopes
out = []
for xs in json.load(sys.stdin):
    r = kendalltau(list(range(len(xs))), xs, method="asymptotic")
    z = norm.isf(r.pvalue / 2) * (1 if r.statistic > 0 else -1)
    out.append([z, theilslopes(xs).slope])
print(json.dumps(out))
`
	b, _ := json.Marshal(series)
	cmd := exec.Command("/usr/bin/python3", "-c", script)
	cmd.Stdin = bytes.NewReader(b)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	res, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3 with scipy: %v\n%s", err, stderr.String())
	}
	var want [][2]float64
	if err := json.Unmarshal(res, &want); err != nil {
		t.Fatal(err)
	}
	for i, xs := range series {
		got := mannKendall(xs)
		z := got.S / math.Sqrt(got.Var)
		if math.Abs(z-want[i][0]) > 1e-6 || math.Abs(got.Slope-want[i][1]) > 1e-9 {
			t.Errorf("series %d (n %d): z %v slope %v, scipy %v %v", i, len(xs), z, got.Slope, want[i][0], want[i][1])
		}
	}
}

// TestSteadyReasons: a capped run's window is overloaded when its latency
// doubles or its backlog grows by a second of the target rate, with a
// significant trend, or when it falls short of its rate; a cold cluster
// (latency halving) is not steady; a flat noisy series, a small trend, and
// a window too short to test pass.
func TestSteadyReasons(t *testing.T) {
	flat := func(n int, level float64, noise float64) []float64 {
		r := rand.New(rand.NewPCG(uint64(n), 7))
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = level * math.Exp(noise*r.NormFloat64())
		}
		return xs
	}
	ramp := func(n int, from, to float64) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = from * math.Pow(to/from, float64(i)/float64(n-1))
		}
		return xs
	}
	lin := func(n int, from, step float64) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = from + step*float64(i)
		}
		return xs
	}
	for _, tc := range []struct {
		name string
		w    steadyWindow
		want []string // prefixes of the reasons, in order
	}{
		{"flat and quiet", steadyWindow{Rate: 1000, PublishRate: 1000, P50Ms: flat(30, 2, 0.05), Backlog: flat(30, 3, 0.5)}, nil},
		{"flat and very noisy", steadyWindow{Rate: 1000, PublishRate: 1000, P50Ms: flat(60, 2, 0.6), Backlog: flat(60, 20, 1)}, nil},
		{"latency rises 30%: a trend, but small", steadyWindow{Rate: 1000, PublishRate: 1000, P50Ms: ramp(20, 2, 2.6)}, nil},
		{"queue building: latency ×50", steadyWindow{Rate: 1000, PublishRate: 1000, P50Ms: ramp(10, 20, 1000), Backlog: flat(10, 3, 0.2)},
			[]string{ReasonOverloaded + "publish latency p50 rises ×50"}},
		{"consumers falling behind", steadyWindow{Rate: 1000, PublishRate: 1000, P50Ms: flat(10, 2, 0.05), Backlog: lin(10, 10, 400)},
			[]string{ReasonOverloaded + "the backlog grows by 3600 records (3.6 s of the target rate)"}},
		{"backlog grows, less than a second of rate", steadyWindow{Rate: 1000, PublishRate: 1000, Backlog: lin(10, 10, 50)}, nil},
		{"rate short of the target", steadyWindow{Rate: 1000, PublishRate: 900},
			[]string{ReasonOverloaded + "publish rate 900.0 msg/s short of the target 1000 msg/s"}},
		{"rate 1% short is within the limit", steadyWindow{Rate: 1000, PublishRate: 990.5}, nil},
		{"cold cluster: latency falls ×0.02", steadyWindow{Rate: 1000, PublishRate: 1000, P50Ms: ramp(8, 150, 3)},
			[]string{ReasonNotSteady + "publish latency p50 falls ×0.02"}},
		{"every finding, in order", steadyWindow{Rate: 1000, PublishRate: 700, P50Ms: ramp(6, 5, 500), Backlog: lin(6, 0, 2000)},
			[]string{ReasonOverloaded + "publish rate", ReasonOverloaded + "publish latency", ReasonOverloaded + "the backlog"}},
		{"too short to test a trend", steadyWindow{Rate: 1000, PublishRate: 1000, P50Ms: ramp(4, 5, 500), Backlog: lin(4, 0, 5000)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := steadyReasons(tc.w)
			if len(got) != len(tc.want) {
				t.Fatalf("reasons %q, want %d starting %q", got, len(tc.want), tc.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Errorf("reason %d = %q, want it to start %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}
