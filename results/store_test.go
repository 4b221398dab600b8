package results

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as a writer process for the lock tests.
func TestMain(m *testing.M) {
	if path := os.Getenv("XP_RESULTS_TEST_HOLD"); path != "" {
		s, err := Open(context.Background(), path)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		defer s.Close()
		if os.Getenv("XP_RESULTS_TEST_WRITE") != "" {
			ctx := context.Background()
			if _, err := s.Register(ctx, testCampaign("p"), testRows(2)); err != nil {
				fmt.Println("error:", err)
				os.Exit(1)
			}
			if _, err := s.RecordAttempt(ctx, "cell00-r1", time.Now(), nil, Evidence{Outcome: OutcomeDone}); err != nil {
				fmt.Println("error:", err)
				os.Exit(1)
			}
		}
		fmt.Println("locked")
		// Hold the lock until killed.
		select {}
	}
	os.Exit(m.Run())
}

func newStore(t *testing.T) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.db")
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

func testRows(n int) []Row {
	rows := make([]Row, n)
	for i := range rows {
		rows[i] = Row{
			Run: fmt.Sprintf("cell%02d-r1", i), Order: i, Cell: fmt.Sprintf("cell%02d", i),
			Pair: fmt.Sprintf("pair%02d", i/2), Replicate: 1, Block: 1,
			Plan: json.RawMessage(fmt.Sprintf(`{"run":"cell%02d-r1","security":"plaintext"}`, i)),
		}
	}
	return rows
}

func testCampaign(plan string) Campaign {
	return Campaign{Name: "t", Plan: []byte(plan), Target: "local", Seed: 7, XPVersion: "test",
		Host: json.RawMessage(`{"cpus":2}`)}
}

func TestRegister(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	created, err := s.Register(ctx, testCampaign("plan-a"), testRows(3))
	if err != nil || !created {
		t.Fatalf("first Register: created %v, err %v", created, err)
	}
	tests := []struct {
		name        string
		plan        string
		wantCreated bool
		wantErr     error
	}{
		{"same plan again", "plan-a", false, nil},
		{"different plan", "plan-b", false, ErrPlanMismatch},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			created, err := s.Register(ctx, testCampaign(tc.plan), testRows(5))
			if !errors.Is(err, tc.wantErr) || created != tc.wantCreated {
				t.Fatalf("created %v, err %v; want %v, %v", created, err, tc.wantCreated, tc.wantErr)
			}
			rows, err := s.Rows(ctx)
			if err != nil || len(rows) != 3 {
				t.Fatalf("rows %d, err %v; want the 3 registered first", len(rows), err)
			}
		})
	}
	c, err := s.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c.PlanSHA256 != PlanSHA256([]byte("plan-a")) || string(c.Plan) != "plan-a" || c.Seed != 7 ||
		string(c.Host) != `{"cpus":2}` || c.Created.IsZero() {
		t.Fatalf("campaign read back wrong: %+v", c)
	}
}

