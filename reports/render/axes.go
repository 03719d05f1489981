package render

import (
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Axes, ticks and the shared visual vocabulary of the figures: each policy
// keeps one colour, dash pattern and glyph in every figure of a report.

// policyStyle is how one policy is drawn.
type policyStyle struct {
	color  color.RGBA
	dashes []vg.Length
	// width decreases with the policy's index so that a later line drawn
	// over an identical earlier one leaves the earlier one visible around
	// it.
	width vg.Length
	glyph draw.GlyphDrawer
}

var dashSets = [][]vg.Length{
	nil,
	{vg.Points(6), vg.Points(3)},
	{vg.Points(1.5), vg.Points(2.5)},
	{vg.Points(7), vg.Points(2.5), vg.Points(1.5), vg.Points(2.5)},
	{vg.Points(12), vg.Points(4)},
	{vg.Points(3), vg.Points(3)},
}

var glyphSet = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.PyramidGlyph{}, draw.BoxGlyph{}, draw.CrossGlyph{},
	draw.PlusGlyph{}, draw.RingGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{},
}

// glyphNames are the glyphs' names for the HTML keys.
var glyphNames = []string{"●", "▲", "■", "✕", "+", "○", "□", "△"}

func styleOf(i int) policyStyle {
	return policyStyle{
		color:  paletteColor(i),
		dashes: dashSets[i%len(dashSets)],
		width:  vg.Points(max(4-1.5*float64(i), 1.2)),
		glyph:  glyphSet[i%len(glyphSet)],
	}
}

// labelStyle is a text style for in-plot labels.
func labelStyle(size float64, c color.Color) text.Style {
	return text.Style{
		Color:   c,
		Font:    font.Font{Typeface: "Liberation", Variant: "Sans", Size: vg.Points(size)},
		Handler: plot.DefaultTextHandler,
	}
}

// addLabels adds text labels at data points, all in one style.
func addLabels(p *plot.Plot, pts plotter.XYs, labels []string, st text.Style, off vg.Point) error {
	if len(pts) == 0 {
		return nil
	}
	l, err := plotter.NewLabels(plotter.XYLabels{XYs: pts, Labels: labels})
	if err != nil {
		return err
	}
	for i := range l.TextStyle {
		l.TextStyle[i] = st
	}
	l.Offset = off
	p.Add(l)
	return nil
}

// segment adds a straight line between two data points.
func segment(p *plot.Plot, x0, y0, x1, y1 float64, c color.Color, w vg.Length, dashes []vg.Length) error {
	l, err := plotter.NewLine(plotter.XYs{{X: x0, Y: y0}, {X: x1, Y: y1}})
	if err != nil {
		return err
	}
	l.Color, l.Width, l.Dashes = c, w, dashes
	p.Add(l)
	return nil
}

// fmtDurationMs renders a tick value in milliseconds as a short duration:
// "50 ms", "2.5 s", "2 min".
func fmtDurationMs(ms float64) string {
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', 3, 64) }
	switch a := math.Abs(ms); {
	case a == 0:
		return "0"
	case a < 1000:
		return g(ms) + " ms"
	case a < 120_000:
		return g(ms/1000) + " s"
	case a < 2*3600_000:
		return g(ms/60_000) + " min"
	}
	return g(ms/3600_000) + " h"
}

