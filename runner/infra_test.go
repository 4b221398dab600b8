package runner

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xp-bench/xp/analysis"
	"github.com/xp-bench/xp/infra/local/localtarget"
	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/results"
	"github.com/xp-bench/xp/runner/loadgen"
)

// scripted is the real local target with scripted failures at the seam:
// the first Up calls of the campaign's first group fail with upErrs,
// Restart fails with restartErr, and the first group's tls loads fail
// before they start when failTLS; the first load of each row in failOnce
// fails. What runs, runs on the real embedded cluster.
type scripted struct {
	*localtarget.Target
	upErrs     []error
	restartErr error
	failTLS    bool
	failOnce   map[string]bool

	mu            sync.Mutex
	first         *planner.InfraKey
	ups, restarts int
}

func (s *scripted) Up(ctx context.Context, g target.Group) (target.Endpoints, error) {
	s.mu.Lock()
	s.ups++
	if s.first == nil {
		s.first = &g.Key
	}
	var err error
	if g.Key == *s.first && len(s.upErrs) > 0 {
		err, s.upErrs = s.upErrs[0], s.upErrs[1:]
	}
	s.mu.Unlock()
	if err != nil {
		return target.Endpoints{}, err
	}
	return s.Target.Up(ctx, g)
}

func (s *scripted) Restart(ctx context.Context, g target.Group) (target.Endpoints, error) {
	s.mu.Lock()
	s.restarts++
	s.mu.Unlock()
	if s.restartErr != nil {
		return target.Endpoints{}, s.restartErr
	}
	return s.Target.Restart(ctx, g)
}

func (s *scripted) RunLoad(ctx context.Context, l target.Load) (*loadgen.Result, error) {
	s.mu.Lock()
	fail := !l.Warmup && (s.failTLS && l.Row.InfraKey() == *s.first && l.Row.Security == "tls" || s.failOnce[l.Row.Run])
	if !l.Warmup {
		delete(s.failOnce, l.Row.Run)
	}
	s.mu.Unlock()
	if fail {
		return nil, errors.New("load refused by the test")
	}
	return s.Target.RunLoad(ctx, l)
}

// transientByMethod is transient by its Transient method, as errors of
// other packages may be.
type transientByMethod struct{}

func (transientByMethod) Error() string   { return "host not reachable yet" }
func (transientByMethod) Transient() bool { return true }

// twoGroups is plaintext and tls on one broker and on two: two groups of
// two short rows.
func twoGroups(name string) string {
	spec := smallSpec(name, []string{"plaintext", "tls"}, 1)
	spec = strings.Replace(spec, "  brokers: 1\n", "", 1)
	return short(strings.Replace(spec, "factors:\n", "factors:\n  brokers: [1, 2]\n", 1))
}

// short makes smallSpec's rows shorter: no warm-up, one second measured.
func short(spec string) string {
	return strings.Replace(spec, "  warmup_s: 1\n  duration_s: 2\n", "  warmup_s: 0\n  duration_s: 1\n", 1)
}

