package export

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"html"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/xp-bench/xp/analysis"
)

// chromium runs Debian's headless Chromium with networking off and a
// fresh profile, and returns its stdout.
func chromium(t *testing.T, args ...string) []byte {
	t.Helper()
	if _, err := os.Stat("/usr/bin/chromium"); err != nil {
		t.Fatal("/usr/bin/chromium not found: install Debian's chromium and fonts-liberation (.ci/run does)")
	}
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
		"--force-device-scale-factor=1", "--user-data-dir=" + t.TempDir(), "--virtual-time-budget=5000"}
	cmd := exec.Command("/usr/bin/chromium", append(base, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	return out
}

// box is a rendered element's bounding box in CSS pixels.
type box struct {
	S          string
	X, Y, W, H float64
}

func (b box) right() float64  { return b.X + b.W }
func (b box) bottom() float64 { return b.Y + b.H }

// renderedFigure is one SVG as Chromium laid it out: its canvas and the
// box of every text.
type renderedFigure struct {
	Name   string
	Canvas box
	Texts  []box
	PNG    *image.RGBA `json:"-"`
}

// renderFigures lays every SVG of dir/figures out in one page in headless
// Chromium, each on a white page with overflow visible (so whatever a
// figure draws beyond its canvas shows), reads back the text boxes, and
// takes a PNG screenshot of the page.
func renderFigures(t *testing.T, dir string) []renderedFigure {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "figures", "*.svg"))
	if len(files) == 0 {
		t.Fatal("no figures")
	}
	var page bytes.Buffer
	page.WriteString(`<!DOCTYPE html><html><head><meta charset="utf-8"><style>body{margin:0;background:#fff}.fig{position:absolute;left:60px}svg{overflow:visible;display:block}</style></head><body>`)
	top := 60.0
	width := 0.0
	for i, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		s = s[strings.Index(s, "<svg"):]
		m := regexp.MustCompile(`<svg width="([0-9.]+)pt" height="([0-9.]+)pt"`).FindStringSubmatch(s)
		if m == nil {
			t.Fatalf("%s: no size in points", f)
		}
		w, _ := strconv.ParseFloat(m[1], 64)
		h, _ := strconv.ParseFloat(m[2], 64)
		fmt.Fprintf(&page, `<div class="fig" id="fig%d" data-name="%s" style="top:%.0fpx">%s</div>`, i, filepath.Base(f), top, s)
		top += h*4/3 + 80
		width = math.Max(width, w*4/3+120)
	}
	page.WriteString(`<pre id="out" hidden></pre><script>
var out = [];
document.querySelectorAll('.fig').forEach(function (d) {
  var svg = d.querySelector('svg'), r = svg.getBoundingClientRect();
  var texts = [];
  svg.querySelectorAll('text').forEach(function (e) {
    var b = e.getBoundingClientRect();
    texts.push({s: e.textContent, x: b.left, y: b.top, w: b.width, h: b.height});
  });
  out.push({name: d.getAttribute('data-name'), canvas: {s: '', x: r.left, y: r.top, w: r.width, h: r.height}, texts: texts});
});
document.getElementById('out').textContent = JSON.stringify(out);
</script></body></html>`)
	pagePath := filepath.Join(t.TempDir(), "figures.html")
	if err := os.WriteFile(pagePath, page.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	dom := string(chromium(t, "--dump-dom", "file://"+pagePath))
	i, j := strings.Index(dom, `<pre id="out" hidden="">`), strings.Index(dom, "</pre>")
	if i < 0 || j < i {
		t.Fatalf("the page's script did not run:\n%.2000s", dom)
	}
	var figs []renderedFigure
	if err := json.Unmarshal([]byte(html.UnescapeString(dom[i+len(`<pre id="out" hidden="">`):j])), &figs); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(t.TempDir(), "figures.png")
	chromium(t, "--screenshot="+shot, fmt.Sprintf("--window-size=%.0f,%.0f", width, top), "file://"+pagePath)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	rgba := image.NewRGBA(img.Bounds())
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			rgba.Set(x, y, img.At(x, y))
		}
	}
	for k := range figs {
		figs[k].PNG = rgba
	}
	return figs
}

var numberLabel = regexp.MustCompile(`^[−-]?[0-9]+(\.[0-9]+)?$`)

