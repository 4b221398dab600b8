package export

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/xp-bench/xp/analysis"
)

// shape100k is a 100,000-run campaign imported from a per-run CSV.
type shape100k struct {
	name string
	// write writes the CSV's rows after its header.
	header string
	write  func(w *bufio.Writer, r *rand.Rand)
}

// shapes100k: a factorial of 6 factors of 4 levels (4,096
// configurations x 2 levels x 12 replicates = 98,304 runs), and a
// campaign whose configurations are named by an id column, as a per-run
// CSV of many imported workloads has (25,000 configurations x 2 levels x
// 2 replicates = 100,000 runs; the id is a factor whose every level is
// one configuration, beside a workload factor of 250 levels and a size
// factor of 4).
var shapes100k = []shape100k{
	{"factorial_6x4", "security,f1,f2,f3,f4,f5,f6,replicate,lat_p50_ms,lat_p99_ms\n", func(w *bufio.Writer, r *rand.Rand) {
		for c := range 4096 {
			var lv [6]int
			for f, x := 0, c; f < 6; f, x = f+1, x/4 {
				lv[f] = x % 4
			}
			base := 2 + 0.5*float64(lv[0]) + 0.2*float64(lv[3])
			for rep := 1; rep <= 12; rep++ {
				for _, sec := range []string{"plaintext", "tls"} {
					m := 1.0
					if sec == "tls" {
						m = 1.08 + 0.01*float64(lv[1])
					}
					v := base * m * math.Exp(0.05*r.NormFloat64())
					fmt.Fprintf(w, "%s,a%d,b%d,c%d,d%d,e%d,f%d,%d,%.6g,%.6g\n", sec, lv[0], lv[1], lv[2], lv[3], lv[4], lv[5], rep, v, 3*v*math.Exp(0.1*r.NormFloat64()))
				}
			}
		}
	}},
	{"config_id_25000", "security,config,workload,size,replicate,lat_p50_ms,lat_p99_ms\n", func(w *bufio.Writer, r *rand.Rand) {
		for c := range 25000 {
			wl, size := c%250, (c/250)%4
			base := 1 + 0.01*float64(wl) + 0.5*float64(size)
			for rep := 1; rep <= 2; rep++ {
				for _, sec := range []string{"plaintext", "tls"} {
					m := 1.0
					if sec == "tls" {
						m = 1.1
					}
					v := base * m * math.Exp(0.05*r.NormFloat64())
					fmt.Fprintf(w, "%s,cfg%05d,w%03d,%d,%d,%.6g,%.6g\n", sec, c, wl, 1024<<(2*size), rep, v, 3*v*math.Exp(0.1*r.NormFloat64()))
				}
			}
		}
	}},
}

// BenchmarkAnalyse100k measures `xp analyse` (child process: wall time
// and peak RSS; default 10,000 resamples, every output file) on 100,000
// runs of each shape of shapes100k, imported from per-run CSV.
func BenchmarkAnalyse100k(b *testing.B) {
	benchSetup(b)
	for _, sh := range shapes100k {
		b.Run(sh.name, func(b *testing.B) {
			dir := b.TempDir()
			csv := filepath.Join(dir, sh.name+".csv")
			f, err := os.Create(csv)
			if err != nil {
				b.Fatal(err)
			}
			w := bufio.NewWriter(f)
			w.WriteString(sh.header)
			sh.write(w, rand.New(rand.NewPCG(100, 1)))
			if err := w.Flush(); err != nil {
				b.Fatal(err)
			}
			f.Close()
			db := filepath.Join(dir, sh.name+".db")
			d, err := analysis.Import(context.Background(), db, []string{csv}, analysis.ImportOptions{Treatment: "security",
				Baseline: "plaintext", Metrics: []string{"lat_p50_ms", "lat_p99_ms"}})
			if err != nil {
				b.Fatal(err)
			}
			runs := len(d.Runs)
			var rss int64
			start := time.Now()
			for b.Loop() {
				out := filepath.Join(dir, "out")
				os.RemoveAll(out)
				cmd := exec.Command(bench.xp, "analyse", "--db", db, "--out", out)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				if err := cmd.Run(); err != nil {
					b.Fatalf("xp analyse: %v\n%s", err, stderr.String())
				}
				if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && ru.Maxrss > rss {
					rss = ru.Maxrss
				}
			}
			b.ReportMetric(float64(runs), "runs")
			b.ReportMetric(time.Since(start).Seconds()/float64(b.N), "s/analyse")
			b.ReportMetric(float64(rss)/1024, "MiB_rss")
		})
	}
}
