package runner

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xp-bench/xp/infra/local/localtarget"
	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/results"
)

// localPlatforms is what cmd hands the runner for platform local.
var localPlatforms = target.Platforms{"local": localtarget.Open}

// only is platform local served by t.
func only(t target.Target) target.Platforms {
	return target.Platforms{"local": func(target.Config) (target.Target, error) { return t, nil }}
}

// Group warm-up caps (Options.WarmupCap) for tests on real clusters:
// noWarmup where a test does not look at the warm-up, briefWarmup (a
// second of load, recorded as not warm) where it checks that the warm-up
// is recorded in its place. TestWarmupCap tests the warm-up's rounds.
const (
	noWarmup    time.Duration = -1
	briefWarmup               = time.Second
)

// smallSpec is a campaign of short, gentle rows on the embedded cluster:
// one row per security level and replicate.
func smallSpec(name string, levels []string, replicates int) string {
	return fmt.Sprintf(`campaign: %s
seed: 7
replicates: %d
treatment: security
baseline: plaintext
factors:
  security: [%s]
fixed:
  platform: local
  brokers: 1
  partitions: 2
  message_size: 256
  acks: all
  target_rate: 200
  warmup_s: 1
  duration_s: 2
  drain_timeout_s: 5
`, name, replicates, strings.Join(levels, ", "))
}

// writePlan expands spec into dir/name.jsonl and returns its path.
func writePlan(t testing.TB, dir, name, spec string) string {
	t.Helper()
	s, err := planner.ParseSpec(name+".yaml", []byte(spec))
	if err != nil {
		t.Fatalf("spec: %v", err)
	}
	var buf bytes.Buffer
	if _, err := planner.Expand(s, &buf); err != nil {
		t.Fatalf("expand: %v", err)
	}
	path := filepath.Join(dir, name+".jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// syncBuffer is a bytes.Buffer safe for the progress goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// dirSnapshot maps each file under dir to size and mtime.
func dirSnapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return nil
		}
		out[p] = fmt.Sprintf("%d %s", fi.Size(), fi.ModTime().Format(time.RFC3339Nano))
		return nil
	})
	return out
}

// dbState is what the tests compare: per run, its state and the outcomes of
// its attempts in order.
type dbState struct {
	states   map[string]results.State
	attempts map[string][]results.Outcome
}

func readDB(t testing.TB, path string) dbState {
	t.Helper()
	ctx := context.Background()
	s, err := results.OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows, err := s.Rows(ctx)
	if err != nil {
		t.Fatal(err)
	}
	atts, err := s.Attempts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st := dbState{states: map[string]results.State{}, attempts: map[string][]results.Outcome{}}
	for _, r := range rows {
		st.states[r.Run] = r.State
	}
	for _, a := range atts {
		st.attempts[a.Run] = append(st.attempts[a.Run], a.Outcome)
	}
	return st
}

func (s dbState) runsIn(state results.State) []string {
	var out []string
	for run, st := range s.states {
		if st == state {
			out = append(out, run)
		}
	}
	sort.Strings(out)
	return out
}
