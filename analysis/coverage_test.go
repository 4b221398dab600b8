package analysis

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// coverageFamily is a shape of the paired penalty: its draw around a
// configuration's true mean penalty mu (percent), and its true median.
type coverageFamily struct {
	name   string
	draw   func(r *rand.Rand, mu float64) float64
	median func(mu float64) float64
}

// skewSigma is the log-scale spread of the skewed family: the treatment's
// latency is the baseline's times a lognormal factor, as in a campaign
// whose runs vary by a multiplicative noise of about 25%.
const skewSigma = 0.25

var coverageFamilies = []coverageFamily{
	{"symmetric", func(r *rand.Rand, mu float64) float64 { return mu + 3*r.NormFloat64() },
		func(mu float64) float64 { return mu }},
	{"skewed", func(r *rand.Rand, mu float64) float64 {
		return ((1+mu/100)*math.Exp(skewSigma*r.NormFloat64()-skewSigma*skewSigma/2) - 1) * 100
	}, func(mu float64) float64 { return ((1+mu/100)*math.Exp(-skewSigma*skewSigma/2) - 1) * 100 }},
	{"heavy-tailed", func(r *rand.Rand, mu float64) float64 {
		// Student t with 3 degrees of freedom: finite variance, heavy tails.
		z := r.NormFloat64()
		var c float64
		for range 3 {
			x := r.NormFloat64()
			c += x * x
		}
		return mu + 2*z/math.Sqrt(c/3)
	}, func(mu float64) float64 { return mu }},
}

// coverageConfig is one generated configuration's truth.
type coverageConfig struct {
	a, b        string
	mu, meanB   float64
	meanPenalty float64
}

// coverageCampaign writes a per-run CSV of side x side configurations with
// n matched sets each, whose penalty follows fam around a mean drawn per
// configuration, and returns it with the truth per configuration.
func coverageCampaign(r *rand.Rand, fam coverageFamily, sideA, sideB, n int) (string, map[[2]string]coverageConfig) {
	var sb strings.Builder
	sb.WriteString("security,a,b,lat_ms\n")
	truth := map[[2]string]coverageConfig{}
	for ai := range sideA {
		for bi := range sideB {
			c := coverageConfig{a: fmt.Sprintf("a%02d", ai), b: fmt.Sprintf("b%02d", bi),
				mu: 2 + 8*r.Float64(), meanB: 5 + 10*r.Float64()}
			truth[[2]string{c.a, c.b}] = c
			for range n {
				bv := c.meanB * math.Exp(0.1*r.NormFloat64()-0.005)
				tv := bv * (1 + fam.draw(r, c.mu)/100)
				fmt.Fprintf(&sb, "plaintext,%s,%s,%.17g\ntls,%s,%s,%.17g\n", c.a, c.b, bv, c.a, c.b, tv)
			}
		}
	}
	return sb.String(), truth
}

// coverageCount adds to hit and tot, per statistic, whether each interval
// of res holds the truth: per configuration ("cell ..." keys) and pooled
// over configurations ("pooled mean_penalty": the campaign's and each
// factor level's). Intervals not given are counted in none.
func coverageCount(res *Result, fam coverageFamily, truth map[[2]string]coverageConfig, hit, tot, none map[string]int, methods map[string]map[string]bool) {
	pairCfg := map[string]coverageConfig{}
	for _, c := range res.Cells {
		pairCfg[c.Pair] = truth[[2]string{c.Factors[0], c.Factors[1]}]
	}
	count := func(key, method string, lo, hi, want float64) {
		if methods[key] == nil {
			methods[key] = map[string]bool{}
		}
		methods[key][method] = true
		if math.IsNaN(lo) {
			none[key]++
			return
		}
		tot[key]++
		if lo <= want && want <= hi {
			hit[key]++
		}
	}
	meanOf := func(keep func(c coverageConfig) bool) float64 {
		var s float64
		var k int
		for _, c := range truth {
			if keep(c) {
				s += c.mu
				k++
			}
		}
		return s / float64(k)
	}
	for _, e := range res.Effects {
		if e.Scope == ScopeAll {
			if e.Statistic == "mean_penalty" {
				count("pooled mean_penalty", e.Method, e.Low, e.High, meanOf(func(coverageConfig) bool { return true }))
			}
			continue
		}
		c := pairCfg[e.Scope]
		var want float64
		switch e.Statistic {
		case "mean_penalty":
			want = c.mu
		case "median_penalty":
			want = fam.median(c.mu)
		case "mean_difference":
			want = c.meanB * c.mu / 100
		case "ratio_of_means":
			want = 1 + c.mu/100
		}
		count("cell "+e.Statistic, e.Method, e.Low, e.High, want)
	}
	for _, s := range res.Sensitivity {
		count("pooled mean_penalty", s.Method, s.Low, s.High, meanOf(func(c coverageConfig) bool {
			return (s.Factor == "a" && c.a == s.Level) || (s.Factor == "b" && c.b == s.Level)
		}))
	}
}