func TestAttemptLifecycle(t *testing.T) {
	ctx := context.Background()
	s, path := newStore(t)
	if _, err := s.Register(ctx, testCampaign("p"), testRows(2)); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)
	a, err := s.StartAttempt(ctx, "cell00-r1", t0, json.RawMessage(`{"mode":"plaintext"}`))
	if err != nil {
		t.Fatal(err)
	}
	if a.Number != 1 {
		t.Fatalf("first attempt number %d", a.Number)
	}
	if err := s.SetPhase(ctx, a.ID, "measure"); err != nil {
		t.Fatal(err)
	}
	p, err := s.Progress(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p.Rows[Running] != 1 || p.Current == nil || p.Current.Phase != "measure" || p.Current.Run != "cell00-r1" {
		t.Fatalf("progress while running: %+v current %+v", p, p.Current)
	}

	ev := Evidence{
		Outcome: OutcomeInvalid,
		Reasons: []string{"publish rate 90 msg/s is 10% below target 100"},
		Ended:   t0.Add(3 * time.Second),
		Metrics: map[string]float64{"publish_rate": 90, "publish_ms_p99": 1.25},
		Histograms: []Histogram{
			{Kind: KindPublish, Second: WholeRun, Data: []byte{1, 2, 3}},
			{Kind: KindPublish, Second: 0, Data: []byte{4}},
			{Kind: KindE2E, Second: WholeRun, Data: []byte{5, 6}},
		},
		Series:    []SeriesPoint{{0, 90, 90, 0}, {1, 90, 89, 1}},
		Telemetry: []Sample{{Host: "client", TS: t0.Add(time.Second), Metric: "cpu_s", Value: 0.5}},
		Logs:      []Log{{Name: "loadgen", Text: bytes.Repeat([]byte("line\n"), 100)}},
	}
	if err := s.FinishAttempt(ctx, a.ID, ev); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishAttempt(ctx, a.ID, ev); err == nil {
		t.Fatal("finishing an attempt twice succeeded")
	}

	// Read it all back through a read-only store, as analysis does.
	r, err := OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	atts, err := r.Attempts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(atts) != 1 {
		t.Fatalf("%d attempts", len(atts))
	}
	got := atts[0]
	if got.Outcome != OutcomeInvalid || !got.Started.Equal(t0) || !got.Ended.Equal(ev.Ended) ||
		!reflect.DeepEqual(got.Reasons, ev.Reasons) || !reflect.DeepEqual(got.Metrics, ev.Metrics) ||
		string(got.Environment) != `{"mode":"plaintext"}` {
		t.Fatalf("attempt read back wrong: %+v", got)
	}
	hs, err := r.Histograms(ctx, a.ID, KindPublish)
	if err != nil || len(hs) != 2 || hs[0].Second != WholeRun || !bytes.Equal(hs[0].Data, []byte{1, 2, 3}) {
		t.Fatalf("histograms %+v, err %v", hs, err)
	}
	whole, err := r.WholeRunHistogram(ctx, a.ID, KindE2E)
	if err != nil || !bytes.Equal(whole, []byte{5, 6}) {
		t.Fatalf("whole-run e2e %v, err %v", whole, err)
	}
	if none, err := r.WholeRunHistogram(ctx, a.ID, KindSendDelay); none != nil || err != nil {
		t.Fatalf("missing kind: %v, %v", none, err)
	}
	ser, err := r.Series(ctx, a.ID)
	if err != nil || !reflect.DeepEqual(ser, ev.Series) {
		t.Fatalf("series %+v, err %v", ser, err)
	}
	tel, err := r.Telemetry(ctx, a.ID)
	if err != nil || len(tel) != 1 || tel[0].Value != 0.5 || tel[0].TS.Sub(t0.Add(time.Second)).Abs() > time.Microsecond {
		t.Fatalf("telemetry %+v, err %v", tel, err)
	}
	logs, err := r.Logs(ctx, a.ID)
	if err != nil || len(logs) != 1 || !bytes.Equal(logs[0].Text, ev.Logs[0].Text) {
		t.Fatalf("logs %+v, err %v", logs, err)
	}
	rows, err := r.Rows(ctx)
	if err != nil || rows[0].State != Invalid || rows[1].State != Pending {
		t.Fatalf("rows %+v, err %v", rows, err)
	}
	if _, err := r.StartAttempt(ctx, "cell01-r1", t0, nil); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("write through read-only store: %v", err)
	}
}

