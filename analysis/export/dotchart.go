package export

import (
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// dotChart is a forest plot: panels stacked top to bottom, each with its
// own scale and x axis, their zero lines at one x; a panel may open a
// section (a kind of metric) with a heading above it; in a panel, groups of
// rows under a heading line; a row is an estimate with its interval,
// coloured and shaped by its treatment level. An interval reaching far
// beyond the others leaves the panel: it is drawn as an arrow to the
// panel's edge with its end written there, so it cannot flatten the
// rest. The labels sit in a column left of the data, so no text crosses
// the data.
type dotChart struct {
	panels []dotPanel
	// axis labels every panel's x axis, with its unit; note explains the
	// axis once, below the last panel; legend lines explain the marks
	// used in row labels.
	axis, note string
	legend     []string
	width      vg.Length
}

type dotPanel struct {
	// section, when set, is a heading above the panel's title.
	section string
	title   string
	groups  []dotGroup
}

type dotGroup struct {
	heading string
	rows    []dotRow
}

// dotRow is one estimate; lo and hi NaN when it has no interval; marks
// follow the label (legendMarks).
type dotRow struct {
	label       string
	marks       string
	level       int
	est, lo, hi float64
}

// Layout of a dot chart, in points.
const (
	dotPad       = 6
	dotRowH      = 11
	dotTitleH    = 14
	dotSectionH  = 17
	dotIndent    = 10
	dotLabelGap  = 8
	dotRightPad  = 16
	dotTickLen   = 3
	dotPanelGap  = 10
	dotMarkerR   = 2.8
	dotCapHeight = 5
	dotArrow     = 4
)

// dotReach bounds a panel's scale: it holds the estimates and zero, and
// the interval ends within dotReach times the larger of their spread and
// the median interval's width beyond them; an end further out is clipped.
const dotReach = 1.0

var (
	dotSectionStyle = textStyle(10.5, true)
	dotTitleStyle   = textStyle(9, true)
	dotHeadingStyle = textStyle(8.5, true)
	dotLabelStyle   = textStyle(8, false)
	dotTickStyle    = textStyle(8, false)
	dotAxisStyle    = textStyle(8.5, false)
	dotClipStyle    = textStyle(7, false)
)

// render draws the chart as SVG.
func (ch *dotChart) render() ([]byte, error) {
	x0 := dotPad + ch.labelWidth() + dotLabelGap
	x1 := ch.width - dotPad - dotRightPad
	axisLines := wrapText(dotAxisStyle, ch.axis, x1-x0+dotRightPad)
	var noteLines []string
	for _, s := range append([]string{ch.note}, ch.legend...) {
		if s != "" {
			noteLines = append(noteLines, wrapText(dotAxisStyle, s, ch.width-2*dotPad)...)
		}
	}
	scales := ch.scales()
	axisH := dotTickLen + 2 + dotTickStyle.Height("0") + 3 + vg.Length(len(axisLines))*dotAxisStyle.Height("M")
	var height vg.Length = 2 * dotPad
	for i, p := range ch.panels {
		rows := 0
		for _, g := range p.groups {
			if g.heading != "" {
				rows++
			}
			rows += len(g.rows)
		}
		height += dotTitleH + vg.Length(rows)*dotRowH + axisH
		if p.section != "" {
			height += dotSectionH
		}
		if i > 0 {
			height += dotPanelGap
		}
	}
	if len(noteLines) > 0 {
		height += 4 + vg.Length(len(noteLines))*dotAxisStyle.Height("M")
	}

	c := newSVG(ch.width, height)
	dc := draw.New(c)
	top := func(st text.Style) text.Style { st.YAlign = draw.YTop; return st }
	y := height - dotPad
	for i, p := range ch.panels {
		if i > 0 {
			y -= dotPanelGap
		}
		if p.section != "" {
			dc.FillText(top(dotSectionStyle), vg.Point{X: dotPad, Y: y}, p.section)
			y -= dotSectionH
		}
		pl := panelLayout{x0: x0, x1: x1, s: scales[i]}
		dc.FillText(top(dotTitleStyle), vg.Point{X: dotPad, Y: y}, p.title)
		y -= dotTitleH
		rowsTop := y
		y = pl.drawRows(dc, p, y)
		// Zero, dashed, under nothing but above the rules.
		dc.StrokeLine2(draw.LineStyle{Color: color.Gray{Y: 120}, Width: vg.Points(0.6), Dashes: []vg.Length{vg.Points(2), vg.Points(2)}},
			pl.x(0), rowsTop, pl.x(0), y)
		y = pl.drawAxis(dc, y, axisLines)
	}
	if len(noteLines) > 0 {
		y -= 4
		st := top(dotAxisStyle)
		for _, l := range noteLines {
			dc.FillText(st, vg.Point{X: dotPad, Y: y}, l)
			y -= dotAxisStyle.Height("M")
		}
	}
	return finishSVG(c)
}

// labelWidth is the width of the label column: the widest title, heading
// or indented label.
func (ch *dotChart) labelWidth() vg.Length {
	var labelW vg.Length
	for _, p := range ch.panels {
		for _, g := range p.groups {
			labelW = max(labelW, dotHeadingStyle.Width(g.heading))
			for _, r := range g.rows {
				labelW = max(labelW, dotIndent+dotLabelStyle.Width(r.label+r.marks))
			}
		}
	}
	return labelW
}

// scales are the panels' ranges (panelScale), all widened so that zero
// falls at one fraction of the width in every panel (zeroFraction).
func (ch *dotChart) scales() []scale {
	scales := make([]scale, len(ch.panels))
	for i, p := range ch.panels {
		var rows []dotRow
		for _, g := range p.groups {
			rows = append(rows, g.rows...)
		}
		scales[i] = panelScale(rows)
	}
	f := zeroFraction(scales)
	for i, s := range scales {
		scales[i] = s.withZeroAt(f)
	}
	return scales
}

// panelScale is the range of one panel: zero and every estimate, and the
// interval ends up to dotReach times the larger of the estimates' spread
// and the median interval width beyond them, padded by 4%. An interval
// far wider than the others is clipped rather than flatten the panel.
func panelScale(rows []dotRow) scale {
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	lo, hi := 0.0, 0.0
	var widths []float64
	for _, r := range rows {
		if finite(r.est) {
			lo, hi = math.Min(lo, r.est), math.Max(hi, r.est)
		}
		if finite(r.lo) && finite(r.hi) {
			widths = append(widths, r.hi-r.lo)
		}
	}
	reach := hi - lo
	if len(widths) > 0 {
		slices.Sort(widths)
		reach = math.Max(reach, widths[len(widths)/2])
	}
	reach *= dotReach
	minV, maxV := lo, hi
	for _, r := range rows {
		for _, v := range []float64{r.lo, r.hi} {
			if finite(v) && (reach == 0 || (v >= lo-reach && v <= hi+reach)) {
				minV, maxV = math.Min(minV, v), math.Max(maxV, v)
			} else if finite(v) {
				// Clipped: the scale reaches as far as allowed.
				minV, maxV = math.Min(minV, math.Max(v, lo-reach)), math.Max(maxV, math.Min(v, hi+reach))
			}
		}
	}
	if maxV-minV == 0 {
		minV, maxV = -1, 1
	}
	pad := (maxV - minV) * 0.04
	return scale{minV - pad, maxV + pad}
}

// panelLayout places a panel's data: scale s drawn from x0 to x1.
type panelLayout struct {
	x0, x1 vg.Length
	s      scale
}

// x is the position of value v, held to the panel.
func (pl panelLayout) x(v float64) vg.Length {
	v = math.Max(pl.s.min, math.Min(pl.s.max, v))
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
		indent := vg.Length(0)
		if g.heading != "" {
			dc.FillText(left(dotHeadingStyle), vg.Point{X: dotPad, Y: y - dotRowH/2}, g.heading)
			y -= dotRowH
			indent = dotIndent
		}
		for _, r := range g.rows {
			cy := y - dotRowH/2
			dc.FillText(left(dotLabelStyle), vg.Point{X: dotPad + indent, Y: cy}, r.label+r.marks)
			col := levelColor(r.level)
			if !math.IsNaN(r.lo) && !math.IsNaN(r.hi) {
				pl.drawInterval(dc, col, r.lo, r.hi, cy)
			}
			if !math.IsNaN(r.est) {
				dc.DrawGlyphNoClip(draw.GlyphStyle{Color: col, Radius: dotMarkerR, Shape: levelShape(r.level)}, vg.Point{X: pl.x(r.est), Y: cy})
			}
			y -= dotRowH
		}
	}
	return y
}

