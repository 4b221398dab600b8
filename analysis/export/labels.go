package export

import (
	"math"
	"slices"
	"strings"

	"github.com/xp-bench/xp/analysis"
)

// metricName names a metric in words without its unit, for a heading over
// penalties (percent whatever the metric's unit).
func metricName(name string) string {
	w, _ := metricParts(name)
	return w
}

// metricParts are a metric's words and unit ("" when it has none).
func metricParts(name string) (words, unit string) {
	pct := func(p string) string {
		switch p {
		case "p999":
			return "p99.9"
		case "p9999":
			return "p99.99"
		}
		return p
	}
	for _, k := range []struct{ prefix, words string }{
		{"publish_ms_", "Publish latency"}, {"e2e_ms_", "End-to-end latency"}, {"send_delay_ms_", "Send delay"},
	} {
		if p, ok := strings.CutPrefix(name, k.prefix); ok {
			return k.words + " " + pct(p), "ms"
		}
	}
	switch name {
	case "publish_rate":
		return "Throughput", "msg/s"
	case "client_cpu_us_per_msg":
		return "Client CPU", "µs/msg"
	case "gateway_cpu_us_per_msg":
		return "Gateway CPU", "µs/msg"
	}
	switch name {
	case "host_cpu_broker_us_per_msg":
		return "Broker CPU", "µs/msg"
	case "host_cpu_controller_us_per_msg":
		return "Controller CPU", "µs/msg"
	}
	if rest, ok := strings.CutPrefix(name, "host_cpu_"); ok {
		if h, ok := strings.CutSuffix(rest, "_us_per_msg"); ok {
			return "CPU of " + strings.ReplaceAll(h, "_", " "), "µs/msg"
		}
		return "CPU of " + strings.ReplaceAll(rest, "_", " "), ""
	}
	w := strings.ReplaceAll(name, "_", " ")
	if w != "" {
		w = strings.ToUpper(w[:1]) + w[1:]
	}
	return w, ""
}

// factorUnits are the units of the plan row's numeric factors.
var factorUnits = map[string]string{
	"message_size": "bytes", "target_rate": "msg/s", "linger_ms": "ms", "batch_bytes": "bytes",
	"warmup_s": "s", "duration_s": "s", "drain_timeout_s": "s",
}

// factorWords names a factor (or factors combined with "/") in words with
// its unit: "message_size" is "Message size (bytes)".
func factorWords(f string) string {
	var parts []string
	for _, p := range strings.Split(f, "/") {
		name := p
		for _, suf := range []string{"_ms", "_bytes", "_s"} {
			if factorUnits[p] != "" {
				name = strings.TrimSuffix(name, suf)
			}
		}
		w := strings.ReplaceAll(name, "_", " ")
		if u := factorUnits[p]; u != "" {
			w += " (" + u + ")"
		}
		parts = append(parts, w)
	}
	s := strings.Join(parts, " / ")
	if s != "" {
		s = strings.ToUpper(s[:1]) + s[1:]
	}
	return s
}

// metricFamily groups metrics into the forest plot's panels.
func metricFamily(m analysis.MetricDef) string {
	switch {
	case strings.HasPrefix(m.Name, "send_delay_"):
		return "Send delay"
	case m.Unit == "ms":
		return "Latency"
	case m.Unit == "msg/s":
		return "Throughput"
	case strings.Contains(m.Name, "cpu"):
		return "CPU"
	}
	return "Other"
}

// methodName names an interval method (an Effect's Method): its
// abbreviation for narrow tables and its words for a caption.
type methodName struct{ method, short, words string }

// methodNames are the methods a caption can spell out, in the order it
// lists them. A method not listed here (a newer analysis's) is shown by
// its own name.
var methodNames = []methodName{
	{string(analysis.MethodStudentT), "t", "Student-t"},
	{string(analysis.MethodStudentTStrata), "ts", "Student-t over configurations as strata (Welch-Satterthwaite)"},
	{string(analysis.MethodStudentTPooled), "tp", "Student-t with the spread pooled over configurations"},
	{string(analysis.MethodOrderStatistic), "os", "the interval between two order statistics"},
	{"bca", "B", "BCa bootstrap"},
	{"bca-cluster", "Bc", "BCa two-level cluster bootstrap"},
	{"percentile", "P", "percentile bootstrap"},
	{"percentile-cluster", "Pc", "percentile two-level cluster bootstrap"},
	{string(analysis.MethodLogRatioT), "lt", "Student-t on the per-set log ratios"},
	{string(analysis.MethodLogRatioTPooled), "ltp", "Student-t on the log ratios with their spread pooled over configurations"},
	{string(analysis.MethodLogRatioTStrata), "lts", "Student-t on the log ratios over configurations as strata (Welch-Satterthwaite)"},
	{string(analysis.MethodNone), "--", "no interval (too few matched sets)"},
}