func TestOutcomeSetsRowState(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		outcome Outcome
		want    State
	}{
		{OutcomeDone, Done},
		{OutcomeInvalid, Invalid},
		{OutcomeFailed, Failed},
		{OutcomeInterrupted, Pending},
	}
	for _, tc := range tests {
		t.Run(string(tc.outcome), func(t *testing.T) {
			s, _ := newStore(t)
			if _, err := s.Register(ctx, testCampaign("p"), testRows(1)); err != nil {
				t.Fatal(err)
			}
			a, err := s.StartAttempt(ctx, "cell00-r1", time.Now(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.FinishAttempt(ctx, a.ID, Evidence{Outcome: tc.outcome}); err != nil {
				t.Fatal(err)
			}
			rows, _ := s.Rows(ctx)
			if rows[0].State != tc.want {
				t.Fatalf("row state %s, want %s", rows[0].State, tc.want)
			}
		})
	}
	t.Run("unknown outcome refused", func(t *testing.T) {
		s, _ := newStore(t)
		s.Register(ctx, testCampaign("p"), testRows(1))
		a, _ := s.StartAttempt(ctx, "cell00-r1", time.Now(), nil)
		if err := s.FinishAttempt(ctx, a.ID, Evidence{Outcome: "great"}); err == nil {
			t.Fatal("unknown outcome accepted")
		}
		rows, _ := s.Rows(ctx)
		if rows[0].State != Running {
			t.Fatalf("a refused finish changed the row to %s", rows[0].State)
		}
	})
	t.Run("unknown run refused", func(t *testing.T) {
		s, _ := newStore(t)
		s.Register(ctx, testCampaign("p"), testRows(1))
		if _, err := s.StartAttempt(ctx, "nope", time.Now(), nil); err == nil {
			t.Fatal("attempt of an unknown run accepted")
		}
	})
}

func TestReconcileInterrupted(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	s.Register(ctx, testCampaign("p"), testRows(3))
	a1, _ := s.StartAttempt(ctx, "cell00-r1", time.Now(), nil)
	s.FinishAttempt(ctx, a1.ID, Evidence{Outcome: OutcomeDone})
	a2, _ := s.StartAttempt(ctx, "cell01-r1", time.Now(), nil)
	n, err := s.ReconcileInterrupted(ctx, time.Now())
	if err != nil || n != 1 {
		t.Fatalf("reconciled %d, err %v; want 1", n, err)
	}
	atts, _ := s.RunAttempts(ctx, "cell01-r1")
	if len(atts) != 1 || atts[0].ID != a2.ID || atts[0].Outcome != OutcomeInterrupted || atts[0].Ended.IsZero() {
		t.Fatalf("attempt after reconcile: %+v", atts)
	}
	a3, err := s.StartAttempt(ctx, "cell01-r1", time.Now(), nil)
	if err != nil || a3.Number != 2 {
		t.Fatalf("next attempt number %d, err %v; want 2", a3.Number, err)
	}
	counts, err := s.AttemptCounts(ctx)
	if err != nil || counts["cell00-r1"][OutcomeDone] != 1 || counts["cell01-r1"][OutcomeInterrupted] != 1 {
		t.Fatalf("counts %v, err %v", counts, err)
	}
	p, _ := s.Progress(ctx)
	if p.Rows[Done] != 1 || p.Rows[Running] != 1 || p.Rows[Pending] != 1 || p.Total != 3 ||
		p.Attempts[OutcomeInterrupted] != 1 || p.Attempts[""] != 1 {
		t.Fatalf("progress %+v", p)
	}
}

func TestRecordAttemptForImport(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	s.Register(ctx, testCampaign("imported.csv"), testRows(2))
	a, err := s.RecordAttempt(ctx, "cell01-r1", time.Now(), nil,
		Evidence{Outcome: OutcomeDone, Metrics: map[string]float64{"publish_ms_p50": 2}})
	if err != nil {
		t.Fatal(err)
	}
	atts, _ := s.RunAttempts(ctx, "cell01-r1")
	if len(atts) != 1 || atts[0].ID != a.ID || atts[0].Metrics["publish_ms_p50"] != 2 {
		t.Fatalf("imported attempt %+v", atts)
	}
	rows, _ := s.Rows(ctx)
	if rows[1].State != Done {
		t.Fatalf("row state %s", rows[1].State)
	}
}

func TestRecordAttemptsAllOrNothing(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	s.Register(ctx, testCampaign("p"), testRows(3))
	ok := NewAttempt{Run: "cell00-r1", Started: time.Now(), Evidence: Evidence{Outcome: OutcomeDone}}
	bad := NewAttempt{Run: "no-such-run", Started: time.Now(), Evidence: Evidence{Outcome: OutcomeDone}}
	if _, err := s.RecordAttempts(ctx, []NewAttempt{ok, bad}); err == nil {
		t.Fatal("a batch with an unknown run was stored")
	}
	if has, _ := s.HasProgress(ctx); has {
		t.Fatal("a failed batch left attempts behind")
	}
	two := ok
	two.Run = "cell02-r1"
	atts, err := s.RecordAttempts(ctx, []NewAttempt{ok, two})
	if err != nil || len(atts) != 2 {
		t.Fatalf("batch: %v, %v", atts, err)
	}
	p, _ := s.Progress(ctx)
	if p.Rows[Done] != 2 || p.Rows[Pending] != 1 {
		t.Fatalf("rows after batch %v", p.Rows)
	}
}

func TestInfraEvents(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	s.Register(ctx, testCampaign("p"), testRows(1))
	s.AddInfraEvent(ctx, InfraEvent{Event: "up", Group: "g1"})
	s.AddInfraEvent(ctx, InfraEvent{Event: "down", Group: "g1", Cost: 1.5})
	s.AddInfraEvent(ctx, InfraEvent{Event: "up", Group: "g2", Outputs: json.RawMessage(`{"hosts":["a"]}`), Cost: 0.25})
	// Services restarted on a group that stays up.
	s.AddInfraEvent(ctx, InfraEvent{Event: "up", Group: "g4", HourlyUSD: 0.5})
	s.AddInfraEvent(ctx, InfraEvent{Event: "up", Group: "g4", Outputs: json.RawMessage(`{"hosts":["a"]}`)})
	s.AddInfraEvent(ctx, InfraEvent{Event: "restart", Group: "g4", Outputs: json.RawMessage(`{"hosts":["b"]}`)})
	s.AddInfraEvent(ctx, InfraEvent{Event: "up", Group: "g5"})
	s.AddInfraEvent(ctx, InfraEvent{Event: "restart-failed", Group: "g5", Error: "broker-1 did not start"})
	p, err := s.Progress(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.InfraUp) != 3 || p.InfraUp[0].Group != "g2" || p.InfraUp[1].Group != "g4" || p.InfraUp[2].Group != "g5" ||
		p.InfraUp[1].Event != "up" || p.InfraUp[1].HourlyUSD != 0.5 || string(p.InfraUp[1].Outputs) != `{"hosts":["b"]}` ||
		p.Cost != 1.75 {
		t.Fatalf("infra up %+v cost %v", p.InfraUp, p.Cost)
	}

	// A Terraform step's timing, error and price read back as written.
	started := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	want := InfraEvent{Event: "apply-failed", Group: "g3", Time: started.Add(1500 * time.Millisecond),
		Started: started, Duration: 1500 * time.Millisecond, Error: "Error: Invalid value for variable", HourlyUSD: 0.576}
	if _, err := s.AddInfraEvent(ctx, want); err != nil {
		t.Fatal(err)
	}
	events, err := s.InfraEvents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := events[len(events)-1]
	if !got.Started.Equal(want.Started) || !got.Time.Equal(want.Time) || got.Duration != want.Duration ||
		got.Error != want.Error || got.HourlyUSD != want.HourlyUSD || got.Event != want.Event {
		t.Fatalf("event read back %+v, want %+v", got, want)
	}
	if !events[0].Started.IsZero() || events[0].Error != "" {
		t.Fatalf("an event without timing reads back %+v", events[0])
	}
}

func TestOpenRefuses(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	newer := filepath.Join(dir, "newer.db")
	{
		s, err := Open(ctx, newer)
		if err != nil {
			t.Fatal(err)
		}
		s.db.Exec(`INSERT INTO schema_version (version, applied) VALUES (?, 'future')`, SchemaVersion+1)
		s.Close()
	}
	foreign := filepath.Join(dir, "foreign.db")
	{
		db, err := sql.Open("sqlite", foreign)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`CREATE TABLE x (a)`); err != nil {
			t.Fatal(err)
		}
		db.Close()
	}
	readOnlyDir := filepath.Join(dir, "ro")
	os.Mkdir(readOnlyDir, 0o555)
	tests := []struct {
		name     string
		path     string
		want     error  // errors.Is target, or nil to check the message only
		contains string // in the message
	}{
		{"newer schema", newer, ErrNewerSchema, fmt.Sprintf("schema version %d", SchemaVersion+1)},
		{"not a campaign", foreign, ErrNotCampaign, "foreign.db"},
		{"missing directory", filepath.Join(dir, "no", "such", "c.db"), nil, "does not exist"},
		{"directory as db", dir, nil, "is a directory"},
		{"parent is a file", filepath.Join(foreign, "c.db"), nil, "cannot write campaign database"},
	}
	if os.Geteuid() != 0 { // root writes anywhere
		tests = append(tests, struct {
			name     string
			path     string
			want     error
			contains string
		}{"unwritable directory", filepath.Join(readOnlyDir, "c.db"), nil, "no write permission"})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := snapshot(t, filepath.Dir(tc.path))
			s, err := Open(ctx, tc.path)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.contains) {
				t.Fatalf("message %q does not contain %q", err, tc.contains)
			}
			if after := snapshot(t, filepath.Dir(tc.path)); !reflect.DeepEqual(before, after) {
				t.Fatalf("a refused Open changed files:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
	t.Run("read-only open of a missing file", func(t *testing.T) {
		_, err := OpenReadOnly(ctx, filepath.Join(dir, "missing.db"))
		if !errors.Is(err, ErrNoDatabase) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("read-only open of a file that is not SQLite", func(t *testing.T) {
		text := filepath.Join(t.TempDir(), "plan.jsonl")
		os.WriteFile(text, []byte(`{"campaign":"c"}`+"\n"), 0o644)
		before := snapshot(t, filepath.Dir(text))
		_, err := OpenReadOnly(ctx, text)
		if !errors.Is(err, ErrNotCampaign) || !strings.Contains(err.Error(), text) {
			t.Fatalf("err %v, want %v naming %s", err, ErrNotCampaign, text)
		}
		if after := snapshot(t, filepath.Dir(text)); !reflect.DeepEqual(before, after) {
			t.Fatalf("a refused read changed files:\nbefore %v\nafter  %v", before, after)
		}
	})
}

// snapshot maps each file in dir to its size and modification time.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			continue
		}
		out[e.Name()] = fmt.Sprintf("%d %s", fi.Size(), fi.ModTime().Format(time.RFC3339Nano))
	}
	return out
}

func TestSecondWriterRefused(t *testing.T) {
	ctx := context.Background()
	s, path := newStore(t)
	_, err := Open(ctx, path)
	var le *LockedError
	if !errors.As(err, &le) || !errors.Is(err, ErrLocked) || le.PID != os.Getpid() {
		t.Fatalf("second writer: %v", err)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("message does not name the holder: %v", err)
	}
	// Readers are never refused.
	r, err := OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatalf("reader while writing: %v", err)
	}
	r.Close()
	s.Close()
	if _, err := os.Stat(path + ".lock"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("lock file after a clean Close: %v", err)
	}
	s2, err := Open(ctx, path)
	if err != nil {
		t.Fatalf("writer after Close: %v", err)
	}
	s2.Close()
}

