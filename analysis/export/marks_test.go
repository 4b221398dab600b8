package export

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/xp-bench/xp/analysis"
)

// TestHeadlineMarksInOutputs: a treatment 20 % faster in every set (better
// than baseline) and one whose small effect a single set decides (fragile)
// are marked in effects.csv (fragile, better_than_baseline, the sets and
// the driving runs), the report's headline table (‡, §, with the sets and
// runs), tables.tex (\ddagger, \S, explained in the caption) and the
// forest plot (‡, § after the level); a steady +10 % carries neither mark,
// and the Holm family is said in the report, significance.csv and
// tables.tex.
func TestHeadlineMarksInOutputs(t *testing.T) {
	block := []float64{4, 6, 5, 7, 4.5, 5.5}
	ratios := map[string][]float64{
		"plaintext": {1, 1, 1, 1, 1, 1},
		"faster":    {0.8, 0.79, 0.81, 0.8, 0.82, 0.78},
		"decided":   {0.99, 0.99, 0.995, 0.99, 0.99, 1.09},
		"steady":    {1.1, 1.09, 1.11, 1.1, 1.12, 1.08},
	}
	d := &analysis.Dataset{Campaign: "marks", Seed: 1, Treatment: "security", Baseline: "plaintext",
		Factors: []string{"security"}, Metrics: []analysis.MetricDef{{Name: "publish_ms_p99", Unit: "ms"}}, Imported: true}
	for lv, rs := range ratios {
		for i, r := range rs {
			d.Runs = append(d.Runs, analysis.Run{Run: fmt.Sprintf("%s-r%d", lv, i+1), Cell: "c-" + lv, Pair: "c", Replicate: i + 1,
				Attempt: 1, Final: true, Factors: []string{lv}, Outcome: analysis.OutcomeDone,
				Metrics: map[string]float64{"publish_ms_p99": block[i] * r}})
		}
	}
	slices.SortFunc(d.Runs, func(a, b analysis.Run) int { return strings.Compare(a.Run, b.Run) })
	dir := t.TempDir()
	analyseInto(t, d, dir)

	eff := readCSV(t, filepath.Join(dir, "effects.csv"))
	col := func(name string) int { return slices.Index(eff[0], name) }
	want := map[string][2]string{"faster": {"false", "true"}, "decided": {"true", "false"}, "steady": {"false", "false"}}
	for _, r := range eff[1:] {
		if r[col("scope")] != analysis.ScopeAll || r[col("statistic")] != analysis.StatHeadline {
			continue
		}
		w := want[r[col("treatment")]]
		if r[col("fragile")] != w[0] || r[col("better_than_baseline")] != w[1] {
			t.Errorf("%s: fragile %s better %s, want %v", r[0], r[col("fragile")], r[col("better_than_baseline")], w)
		}
		if w[0] == "true" && !strings.Contains(r[col("fragile_sets")], "c r6") || w[1] == "true" && !strings.Contains(r[col("driving_runs")], "faster-r6;plaintext-r6") {
			t.Errorf("%s: fragile sets %q driving runs %q", r[0], r[col("fragile_sets")], r[col("driving_runs")])
		}
		if !strings.HasPrefix(r[col("holm_family")], "headline, all: 3 tests") {
			t.Errorf("%s: holm family %q", r[0], r[col("holm_family")])
		}
	}

	page := read(t, filepath.Join(dir, "report.html"))
	head := page[strings.Index(page, `<section id="headline">`):]
	head = head[:strings.Index(head, "</section>")]
	for _, s := range []string{fragileMark + " fragile without c r6", betterMark + " better: runs faster-r6, plaintext-r6", "headline, all: 3 tests"} {
		if !strings.Contains(head, s) {
			t.Errorf("the report's headline lacks %q:\n%s", s, head)
		}
	}
	if strings.Count(head, fragileMark) < 2 || strings.Count(head, betterMark) < 2 {
		t.Errorf("the report's headline does not mark the rows and explain the marks:\n%s", head)
	}
	if sig := read(t, filepath.Join(dir, "significance.csv")); !strings.Contains(sig, "per configuration, all: 3 tests") {
		t.Errorf("significance.csv does not name its family:\n%s", sig)
	}
	tex := read(t, filepath.Join(dir, "tables.tex"))
	// The marks stand after a row's other marks († and ° come first).
	for _, re := range []string{`\\textsuperscript\{(?:\\[a-zA-Z]+\{\})*\\ddag\{\}`, `\\textsuperscript\{(?:\\[a-zA-Z]+\{\})*\\S\{\}`} {
		if !regexp.MustCompile(re).MatchString(tex) {
			t.Errorf("tables.tex lacks a mark matching %s", re)
		}
	}
	if !strings.Contains(tex, "Holm-adjusted across the headline family (headline, all: 3 tests") {
		t.Error("tables.tex does not name the Holm family")
	}
	svg := read(t, filepath.Join(dir, "figures", "forest-all.svg"))
	label := func(level, mark string) bool {
		return regexp.MustCompile(`>` + level + `[†°‡§]*` + mark + `[†°‡§]*<`).MatchString(svg)
	}
	if !label("decided", fragileMark) || !label("faster", betterMark) {
		t.Errorf("the forest plot lacks the fragile label of decided or the better label of faster")
	}
	if label("steady", fragileMark) || label("steady", betterMark) {
		t.Error("the forest plot marks the steady row")
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
