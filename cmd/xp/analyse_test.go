package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/xp-bench/xp/analysis"
)

// saveCampaign writes a small synthetic campaign db through the evidence
// store; mutate may spoil it first.
func analysisSaveCampaign(t *testing.T, mutate func(*analysis.Dataset)) string {
	t.Helper()
	d := analysis.Synthetic(analysis.SyntheticConfig{Seed: 8, Levels: []string{"plaintext", "tls", "mtls"},
		Factors:    []analysis.SyntheticFactor{{Name: "message_size", Levels: []string{"1024", "10240"}}},
		Replicates: 3, Penalty: map[string]float64{"tls": 10, "mtls": 15}, Histograms: true, HistogramValues: 200, Invalid: 6})
	if mutate != nil {
		mutate(d)
	}
	path := filepath.Join(t.TempDir(), "campaign.db")
	if err := analysis.Save(context.Background(), path, d, analysis.SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	return path
}

// analysisSaveLarge stores a campaign with 120 matched sets pooled, enough
// for the bootstrap (analysis.MinSetsForBootstrap).
func analysisSaveLarge(t *testing.T) string {
	t.Helper()
	d := analysis.Synthetic(analysis.SyntheticConfig{Seed: 9, Levels: []string{"plaintext", "tls"},
		Factors:    []analysis.SyntheticFactor{{Name: "message_size", Levels: []string{"1024", "10240"}}},
		Replicates: 60, Penalty: map[string]float64{"tls": 10}})
	path := filepath.Join(t.TempDir(), "large.db")
	if err := analysis.Save(context.Background(), path, d, analysis.SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	return path
}

func analysisListFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	filepath.WalkDir(dir, func(p string, de os.DirEntry, err error) error {
		if err == nil && !de.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, rel)
		}
		return nil
	})
	return files
}

// TestAnalyseTwiceIsByteIdentical: the same db and seed, analysed twice
// into two directories, give the same bytes in every file.
func TestAnalyseTwiceIsByteIdentical(t *testing.T) {
	db := analysisSaveCampaign(t, nil)
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	for _, out := range []string{a, b} {
		code, stdout, stderr := runXP(t, "analyse", "--db", db, "--out", out, "--resamples", "500")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if !strings.Contains(stdout, "report: "+filepath.Join(out, "report.html")) || !strings.Contains(stdout, "publish_ms_p99") {
			t.Fatalf("stdout: %s", stdout)
		}
		if !strings.Contains(stderr, "excluded") {
			t.Fatalf("stderr does not count excluded sets: %s", stderr)
		}
	}
	fa, fb := analysisListFiles(t, a), analysisListFiles(t, b)
	if len(fa) < 10 || strings.Join(fa, ",") != strings.Join(fb, ",") {
		t.Fatalf("file lists differ or are short: %v vs %v", fa, fb)
	}
	for _, f := range fa {
		x, _ := os.ReadFile(filepath.Join(a, f))
		y, _ := os.ReadFile(filepath.Join(b, f))
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs", f)
		}
	}
	// Another seed changes the bootstrap intervals (of estimates over
	// enough sets for the bootstrap).
	large := analysisSaveLarge(t)
	a, c := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "c")
	for _, run := range [][]string{{"--out", a}, {"--out", c, "--seed", "99"}} {
		if code, _, stderr := runXP(t, append([]string{"analyse", "--db", large, "--resamples", "500"}, run...)...); code != 0 {
			t.Fatal(stderr)
		}
	}
	x, _ := os.ReadFile(filepath.Join(a, "effects.csv"))
	y, _ := os.ReadFile(filepath.Join(c, "effects.csv"))
	if bytes.Equal(x, y) {
		t.Error("--seed 99 gave the same effects.csv as the campaign seed")
	}
}

