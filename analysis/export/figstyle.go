package export

import (
	"bytes"
	"image/color"
	"math"
	"strconv"
	"strings"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// palette colours the levels of the treatment, baseline first: the
// Okabe-Ito colours that stay apart for the common colour-vision
// deficiencies (Okabe and Ito 2008), without the light ones, and Paul
// Tol's indigo and wine. Every colour has at least 3:1 contrast against
// white, so nothing is faint on screen or in grey print; in grey print the
// levels are told apart by markerShapes and lineDashes.
var palette = []color.NRGBA{
	{0x00, 0x00, 0x00, 0xff}, // black
	{0x00, 0x72, 0xb2, 0xff}, // blue
	{0xd5, 0x5e, 0x00, 0xff}, // vermillion
	{0x00, 0x9e, 0x73, 0xff}, // bluish green
	{0xcc, 0x79, 0xa7, 0xff}, // reddish purple
	{0x33, 0x22, 0x88, 0xff}, // indigo
	{0x88, 0x22, 0x55, 0xff}, // wine
}

// levelColor is the colour of the treatment level with index i in
// Result.Levels (0 the baseline).
func levelColor(i int) color.Color { return palette[i%len(palette)] }

// markerShapes are filled, so a marker is as visible as its colour; each
// level has its own shape for grey print.
var markerShapes = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}, diamondGlyph{},
	invertedPyramidGlyph{}, crossGlyph{}, plusGlyph{},
}

func levelShape(i int) draw.GlyphDrawer { return markerShapes[i%len(markerShapes)] }

// lineDashes tell the levels' latency curves apart in grey print.
var lineDashes = [][]vg.Length{
	nil,
	{vg.Points(6), vg.Points(2)},
	{vg.Points(2), vg.Points(2)},
	{vg.Points(6), vg.Points(2), vg.Points(1), vg.Points(2)},
	{vg.Points(10), vg.Points(3)},
	{vg.Points(1), vg.Points(1.5)},
	{vg.Points(6), vg.Points(2), vg.Points(1), vg.Points(2), vg.Points(1), vg.Points(2)},
}

func levelDashes(i int) []vg.Length { return lineDashes[i%len(lineDashes)] }

// diamondGlyph is a filled diamond.
type diamondGlyph struct{}

func (diamondGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	r := sty.Radius * 1.2
	var p vg.Path
	p.Move(vg.Point{X: pt.X, Y: pt.Y + r})
	p.Line(vg.Point{X: pt.X + r, Y: pt.Y})
	p.Line(vg.Point{X: pt.X, Y: pt.Y - r})
	p.Line(vg.Point{X: pt.X - r, Y: pt.Y})
	p.Close()
	c.Fill(p)
}

// crossGlyph and plusGlyph are bold: gonum's are hairlines.
type crossGlyph struct{}

func (crossGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	d := sty.Radius
	strokeGlyph(c, sty, vg.Point{X: pt.X - d, Y: pt.Y - d}, vg.Point{X: pt.X + d, Y: pt.Y + d})
	strokeGlyph(c, sty, vg.Point{X: pt.X - d, Y: pt.Y + d}, vg.Point{X: pt.X + d, Y: pt.Y - d})
}

type plusGlyph struct{}

func (plusGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	d := sty.Radius * 1.25
	strokeGlyph(c, sty, vg.Point{X: pt.X - d, Y: pt.Y}, vg.Point{X: pt.X + d, Y: pt.Y})
	strokeGlyph(c, sty, vg.Point{X: pt.X, Y: pt.Y - d}, vg.Point{X: pt.X, Y: pt.Y + d})
}

func strokeGlyph(c *draw.Canvas, sty draw.GlyphStyle, a, b vg.Point) {
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(1.6)})
	var p vg.Path
	p.Move(a)
	p.Line(b)
	c.Stroke(p)
}

// invertedPyramidGlyph is a filled triangle pointing down.
type invertedPyramidGlyph struct{}

func (invertedPyramidGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	r := sty.Radius * 1.15
	var p vg.Path
	p.Move(vg.Point{X: pt.X, Y: pt.Y - r})
	p.Line(vg.Point{X: pt.X - r*0.866, Y: pt.Y + r/2})
	p.Line(vg.Point{X: pt.X + r*0.866, Y: pt.Y + r/2})
	p.Close()
	c.Fill(p)
}

// figureFamily is what the SVG files ask the viewer for. The text is laid
// out with Liberation Sans, whose glyphs have Arial's (and Helvetica's)
// widths, so a machine with any of them draws it where it was measured.
// No font is embedded: a figure is tens of kilobytes, not hundreds.
const figureFamily = `'Liberation Sans',Arial,Helvetica,sans-serif`

