package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xp-bench/xp/internal/golden"
)

func fixedNow() time.Time { return time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC) }

// TestDocumentGolden writes BENCHMARKS.md from a bench.out with a header,
// targets met, not met and without data, the gateway beside Kroxylicious
// (one cell without data), and a failed benchmark line.
func TestDocumentGolden(t *testing.T) {
	in, err := os.ReadFile("testdata/bench.out")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	if err := run([]string{"-o", out}, bytes.NewReader(in), nil, fixedNow); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "BENCHMARKS.golden.md", got)
}

func TestRun(t *testing.T) {
	bench, err := os.ReadFile("testdata/bench.out")
	if err != nil {
		t.Fatal(err)
	}
	noHeader := []byte{}
	for _, l := range strings.SplitAfter(string(bench), "\n") {
		if !strings.HasPrefix(l, headerPrefix) {
			noHeader = append(noHeader, l...)
		}
	}
	cases := []struct {
		name    string
		args    []string
		stdin   []byte
		wantErr string   // empty: success
		want    []string // substrings of stdout
	}{
		{name: "document on stdout", stdin: bench,
			want: []string{"| commit | 650c96d |", "| date | 2026-12-01 15:33 UTC |", "## Table"}},
		{name: "no header: this machine, now", stdin: noHeader,
			want: []string{"| date | 2026-12-01 20:00 UTC |", "| machine | AMD EPYC, ", "| Go | go"}},
		{name: "header lines", args: []string{"-header"},
			want: []string{"xpbench-date: 2026-12-01 20:00 UTC\n", "xpbench-cores: ", "xpbench-go: go"}},
		{name: "no results", stdin: []byte("goos: linux\nPASS\n"), wantErr: "no benchmark results"},
		{name: "bad header key", stdin: []byte("xpbench-colour: red\n"), wantErr: `unknown key "colour"`},
		{name: "bad cores", stdin: []byte("xpbench-cores: two\n"), wantErr: "cores is not a number"},
		{name: "argument", args: []string{"bench.out"}, wantErr: "read from stdin"},
		{name: "unknown flag", args: []string{"-x"}, wantErr: "not defined"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stdout bytes.Buffer
			err := run(c.args, bytes.NewReader(c.stdin), &stdout, fixedNow)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, stdout.String())
				}
			}
		})
	}
}

// TestOutputKeptOnError: a run without results leaves the existing file.
func TestOutputKeptOnError(t *testing.T) {
	out := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	if err := os.WriteFile(out, []byte("previous run\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"-o", out}, strings.NewReader("FAIL\n"), nil, fixedNow); err == nil {
		t.Fatal("want an error for input without results")
	}
	got, err := os.ReadFile(out)
	if err != nil || string(got) != "previous run\n" {
		t.Fatalf("file now %q (err %v), want it untouched", got, err)
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".*.tmp"))
	if len(left) > 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

func TestVerdict(t *testing.T) {
	rows := []result{
		{pkg: modulePrefix + "p", name: "BenchmarkA", metrics: []metric{{1.2, "us"}, {0, "allocs/op"}}},
		{pkg: modulePrefix + "p", name: "BenchmarkB", metrics: []metric{{-0.6, "err_%"}}},
		{pkg: modulePrefix + "p", name: "BenchmarkB", metrics: []metric{{0.4, "err_%"}}}, // -count 2: the last counts
	}
	cases := []struct {
		name    string
		checks  []check
		verdict string
	}{
		{"below limit", []check{{"p", "A", "us", "<", 1.5}}, "met"},
		{"at limit is not below", []check{{"p", "A", "us", "<", 1.2}}, "**not met**"},
		{"at least", []check{{"p", "A", "us", ">=", 1.2}}, "met"},
		{"exact", []check{{"p", "A", "allocs/op", "==", 0}}, "met"},
		{"absolute, last result", []check{{"p", "B", "err_%", "|x|<=", 0.5}}, "met"},
		{"missing benchmark", []check{{"p", "C", "us", "<", 1}}, "no data"},
		{"missing metric", []check{{"p", "A", "ms", "<", 1}}, "no data"},
		{"other package", []check{{"q", "A", "us", "<", 1.5}}, "no data"},
		{"one of two fails", []check{{"p", "A", "us", "<", 1.5}, {"p", "A", "us", "<", 1}}, "**not met**"},
		{"failure beats missing", []check{{"p", "C", "us", "<", 1}, {"p", "A", "us", "<", 1}}, "**not met**"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, v := target{checks: c.checks}.verdict(rows)
			if v != c.verdict {
				t.Fatalf("verdict %q, want %q", v, c.verdict)
			}
		})
	}
}

// TestTargetsAreWellFormed guards the target list against typos: every
// check names a package, a benchmark and a unit, with a known op.
func TestTargetsAreWellFormed(t *testing.T) {
	for _, tg := range targets {
		if tg.issue <= 0 || tg.what == "" || len(tg.checks) == 0 {
			t.Errorf("target %+v: needs an issue, a description and checks", tg)
		}
		for _, c := range tg.checks {
			switch c.op {
			case "<", ">=", "|x|<=", "==":
			default:
				t.Errorf("target %q: unknown op %q", tg.what, c.op)
			}
			if c.pkg == "" || c.bench == "" || c.unit == "" || strings.HasPrefix(c.bench, "Benchmark") {
				t.Errorf("target %q: check %+v needs a package, a benchmark name without Benchmark, and a unit", tg.what, c)
			}
		}
	}
}
