package export

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/xp-bench/xp/analysis"
)

// CompareHeader is the exact column list of compare.csv: one row per
// headline row of either campaign. Columns are only ever added at the
// end.
var CompareHeader = []string{"treatment", "baseline", "metric", "scope", "statistic", "in",
	"a_n", "a_estimate", "a_ci_low", "a_ci_high", "a_method",
	"b_n", "b_estimate", "b_ci_low", "b_ci_high", "b_method",
	"b_in_a", "a_in_b", "signs_agree", "replicated",
	"a_log_ratio", "a_log_se", "b_log_ratio", "b_log_se",
	"fixed_estimate", "fixed_ci_low", "fixed_ci_high",
	"random_estimate", "random_ci_low", "random_ci_high",
	"q", "q_p", "i2", "tau2", "note"}

// compareRows are the rows of compare.csv, full precision.
func compareRows(c *analysis.Comparison) [][]string {
	side := func(e *analysis.Effect) []string {
		if e == nil {
			return []string{"", "", "", "", ""}
		}
		return []string{strconv.Itoa(e.N), num(e.Estimate), num(e.Low), num(e.High), e.Method}
	}
	var rows [][]string
	for _, r := range c.Rows {
		row := []string{r.Treatment, r.Baseline, r.Metric, r.Scope, r.Statistic, r.In}
		row = append(row, side(r.A)...)
		row = append(row, side(r.B)...)
		row = append(row, string(r.BInA), string(r.AInB), string(r.SignsAgree), string(r.Replicated),
			num(r.LogA), num(r.SEA), num(r.LogB), num(r.SEB),
			num(r.Fixed.Estimate), num(r.Fixed.Low), num(r.Fixed.High),
			num(r.Random.Estimate), num(r.Random.Low), num(r.Random.High),
			num(r.Het.Q), num(r.Het.P), num(r.Het.I2), num(r.Het.Tau2), r.Note)
		rows = append(rows, row)
	}
	return rows
}

// WriteCompareCSV writes compare.csv's content to w.
func WriteCompareCSV(w io.Writer, c *analysis.Comparison) error {
	cw := csv.NewWriter(w)
	cw.Write(CompareHeader)
	cw.WriteAll(compareRows(c))
	return cw.Error()
}

// WriteCompare writes compare.csv and compare.html into dir (created if
// missing).
func WriteCompare(dir string, c *analysis.Comparison) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("output directory %s: %w", dir, err)
	}
	if err := writeCSV(filepath.Join(dir, "compare.csv"), CompareHeader, compareRows(c)); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "compare.html"), compareHTML(c), 0o644)
}

// compareStyle adds to the report's style: cells break between words,
// and inside a word only where it cannot fit otherwise, so that no
// column shrinks to a letter's width.
const compareStyle = `#compare th,#compare td,#campaigns-table th,#campaigns-table td{overflow-wrap:break-word}`

// compareHTML is compare.html: one self-contained page in the report's
// style (its stylesheet and table script inline, nothing fetched).
func compareHTML(c *analysis.Comparison) []byte {
	var b bytes.Buffer
	esc := html.EscapeString
	s := c.Summary()
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>xp compare: %s and %s</title>\n<style>\n%s\n%s\n</style>\n</head>\n<body>\n",
		esc(c.LabelA), esc(c.LabelB), reportStyle, compareStyle)
	fmt.Fprintf(&b, "<h1>Does it replicate? %s and %s</h1>\n", esc(c.LabelA), esc(c.LabelB))
	fmt.Fprintf(&b, "<p id=\"summary\"><strong>%s</strong></p>\n", esc(s.String()))
	for _, n := range c.Notes {
		fmt.Fprintf(&b, "<p class=\"note\">%s</p>\n", esc(n))
	}
	writeCompareCampaigns(&b, c)
	writeCompareMethod(&b, c)
	b.WriteString("<section id=\"rows-section\"><h2>Headline rows in both campaigns</h2>\n")
	both := &table{id: "compare", whole: true, header: []string{"metric", c.A.Dataset.Treatment, "scope",
		"A: penalty % [interval] n", "B: penalty % [interval] n", "B in A", "A in B", "signs agree", "replicated",
		"fixed effect", "random effects", "heterogeneity", "note"}}
	one := &table{id: "one-campaign", whole: true, header: []string{"metric", c.A.Dataset.Treatment, "scope", "in", "penalty % [interval] n"}}
	for _, r := range c.Rows {
		switch r.In {
		case analysis.InBoth:
			both.rows = append(both.rows, []string{metricName(r.Metric), r.Treatment, r.Scope, sideText(r.A), sideText(r.B),
				string(r.BInA), string(r.AInB), string(r.SignsAgree), string(r.Replicated),
				metaText(r.Fixed), metaText(r.Random), hetText(r.Het), r.Note})
		case analysis.OnlyInA:
			one.rows = append(one.rows, []string{metricName(r.Metric), r.Treatment, r.Scope, "only in " + c.LabelA, sideText(r.A)})
		case analysis.OnlyInB:
			one.rows = append(one.rows, []string{metricName(r.Metric), r.Treatment, r.Scope, "only in " + c.LabelB, sideText(r.B)})
		}
	}
	if len(both.rows) == 0 {
		b.WriteString("<p>No headline row is in both campaigns.</p>\n")
	} else {
		both.numeric = numericCols(both.header, both.rows)
		both.prose = proseCols(both.header, "heterogeneity", "note")
		both.write(&b)
	}
	for _, r := range c.Rows {
		if r.A != nil && r.A.Unbounded || r.B != nil && r.B.Unbounded {
			e := r.A
			if e == nil || !e.Unbounded {
				e = r.B
			}
			writeUnboundedNote(&b, &analysis.Result{Effects: []analysis.Effect{*e}})
			break
		}
	}
	b.WriteString("</section>\n")
	if len(one.rows) > 0 {
		b.WriteString("<section id=\"one-campaign-section\"><h2>Headline rows in one campaign only</h2>\n")
		one.numeric = numericCols(one.header, one.rows)
		one.write(&b)
		b.WriteString("</section>\n")
	}
	fmt.Fprintf(&b, "<script>\n%s\n</script>\n</body>\n</html>\n", reportScript)
	return b.Bytes()
}

