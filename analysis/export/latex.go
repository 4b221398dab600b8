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
// exponent but for magnitudes below 0.001.
func short(v float64) string {
	a := math.Abs(v)
	switch {
	case math.IsNaN(v):
		return "--"
	case a < 1e-3 && a != 0:
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

var texEscaper = strings.NewReplacer(`\`, `\textbackslash{}`, `_`, `\_`, `%`, `\%`, `&`, `\&`, `#`, `\#`,
	`$`, `\$`, `{`, `\{`, `}`, `\}`, `~`, `\textasciitilde{}`, `^`, `\textasciicircum{}`, `µ`, `$\mu$`,
	"\u2020", `\dag{}`, "\u00b0", `\textdegree{}`, "\u2193", `$\downarrow$`, "\u2021", `\ddag{}`, "\u00a7", `\S{}`)

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
// scope (analysis.StatHeadline), whose interval and p-value are one
// procedure's.
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
	fmt.Fprintf(&b, "%% Headline: geometric mean of the per-set ratios, %g%% t interval and t-test of the mean log ratio (one pivot; configurations as strata when pooled), Holm across the headline family. Other intervals by the method each table's caption names (bootstrap: %d resamples, seed %d); none below %d sets.\n\n",
		o.Confidence*100, o.Resamples, o.Seed, analysis.MinSetsForInterval)
	var counts []string
	same := len(res.Treatments) > 1
	var h0, x0 int
	if same {
		h0, x0 = excludedCount(res, res.Treatments[0])
	}
	for _, tr := range res.Treatments {
		h, x := excludedCount(res, tr)
		same = same && h == h0 && x == x0
		counts = append(counts, fmt.Sprintf("%s: %d matched sets, %d excluded", tex(tr), h, x))
	}
	if same {
		// One count for all: the caption says it once.
		counts = []string{fmt.Sprintf("Every treatment: %d matched sets, %d excluded", h0, x0)}
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

// headlineRow is one row of a headline table before typesetting.
type headlineRow struct {
	metric, treatment string
	e                 analysis.Effect
}

// writeHeadlineTable writes one headline table of scope: the penalty of
// each metric of group and treatment with its interval, n and method. A
// column whose every row holds one value (one treatment, one n, one
// method) is left out and its value said in the caption. part and label
// tell the table apart from the scope's others; counts gives the matched
// sets per treatment for the caption.
func writeHeadlineTable(b *bytes.Buffer, res *analysis.Result, scope string, group []string, part, label, counts string) {
	var rows []headlineRow
	for _, m := range group {
		for _, tr := range res.Treatments {
			if e, ok := headline(res, tr, m, scope); ok {
				rows = append(rows, headlineRow{m, tr, e})
			}
		}
	}
	constant := func(f func(r headlineRow) string) bool {
		for _, r := range rows {
			if f(r) != f(rows[0]) {
				return false
			}
		}
		return true
	}
	showTr := !constant(func(r headlineRow) string { return r.treatment })
	showN := !constant(func(r headlineRow) string { return strconv.Itoa(r.e.N) })
	showMethod := !constant(func(r headlineRow) string { return r.e.Method })
	var body bytes.Buffer
	var used []string
	var effects []analysis.Effect
	family, prev := "", ""
	for _, r := range rows {
		if prev != "" && r.metric != prev {
			fmt.Fprintf(&body, "\\addlinespace\n")
		}
		name := ""
		if r.metric != prev {
			// The penalty is in percent whatever the metric's unit:
			// the metric without it.
			name = tex(metricName(r.metric))
		}
		prev = r.metric
		effects = append(effects, r.e)
		if !slices.Contains(used, r.e.Method) {
			used = append(used, r.e.Method)
		}
		est, iv := texEstimate(r.e.Estimate, r.e.Low, r.e.High)
		cells := []string{name}
		if showTr {
			cells = append(cells, tex(r.treatment))
		}
		cells = append(cells, est+texMarks(r.e), iv)
		if showN {
			cells = append(cells, strconv.Itoa(r.e.N))
		}
		cells = append(cells, texP(r.e.PHolm))
		if family == "" {
			family = r.e.Family
		}
		if showMethod {
			cells = append(cells, tex(methodAbbrev(r.e.Method)))
		}
		fmt.Fprintf(&body, "%s \\\\\n", strings.Join(cells, " & "))
	}
	cols, head := "l", []string{"Metric"}
	if showTr {
		cols, head = cols+"l", append(head, "Treatment")
	}
	cols, head = cols+"rr", append(head, "Penalty (\\%)", "Interval")
	if showN {
		cols, head = cols+"r", append(head, "n")
	}
	cols, head = cols+"r", append(head, "p (Holm)")
	if showMethod {
		cols, head = cols+"l", append(head, "Method")
	}
	familyText := ""
	if family != "" {
		familyText = fmt.Sprintf(" p from the same t-test on the per-set log ratios as the interval, Holm-adjusted across the headline family (%s).", tex(family))
	}
	var said []string
	if !showTr && len(rows) > 0 {
		said = append(said, "treatment "+tex(rows[0].treatment))
	}
	if !showN && len(rows) > 0 {
		said = append(said, fmt.Sprintf("n = %d matched sets each", rows[0].e.N))
	} else {
		said = append(said, "n matched sets")
	}
	fmt.Fprintf(b, "\\begin{table}[ht]\n\\centering\n\\small\n\\setlength{\\tabcolsep}{4pt}\n")
	fmt.Fprintf(b, "\\caption{Campaign %s, %s: penalty from the geometric mean of the per-set ratios against %s in percent (positive is worse), %s%s, with %g\\%% intervals; %s. Estimates to three significant figures, intervals to the same decimals.%s %s. %s%s}\n",
		tex(res.Dataset.Campaign), tex(brokerWords(res)), tex(res.Levels[0]), tex(scopeText(scope)), part, res.Options.Confidence*100,
		strings.Join(said, ", "), familyText, counts, tex(methodsCaption(used, analysis.StatHeadline, showMethod)), tex(marksCaption(effects)))
	fmt.Fprintf(b, "\\label{tab:%s-headline-%s}\n", texLabel(res.Dataset.Campaign), label)
	fmt.Fprintf(b, "\\begin{tabular}{%s}\n\\toprule\n%s \\\\\n\\midrule\n", cols, strings.Join(head, " & "))
	b.Write(body.Bytes())
	fmt.Fprintf(b, "\\bottomrule\n\\end{tabular}\n\\end{table}\n\n")
}

// texMarks typesets an effect's marks as superscripts after its estimate.
func texMarks(e analysis.Effect) string {
	m := marksOf(e)
	if m == "" {
		return ""
	}
	return "\\textsuperscript{" + tex(m) + "}"
}

// marksCaption explains the marks the effects carry: " Marks: † ...; ° ...".
func marksCaption(effects []analysis.Effect) string {
	l := marksLegend(effects)
	if len(l) == 0 {
		return ""
	}
	return " Marks: " + strings.Join(l, "; ") + "."
}

// texLabel keeps a campaign name to what a LaTeX label and a reader's
// \ref take without fuss: letters, digits and '-'.
func texLabel(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-':
			return r
		}
		return '-'
	}, s)
}