// A writer killed with SIGKILL leaves its lock file and pid behind; the next
// writer must not be blocked by them.
func TestLockOfKilledWriterIsNotStale(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "XP_RESULTS_TEST_HOLD="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, _ := out.Read(buf) // blocks until the child prints
	if !strings.Contains(string(buf[:n]), "locked") {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child: %q", buf[:n])
	}
	_, err = Open(ctx, path)
	var le *LockedError
	if !errors.As(err, &le) || le.PID != cmd.Process.Pid {
		t.Fatalf("while the child holds it: %v (child pid %d)", err, cmd.Process.Pid)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatalf("after SIGKILL of the holder: %v", err)
	}
	s.Close()
}

func TestIntegrityCheck(t *testing.T) {
	s, _ := newStore(t)
	r, err := s.IntegrityCheck(context.Background())
	if err != nil || r != "ok" {
		t.Fatalf("integrity_check %q, %v", r, err)
	}
}

// OpenChecked sees the commits a killed writer left in the WAL, and a
// refusing check leaves the database and its directory as they were.
func TestOpenCheckedAfterKilledWriter(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "c.db")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "XP_RESULTS_TEST_HOLD="+path, "XP_RESULTS_TEST_WRITE=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, _ := out.Read(buf)
	if !strings.Contains(string(buf[:n]), "locked") {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child: %q", buf[:n])
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() == 0 {
		t.Fatalf("the killed writer left no WAL to read through (%v)", err)
	}

	refuse := errors.New("refused by the check")
	var seen Peek
	before := snapshot(t, dir)
	_, err = OpenChecked(ctx, path, func(p Peek) error { seen = p; return refuse })
	if !errors.Is(err, refuse) {
		t.Fatalf("err %v", err)
	}
	if !seen.Campaign || seen.Attempts != 1 || seen.Rows[Done] != 1 || seen.Rows[Pending] != 1 ||
		seen.PlanSHA256 != PlanSHA256([]byte("p")) {
		t.Fatalf("peek %+v misses the killed writer's commits", seen)
	}
	after := snapshot(t, dir)
	// The killed writer's lock file goes with the refused open's release;
	// the -shm wal-index is rebuilt by any reader (its content is derived).
	for _, m := range []map[string]string{before, after} {
		delete(m, "c.db.lock")
		delete(m, "c.db-shm")
	}
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("a refused open changed files:\nbefore %v\nafter  %v", before, after)
	}

	s, err := OpenChecked(ctx, path, func(p Peek) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if p, err := s.Progress(ctx); err != nil || p.Rows[Done] != 1 {
		t.Fatalf("progress after reopening %+v, %v", p, err)
	}
}