// logTicks returns ticks for a log axis from min to max: labelled at 1, 2
// and 5 times each power of ten (only 1× when the range spans more than
// three decades), unlabelled minor ticks between them, and labelled ends
// when fewer than two labelled ticks fall inside. format renders a value.
func logTicks(format func(float64) string) plot.Ticker {
	return plot.TickerFunc(func(min, max float64) []plot.Tick {
		if !(min > 0) || !(max > min) {
			return []plot.Tick{{Value: min, Label: format(min)}}
		}
		lo, hi := math.Floor(math.Log10(min)), math.Ceil(math.Log10(max))
		majors := []float64{1, 2, 5}
		if hi-lo > 3 {
			majors = []float64{1}
		}
		var ts []plot.Tick
		labelled := 0
		in := func(v float64) bool { return v >= min*(1-1e-9) && v <= max*(1+1e-9) }
		for e := lo; e <= hi; e++ {
			dec := math.Pow(10, e)
			for m := 1.0; m < 10; m++ {
				v := m * dec
				if !in(v) {
					continue
				}
				t := plot.Tick{Value: v}
				for _, mj := range majors {
					if m == mj {
						t.Label = format(v)
						labelled++
					}
				}
				ts = append(ts, t)
			}
		}
		if labelled < 2 {
			ts = append(ts, plot.Tick{Value: min, Label: format(min)}, plot.Tick{Value: max, Label: format(max)})
		}
		return ts
	})
}

// lg maps a value to a log axis. gonum's plot.LogScale mis-pads the
// plot around a log axis's label (it places the label's box at the
// linear midpoint of the range), so log axes are drawn as linear axes of
// log10 values with logAxisTicks labelling them in real values.
func lg(v float64) float64 { return math.Log10(v) }

// logAxisTicks is logTicks for an axis of log10 values.
func logAxisTicks(format func(float64) string) plot.Ticker {
	real := logTicks(format)
	return plot.TickerFunc(func(min, max float64) []plot.Tick {
		ts := real.Ticks(math.Pow(10, min), math.Pow(10, max))
		for i := range ts {
			ts[i].Value = lg(ts[i].Value)
		}
		return ts
	})
}

// linearTicks are gonum's default ticks labelled without trailing zeros
// ("25", not "25.00").
func linearTicks() plot.Ticker {
	return plot.TickerFunc(func(min, max float64) []plot.Tick {
		ts := plot.DefaultTicks{}.Ticks(min, max)
		for i := range ts {
			if ts[i].Label != "" {
				ts[i].Label = strconv.FormatFloat(ts[i].Value, 'g', 6, 64)
			}
		}
		return ts
	})
}

// fmtFraction renders a survival/rate tick: "1", "0.5", "0.01", "1e-04".
func fmtFraction(x float64) string {
	if x >= 1e-3 {
		return strconv.FormatFloat(x, 'g', 3, 64)
	}
	return strconv.FormatFloat(x, 'e', 0, 64)
}

// fmtCount renders a count tick: "500", "2k", "10k", "1.5M".
func fmtCount(x float64) string {
	switch {
	case x >= 1e6:
		return strconv.FormatFloat(x/1e6, 'g', 3, 64) + "M"
	case x >= 1e4:
		return strconv.FormatFloat(x/1e3, 'g', 3, 64) + "k"
	}
	return strconv.FormatFloat(x, 'f', -1, 64)
}

// decadeBelow is the largest power of ten ≤ x.
func decadeBelow(x float64) float64 { return math.Pow(10, math.Floor(math.Log10(x))) }

// decadeAbove is the smallest power of ten ≥ x.
func decadeAbove(x float64) float64 { return math.Pow(10, math.Ceil(math.Log10(x))) }

// timeUnit picks the unit of a time axis spanning maxSeconds.
func timeUnit(maxSeconds float64) (div float64, name string) {
	switch {
	case maxSeconds >= 3*3600:
		return 3600, "h"
	case maxSeconds >= 180:
		return 60, "min"
	}
	return 1, "s"
}

// hexColor renders c as #RRGGBB for the HTML keys.
func hexColor(c color.RGBA) string {
	const hex = "0123456789ABCDEF"
	b := []byte{'#', 0, 0, 0, 0, 0, 0}
	for i, v := range []uint8{c.R, c.G, c.B} {
		b[1+2*i], b[2+2*i] = hex[v>>4], hex[v&15]
	}
	return string(b)
}

func withAlpha(c color.RGBA, a uint8) color.NRGBA {
	return color.NRGBA{R: c.R, G: c.G, B: c.B, A: a}
}