// brokerWords names the broker software the campaign's runs measured:
// "Apache Kafka 4.1.0", "the embedded cluster (kfake VERSION)", several
// joined by "and"; "broker not recorded" when no run says.
func brokerWords(res *analysis.Result) string {
	var out []string
	for _, r := range res.Dataset.Runs {
		if r.Broker == "" {
			continue
		}
		kind, ver, _ := strings.Cut(r.Broker, " ")
		w := r.Broker
		switch kind {
		case "apache":
			w = "Apache Kafka " + ver
		case "kfake":
			w = "the embedded cluster (kfake " + ver + ")"
		}
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	if len(out) == 0 {
		return "broker not recorded"
	}
	return "measured on " + strings.Join(out, " and ")
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
	fmt.Fprintf(b, "\\caption{Campaign %s, %s: sensitivity of the %s penalty of %s against %s (%s): mean penalty in percent at each factor level with %g\\%% intervals; F-test of each factor in a main-effects model and its share of the penalty's variance; factors by share.}\n",
		tex(res.Dataset.Campaign), tex(brokerWords(res)), tex(metricName(hm)), tex(tr), tex(res.Levels[0]), tex(scopeText(scope)), res.Options.Confidence*100)
	fmt.Fprintf(b, "\\label{tab:%s-sensitivity-%s-%s}\n", texLabel(res.Dataset.Campaign), texLabel(tr), scope)
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

// texEstimate typesets an estimate and its interval ("--" without one)
// by the tables' one precision rule: the estimate to three significant
// figures (no more than two decimals: a hundredth of a percent is finer
// than any campaign resolves), the interval to the estimate's decimals.
func texEstimate(est, lo, hi float64) (string, string) {
	dec := estimateDecimals(est)
	iv := "--"
	if !math.IsNaN(lo) && !math.IsNaN(hi) {
		iv = "[" + texNumber(texThousands(fixed(lo, dec))) + ", " + texNumber(texThousands(fixed(hi, dec))) + "]"
	}
	return texNumber(texThousands(fixed(est, dec))), iv
}

// estimateDecimals is the decimals of three significant figures of v,
// from 0 to 2.
func estimateDecimals(v float64) int {
	a := math.Abs(v)
	if math.IsNaN(a) || math.IsInf(a, 0) || a == 0 {
		return 1
	}
	return min(2, max(0, 2-int(math.Floor(math.Log10(a)))))
}

// texThousands groups the integer digits of a formatted number by
// thousands with a thin space: 12{,}345.6.
func texThousands(s string) string {
	sign, rest := "", s
	if r, ok := strings.CutPrefix(s, "-"); ok {
		sign, rest = "-", r
	}
	intPart, frac, hasFrac := strings.Cut(rest, ".")
	if len(intPart) <= 4 {
		return s
	}
	for i := len(intPart) - 3; i > 0; i -= 3 {
		intPart = intPart[:i] + "{,}" + intPart[i:]
	}
	if hasFrac {
		intPart += "." + frac
	}
	return sign + intPart
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
