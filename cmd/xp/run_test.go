package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/results"
)

const cmdTestSpec = `campaign: cmdtest
seed: 3
replicates: 1
treatment: security
baseline: plaintext
factors:
  security: [plaintext, tls]
fixed:
  platform: local
  brokers: 1
  message_size: 128
  acks: all
  target_rate: 100
  warmup_s: 1
  duration_s: 1
  drain_timeout_s: 5
`

func writeCmdPlan(t *testing.T, dir string) string {
	t.Helper()
	s, err := planner.ParseSpec("cmdtest.yaml", []byte(cmdTestSpec))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := planner.Expand(s, &buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "cmdtest.jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRunHalfWidthBadInput: a two-stage design that cannot be is refused
// with exit 2 before anything is written.
func TestRunHalfWidthBadInput(t *testing.T) {
	dir := t.TempDir()
	plan := writeCmdPlan(t, dir)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--halfwidth", "two"}, `--halfwidth "two": want a positive half-width in percent`},
		{[]string{"--halfwidth", "-1%"}, "want a positive half-width"},
		{[]string{"--max-replicates", "6"}, "give --halfwidth too"},
		{[]string{"--halfwidth", "2%"}, "needs a first stage of 2 or more replicates"},
	} {
		code, _, stderr := runXP(t, append([]string{"run", plan}, c.args...)...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %s; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "cmdtest.db")); !os.IsNotExist(err) {
		t.Errorf("bad input left a db: %v", err)
	}
}

func TestRunAndStatusExitCodes(t *testing.T) {
	dir := t.TempDir()
	plan := writeCmdPlan(t, dir)
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string // substring
		stderr string // substring
	}{
		{"run without a plan", []string{"run"}, exitUsage, "", "accepts 1 arg"},
		{"run missing plan", []string{"run", filepath.Join(dir, "nope.jsonl")}, exitUsage, "", "no such file"},
		{"run bad flag", []string{"run", plan, "--max-attempts", "x"}, exitUsage, "", "max-attempts"},
		{"run on aws without a kafka section", []string{"run", plan, "--target", writeRunFile(t, dir, "aws.yaml", "platform: aws\n")},
			exitUsage, "", "kafka.distribution is missing: want embedded or the URL of an Apache Kafka release tarball"},
		{"dry run", []string{"run", plan, "--dry-run"}, exitOK, "would run 2 rows", ""},
		{"status of a missing db", []string{"status", "--db", filepath.Join(dir, "nope.db")}, exitUsage, "", "no campaign database"},
		{"status with an argument", []string{"status", "x"}, exitUsage, "", "the db is given as --db, not as an argument: xp status --db x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runXP(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, tc.code, stderr)
			}
			if !strings.Contains(stdout, tc.stdout) || !strings.Contains(stderr, tc.stderr) {
				t.Fatalf("stdout %q (want %q), stderr %q (want %q)", stdout, tc.stdout, stderr, tc.stderr)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "cmdtest.db")); !os.IsNotExist(err) {
		t.Fatalf("refused and dry runs created the db: %v", err)
	}
}

func writeRunFile(t testing.TB, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestStatusJSON(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := filepath.Join(dir, "c.db")
	s, err := results.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	rows := []results.Row{{Run: "a-r1", Order: 1, Plan: json.RawMessage(`{"security":"plaintext"}`)},
		{Run: "b-r1", Order: 2, Plan: json.RawMessage(`{"security":"tls"}`)},
		{Run: "c-r1", Order: 3, Plan: json.RawMessage(`{"security":"mtls"}`)}}
	if _, err := s.Register(ctx, results.Campaign{Name: "c", Plan: []byte("p"), Target: "local"}, rows); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().Add(-time.Minute)
	s.RecordAttempt(ctx, "a-r1", t0, nil, results.Evidence{Outcome: results.OutcomeDone, Ended: t0.Add(10 * time.Second)})
	s.RecordAttempt(ctx, "b-r1", t0, nil, results.Evidence{Outcome: results.OutcomeInvalid, Ended: t0.Add(20 * time.Second),
		Reasons: []string{"slow"}})
	a, _ := s.StartAttempt(ctx, "c-r1", time.Now(), nil)
	s.SetPhase(ctx, a.ID, "measure")
	s.Close() // the running attempt stays, as after a kill

	code, stdout, stderr := runXP(t, "status", "--db", db, "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var st struct {
		Campaign string         `json:"campaign"`
		Rows     map[string]int `json:"rows"`
		Attempts map[string]int `json:"attempts"`
		Current  *struct {
			Run   string `json:"run"`
			Phase string `json:"phase"`
		} `json:"current"`
		ETAS     *float64 `json:"eta_s"`
		LeftS    *float64 `json:"left_s"`
		Finished bool     `json:"finished"`
		Writer   int      `json:"writer_pid"`
	}
	if err := json.Unmarshal([]byte(stdout), &st); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	wantRows := map[string]int{"total": 3, "pending": 0, "running": 1, "done": 1, "invalid": 1, "failed": 0}
	for k, v := range wantRows {
		if st.Rows[k] != v {
			t.Errorf("rows.%s = %d, want %d", k, st.Rows[k], v)
		}
	}
	if st.Attempts["total"] != 3 || st.Attempts["running"] != 1 || st.Current == nil || st.Current.Run != "c-r1" ||
		st.Current.Phase != "measure" || st.LeftS == nil || *st.LeftS != 15 || st.ETAS != nil || st.Finished || st.Writer != 0 {
		t.Fatalf("status %s", stdout)
	}

	code, stdout, _ = runXP(t, "status", "--db", db)
	// No xp process runs it: no countdown, but the work left.
	if code != exitOK || !strings.Contains(stdout, "3 total: 1 done, 1 invalid") ||
		!strings.Contains(stdout, "left running by a process that ended") ||
		!strings.Contains(stdout, "eta        none: not running; 1 rows left, about 15s of runs") {
		t.Fatalf("text status (exit %d):\n%s", code, stdout)
	}
}
