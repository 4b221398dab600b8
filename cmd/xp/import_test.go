package main

import (
	"bytes"
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
		{"nan", []string{analysisWriteFile(t, dir, "nan.csv", "mode,lat\nplain,2\ntls,NaN\n"), "--treatment", "mode", "--metric", "lat"},
			"nan.csv:3: metric lat: \"NaN\" is not a finite number"},
		{"inf", []string{analysisWriteFile(t, dir, "inf.csv", "mode,size,lat\nplain,1,2\ntls,1,3\nplain,2,2\ntls,2,Inf\n"), "--treatment", "mode", "--metric", "lat"},
			"inf.csv:5: metric lat: \"Inf\" is not a finite number"},
		{"one-level", []string{analysisWriteFile(t, dir, "one.csv", "mode,size,lat\nplain,1,2\nplain,2,3\n"), "--treatment", "mode", "--metric", "lat"},
			"every run has mode = plain: there is nothing to compare it with"},
		{"omb-one-driver", []string{analysisWriteFile(t, dir, "kafka-latency.json", analysisOMBResult("Kafka", 10, 100)),
			analysisWriteFile(t, dir, "ssl-kafka.json", analysisOMBResult("Kafka", 12, 100))}, "give each file its level with --level LEVEL=FILE"},
		{"omb-level-unmatched", []string{filepath.Join(dir, "kafka-latency.json"), filepath.Join(dir, "ssl-kafka.json"), "--level", "tls=ssl-*"},
			"kafka-latency.json matches no --level pattern"},
		{"omb-level-ambiguous", []string{filepath.Join(dir, "kafka-latency.json"), filepath.Join(dir, "ssl-kafka.json"),
			"--level", "tls=ssl-*", "--level", "plain=*.json"}, "ssl-kafka.json matches both --level tls and --level plain"},
		{"csv-level", []string{good, "--treatment", "mode", "--metric", "lat", "--level", "tls=good.csv"}, "--level is for OpenMessaging Benchmark results"},
		{"omb-level-shape", []string{filepath.Join(dir, "kafka-latency.json"), "--level", "tls"}, "--level \"tls\": want LEVEL=FILE"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "x.db")
			code, _, stderr := runXP(t, append(append([]string{"import"}, c.args...), "--db", db)...)
			if code != exitUsage || !strings.Contains(stderr, c.want) {
				t.Fatalf("exit %d, want %d with %q; stderr: %s", code, exitUsage, c.want, stderr)
			}
			if ents, _ := os.ReadDir(filepath.Dir(db)); len(ents) != 0 {
				t.Errorf("a refused import left %v behind", ents)
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
		before, _ := os.ReadFile(existing)
		code, _, stderr := runXP(t, "import", good, "--db", existing, "--treatment", "mode", "--metric", "lat")
		if code != exitUsage || !strings.Contains(stderr, "already exists") {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if after, _ := os.ReadFile(existing); !bytes.Equal(before, after) {
			t.Error("a refused import changed the db it found")
		}
		for _, e := range must(os.ReadDir(dir)) {
			if n := e.Name(); strings.HasPrefix(n, ".") || strings.HasSuffix(n, "-wal") || strings.HasSuffix(n, "-shm") {
				t.Errorf("a refused import left %s", n)
			}
		}
	})
}

// TestImportOMBLevelsThenAnalyse: two OMB results whose driver is the same
// name ("Kafka") import as two levels when --level names them, and analyse.
func TestImportOMBLevelsThenAnalyse(t *testing.T) {
	dir := t.TempDir()
	var args []string
	for rep := range 3 {
		args = append(args,
			analysisWriteFile(t, dir, fmt.Sprintf("kafka-latency-%d.json", rep), analysisOMBResult("Kafka", 10+float64(rep), 50000)),
			analysisWriteFile(t, dir, fmt.Sprintf("ssl-kafka-all-%d.json", rep), analysisOMBResult("Kafka", 12+float64(rep), 45000)))
	}
	db := filepath.Join(dir, "omb.db")
	args = append([]string{"import"}, args...)
	args = append(args, "--db", db, "--level", "plaintext=kafka-latency-*", "--level", "tls=ssl-*")
	if code, stdout, stderr := runXP(t, args...); code != 0 || !strings.Contains(stdout, "imported 6 runs") || !strings.Contains(stdout, "baseline plaintext") {
		t.Fatalf("import exit %d: %s %s", code, stdout, stderr)
	}
	out := filepath.Join(dir, "out")
	if code, _, stderr := runXP(t, "analyse", "--db", db, "--out", out, "--resamples", "300"); code != 0 {
		t.Fatalf("analyse exit %d: %s", code, stderr)
	}
	if r, ok := analysisReadEffects(t, out)["tls|publish_rate|all|mean_penalty"]; !ok || !analysisCloseTo(r[7], "10") || r[4] != "3" {
		t.Fatalf("publish_rate penalty: %v", r)
	}
}