// TestSupersede: the latest finished attempt of each run is marked, kept,
// and its row goes back to pending; an interrupted or failed attempt is
// never marked.
func TestSupersede(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows := []Row{{Run: "a-r1", Order: 1, Cell: "a", Pair: "p", Replicate: 1, Block: 1},
		{Run: "b-r1", Order: 2, Cell: "b", Pair: "p", Replicate: 1, Block: 1}}
	if _, err := s.Register(ctx, Campaign{Name: "c", Plan: []byte("x")}, rows); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	s.RecordAttempt(ctx, "a-r1", now, nil, Evidence{Outcome: OutcomeDone, Metrics: map[string]float64{"m": 1}})
	s.RecordAttempt(ctx, "b-r1", now, nil, Evidence{Outcome: OutcomeInterrupted})
	n, err := s.Supersede(ctx, []string{"a-r1", "b-r1"}, "set left partial")
	if err != nil || n != 1 {
		t.Fatalf("superseded %d, %v; want 1", n, err)
	}
	atts, _ := s.Attempts(ctx)
	if atts[0].Superseded != "set left partial" || atts[0].Outcome != OutcomeDone || atts[0].Metrics["m"] != 1 || atts[1].Superseded != "" {
		t.Fatalf("attempts %+v", atts)
	}
	got, _ := s.Rows(ctx)
	if got[0].State != Pending || got[1].State != Pending {
		t.Fatalf("rows %+v", got)
	}
}

