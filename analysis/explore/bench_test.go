package explore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/xp-bench/xp/analysis"
	"github.com/xp-bench/xp/internal/browsertest"
)

// renderTime opens page (a file:// address) in a fresh tab and returns
// how long after navigation began the page had drawn its view, as the
// page's own clock measures it, or an error when it showed one.
func renderTime(b *testing.B, br *browsertest.Browser, page string) (time.Duration, error) {
	tab := br.Tab(b)
	tab.Do(chromedp.Navigate(page))
	tab.WaitFor(`document.body.dataset.ready !== undefined`, 2*time.Minute)
	r := browsertest.Eval[struct {
		Ready string
		Ms    float64
	}](tab, `({ready: document.body.dataset.ready, ms: +document.body.dataset.readyMs})`)
	if r.Ready == "error" {
		return 0, fmt.Errorf("%s: the page shows an error", page)
	}
	return time.Duration(r.Ms * float64(time.Millisecond)), nil
}

// benchSite writes the static site of a synthetic campaign of cfg (each
// run with a series of seconds) with the default analysis (10,000
// resamples); report reports its size and build time (after b.Loop, which
// clears the metrics reported before it).
func benchSite(b *testing.B, cfg analysis.SyntheticConfig, seconds int) (page string, report func()) {
	dir := b.TempDir()
	db := filepath.Join(dir, "campaign.db")
	makeCampaign(b, db, cfg, seconds)
	site := filepath.Join(dir, "site")
	start := time.Now()
	if _, err := WriteSite(context.Background(), site, []string{db}, Options{}); err != nil {
		b.Fatal(err)
	}
	took, size := time.Since(start), dirSize(b, site)
	return "file://" + filepath.ToSlash(site) + "/index.html", func() {
		b.ReportMetric(took.Seconds(), "s/site")
		b.ReportMetric(float64(size)/1e6, "MB_site")
	}
}

// BenchmarkExplore5184 measures the static site of a 5,184-run campaign
// (plans/security-overhead.yaml's shape, whole-run histograms and 60 s
// series): its size, the time to write it, and the time its effects page
// takes to draw (forest plot and table of every configuration) in
// headless Chromium, from navigation to the drawn page.
func BenchmarkExplore5184(b *testing.B) {
	cfg := overheadShape()
	cfg.HistogramValues = 2000
	page, report := benchSite(b, cfg, 60)
	br := browsertest.New(b)
	var worst time.Duration
	for b.Loop() {
		d, err := renderTime(b, br, page+"#/effects?c=0&tr=tls&m=publish_ms_p99")
		if err != nil {
			b.Fatal(err)
		}
		worst = max(worst, d)
	}
	report()
	b.ReportMetric(worst.Seconds(), "s/effects_render")
}

// BenchmarkExplore100k builds the static site of a 100,224-run campaign
// (576 configurations, 58 replicates) and opens its effects, runs and run
// pages: they draw (rendered = 1) with paged tables, in the times
// reported.
func BenchmarkExplore100k(b *testing.B) {
	cfg := overheadShape()
	cfg.Replicates = 58
	cfg.Histograms = false
	page, report := benchSite(b, cfg, 10)
	br := browsertest.New(b)
	rendered := 1.0
	for b.Loop() {
		for _, v := range []struct{ name, hash string }{
			{"effects", "#/effects?c=0&tr=tls&m=publish_ms_p99"},
			{"runs", "#/runs?c=0&page=2000"},
			{"run", "#/run?c=0&run=p00575-tls-r58&a=1"},
		} {
			d, err := renderTime(b, br, page+v.hash)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				rendered = 0
				continue
			}
			b.ReportMetric(d.Seconds(), "s/"+v.name+"_render")
		}
	}
	report()
	b.ReportMetric(rendered, "rendered")
}