// TestAnalyseUnpairedRowsListed: unpaired CSV rows are excluded sets,
// counted on stderr and listed in excluded.csv of the partial report.
func TestAnalyseUnpairedRowsListed(t *testing.T) {
	dir := t.TempDir()
	p := analysisWriteFile(t, dir, "u.csv", "mode,size,lat\nplain,1,2\ntls,2,3\n")
	db := filepath.Join(dir, "u.db")
	if code, _, stderr := runXP(t, "import", p, "--db", db, "--treatment", "mode", "--metric", "lat"); code != 0 {
		t.Fatal(stderr)
	}
	out := filepath.Join(dir, "out")
	code, _, stderr := runXP(t, "analyse", "--db", db, "--out", out, "--resamples", "300")
	if code != exitInvalidRuns || !strings.Contains(stderr, "2 matched sets, 0 healthy, 2 excluded") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	ex, _ := os.ReadFile(filepath.Join(out, "excluded.csv"))
	if n := strings.Count(string(ex), "(unpaired)"); n != 2 {
		t.Fatalf("excluded.csv lists %d unpaired sets, want 2:\n%s", n, ex)
	}
}

// TestZeroOptionsRefused: a 0 typed for an option whose zero value means
// "default" is refused, like every other out-of-range value.
func TestZeroOptionsRefused(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"resamples", []string{"analyse", "--db", filepath.Join(dir, "x.db"), "--resamples", "0"}, "--resamples 0: want at least 100"},
		{"confidence", []string{"analyse", "--db", filepath.Join(dir, "x.db"), "--confidence", "0"}, "--confidence 0 out of range"},
		{"max-attempts", []string{"run", filepath.Join(dir, "p.jsonl"), "--max-attempts", "0"}, "--max-attempts 0: want 1 or more"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runXP(t, c.args...)
			if code != exitUsage || !strings.Contains(stderr, c.want) {
				t.Fatalf("exit %d: %s", code, stderr)
			}
		})
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("refused commands left %v", ents)
	}
}

// TestAnalyseCorruptDBLeavesNoSidecars: analysing a sound database, or a
// file that is not one, adds no -wal or -shm beside it.
func TestAnalyseCorruptDBLeavesNoSidecars(t *testing.T) {
	dir := t.TempDir()
	good := analysisWriteFile(t, dir, "g.csv", "mode,lat\nplain,2\ntls,3\n")
	db := filepath.Join(dir, "g.db")
	if code, _, stderr := runXP(t, "import", good, "--db", db, "--treatment", "mode", "--metric", "lat"); code != 0 {
		t.Fatal(stderr)
	}
	// A sound db that its writer closed cleanly gains no sidecars either.
	if code, _, stderr := runXP(t, "analyse", "--db", db, "--out", filepath.Join(t.TempDir(), "out")); code != 0 {
		t.Fatal(stderr)
	}
	for _, f := range []string{db + "-wal", db + "-shm"} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("analysing a sound db left %s", filepath.Base(f))
		}
	}
	whole, _ := os.ReadFile(db)
	cases := []struct{ name, content string }{
		{"not-sqlite", strings.Repeat("not a database ", 400)},
		{"truncated", string(whole[:8192])},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := t.TempDir()
			p := analysisWriteFile(t, d, "c.db", c.content)
			if code, _, _ := runXP(t, "analyse", "--db", p, "--out", filepath.Join(d, "out")); code == 0 {
				t.Fatal("a corrupt db analysed")
			}
			if ents, _ := os.ReadDir(d); len(ents) != 1 {
				t.Fatalf("left %v", ents)
			}
			if b, _ := os.ReadFile(p); string(b) != c.content {
				t.Fatal("the corrupt db changed")
			}
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
