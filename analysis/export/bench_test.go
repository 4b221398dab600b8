package export

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/xp-bench/xp/analysis"
)

// The 5,184-run campaign of plans/security-overhead.yaml: 576 matched
// configurations x 3 security levels x 3 replicates, with whole-run
// histograms, stored through the evidence store once per benchmark run.
var bench struct {
	once sync.Once
	dir  string
	db   string
	xp   string
	data *analysis.Dataset
	err  error
}

// TestMain removes the benchmark campaign after the run.
func TestMain(m *testing.M) {
	code := m.Run()
	if bench.dir != "" {
		os.RemoveAll(bench.dir)
	}
	os.Exit(code)
}

func benchSetup(b *testing.B) {
	b.Helper()
	bench.once.Do(func() {
		bench.dir, bench.err = os.MkdirTemp("", "xp-analyse-bench-")
		if bench.err != nil {
			return
		}
		bench.data = analysis.Synthetic(analysis.SyntheticConfig{Seed: 7, Levels: []string{"plaintext", "tls", "mtls"},
			Factors: analysis.SecurityOverheadShape(), Replicates: 3, Penalty: map[string]float64{"tls": 8, "mtls": 12},
			Histograms: true, HistogramValues: 2000, Invalid: 97})
		bench.db = filepath.Join(bench.dir, "security-overhead.db")
		if bench.err = analysis.Save(context.Background(), bench.db, bench.data, analysis.SaveOptions{}); bench.err != nil {
			return
		}
		bench.xp = filepath.Join(bench.dir, "xp")
		if out, err := exec.Command("go", "build", "-o", bench.xp, "github.com/xp-bench/xp/cmd/xp").CombinedOutput(); err != nil {
			bench.err = fmt.Errorf("go build xp: %v\n%s", err, out)
		}
	})
	if bench.err != nil {
		b.Fatal(bench.err)
	}
}

// pooledSample returns the 1,728 matched tls/plaintext publish p99 pairs.
func pooledSample() (t, base []float64) {
	d := bench.data
	type key struct {
		pair string
		rep  int
	}
	bl := map[key]float64{}
	for _, r := range d.Runs {
		if r.Factors[0] == "plaintext" {
			bl[key{r.Pair, r.Replicate}] = r.Metrics["publish_ms_p99"]
		}
	}
	for _, r := range d.Runs {
		if r.Factors[0] == "tls" {
			t = append(t, r.Metrics["publish_ms_p99"])
			base = append(base, bl[key{r.Pair, r.Replicate}])
		}
	}
	return t, base
}

// BenchmarkAnalyse5184 measures `xp analyse` on a 5,184-run campaign with
// 10,000 resamples (child process: wall time and peak RSS), and, on one
// pooled estimate (1,728 matched pairs, paired BCa, 10,000 resamples), xp's
// bootstrap next to scipy.stats.bootstrap's (timed by Python itself).
func BenchmarkAnalyse5184(b *testing.B) {
	benchSetup(b)
	b.Run("xp_analyse", func(b *testing.B) {
		var rss int64
		start := time.Now()
		for i := 0; b.Loop(); i++ {
			out := filepath.Join(bench.dir, "out")
			os.RemoveAll(out)
			cmd := exec.Command(bench.xp, "analyse", "--db", bench.db, "--out", out, "--resamples", "10000")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil {
				b.Fatalf("xp analyse: %v\n%s", err, stderr.String())
			}
			if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && ru.Maxrss > rss {
				rss = ru.Maxrss
			}
		}
		b.ReportMetric(time.Since(start).Seconds()/float64(b.N), "s/analyse")
		b.ReportMetric(float64(rss)/1024, "MiB_rss")
	})
	t, base := pooledSample()
	b.Run("xp_one_estimate", func(b *testing.B) {
		for b.Loop() {
			if _, err := analysis.BootstrapPaired(t, base, false, analysis.Options{Resamples: 10000, Seed: 1, SeedSet: true}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/estimate")
	})
	b.Run("scipy_one_estimate", func(b *testing.B) {
		in, _ := json.Marshal(map[string]any{"t": t, "b": base})
		script := `
import json, sys, time
import numpy as np
from scipy import stats
d = json.load(sys.stdin)
x, y = np.array(d["t"]), np.array(d["b"])
def mean_penalty(x, y, axis=-1): return np.mean((x - y) / y * 100, axis=axis)
t0 = time.perf_counter()
r = stats.bootstrap((x, y), mean_penalty, paired=True, method="BCa", n_resamples=10000,
    random_state=np.random.default_rng(1))
print(json.dumps({"seconds": time.perf_counter() - t0, "low": r.confidence_interval.low}))
`
		var total float64
		for b.Loop() {
			cmd := exec.Command("/usr/bin/python3", "-c", script)
			cmd.Stdin = bytes.NewReader(in)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				b.Fatalf("scipy: %v\n%s", err, stderr.String())
			}
			var res struct{ Seconds float64 }
			if err := json.Unmarshal(out, &res); err != nil {
				b.Fatalf("scipy output %q: %v", out, err)
			}
			total += res.Seconds
		}
		b.ReportMetric(total*1000/float64(b.N), "ms/estimate")
	})
}