// TestReadOnlyLeavesNoSidecars: reading a sound database that had no -wal
// or -shm (its writer closed cleanly) leaves none behind and does not
// change the file; while a writer has the database open, a reader's close
// leaves the writer's -wal and -shm alone.
func TestReadOnlyLeavesNoSidecars(t *testing.T) {
	ctx := context.Background()
	s, path := newStore(t)
	if _, err := s.Register(ctx, testCampaign("p"), testRows(2)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(path)
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	if _, ok := before["c.db-wal"]; ok {
		t.Fatalf("a clean close left a WAL: %v", before)
	}

	read := func() {
		t.Helper()
		r, err := OpenReadOnly(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		if p, err := r.Peek(ctx); err != nil || !p.Campaign || p.Rows[Pending] != 2 {
			t.Fatalf("peek %+v, %v", p, err)
		}
		if _, err := os.Stat(path + "-shm"); err != nil {
			t.Fatalf("the reader made no -shm, so this test shows nothing: %v", err)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	read()
	if after := snapshot(t, dir); !reflect.DeepEqual(before, after) {
		t.Fatalf("reading changed the directory:\nbefore %v\nafter  %v", before, after)
	}
	if b, _ := os.ReadFile(path); !bytes.Equal(b, whole) {
		t.Fatal("reading changed the database file")
	}

	// A writer is at work: its sidecars stay.
	w, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Peek(ctx); err != nil {
		t.Fatal(err)
	}
	read()
	for _, f := range []string{path + "-wal", path + "-shm"} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("a reader's close removed the writer's %s: %v", filepath.Base(f), err)
		}
	}
}

// TestReadOnlyOlderSchema: a read-only store reads a database of schema
// ReadableSince (4: without the telemetry index of 5) as it is, leaving it
// unchanged; an older one is refused with ErrOlderSchema and a message that
// says how to migrate, and the next writer migrates it.
func TestReadOnlyOlderSchema(t *testing.T) {
	ctx := context.Background()
	s, path := newStore(t)
	if _, err := s.Register(ctx, testCampaign("p"), testRows(2)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	exec := func(stmts ...string) {
		t.Helper()
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		for _, q := range stmts {
			if _, err := db.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	// Schema 4 is 5 with telemetry_attempt instead of telemetry_series,
	// and 5 is 6 without the two-stage tables.
	exec(`DROP TABLE two_stage`, `DROP TABLE stage_decision`, `DROP INDEX telemetry_series`, `CREATE INDEX telemetry_attempt ON telemetry (attempt)`,
		`DELETE FROM schema_version WHERE version >= 5`)
	whole, _ := os.ReadFile(path)
	r, err := OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatalf("schema 4 read-only: %v", err)
	}
	if p, err := r.Peek(ctx); err != nil || p.Rows[Pending] != 2 {
		t.Fatalf("peek %+v, %v", p, err)
	}
	if _, err := r.Attempts(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := r.ReadTwoStage(ctx); ok || err != nil {
		t.Fatalf("two-stage design of a schema 4 database: %v, %v", ok, err)
	}
	r.Close()
	if b, _ := os.ReadFile(path); !bytes.Equal(b, whole) {
		t.Fatal("reading a schema 4 database changed it")
	}

	// Schema 3 lacks a column analysis reads.
	exec(`ALTER TABLE attempt DROP COLUMN superseded`, `DELETE FROM schema_version WHERE version = 4`)
	_, err = OpenReadOnly(ctx, path)
	if !errors.Is(err, ErrOlderSchema) || errors.Is(err, ErrNewerSchema) ||
		!strings.Contains(err.Error(), "schema version 3, older than this xp's 6") || !strings.Contains(err.Error(), "--resume") {
		t.Fatalf("schema 3 read-only: %v", err)
	}
	w, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	r, err = OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatalf("after the writer's migration: %v", err)
	}
	defer r.Close()
	var idx []string
	rows, err := r.db.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'telemetry' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		rows.Scan(&n)
		idx = append(idx, n)
	}
	rows.Close()
	if !reflect.DeepEqual(idx, []string{"telemetry_series"}) {
		t.Fatalf("telemetry's indexes after migrating: %v, want telemetry_series alone", idx)
	}
	if p, err := r.Peek(ctx); err != nil || p.Rows[Pending] != 2 {
		t.Fatalf("peek after migration %+v, %v", p, err)
	}
}

// TestTwoStageRecorded: a two-stage design is recorded once (asking for a
// different one fails), its second stage is appended with its decisions
// in one transaction, only once, and reads back.
func TestTwoStageRecorded(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows := []Row{{Run: "a-r1", Order: 1, Cell: "a", Pair: "p", Replicate: 1, Block: 1, Plan: json.RawMessage(`{}`)},
		{Run: "b-r1", Order: 2, Cell: "b", Pair: "p", Replicate: 1, Block: 1, Plan: json.RawMessage(`{}`)}}
	if _, err := s.Register(ctx, Campaign{Name: "c", Plan: []byte("plan")}, rows); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.ReadTwoStage(ctx); ok || err != nil {
		t.Fatalf("before: %v, %v", ok, err)
	}
	ts := TwoStage{HalfWidth: 2, Metric: "publish_ms_p99", Confidence: 0.95, MaxReplicates: 10, FirstStage: 1}
	if err := s.SetTwoStage(ctx, ts); err != nil {
		t.Fatal(err)
	}
	if err := s.SetTwoStage(ctx, ts); err != nil {
		t.Fatalf("the same design again: %v", err)
	}
	other := ts
	other.HalfWidth = 3
	if err := s.SetTwoStage(ctx, other); !errors.Is(err, ErrTwoStageMismatch) || !strings.Contains(err.Error(), "half-width 2%") {
		t.Fatalf("a different design: %v", err)
	}
	dec := []StageDecision{{Pair: "p", Treatment: "b", Sets: 1, SD: math.NaN(), Needed: 0, Replicates: 2}}
	more := []Row{{Run: "b-r2", Order: 3, Cell: "b", Pair: "p", Replicate: 2, Block: 2, Plan: json.RawMessage(`{}`)},
		{Run: "a-r2", Order: 4, Cell: "a", Pair: "p", Replicate: 2, Block: 2, Plan: json.RawMessage(`{}`)}}
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := s.AppendStage(ctx, at, dec, more); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendStage(ctx, at, dec, more); err == nil {
		t.Fatal("a second stage appended twice")
	}
	got, ok, err := s.ReadTwoStage(ctx)
	if err != nil || !ok || !got.Decided.Equal(at) || len(got.Decisions) != 1 || got.Decisions[0].Replicates != 2 || !math.IsNaN(got.Decisions[0].SD) {
		t.Fatalf("read back %+v, %v, %v", got, ok, err)
	}
	all, err := s.Rows(ctx)
	if err != nil || len(all) != 4 || all[3].Run != "a-r2" || all[3].State != Pending || got.Stage(all[3].Replicate) != 2 {
		t.Fatalf("rows %+v, %v", all, err)
	}
}

// TestInfraEventsReadOlderGroupKeys: a group key an earlier xp recorded
// with the rows' kafka_version as "kafka=V" reads as "kafka_version=V", so
// a group brought up then and taken down now is one group (up, then down,
// costed once); the db keeps the text it holds.
func TestInfraEventsReadOlderGroupKeys(t *testing.T) {
	ctx := context.Background()
	s, path := newStore(t)
	s.Register(ctx, testCampaign("p"), testRows(1))
	s.AddInfraEvent(ctx, InfraEvent{Event: "up", Group: "aws/m5.xlarge brokers=3 kafka=3.9.1 gateways=1 builtin", HourlyUSD: 0.5})
	s.AddInfraEvent(ctx, InfraEvent{Event: "down", Group: "aws/m5.xlarge brokers=3 kafka_version=3.9.1 gateways=1 builtin", Cost: 2})
	events, err := s.InfraEvents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if e.Group != "aws/m5.xlarge brokers=3 kafka_version=3.9.1 gateways=1 builtin" {
			t.Errorf("%s event's group reads %q", e.Event, e.Group)
		}
	}
	p, err := s.Progress(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.InfraUp) != 0 || p.Cost != 2 {
		t.Errorf("after the older up and the newer down: up %+v cost %v, want nothing up, cost 2", p.InfraUp, p.Cost)
	}
	var raw string
	if err := s.db.QueryRowContext(ctx, `SELECT group_key FROM infra ORDER BY id LIMIT 1`).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if raw != "aws/m5.xlarge brokers=3 kafka=3.9.1 gateways=1 builtin" {
		t.Errorf("the db's first group_key is %q, want what was written (%s)", raw, path)
	}
}