func TestAnalyseBadInput(t *testing.T) {
	cases := []struct {
		name     string
		mutate   func(*analysis.Dataset)
		args     []string
		code     int
		stderr   []string
		wantFile string
	}{
		{"baseline-not-a-level", nil, []string{"--baseline", "sasl_ssl"}, exitUsage,
			[]string{`baseline "sasl_ssl" is not a level of security`, "the levels are: mtls, plaintext, tls"}, ""},
		{"no-healthy-set", func(d *analysis.Dataset) {
			for i := range d.Runs {
				if d.Runs[i].Factors[0] == "plaintext" {
					d.Runs[i].Outcome = analysis.OutcomeInvalid
					d.Runs[i].Reasons = []string{"backlog not drained"}
				}
			}
		}, nil, exitInvalidRuns, []string{"no healthy matched set", "0 healthy"}, "report.html"},
		{"corrupt-histogram", func(d *analysis.Dataset) {
			d.Runs[4].Histograms["publish"] = []byte("garbage")
		}, nil, exitFailure, []string{"attempt 1: publish histogram is corrupt"}, ""},
		{"bad-method", nil, []string{"--method", "studentized"}, exitUsage, []string{"bca or percentile"}, ""},
		{"bad-confidence", nil, []string{"--confidence", "95"}, exitUsage, []string{"--confidence"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db := analysisSaveCampaign(t, c.mutate)
			out := filepath.Join(t.TempDir(), "out")
			args := append([]string{"analyse", "--db", db, "--out", out, "--resamples", "200"}, c.args...)
			code, _, stderr := runXP(t, args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, c.code, stderr)
			}
			for _, w := range c.stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q: %s", w, stderr)
				}
			}
			if c.wantFile != "" {
				if _, err := os.Stat(filepath.Join(out, c.wantFile)); err != nil {
					t.Errorf("partial report: %v", err)
				}
			}
		})
	}
	t.Run("missing-db", func(t *testing.T) {
		code, _, stderr := runXP(t, "analyse", "--db", filepath.Join(t.TempDir(), "nope.db"))
		if code != exitUsage || !strings.Contains(stderr, "nope.db") {
			t.Fatalf("exit %d: %s", code, stderr)
		}
	})
}

// TestAnalyseNativeCampaign runs a tiny campaign on the embedded cluster
// (plaintext vs tls vs proxy, one configuration, two replicates, 2 s runs)
// and analyses the db the runner wrote.
func TestAnalyseNativeCampaign(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	spec := analysisWriteFile(t, dir, "tiny.yaml", `campaign: tiny
seed: 1
replicates: 2
treatment: security
baseline: plaintext
factors:
  security: [plaintext, tls, proxy]
fixed:
  brokers: 1
  message_size: 1024
  acks: "1"
  target_rate: 500
  warmup_s: 1
  duration_s: 2
  drain_timeout_s: 5
`)
	plan := filepath.Join(dir, "tiny.jsonl")
	db := filepath.Join(dir, "tiny.db")
	if code, _, stderr := runXP(t, "plan", "expand", spec, "-o", plan); code != 0 {
		t.Fatalf("plan expand: %s", stderr)
	}
	// A loaded machine may fail the health gate of a run (exit 3); the
	// analysis must then count it out, which is checked below.
	if code, _, stderr := runXP(t, "run", plan, "--db", db, "--warmup-cap", "0"); code != 0 && code != exitInvalidRuns {
		t.Fatalf("run exit %d: %s", code, stderr)
	}
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runXP(t, "analyse", "--db", db, "--out", out, "--resamples", "1000")
	m := regexp.MustCompile(`tls vs plaintext: 2 matched sets, (\d) healthy, (\d) excluded`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("analyse exit %d, stderr does not count the sets: %s", code, stderr)
	}
	healthy, _ := strconv.Atoi(m[1])
	excluded, _ := strconv.Atoi(m[2])
	if healthy+excluded != 2 {
		t.Fatalf("stderr: %s", stderr)
	}
	if healthy == 0 {
		if code != exitInvalidRuns {
			t.Fatalf("no healthy set: exit %d, want 3", code)
		}
		if _, err := os.Stat(filepath.Join(out, "report.html")); err != nil {
			t.Fatal(err)
		}
		t.Logf("every matched set was unhealthy on this machine; checked the partial report only")
		return
	}
	if code != 0 {
		t.Fatalf("analyse exit %d: %s", code, stderr)
	}
	eff := analysisReadEffects(t, out)
	// 500 msg/s for 2 s: about 1,000 samples a run, enough for p95, at the
	// edge of p99, too few for p99.9 and p99.99.
	if r, ok := eff["tls|e2e_ms_p9999|all|ratio_of_means"]; ok {
		t.Errorf("p99.99 from runs of 1,000 samples: %v", r)
	}
	for _, k := range []string{"tls|publish_ms_p95|all|mean_penalty", "tls|e2e_ms_p95|all|ratio_of_means",
		"tls|client_cpu_us_per_msg|all|mean_difference"} {
		r, ok := eff[k]
		// Two sets at most: no interval, and a note saying why.
		if !ok || r[4] != m[1] || r[8] != "" || !strings.Contains(r[13], "too few matched sets") {
			t.Errorf("%s: %v (stdout %s)", k, r, stdout)
		}
	}
	runs, _ := os.ReadFile(filepath.Join(out, "runs.csv"))
	header := strings.SplitN(string(runs), "\n", 2)[0]
	if !strings.Contains(header, ",security,brokers,") || strings.Contains(header, ",seed,") {
		t.Errorf("runs.csv header: %s", header)
	}
	report, _ := os.ReadFile(filepath.Join(out, "report.html"))
	if !strings.Contains(string(report), "<dt>infrastructure groups</dt><dd>local brokers=1") {
		t.Errorf("report does not show the infrastructure group")
	}
	figs := analysisListFiles(t, filepath.Join(out, "figures"))
	if len(figs) != 3 { // forest, publish and e2e curves of the one configuration
		t.Errorf("figures: %v", figs)
	}
	analysisCheckTelemetry(t, out)
}

