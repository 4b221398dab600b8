package runner

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/xp-bench/xp/results"
)

// BenchmarkRunner measures what the runner adds around the load generator
// on the local target, side by side:
//
//   - overhead: per row, the attempt's wall time minus warm-up, measurement
//     and drain (target < 1 s); provisioning the group is reported apart.
//   - evidence: database bytes one run of 1 KiB records at 10k msg/s adds
//     (bytes in use in its pages, from SQLite's dbstat; the file grows by
//     whole 4 KiB pages, shown for the 6 s run), measured for 2 s and 6 s
//     runs and extrapolated linearly to a 30 s run (target < 128 KiB).
//   - status: `xp status` on the 5,184-row security-overhead campaign with
//     an attempt per row (target < 200 ms), in-process and as a command.
func BenchmarkRunner(b *testing.B) {
	b.Run("overhead_and_evidence", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			dir := b.TempDir()
			short := campaignBytes(b, dir, "short", 2)
			long := campaignBytes(b, dir, "long", 6)
			perSecond := (long.perRun - short.perRun) / 4
			at30 := long.perRun + 24*perSecond
			overheads := append(short.overheads, long.overheads...)
			var sum, worst float64
			for _, o := range overheads {
				sum += o
				worst = max(worst, o)
			}
			b.ReportMetric(sum/float64(len(overheads)), "overhead_s/row")
			b.ReportMetric(worst, "overhead_max_s")
			b.ReportMetric((short.provision+long.provision)/2, "provision_s/group")
			b.ReportMetric(short.perRun/1024, "KiB/2s_run")
			b.ReportMetric(long.perRun/1024, "KiB/6s_run")
			b.ReportMetric(long.filePerRun/1024, "file_KiB/6s_run")
			b.ReportMetric(at30/1024, "KiB/30s_run_extrapolated")
		}
	})

	db := syntheticCampaign(b)
	b.Run("status_5184_rows", func(b *testing.B) {
		ctx := context.Background()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			st, err := ReadStatus(ctx, db, time.Now())
			if err != nil {
				b.Fatal(err)
			}
			if st.Rows.Total != 5184 {
				b.Fatalf("%d rows", st.Rows.Total)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/status")
	})
	b.Run("status_5184_rows_cli", func(b *testing.B) {
		bin, err := buildXP()
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			out, err := exec.Command(bin, "status", "--db", db, "--json").CombinedOutput()
			if err != nil {
				b.Fatalf("xp status: %v\n%s", err, out)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/status")
	})
}

type campaignCost struct {
	perRun     float64 // bytes of pages in use (dbstat: size - unused)
	filePerRun float64 // file growth, in whole pages
	overheads  []float64
	provision  float64
}

// campaignBytes runs a two-row campaign of the given duration and returns
// the bytes each run added to the db and each row's overhead.
func campaignBytes(b *testing.B, dir, name string, durationS int) campaignCost {
	ctx := context.Background()
	spec := smallSpec(name, []string{"plaintext", "tls"}, 1)
	spec = replaceLine(spec, "duration_s:", fmt.Sprintf("  duration_s: %d", durationS))
	// The rate and size of the shipped gateway-cost and field-encryption
	// plans (and the upper rate of security-overhead).
	spec = replaceLine(spec, "target_rate:", "  target_rate: 10000")
	spec = replaceLine(spec, "message_size:", "  message_size: 1024")
	plan := writePlan(b, dir, name, spec)

	// The db with the campaign registered and nothing run: the baseline.
	base := filepath.Join(dir, name+"-base.db")
	p, err := readPlan(plan)
	if err != nil {
		b.Fatal(err)
	}
	s, err := results.Open(ctx, base)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.Register(ctx, results.Campaign{Name: name, Plan: p.bytes, Target: "local", Host: hostEnvironment()},
		p.storeRows()); err != nil {
		b.Fatal(err)
	}
	s.Close()

	db := DefaultDB(plan)
	if _, err := Run(ctx, Options{Platforms: localPlatforms, Plan: plan}); err != nil && !errors.Is(err, ErrUnfinished) {
		b.Fatalf("run: %v", err)
	}
	cost := campaignCost{perRun: float64(usedBytes(b, db)-usedBytes(b, base)) / float64(len(p.rows)),
		filePerRun: float64(fileSize(b, db)-fileSize(b, base)) / float64(len(p.rows))}

	r, err := results.OpenReadOnly(ctx, db)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	atts, err := r.Attempts(ctx)
	if err != nil {
		b.Fatal(err)
	}
	for i, a := range atts {
		switch a.Outcome {
		case results.OutcomeDone:
		case results.OutcomeInvalid: // still a whole run's evidence and overhead
			b.Logf("attempt %d invalid (a loaded machine?): %v", a.ID, a.Reasons)
		default:
			b.Fatalf("attempt %d: %s %v %s", a.ID, a.Outcome, a.Reasons, a.Error)
		}
		row := p.rows[i]
		measured := float64(row.WarmupS+row.DurationS) + a.Metrics["drain_s"]
		cost.overheads = append(cost.overheads, a.Ended.Sub(a.Started).Seconds()-measured)
	}
	events, _ := r.InfraEvents(ctx)
	if len(events) > 0 && len(atts) > 0 {
		cost.provision = atts[0].Started.Sub(events[0].Time).Seconds()
		// The up event is written after Up returns; provisioning is from
		// the campaign's registration.
		if c, err := r.Campaign(ctx); err == nil {
			cost.provision = events[0].Time.Sub(c.Created).Seconds()
		}
	}
	return cost
}

// usedBytes is the bytes the db's pages hold (SQLite's dbstat: page size
// minus unused bytes), so that a run's evidence is not rounded to pages.
func usedBytes(b *testing.B, path string) int64 {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var n int64
	if err := db.QueryRow(`SELECT sum(pgsize - unused) FROM dbstat`).Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n
}

func fileSize(b *testing.B, path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return fi.Size()
}

func replaceLine(s, prefix, line string) string {
	out := ""
	for _, l := range splitLines(s) {
		if len(l) > 2 && len(l) >= len(prefix)+2 && l[2:2+len(prefix)] == prefix {
			l = line
		}
		out += l + "\n"
	}
	return out
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// syntheticCampaign registers plans/security-overhead.jsonl (5,184 rows) in
// a db with one done attempt carrying every standard metric per row, plus an
// interrupted and a running attempt, as a long campaign looks mid-way.
func syntheticCampaign(b *testing.B) string {
	b.Helper()
	ctx := context.Background()
	p, err := readPlan(filepath.Join("..", "plans", "security-overhead.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	if len(p.rows) != 5184 {
		b.Fatalf("security-overhead has %d rows, want 5184", len(p.rows))
	}
	db := filepath.Join(b.TempDir(), "synthetic.db")
	s, err := results.Open(ctx, db)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Register(ctx, results.Campaign{Name: "security-overhead", Plan: p.bytes, Target: "local"},
		p.storeRows()); err != nil {
		b.Fatal(err)
	}
	metrics := map[string]float64{}
	for _, m := range []string{"target_rate", "publish_rate", "consume_rate", "published", "consumed", "errors",
		"backlog_max", "drain_s", "client_cpu_s", "client_cpu_us_per_msg", "client_rss_max_mib"} {
		metrics[m] = 1
	}
	for _, prefix := range []string{"publish_ms", "e2e_ms", "send_delay_ms"} {
		for _, k := range percentileKeys {
			metrics[prefix+"_"+k] = 2
		}
	}
	t0 := time.Now().Add(-100 * time.Hour)
	var atts []results.NewAttempt
	done := len(p.rows) * 2 / 3
	for i, r := range p.rows[:done] {
		started := t0.Add(time.Duration(i) * 45 * time.Second)
		outcome := results.OutcomeDone
		if i%50 == 0 {
			outcome = results.OutcomeInvalid
		}
		atts = append(atts, results.NewAttempt{Run: r.Run, Started: started, Evidence: results.Evidence{
			Outcome: outcome, Ended: started.Add(44 * time.Second), Metrics: metrics}})
	}
	atts = append(atts, results.NewAttempt{Run: p.rows[done].Run, Started: time.Now().Add(-time.Minute),
		Evidence: results.Evidence{Outcome: results.OutcomeInterrupted}})
	if _, err := s.RecordAttempts(ctx, atts); err != nil {
		b.Fatal(err)
	}
	if _, err := s.StartAttempt(ctx, p.rows[done].Run, time.Now(), nil); err != nil {
		b.Fatal(err)
	}
	return db
}

// percentileKeys are the suffixes of latency metrics.
var percentileKeys = []string{"p50", "p75", "p90", "p95", "p99", "p999", "p9999", "max", "mean"}
