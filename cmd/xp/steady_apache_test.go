package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/xp-bench/xp/infra/local/kafkaproc"
	"github.com/xp-bench/xp/internal/disttest"
)

// TestWarmupAndOverloadOnApacheKafka runs, on one Apache Kafka 4.x broker
// from out/dist, plaintext and tls at a gentle 500 msg/s and plaintext at
// 500,000 msg/s of 1 KiB records (500 MB/s, which one broker on this
// machine cannot take), each for 5 s. The group's warm-up, after the broker
// started, is recorded with its length, its load on both modes (the gentle
// rows, not the overloaded one) and whether the cluster was warm within
// the cap; the overloaded row is invalid as overloaded, the gentle rows are
// done.
//
// It does not run in parallel: it asserts that gentle rows come out steady,
// which other tests' JVMs starting beside it would not let hold.
func TestWarmupAndOverloadOnApacheKafka(t *testing.T) {
	r4 := disttest.Kafka(t, 4)
	dir := t.TempDir()
	tgt := apacheTarget(t, dir, r4)
	plan := expandSpec(t, dir, "overload", fmt.Sprintf(`campaign: overload
seed: 34
treatment: security
baseline: plaintext
factors:
  security: [plaintext, tls]
  target_rate: [500, 500000]
fixed: {platform: local, brokers: 1, message_size: 1024, acks: all, kafka_version: %s, warmup_s: 1, duration_s: 5, drain_timeout_s: 5}
exclude:
  - {security: tls, target_rate: 500000}
`, r4.Version))
	db := filepath.Join(dir, "overload.db")
	code, _, stderr := runXPEnv(t, nil, "run", plan, "--db", db, "--target", tgt, "--warmup-cap", "30s")
	if code != exitInvalidRuns {
		t.Fatalf("xp run: exit %d, want %d (the overloaded row invalid)\n%s", code, exitInvalidRuns, stderr)
	}
	if !strings.Contains(stderr, "phase=cluster-warmup group=\"local brokers=1 apache="+r4.Version) {
		t.Errorf("the run log has no warm-up line naming apache %s:\n%s", r4.Version, stderr)
	}
	raw, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var started, outputs, errText string
	var seconds float64
	if err := raw.QueryRow(`SELECT started, duration_s, outputs, error FROM infra WHERE event = 'warmup'`).Scan(&started, &seconds, &outputs, &errText); err != nil {
		t.Fatalf("no warm-up event: %v", err)
	}
	var rec struct {
		Stable bool    `json:"stable"`
		LoadS  int     `json:"load_s"`
		CapS   float64 `json:"cap_s"`
		Modes  []struct {
			Mode    string            `json:"mode"`
			Rate    string            `json:"target_rate"`
			Seconds []json.RawMessage `json:"seconds"`
		} `json:"modes"`
	}
	if err := json.Unmarshal([]byte(outputs), &rec); err != nil {
		t.Fatal(err)
	}
	if started == "" || seconds < 6 || errText != "" || rec.LoadS < 6 || rec.LoadS > 30 || rec.CapS != 30 || len(rec.Modes) != 2 {
		t.Errorf("warm-up: started %q, %.1f s, error %q, record %+v: want at least a 6 s round on both modes within the 30 s cap", started, seconds, errText, rec)
	}
	for _, m := range rec.Modes {
		if m.Rate != "500" || len(m.Seconds) != rec.LoadS {
			t.Errorf("warm-up of %s: rate %s, %d seconds of %d: want the gentle row's load every second", m.Mode, m.Rate, len(m.Seconds), rec.LoadS)
		}
	}
	t.Logf("warm-up: %.1f s, %d s of load, warm %v", seconds, rec.LoadS, rec.Stable)

	rows, err := raw.Query(`SELECT json_extract(r.plan_row, '$.security'), json_extract(r.plan_row, '$.target_rate'), a.outcome, a.reasons
		FROM attempt a JOIN row r ON r.run = a.run`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var sec, outcome, reasons string
		var rate int64
		if err := rows.Scan(&sec, &rate, &outcome, &reasons); err != nil {
			t.Fatal(err)
		}
		n++
		switch {
		case rate == 500000 && (outcome != "invalid" || !strings.Contains(reasons, `"overloaded: `)):
			t.Errorf("%s at %d msg/s: %s %s, want invalid as overloaded", sec, rate, outcome, reasons)
		case rate == 500 && outcome != "done":
			t.Errorf("%s at %d msg/s after the warm-up: %s %s, want done", sec, rate, outcome, reasons)
		}
	}
	if n != 3 {
		t.Errorf("%d attempts, want 3", n)
	}
	if left, _ := kafkaproc.Leftovers(db + ".work"); len(left) > 0 {
		t.Errorf("broker JVMs %v left after xp run", left)
	}
}
