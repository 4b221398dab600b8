package export

import (
	"bytes"
	"encoding/csv"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/xp-bench/xp/analysis"
)

func testDataset() *analysis.Dataset {
	return analysis.Synthetic(analysis.SyntheticConfig{Seed: 4, Levels: []string{"plaintext", "tls", "mtls"},
		Factors: []analysis.SyntheticFactor{
			{Name: "message_size", Levels: []string{"1024", "10240"}},
			{Name: "acks", Levels: []string{"1", "all"}},
		},
		Replicates: 3, Penalty: map[string]float64{"tls": 10, "mtls": 15},
		Histograms: true, HistogramValues: 500, Invalid: 7})
}

func analyseInto(t *testing.T, d *analysis.Dataset, dir string) *analysis.Result {
	t.Helper()
	res, err := analysis.Analyse(d, analysis.Options{Resamples: 1000})
	if err != nil && !errors.Is(err, analysis.ErrNoHealthySet) {
		t.Fatal(err)
	}
	checkRowsAgree(t, res)
	if err := Write(dir, res); err != nil {
		t.Fatal(err)
	}
	return res
}

// TestWriteIsByteIdentical analyses the same campaign twice, into two
// directories, and compares every file.
func TestWriteIsByteIdentical(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	analyseInto(t, testDataset(), a)
	analyseInto(t, testDataset(), b)
	var files []string
	filepath.WalkDir(a, func(p string, de os.DirEntry, err error) error {
		if err == nil && !de.IsDir() {
			rel, _ := filepath.Rel(a, p)
			files = append(files, rel)
		}
		return nil
	})
	want := []string{"cells.csv", "effects.csv", "excluded.csv", "latency.csv", "report.html", "runs.csv",
		"sensitivity.csv", "significance.csv", "tables.tex", "telemetry.csv"}
	for _, w := range want {
		if !slices.Contains(files, w) {
			t.Errorf("missing %s", w)
		}
	}
	nsvg := 0
	for _, f := range files {
		if strings.HasPrefix(f, "figures/") {
			nsvg++
		}
		x, err1 := os.ReadFile(filepath.Join(a, f))
		y, err2 := os.ReadFile(filepath.Join(b, f))
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: %v %v", f, err1, err2)
		}
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between two analyses of the same campaign", f)
		}
	}
	// forest, 2 sensitivity, 4 cells x 2 kinds of latency curves
	if nsvg != 1+2+8 {
		t.Errorf("%d figures, want 11: %v", nsvg, files)
	}
}

// TestWriteReplacesStaleFigures: writing into a directory used before
// leaves no figure of the earlier analysis behind.
func TestWriteReplacesStaleFigures(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "figures"), 0o755); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, "figures", "latency-oldpair-e2e.svg")
	os.WriteFile(stale, []byte("<svg/>"), 0o644)
	analyseInto(t, testDataset(), dir)
	if _, err := os.Stat(stale); err == nil {
		t.Fatal("stale figure kept")
	}
	if _, err := os.Stat(filepath.Join(dir, "figures", "forest-all.svg")); err != nil {
		t.Fatal(err)
	}
}

