package analysis

import (
	"strings"
	"testing"
)

func TestPercentileNeeds(t *testing.T) {
	cases := []struct {
		name  string
		needs int
		count string
		ok    bool
	}{
		{"publish_ms_p50", 20, "published", true},
		{"publish_ms_p95", 200, "published", true},
		{"publish_ms_p99", 1000, "published", true},
		{"e2e_ms_p999", 10000, "consumed", true},
		{"e2e_ms_p9999", 100000, "consumed", true},
		{"send_delay_ms_p99", 1000, "published", true},
		{"publish_ms_max", 0, "", false},
		{"client_cpu_us_per_msg", 0, "", false},
		{"lat_ms_p99", 0, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n, count, ok := percentileNeeds(c.name)
			if n != c.needs || count != c.count || ok != c.ok {
				t.Errorf("needs %d of %q (%v), want %d of %q (%v)", n, count, ok, c.needs, c.count, c.ok)
			}
		})
	}
}

// TestTailPercentilesOnlyWhereSupported: runs of 3,000 samples lose p99.9
// and p99.99 (with the reason), runs of 200,000 keep them, runs without a
// sample count (imported evidence) keep everything.
func TestTailPercentilesOnlyWhereSupported(t *testing.T) {
	d := Synthetic(SyntheticConfig{Seed: 3, Levels: []string{"plaintext", "tls"}, Factors: smallShape(),
		Replicates: 3, Penalty: map[string]float64{"tls": 10}})
	counts := map[string]float64{"1024": 3000, "10240": 200000} // message_size -> samples per run
	var unknownPair string
	for i := range d.Runs {
		r := &d.Runs[i]
		if r.Factors[1] == "10240" && r.Factors[2] == "all" {
			unknownPair = r.Pair
			continue // no sample count
		}
		r.Metrics["published"] = counts[r.Factors[1]]
		r.Metrics["consumed"] = counts[r.Factors[1]]
	}
	res, err := Analyse(d, Options{Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := d.Runs[0].Metrics["publish_ms_p9999"]; !ok {
		t.Fatal("Analyse changed the caller's dataset")
	}
	sizeOf := map[string]string{}
	for _, c := range res.Cells {
		sizeOf[c.Pair] = c.Factors[0]
	}
	has := map[string]bool{} // pair|metric with a per-configuration effect
	for _, e := range res.Effects {
		has[e.Scope+"|"+e.Metric] = true
	}
	for _, c := range res.Cells {
		for _, m := range []string{"publish_ms_p99", "publish_ms_p999", "e2e_ms_p9999"} {
			want := sizeOf[c.Pair] == "10240" || m == "publish_ms_p99"
			if has[c.Pair+"|"+m] != want {
				t.Errorf("%s (message_size %s): effect of %s %v, want %v", c.Pair, sizeOf[c.Pair], m, has[c.Pair+"|"+m], want)
			}
		}
	}
	for _, p := range res.Percentiles {
		if p.Pair == unknownPair {
			t.Errorf("support listed for %s, whose runs have no sample count", p.Pair)
		}
		wantOK := sizeOf[p.Pair] == "10240" || p.Needs <= 3000
		if (p.Supported == p.Runs) != wantOK || p.Runs != 6 {
			t.Errorf("%+v: supported %v, want %v", p, p.Supported == p.Runs, wantOK)
		}
	}
	// One note lists every percentile left out, by the samples it needs.
	var left []string
	for _, n := range res.Notes {
		if strings.Contains(n, "left out") {
			left = append(left, n)
		}
	}
	if len(res.Percentiles) == 0 || len(left) != 1 ||
		!strings.Contains(left[0], "needing 10,000 samples: publish_ms_p999 in 12 runs, e2e_ms_p999 in 12 runs; needing 100,000 samples: publish_ms_p9999 in 12 runs, e2e_ms_p9999 in 12 runs") {
		t.Errorf("notes: %q", res.Notes)
	}
}
