package explore

import (
	"testing"
)

// TestCompare: rows are matched on treatment, metric and scope (the pooled
// scopes and the configurations both campaigns hold), on the headline
// statistic only; each check says what it should, and a missing interval
// leaves its check unknown.
func TestCompare(t *testing.T) {
	row := func(tr, metric, scope, stat string, est, lo, hi any) []any {
		return []any{tr, "plaintext", metric, scope, 6, stat, "pct", est, lo, hi, "bca", nil, nil, "", "", nil, true, 0}
	}
	a := &Campaign{Index: 0, CellFactors: []string{"acks"}, Cells: []Cell{{Pair: "p1", Levels: []string{"1"}}, {Pair: "p2", Levels: []string{"all"}}},
		Effects: [][]any{
			row("tls", "publish_ms_p99", "all", "ratio_penalty", 10.0, 8.0, 12.0),
			row("tls", "publish_ms_p99", "all", "mean_penalty", 10.0, 8.0, 12.0),
			row("tls", "publish_ms_p99", "p1", "ratio_penalty", 5.0, 1.0, 9.0),
			row("tls", "publish_ms_p99", "p2", "ratio_penalty", -2.0, -4.0, 1.0),
			row("tls", "e2e_ms_p99", "p1", "ratio_penalty", 3.0, nil, nil),
			row("tls", "publish_ms_p99", "p9", "ratio_penalty", 1.0, 0.0, 2.0),
		}}
	b := &Campaign{Index: 1, Effects: [][]any{
		row("tls", "publish_ms_p99", "all", "ratio_penalty", 11.0, 9.0, 13.0),
		row("tls", "publish_ms_p99", "p1", "ratio_penalty", 12.0, 10.0, 14.0),
		row("tls", "publish_ms_p99", "p2", "ratio_penalty", 0.5, -1.0, 3.0),
		row("tls", "e2e_ms_p99", "p1", "ratio_penalty", 3.5, 2.0, 5.0),
	}}
	tr, fa := true, false
	tests := []struct {
		scope, metric   string
		aInB, bInA      *bool
		sameSign, agree bool
		settings        string
	}{
		{"all", "publish_ms_p99", &tr, &tr, true, true, ""},
		{"p1", "publish_ms_p99", &fa, &fa, true, false, "acks=1"},
		{"p2", "publish_ms_p99", &fa, &tr, false, false, "acks=all"},
		{"p1", "e2e_ms_p99", &tr, nil, true, false, "acks=1"},
	}
	got := Compare(a, b)
	if got.A != 0 || got.B != 1 || len(got.Rows) != len(tests) {
		t.Fatalf("Compare gave %d rows (%+v), want %d", len(got.Rows), got.Rows, len(tests))
	}
	same := func(p, q *bool) bool { return (p == nil) == (q == nil) && (p == nil || *p == *q) }
	for i, tc := range tests {
		r := got.Rows[i]
		if r.Scope != tc.scope || r.Metric != tc.metric || !same(r.AInB, tc.aInB) || !same(r.BInA, tc.bInA) ||
			r.SameSign != tc.sameSign || r.Agree != tc.agree || r.Settings != tc.settings {
			t.Errorf("row %d: %+v, want %+v", i, r, tc)
		}
	}
}