// unitLabel is an axis label naming its unit in parentheses.
var unitLabel = regexp.MustCompile(`\((%|ms|msg/s|µs/msg|bytes|s)[,)]`)

// axis is a run of numeric tick labels along one edge of a plot.
type axis struct {
	ticks    []box
	vertical bool
}

// findAxes groups numeric labels into axes: those on one line
// (horizontal), and those sharing a right edge but not a left one (a
// vertical axis's right-aligned ticks, not a column of left-aligned row
// labels).
func findAxes(texts []box) []axis {
	var nums []box
	for _, b := range texts {
		if numberLabel.MatchString(b.S) {
			nums = append(nums, b)
		}
	}
	var out []axis
	used := map[int]bool{}
	for i, a := range nums {
		if used[i] {
			continue
		}
		ax := axis{ticks: []box{a}}
		for j := i + 1; j < len(nums); j++ {
			if !used[j] && math.Abs(nums[j].Y+nums[j].H/2-(a.Y+a.H/2)) < 1 {
				ax.ticks = append(ax.ticks, nums[j])
				used[j] = true
			}
		}
		if len(ax.ticks) >= 2 {
			used[i] = true
			out = append(out, ax)
		}
	}
	for i, a := range nums {
		if used[i] {
			continue
		}
		ax := axis{ticks: []box{a}, vertical: true}
		sameLeft := true
		for j := i + 1; j < len(nums); j++ {
			if !used[j] && math.Abs(nums[j].right()-a.right()) < 1 {
				ax.ticks = append(ax.ticks, nums[j])
				sameLeft = sameLeft && math.Abs(nums[j].X-a.X) < 1
				used[j] = true
			}
		}
		if len(ax.ticks) >= 2 && !sameLeft {
			out = append(out, ax)
		}
	}
	return out
}

// axisLabel finds the label of an axis: below a horizontal axis's ticks
// and across them, or left of a vertical axis's ticks, rotated, and along
// them.
func axisLabel(ax axis, texts []box) (box, bool) {
	lo, hi := math.Inf(1), math.Inf(-1)
	edge := math.Inf(-1)
	for _, t := range ax.ticks {
		if ax.vertical {
			lo, hi, edge = math.Min(lo, t.Y), math.Max(hi, t.bottom()), math.Max(edge, -t.X)
		} else {
			lo, hi, edge = math.Min(lo, t.X), math.Max(hi, t.right()), math.Max(edge, t.bottom())
		}
	}
	for _, b := range texts {
		if numberLabel.MatchString(b.S) {
			continue
		}
		if ax.vertical {
			if b.H > b.W && b.right() <= -edge+1 && b.right() > -edge-40 && b.Y < hi && b.bottom() > lo {
				return b, true
			}
		} else if b.Y >= edge-1 && b.Y < edge+30 && b.X < hi && b.right() > lo {
			return b, true
		}
	}
	return box{}, false
}

// overlap is the area two boxes share.
func overlap(a, b box) float64 {
	w := math.Min(a.right(), b.right()) - math.Max(a.X, b.X)
	h := math.Min(a.bottom(), b.bottom()) - math.Max(a.Y, b.Y)
	if w <= 0.5 || h <= 0.5 {
		return 0
	}
	return w * h
}

