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
	row := planner.Row{Run: "abc123def456-r1", Security: "field_encrypt", Brokers: 9, MessageSize: 1048576,
		TargetRate: 100000, Acks: "all"}
	start := results.Progress{Total: 4, Rows: map[results.State]int{results.Done: 1, results.Invalid: 1}}
	tests := []struct {
		name string
		term bool
		want []string
		not  []string
	}{
		{"terminal bar", true,
			[]string{"\r\033[K[", "] 3/4", "(1 invalid, 0 failed)", "abc123def456-r1 security=field_encrypt", "measure 20s", "ETA 10s",
				"xp: row abc123def456-r1 attempt 1: done in 10s"},
			nil},
		{"log lines", false,
			[]string{"xp: 12:00:00 row 3/4 abc123def456-r1 attempt 1: security=field_encrypt brokers=9 size=1048576 rate=100000 acks=all\n",
				"row 3/4 abc123def456-r1 phase=measure for 20s\n", "row abc123def456-r1 attempt 1: done in 10s\n"},
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
			if tc.term {
				for _, seg := range strings.Split(got, "\r") {
					if n := len([]rune(strings.TrimSuffix(seg, "\n"))); n > barWidth {
						t.Errorf("bar line of %d runes (max %d): %q", n, barWidth, seg)
					}
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