// TestTargetFailuresPolicy: transient Up errors are retried with backoff
// (through the injected Sleep: nothing here waits), permanent ones and
// exhausted retries fail the group's rows with the reason and the
// campaign goes on to the next group; a failed attempt restarts the
// services and a restart that fails for good fails the group's remaining
// rows.
func TestTargetFailuresPolicy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		s     *scripted
		tries int
		// want
		err         error
		sleeps      []time.Duration
		ups         int
		restarts    int
		failedWith  string // error of every failed row's last attempt
		failedRows  int
		events1     []string // infra events of the first group
		interrupted bool
	}{
		{name: "transient errors retried then up",
			s:     &scripted{upErrs: []error{target.Transient(errors.New("rate limited")), transientByMethod{}}},
			tries: 4, sleeps: []time.Duration{10 * time.Millisecond, 15 * time.Millisecond}, ups: 4,
			events1: []string{"up-failed", "up-failed", "up", "warmup", "down"}},
		{name: "permanent error fails the group, the next one runs",
			s:     &scripted{upErrs: []error{errors.New("invalid value for variable region")}},
			tries: 4, err: ErrUnfinished, ups: 2, failedRows: 2,
			failedWith: "permanent error): invalid value for variable region",
			events1:    []string{"up-failed"}},
		{name: "transient errors past the bound fail the group",
			s: &scripted{upErrs: []error{target.Transient(errors.New("capacity")), target.Transient(errors.New("capacity")),
				target.Transient(errors.New("capacity"))}},
			tries: 3, err: ErrUnfinished, sleeps: []time.Duration{10 * time.Millisecond, 15 * time.Millisecond},
			ups: 4, failedRows: 2, failedWith: "still failing after 3 tries): capacity",
			events1: []string{"up-failed", "up-failed", "up-failed"}},
		{name: "a failed restart fails the group's remaining rows",
			s:     &scripted{restartErr: errors.New("broker did not start"), failTLS: true},
			tries: 4, err: ErrUnfinished, ups: 2, restarts: 1,
			failedWith: "(permanent error): broker did not start", events1: []string{"up", "warmup", "restart-failed", "down"}},
		{name: "interrupt while waiting to retry",
			s:     &scripted{upErrs: []error{target.Transient(errors.New("rate limited"))}},
			tries: 4, err: ErrInterrupted, sleeps: []time.Duration{10 * time.Millisecond}, ups: 1,
			events1: []string{"up-failed"}, interrupted: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			plan := writePlan(t, dir, "pol", twoGroups("pol"))
			tc.s.Target = localtarget.New(filepath.Join(dir, "work"))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var sleeps []time.Duration
			var stderr syncBuffer
			_, err := Run(ctx, Options{Platforms: only(tc.s), Plan: plan, Stderr: &stderr, WarmupCap: briefWarmup,
				UpRetry: Retry{Tries: tc.tries, Backoff: 10 * time.Millisecond, MaxBackoff: 15 * time.Millisecond},
				Sleep: func(ctx context.Context, d time.Duration) error {
					sleeps = append(sleeps, d)
					if tc.interrupted {
						cancel() // the first Ctrl-C, while waiting
						return ctx.Err()
					}
					return nil
				}})
			if tc.err == nil && err != nil || tc.err != nil && !errors.Is(err, tc.err) {
				t.Fatalf("run: %v, want %v\n%s", err, tc.err, stderr.String())
			}
			if !slices.Equal(sleeps, tc.sleeps) {
				t.Errorf("waits %v, want %v", sleeps, tc.sleeps)
			}
			if tc.s.ups != tc.ups || tc.s.restarts != tc.restarts {
				t.Errorf("%d Up and %d Restart calls, want %d and %d", tc.s.ups, tc.s.restarts, tc.ups, tc.restarts)
			}
			db := DefaultDB(plan)
			s, err := results.OpenReadOnly(context.Background(), db)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			events, _ := s.InfraEvents(context.Background())
			var events1 []string
			for _, e := range events {
				if e.Group == tc.s.first.ID() {
					events1 = append(events1, e.Event)
					if strings.HasSuffix(e.Event, "-failed") && e.Error == "" {
						t.Errorf("event %s without its error", e.Event)
					}
				}
			}
			if !slices.Equal(events1, tc.events1) {
				t.Errorf("events of the one-broker group %v, want %v", events1, tc.events1)
			}
			st := readDB(t, db)
			failed := st.runsIn(results.Failed)
			if tc.failedRows > 0 && len(failed) != tc.failedRows {
				t.Errorf("failed rows %v, want %d", failed, tc.failedRows)
			}
			atts, _ := s.Attempts(context.Background())
			last := map[string]results.Attempt{}
			for _, a := range atts {
				last[a.Run] = a
			}
			for _, run := range failed {
				if !strings.Contains(last[run].Error, tc.failedWith) || tc.failedWith == "" {
					t.Errorf("row %s failed with %q, want %q", run, last[run].Error, tc.failedWith)
				}
			}
			if tc.interrupted {
				if len(atts) != 0 {
					t.Errorf("%d attempts after an interrupt before any row ran", len(atts))
				}
				return
			}
			// The campaign went on: both rows of the other group ran on its
			// cluster and are done.
			second := 0
			for run, a := range last {
				var env attemptEnv
				json.Unmarshal(a.Environment, &env)
				// The first group's rows are named as asked, as failed
				// without a broker, or by the kfake they ran on.
				f, k := tc.s.first, target.KfakeBroker()
				if env.Group != f.String() && env.Group != f.WithBroker("", "") && env.Group != f.WithBroker(k.Kind, k.Version) {
					second++
					if st.states[run] != results.Done {
						t.Errorf("row %s of the second group is %s (%s)", run, st.states[run], a.Error)
					}
				}
			}
			if second != 2 || len(st.runsIn(results.Done))+len(failed) != 4 {
				t.Errorf("states %v (%d rows of the second group): want every row done or failed", st.states, second)
			}
		})
	}
}

// countingLoads counts the loads it runs, in xp's process like the local
// target: the rows' and the warm-ups'.
type countingLoads struct {
	*localtarget.Target
	mu           sync.Mutex
	loads, warms []string
}