// writeCompareCampaigns writes which campaign is A and which B, with
// their provenance and matched sets.
func writeCompareCampaigns(b *bytes.Buffer, c *analysis.Comparison) {
	esc := html.EscapeString
	b.WriteString("<section id=\"campaigns\"><h2>Campaigns</h2>\n")
	ct := &table{id: "campaigns-table", whole: true, header: []string{"", "file", "campaign", "created", "host", "brokers measured", "xp version", "matched sets (healthy / excluded)"}}
	for _, side := range []struct {
		name, label string
		res         *analysis.Result
	}{{"A", c.LabelA, c.A}, {"B", c.LabelB, c.B}} {
		info := map[string]string{}
		for _, f := range side.res.Dataset.Info {
			info[f.Name] = f.Value
		}
		var sets []string
		for _, n := range side.res.Counts {
			sets = append(sets, fmt.Sprintf("%s %d / %d", n.Treatment, n.Healthy, n.Excluded))
		}
		ct.rows = append(ct.rows, []string{side.name, side.label, side.res.Dataset.Campaign, info["created"], info["host"], info["brokers measured"], info["xp version"], strings.Join(sets, ", ")})
	}
	ct.prose = proseCols(ct.header, "host", "brokers measured", "matched sets (healthy / excluded)")
	ct.write(b)
	if len(c.Shared) == 1 {
		b.WriteString("<p>Compared over the one configuration (pair) both campaigns have.</p>\n")
	} else {
		fmt.Fprintf(b, "<p>Compared over the %d configurations (pairs) both campaigns have.</p>\n", len(c.Shared))
	}
	if len(c.OnlyA)+len(c.OnlyB) > 0 {
		fmt.Fprintf(b, "<p>Left out: only in A %s; only in B %s.</p>\n", esc(strings.Join(c.OnlyA, ", ")), esc(strings.Join(c.OnlyB, ", ")))
	}
	b.WriteString("</section>\n")
}

// writeCompareMethod says what each column means.
func writeCompareMethod(b *bytes.Buffer, c *analysis.Comparison) {
	conf := c.Confidence * 100
	b.WriteString("<section id=\"method\"><h2>Method</h2>\n")
	fmt.Fprintf(b, `<p>Each campaign is analysed as xp analyse does, over the configurations both have, and its headline rows (the pooled headline penalty of report.html) are matched by treatment, baseline, metric and scope. <em>B in A</em>: B's estimate lies inside A's %[1]g%% interval; <em>A in B</em> the converse; a row <em>replicated</em> when both hold. For reference, two honest %[1]g%% intervals of one effect capture each other's estimate about %.0[2]f%% of the time (Cumming and Maillardet 2006), not %[1]g%%: some rows fail by chance alone.</p>
<p>The combined estimate works on the log ratio (treatment / baseline). Each row's standard error is its own where the headline procedure gives it (effects.csv log_se), otherwise it comes from its interval on the log scale, (log r<sub>high</sub> &minus; log r<sub>low</sub>) / (2 q), q the quantile its method used: Student-t with n&minus;1 degrees of freedom for the small-sample methods, normal for the bootstrap (the Cochrane Handbook's way for ratio measures, &sect;6.5.2.2). The fixed-effect estimate weights each campaign by its inverse variance; the random-effects estimate adds DerSimonian and Laird's between-campaign variance tau&sup2; to each. Heterogeneity: Cochran's Q with its chi-square p-value (1 degree of freedom), I&sup2; the share of the variation between campaigns beyond chance. With two campaigns tau&sup2; is poorly determined and the random-effects interval is approximate. A row without a standard error (no interval, or one reaching a ratio of zero or below) gets no combined estimate; the note says why.</p>
`, conf, 100*analysis.CaptureRate(c.Confidence))
	b.WriteString("</section>\n")
}

// sideText is one campaign's estimate, interval and n.
func sideText(e *analysis.Effect) string {
	if e == nil {
		return ""
	}
	return short(e.Estimate) + " " + intervalText(*e) + " n=" + strconv.Itoa(e.N)
}

// metaText is a combined estimate with its interval, empty without one.
func metaText(m analysis.Meta) string {
	if math.IsNaN(m.Estimate) {
		return ""
	}
	return short(m.Estimate) + " [" + short(m.Low) + ", " + short(m.High) + "]"
}

// hetText is Cochran's Q with its p-value, I² and tau², empty without a
// combination.
func hetText(h analysis.Heterogeneity) string {
	if math.IsNaN(h.Q) {
		return ""
	}
	return "Q " + short(h.Q) + " (p " + short(h.P) + "), I² " + short(h.I2) + " %, tau² " + short(h.Tau2)
}
