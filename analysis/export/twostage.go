package export

import (
	"bytes"
	"fmt"
	"html"
	"path/filepath"
	"strconv"

	"github.com/xp-bench/xp/analysis"
)

// twoStageHeader is the column list of twostage.csv: per configuration and
// treatment, what a two-stage design (xp run --halfwidth) asked and
// achieved on its metric (analysis.StageResult).
var twoStageHeader = []string{"pair", "treatment", "metric", "first_stage_sets", "first_stage_sd", "sets_needed", "replicates",
	"sets", "halfwidth_asked", "halfwidth_stein", "halfwidth_interval"}

func twoStageRows(res *analysis.Result) [][]string {
	var rows [][]string
	for _, s := range res.Stages {
		rows = append(rows, []string{s.Pair, s.Treatment, s.Metric, strconv.Itoa(s.FirstSets), num(s.FirstSD), strconv.Itoa(s.Needed),
			strconv.Itoa(s.Replicates), strconv.Itoa(s.Sets), num(s.Asked), num(s.Stein), num(s.Interval)})
	}
	return rows
}

// writeTwoStageCSV writes twostage.csv for a campaign with a two-stage
// design.
func writeTwoStageCSV(dir string, res *analysis.Result) error {
	if res.Dataset.Stage == nil {
		return nil
	}
	return writeCSV(filepath.Join(dir, "twostage.csv"), twoStageHeader, twoStageRows(res))
}

// writeTwoStage is the report's section on a two-stage design.
func writeTwoStage(b *bytes.Buffer, res *analysis.Result) {
	sd := res.Dataset.Stage
	if sd == nil {
		return
	}
	b.WriteString("<section id=\"twostage-section\"><h2>Two-stage design</h2>\n")
	fmt.Fprintf(b, "<p>%s</p>\n", html.EscapeString(fmt.Sprintf(
		"The campaign asked each configuration's %g%% interval of the mean penalty of %s for a half-width of %g points (xp run --halfwidth): its %d planned replicates were the first stage, and Stein's rule gave each configuration the sets it needed, at most %d replicates in all. Stein is the half-width of Stein's interval, t(n1-1)·s1/√N (n1 first-stage sets of spread s1, N sets in all); interval is half the width of the configuration's interval in effects.csv. twostage.csv has the same numbers unrounded.",
		sd.Confidence*100, sd.Metric, sd.HalfWidth, sd.FirstStage, sd.MaxReplicates)))
	if !sd.Decided {
		b.WriteString("<p class=\"note\">The second stage is not decided yet: the first stage is not done.</p>\n")
	}
	t := &table{id: "twostage", header: []string{"pair", "treatment", "first-stage sets", "first-stage sd", "sets needed", "replicates", "sets", "half-width asked", "Stein half-width", "interval half-width"}}
	for _, r := range twoStageRows(res) {
		t.rows = append(t.rows, []string{r[0], r[1], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10]})
	}
	shorten(t.rows, 3, 7, 8, 9)
	t.numeric = numericCols(t.header, t.rows)
	t.write(b)
	b.WriteString("</section>\n")
}
