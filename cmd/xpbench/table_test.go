package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseAndRender(t *testing.T) {
	in := `goos: linux
pkg: github.com/xp-bench/xp/runner/loadgen
BenchmarkRate/10k-2         	       1	3001234567 ns/op	         0.02000 rate_err_pct	         0.4100 send_delay_p99_ms	  123456 B/op	     789 allocs/op
BenchmarkBroken-2 --- FAIL
pkg: github.com/xp-bench/xp/planner
BenchmarkExpand-2   	       1	  1500 ns/op
PASS
`
	rows, _, err := parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("got %d rows, want 2: %+v", len(rows), rows)
	}
	if rows[0].name != "BenchmarkRate/10k" || rows[0].pkg != "github.com/xp-bench/xp/runner/loadgen" {
		t.Fatalf("row 0 = %+v", rows[0])
	}
	var b bytes.Buffer
	render(&b, rows)
	want := "| runner/loadgen | Rate/10k | 0.02 rate_err_pct, 0.41 send_delay_p99_ms | 3001234567 | 123456 | 789 |"
	if !strings.Contains(b.String(), want) {
		t.Fatalf("table lacks %q:\n%s", want, b.String())
	}
	if !strings.Contains(b.String(), "| planner | Expand |  | 1500 | – | – |") {
		t.Fatalf("table lacks planner row:\n%s", b.String())
	}
}

func TestParseRejectsNonNumericMetric(t *testing.T) {
	_, _, err := parse(strings.NewReader("BenchmarkX-2 1 abc ns/op\n"))
	if err == nil {
		t.Fatal("want an error for a non-numeric metric")
	}
}