// checkGeometry applies the rules every figure keeps: text inside the
// canvas, off its edges; no two texts overlapping; every numeric axis
// labelled with its unit; nothing drawn outside the canvas. It returns the
// axes found.
func checkGeometry(t *testing.T, f renderedFigure, all []renderedFigure) []axis {
	t.Helper()
	c := f.Canvas
	for _, b := range f.Texts {
		if b.X < c.X+1 || b.Y < c.Y+1 || b.right() > c.right()-1 || b.bottom() > c.bottom()-1 {
			t.Errorf("%s: %q at %.1f,%.1f %.1fx%.1f leaves or touches the canvas %.1f,%.1f %.1fx%.1f",
				f.Name, b.S, b.X-c.X, b.Y-c.Y, b.W, b.H, 0.0, 0.0, c.W, c.H)
		}
	}
	for i, a := range f.Texts {
		for _, b := range f.Texts[i+1:] {
			if overlap(a, b) > 0 {
				t.Errorf("%s: %q and %q overlap", f.Name, a.S, b.S)
			}
		}
	}
	axes := findAxes(f.Texts)
	for _, ax := range axes {
		l, ok := axisLabel(ax, f.Texts)
		switch {
		case !ok:
			t.Errorf("%s: the axis ticked %v has no label", f.Name, tickTexts(ax))
		case !unitLabel.MatchString(l.S):
			t.Errorf("%s: the axis ticked %v is labelled %q, without its unit", f.Name, tickTexts(ax), l.S)
		}
	}
	// Nothing outside the canvas: the page is white there.
	img := f.PNG
	inside := func(x, y int) bool {
		for _, g := range all {
			if float64(x) >= g.Canvas.X-1 && float64(x) <= g.Canvas.right()+1 && float64(y) >= g.Canvas.Y-1 && float64(y) <= g.Canvas.bottom()+1 {
				return true
			}
		}
		return false
	}
	bad := 0
	var where image.Rectangle
	for y := int(c.Y) - 50; y < int(c.bottom())+50; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			if !image.Pt(x, y).In(img.Bounds()) || inside(x, y) {
				continue
			}
			if p := img.RGBAAt(x, y); p.R < 250 || p.G < 250 || p.B < 250 {
				bad++
				where = where.Union(image.Rect(x, y, x+1, y+1))
			}
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d pixels drawn outside the canvas %.0f,%.0f-%.0f,%.0f, within %v", f.Name, bad, c.X, c.Y, c.right(), c.bottom(), where)
	}
	return axes
}

func tickTexts(ax axis) []string {
	var s []string
	for _, b := range ax.ticks {
		s = append(s, b.S)
	}
	return s
}

// demoDataset is shaped like make demo's campaign: six modes against
// plaintext in one configuration, 3,000 latency samples a run, so p99.9
// is not supported.
func demoDataset() *analysis.Dataset {
	d := analysis.Synthetic(analysis.SyntheticConfig{Seed: 2, Levels: []string{"plaintext", "encrypt", "field_encrypt", "mtls", "proxy", "sasl_ssl", "tls"},
		Factors:    []analysis.SyntheticFactor{{Name: "message_size", Levels: []string{"1024"}}},
		Replicates: 6, Penalty: map[string]float64{"tls": 10, "mtls": 12, "sasl_ssl": 14, "proxy": 30, "encrypt": 60, "field_encrypt": -20},
		Histograms: true, HistogramValues: 3000})
	for i := range d.Runs {
		d.Runs[i].Metrics["published"] = 3000
		d.Runs[i].Metrics["consumed"] = 3000
		d.Runs[i].Metrics["client_cpu_us_per_msg"] = 200 + float64(i%5)*40
	}
	return d
}

