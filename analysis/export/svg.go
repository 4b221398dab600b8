package export

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

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

// forestFamilies orders the forest plot's panels.
var forestFamilies = []string{"Latency", "Send delay", "Throughput", "CPU", "Other"}

// penaltyAxis labels a penalty axis with its unit; penaltyNote says once
// what the axis measures.
func penaltyAxis() string { return "penalty (%)" }

func penaltyNote(res *analysis.Result) string {
	return fmt.Sprintf("Penalty in percent: the geometric mean of the per-set ratios against %s, less one; positive is worse; bars: %g%% intervals; an arrow at a panel's edge is an interval that goes beyond it, its end written beside it.",
		res.Levels[0], res.Options.Confidence*100)
}

// forestFigure draws the pooled mean penalties of scope: one panel per
// metric with its own scale (an interval far wider than the others is
// clipped at the edge with its end written), the panels of a kind of
// metric (latency, send delay, throughput, CPU) under its heading, one row
// per treatment, a dashed line at zero, the marks of the report's tables
// after the labels and explained below. 16 cm wide: an A4 text width.
func forestFigure(res *analysis.Result, scope string) (*figure, error) {
	metrics := metricsWithScope(res, scope)
	if len(metrics) == 0 {
		return nil, nil
	}
	def := map[string]analysis.MetricDef{}
	for _, m := range res.Dataset.Metrics {
		def[m.Name] = m
	}
	ch := &dotChart{axis: penaltyAxis(), note: penaltyNote(res), width: 16 * vg.Centimeter}
	var shown []analysis.Effect
	for _, fam := range forestFamilies {
		section := fam
		for _, m := range metrics {
			if metricFamily(def[m]) != fam {
				continue
			}
			var g dotGroup
			for _, tr := range res.Treatments {
				if e, ok := headline(res, tr, m, scope); ok {
					g.rows = append(g.rows, dotRow{label: tr, marks: marksOf(e), level: levelIndex(res, tr), est: e.Estimate, lo: e.Low, hi: e.High})
					shown = append(shown, e)
				}
			}
			if len(g.rows) == 0 {
				continue
			}
			ch.panels = append(ch.panels, dotPanel{section: section, title: metricName(m), groups: []dotGroup{g}})
			section = ""
		}
	}
	ch.legend = marksLegend(shown)
	b, err := ch.render()
	if err != nil {
		return nil, err
	}
	return &figure{Name: "forest-" + scope + ".svg", SVG: b,
		Caption: fmt.Sprintf("Forest plot: penalty (geometric mean of the per-set ratios) of each level against %s, %s, one panel per metric, each with its own scale; an interval beyond its panel is an arrow with its end written; a marker without a bar has no interval (too few matched sets).", res.Levels[0], scopeText(scope))}, nil
}

// levelIndex is the index of a treatment level in res.Levels (its colour
// and marker).
func levelIndex(res *analysis.Result, level string) int {
	return max(0, slices.Index(res.Levels, level))
}

func sensitivityFigure(res *analysis.Result, tr, scope, metric string) (*figure, error) {
	pn := dotPanel{title: fmt.Sprintf("%s: penalty of %s by factor level", metricName(metric), tr)}
	for _, s := range res.Sensitivity {
		if s.Treatment != tr || s.Scope != scope || s.Metric != metric {
			continue
		}
		h := factorWords(s.Factor)
		if len(pn.groups) == 0 || pn.groups[len(pn.groups)-1].heading != h {
			pn.groups = append(pn.groups, dotGroup{heading: h})
		}
		g := &pn.groups[len(pn.groups)-1]
		g.rows = append(g.rows, dotRow{label: s.Level, level: levelIndex(res, tr), est: s.Mean, lo: s.Low, hi: s.High})
	}
	if len(pn.groups) == 0 {
		return nil, nil
	}
	ch := &dotChart{panels: []dotPanel{pn}, axis: penaltyAxis(), note: penaltyNote(res), width: 16 * vg.Centimeter}
	b, err := ch.render()
	if err != nil {
		return nil, err
	}
	return &figure{Name: fmt.Sprintf("sensitivity-%s-%s.svg", safeName(tr), scope), SVG: b,
		Caption: fmt.Sprintf("Penalty by factor level: %s penalty (%%) of %s against %s, %s.", metricName(metric), tr, res.Levels[0], scopeText(scope))}, nil
}

// kindWords names a latency curve's kind.
func kindWords(kind string) string {
	switch kind {
	case "publish":
		return "Publish"
	case "e2e":
		return "End-to-end"
	}
	return kind
}

// varyingSettings describes a configuration by the factors that vary
// between the campaign's configurations ("message_size=1024, acks=all"),
// or "" when there is one configuration.
func varyingSettings(res *analysis.Result, pair string) string {
	var cell *analysis.Cell
	for i := range res.Cells {
		if res.Cells[i].Pair == pair {
			cell = &res.Cells[i]
		}
	}
	if cell == nil {
		return ""
	}
	var parts []string
	for fi, f := range res.CellFactors {
		for _, c := range res.Cells {
			if fi < len(c.Factors) && fi < len(cell.Factors) && c.Factors[fi] != cell.Factors[fi] {
				parts = append(parts, f+"="+cell.Factors[fi])
				break
			}
		}
	}
	return strings.Join(parts, ", ")
}

// logTicks ticks a log axis: labelled at 1, 2 and 5 times the powers of
// ten over three decades or less, at the powers of ten over more; minor
// ticks at the other multiples.
type logTicks struct{}

