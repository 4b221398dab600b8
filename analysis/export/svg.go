package export

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/xp-bench/xp/analysis"
)

// MaxCurveFigures bounds the latency figures drawn (one per cell and kind,
// cells in pair order); latency.csv holds the curves of every cell.
const MaxCurveFigures = 6

// figure is one SVG: its file name under figures/ and a caption.
type figure struct {
	Name, Caption string
	SVG           []byte
}

// renderSVG draws p on a canvas that embeds its fonts, so the file renders
// the same on a machine without them.
func renderSVG(p *plot.Plot, w, h vg.Length) ([]byte, error) {
	c := vgsvg.NewWith(vgsvg.UseWH(w, h), vgsvg.EmbedFonts(true))
	p.Draw(draw.New(c))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// interval is an XYer/XErrorer of estimates with their intervals.
type interval struct {
	xs, ys, lo, hi []float64
}

func (iv *interval) add(x, y, lo, hi float64) {
	if math.IsNaN(lo) || math.IsNaN(hi) {
		lo, hi = x, x
	}
	iv.xs, iv.ys = append(iv.xs, x), append(iv.ys, y)
	iv.lo, iv.hi = append(iv.lo, x-lo), append(iv.hi, hi-x)
}
func (iv *interval) Len() int                        { return len(iv.xs) }
func (iv *interval) XY(i int) (float64, float64)     { return iv.xs[i], iv.ys[i] }
func (iv *interval) XError(i int) (float64, float64) { return iv.lo[i], iv.hi[i] }

func addIntervals(p *plot.Plot, iv *interval, i int, label string) error {
	if iv.Len() == 0 {
		return nil
	}
	bars, err := plotter.NewXErrorBars(iv)
	if err != nil {
		return err
	}
	bars.Color = plotutil.Color(i)
	sc, err := plotter.NewScatter(iv)
	if err != nil {
		return err
	}
	sc.Color = plotutil.Color(i)
	sc.Shape = plotutil.Shape(i)
	p.Add(bars, sc)
	if label != "" {
		p.Legend.Add(label, sc)
	}
	return nil
}

func zeroLine(p *plot.Plot, n int) {
	l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: -0.5}, {X: 0, Y: float64(n) - 0.5}})
	if err == nil {
		l.Color = color.Gray{Y: 160}
		l.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
		p.Add(l)
	}
}

// forestFamilies orders the forest plot's panels.
var forestFamilies = []string{"Latency", "Throughput", "CPU", "Other"}