// TestFiguresGeometry renders every figure of two campaigns (one shaped
// like the demo, one factorial) in headless Chromium and checks, from the
// rendered page and its PNG, what a reader sees: text inside the canvas and
// off its edges, no two texts overlapping, every axis labelled with its
// unit, nothing drawn outside the canvas; the forest plot's panels each
// with a labelled zero, at one x; each metric on its own heading line,
// without a unit beside the percent axis; latency curves titled by the
// settings that vary, not a hash, and drawn only to supported percentiles.
func TestFiguresGeometry(t *testing.T) {
	cases := []struct {
		name string
		d    *analysis.Dataset
	}{{"demo", demoDataset()}, {"factorial", testDataset()}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			res := analyseInto(t, c.d, dir)
			figs := renderFigures(t, dir)
			for _, f := range figs {
				axes := checkGeometry(t, f, figs)
				var texts []string
				for _, b := range f.Texts {
					texts = append(texts, b.S)
				}
				switch {
				case strings.HasPrefix(f.Name, "forest-"):
					var zeros []box
					for _, ax := range axes {
						if ax.vertical {
							t.Errorf("%s: a numeric vertical axis %v", f.Name, tickTexts(ax))
						}
						i := slices.IndexFunc(ax.ticks, func(b box) bool { return b.S == "0" })
						if i < 0 {
							t.Errorf("%s: an axis without a labelled zero: %v", f.Name, tickTexts(ax))
							continue
						}
						zeros = append(zeros, ax.ticks[i])
					}
					if len(zeros) < 2 {
						t.Errorf("%s: %d panels with a zero, want one per kind of metric", f.Name, len(zeros))
					}
					for _, z := range zeros {
						if math.Abs(z.X+z.W/2-(zeros[0].X+zeros[0].W/2)) > 1 {
							t.Errorf("%s: the panels' zeros are not at one x: %.1f and %.1f", f.Name, z.X+z.W/2, zeros[0].X+zeros[0].W/2)
						}
					}
					for _, w := range []string{"Latency", "CPU", "Publish latency p99", "End-to-end latency p50", "Client CPU"} {
						if !slices.Contains(texts, w) {
							t.Errorf("%s: no text %q on a line of its own", f.Name, w)
						}
					}
					for _, s := range texts {
						if strings.Contains(s, "(ms)") || strings.Contains(s, "(µs/msg)") {
							t.Errorf("%s: %q labels a percent penalty with the metric's unit", f.Name, s)
						}
					}
				case strings.HasPrefix(f.Name, "latency-"):
					var h, v bool
					for _, ax := range axes {
						h, v = h || !ax.vertical, v || ax.vertical
						if !ax.vertical && c.name == "demo" {
							// 3,000 samples a run support p99.6, not p99.9.
							if got := tickTexts(ax); !slices.Contains(got, "99") || slices.Contains(got, "99.9") || slices.Contains(got, "99.99") {
								t.Errorf("%s: percentile ticks %v: want the curve to stop before p99.9, which 3,000 samples do not support", f.Name, got)
							}
						}
					}
					if !h || !v {
						t.Errorf("%s: axes found %v, want a percentile and a latency axis", f.Name, axes)
					}
					title := strings.Join(texts, " ")
					for _, p := range res.Cells {
						if strings.Contains(title, p.Pair) {
							t.Errorf("%s: titled with a configuration hash %s", f.Name, p.Pair)
						}
					}
					if c.name == "factorial" && !(strings.Contains(title, "message_size=") && strings.Contains(title, "acks=")) {
						t.Errorf("%s: title does not name the varying settings: %q", f.Name, texts)
					}
				}
			}
		})
	}
}

// TestFiguresFiles: every SVG is well-formed XML, refers to nothing on
// the network, embeds no font (a figure is tens of kilobytes, not half a
// megabyte) and names its font with the metric-compatible stand-ins.
func TestFiguresFiles(t *testing.T) {
	dir := t.TempDir()
	analyseInto(t, demoDataset(), dir)
	files, _ := filepath.Glob(filepath.Join(dir, "figures", "*.svg"))
	if len(files) == 0 {
		t.Fatal("no figures")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := xml.NewDecoder(bytes.NewReader(b))
		for {
			_, err := dec.Token()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s is not well-formed XML: %v", f, err)
			}
		}
		if len(b) > 100<<10 {
			t.Errorf("%s is %d KiB", filepath.Base(f), len(b)>>10)
		}
		if bytes.Contains(b, []byte("@font-face")) || bytes.Contains(b, []byte("base64")) || regexp.MustCompile(`https?://(?:[^w]|w[^w]|ww[^w])`).Match(b) {
			t.Errorf("%s embeds a font or refers to the network", filepath.Base(f))
		}
		if !bytes.Contains(b, []byte("font-family:"+figureFamily+";")) || bytes.Contains(b, []byte("Liberation Serif")) {
			t.Errorf("%s does not name its font family as %s", filepath.Base(f), figureFamily)
		}
	}
}

// srgbLinear and the Machado, Oliveira and Fernandes (2009) matrices of
// full protanopia, deuteranopia and tritanopia simulate how a colour
// looks with each deficiency; distances are CIE76 in CIELAB.
func srgbLinear(c uint8) float64 {
	v := float64(c) / 255
	if v <= 0.04045 {
		return v / 12.92
	}
	return math.Pow((v+0.055)/1.055, 2.4)
}

var dichromacy = map[string][3][3]float64{
	"protanopia":   {{0.152286, 1.052583, -0.204868}, {0.114503, 0.786281, 0.099216}, {-0.003882, -0.048116, 1.051998}},
	"deuteranopia": {{0.367322, 0.860646, -0.227968}, {0.280085, 0.672501, 0.047413}, {-0.011820, 0.042940, 0.968881}},
	"tritanopia":   {{1.255528, -0.076749, -0.178779}, {-0.078411, 0.930809, 0.147602}, {0.004733, 0.691367, 0.303900}},
	"normal":       {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}},
}

