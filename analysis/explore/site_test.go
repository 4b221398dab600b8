package explore

import (
	"context"
	"encoding/csv"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/xp-bench/xp/analysis"
	"github.com/xp-bench/xp/internal/browsertest"
)

var screenshotDir = flag.String("screenshots", "", "write the pages' screenshots here (default: the test's temporary directory)")

// shotPath is where a test's screenshot of page goes.
func shotPath(t *testing.T, name string) string {
	dir := *screenshotDir
	if dir == "" {
		dir = t.TempDir()
	}
	return filepath.Join(dir, name+".png")
}

// slice is a view of the effects page the test drives.
type slice struct {
	treatment, metric string
	// drop lists, per factor, the levels the test unticks.
	drop map[string][]string
}

// TestStaticSite opens the static site of a make-demo-sized pair of
// campaigns and of a 5,184-run campaign in headless Chromium: it filters
// the effects page to a slice by unticking levels, checks that the
// plotted estimates are effects.csv's for exactly that slice (and drawn
// in their order), that the figure's SVG and CSV downloads hold them, that
// the address alone restores the view in a new tab, follows a row to its
// configuration and on to a run whose p99 is runs.csv's, and that no
// request leaves the site's directory. Screenshots of every page type are
// written (see -screenshots).
func TestStaticSite(t *testing.T) {
	b := browsertest.New(t)
	t.Run("demo", func(t *testing.T) {
		dir := t.TempDir()
		a, c := filepath.Join(dir, "quick-a.db"), filepath.Join(dir, "quick-b.db")
		makeCampaign(t, a, demoShape(1), 5)
		makeCampaign(t, c, demoShape(2), 5)
		analyseToCSV(t, a, filepath.Join(dir, "analysis"))
		site := filepath.Join(dir, "site")
		built, err := WriteSite(context.Background(), site, []string{a, c}, Options{Analysis: testAnalysis})
		if err != nil {
			t.Fatal(err)
		}
		checkSite(t, b, site, filepath.Join(dir, "analysis"), slice{"tls", "publish_ms_p99", map[string][]string{"message_size": {"1024"}}}, "demo")
		da, err := analysis.Load(context.Background(), a)
		if err != nil {
			t.Fatal(err)
		}
		dc, err := analysis.Load(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		cmp, err := analysis.Compare(da, dc, "quick-a.db", "quick-b.db", testAnalysis)
		if err != nil {
			t.Fatal(err)
		}
		if len(built.Comparisons) != 1 || len(built.Comparisons[0].Rows) != len(cmp.Rows) {
			t.Fatalf("the site compares %+v, xp compare has %d rows", built.Comparisons, len(cmp.Rows))
		}
		checkCompare(t, b, site, len(cmp.Rows))
	})
	t.Run("5184-runs", func(t *testing.T) {
		dir := t.TempDir()
		db := filepath.Join(dir, "overhead.db")
		makeCampaign(t, db, overheadShape(), 30)
		analyseToCSV(t, db, filepath.Join(dir, "analysis"))
		site := filepath.Join(dir, "site")
		if _, err := WriteSite(context.Background(), site, []string{db}, Options{Analysis: testAnalysis}); err != nil {
			t.Fatal(err)
		}
		if n := dirSize(t, site); n > 50<<20 {
			t.Errorf("the site of 5,184 runs is %.1f MB, want under 50 MB", float64(n)/(1<<20))
		}
		checkSite(t, b, site, filepath.Join(dir, "analysis"), slice{"mtls", "e2e_ms_p99", map[string][]string{
			"message_size": {"1024", "102400"},
			"acks":         {"all"},
			"producers":    {"1"},
			"compression":  {"lz4"},
		}}, "overhead")
	})
}

// ready waits until the page has drawn the view its address names.
func ready(t *testing.T, tab *browsertest.Tab, prefix string) {
	t.Helper()
	tab.WaitFor(fmt.Sprintf(`document.body.dataset.ready === location.hash && location.hash.startsWith(%q)`, prefix), 30*time.Second)
}

// plotted returns the forest plot's estimates by pair, and whether the
// dots lie in the order of their estimates.
func plotted(t *testing.T, tab *browsertest.Tab, metric string) (map[string]float64, bool) {
	t.Helper()
	type dot struct {
		Title string
		CX    float64
	}
	dots := browsertest.Eval[[]dot](tab, fmt.Sprintf(`[...document.querySelectorAll('svg[data-forest=%q] circle')].map(c => ({title: c.querySelector('title').textContent, cx: +c.getAttribute('cx')}))`, metric))
	out := map[string]float64{}
	for _, d := range dots {
		pair, est, ok := strings.Cut(d.Title, ": ")
		if !ok {
			t.Fatalf("dot title %q", d.Title)
		}
		out[pair] = parseFloat(t, est)
	}
	ordered := true
	for i := range dots {
		for j := range dots {
			if out[strings.SplitN(dots[i].Title, ":", 2)[0]] < out[strings.SplitN(dots[j].Title, ":", 2)[0]] && dots[i].CX > dots[j].CX {
				ordered = false
			}
		}
	}
	return out, ordered
}

// expected returns effects.csv's estimates of the slice, by pair: the
// per-configuration rows of the treatment, metric and ratio penalty whose
// configuration (read from runs.csv) has none of the dropped levels.
func expected(t *testing.T, csvDir string, s slice) map[string]float64 {
	t.Helper()
	inSlice := map[string]bool{}
	for _, r := range csvTable(t, filepath.Join(csvDir, "runs.csv")) {
		keep := true
		for f, levels := range s.drop {
			if slices.Contains(levels, r[f]) {
				keep = false
			}
		}
		inSlice[r["pair"]] = inSlice[r["pair"]] || keep
		if !keep {
			inSlice[r["pair"]] = false
		}
	}
	out := map[string]float64{}
	for _, e := range csvTable(t, filepath.Join(csvDir, "effects.csv")) {
		if e["treatment"] == s.treatment && e["metric"] == s.metric && e["statistic"] == "ratio_penalty" && inSlice[e["scope"]] {
			out[e["scope"]] = parseFloat(t, e["estimate"])
		}
	}
	if len(out) == 0 {
		t.Fatalf("effects.csv has no row of the slice %+v", s)
	}
	return out
}

func checkSite(t *testing.T, b *browsertest.Browser, site, csvDir string, s slice, name string) {
	tab := b.Tab(t)
	downloads := t.TempDir()
	tab.AllowDownloads(downloads)
	root := "file://" + filepath.ToSlash(site) + "/"
	tab.Do(chromedp.Navigate(root + "index.html"))
	ready(t, tab, "#/campaigns")
	tab.Screenshot(shotPath(t, name+"-campaigns"))

	tab.Do(chromedp.Navigate(root + "index.html#/effects?c=0&tr=" + s.treatment + "&m=" + s.metric))
	ready(t, tab, "#/effects")
	for f, levels := range s.drop {
		for _, l := range levels {
			browsertest.Eval[chromedp.Void](tab, fmt.Sprintf(`document.querySelector('fieldset[data-factor=%q] input[data-level=%q]').click()`, f, l))
			tab.WaitFor(fmt.Sprintf(`document.body.dataset.ready === location.hash && decodeURIComponent(location.hash).includes(%q)`, "f."+f+"="), 30*time.Second)
		}
	}
	want := expected(t, csvDir, s)
	got, ordered := plotted(t, tab, s.metric)
	if !equalEstimates(got, want) {
		t.Errorf("the forest plot shows %d estimates %v, effects.csv has %d for the slice: %v", len(got), got, len(want), want)
	}
	if !ordered {
		t.Error("the forest plot's dots are not in the order of their estimates")
	}
	if n := browsertest.Eval[int](tab, fmt.Sprintf(`document.querySelectorAll('#effects-%s tbody tr').length`, s.metric)); n != min(len(want), 50) {
		t.Errorf("the effects table shows %d rows, want %d", n, min(len(want), 50))
	}
	checkDownloads(t, tab, downloads, s.metric, want)
	tab.Screenshot(shotPath(t, name+"-effects"))

	// The address alone restores the view.
	addr := browsertest.Eval[string](tab, `location.href`)
	other := b.Tab(t)
	other.Do(chromedp.Navigate(addr))
	ready(t, other, "#/effects")
	if again, _ := plotted(t, other, s.metric); !equalEstimates(again, want) {
		t.Errorf("%s in a new tab shows %v, want %v", addr, again, want)
	}
	for f, levels := range s.drop {
		for _, l := range levels {
			if browsertest.Eval[bool](other, fmt.Sprintf(`document.querySelector('fieldset[data-factor=%q] input[data-level=%q]').checked`, f, l)) {
				t.Errorf("%s in a new tab ticks %s=%s", addr, f, l)
			}
		}
	}

	// A row leads to its configuration, a set to its runs.
	browsertest.Eval[chromedp.Void](tab, fmt.Sprintf(`document.querySelector('#effects-%s tbody a').click()`, s.metric))
	ready(t, tab, "#/config")
	if n := browsertest.Eval[int](tab, `document.querySelectorAll('#sets tbody tr').length`); n == 0 {
		t.Error("the configuration page lists no matched set")
	}
	if !browsertest.Eval[bool](tab, `!!document.querySelector('figure[data-fig^="strip-"] svg')`) {
		t.Error("the configuration page has no strip plot")
	}
	tab.Screenshot(shotPath(t, name+"-config"))
	browsertest.Eval[chromedp.Void](tab, `document.querySelector('#sets tbody a').click()`)
	ready(t, tab, "#/run")
	u, err := url.Parse(browsertest.Eval[string](tab, `location.href`))
	if err != nil {
		t.Fatal(err)
	}
	q, _ := url.ParseQuery(strings.SplitN(u.Fragment, "?", 2)[1])
	run, attempt := q.Get("run"), q.Get("a")
	shown := browsertest.Eval[string](tab, `document.querySelector('#run-metrics tr[data-metric="publish_ms_p99"] td[data-col="value"]').dataset.value`)
	var csvP99 string
	for _, r := range csvTable(t, filepath.Join(csvDir, "runs.csv")) {
		if r["run"] == run && r["attempt"] == attempt {
			csvP99 = r["publish_ms_p99"]
		}
	}
	if csvP99 == "" || parseFloat(t, shown) != parseFloat(t, csvP99) {
		t.Errorf("run %s attempt %s shows publish p99 %s, runs.csv has %q", run, attempt, shown, csvP99)
	}
	for _, fig := range []string{"percentiles-", "rate-", "backlog-"} {
		if !browsertest.Eval[bool](tab, fmt.Sprintf(`!!document.querySelector('figure[data-fig^=%q] svg')`, fig)) {
			t.Errorf("the run page has no %s figure", strings.TrimSuffix(fig, "-"))
		}
	}
	tab.Screenshot(shotPath(t, name+"-run"))

	for _, tb := range []*browsertest.Tab{tab, other} {
		for _, r := range tb.Requests() {
			if !strings.HasPrefix(r, root) && !strings.HasPrefix(r, "data:") {
				t.Errorf("a request left the site: %s", r)
			}
		}
	}
}

// equalEstimates says whether two maps hold the same pairs and exactly
// the same numbers.
func equalEstimates(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || v != w && !(math.IsNaN(v) && math.IsNaN(w)) {
			return false
		}
	}
	return true
}