func findMethod(method string) (methodName, bool) {
	for _, m := range methodNames {
		if m.method == method {
			return m, true
		}
	}
	return methodName{method, method, method}, false
}

// methodAbbrev abbreviates an interval method for a narrow column.
func methodAbbrev(method string) string {
	m, _ := findMethod(method)
	return m.short
}

// methodWords spells out the interval method of a statistic: what the
// method was applied to is part of its name (a Student-t interval of the
// ratio of means is taken on the linearised ratio, the delta method).
func methodWords(method, statistic string) string {
	m, known := findMethod(method)
	if !known || method == string(analysis.MethodNone) || method == string(analysis.MethodOrderStatistic) {
		return m.words
	}
	if strings.HasPrefix(method, "student-t") {
		switch statistic {
		case analysis.StatRatioPenalty:
			return m.words + " on the linearised ratio of means (delta method)"
		case "mean_penalty":
			return m.words + " on the paired penalties"
		case "mean_difference":
			return m.words + " on the paired differences"
		}
		return m.words
	}
	if statistic == analysis.StatRatioPenalty {
		return m.words + " of the ratio of means"
	}
	return m.words
}

// methodsCaption names the interval methods of a table's rows of one
// statistic: with abbreviations when the table has a Method column
// ("Methods: t, Student-t ...; Bc, ..."), else the one method ("Interval:
// ...").
func methodsCaption(used []string, statistic string, abbreviated bool) string {
	var parts []string
	order := append([]methodName{}, methodNames...)
	for _, u := range used {
		if _, ok := findMethod(u); !ok {
			order = append(order, methodName{u, u, u})
		}
	}
	for _, m := range order {
		if !slices.Contains(used, m.method) {
			continue
		}
		w := methodWords(m.method, statistic)
		if abbreviated {
			w = m.short + ", " + w
		}
		parts = append(parts, w)
	}
	switch {
	case len(parts) == 0:
		return ""
	case !abbreviated:
		return "Intervals: " + strings.Join(parts, "; ") + "."
	case len(parts) == 1:
		return "Method: " + parts[0] + "."
	}
	return "Methods: " + strings.Join(parts, "; ") + "."
}

// effectMark is a mark a table row or figure label carries, with the
// words its legend gives it; has says whether an effect carries it. The
// report, tables.tex and the figures use this one list, so their legends
// match.
type effectMark struct {
	mark, words string
	has         func(e analysis.Effect) bool
}

// effectMarks are the marks, in the order a label carries them.
var effectMarks = []effectMark{
	{"\u2020", "its runs alone cannot bound the mean (too few matched sets and no spread pooled from other configurations)",
		func(e analysis.Effect) bool { return e.Unbounded }},
	{"\u00b0", "a matched set holds a run flagged as an outlier (the Outliers section gives the estimate without them)",
		func(e analysis.Effect) bool { return e.OutlierSets > 0 }},
	{fragileMark, "fragile: dropping any one of its matched sets flips its significance (or a significant estimate's sign)",
		func(e analysis.Effect) bool { return e.Fragile }},
	{betterMark, "better than the baseline beyond its interval: check the runs driving it (effects.csv driving_runs) before believing it",
		func(e analysis.Effect) bool {
			return e.Better || (e.Statistic != analysis.StatHeadline && !math.IsNaN(e.High) && e.High < 0)
		}},
}

// marksOf is the marks of e, joined ("" when none).
func marksOf(e analysis.Effect) string {
	var s string
	for _, m := range effectMarks {
		if m.has(e) {
			s += m.mark
		}
	}
	return s
}

// marksLegend explains the marks that effects carry, one "MARK words"
// each, in effectMarks' order; nil when none does.
func marksLegend(effects []analysis.Effect) []string {
	var out []string
	for _, m := range effectMarks {
		if slices.ContainsFunc(effects, m.has) {
			out = append(out, m.mark+" "+m.words)
		}
	}
	return out
}
