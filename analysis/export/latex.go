package export

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/xp-bench/xp/analysis"
)

// short formats a number for tables: about three significant digits, no
// exponent for everyday magnitudes.
func short(v float64) string {
	a := math.Abs(v)
	switch {
	case math.IsNaN(v):
		return "--"
	case a >= 1e6 || (a < 1e-3 && a != 0):
		return fmt.Sprintf("%.2e", v)
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3f", v)
}

// intervalDecimals is the decimals an estimate with this interval is
// written to: the interval's half-width to two significant figures (at
// most six decimals); -1 without an interval.
func intervalDecimals(lo, hi float64) int {
	half := (hi - lo) / 2
	if math.IsNaN(half) || math.IsInf(half, 0) {
		return -1
	}
	if half <= 0 {
		return 3
	}
	return min(6, max(0, 1-int(math.Floor(math.Log10(half)))))
}

// fixed formats v with dec decimals, or as short does when dec < 0.
func fixed(v float64, dec int) string {
	if dec < 0 || math.IsNaN(v) {
		return short(v)
	}
	s := strconv.FormatFloat(v, 'f', dec, 64)
	if strings.Trim(s, "-0.") == "" {
		s = strings.TrimPrefix(s, "-") // no "-0.0"
	}
	return s
}

// texNumber typesets a formatted number: a minus sign, not a hyphen, and
// a small p-value as an inequality.
func texNumber(s string) string {
	if rest, ok := strings.CutPrefix(s, "-"); ok {
		return "$-$" + rest
	}
	return s
}

// texP typesets a p-value: three significant figures, below 0.001 as
// "$<$0.001".
func texP(p float64) string {
	switch {
	case math.IsNaN(p):
		return ""
	case p < 0.001:
		return "$<$0.001"
	}
	return strconv.FormatFloat(p, 'g', 3, 64)
}

// methodsLegend spells out the abbreviations of the methods used.
func methodsLegend(used []string) string {
	var parts []string
	for _, m := range methodLegendOrder {
		if slices.Contains(used, m.short) {
			parts = append(parts, m.words)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	if len(parts) == 1 {
		return "Method: " + parts[0] + "."
	}
	return "Methods: " + strings.Join(parts, "; ") + "."
}

var texEscaper = strings.NewReplacer(`\`, `\textbackslash{}`, `_`, `\_`, `%`, `\%`, `&`, `\&`, `#`, `\#`,
	`$`, `\$`, `{`, `\{`, `}`, `\}`, `~`, `\textasciitilde{}`, `^`, `\textasciicircum{}`, `µ`, `$\mu$`)

func tex(s string) string { return texEscaper.Replace(s) }

// texBreakable escapes s and lets a line break after each slash.
func texBreakable(s string) string { return strings.ReplaceAll(tex(s), "/", "/\\allowbreak{}") }

// pooledScopes lists the pooled scopes present, in order.
func pooledScopes(res *analysis.Result) []string {
	var out []string
	for _, s := range []string{analysis.ScopeAll, analysis.ScopeAllCapped, analysis.ScopeAllMax} {
		for _, e := range res.Effects {
			if e.Scope == s {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

// headline returns the pooled headline effect of a treatment, metric and
// scope: the penalty from the geometric mean of the per-set ratios
// (analysis.StatHeadline), whose interval and p-value are one procedure's.
func headline(res *analysis.Result, tr, metric, scope string) (analysis.Effect, bool) {
	for _, e := range res.Effects {
		if e.Treatment == tr && e.Metric == metric && e.Scope == scope && e.Statistic == analysis.StatHeadline {
			return e, true
		}
	}
	return analysis.Effect{}, false
}

// headlineMetric is the metric the sensitivity table and figure show:
// publish p99 latency when analysed, else the first metric with results.
func headlineMetric(res *analysis.Result) string {
	for _, e := range res.Effects {
		if e.Metric == "publish_ms_p99" {
			return e.Metric
		}
	}
	if len(res.Effects) > 0 {
		return res.Effects[0].Metric
	}
	return ""
}

func excludedCount(res *analysis.Result, tr string) (healthy, excluded int) {
	for _, c := range res.Counts {
		if c.Treatment == tr {
			return c.Healthy, c.Excluded
		}
	}
	return 0, 0
}

// headlineRows bounds the rows of one headline table, so that it fits a
// page of an A4 article with its caption.
const headlineRows = 30

// writeLaTeX writes tables.tex: per pooled scope the headline penalties
// (split over tables that fit a page), then per treatment and scope the
// sensitivity of the headline metric to each factor.
func writeLaTeX(path string, res *analysis.Result) error {
	var b bytes.Buffer
	o := res.Options
	fmt.Fprintf(&b, "%% Tables of campaign %s, written by xp analyse. Needs \\usepackage{booktabs}.\n", tex(res.Dataset.Campaign))
	fmt.Fprintf(&b, "%% Headline: geometric mean of the per-set ratios, %g%% t interval and t-test of the mean log ratio (one pivot; configurations as strata when pooled); Holm across the headline family. Sensitivity intervals: pooled over configurations from %d matched sets %s bootstrap (%d resamples, seed %d; resampling cells, then replicates within them), otherwise Student-t; none below %d sets.\n\n",
		o.Confidence*100, analysis.MinSetsForBootstrap, o.Method, o.Resamples, o.Seed, analysis.MinSetsForInterval)
	var counts []string
	for _, tr := range res.Treatments {
		h, x := excludedCount(res, tr)
		counts = append(counts, fmt.Sprintf("%s: %d matched sets, %d excluded", tex(tr), h, x))
	}
	for _, scope := range pooledScopes(res) {
		groups := headlineGroups(res, scope)
		for gi, group := range groups {
			part, label := "", scope
			if len(groups) > 1 {
				part = fmt.Sprintf(" (part %d of %d)", gi+1, len(groups))
				label = fmt.Sprintf("%s-%d", scope, gi+1)
			}
			writeHeadlineTable(&b, res, scope, group, part, label, strings.Join(counts, "; "))
		}
	}
	hm := headlineMetric(res)
	for _, tr := range res.Treatments {
		for _, scope := range pooledScopes(res) {
			writeSensitivityTable(&b, res, tr, scope, hm)
		}
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// headlineGroups splits the metrics of scope over tables of at most
// headlineRows rows (a row per metric and treatment, so a table keeps its
// width however many treatments there are), so each fits a page.
func headlineGroups(res *analysis.Result, scope string) [][]string {
	var groups [][]string
	rows := 0
	for _, m := range metricsWithScope(res, scope) {
		k := 0
		for _, tr := range res.Treatments {
			if _, ok := headline(res, tr, m, scope); ok {
				k++
			}
		}
		if len(groups) == 0 || rows+k > headlineRows {
			groups = append(groups, nil)
			rows = 0
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], m)
		rows += k
	}
	return groups
}

// writeHeadlineTable writes one headline table of scope: the penalty of
// each metric of group and treatment with its interval, n and method.
// part and label tell the table apart from the scope's others; counts
// gives the matched sets per treatment for the caption.
func writeHeadlineTable(b *bytes.Buffer, res *analysis.Result, scope string, group []string, part, label, counts string) {
	var body bytes.Buffer
	var used []string
	family, marked := "", false
	for mi, m := range group {
		if mi > 0 {
			fmt.Fprintf(&body, "\\addlinespace\n")
		}
		first := true
		for _, tr := range res.Treatments {
			e, ok := headline(res, tr, m, scope)
			if !ok {
				continue
			}
			name := ""
			if first {
				// The penalty is in percent whatever the
				// metric's unit: the metric without it.
				name = tex(metricName(m))
				first = false
			}
			est, iv := texEstimate(e.Estimate, e.Low, e.High)
			est += texMarks(e)
			method := methodShort[e.Method]
			if method == "" {
				method = e.Method
			}
			if !slices.Contains(used, method) {
				used = append(used, method)
			}
			fmt.Fprintf(&body, "%s & %s & %s & %s & %d & %s & %s \\\\\n", name, tex(tr), est, iv, e.N, texP(e.PHolm), tex(method))
			if family == "" {
				family = e.Family
			}
			marked = marked || e.Fragile || e.Better
		}
	}
	familyText := ""
	if family != "" {
		familyText = fmt.Sprintf(" p-values from the same t-test on the per-set log ratios as the interval, Holm-adjusted across the headline family (%s).", tex(family))
	}
	if marked {
		familyText += fmt.Sprintf(" $^\\ddagger$ fragile: its significance (or a significant sign) flips with one matched set left out; $^\\S$ better than %s beyond its interval: check the runs driving it (report.html, effects.csv).", tex(res.Levels[0]))
	}
	fmt.Fprintf(b, "\\begin{table}[ht]\n\\centering\n\\footnotesize\n\\setlength{\\tabcolsep}{3pt}\n")
	fmt.Fprintf(b, "\\caption{Penalty from the geometric mean of the per-set ratios against %s in percent (positive is worse), %s%s, with %g\\%% intervals and n matched sets; each estimate to the decimals its interval supports.%s %s. %s}\n",
		tex(res.Levels[0]), tex(scopeText(scope)), part, res.Options.Confidence*100, familyText, counts, tex(methodsLegend(used)))
	fmt.Fprintf(b, "\\label{tab:xp-headline-%s}\n", label)
	fmt.Fprintf(b, "\\begin{tabular}{llrrrrl}\n\\toprule\nMetric & Treatment & Penalty (\\%%) & Interval & n & p (Holm) & Method \\\\\n\\midrule\n")
	b.Write(body.Bytes())
	fmt.Fprintf(b, "\\bottomrule\n\\end{tabular}\n\\end{table}\n\n")
}

// writeSensitivityTable writes the sensitivity of treatment tr's penalty
// of metric hm in scope: the mean penalty at each factor level, and each
// factor's F-test and share of the variance, factors by share. Nothing
// when there is no sensitivity line.
func writeSensitivityTable(b *bytes.Buffer, res *analysis.Result, tr, scope, hm string) {
	var rows []analysis.LevelEffect
	for _, s := range res.Sensitivity {
		if s.Treatment == tr && s.Scope == scope && s.Metric == hm {
			rows = append(rows, s)
		}
	}
	if len(rows) == 0 {
		return
	}
	terms := map[string]analysis.FactorTerm{}
	for _, t := range res.Terms {
		if t.Treatment == tr && t.Scope == scope && t.Metric == hm {
			terms[t.Factor] = t
		}
	}
	rank := func(f string) int {
		if t, ok := terms[f]; ok {
			return t.Rank
		}
		return len(terms) + 1
	}
	slices.SortStableFunc(rows, func(a, b analysis.LevelEffect) int { return cmp.Compare(rank(a.Factor), rank(b.Factor)) })
	fmt.Fprintf(b, "\\begin{table}[ht]\n\\centering\n")
	fmt.Fprintf(b, "\\caption{Sensitivity of the %s penalty of %s against %s (%s): mean penalty in percent at each factor level with %g\\%% intervals; F-test of each factor in a main-effects model and its share of the penalty's variance; factors by share.}\n",
		tex(metricName(hm)), tex(tr), tex(res.Levels[0]), tex(scopeText(scope)), res.Options.Confidence*100)
	fmt.Fprintf(b, "\\label{tab:xp-sensitivity-%s-%s}\n", safeName(tr), scope)
	fmt.Fprintf(b, "\\small\n\\begin{tabular}{lrrrrr}\n\\toprule\nLevel & Mean penalty (\\%%) & Interval & Share & F & p \\\\\n\\midrule\n")
	prev := ""
	for _, s := range rows {
		share, F, p := "", "", ""
		if s.Factor != prev {
			if t, ok := terms[s.Factor]; ok {
				share, F, p = texNumber(short(t.Share)), texNumber(short(t.F)), texP(t.P)
			}
			if prev != "" {
				fmt.Fprintf(b, "\\addlinespace\n")
			}
			// The factor on a line of its own: names of combined
			// factors are long.
			fmt.Fprintf(b, "\\multicolumn{6}{l}{\\textit{%s}} \\\\\n", texBreakable(factorWords(s.Factor)))
		}
		prev = s.Factor
		est, iv := texEstimate(s.Mean, s.Low, s.High)
		fmt.Fprintf(b, "\\quad %s & %s & %s & %s & %s & %s \\\\\n", tex(s.Level), est, iv, share, F, p)
	}
	fmt.Fprintf(b, "\\bottomrule\n\\end{tabular}\n\\end{table}\n\n")
}

// texMarks are a headline row's marks as superscripts: fragile and
// better than baseline.
func texMarks(e analysis.Effect) string {
	m := ""
	if e.Fragile {
		m += "\\ddagger"
	}
	if e.Better {
		m += "\\S"
	}
	if m == "" {
		return ""
	}
	return "$^{" + m + "}$"
}

// texEstimate typesets an estimate and its interval ("--" without one),
// to the decimals the interval supports.
func texEstimate(est, lo, hi float64) (string, string) {
	dec := intervalDecimals(lo, hi)
	iv := "--"
	if !math.IsNaN(lo) && !math.IsNaN(hi) {
		iv = "[" + texNumber(fixed(lo, dec)) + ", " + texNumber(fixed(hi, dec)) + "]"
	}
	return texNumber(fixed(est, dec)), iv
}

func metricsWithScope(res *analysis.Result, scope string) []string {
	var out []string
	for _, m := range res.Dataset.Metrics {
		for _, e := range res.Effects {
			if e.Metric == m.Name && e.Scope == scope {
				out = append(out, m.Name)
				break
			}
		}
	}
	return out
}

func scopeText(scope string) string {
	switch scope {
	case analysis.ScopeAllCapped:
		return "pooled over capped-rate configurations"
	case analysis.ScopeAllMax:
		return "pooled over saturating configurations"
	}
	return "pooled over all configurations"
}