func readCSV(t *testing.T, path string) [][]string {
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

func TestOutputsContent(t *testing.T) {
	dir := t.TempDir()
	d := testDataset()
	// A run metric named like a factor, as the load generator reports
	// target_rate: runs.csv has the column once.
	for i := range d.Runs {
		d.Runs[i].Metrics["acks"] = 1
	}
	res := analyseInto(t, d, dir)
	eff := readCSV(t, filepath.Join(dir, "effects.csv"))
	if strings.Join(eff[0], ",") != "treatment,baseline,metric,scope,n,statistic,unit,estimate,ci_low,ci_high,method,p_value,p_holm,note,test,p_min,bounded,outlier_sets,"+
		"log_estimate,log_se,df,holm_family,fragile,fragile_sets,better_than_baseline,driving_runs" {
		t.Fatalf("effects.csv header %v", eff[0])
	}
	units := map[string]string{"mean_penalty": "pct", "median_penalty": "pct", "ratio_of_means": "ratio", analysis.StatRatioPenalty: "pct"}
	for _, r := range eff[1:] {
		if u, ok := units[r[5]]; ok && r[6] != u {
			t.Errorf("statistic %s unit %s, want %s", r[5], r[6], u)
		}
		if r[5] == "mean_difference" && strings.HasPrefix(r[2], "publish_ms") && r[6] != "ms" {
			t.Errorf("latency difference unit %s", r[6])
		}
		// Every interval has the p-value of the test it inverts; Holm's
		// adjustment is on the headline rows' tests.
		if r[8] != "" && r[11] == "" {
			t.Errorf("row with an interval but no p-value: %v", r)
		}
		headline := r[5] == analysis.StatGeoPenalty || r[5] == analysis.StatGeoRatio
		if headline && !strings.HasSuffix(r[3], analysis.ScopeSuffixWithoutOutliers) && (r[11] == "") != (r[12] == "") || !headline && r[12] != "" {
			t.Errorf("p-value %q, Holm p-value %q on %s %s", r[11], r[12], r[3], r[5])
		}
	}
	runs := readCSV(t, filepath.Join(dir, "runs.csv"))
	seen := map[string]bool{}
	for _, h := range runs[0] {
		if seen[h] {
			t.Errorf("runs.csv has column %s twice: %v", h, runs[0])
		}
		seen[h] = true
	}
	if len(runs)-1 != len(d.Runs) {
		t.Errorf("runs.csv has %d rows, want %d", len(runs)-1, len(d.Runs))
	}
	invalid := 0
	for _, r := range runs[1:] {
		if slices.Contains(r, "invalid") {
			invalid++
		}
	}
	if invalid == 0 {
		t.Error("runs.csv shows no invalid run")
	}
	cells := readCSV(t, filepath.Join(dir, "cells.csv"))
	if cells[0][0] != "pair" || cells[0][1] != "message_size" || len(cells) != 5 {
		t.Errorf("cells.csv: %v", cells)
	}
	// Excluded sets are counted: in excluded.csv and in the report.
	ex := readCSV(t, filepath.Join(dir, "excluded.csv"))
	total := 0
	for _, c := range res.Counts {
		total += c.Excluded
	}
	if total == 0 || len(ex)-1 != total {
		t.Errorf("excluded.csv has %d rows, counts say %d", len(ex)-1, total)
	}
	texb, _ := os.ReadFile(filepath.Join(dir, "tables.tex"))
	tx := string(texb)
	for _, w := range []string{`\toprule`, `\midrule`, `\bottomrule`, `Publish latency p99 &`, "excluded"} {
		if !strings.Contains(tx, w) {
			t.Errorf("tables.tex lacks %q", w)
		}
	}
	// A campaign without telemetry (as this synthetic one, or an import)
	// gets a telemetry.csv of its header only and no table in the report.
	if tel := readCSV(t, filepath.Join(dir, "telemetry.csv")); len(tel) != 1 || tel[0][0] != "pair" {
		t.Errorf("telemetry.csv of a campaign without telemetry: %v", tel)
	}
	report, _ := os.ReadFile(filepath.Join(dir, "report.html"))
	if bytes.Contains(report, []byte("Hosts by role")) || bytes.Contains(report, []byte(`id="telemetry"`)) {
		t.Error("report.html has a Hosts by role section without telemetry")
	}
	// A link a reader may follow is not a fetch; a resource the page
	// loads is.
	if m := regexp.MustCompile(`(?i)<(?:img|script|link|iframe|source|image|use|object|embed)\b[^>]*(?:src|href)\s*=\s*["']?(https?:|//)|@import|url\(\s*["']?https?:`).Find(report); m != nil {
		t.Errorf("report.html refers to the network: %s", m)
	}
	svg, _ := os.ReadFile(filepath.Join(dir, "figures", "forest-all.svg"))
	// A heading per metric family, a panel per metric titled in words,
	// treatments (with their marks) beside the data.
	for _, w := range []string{">Latency<", ">CPU<", ">Publish latency p99<", ">mtls", ">tls"} {
		if !bytes.Contains(svg, []byte(w)) {
			t.Errorf("forest-all.svg lacks %s", w)
		}
	}
}

// TestReportInChromium opens report.html from disk in headless Chromium
// (Debian's package), with networking off, and checks the rendered DOM:
// tables and inline figures are there and the script ran (sorting and
// filtering from the address).
func TestReportInChromium(t *testing.T) {
	dir := t.TempDir()
	d := testDataset()
	// Telemetry of two broker hosts and a client in every run: the
	// report's "Hosts by role" table.
	for i := range d.Runs {
		d.Runs[i].Hosts = []analysis.HostUse{
			{Host: "broker-1", Role: "broker", CPUCores: 1.5, MemMaxMiB: 900, NetRxMiBs: 12, NetTxMiBs: 30, DiskReadMiBs: 0, DiskWriteMiBs: 8},
			{Host: "broker-2", Role: "broker", CPUCores: 2.5, MemMaxMiB: 1000, NetRxMiBs: 14, NetTxMiBs: 32, DiskReadMiBs: 0, DiskWriteMiBs: 10},
			{Host: "client-1", Role: "client", CPUCores: 0.75, MemMaxMiB: 200, NetRxMiBs: 30, NetTxMiBs: 13, DiskReadMiBs: 0, DiskWriteMiBs: 0},
		}
	}
	analyseInto(t, d, dir)
	page := "file://" + filepath.Join(dir, "report.html")
	dump := func(url string) string {
		profile := t.TempDir()
		cmd := exec.Command("/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu",
			"--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
			"--user-data-dir="+profile, "--virtual-time-budget=5000", "--dump-dom", url)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("chromium: %v\n%s", err, stderr.String())
		}
		return string(out)
	}
	dom := dump(page)
	for _, w := range []string{`data-report="ready"`, `id="fig-forest-all"`, `id="sensitivity"`, `id="excluded"`,
		`<h2>Hosts by role</h2>`, `>CPU (cores busy)</th>`, `<td>broker-1, broker-2</td><td class="n">3</td><td class="n">2.00</td><td class="n" data-v="1000">1,000</td>`} {
		if !strings.Contains(dom, w) {
			t.Errorf("rendered DOM lacks %q", w)
		}
	}
	for _, id := range []string{"effects", "runs", "sensitivity", "excluded", "counts", "significance", "telemetry"} {
		tag := tableTag(dom, id)
		if !strings.Contains(tag, `data-interactive="yes"`) {
			t.Errorf("table %s not made interactive by the script: %s", id, tag)
		}
	}
	if n := strings.Count(dom, "<svg"); n != 11 {
		t.Errorf("%d inline SVG figures, want 11", n)
	}

	// Filtering and sorting from the address.
	dom = dump(page + "#filter=mtls&sort=runs:1:desc")
	tag := tableTag(dom, "runs")
	m := regexp.MustCompile(`data-shown="(\d+)"`).FindStringSubmatch(tag)
	if m == nil || !strings.Contains(tag, `data-sorted="1:desc"`) {
		t.Fatalf("runs table not filtered and sorted by the script: %s", tag)
	}
	if n, _ := strconv.Atoi(m[1]); n != 12 {
		t.Errorf("filter mtls shows %d runs, want 12", n)
	}
	i := strings.Index(dom, `<table id="runs"`)
	body := dom[i:]
	body = body[:strings.Index(body, "</table>")]
	var pairs []string
	for _, row := range regexp.MustCompile(`<tr>(.*?)</tr>`).FindAllStringSubmatch(body, -1) {
		cells := regexp.MustCompile(`<td[^>]*>(.*?)</td>`).FindAllStringSubmatch(row[1], -1)
		if len(cells) > 1 {
			pairs = append(pairs, cells[1][1])
		}
	}
	if len(pairs) == 0 || !slices.IsSortedFunc(pairs, func(a, b string) int { return strings.Compare(b, a) }) {
		t.Errorf("runs not sorted by pair descending: %v", pairs)
	}
}

