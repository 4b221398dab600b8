package export

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"

	"github.com/xp-bench/xp/analysis"
)

// unboundedMark marks an interval whose matched sets alone cannot bound
// the mean (effects.csv bounded = false; the note says why).
const unboundedMark = " †"

// intervalText is an effect's interval as the report shows it, bounds
// grouped by thousands, followed by the effect's marks (effectMarks: †
// when its runs alone cannot bound the mean, and the others).
func intervalText(e analysis.Effect) string {
	if math.IsNaN(e.Low) {
		return "none: " + e.Note
	}
	iv := "[" + groupThousands(short(e.Low)) + ", " + groupThousands(short(e.High)) + "]"
	if m := marksOf(e); m != "" {
		iv += " " + m
	}
	return iv
}

// Marks of headline rows, beside their estimate in report.html, tables.tex
// and the forest plot.
const (
	// fragileMark marks a row whose sign or significance flips with one
	// matched set left out.
	fragileMark = "‡"
	// betterMark marks a row saying the treatment does better than the
	// baseline beyond its interval: check the runs driving it first.
	betterMark = "§"
)

// headlineFlags says in words why a headline row is marked, with the
// sets or runs behind it, and how many sets the headline left out.
func headlineFlags(e analysis.Effect) string {
	var out []string
	if e.Fragile {
		out = append(out, fragileMark+" fragile without "+firstFew(e.FragileSets, 2))
	}
	if e.Better {
		out = append(out, betterMark+" better: runs "+firstFew(e.Drivers, 2))
	}
	if e.OutlierSets > 0 {
		out = append(out, fmt.Sprintf("%d gross outlier sets out", e.OutlierSets))
	}
	return strings.Join(out, "; ")
}

// firstFew joins the first k of v, saying how many more there are
// (effects.csv has them all).
func firstFew(v []string, k int) string {
	if len(v) <= k {
		return strings.Join(v, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(v[:k], ", "), len(v)-k)
}

// writeMarksNote explains the marks other than † (writeUnboundedNote
// explains that one at length) that the effects shown carry.
func writeMarksNote(b *bytes.Buffer, effects []analysis.Effect) {
	for _, l := range marksLegend(effects) {
		if !strings.HasPrefix(l, strings.TrimSpace(unboundedMark)) {
			fmt.Fprintf(b, "<p class=\"note\">%s</p>\n", html.EscapeString(l))
		}
	}
}

// writeUnboundedNote explains the mark below a table that shows one.
func writeUnboundedNote(b *bytes.Buffer, res *analysis.Result) {
	for _, e := range res.Effects {
		if e.Unbounded {
			fmt.Fprintf(b, "<p class=\"note\">%s: the interval rests on fewer than %d matched sets and borrows no spread from other configurations (fewer than %d, or their spreads differ); its runs alone cannot bound the mean, since a rare slow run (a stall, a noisy neighbour) may be missing from them. The interval is given; effects.csv says bounded = false and why in note.</p>\n",
				strings.TrimSpace(unboundedMark), analysis.MinSetsAlone, analysis.MinConfigsForPooling)
			return
		}
	}
}

// writeOutliers lists the runs flagged as outliers and gives the headline
// again without their matched sets, as a sensitivity line.
func writeOutliers(b *bytes.Buffer, res *analysis.Result) {
	esc := html.EscapeString
	b.WriteString("<section id=\"outliers-section\"><h2>Outliers</h2>\n")
	fmt.Fprintf(b, "<p>A run is flagged for a metric when the log of its value lies more than %d typical deviations from the median of its configuration and level's healthy runs (typical: the larger of their median absolute deviation and the campaign's for the metric; docs/analysis.md). Flagged runs stay in every estimate above; runs.csv lists them in outliers.</p>\n", analysis.OutlierFactor)
	if len(res.Outliers) == 0 {
		b.WriteString("<p>No run is flagged.</p>\n</section>\n")
		return
	}
	ot := &table{id: "outliers", header: []string{"run", "pair", res.Dataset.Treatment, "metric", "value", "configuration median", "typical deviations"}}
	for _, o := range res.Outliers {
		ot.rows = append(ot.rows, []string{o.Run, o.Pair, o.Level, o.Metric, short(o.Value), short(o.Median), short(o.Deviations)})
	}
	ot.numeric = numericCols(ot.header, ot.rows)
	ot.write(b)
	fmt.Fprintf(b, "<p>Sensitivity: the headline penalty (geometric mean ratio; it leaves out only the sets holding a run %d or more typical deviations away) and the same without every matched set that holds a flagged run.</p>\n", analysis.GrossOutlierFactor)
	st := &table{id: "outlier-sensitivity", header: []string{"treatment", "metric", "scope", "penalty % headline", "interval", "n", "penalty % without flagged runs", "interval", "n"}}
	for _, e := range res.Effects {
		if e.Statistic != analysis.StatHeadline || !strings.HasSuffix(e.Scope, analysis.ScopeSuffixWithoutOutliers) {
			continue
		}
		scope := strings.TrimSuffix(e.Scope, analysis.ScopeSuffixWithoutOutliers)
		all, ok := headline(res, e.Treatment, e.Metric, scope)
		if !ok {
			continue
		}
		st.rows = append(st.rows, []string{e.Treatment, metricName(e.Metric), scope, short(all.Estimate), intervalText(all), strconv.Itoa(all.N),
			short(e.Estimate), intervalText(e), strconv.Itoa(e.N)})
	}
	st.numeric = numericCols(st.header, st.rows)
	st.write(b)
	fmt.Fprintf(b, "<p>%s</p>\n</section>\n", esc("effects.csv has every statistic of these lines, scope ending in "+analysis.ScopeSuffixWithoutOutliers+"."))
}