// textStyle is a figure's text style: Liberation Sans of the given size.
func textStyle(size vg.Length, bold bool) text.Style {
	f := font.Font{Typeface: "Liberation", Variant: "Sans", Size: size}
	if bold {
		f.Weight = xfont.WeightBold
	}
	return text.Style{Color: color.Black, Font: f, Handler: plot.DefaultTextHandler}
}

// sansPlot is plot.New with every text in Liberation Sans, axes labelled
// in 9 pt and ticked in 8 pt.
func sansPlot() *plot.Plot {
	p := plot.New()
	p.Title.TextStyle.Font = textStyle(10, true).Font
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = textStyle(9, false).Font
		a.Tick.Label.Font = textStyle(8, false).Font
	}
	p.Legend.TextStyle.Font = textStyle(8, false).Font
	return p
}

// newSVG is a canvas of w×h that does not embed fonts.
func newSVG(w, h vg.Length) *vgsvg.Canvas {
	return vgsvg.NewWith(vgsvg.UseWH(w, h), vgsvg.EmbedFonts(false))
}

// finishSVG writes c and names the font family with its metric-compatible
// stand-ins.
func finishSVG(c *vgsvg.Canvas) ([]byte, error) {
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, err
	}
	out := bytes.ReplaceAll(b.Bytes(), []byte("font-family:Liberation Sans;"), []byte("font-family:"+figureFamily+";"))
	return out, nil
}

// zeroTicks ticks an axis at the multiples of a round step (1, 2 or 5
// times a power of ten) giving 4 to 8 labels, so zero is always labelled
// when in range; minor ticks halve the step. Labels carry a true minus
// sign.
type zeroTicks struct{}

func (zeroTicks) Ticks(min, max float64) []plot.Tick {
	step := niceStep((max - min) / 6)
	if !(step > 0) || math.IsInf(step, 0) {
		return nil
	}
	// Fewer than 4 labels: the next smaller round step.
	for math.Floor(max/step)-math.Ceil(min/step)+1 < 4 {
		smaller := niceStep(step * 0.99 / 2)
		if smaller == niceStep(step*0.99) {
			smaller = niceStep(step * 0.4)
		}
		step = smaller
	}
	var t []plot.Tick
	half := step / 2
	for k := math.Ceil(min / half); k*half <= max+1e-9*step; k++ {
		v := k * half
		if math.Abs(v) < 1e-9*step {
			v = 0
		}
		if math.Mod(k, 2) == 0 {
			t = append(t, plot.Tick{Value: v, Label: tickLabel(v, step)})
		} else {
			t = append(t, plot.Tick{Value: v})
		}
	}
	return t
}

// niceStep rounds x up to 1, 2 or 5 times a power of ten.
func niceStep(x float64) float64 {
	if !(x > 0) {
		return 0
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= x*(1-1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// tickLabel formats a tick of an axis stepped by step with the decimals
// the step needs, and a minus sign (U+2212) for negative values.
func tickLabel(v, step float64) string {
	if v == 0 {
		return "0"
	}
	dec := 0
	if step < 1 {
		dec = int(math.Ceil(-math.Log10(step) - 1e-9))
	}
	s := strconv.FormatFloat(v, 'f', dec, 64)
	return strings.Replace(s, "-", "\u2212", 1)
}

// nines ticks the x axis of percentile curves, x = -log10(1 - p/100),
// labelled with the percentile (the axis label gives the unit and says
// the scale): 0, 90, 99, 99.9, ... evenly spaced, and 50, 95, 99.5, ...
// between them.
type nines struct{}

func (nines) Ticks(min, max float64) []plot.Tick {
	var t []plot.Tick
	add := func(p float64) {
		x := -math.Log10(1 - p/100)
		if x >= min-1e-9 && x <= max+1e-9 {
			t = append(t, plot.Tick{Value: x, Label: strconv.FormatFloat(p, 'f', -1, 64)})
		}
	}
	add(0)
	add(50)
	for k := 1; k <= 5; k++ {
		tail := math.Pow(10, -float64(k)) * 100
		add(100 - tail)
		add(100 - tail/2)
	}
	return t
}

// ninesAxisLabel says the percentile axis's unit and scale.
const ninesAxisLabel = "percentile (%), nines scale: 90, 99, 99.9 evenly spaced"

// wrapText breaks s at spaces into lines no wider than w in sty.
func wrapText(sty text.Style, s string, w vg.Length) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		try := word
		if line != "" {
			try = line + " " + word
		}
		if line != "" && sty.Width(try) > w {
			lines = append(lines, line)
			line = word
			continue
		}
		line = try
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
