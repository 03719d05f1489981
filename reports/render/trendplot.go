package render

import (
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// TrendLine is one line of a trend figure: a value per night (NaN where
// the night has none) with its interval (NaN or ±Inf ends are not drawn),
// and the nights flagged as a significant change from the night before.
type TrendLine struct {
	Name      string
	Y, Lo, Hi []float64
	Flag      []bool
}

// TrendSVG draws lines over nights as an inline SVG: x is the night (its
// label under the axis), each point with its interval as an error bar,
// and a flagged night ringed. It is the figure of `sidebench trend`.
func TrendSVG(title, ylabel string, nights []string, lines []TrendLine) (string, error) {
	p := newPlot(title, "night", ylabel)
	p.Legend.Top = true
	ticks := make([]plot.Tick, len(nights))
	for i, n := range nights {
		ticks[i] = plot.Tick{Value: float64(i), Label: n}
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Min, p.X.Max = -0.5, float64(len(nights))-0.5
	drawn := false
	for li, l := range lines {
		c := paletteColor(li)
		var pts plotter.XYs
		var bars plotter.XYs
		var lo, hi []float64
		var flags plotter.XYs
		for i := range l.Y {
			if math.IsNaN(l.Y[i]) || math.IsInf(l.Y[i], 0) {
				continue
			}
			pts = append(pts, plotter.XY{X: float64(i), Y: l.Y[i]})
			if i < len(l.Lo) && i < len(l.Hi) && finite(l.Lo[i]) && finite(l.Hi[i]) {
				bars = append(bars, plotter.XY{X: float64(i), Y: l.Y[i]})
				lo, hi = append(lo, l.Y[i]-l.Lo[i]), append(hi, l.Hi[i]-l.Y[i])
			}
			if i < len(l.Flag) && l.Flag[i] {
				flags = append(flags, plotter.XY{X: float64(i), Y: l.Y[i]})
			}
		}
		if len(pts) == 0 {
			continue
		}
		line, sc, err := plotter.NewLinePoints(pts)
		if err != nil {
			return "", err
		}
		line.Color, line.Width, sc.Color = c, vg.Points(1.5), c
		p.Add(line, sc)
		p.Legend.Add(l.Name, line, sc)
		if len(bars) > 0 {
			eb := errorBars{XYs: bars, lo: lo, hi: hi}
			yb, err := plotter.NewYErrorBars(eb)
			if err != nil {
				return "", err
			}
			yb.Color = c
			p.Add(yb)
		}
		if len(flags) > 0 {
			ring, err := plotter.NewScatter(flags)
			if err != nil {
				return "", err
			}
			ring.GlyphStyle = draw.GlyphStyle{Color: palette[1], Radius: vg.Points(7), Shape: draw.CircleGlyph{}}
			p.Add(ring)
		}
		drawn = true
	}
	if !drawn {
		return "", nil
	}
	return svgOf(p, 7*vg.Inch, 3.5*vg.Inch)
}

// errorBars adapts points with asymmetric intervals to plotter.YErrorer.
type errorBars struct {
	plotter.XYs
	lo, hi []float64
}

func (e errorBars) YError(i int) (float64, float64) { return e.lo[i], e.hi[i] }
