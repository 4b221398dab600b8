package export

import (
	"bytes"
	"fmt"
	"html"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/xp-bench/xp/analysis"
)

// reportScript makes every table.sortable sortable (click a header) and
// filterable (a search box above it), and applies "#filter=TEXT" and
// "#sort=TABLE:COLUMN[:desc]" from the address. It marks each table
// data-interactive="yes" and the body data-report="ready" once it has run.
const reportScript = `(function () {
  function value(td) {
    var t = td.getAttribute('data-v');
    if (t === null) t = td.textContent;
    var s = t.trim();
    if (s !== '' && !isNaN(Number(s))) return Number(s);
    return s.toLowerCase();
  }
  function sortBy(table, col, dir) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = value(a.cells[col]), y = value(b.cells[col]);
      if (typeof x === typeof y) return (x < y ? -1 : x > y ? 1 : 0) * dir;
      return (typeof x === 'number' ? -1 : 1) * dir;
    });
    rows.forEach(function (r) { body.appendChild(r); });
    table.setAttribute('data-sorted', col + ':' + (dir > 0 ? 'asc' : 'desc'));
  }
  function filter(table, text) {
    text = text.toLowerCase();
    var shown = 0;
    Array.prototype.forEach.call(table.tBodies[0].rows, function (r) {
      var ok = !text || r.textContent.toLowerCase().indexOf(text) >= 0;
      r.hidden = !ok;
      if (ok) shown++;
    });
    table.setAttribute('data-shown', String(shown));
  }
  var tables = Array.prototype.slice.call(document.querySelectorAll('table.sortable'));
  tables.forEach(function (t) {
    var input = document.createElement('input');
    input.type = 'search';
    input.placeholder = 'filter rows';
    input.className = 'filter';
    input.setAttribute('aria-label', 'filter ' + t.id);
    input.addEventListener('input', function () { filter(t, input.value); });
    t.parentNode.insertBefore(input, t);
    Array.prototype.forEach.call(t.tHead.rows[0].cells, function (th, i) {
      th.tabIndex = 0;
      th.title = 'sort';
      th.addEventListener('click', function () {
        sortBy(t, i, t.getAttribute('data-sorted') === i + ':asc' ? -1 : 1);
      });
    });
    filter(t, '');
    t.setAttribute('data-interactive', 'yes');
  });
  decodeURIComponent(location.hash.slice(1)).split('&').forEach(function (kv) {
    var i = kv.indexOf('=');
    if (i < 0) return;
    var k = kv.slice(0, i), v = kv.slice(i + 1);
    if (k === 'filter') tables.forEach(function (t) { filter(t, v); t.previousSibling.value = v; });
    if (k === 'sort') {
      var a = v.split(':'), t = document.getElementById(a[0]);
      if (t) sortBy(t, parseInt(a[1], 10), a[2] === 'desc' ? -1 : 1);
    }
  });
  document.body.setAttribute('data-report', 'ready');
})();`

// reportStyle lays the report out for a window of 1,280 px or more. No
// word is ever broken inside: a table wider than the page scrolls
// sideways in its box, and only prose cells (reasons, notes) wrap, at
// spaces.
const reportStyle = `body{font-family:"Liberation Sans",Arial,Helvetica,sans-serif;margin:2em auto;max-width:78em;padding:0 1em;color:#222}
h1{font-size:1.6em}h2{font-size:1.25em;margin-top:2em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}th,td{padding:.2em .6em;border-bottom:1px solid #e4e4e4;text-align:left;vertical-align:top}
th,td{overflow-wrap:normal;word-break:normal;hyphens:none;white-space:nowrap}td.prose{white-space:normal;min-width:16em;max-width:32em}
td.n{text-align:right;font-variant-numeric:tabular-nums}th{cursor:pointer;background:#f4f4f4;position:sticky;top:0}
.scroll{max-height:40em;overflow:auto;border:1px solid #ddd;max-width:100%}.scroll.whole{max-height:none}input.filter{margin:.4em 0;padding:.3em;width:20em}
figure{margin:1.5em 0;overflow-x:auto}figure svg{width:100%;max-width:56em;height:auto}figcaption{font-size:.9em;color:#444}dl{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:.2em 1em}
dt{font-weight:bold}dd{margin:0;white-space:pre-wrap;font-family:monospace;font-size:.85em;max-height:12em;overflow:auto}
dd.words{font-family:inherit;font-size:.95em;white-space:normal}
.note{background:#fff4e0;border-left:4px solid #e0a030;padding:.5em 1em}`

