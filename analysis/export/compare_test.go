package export

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"html"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/xp-bench/xp/analysis"
)

// syntheticComparison compares two synthetic campaigns of one plan
// (independent noise), the first with an mtls level the second lacks.
func syntheticComparison(t *testing.T) *analysis.Comparison {
	t.Helper()
	gen := func(seed uint64, levels ...string) *analysis.Dataset {
		return analysis.Synthetic(analysis.SyntheticConfig{Seed: seed, Levels: levels,
			Factors:    []analysis.SyntheticFactor{{Name: "message_size", Levels: []string{"1024", "10240"}}},
			Replicates: 3, Penalty: map[string]float64{"tls": 10, "mtls": 15}})
	}
	c, err := analysis.Compare(gen(1, "plaintext", "tls", "mtls"), gen(2, "plaintext", "tls"), "first.db", "second.db", analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestWriteCompare: compare.csv has CompareHeader and one row per
// headline row of either campaign, the same bytes as WriteCompareCSV
// gives for stdout; compare.html holds the summary with its 83 %
// reference and every row.
func TestWriteCompare(t *testing.T) {
	c := syntheticComparison(t)
	dir := t.TempDir()
	if err := WriteCompare(dir, c); err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile(filepath.Join(dir, "compare.csv"))
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	if err := WriteCompareCSV(&stdout, c); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(file, stdout.Bytes()) {
		t.Error("compare.csv differs from the CSV written to stdout")
	}
	recs, err := csv.NewReader(bytes.NewReader(file)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(recs[0], CompareHeader) || len(recs)-1 != len(c.Rows) {
		t.Fatalf("header %v and %d rows, want %v and %d", recs[0], len(recs)-1, CompareHeader, len(c.Rows))
	}
	col := func(name string) int { return slices.Index(CompareHeader, name) }
	ins := map[string]int{}
	for _, r := range recs[1:] {
		ins[r[col("in")]]++
		switch r[col("in")] {
		case analysis.InBoth:
			if !slices.Contains([]string{"yes", "no", "no interval"}, r[col("replicated")]) || r[col("a_estimate")] == "" || r[col("b_estimate")] == "" {
				t.Errorf("row %v: want a verdict and both estimates", r)
			}
		case analysis.OnlyInA:
			if r[col("treatment")] != "mtls" || r[col("replicated")] != "" || r[col("b_estimate")] != "" {
				t.Errorf("row only in A %v", r)
			}
		default:
			t.Errorf("row %v: in %q", r, r[col("in")])
		}
	}
	if ins[analysis.InBoth] == 0 || ins[analysis.OnlyInA] == 0 {
		t.Errorf("rows by presence %v: want rows in both and rows only in A", ins)
	}
	page, err := os.ReadFile(filepath.Join(dir, "compare.html"))
	if err != nil {
		t.Fatal(err)
	}
	text := html.UnescapeString(string(page))
	for _, want := range []string{c.Summary().String(), "about 83% of the time", "only in first.db", "Cumming and Maillardet 2006", "DerSimonian and Laird"} {
		if !strings.Contains(text, want) {
			t.Errorf("compare.html lacks %q", want)
		}
	}
}

// browserServices are the domains headless Chromium itself calls
// whatever the page (component updates, network time, accounts), even
// with its background networking disabled; the recorder leaves their
// requests out. A page's own fetch of one (a web font from
// fonts.googleapis.com) still shows in its Resource Timing.
var browserServices = []string{"google.com", "googleapis.com", "gvt1.com"}

// browserService says whether host (with or without a port) is in one of
// browserServices.
func browserService(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return slices.ContainsFunc(browserServices, func(d string) bool { return host == d || strings.HasSuffix(host, "."+d) })
}

// requestRecorder is an HTTP proxy that answers nothing and records
// every request it is asked to make (an https one as CONNECT host:port)
// but those to browserServices.
type requestRecorder struct {
	mu   sync.Mutex
	seen []string
	addr string
}

func newRequestRecorder(t *testing.T) *requestRecorder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := &requestRecorder{addr: ln.Addr().String()}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if browserService(r.Host) {
			http.Error(w, "offline", http.StatusBadGateway)
			return
		}
		rec.mu.Lock()
		rec.seen = append(rec.seen, r.Method+" "+r.Host+r.URL.Path)
		rec.mu.Unlock()
		http.Error(w, "offline", http.StatusBadGateway)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return rec
}

func (r *requestRecorder) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seen)
}

