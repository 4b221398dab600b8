package main

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func analysisWriteFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// readEffects returns effects.csv rows keyed by treatment|metric|scope|statistic.
func analysisReadEffects(t *testing.T, dir string) map[string][]string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "effects.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, r := range rows[1:] {
		out[r[0]+"|"+r[2]+"|"+r[3]+"|"+r[5]] = r
	}
	return out
}

// TestImportCSVThenAnalyse: a per-run CSV with an exact 10% throughput
// loss and 20% latency rise imports and analyses like a native campaign.
func TestImportCSVThenAnalyse(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("mode,size,lat_ms_p99,throughput\n")
	for _, size := range []int{100, 1000} {
		for rep := 1; rep <= 3; rep++ {
			base := float64(size + 10*rep)
			fmt.Fprintf(&b, "plain,%d,%g,%g\n", size, base, 10*base)
			fmt.Fprintf(&b, "tls,%d,%g,%g\n", size, base*1.2, 9*base)
		}
	}
	csvPath := analysisWriteFile(t, dir, "runs.csv", b.String())
	db := filepath.Join(dir, "imported.db")
	code, stdout, stderr := runXP(t, "import", csvPath, "--db", db, "--treatment", "mode", "--baseline", "plain",
		"--metric", "lat_ms_p99", "--metric", "throughput:higher")
	if code != 0 || !strings.Contains(stdout, "imported 12 runs") {
		t.Fatalf("import exit %d: %s %s", code, stdout, stderr)
	}
	out := filepath.Join(dir, "out")
	if code, _, stderr := runXP(t, "analyse", "--db", db, "--out", out, "--resamples", "300"); code != 0 {
		t.Fatalf("analyse exit %d: %s", code, stderr)
	}
	eff := analysisReadEffects(t, out)
	for key, want := range map[string]string{
		"tls|throughput|all|mean_penalty":   "10", // (b - t)/b: larger is better
		"tls|lat_ms_p99|all|mean_penalty":   "20",
		"tls|lat_ms_p99|all|ratio_of_means": "1.2",
	} {
		r, ok := eff[key]
		if !ok {
			t.Fatalf("no %s in effects.csv", key)
		}
		if !analysisCloseTo(r[7], want) || !analysisCloseTo(r[8], want) || !analysisCloseTo(r[9], want) || r[4] != "6" {
			t.Errorf("%s: n %s estimate %s [%s, %s], want %s exactly", key, r[4], r[7], r[8], r[9], want)
		}
	}
	cells, _ := os.ReadFile(filepath.Join(out, "cells.csv"))
	if !strings.HasPrefix(string(cells), "pair,size,") {
		t.Errorf("cells.csv: %s", cells)
	}
}

func analysisCloseTo(got, want string) bool {
	var g, w float64
	fmt.Sscan(got, &g)
	fmt.Sscan(want, &w)
	return g-w < 1e-9 && w-g < 1e-9
}

func analysisOMBResult(driver string, p99, rate float64) string {
	return fmt.Sprintf(`{"workload":"1-topic-16-partitions-1kb","driver":%q,"messageSize":1024,"topics":1,"partitions":16,
"producersPerTopic":1,"consumersPerTopic":1,"publishRate":[%g,%g],"consumeRate":[%g,%g],
"aggregatedPublishLatency50pct":%g,"aggregatedPublishLatency95pct":%g,"aggregatedPublishLatency99pct":%g,
"aggregatedPublishLatency999pct":%g,"aggregatedPublishLatency9999pct":%g,
"aggregatedEndToEndLatency50pct":%g,"aggregatedEndToEndLatency99pct":%g,"aggregatedPublishDelayLatency99pct":%g}`,
		driver, rate, rate, rate, rate, p99/4, p99/2, p99, p99*2, p99*3, p99/3, p99*1.5, p99*100)
}