type table struct {
	id      string
	header  []string
	numeric []bool
	rows    [][]string
	// prose marks the columns of running text (reasons, notes), which
	// wrap at spaces; every other cell stays on one line.
	prose []bool
	// whole shows every row: no box of bounded height around the table.
	whole bool
}

func (t *table) write(b *bytes.Buffer) {
	box := "scroll"
	if t.whole {
		box = "scroll whole"
	}
	fmt.Fprintf(b, "<div class=\"%s\"><table id=\"%s\" class=\"sortable\">\n<thead><tr>", box, t.id)
	for _, h := range t.header {
		fmt.Fprintf(b, "<th>%s</th>", html.EscapeString(h))
	}
	b.WriteString("</tr></thead>\n<tbody>\n")
	for _, r := range t.rows {
		b.WriteString("<tr>")
		for i, c := range r {
			switch {
			case i < len(t.numeric) && t.numeric[i]:
				if shown := groupThousands(c); shown != c {
					fmt.Fprintf(b, "<td class=\"n\" data-v=\"%s\">%s</td>", html.EscapeString(c), html.EscapeString(shown))
				} else {
					fmt.Fprintf(b, "<td class=\"n\">%s</td>", html.EscapeString(c))
				}
			case i < len(t.prose) && t.prose[i]:
				fmt.Fprintf(b, "<td class=\"prose\">%s</td>", html.EscapeString(c))
			default:
				fmt.Fprintf(b, "<td>%s</td>", html.EscapeString(c))
			}
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody></table></div>\n")
}

// groupThousands writes a plain decimal number of four or more integer
// digits with commas between thousands ("1234.5" is "1,234.5"); any other
// text is returned as it is. The cell keeps the plain number in data-v
// for sorting.
func groupThousands(s string) string {
	sign, rest := "", s
	if r, ok := strings.CutPrefix(s, "-"); ok {
		sign, rest = "-", r
	}
	intPart, frac, hasFrac := strings.Cut(rest, ".")
	if len(intPart) < 4 || strings.Trim(intPart, "0123456789") != "" || (hasFrac && strings.Trim(frac, "0123456789") != "") {
		return s
	}
	for i := len(intPart) - 3; i > 0; i -= 3 {
		intPart = intPart[:i] + "," + intPart[i:]
	}
	if hasFrac {
		intPart += "." + frac
	}
	return sign + intPart
}

// proseCols marks the named columns of header as prose.
func proseCols(header []string, names ...string) []bool {
	p := make([]bool, len(header))
	for i, h := range header {
		p[i] = slices.Contains(names, h)
	}
	return p
}

// numericCols marks the columns whose every non-empty cell is a number.
func numericCols(header []string, rows [][]string) []bool {
	num := make([]bool, len(header))
	for i := range num {
		num[i] = true
	}
	for _, r := range rows {
		for i, c := range r {
			if i < len(num) && c != "" {
				if _, err := strconv.ParseFloat(c, 64); err != nil {
					num[i] = false
				}
			}
		}
	}
	return num
}

// inlineSVG turns an SVG file into markup for the page: no XML prolog.
func inlineSVG(svg []byte) string {
	s := string(svg)
	if i := strings.Index(s, "<svg"); i >= 0 {
		s = s[i:]
	}
	return s
}

// writeReport writes report.html: one self-contained page (styles, script
// and figures inline) with a section per subject, in reading order.
func writeReport(path string, res *analysis.Result, figs []*figure) error {
	var b bytes.Buffer
	esc := html.EscapeString
	d := res.Dataset
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>xp analysis: %s</title>\n<style>\n%s\n</style>\n</head>\n<body>\n",
		esc(d.Campaign), reportStyle)
	fmt.Fprintf(&b, "<h1>What %s costs: campaign %s</h1>\n", esc(d.Treatment), esc(d.Campaign))
	for _, n := range res.Notes {
		fmt.Fprintf(&b, "<p class=\"note\">%s</p>\n", esc(n))
	}
	writeCampaignSection(&b, res)
	writeMethodSection(&b, res)
	writeSetsSection(&b, res)
	writeHeadlineSection(&b, res)
	writeOutliers(&b, res)
	writeTwoStage(&b, res)
	writeFiguresSection(&b, res, figs)
	writeEffectsSection(&b, res)
	writeSensitivitySection(&b, res)
	writeSignificanceSection(&b, res)
	b.WriteString("<section id=\"runs-section\"><h2>Runs</h2>\n<p>One row per attempt; runs.csv has every metric.</p>\n")
	runsTable(res).write(&b)
	b.WriteString("</section>\n")
	writePercentilesSection(&b, res)
	writeTelemetrySection(&b, res)
	b.WriteString("<section id=\"excluded-section\"><h2>Excluded matched sets</h2>\n")
	xt := &table{id: "excluded", header: excludedHeader, rows: excludedRows(res)}
	xt.numeric = numericCols(xt.header, xt.rows)
	xt.prose = proseCols(xt.header, "reasons")
	xt.write(&b)
	b.WriteString("</section>\n")
	fmt.Fprintf(&b, "<script>\n%s\n</script>\n</body>\n</html>\n", reportScript)
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// writeCampaignSection writes the campaign's identity and environment.
func writeCampaignSection(b *bytes.Buffer, res *analysis.Result) {
	esc := html.EscapeString
	d := res.Dataset
	b.WriteString("<section id=\"campaign\"><h2>Campaign and environment</h2>\n<dl>\n")
	fmt.Fprintf(b, "<dt>treatment</dt><dd>%s (baseline %s; levels %s)</dd>\n", esc(d.Treatment), esc(res.Options.Baseline), esc(strings.Join(res.Levels, ", ")))
	fmt.Fprintf(b, "<dt>runs</dt><dd>%d attempts</dd>\n", len(d.Runs))
	for _, f := range d.Info {
		fmt.Fprintf(b, "<dt>%s</dt><dd>%s</dd>\n", esc(f.Name), esc(f.Value))
	}
	if slices.ContainsFunc(d.Runs, func(r analysis.Run) bool { return strings.HasPrefix(r.Broker, "kfake ") }) {
		fmt.Fprintf(b, "<dt>kfake</dt><dd class=\"words\">xp's embedded cluster: an in-memory Kafka broker (franz-go's kfake) behind xp's own TLS and SASL listeners; it compares security modes with each other on one machine, and its numbers are not Apache Kafka's (<a href=\"%s\">docs/cluster.md</a>).</dd>\n", clusterDocURL)
	}
	b.WriteString("</dl></section>\n")
}

// clusterDocURL is docs/cluster.md in xp's repository: what the embedded
// cluster's numbers mean.
const clusterDocURL = "https://github.com/xp-bench/xp/blob/main/docs/cluster.md"

// writeMethodSection writes how the estimates, intervals and tests are
// made, with this analysis's confidence, resamples and seed.
func writeMethodSection(b *bytes.Buffer, res *analysis.Result) {
	esc := html.EscapeString
	o := res.Options
	b.WriteString("<section id=\"method\"><h2>Method</h2>\n")
	fmt.Fprintf(b, `<p>The unit of analysis is a matched set: one configuration (pair) and one replicate, whose %s run and treatment run are both healthy. Sets with an unhealthy, failed or missing member are left out and counted below. Per set and metric, the effect is the difference (treatment &minus; baseline) and the penalty in percent of the baseline, positive meaning worse: (baseline &minus; treatment)/baseline for throughput, (treatment &minus; baseline)/baseline for latency and CPU.</p>
<p>Every estimate (mean and median penalty, difference of means, ratio of means) has a %g%% confidence interval whose method is named per row in effects.csv (method and note). Fewer than %d matched sets: no interval. Over one configuration: Student-t on the paired penalties and differences, on the linearised ratio of means (delta method), and for the median the distribution-free interval between two order statistics (none below 6 sets); a bootstrap interval from few sets is too narrow (Hesterberg 2015) and undercovers heavy-tailed penalties even at 100 sets. Pooled over configurations, below %d sets: Student-t with each configuration a stratum (Welch-Satterthwaite degrees of freedom); from %d sets: the %s bootstrap, %d resamples, seed %d (Efron and Tibshirani 1993; Davison and Hinkley 1997), two-level: it resamples whole configurations, then replicates within each, so the runs of one configuration are not treated as independent. Capped-rate and saturating (target_rate max) runs are never pooled in one estimate; throughput is estimated only for saturating runs.</p>
<p>Significance per configuration: the headline's log-ratio t-test, Holm-adjusted across every treatment, metric and configuration of the rate class; the Wilcoxon signed-rank test of the paired differences beside it as a distribution-free check (p_wilcoxon, not adjusted), effect size d<sub>z</sub> in significance.csv. The headline is the penalty from the geometric mean of the per-set ratios treatment/baseline: a t interval and t-test of the mean log ratio, one pivot, mapped back through exp, so that p &lt; 1 &minus; confidence exactly when the interval excludes 0 and no interval of a latency penalty reaches below &minus;100%% (Fleming and Wallace 1986; Hoefler and Belli 2015); its p-values are Holm-adjusted across every treatment and metric of the headline. Every other row's p-value is the test its own interval inverts (t-test, sign test, or the bootstrap interval inverted). The ratio of means and the mean of per-set penalties are in effects.csv beside it. Per-configuration intervals of a campaign of 20 or more configurations are bounded below by the spread pooled over them when their spreads are compatible (docs/analysis.md); an interval whose runs alone cannot bound the mean is marked &dagger;. Factor sensitivity: mean penalty at each level of each factor (cluster bootstrap interval), and a least-squares model of the penalty on the factors' main effects with an F-test per factor, ranked by its share of the penalty's variance.</p>
`, esc(o.Baseline), o.Confidence*100, analysis.MinSetsForInterval, analysis.MinSetsForBootstrap,
		analysis.MinSetsForBootstrap, esc(string(o.Method)), o.Resamples, o.Seed)
	b.WriteString("</section>\n")
}

// writeSetsSection writes the count of matched sets per treatment.
func writeSetsSection(b *bytes.Buffer, res *analysis.Result) {
	b.WriteString("<section id=\"sets\"><h2>Matched sets</h2>\n")
	ct := &table{id: "counts", header: []string{"treatment", "baseline", "matched sets", "healthy (analysed)", "excluded"}}
	for _, c := range res.Counts {
		ct.rows = append(ct.rows, []string{c.Treatment, res.Options.Baseline, strconv.Itoa(c.Sets), strconv.Itoa(c.Healthy), strconv.Itoa(c.Excluded)})
	}
	ct.numeric = numericCols(ct.header, ct.rows)
	ct.write(b)
	b.WriteString("</section>\n")
}

// writeHeadlineSection writes the headline penalty (ratio of means) per
// pooled scope.
func writeHeadlineSection(b *bytes.Buffer, res *analysis.Result) {
	esc := html.EscapeString
	b.WriteString("<section id=\"headline\"><h2>Headline: penalty (geometric mean of the per-set ratios)</h2>\n")
	scopes := pooledScopes(res)
	if len(scopes) == 0 {
		b.WriteString("<p>No estimates: there is no healthy matched set.</p>\n")
	}
	for _, scope := range scopes {
		fmt.Fprintf(b, "<h3>%s</h3>\n", esc(scopeText(scope)))
		headlineTable(res, scope).write(b)
		if f := headlineFamily(res, scope); f != "" {
			fmt.Fprintf(b, "<p class=\"note\">Interval and p come from one t-test on the per-set log ratios: p &lt; %.2g exactly when the interval excludes 0. p (Holm) is adjusted across the whole headline family: %s.</p>\n", 1-res.Options.Confidence, esc(f))
		}
	}
	fmt.Fprintf(b, "<p class=\"note\">A matched set holding a run %d or more typical deviations from its configuration's median (a gross outlier: a cold broker, a replicate that slowed every mode) does not count in the headline; the flags say how many.</p>\n",
		analysis.GrossOutlierFactor)
	writeUnboundedNote(b, res)
	var shown []analysis.Effect
	for _, scope := range scopes {
		for _, e := range res.Effects {
			if e.Scope == scope && e.Statistic == analysis.StatHeadline {
				shown = append(shown, e)
			}
		}
	}
	writeMarksNote(b, shown)
	b.WriteString("</section>\n")
}

// writeFiguresSection inlines the figures with their captions.
func writeFiguresSection(b *bytes.Buffer, res *analysis.Result, figs []*figure) {
	esc := html.EscapeString
	b.WriteString("<section id=\"figures\"><h2>Figures</h2>\n")
	for _, f := range figs {
		fmt.Fprintf(b, "<figure id=\"fig-%s\">\n%s<figcaption>%s (figures/%s)</figcaption>\n</figure>\n",
			esc(strings.TrimSuffix(f.Name, ".svg")), inlineSVG(f.SVG), esc(f.Caption), esc(f.Name))
	}
	if len(res.Curves) > 0 {
		fmt.Fprintf(b, "<p>Latency curves are drawn for the first %d configurations; latency.csv holds every configuration's curves.</p>\n", MaxCurveFigures)
	}
	b.WriteString("</section>\n")
}

// writeEffectsSection writes every pooled estimate and the mean penalty of
// every configuration.
func writeEffectsSection(b *bytes.Buffer, res *analysis.Result) {
	b.WriteString("<section id=\"effects-section\"><h2>Effects</h2>\n<p>Every pooled estimate and the mean penalty of every configuration; effects.csv has all four statistics for every scope.</p>\n")
	et := &table{id: "effects", header: EffectsHeader}
	for _, e := range res.Effects {
		// Rows built only for the lines shown: a campaign of many
		// configurations has hundreds of thousands.
		if strings.HasPrefix(e.Scope, analysis.ScopeAll) || e.Statistic == "mean_penalty" {
			et.rows = append(et.rows, effectRow(e))
		}
	}
	shorten(et.rows, 7, 8, 9, 11, 12)
	et.numeric = numericCols(et.header, et.rows)
	et.prose = proseCols(et.header, "note")
	et.write(b)
	b.WriteString("</section>\n")
}

// writeSensitivitySection writes the mean penalty per factor level, or why
// there is none.
func writeSensitivitySection(b *bytes.Buffer, res *analysis.Result) {
	esc := html.EscapeString
	b.WriteString("<section id=\"sensitivity-section\"><h2>Factor sensitivity</h2>\n")
	if why := noSensitivity(res); why != "" {
		fmt.Fprintf(b, "<p>%s</p>\n", esc(why))
	} else {
		// The penalty columns are in percent whatever the metric's
		// unit: the header says so.
		header := slices.Clone(SensitivityHeader)
		for i, h := range header {
			switch h {
			case "mean_penalty", "ci_low", "ci_high", "spread":
				header[i] = h + " %"
			}
		}
		st := &table{id: "sensitivity", header: header, rows: sensitivityRows(res)}
		shorten(st.rows, 8, 9, 10, 12, 16, 17, 18, 19, 20)
		st.numeric = numericCols(st.header, st.rows)
		st.prose = proseCols(st.header, "note")
		st.write(b)
	}
	b.WriteString("</section>\n")
}

// writeSignificanceSection writes the per-configuration tests of the
// headline metric.
func writeSignificanceSection(b *bytes.Buffer, res *analysis.Result) {
	esc := html.EscapeString
	hm := headlineMetric(res)
	fmt.Fprintf(b, "<section id=\"significance-section\"><h2>Significance per configuration: %s</h2>\n<p>The headline's log-ratio t-test in each configuration (p_value), Holm-adjusted across the family named in holm_family; Wilcoxon signed-rank test of the paired differences beside it (wilcoxon_t, p_wilcoxon); d<sub>z</sub> = mean / sd of the differences. significance.csv has every metric.</p>\n", esc(hm))
	// The family is said once, above the table, not on every row.
	fam := slices.Index(significanceHeader, "holm_family")
	drop := func(r []string) []string { return slices.Delete(slices.Clone(r), fam, fam+1) }
	gt := &table{id: "significance", header: drop(significanceHeader)}
	family := ""
	for _, r := range significanceRows(res) {
		if r[2] == hm {
			gt.rows = append(gt.rows, drop(r))
			family = r[fam]
		}
	}
	if family != "" {
		fmt.Fprintf(b, "<p class=\"note\">p_holm is adjusted across the family %s.</p>\n", esc(family))
	}
	shorten(gt.rows, 6, 7, 10, 11, 13)
	gt.numeric = numericCols(gt.header, gt.rows)
	gt.write(b)
	b.WriteString("</section>\n")
}

// writePercentilesSection writes which latency percentiles each
// configuration's runs support (campaigns with sample counts).
func writePercentilesSection(b *bytes.Buffer, res *analysis.Result) {
	if len(res.Percentiles) == 0 {
		return
	}
	b.WriteString("<section id=\"percentiles-section\"><h2>Percentiles supported</h2>\n<p>A latency percentile q of a run is used only when the run holds at least 10/(1&minus;q) samples (p99: 1,000; p99.9: 10,000; p99.99: 100,000), so that ten samples lie beyond it; otherwise that metric is left out of the run. Per configuration (percentiles.csv has the counts):</p>\n")
	h, r := supportSummary(res)
	pt := &table{id: "percentiles", header: h, rows: r}
	pt.numeric = numericCols(pt.header, pt.rows)
	pt.write(b)
	b.WriteString("</section>\n")
}

// writeTelemetrySection writes what the hosts of each role did
// (campaigns with telemetry).
func writeTelemetrySection(b *bytes.Buffer, res *analysis.Result) {
	if len(res.Telemetry) == 0 {
		return
	}
	esc := html.EscapeString
	d := res.Dataset
	fmt.Fprintf(b, "<section id=\"telemetry-section\"><h2>Hosts by role</h2>\n<p>What the hosts of each role did during the measured window of the healthy runs, per configuration and %s: per run the mean over the role's hosts, then the mean over the runs (memory: the largest sample). CPU is in cores kept busy (CPU seconds per second; a process on the local target, the whole machine on a remote one); memory is the resident memory of the process (local) or the machine's used memory (remote). Empty cells were not measured (the local target has no network or disk counters). telemetry.csv has the same numbers unrounded.</p>\n", esc(d.Treatment))
	tt := &table{id: "telemetry", header: []string{"pair", d.Treatment, "role", "hosts", "runs", "CPU (cores busy)",
		"memory, largest (MiB)", "network received (MiB/s)", "network sent (MiB/s)", "disk read (MiB/s)", "disk written (MiB/s)"}}
	tt.rows = telemetryRows(res)
	for _, r := range tt.rows {
		r[3] = strings.ReplaceAll(r[3], ";", ", ")
	}
	shorten(tt.rows, 5, 6, 7, 8, 9, 10)
	tt.numeric = numericCols(tt.header, tt.rows)
	tt.write(b)
	b.WriteString("</section>\n")
}

// headlineTable is the pooled mean penalties of scope, one row per metric
// and treatment (long form), so that the table keeps its width however
// many treatments there are, and shows every row without scrolling.
func headlineTable(res *analysis.Result, scope string) *table {
	ht := &table{id: "headline-" + scope, whole: true,
		header: []string{"metric", res.Dataset.Treatment, "penalty % (geometric mean ratio)", "interval", "n", "p (Holm)", "method", "flags"}}
	for _, m := range metricsWithScope(res, scope) {
		for _, tr := range res.Treatments {
			e, ok := headline(res, tr, m, scope)
			if !ok {
				continue
			}
			ht.rows = append(ht.rows, []string{metricName(m), tr, short(e.Estimate), intervalText(e), strconv.Itoa(e.N), short(e.PHolm), e.Method, headlineFlags(e)})
		}
	}
	ht.numeric = numericCols(ht.header, ht.rows)
	return ht
}

// headlineFamily names the Holm family of scope's headline rows.
func headlineFamily(res *analysis.Result, scope string) string {
	for _, e := range res.Effects {
		if e.Scope == scope && e.Statistic == analysis.StatHeadline && e.Family != "" {
			return e.Family
		}
	}
	return ""
}

// noSensitivity says why a result has no factor sensitivity, or "" when
// it has some.
func noSensitivity(res *analysis.Result) string {
	if len(res.Sensitivity) > 0 {
		return ""
	}
	var varying []string
	for fi, f := range res.CellFactors {
		for _, c := range res.Cells {
			if fi < len(c.Factors) && fi < len(res.Cells[0].Factors) && c.Factors[fi] != res.Cells[0].Factors[fi] {
				varying = append(varying, f)
				break
			}
		}
	}
	if len(varying) == 0 {
		return fmt.Sprintf("No factor but %s varies between the configurations, so there is no other factor the penalty could depend on; sensitivity.csv has its header only.", res.Dataset.Treatment)
	}
	return fmt.Sprintf("%s vary between the configurations, but no level of them has a healthy matched set beside another level's, so there is no sensitivity to estimate; sensitivity.csv has its header only.", strings.Join(varying, ", "))
}

// runsTable keeps the report's run table readable: identity, factors that
// vary, outcome and the headline metrics.
func runsTable(res *analysis.Result) *table {
	d := res.Dataset
	var fidx []int
	for i := range d.Factors {
		first := ""
		varies := false
		for k, r := range d.Runs {
			v := ""
			if i < len(r.Factors) {
				v = r.Factors[i]
			}
			if k == 0 {
				first = v
			} else if v != first {
				varies = true
				break
			}
		}
		if varies || d.Factors[i] == d.Treatment {
			fidx = append(fidx, i)
		}
	}
	var metrics []string
	for _, m := range []string{"publish_rate", "publish_ms_p50", "publish_ms_p99", "e2e_ms_p99", "e2e_ms_p9999", "client_cpu_us_per_msg"} {
		for _, md := range d.Metrics {
			if md.Name == m {
				metrics = append(metrics, m)
			}
		}
	}
	if len(metrics) == 0 {
		for _, md := range d.Metrics {
			metrics = append(metrics, md.Name)
		}
	}
	t := &table{id: "runs", header: []string{"run", "pair", "replicate", "attempt"}}
	for _, i := range fidx {
		t.header = append(t.header, d.Factors[i])
	}
	// The gateway's record layer and cipher, when any run had a gateway.
	crypto := slices.ContainsFunc(d.Runs, func(r analysis.Run) bool { return r.GatewayRecordLayer != "" })
	if crypto {
		t.header = append(t.header, "gateway crypto")
	}
	t.header = append(t.header, "outcome", "reasons")
	t.header = append(t.header, metrics...)
	for _, r := range d.Runs {
		row := []string{r.Run, r.Pair, strconv.Itoa(r.Replicate), strconv.Itoa(r.Attempt)}
		for _, i := range fidx {
			v := ""
			if i < len(r.Factors) {
				v = r.Factors[i]
			}
			row = append(row, v)
		}
		if crypto {
			c := ""
			if r.GatewayRecordLayer != "" {
				c = r.GatewayRecordLayer + " + " + r.GatewayCipher
			}
			switch {
			case r.KeptLegs():
				c += " (legs kept on crypto/tls: " + r.GatewayTLSKept + ")"
			case r.GatewayTLSKept != "":
				c += " (legs kept on crypto/tls " + r.GatewayTLSKept + ")"
			}
			row = append(row, c)
		}
		oc := r.Outcome
		if oc == "" {
			oc = "pending"
		}
		why := strings.Join(r.Reasons, "; ")
		if r.Error != "" {
			why = strings.TrimPrefix(why+"; "+r.Error, "; ")
		}
		if r.TelemetryGaps != "" {
			why = strings.TrimPrefix(why+"; telemetry covers less than the measured window: missing "+r.TelemetryGaps, "; ")
		}
		row = append(row, oc, why)
		for _, m := range metrics {
			// An interrupted run's metrics are what it had when cut
			// short (often 0): not a measurement.
			if v, ok := r.Metrics[m]; ok && r.Outcome != analysis.OutcomeInterrupted {
				row = append(row, short(v))
			} else {
				row = append(row, "")
			}
		}
		t.rows = append(t.rows, row)
	}
	t.numeric = numericCols(t.header, t.rows)
	t.prose = proseCols(t.header, "reasons")
	return t
}

// shorten rounds the given columns for reading; the CSV files keep full
// precision.
func shorten(rows [][]string, cols ...int) {
	for _, r := range rows {
		for _, c := range cols {
			if c < len(r) && r[c] != "" {
				if v, err := strconv.ParseFloat(r[c], 64); err == nil {
					r[c] = short(v)
				}
			}
		}
	}
}