// forestFigure draws the pooled mean penalties of scope: one panel per
// metric family (latency, throughput, CPU) with its own scale, one row per
// metric and treatment, the treatment named on the axis (no legend over
// the data), a dashed line at zero. 16 cm wide: an A4 text width.
func forestFigure(res *analysis.Result, scope string) (*figure, error) {
	metrics := metricsWithScope(res, scope)
	if len(metrics) == 0 {
		return nil, nil
	}
	def := map[string]analysis.MetricDef{}
	for _, m := range res.Dataset.Metrics {
		def[m.Name] = m
	}
	type panel struct {
		p    *plot.Plot
		rows int
	}
	var panels []panel
	for _, fam := range forestFamilies {
		var names []string
		ivs := make([]*interval, len(res.Treatments))
		for i := range ivs {
			ivs[i] = &interval{}
		}
		type row struct {
			label string
			ti    int
			e     analysis.Effect
		}
		var rows []row
		var groupEnds []int // rows after which a metric's group ends
		for _, m := range metrics {
			if metricFamily(def[m]) != fam {
				continue
			}
			first := true
			for ti, tr := range res.Treatments {
				if e, ok := headline(res, tr, m, scope); ok {
					// The metric is named on its first row; the rest of its
					// rows name the treatment only, like a table.
					label := tr
					if first {
						label = metricWords(m) + "   " + tr
						first = false
					}
					rows = append(rows, row{label, ti, e})
				}
			}
			groupEnds = append(groupEnds, len(rows))
		}
		if len(rows) == 0 {
			continue
		}
		// Top to bottom in metric order.
		names = make([]string, len(rows))
		for i, r := range rows {
			y := float64(len(rows) - 1 - i)
			names[len(rows)-1-i] = r.label
			ivs[r.ti].add(r.e.Estimate, y, r.e.Low, r.e.High)
		}
		p := plot.New()
		p.Title.Text = fam
		p.X.Label.Text = fmt.Sprintf("mean penalty %% against %s (positive is worse), %g%% interval", res.Levels[0], res.Options.Confidence*100)
		// The scale: every interval, and zero, so the line it is compared
		// with is drawn.
		xmin, xmax := 0.0, 0.0
		for _, iv := range ivs {
			for i := range iv.xs {
				xmin, xmax = math.Min(xmin, iv.xs[i]-iv.lo[i]), math.Max(xmax, iv.xs[i]+iv.hi[i])
			}
		}
		pad := (xmax - xmin) * 0.05
		xmin, xmax = xmin-pad, xmax+pad
		zeroLine(p, len(rows))
		for _, g := range groupEnds[:len(groupEnds)-1] {
			// A faint rule between metrics.
			y := float64(len(rows)-g) - 0.5
			if l, err := plotter.NewLine(plotter.XYs{{X: xmin, Y: y}, {X: xmax, Y: y}}); err == nil {
				l.Color = color.Gray{Y: 215}
				p.Add(l)
			}
		}
		for ti := range res.Treatments {
			if err := addIntervals(p, ivs[ti], ti, ""); err != nil {
				return nil, err
			}
		}
		p.NominalY(names...)
		p.X.Min, p.X.Max = xmin, xmax
		panels = append(panels, panel{p, len(rows)})
	}
	const rowH, chrome = 0.5 * vg.Centimeter, 2.6 * vg.Centimeter
	width := 16 * vg.Centimeter
	var height vg.Length
	for _, pn := range panels {
		height += chrome + vg.Length(pn.rows)*rowH
	}
	c := vgsvg.NewWith(vgsvg.UseWH(width, height), vgsvg.EmbedFonts(true))
	dc := draw.New(c)
	top := height
	for _, pn := range panels {
		h := chrome + vg.Length(pn.rows)*rowH
		sub := draw.Canvas{Canvas: dc.Canvas, Rectangle: vg.Rectangle{Min: vg.Point{X: 0, Y: top - h}, Max: vg.Point{X: width, Y: top}}}
		pn.p.Draw(sub)
		top -= h
	}
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, err
	}
	return &figure{Name: "forest-" + scope + ".svg", SVG: b.Bytes(),
		Caption: fmt.Sprintf("Forest plot: mean penalty of each level against %s, %s, one panel per kind of metric; a marker without a bar has no interval (too few matched sets).", res.Levels[0], scopeText(scope))}, nil
}