func (c *countingLoads) RunLoad(ctx context.Context, l target.Load) (*loadgen.Result, error) {
	c.mu.Lock()
	if l.Warmup {
		c.warms = append(c.warms, l.Row.Run)
	} else {
		c.loads = append(c.loads, l.Row.Run)
	}
	c.mu.Unlock()
	if len(l.Config.Bootstrap) == 0 || l.Config.ClientConfig != nil || l.Config.OnPhase == nil {
		return nil, errors.New("the runner's Load lacks bootstrap or OnPhase, or carries client properties")
	}
	return target.RunLoadHere(ctx, l)
}

// upDownOnly is a target with nothing but Up and Down.
type upDownOnly struct{ t target.Target }

func (u upDownOnly) Up(ctx context.Context, g target.Group) (target.Endpoints, error) {
	return u.t.Up(ctx, g)
}
func (u upDownOnly) Down(ctx context.Context) error { return u.t.Down(ctx) }

// TestLoadAndTelemetrySeams: the runner runs loads through the target's
// LoadRunner when it has one, and otherwise in its own process, sampling
// itself as the client host; without a TelemetrySource there are no
// per-host CPU metrics.
func TestLoadAndTelemetrySeams(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	counting := &countingLoads{Target: localtarget.New(filepath.Join(dir, "w1"))}
	tests := []struct {
		name      string
		t         target.Target
		hosts     []string
		gatewayMs bool
	}{
		{"load runner and telemetry source", counting, []string{"client", "cluster"}, true},
		{"up and down only", upDownOnly{localtarget.New(filepath.Join(dir, "w2"))}, []string{"client"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sub := t.TempDir()
			plan := writePlan(t, sub, "seam", short(smallSpec("seam", []string{"plaintext", "tls"}, 1)))
			var stderr syncBuffer
			if _, err := Run(context.Background(), Options{Platforms: only(tc.t), Plan: plan, Stderr: &stderr, WarmupCap: briefWarmup}); err != nil {
				t.Fatalf("run: %v\n%s", err, stderr.String())
			}
			s, err := results.OpenReadOnly(context.Background(), DefaultDB(plan))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			atts, _ := s.Attempts(context.Background())
			for _, a := range atts {
				tel, _ := s.Telemetry(context.Background(), a.ID)
				hosts := map[string]bool{}
				for _, smp := range tel {
					hosts[smp.Host] = true
				}
				var got []string
				for h := range hosts {
					got = append(got, h)
				}
				slices.Sort(got)
				if !slices.Equal(got, tc.hosts) {
					t.Errorf("attempt %d: telemetry hosts %v, want %v", a.ID, got, tc.hosts)
				}
				_, hasGW := a.Metrics["gateway_cpu_us_per_msg"]
				_, hasCluster := a.Metrics["host_cpu_broker_us_per_msg"]
				if hasGW != tc.gatewayMs || hasCluster != tc.gatewayMs {
					t.Errorf("attempt %d: gateway_cpu_us_per_msg %v, host_cpu_broker_us_per_msg %v, want both %v",
						a.ID, hasGW, hasCluster, tc.gatewayMs)
				}
			}
		})
	}
	if len(counting.loads) != 2 {
		t.Errorf("the target's LoadRunner ran %v, want both rows", counting.loads)
	}
	if slices.Sort(counting.loads); !slices.Equal(slices.Sorted(slices.Values(counting.warms)), counting.loads) {
		t.Errorf("the target's LoadRunner warmed up on %v, want a warm-up of each mode on its row %v", counting.warms, counting.loads)
	}
}