func lab(c color.NRGBA, m [3][3]float64) [3]float64 {
	in := [3]float64{srgbLinear(c.R), srgbLinear(c.G), srgbLinear(c.B)}
	var l [3]float64
	for i := range 3 {
		for j := range 3 {
			l[i] += m[i][j] * in[j]
		}
		l[i] = math.Min(1, math.Max(0, l[i]))
	}
	x := (0.4124*l[0] + 0.3576*l[1] + 0.1805*l[2]) / 0.95047
	y := 0.2126*l[0] + 0.7152*l[1] + 0.0722*l[2]
	z := (0.0193*l[0] + 0.1192*l[1] + 0.9505*l[2]) / 1.08883
	f := func(t float64) float64 {
		if t > 216.0/24389 {
			return math.Cbrt(t)
		}
		return t/(3*36.0/841) + 4.0/29
	}
	return [3]float64{116*f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))}
}

func luminance(c color.NRGBA) float64 {
	return 0.2126*srgbLinear(c.R) + 0.7152*srgbLinear(c.G) + 0.0722*srgbLinear(c.B)
}

// TestPaletteSurvivesGreyAndColourBlindness: every colour of a treatment
// level is at least 3:1 against white (WCAG's bound for graphics, so no
// marker is faint on screen or in grey print), stays at least 15 CIELAB
// units from every other under simulated protanopia, deuteranopia and
// tritanopia, and each level has a filled marker of its own shape and a
// line dash of its own, which tell the levels apart in grey print.
func TestPaletteSurvivesGreyAndColourBlindness(t *testing.T) {
	for i, c := range palette {
		if r := 1.05 / (luminance(c) + 0.05); r < 3 {
			t.Errorf("colour %d %v: contrast %.2f:1 against white, want 3:1", i, c, r)
		}
	}
	for name, m := range dichromacy {
		for i := range palette {
			for j := i + 1; j < len(palette); j++ {
				a, b := lab(palette[i], m), lab(palette[j], m)
				if d := math.Sqrt((a[0]-b[0])*(a[0]-b[0]) + (a[1]-b[1])*(a[1]-b[1]) + (a[2]-b[2])*(a[2]-b[2])); d < 15 {
					t.Errorf("%s: colours %d and %d are %.1f apart, want 15", name, i, j, d)
				}
			}
		}
	}
	if len(markerShapes) < len(palette) || len(lineDashes) < len(palette) {
		t.Errorf("%d shapes and %d dashes for %d colours", len(markerShapes), len(lineDashes), len(palette))
	}
	for i, s := range markerShapes {
		for _, hollow := range []string{"RingGlyph", "SquareGlyph", "TriangleGlyph", "draw.CrossGlyph", "draw.PlusGlyph"} {
			if strings.HasSuffix(fmt.Sprintf("%T", s), hollow) {
				t.Errorf("marker %d is hollow: %T", i, s)
			}
		}
		for j := range i {
			if fmt.Sprintf("%T", markerShapes[j]) == fmt.Sprintf("%T", s) {
				t.Errorf("markers %d and %d share a shape", i, j)
			}
		}
	}
	for i := range lineDashes {
		for j := range i {
			if slices.Equal(lineDashes[i], lineDashes[j]) {
				t.Errorf("dashes %d and %d are the same", i, j)
			}
		}
	}
}

// TestZeroTicks: 4 to 8 labelled ticks at round multiples, zero among
// them whenever it is in range.
func TestZeroTicks(t *testing.T) {
	for _, r := range [][2]float64{{-180, 340}, {-15, 45}, {-1100, 2500}, {-0.3, 0.7}, {0, 1}, {-3, 3}, {-46, 33}, {-2, 290}} {
		var labels []string
		for _, tk := range (zeroTicks{}).Ticks(r[0], r[1]) {
			if tk.Label != "" {
				labels = append(labels, tk.Label)
			}
		}
		if len(labels) < 4 || len(labels) > 8 || !slices.Contains(labels, "0") {
			t.Errorf("range %v: labels %v", r, labels)
		}
	}
}