func (logTicks) Ticks(min, max float64) []plot.Tick {
	if !(min > 0) || !(max > min) {
		return nil
	}
	wide := math.Log10(max/min) > 3
	var t []plot.Tick
	for e := math.Floor(math.Log10(min)); math.Pow(10, e) <= max; e++ {
		p := math.Pow(10, e)
		for m := 1.0; m < 10; m++ {
			v := m * p
			if v < min*(1-1e-9) || v > max*(1+1e-9) {
				continue
			}
			label := ""
			if m == 1 || (!wide && (m == 2 || m == 5)) {
				label = strconv.FormatFloat(v, 'g', 3, 64)
			}
			t = append(t, plot.Tick{Value: v, Label: label})
		}
	}
	return t
}

// curveFigures draws the latency percentile curves of the first
// MaxCurveFigures configurations, a figure per configuration and kind
// (publish, end-to-end) with a curve per level.
func curveFigures(res *analysis.Result) ([]*figure, error) {
	var out []*figure
	for _, pair := range curvePairs(res) {
		for _, kind := range analysis.CurveKinds {
			var curves []analysis.Curve
			for _, c := range res.Curves {
				if c.Pair == pair && c.Kind == kind && len(c.Points) > 0 {
					curves = append(curves, c)
				}
			}
			if len(curves) == 0 {
				continue
			}
			p, legend, err := curvePlot(res, curves)
			if err != nil {
				return nil, err
			}
			title := fmt.Sprintf("%s latency percentiles by %s", kindWords(kind), res.Dataset.Treatment)
			if v := varyingSettings(res, pair); v != "" {
				title += ": " + v
			}
			b, err := titledPlot(p, title, legend)
			if err != nil {
				return nil, err
			}
			cap := fmt.Sprintf("%s latency percentiles of configuration %s, histograms merged over its healthy replicates, per level; each curve stops at the highest percentile all its runs support (ten samples beyond it).", kindWords(kind), pair)
			out = append(out, &figure{Name: fmt.Sprintf("latency-%s-%s.svg", safeName(pair), kind), SVG: b, Caption: cap})
		}
	}
	return out, nil
}

// curvePairs are the configurations with curves, in the curves' order, at
// most MaxCurveFigures of them.
func curvePairs(res *analysis.Result) []string {
	var pairs []string
	for _, c := range res.Curves {
		if len(pairs) == 0 || pairs[len(pairs)-1] != c.Pair {
			if len(pairs) == MaxCurveFigures {
				break
			}
			pairs = append(pairs, c.Pair)
		}
	}
	return pairs
}

// legendEntry is a line of a figure's legend: a label and its line's
// style.
type legendEntry struct {
	label string
	style draw.LineStyle
}

// curvePlot plots curves against the percentile on a nines axis, latency
// on a log axis (linear when a latency is not positive), a line per curve
// styled by its level; it returns the plot and its legend.
func curvePlot(res *analysis.Result, curves []analysis.Curve) (*plot.Plot, []legendEntry, error) {
	p := sansPlot()
	p.X.Label.Text = ninesAxisLabel
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
		p.Y.Tick.Marker = logTicks{}
	} else {
		p.Y.Label.Text = "latency (ms)"
		p.Y.Tick.Marker = zeroTicks{}
	}
	var legend []legendEntry
	for _, c := range curves {
		xys := make(plotter.XYs, len(c.Points))
		for k, pt := range c.Points {
			xys[k] = plotter.XY{X: -math.Log10(1 - pt.Percentile/100), Y: pt.Ms}
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, nil, err
		}
		li := levelIndex(res, c.Level)
		l.LineStyle = draw.LineStyle{Color: levelColor(li), Dashes: levelDashes(li), Width: vg.Points(1.5)}
		p.Add(l)
		legend = append(legend, legendEntry{fmt.Sprintf("%s (%d runs)", c.Level, c.Runs), l.LineStyle})
	}
	p.X.Min = 0
	return p, legend, nil
}

// titledPlot draws p as SVG (14 × 9 cm) under its title, wrapped to the
// width, with the legend beside it, right of the data.
func titledPlot(p *plot.Plot, title string, legend []legendEntry) ([]byte, error) {
	const width, height = 14 * vg.Centimeter, 9 * vg.Centimeter
	c := newSVG(width, height)
	dc := draw.New(c)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	tsty := textStyle(10, true)
	tsty.YAlign = draw.YTop
	lines := wrapText(tsty, title, width-2*dotPad)
	y := height - dotPad
	for _, l := range lines {
		dc.FillText(tsty, vg.Point{X: dotPad, Y: y}, l)
		y -= tsty.Height("M")
	}
	lsty := textStyle(8, false)
	lsty.YAlign = draw.YCenter
	const thumb = 18
	var legendW vg.Length
	for _, e := range legend {
		legendW = max(legendW, lsty.Width(e.label))
	}
	legendW += thumb + 4 + dotPad
	lx := width - legendW
	ly := y - 8
	for _, e := range legend {
		dc.StrokeLine2(e.style, lx, ly, lx+thumb, ly)
		dc.FillText(lsty, vg.Point{X: lx + thumb + 4, Y: ly}, e.label)
		ly -= 11
	}
	area := draw.Crop(dc, dotPad, -(legendW + 8), dotPad, -(height - y + 6))
	p.BackgroundColor = nil
	p.Draw(area)
	return finishSVG(c)
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