// drawInterval draws an interval at height cy: a line with a cap at each
// end inside the panel; an end beyond the panel is an arrowhead at the
// edge, its value written beside it, above the line.
func (pl panelLayout) drawInterval(dc draw.Canvas, col color.Color, lo, hi float64, cy vg.Length) {
	ls := draw.LineStyle{Color: col, Width: vg.Points(1)}
	a, b := pl.x(lo), pl.x(hi)
	dc.StrokeLine2(ls, a, cy, b, cy)
	clip := dotClipStyle
	clip.Color = col
	clip.YAlign = draw.YBottom
	step := pl.s.max - pl.s.min
	end := func(v float64, x vg.Length, dir vg.Length) {
		if (dir < 0 && v >= pl.s.min) || (dir > 0 && v <= pl.s.max) {
			dc.StrokeLine2(ls, x, cy-dotCapHeight/2, x, cy+dotCapHeight/2)
			return
		}
		var p vg.Path
		p.Move(vg.Point{X: x + dir*dotArrow/2, Y: cy})
		p.Line(vg.Point{X: x - dir*dotArrow, Y: cy + dotArrow*0.7})
		p.Line(vg.Point{X: x - dir*dotArrow, Y: cy - dotArrow*0.7})
		p.Close()
		dc.SetColor(col)
		dc.Fill(p)
		st := clip
		st.XAlign = draw.XLeft
		if dir > 0 {
			st.XAlign = draw.XRight
		}
		dc.FillText(st, vg.Point{X: x - dir*(dotArrow+1), Y: cy + 1.5}, clippedLabel(v, step))
	}
	end(lo, a, -1)
	end(hi, b, 1)
}

// clippedLabel writes a clipped interval end, "to 2,150": rounded to the
// panel's tick step's decimals, thousands separated, a true minus sign.
func clippedLabel(v, span float64) string {
	dec := 0
	if step := niceStep(span / 6); step < 1 {
		dec = int(math.Ceil(-math.Log10(step) - 1e-9))
	}
	s := strconv.FormatFloat(math.Abs(v), 'f', dec, 64)
	intPart, frac, _ := strings.Cut(s, ".")
	for i := len(intPart) - 3; i > 0; i -= 3 {
		intPart = intPart[:i] + "," + intPart[i:]
	}
	s = intPart
	if frac != "" {
		s += "." + frac
	}
	if v < 0 {
		s = "\u2212" + s
	}
	return "to " + s
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