// checkDownloads clicks the forest plot's SVG and CSV buttons and checks
// the files: an SVG with a dot per configuration, a CSV with its rows.
func checkDownloads(t *testing.T, tab *browsertest.Tab, dir, metric string, want map[string]float64) {
	t.Helper()
	fig := "forest-" + metric
	for _, kind := range []string{"svg", "csv"} {
		browsertest.Eval[chromedp.Void](tab, fmt.Sprintf(`document.querySelector('figure[data-fig=%q] button[data-download=%q]').click()`, fig, kind))
	}
	read := func(name string) []byte {
		deadline := time.Now().Add(20 * time.Second)
		for {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err == nil && len(b) > 0 {
				return b
			}
			if time.Now().After(deadline) {
				t.Fatalf("download %s: %v", name, err)
			}
			time.Sleep(50 * time.Millisecond) // polling the download directory for the file
		}
	}
	svg := read(fig + ".svg")
	dec := xml.NewDecoder(strings.NewReader(string(svg)))
	circles := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s.svg is not XML: %v", fig, err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "circle" {
			circles++
		}
	}
	if circles != len(want) {
		t.Errorf("%s.svg has %d dots, want %d", fig, circles, len(want))
	}
	recs, err := csv.NewReader(strings.NewReader(string(read(fig + ".csv")))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, r := range recs[1:] {
		v, _ := strconv.ParseFloat(r[slices.Index(recs[0], "estimate")], 64)
		got[r[slices.Index(recs[0], "scope")]] = v
	}
	if !equalEstimates(got, want) {
		t.Errorf("%s.csv holds %v, want %v", fig, got, want)
	}
}

// checkCompare opens the compare page of the site's two campaigns: it
// shows xp compare's headline rows (analysis.Compare) of the two, as
// many as the comparison has.
func checkCompare(t *testing.T, b *browsertest.Browser, site string, want int) {
	tab := b.Tab(t)
	root := "file://" + filepath.ToSlash(site) + "/"
	tab.Do(chromedp.Navigate(root + "index.html#/compare?a=0&b=1"))
	ready(t, tab, "#/compare")
	summary := browsertest.Eval[string](tab, `document.getElementById('cmp-summary').textContent`)
	if !strings.HasPrefix(summary, fmt.Sprintf("%d headline rows", want)) {
		t.Errorf("compare summary %q, want %d headline rows", summary, want)
	}
	if n := browsertest.Eval[int](tab, `document.querySelectorAll('#compare tbody tr').length`); n != min(want, 50) {
		t.Errorf("the compare table shows %d rows, want %d", n, min(want, 50))
	}
	if browsertest.Eval[bool](tab, `!!document.getElementById('cmp-error')`) {
		t.Errorf("the compare page shows an error: %s", browsertest.Eval[string](tab, `document.getElementById('cmp-error').textContent`))
	}
	tab.Screenshot(shotPath(t, "demo-compare"))
}