// coverageImport reads a CSV through xp import's reader.
func coverageImport(t *testing.T, path, csv string) *Dataset {
	t.Helper()
	if err := os.WriteFile(path, []byte(csv), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := importCSV([]string{path}, &ImportOptions{Treatment: "security", Baseline: "plaintext", Metrics: []string{"lat_ms"}})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestIntervalCoverage generates campaigns of known truth (three families
// of paired penalty: symmetric, skewed, heavy-tailed; 3 to 30 matched sets
// per configuration), reads them as per-run CSV through xp import's reader,
// analyses them, and checks that at least 93% of the 95% intervals hold
// the truth, for each family and n: per configuration (1,024
// configurations, every statistic) and pooled over configurations (the
// campaign's and each factor level's mean penalty, over 160 small
// campaigns). The Monte Carlo standard error of a coverage of 0.95 is
// under 0.007 per configuration and 0.01 pooled; seeds are fixed.
func TestIntervalCoverage(t *testing.T) {
	dir := t.TempDir()
	for fi, fam := range coverageFamilies {
		for _, n := range []int{3, 5, 10, 20, 30} {
			hit, tot, none := map[string]int{}, map[string]int{}, map[string]int{}
			methods := map[string]map[string]bool{}
			r := rand.New(rand.NewPCG(uint64(fi+1), uint64(n)))
			csv, truth := coverageCampaign(r, fam, 32, 32, n)
			d := coverageImport(t, filepath.Join(dir, "cells.csv"), csv)
			res, err := Analyse(d, Options{Resamples: 1000})
			if err != nil {
				t.Fatal(err)
			}
			coverageCount(res, fam, truth, hit, tot, map[string]int{}, methods)
			pooledHit, pooledTot := hit["pooled mean_penalty"], tot["pooled mean_penalty"]
			hit["pooled mean_penalty"], tot["pooled mean_penalty"] = 0, 0
			for range 160 {
				csv, truth := coverageCampaign(r, fam, 3, 2, n)
				d := coverageImport(t, filepath.Join(dir, "pooled.csv"), csv)
				res, err := Analyse(d, Options{Resamples: 1000})
				if err != nil {
					t.Fatal(err)
				}
				coverageCount(res, fam, truth, hit, tot, none, methods)
			}
			hit["pooled mean_penalty"] += pooledHit
			tot["pooled mean_penalty"] += pooledTot
			for _, key := range []string{"cell mean_penalty", "cell median_penalty", "cell mean_difference", "cell ratio_of_means", "pooled mean_penalty"} {
				if key == "cell median_penalty" && n < 6 {
					if tot[key] != 0 {
						t.Errorf("%s n=%d: %d median intervals from fewer than 6 sets", fam.name, n, tot[key])
					}
					continue
				}
				cov := float64(hit[key]) / float64(tot[key])
				t.Logf("%s n=%d %s %v: %d/%d = %.3f", fam.name, n, key, methods[key], hit[key], tot[key], cov)
				if tot[key] < 900 || cov < 0.93 {
					t.Errorf("%s n=%d %s: %d of %d 95%% intervals hold the truth (%.3f), want >= 0.93", fam.name, n, key, hit[key], tot[key], cov)
				}
			}
		}
	}
}