// analysisCheckTelemetry checks telemetry.csv and the report's "Hosts by
// role" table of a local campaign: the cluster and client processes of
// every level with a healthy run and the gateway of proxy, each with CPU
// and memory used. The group's gateway process runs beside the direct
// levels too, idle: sampled, with (almost) no CPU.
func analysisCheckTelemetry(t *testing.T, out string) {
	t.Helper()
	rows := analysisReadCSV(t, filepath.Join(out, "telemetry.csv"))
	if got := strings.Join(rows[0], ","); got != "pair,level,role,hosts,attempts,cpu_cores,mem_max_mib,net_rx_mib_s,net_tx_mib_s,disk_read_mib_s,disk_write_mib_s" {
		t.Fatalf("telemetry.csv header %s", got)
	}
	healthy := map[string]int{}
	rr := analysisReadCSV(t, filepath.Join(out, "runs.csv"))
	sec, outc, final := slices.Index(rr[0], "security"), slices.Index(rr[0], "outcome"), slices.Index(rr[0], "final")
	for _, r := range rr[1:] {
		if r[outc] == "done" && r[final] == "true" {
			healthy[r[sec]]++
		}
	}
	seen := map[string]bool{}
	for _, r := range rows[1:] {
		level, role := r[1], r[2]
		seen[level+"/"+role] = true
		n, _ := strconv.Atoi(r[4])
		cpu, err1 := strconv.ParseFloat(r[5], 64)
		mem, err2 := strconv.ParseFloat(r[6], 64)
		idle := role == "gateway" && level != "proxy"
		if r[3] != role || n != healthy[level] || err1 != nil || err2 != nil || mem <= 0 || mem > 1<<20 ||
			(!idle && (cpu <= 0 || cpu > 64)) || (idle && (cpu < 0 || cpu > 0.05)) {
			t.Errorf("telemetry.csv row %v: want host %s, %d healthy runs, memory used and CPU (idle: %v)", r, role, healthy[level], idle)
		}
		if strings.Join(r[7:], "") != "" {
			t.Errorf("telemetry.csv row %v: network or disk on the local target, which counts neither", r)
		}
	}
	for level, n := range healthy {
		roles := []string{"cluster", "client"}
		if level == "proxy" {
			roles = append(roles, "gateway")
		}
		for _, role := range roles {
			if n > 0 && !seen[level+"/"+role] {
				t.Errorf("telemetry.csv has no %s row for %s (%d healthy runs): %v", role, level, n, rows)
			}
		}
	}
	report, _ := os.ReadFile(filepath.Join(out, "report.html"))
	if !strings.Contains(string(report), `<h2>Hosts by role</h2>`) || !strings.Contains(string(report), `<table id="telemetry"`) {
		t.Error("report.html has no Hosts by role table")
	}
}

func TestAnalysePercentileMethod(t *testing.T) {
	db := analysisSaveLarge(t)
	out := filepath.Join(t.TempDir(), "out")
	if code, _, stderr := runXP(t, "analyse", "--db", db, "--out", out, "--resamples", "300", "--method", "percentile", "--confidence", "0.9"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	methods := map[string]int{}
	for _, r := range analysisReadEffects(t, out) {
		methods[r[10]]++
	}
	// Pooled over 120 sets: the bootstrap, as asked; per configuration
	// (60 sets): Student-t.
	if methods["percentile-cluster"] == 0 || methods["student-t"] == 0 || methods["bca"]+methods["bca-cluster"] != 0 {
		t.Fatalf("methods in effects.csv: %v", methods)
	}
	tex, _ := os.ReadFile(filepath.Join(out, "tables.tex"))
	// The headline tables give the geometric mean penalty, whose interval
	// is its own t-test's whatever --method says (the bootstrap is for
	// the other statistics); the caption names it with the level.
	if !strings.Contains(string(tex), `90\% intervals`) || !strings.Contains(string(tex), "Intervals: Student-t on the log ratios") {
		t.Errorf("tables.tex does not state the headline's method and level")
	}
}

// analysisReadCSV reads a whole CSV file.
func analysisReadCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return rows
}
