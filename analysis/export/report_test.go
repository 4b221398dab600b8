package export

import (
	"bytes"
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xp-bench/xp/analysis"
)

// reportLayout is what a script measures of report.html in Chromium.
type reportLayout struct {
	PageWidth int `json:"pageWidth"`
	Tables    []struct {
		ID               string
		ScrollW, ClientW int
		ScrollH, ClientH int
		FirstColumnLines int `json:"firstColumnLines"`
		Rows             int
	} `json:"tables"`
	Notes       []string `json:"notes"`
	Sensitivity string   `json:"sensitivity"`
	// Broken lists the table cells narrower than their longest word
	// (a word broken across lines, or spilling out of its cell).
	Broken []struct {
		Table, Text string
		Word, Cell  float64
	} `json:"broken"`
	// Overflow lists elements outside a scrolling table box that reach
	// beyond the window's right edge.
	Overflow []string `json:"overflow"`
}

// layoutScript measures the page once the report's own script has run.
const layoutScript = `<pre id="layout" hidden></pre><script>
(function () {
  function lines(el) {
    var r = document.createRange(); r.selectNodeContents(el);
    var tops = {};
    Array.prototype.forEach.call(r.getClientRects(), function (x) { tops[Math.round(x.top)] = 1; });
    return Object.keys(tops).length;
  }
  var out = {pageWidth: document.documentElement.scrollWidth, tables: [], notes: [], sensitivity: '', broken: [], overflow: []};
  var ctx = document.createElement('canvas').getContext('2d');
  document.querySelectorAll('td, th').forEach(function (c) {
    var st = getComputedStyle(c);
    ctx.font = st.font;
    var longest = 0;
    c.textContent.split(/\s+/).forEach(function (w) { longest = Math.max(longest, ctx.measureText(w).width); });
    var inner = c.clientWidth - parseFloat(st.paddingLeft) - parseFloat(st.paddingRight);
    if (longest > inner + 0.5) out.broken.push({table: c.closest('table').id, text: c.textContent, word: longest, cell: inner});
  });
  var vw = document.documentElement.clientWidth;
  document.body.querySelectorAll('*').forEach(function (e) {
    if (e.closest('.scroll') || e.closest('dd') || e.closest('script') || e.closest('pre')) return;
    var r = e.getBoundingClientRect();
    if (r.width > 0 && r.right > vw + 0.5) out.overflow.push(e.tagName + '#' + e.id + ' ' + Math.round(r.right));
  });
  document.querySelectorAll('table').forEach(function (t) {
    var box = t.parentElement, first = 0;
    Array.prototype.forEach.call(t.tBodies[0].rows, function (r) { if (r.cells.length) first = Math.max(first, lines(r.cells[0])); });
    out.tables.push({id: t.id, scrollW: box.scrollWidth, clientW: box.clientWidth, scrollH: box.scrollHeight, clientH: box.clientHeight,
      firstColumnLines: first, rows: t.tBodies[0].rows.length});
  });
  document.querySelectorAll('.note').forEach(function (n) { out.notes.push(n.textContent); });
  var s = document.getElementById('sensitivity-section');
  if (s) out.sensitivity = s.textContent;
  document.getElementById('layout').textContent = JSON.stringify(out);
})();
</script>`

// measureReport opens a copy of dir/report.html with layoutScript added,
// 1,280 px wide, in headless Chromium.
func measureReport(t *testing.T, dir string) reportLayout {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	page := strings.Replace(string(b), "</body>", layoutScript+"</body>", 1)
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, []byte(page), 0o600); err != nil {
		t.Fatal(err)
	}
	dom := string(chromium(t, "--window-size=1280,900", "--dump-dom", "file://"+path))
	const open = `<pre id="layout" hidden="">`
	i, j := strings.Index(dom, open), strings.LastIndex(dom, "</pre>")
	if i < 0 || j < i {
		t.Fatalf("the layout script did not run:\n%.3000s", dom)
	}
	var l reportLayout
	if err := json.Unmarshal([]byte(html.UnescapeString(dom[i+len(open):j])), &l); err != nil {
		t.Fatal(err)
	}
	return l
}