func sensitivityFigure(res *analysis.Result, tr, scope, metric string) (*figure, error) {
	var rows []analysis.LevelEffect
	for _, s := range res.Sensitivity {
		if s.Treatment == tr && s.Scope == scope && s.Metric == metric {
			rows = append(rows, s)
		}
	}
	if len(rows) == 0 {
		return nil, nil
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: penalty of %s against %s by factor level", metricWords(metric), tr, res.Levels[0])
	p.X.Label.Text = "mean penalty % with interval"
	names := make([]string, len(rows))
	iv := &interval{}
	for i, s := range rows {
		y := float64(len(rows) - 1 - i)
		names[len(rows)-1-i] = s.Factor + "=" + s.Level
		iv.add(s.Mean, y, s.Low, s.High)
	}
	zeroLine(p, len(rows))
	if err := addIntervals(p, iv, 0, ""); err != nil {
		return nil, err
	}
	p.NominalY(names...)
	b, err := renderSVG(p, 16*vg.Centimeter, vg.Length(3+0.6*float64(len(rows)))*vg.Centimeter)
	if err != nil {
		return nil, err
	}
	return &figure{Name: fmt.Sprintf("sensitivity-%s-%s.svg", safeName(tr), scope), SVG: b,
		Caption: fmt.Sprintf("Penalty by factor level: %s of %s against %s, %s.", metric, tr, res.Levels[0], scopeText(scope))}, nil
}

// nines ticks the x axis of percentile curves, x = -log10(1 - p/100).
type nines struct{}

func (nines) Ticks(min, max float64) []plot.Tick {
	labels := []string{"0%", "90%", "99%", "99.9%", "99.99%", "99.999%"}
	var t []plot.Tick
	for i, l := range labels {
		if float64(i) >= min-1e-9 && float64(i) <= max+1e-9 {
			t = append(t, plot.Tick{Value: float64(i), Label: l})
		}
	}
	return t
}

func curveFigures(res *analysis.Result) ([]*figure, error) {
	var out []*figure
	var pairs []string
	for _, c := range res.Curves {
		if len(pairs) == 0 || pairs[len(pairs)-1] != c.Pair {
			if len(pairs) == MaxCurveFigures {
				break
			}
			pairs = append(pairs, c.Pair)
		}
	}
	for _, pair := range pairs {
		for _, kind := range analysis.CurveKinds {
			var curves []analysis.Curve
			for _, c := range res.Curves {
				if c.Pair == pair && c.Kind == kind {
					curves = append(curves, c)
				}
			}
			if len(curves) == 0 {
				continue
			}
			p := plot.New()
			p.Title.Text = fmt.Sprintf("%s latency, configuration %s", kind, pair)
			p.X.Label.Text = "percentile"
			p.Y.Label.Text = "latency (ms, log scale)"
			p.X.Tick.Marker = nines{}
			positive := true
			for _, c := range curves {
				for _, pt := range c.Points {
					if pt.Ms <= 0 {
						positive = false
					}
				}
			}
			if positive {
				p.Y.Scale = plot.LogScale{}
				p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
			} else {
				p.Y.Label.Text = "latency (ms)"
			}
			for i, c := range curves {
				xys := make(plotter.XYs, len(c.Points))
				for k, pt := range c.Points {
					xys[k] = plotter.XY{X: -math.Log10(1 - pt.Percentile/100), Y: pt.Ms}
				}
				l, err := plotter.NewLine(xys)
				if err != nil {
					return nil, err
				}
				l.Color = plotutil.Color(i)
				l.Dashes = plotutil.Dashes(i)
				l.Width = vg.Points(1.5)
				p.Add(l)
				p.Legend.Add(fmt.Sprintf("%s (%d runs)", c.Level, c.Runs), l)
			}
			// Bottom right: latency rises with the percentile, so that
			// corner holds no data and the legend covers none.
			p.Legend.Top = false
			p.Legend.Left = false
			// Room right of the last percentile for its tick label.
			p.X.Max += 0.15 * (p.X.Max - p.X.Min)
			b, err := renderSVG(p, 14*vg.Centimeter, 9*vg.Centimeter)
			if err != nil {
				return nil, err
			}
			out = append(out, &figure{Name: fmt.Sprintf("latency-%s-%s.svg", safeName(pair), kind), SVG: b,
				Caption: fmt.Sprintf("%s latency percentiles of configuration %s, histograms merged over its healthy replicates, per level.", kind, pair)})
		}
	}
	return out, nil
}

// safeName keeps a file name to letters, digits, '-' and '_'.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '_'
	}, s)
}

// figures renders every figure of the result.
func figures(res *analysis.Result) ([]*figure, error) {
	var out []*figure
	for _, scope := range pooledScopes(res) {
		f, err := forestFigure(res, scope)
		if err != nil {
			return nil, err
		}
		if f != nil {
			out = append(out, f)
		}
	}
	hm := headlineMetric(res)
	for _, tr := range res.Treatments {
		for _, scope := range pooledScopes(res) {
			f, err := sensitivityFigure(res, tr, scope, hm)
			if err != nil {
				return nil, err
			}
			if f != nil {
				out = append(out, f)
			}
		}
	}
	cf, err := curveFigures(res)
	if err != nil {
		return nil, err
	}
	return append(out, cf...), nil
}