// svgTexts are the texts of an SVG in drawing order.
func svgTexts(svg []byte) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<text[^>]*>([^<]*)</text>`).FindAllSubmatch(svg, -1) {
		out = append(out, html.UnescapeString(string(m[1])))
	}
	return out
}

// TestForestPanelsOwnScaleAndClipping renders every figure of a
// multi-metric campaign in which one interval (tls, publish p99) is a
// hundred times wider than the others, and checks in the forest plot's
// SVG: a panel per metric, each with its own axis (the largest tick near
// its own data, not the extreme interval's), the extreme interval clipped
// at its panel's edge with both its ends written, every other interval
// whole; the marks after the labels explained below; and every figure
// under 200 KB.
func TestForestPanelsOwnScaleAndClipping(t *testing.T) {
	d := demoDataset()
	res, err := analysis.Analyse(d, analysis.Options{Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range res.Effects {
		if e.Treatment == "tls" && e.Metric == "publish_ms_p99" && e.Scope == analysis.ScopeAll && e.Statistic == analysis.StatHeadline {
			res.Effects[i].Low, res.Effects[i].High = -1234, 2468
			res.Effects[i].OutlierSets = 1
		}
	}
	dir := t.TempDir()
	if err := Write(dir, res); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "figures", "*.svg"))
	for _, f := range files {
		if fi, err := os.Stat(f); err != nil || fi.Size() > 200<<10 {
			t.Errorf("%s: %v bytes, want under 200 KB", filepath.Base(f), fi.Size())
		}
	}
	svg, err := os.ReadFile(filepath.Join(dir, "figures", "forest-all.svg"))
	if err != nil {
		t.Fatal(err)
	}
	texts := svgTexts(svg)
	// Split the texts into panels at the metric titles.
	titles := map[string]bool{}
	for _, m := range metricsWithScope(res, analysis.ScopeAll) {
		titles[metricName(m)] = true
	}
	type panel struct {
		title string
		ticks []float64
		texts []string
	}
	var panels []panel
	for _, s := range texts {
		if titles[s] {
			panels = append(panels, panel{title: s})
			continue
		}
		if len(panels) == 0 {
			continue
		}
		p := &panels[len(panels)-1]
		p.texts = append(p.texts, s)
		if numberLabel.MatchString(s) {
			v, _ := strconv.ParseFloat(strings.Replace(s, "−", "-", 1), 64)
			p.ticks = append(p.ticks, v)
		}
	}
	if len(panels) != len(titles) {
		t.Fatalf("%d panels, want one per metric (%d): %q", len(panels), len(titles), texts)
	}
	ranges := map[string]bool{}
	for _, p := range panels {
		if len(p.ticks) < 2 {
			t.Errorf("panel %s: ticks %v, want an axis of its own", p.title, p.ticks)
			continue
		}
		lo, hi := slices.Min(p.ticks), slices.Max(p.ticks)
		ranges[fmt.Sprint(lo, hi)] = true
		// The panel's data: estimates and intervals but the extreme one.
		var extent float64
		for _, tr := range res.Treatments {
			for _, m := range metricsWithScope(res, analysis.ScopeAll) {
				if metricName(m) != p.title {
					continue
				}
				e, ok := headline(res, tr, m, analysis.ScopeAll)
				if !ok {
					continue
				}
				extent = math.Max(extent, math.Abs(e.Estimate))
				if !(tr == "tls" && m == "publish_ms_p99") && !math.IsNaN(e.Low) {
					extent = math.Max(extent, math.Max(math.Abs(e.Low), math.Abs(e.High)))
				}
			}
		}
		if math.Max(-lo, hi) > 4*extent+10 {
			t.Errorf("panel %s: axis %v..%v, its data reaches %.1f: not its own scale", p.title, lo, hi, extent)
		}
		clipped := slices.Contains(p.texts, "to −1,234") && slices.Contains(p.texts, "to 2,468")
		if (p.title == "Publish latency p99") != clipped {
			t.Errorf("panel %s: clipped ends written %v: %q", p.title, clipped, p.texts)
		}
	}
	if len(ranges) < 3 {
		t.Errorf("the panels share their axes: %v", ranges)
	}
	all := strings.Join(texts, " ")
	if !slices.ContainsFunc(texts, func(s string) bool { return strings.HasPrefix(s, "tls") && strings.HasSuffix(s, "\u00b0") }) || !strings.Contains(all, "\u00b0 a matched set holds a run flagged as an outlier") {
		t.Errorf("the outlier mark and its legend are missing: %q", texts)
	}
}
