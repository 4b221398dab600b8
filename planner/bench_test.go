package planner

import (
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// spec1M crosses to exactly 1,000,000 rows: 4 × 10 × 10 × 10 × 25 cells ×
// 10 replicates.
const spec1M = `campaign: million
replicates: 10
factors:
  security: [plaintext, tls, mtls, sasl_ssl]
  message_size: [100, 200, 300, 400, 500, 600, 700, 800, 900, 1000]
  partitions: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
  producers: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
  linger_ms: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24]
fixed: {brokers: 3, acks: all, target_rate: 1000}
`

// BenchmarkExpand measures expansion to a discarding writer: rows/s, bytes
// allocated per row, and the peak heap above the starting heap (memory
// must stay flat however many rows stream out).
func BenchmarkExpand(b *testing.B) {
	so, err := os.ReadFile("../plans/security-overhead.yaml")
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		src  string
		rows int64
	}{
		{"security-overhead", string(so), 5184},
		{"1M-rows", spec1M, 1_000_000},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := mustSpec(b, bc.src)
			runtime.GC()
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			var peak atomic.Uint64
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				var m runtime.MemStats
				tick := time.NewTicker(5 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-stop:
						return
					case <-tick.C:
						runtime.ReadMemStats(&m)
						if m.HeapAlloc > peak.Load() {
							peak.Store(m.HeapAlloc)
						}
					}
				}
			}()
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				sum, err := Expand(s, io.Discard)
				if err != nil || sum.Rows != bc.rows {
					b.Fatalf("rows %d err %v", sum.Rows, err)
				}
			}
			elapsed := time.Since(start)
			b.StopTimer()
			close(stop)
			<-done
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			rows := float64(bc.rows) * float64(b.N)
			b.ReportMetric(rows/elapsed.Seconds(), "rows/s")
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/rows, "B_alloc/row")
			extra := 0.0
			if p := peak.Load(); p > before.HeapAlloc {
				extra = float64(p-before.HeapAlloc) / (1 << 20)
			}
			b.ReportMetric(extra, "peak_heap_MiB")
		})
	}
}

// BenchmarkValidatePlan measures reading and validating the committed
// security-overhead campaign.
func BenchmarkValidatePlan(b *testing.B) {
	for i := 0; i < b.N; i++ {
		rows, err := ReadPlan("../plans/security-overhead.jsonl")
		if err != nil || len(rows) != 5184 {
			b.Fatalf("%d rows, %v", len(rows), err)
		}
	}
	b.ReportMetric(5184*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkImportOMBWorkloads measures xp plan import-omb and expansion of
// the seven real OMB workloads in testdata/omb (seven fields differ): with
// include entries the spec and the work grow with the workloads, not with
// the cross product of their fields (a cross product minus excludes took
// 1.66 GB for six workloads).
func BenchmarkImportOMBWorkloads(b *testing.B) {
	paths, err := filepath.Glob("testdata/omb/*.yaml")
	if err != nil || len(paths) == 0 {
		b.Fatal("no workloads", err)
	}
	var files []OMBFile
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		files = append(files, OMBFile{p, data})
	}
	b.ReportAllocs()
	for b.Loop() {
		s, _, err := ImportOMB(files, ImportOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Expand(s, io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendRowJSON measures writing one JSONL row, the per-row
// cost of expansion besides identities and ordering.
func BenchmarkAppendRowJSON(b *testing.B) {
	rows, _, _ := expandRows(b, exampleSpec)
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		buf = appendRowJSON(buf[:0], &rows[i%len(rows)])
	}
}