// TestRetryAfterRestartRunsSetWhole: a row that fails is retried on
// restarted services, a new instance of the cluster; members of its
// matched set that finished on the old instance are superseded and run
// again with it, back to back on the new one, and analysis pairs only the
// new attempts. A member that had not run yet simply runs after the retry,
// and a retry on a target that cannot restart (the same instance) reruns
// no partner.
func TestRetryAfterRestartRunsSetWhole(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		fail      int  // index in plan order of the row whose first load fails
		noRestart bool // the target has no Restarter
		// want: each row's attempts in order, "outcome" or "outcome superseded"
		want       [2][]string
		superseded int
	}{
		{name: "second member fails after its partner finished: both run again", fail: 1,
			want: [2][]string{{"done superseded", "done"}, {"failed", "done"}}, superseded: 1},
		{name: "first member fails before its partner ran: nothing superseded", fail: 0,
			want: [2][]string{{"failed", "done"}, {"done"}}},
		{name: "retry without a restart: the same instance, nothing superseded", fail: 1, noRestart: true,
			want: [2][]string{{"done"}, {"failed", "done"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			plan := writePlan(t, dir, "retry", short(smallSpec("retry", []string{"plaintext", "tls"}, 1)))
			pl, err := readPlan(plan)
			if err != nil {
				t.Fatal(err)
			}
			rows := pl.rows
			if len(rows) != 2 || rows[0].Pair != rows[1].Pair || rows[0].Replicate != rows[1].Replicate {
				t.Fatalf("the plan is not one matched set of two rows: %+v", rows)
			}
			s := &scripted{Target: localtarget.New(filepath.Join(dir, "work")),
				failOnce: map[string]bool{rows[tc.fail].Run: true}}
			var tg target.Target = s
			if tc.noRestart {
				tg = sameInstance{s, s}
			}
			var stderr syncBuffer
			if _, err := Run(context.Background(), Options{Platforms: only(tg), Plan: plan, Stderr: &stderr, WarmupCap: noWarmup}); err != nil {
				t.Fatalf("run: %v\n%s", err, stderr.String())
			}
			if want := map[bool]int{false: 1, true: 0}[tc.noRestart]; s.restarts != want {
				t.Errorf("%d restarts, want %d", s.restarts, want)
			}
			db := DefaultDB(plan)
			store, err := results.OpenReadOnly(context.Background(), db)
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			atts, err := store.Attempts(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			byRun := map[string][]results.Attempt{}
			for _, a := range atts {
				byRun[a.Run] = append(byRun[a.Run], a)
			}
			var last [2]results.Attempt
			for i, row := range rows {
				var got []string
				for _, a := range byRun[row.Run] {
					o := string(a.Outcome)
					if a.Superseded != "" {
						o += " superseded"
					}
					got = append(got, o)
				}
				if !slices.Equal(got, tc.want[i]) {
					t.Fatalf("attempts of %s: %v, want %v\n%s", row.Run, got, tc.want[i], stderr.String())
				}
				last[i] = byRun[row.Run][len(got)-1]
			}
			if tc.noRestart {
				if d := last[1].ID - last[0].ID; d != 2 { // the failed attempt between
					t.Errorf("final attempts %d and %d: want the failed one alone between them", last[0].ID, last[1].ID)
				}
			} else {
				// Back to back on the new instance: the set's final attempts
				// are consecutive and both started after the restart.
				if d := last[1].ID - last[0].ID; d != 1 {
					t.Errorf("the set's final attempts %d and %d are not back to back in plan order", last[0].ID, last[1].ID)
				}
				events, _ := store.InfraEvents(context.Background())
				var restarted time.Time
				for _, e := range events {
					if e.Event == "restart" {
						restarted = e.Time
					}
				}
				if restarted.IsZero() || last[0].Started.Before(restarted) || last[1].Started.Before(restarted) {
					t.Errorf("the set's final attempts started %v and %v, not after the restart at %v",
						last[0].Started, last[1].Started, restarted)
				}
			}
			if tc.superseded > 0 && !strings.Contains(byRun[rows[0].Run][0].Superseded, "retried on restarted services") {
				t.Errorf("superseded attempt says %q", byRun[rows[0].Run][0].Superseded)
			}

			// Status counts superseded attempts apart from their outcome.
			st, err := ReadStatus(context.Background(), db, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			want := StatusAttempts{Total: 3 + tc.superseded, Done: 2, Failed: 1, Superseded: tc.superseded}
			if st.Attempts != want {
				t.Errorf("status attempts %+v, want %+v", st.Attempts, want)
			}
			var text strings.Builder
			st.WriteText(&text)
			if has := strings.Contains(text.String(), ", superseded 1"); has != (tc.superseded == 1) {
				t.Errorf("status text (superseded %d):\n%s", tc.superseded, text.String())
			}

			// Analysis pairs the final attempts only.
			d, err := analysis.Load(context.Background(), db)
			if err != nil {
				t.Fatal(err)
			}
			for i, row := range rows {
				var finals []int
				for _, r := range d.Runs {
					if r.Run == row.Run && r.Final {
						finals = append(finals, r.Attempt)
					}
				}
				if len(finals) != 1 || finals[0] != last[i].Number {
					t.Errorf("analysis: final attempts of %s %v, want [%d]", row.Run, finals, last[i].Number)
				}
			}
		})
	}
}

// sameInstance is a target without a Restarter: a failed row is retried on
// the same instance of the services.
type sameInstance struct {
	target.Target
	target.LoadRunner
}