func TestImportOMBThenAnalyse(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for rep := range 3 {
		files = append(files,
			analysisWriteFile(t, dir, fmt.Sprintf("plain-%d.json", rep), analysisOMBResult("kafka-plaintext", 10+float64(rep), 50000)),
			analysisWriteFile(t, dir, fmt.Sprintf("tls-%d.json", rep), analysisOMBResult("kafka-tls", 12+float64(rep), 45000)))
	}
	db := filepath.Join(dir, "omb.db")
	args := append([]string{"import"}, files...)
	args = append(args, "--db", db, "--treatment", "driver", "--baseline", "kafka-plaintext")
	if code, stdout, stderr := runXP(t, args...); code != 0 || !strings.Contains(stdout, "imported 6 runs") {
		t.Fatalf("import exit %d: %s %s", code, stdout, stderr)
	}
	out := filepath.Join(dir, "out")
	if code, _, stderr := runXP(t, "analyse", "--db", db, "--out", out, "--resamples", "300"); code != 0 {
		t.Fatalf("analyse exit %d: %s", code, stderr)
	}
	eff := analysisReadEffects(t, out)
	r, ok := eff["kafka-tls|publish_rate|all|mean_penalty"]
	if !ok || !analysisCloseTo(r[7], "10") || r[4] != "3" {
		t.Fatalf("publish_rate penalty: %v", r)
	}
	if _, ok := eff["kafka-tls|send_delay_ms_p99|all|mean_difference"]; !ok {
		t.Error("send delay not imported")
	}
}

func TestImportBadInput(t *testing.T) {
	dir := t.TempDir()
	good := analysisWriteFile(t, dir, "good.csv", "mode,size,lat\nplain,1,2\ntls,1,3\n")
	existing := filepath.Join(dir, "existing.db")
	if code, _, stderr := runXP(t, "import", good, "--db", existing, "--treatment", "mode", "--metric", "lat"); code != 0 {
		t.Fatal(stderr)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown-shape", []string{analysisWriteFile(t, dir, "w.yaml", "name: x\n"), "--treatment", "mode", "--metric", "lat"},
			"neither an OpenMessaging Benchmark result"},
		{"json-not-omb", []string{analysisWriteFile(t, dir, "x.json", `{"hello": 1}`)}, "aggregatedPublishLatency99pct"},
		{"missing-metric-column", []string{good, "--treatment", "mode", "--metric", "p99"}, "good.csv:1: header lacks column(s) p99 (--metric)"},
		{"missing-treatment-flag", []string{good, "--metric", "lat"}, "--treatment COLUMN is required"},
		{"bad-number", []string{analysisWriteFile(t, dir, "n.csv", "mode,lat\nplain,fast\n"), "--treatment", "mode", "--metric", "lat"},
			"n.csv:2: metric lat: \"fast\" is not a number"},
		{"baseline-not-a-level", []string{good, "--treatment", "mode", "--metric", "lat", "--baseline", "mtls"},
			"the levels are: plain, tls"},
		{"missing-file", []string{filepath.Join(dir, "nope.csv"), "--treatment", "mode", "--metric", "lat"}, "nope.csv"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "x.db")
			code, _, stderr := runXP(t, append(append([]string{"import"}, c.args...), "--db", db)...)
			if code != exitUsage || !strings.Contains(stderr, c.want) {
				t.Fatalf("exit %d, want %d with %q; stderr: %s", code, exitUsage, c.want, stderr)
			}
			if _, err := os.Stat(db); err == nil {
				t.Errorf("a refused import left %s behind", db)
			}
		})
	}
	t.Run("db-not-a-campaign", func(t *testing.T) {
		notdb := analysisWriteFile(t, t.TempDir(), "notes.db", "not a database")
		code, _, stderr := runXP(t, "import", good, "--db", notdb, "--treatment", "mode", "--metric", "lat")
		if code != exitUsage || !strings.Contains(stderr, "notes.db") {
			t.Fatalf("exit %d: %s", code, stderr)
		}
	})
	t.Run("existing-db", func(t *testing.T) {
		code, _, stderr := runXP(t, "import", good, "--db", existing, "--treatment", "mode", "--metric", "lat")
		if code != exitUsage || !strings.Contains(stderr, "already exists") {
			t.Fatalf("exit %d: %s", code, stderr)
		}
	})
}
