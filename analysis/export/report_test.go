package export

import (
	"bytes"
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
  var out = {pageWidth: document.documentElement.scrollWidth, tables: [], notes: [], sensitivity: ''};
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
// 1,400 px wide, in headless Chromium.
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
	dom := string(chromium(t, "--window-size=1400,900", "--dump-dom", "file://"+path))
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

// TestReportFits1400px opens the report of a demo-shaped campaign (six
// security modes, one configuration, tail percentiles left out) in
// headless Chromium, 1,400 px wide: the page does not scroll sideways; the
// tables do not scroll sideways either, and the headline tables show every
// treatment and metric without scrolling at all, each metric's name on one
// line; one banner lists every percentile
// left out; the empty factor sensitivity says why in one line.
func TestReportFits1400px(t *testing.T) {
	dir := t.TempDir()
	res := analyseInto(t, demoDataset(), dir)
	l := measureReport(t, dir)
	if l.PageWidth > 1400 {
		t.Errorf("the page is %d px wide at 1,400", l.PageWidth)
	}
	for _, tb := range l.Tables {
		if tb.ScrollW > tb.ClientW {
			t.Errorf("table %s scrolls sideways: %d px in a box of %d", tb.ID, tb.ScrollW, tb.ClientW)
		}
	}
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
	page, _ := os.ReadFile(filepath.Join(dir, "report.html"))
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
