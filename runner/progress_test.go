package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/results"
)

func TestProgress(t *testing.T) {
	var now time.Time
	clock := func() time.Time { return now }
	row := planner.Row{Run: "abc-r1", Security: "tls", Brokers: 1, MessageSize: 1024, TargetRate: 1000, Acks: "all"}
	start := results.Progress{Total: 4, Rows: map[results.State]int{results.Done: 1, results.Invalid: 1}}
	tests := []struct {
		name string
		term bool
		want []string
		not  []string
	}{
		{"terminal bar", true,
			[]string{"\r\033[K[", "] 3/4", "(1 invalid, 0 failed)", "abc-r1 security=tls", "measure 20s", "ETA 10s",
				"xp: row abc-r1 attempt 1: done in 10s"},
			nil},
		{"log lines", false,
			[]string{"xp: 12:00:00 row 3/4 abc-r1 attempt 1: security=tls brokers=1 size=1024 rate=1000 acks=all\n",
				"row 3/4 abc-r1 phase=measure for 20s\n", "row abc-r1 attempt 1: done in 10s\n"},
			[]string{"\r", "\033[", "ETA"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
			var out syncBuffer
			p := newProgress(&out, tc.term, clock, start)
			p.startRow(row, 1)
			p.setPhase("measure", now.Add(20*time.Second))
			p.mu.Lock()
			p.draw()
			p.mu.Unlock()
			now = now.Add(10 * time.Second)
			p.finishRow(row, 1, results.Evidence{Outcome: results.OutcomeDone}, 10*time.Second)
			p.setPhase("warmup", now.Add(time.Second))
			p.mu.Lock()
			p.draw() // after one row of 10 s and 1 left: ETA 10s
			p.mu.Unlock()
			p.close()
			got := out.String()
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("output lacks %q:\n%q", w, got)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("output has %q:\n%q", n, got)
				}
			}
		})
	}
}