// offlineProbe reports, once the page's own script has run, whether it
// ran (the body's data-report), how many resources the page loaded
// (Resource Timing) and how many tables its script made interactive.
const offlineProbe = `<pre id="probe" hidden></pre><script>
window.addEventListener('load', function () {
  document.getElementById('probe').textContent = JSON.stringify({
    ready: document.body.getAttribute('data-report') || '',
    resources: performance.getEntriesByType('resource').map(function (e) { return e.name; }),
    interactive: document.querySelectorAll('table[data-interactive="yes"]').length,
    summary: (document.getElementById('summary') || {textContent: ''}).textContent});
});
</script>`

type probe struct {
	Ready       string   `json:"ready"`
	Resources   []string `json:"resources"`
	Interactive int      `json:"interactive"`
	Summary     string   `json:"summary"`
}

// openThroughRecorder opens page (with offlineProbe added) in headless
// Chromium whose every request, loopback included, goes to rec.
func openThroughRecorder(t *testing.T, rec *requestRecorder, page []byte) probe {
	t.Helper()
	path := filepath.Join(t.TempDir(), "page.html")
	withProbe := bytes.Replace(page, []byte("</body>"), []byte(offlineProbe+"</body>"), 1)
	if err := os.WriteFile(path, withProbe, 0o600); err != nil {
		t.Fatal(err)
	}
	dom := string(chromium(t, "--proxy-server=http://"+rec.addr, "--proxy-bypass-list=<-loopback>", "--dump-dom", "file://"+path))
	const open = `<pre id="probe" hidden="">`
	i, j := strings.Index(dom, open), strings.LastIndex(dom, "</pre>")
	if i < 0 || j < i {
		t.Fatalf("the probe did not run:\n%.3000s", dom)
	}
	var p probe
	if err := json.Unmarshal([]byte(html.UnescapeString(dom[i+len(open):j])), &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCompareHTMLOpensOffline opens compare.html in headless Chromium
// whose every request goes to a recording proxy: the page's script runs
// (its tables become sortable and filterable), it loads no resource and
// the proxy sees no request. A page with one remote image, opened the
// same way, shows the proxy does see what a page fetches.
func TestCompareHTMLOpensOffline(t *testing.T) {
	c := syntheticComparison(t)
	dir := t.TempDir()
	if err := WriteCompare(dir, c); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "compare.html"))
	if err != nil {
		t.Fatal(err)
	}
	rec := newRequestRecorder(t)
	p := openThroughRecorder(t, rec, page)
	if p.Ready != "ready" || p.Interactive < 2 || !strings.Contains(p.Summary, "headline rows in both campaigns replicated") {
		t.Errorf("compare.html offline: %+v; want its script run, its tables interactive and the summary shown", p)
	}
	if len(p.Resources) > 0 {
		t.Errorf("compare.html loaded %v", p.Resources)
	}
	if got := rec.requests(); len(got) > 0 {
		t.Errorf("opening compare.html made requests %v", got)
	}

	control := []byte(`<!DOCTYPE html><html><body data-report="ready"><img src="http://xp-compare.invalid/fetched.png"></body></html>`)
	cp := openThroughRecorder(t, rec, control)
	fetched := func(s string) bool { return strings.Contains(s, "xp-compare.invalid/fetched.png") }
	if got := rec.requests(); !slices.ContainsFunc(got, fetched) || !slices.ContainsFunc(cp.Resources, fetched) {
		t.Errorf("of a page that fetches an image the proxy saw %v and the page listed %v: they would not see compare.html's requests either", got, cp.Resources)
	}
}
