package export

import (
	"image/color"
	"math"

	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// dotChart is a forest plot: panels stacked top to bottom, each with its
// own scale and x axis, their zero lines at one x; in a panel, groups of
// rows under a heading line; a row is an estimate with its interval,
// coloured and shaped by its treatment level. The labels sit in a column
// left of the data, so no text crosses the data.
type dotChart struct {
	panels []dotPanel
	// axis labels every panel's x axis, with its unit.
	axis  string
	width vg.Length
}

type dotPanel struct {
	title  string
	groups []dotGroup
}

type dotGroup struct {
	heading string
	rows    []dotRow
}

// dotRow is one estimate; lo and hi NaN when it has no interval.
type dotRow struct {
	label       string
	level       int
	est, lo, hi float64
}

// Layout of a dot chart, in points.
const (
	dotPad       = 6
	dotRowH      = 11
	dotTitleH    = 17
	dotIndent    = 10
	dotLabelGap  = 8
	dotRightPad  = 16
	dotTickLen   = 3
	dotPanelGap  = 14
	dotMarkerR   = 2.8
	dotCapHeight = 5
)

var (
	dotTitleStyle   = textStyle(10.5, true)
	dotHeadingStyle = textStyle(8.5, true)
	dotLabelStyle   = textStyle(8, false)
	dotTickStyle    = textStyle(8, false)
	dotAxisStyle    = textStyle(8.5, false)
)

// render draws the chart as SVG.
func (ch *dotChart) render() ([]byte, error) {
	x0 := dotPad + ch.labelWidth() + dotLabelGap
	x1 := ch.width - dotPad - dotRightPad
	axisLines := wrapText(dotAxisStyle, ch.axis, x1-x0+dotRightPad)
	scales := ch.scales()
	axisH := dotTickLen + 2 + dotTickStyle.Height("0") + 3 + vg.Length(len(axisLines))*dotAxisStyle.Height("M")
	var height vg.Length = 2 * dotPad
	for i, p := range ch.panels {
		rows := 0
		for _, g := range p.groups {
			rows += 1 + len(g.rows)
		}
		height += dotTitleH + vg.Length(rows)*dotRowH + axisH
		if i > 0 {
			height += dotPanelGap
		}
	}

	c := newSVG(ch.width, height)
	dc := draw.New(c)
	y := height - dotPad
	for i, p := range ch.panels {
		if i > 0 {
			y -= dotPanelGap
		}
		pl := panelLayout{x0: x0, x1: x1, s: scales[i]}
		dc.FillText(func() text.Style { st := dotTitleStyle; st.YAlign = draw.YTop; return st }(), vg.Point{X: dotPad, Y: y}, p.title)
		y -= dotTitleH
		top := y
		y = pl.drawRows(dc, p, y)
		// Zero, dashed, under nothing but above the rules.
		dc.StrokeLine2(draw.LineStyle{Color: color.Gray{Y: 120}, Width: vg.Points(0.6), Dashes: []vg.Length{vg.Points(2), vg.Points(2)}},
			pl.x(0), top, pl.x(0), y)
		y = pl.drawAxis(dc, y, axisLines)
	}
	return finishSVG(c)
}

// labelWidth is the width of the label column: the widest heading or
// indented label.
func (ch *dotChart) labelWidth() vg.Length {
	var labelW vg.Length
	for _, p := range ch.panels {
		for _, g := range p.groups {
			labelW = max(labelW, dotHeadingStyle.Width(g.heading))
			for _, r := range g.rows {
				labelW = max(labelW, dotIndent+dotLabelStyle.Width(r.label))
			}
		}
	}
	return labelW
}

// scales are the panels' ranges: each holds its intervals and zero, then
// all are widened so that zero falls at one fraction of the width in
// every panel (zeroFraction).
func (ch *dotChart) scales() []scale {
	scales := make([]scale, len(ch.panels))
	for i, p := range ch.panels {
		lo, hi := 0.0, 0.0
		for _, g := range p.groups {
			for _, r := range g.rows {
				for _, v := range []float64{r.est, r.lo, r.hi} {
					if !math.IsNaN(v) && !math.IsInf(v, 0) {
						lo, hi = math.Min(lo, v), math.Max(hi, v)
					}
				}
			}
		}
		if hi-lo == 0 {
			lo, hi = -1, 1
		}
		pad := (hi - lo) * 0.04
		scales[i] = scale{lo - pad, hi + pad}
	}
	f := zeroFraction(scales)
	for i, s := range scales {
		scales[i] = s.withZeroAt(f)
	}
	return scales
}

// panelLayout places a panel's data: scale s drawn from x0 to x1.
type panelLayout struct {
	x0, x1 vg.Length
	s      scale
}

// x is the position of value v.
func (pl panelLayout) x(v float64) vg.Length {
	return pl.x0 + vg.Length((v-pl.s.min)/(pl.s.max-pl.s.min))*(pl.x1-pl.x0)
}

// drawRows draws a panel's groups from y down, a rule between groups: the
// heading, then each row's label, interval and estimate. It returns the y
// below the last row.
func (pl panelLayout) drawRows(dc draw.Canvas, p dotPanel, y vg.Length) vg.Length {
	rule := draw.LineStyle{Color: color.Gray{Y: 215}, Width: vg.Points(0.5)}
	left := func(sty text.Style) text.Style { sty.XAlign, sty.YAlign = draw.XLeft, draw.YCenter; return sty }
	for gi, g := range p.groups {
		if gi > 0 {
			dc.StrokeLine2(rule, dotPad, y, pl.x1, y)
		}
		dc.FillText(left(dotHeadingStyle), vg.Point{X: dotPad, Y: y - dotRowH/2}, g.heading)
		y -= dotRowH
		for _, r := range g.rows {
			cy := y - dotRowH/2
			dc.FillText(left(dotLabelStyle), vg.Point{X: dotPad + dotIndent, Y: cy}, r.label)
			col := levelColor(r.level)
			if !math.IsNaN(r.lo) && !math.IsNaN(r.hi) {
				ls := draw.LineStyle{Color: col, Width: vg.Points(1)}
				dc.StrokeLine2(ls, pl.x(r.lo), cy, pl.x(r.hi), cy)
				dc.StrokeLine2(ls, pl.x(r.lo), cy-dotCapHeight/2, pl.x(r.lo), cy+dotCapHeight/2)
				dc.StrokeLine2(ls, pl.x(r.hi), cy-dotCapHeight/2, pl.x(r.hi), cy+dotCapHeight/2)
			}
			if !math.IsNaN(r.est) {
				dc.DrawGlyphNoClip(draw.GlyphStyle{Color: col, Radius: dotMarkerR, Shape: levelShape(r.level)}, vg.Point{X: pl.x(r.est), Y: cy})
			}
			y -= dotRowH
		}
	}
	return y
}

// drawAxis draws a panel's x axis at y: a line, ticks, tick labels, and
// the axis label's lines. It returns the y below it.
func (pl panelLayout) drawAxis(dc draw.Canvas, y vg.Length, axisLines []string) vg.Length {
	axis := draw.LineStyle{Color: color.Black, Width: vg.Points(0.6)}
	dc.StrokeLine2(axis, pl.x0, y, pl.x1, y)
	tickSty := dotTickStyle
	tickSty.XAlign, tickSty.YAlign = draw.XCenter, draw.YTop
	for _, t := range (zeroTicks{}).Ticks(pl.s.min, pl.s.max) {
		x := pl.x(t.Value)
		if t.IsMinor() {
			dc.StrokeLine2(axis, x, y, x, y-dotTickLen/2)
			continue
		}
		dc.StrokeLine2(axis, x, y, x, y-dotTickLen)
		dc.FillText(tickSty, vg.Point{X: x, Y: y - dotTickLen - 2}, t.Label)
	}
	y -= dotTickLen + 2 + dotTickStyle.Height("0") + 3
	axSty := dotAxisStyle
	axSty.XAlign, axSty.YAlign = draw.XCenter, draw.YTop
	for _, l := range axisLines {
		dc.FillText(axSty, vg.Point{X: (pl.x0 + pl.x1 + dotRightPad) / 2, Y: y}, l)
		y -= dotAxisStyle.Height("M")
	}
	return y
}

// scale is a panel's range of values.
type scale struct{ min, max float64 }

// withZeroAt widens s so that zero lies at fraction f of it.
func (s scale) withZeroAt(f float64) scale {
	span := math.Max(s.max/(1-f), -s.min/f)
	return scale{-f * span, (1 - f) * span}
}

// zeroFraction is where zero sits in every panel: the fraction of the
// width that wastes least of the worst-served panel (each panel's data
// over its widened range, the smallest of them as large as it can be),
// from a grid of hundredths, so the output does not depend on float
// noise. One panel keeps its own range.
func zeroFraction(scales []scale) float64 {
	if len(scales) == 1 {
		s := scales[0]
		return -s.min / (s.max - s.min)
	}
	best, bestF := -1.0, 0.5
	for k := 1; k < 100; k++ {
		f := float64(k) / 100
		worst := math.Inf(1)
		for _, s := range scales {
			w := s.withZeroAt(f)
			worst = math.Min(worst, (s.max-s.min)/(w.max-w.min))
		}
		if worst > best+1e-12 {
			best, bestF = worst, f
		}
	}
	return bestF
}