// tableTag returns the opening tag of the table with the given id.
func tableTag(dom, id string) string {
	return regexp.MustCompile(`<table id="` + id + `"[^>]*>`).FindString(dom)
}

// TestOutliersAndBoundsInOutputs: a planted outlier (publish p99 443 ms
// among siblings near 6 ms) is listed in runs.csv's outliers column and
// in the report's outliers section with the headline without it; an
// interval whose runs alone cannot bound the mean is bounded=false in
// effects.csv and marked in the report's headline.
func TestOutliersAndBoundsInOutputs(t *testing.T) {
	d := analysis.Synthetic(analysis.SyntheticConfig{Seed: 5, Levels: []string{"plaintext", "tls"},
		Factors: []analysis.SyntheticFactor{{Name: "message_size", Levels: []string{"1024", "10240"}}}, Replicates: 3,
		Penalty: map[string]float64{"tls": 10}})
	var planted string
	for i := range d.Runs {
		r := &d.Runs[i]
		if r.Factors[0] == "plaintext" && r.Pair == "p00000" && r.Replicate == 2 {
			r.Metrics["publish_ms_p99"] = 443
			planted = r.Run
		}
	}
	dir := t.TempDir()
	analyseInto(t, d, dir)
	runs := readCSV(t, filepath.Join(dir, "runs.csv"))
	col := slices.Index(runs[0], "outliers")
	if col < 0 {
		t.Fatalf("runs.csv has no outliers column: %v", runs[0])
	}
	for _, r := range runs[1:] {
		want := ""
		if r[0] == planted {
			want = "publish_ms_p99"
		}
		if r[col] != want {
			t.Errorf("runs.csv %s outliers %q, want %q", r[0], r[col], want)
		}
	}
	eff := readCSV(t, filepath.Join(dir, "effects.csv"))
	without, unbounded := 0, 0
	for _, r := range eff[1:] {
		if r[3] == analysis.ScopeAll+analysis.ScopeSuffixWithoutOutliers {
			without++
			if r[2] != "publish_ms_p99" || r[4] != "5" {
				t.Errorf("without outliers: %v", r)
			}
		}
		if r[3] == analysis.ScopeAll && r[2] == "publish_ms_p99" && r[17] != "1" {
			t.Errorf("all publish_ms_p99 %s: outlier_sets %q, want 1", r[5], r[17])
		}
		if r[16] == "false" {
			unbounded++
			if !strings.Contains(r[13], "its runs alone cannot bound the mean") {
				t.Errorf("bounded=false without the note: %v", r)
			}
		}
	}
	if without != 7 || unbounded == 0 {
		t.Errorf("%d rows without outliers (want the 7 statistics), %d unbounded", without, unbounded)
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(html)
	sec := page[strings.Index(page, `<section id="outliers-section">`):]
	sec = sec[:strings.Index(sec, "</section>")]
	if !strings.Contains(sec, planted) || !strings.Contains(sec, `id="outlier-sensitivity"`) {
		t.Errorf("the outliers section lacks the run or the sensitivity line:\n%s", sec)
	}
	head := page[strings.Index(page, `<section id="headline">`):]
	head = head[:strings.Index(head, "</section>")]
	if !strings.Contains(head, "†") || !strings.Contains(head, "cannot bound the mean") {
		t.Errorf("the headline does not mark intervals that cannot bound the mean:\n%s", head)
	}
}

// TestTwoStageOutputs: a campaign with a two-stage design gets
// twostage.csv (a row per configuration and treatment) and a report
// section; one without gets neither.
func TestTwoStageOutputs(t *testing.T) {
	for _, staged := range []bool{false, true} {
		d := analysis.Synthetic(analysis.SyntheticConfig{Seed: 9, Levels: []string{"plaintext", "tls"},
			Factors: []analysis.SyntheticFactor{{Name: "message_size", Levels: []string{"1024", "10240"}}}, Replicates: 5,
			Penalty: map[string]float64{"tls": 10}})
		if staged {
			d.Stage = &analysis.StageDesign{HalfWidth: 2, Metric: "publish_ms_p99", Confidence: 0.95, MaxReplicates: 5, FirstStage: 3,
				Decided: true, Replicates: map[string]int{"p00000": 5, "p00001": 5}}
		}
		dir := t.TempDir()
		analyseInto(t, d, dir)
		_, err := os.Stat(filepath.Join(dir, "twostage.csv"))
		html, _ := os.ReadFile(filepath.Join(dir, "report.html"))
		if !staged {
			if err == nil || strings.Contains(string(html), "twostage-section") {
				t.Errorf("no design, yet twostage.csv (%v) or a report section", err)
			}
			continue
		}
		rows := readCSV(t, filepath.Join(dir, "twostage.csv"))
		if strings.Join(rows[0], ",") != strings.Join(twoStageHeader, ",") || len(rows) != 3 {
			t.Fatalf("twostage.csv %v", rows)
		}
		for _, r := range rows[1:] {
			if r[1] != "tls" || r[3] != "3" || r[6] != "5" || r[7] != "5" || r[9] == "" || r[10] == "" {
				t.Errorf("twostage.csv row %v", r)
			}
		}
		if !strings.Contains(string(html), `id="twostage-section"`) {
			t.Error("no two-stage section in the report")
		}
	}
}

// checkRowsAgree fails on a row of res with an interval whose p-value
// disagrees with it (p < 1 - confidence exactly when the interval
// excludes no effect: 0, or 1 for a ratio) or is missing, and on a
// penalty interval below -100 % of a metric where smaller is better.
func checkRowsAgree(t *testing.T, res *analysis.Result) {
	t.Helper()
	higher := map[string]bool{}
	for _, m := range res.Dataset.Metrics {
		higher[m.Name] = m.Higher
	}
	for _, e := range res.Effects {
		if math.IsNaN(e.Low) {
			continue
		}
		null := 0.0
		if e.Unit == "ratio" {
			null = 1
		}
		if excl := e.Low > null || e.High < null; math.IsNaN(e.P) || excl != (e.P < 1-res.Options.Confidence) {
			t.Errorf("%s %s %s %s: [%g, %g] p %v", e.Treatment, e.Metric, e.Scope, e.Statistic, e.Low, e.High, e.P)
		}
		if e.Unit == "pct" && !higher[e.Metric] && e.Low < -100 {
			t.Errorf("%s %s %s %s: interval [%g, %g] below -100%%", e.Treatment, e.Metric, e.Scope, e.Statistic, e.Low, e.High)
		}
	}
}