// TestReportFits1280px opens the reports of a demo-shaped campaign (six
// security modes, one configuration, tail percentiles left out) and of a
// factorial one with an interrupted run in headless Chromium, 1,280 px
// wide: no table cell is narrower than its longest word (no word broken,
// none spilling out); nothing outside a scrolling table box reaches past
// the window's edge, so the page does not scroll sideways; the headline
// tables show every treatment and metric without scrolling at all, each
// metric's name on one line; one banner lists every percentile left out;
// the empty factor sensitivity says why in one line; an interrupted run
// shows no metric; numbers of four digits or more are grouped.
func TestReportFits1280px(t *testing.T) {
	factorial := testDataset()
	factorial.Runs[0].Outcome = analysis.OutcomeInterrupted
	factorial.Runs[0].Reasons = []string{"interrupted by a signal: context canceled while the producer flushed its last batch"}
	factorial.Runs[0].Metrics["publish_ms_p99"] = 0
	factorial.Runs[1].Metrics["publish_ms_p99"] = 12345.6
	fdir := t.TempDir()
	analyseInto(t, factorial, fdir)
	fl := measureReport(t, fdir)
	checkFits(t, "factorial", fl)
	page, _ := os.ReadFile(filepath.Join(fdir, "report.html"))
	runs := string(page[bytes.Index(page, []byte(`<table id="runs"`)):])
	runs = runs[:strings.Index(runs, "</table>")]
	row0 := runs[strings.Index(runs, "<td>"+factorial.Runs[0].Run+"</td>"):]
	row0 = row0[:strings.Index(row0, "</tr>")]
	if strings.Contains(row0, `class="n">0<`) {
		t.Errorf("an interrupted run shows a metric of 0: %s", row0)
	}
	if !strings.Contains(runs, `data-v="12346">12,346<`) && !strings.Contains(runs, `data-v="1.23e+04"`) {
		t.Errorf("a publish p99 of 12,345.6 ms is not written 12,346")
	}

	dir := t.TempDir()
	res := analyseInto(t, demoDataset(), dir)
	l := measureReport(t, dir)
	checkFits(t, "demo", l)
	headlines := 0
	for _, tb := range l.Tables {
		if !strings.HasPrefix(tb.ID, "headline-") {
			continue
		}
		headlines++
		if tb.ScrollW > tb.ClientW || tb.ScrollH > tb.ClientH {
			t.Errorf("table %s scrolls: %dx%d in a box of %dx%d", tb.ID, tb.ScrollW, tb.ScrollH, tb.ClientW, tb.ClientH)
		}
		if tb.FirstColumnLines != 1 {
			t.Errorf("table %s: a metric's name takes %d lines", tb.ID, tb.FirstColumnLines)
		}
		if want := len(res.Treatments) * len(metricsWithScope(res, "all")); tb.Rows != want {
			t.Errorf("table %s has %d rows, want one per treatment and metric, %d", tb.ID, tb.Rows, want)
		}
	}
	if headlines == 0 {
		t.Error("no headline table")
	}
	// The penalty is in percent: the metric is named without its unit.
	page, _ = os.ReadFile(filepath.Join(dir, "report.html"))
	headline := string(page[bytes.Index(page, []byte(`<table id="headline-all"`)):])
	headline = headline[:strings.Index(headline, "</table>")]
	if !strings.Contains(headline, "<td>Publish latency p99</td>") || strings.Contains(headline, "(ms)") {
		t.Error("the headline table names metrics with their unit beside a percent penalty")
	}
	var left []string
	for _, n := range l.Notes {
		if strings.Contains(n, "left out") {
			left = append(left, n)
		}
	}
	if len(left) != 1 {
		t.Errorf("%d banners on left-out percentiles, want one: %q", len(left), left)
	} else {
		for _, m := range []string{"publish_ms_p999", "publish_ms_p9999", "e2e_ms_p999", "e2e_ms_p9999"} {
			if !strings.Contains(left[0], m) {
				t.Errorf("the banner does not name %s: %q", m, left[0])
			}
		}
	}
	if !strings.Contains(l.Sensitivity, "No factor but security varies between the configurations") {
		t.Errorf("the empty factor sensitivity does not say why: %q", l.Sensitivity)
	}
	for _, tb := range l.Tables {
		if tb.ID == "sensitivity" {
			t.Error("an empty sensitivity table is shown")
		}
	}
}

// checkFits fails for every broken cell and every element past the
// window's edge outside a scrolling table box.
func checkFits(t *testing.T, name string, l reportLayout) {
	t.Helper()
	for _, b := range l.Broken {
		t.Errorf("%s: table %s: cell %q is %.0f px wide, its longest word %.0f px", name, b.Table, b.Text, b.Cell, b.Word)
	}
	if len(l.Overflow) > 0 || l.PageWidth > 1280 {
		t.Errorf("%s: the page is %d px wide at 1,280; past the edge: %q", name, l.PageWidth, l.Overflow)
	}
}

// TestReportExplainsKfake: a report of runs on the embedded cluster says
// in one line what kfake is, linking docs/cluster.md; one of Apache Kafka
// runs does not.
func TestReportExplainsKfake(t *testing.T) {
	for _, c := range []struct {
		broker string
		want   bool
	}{{"kfake v1.20.0", true}, {"apache 4.1.0", false}} {
		d := demoDataset()
		for i := range d.Runs {
			d.Runs[i].Broker = c.broker
		}
		dir := t.TempDir()
		analyseInto(t, d, dir)
		page, err := os.ReadFile(filepath.Join(dir, "report.html"))
		if err != nil {
			t.Fatal(err)
		}
		got := bytes.Contains(page, []byte(`<dt>kfake</dt><dd class="words">xp's embedded cluster`)) &&
			bytes.Contains(page, []byte(`href="`+clusterDocURL+`">docs/cluster.md</a>`))
		if got != c.want {
			t.Errorf("broker %s: kfake explained %v, want %v", c.broker, got, c.want)
		}
	}
}
