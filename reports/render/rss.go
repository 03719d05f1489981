package render

import (
	"fmt"
	"html/template"
	"math"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/sidebench/sidebench/reports/stats"
)

// rssFigure draws a soak's resident set size over time (State.RSS,
// sampled at every checkpoint) with its least-squares line, and says in
// the caption whether it is flat: the slope in MiB per hour with its 95%
// interval (stats.Slope). It returns "" for a run with fewer than two
// samples (a run, not a soak).
func rssFigure(d RunData) (template.HTML, string, error) {
	if d.State == nil || len(d.State.RSS) < 2 {
		return "", "", nil
	}
	const mib = 1 << 20
	var xs, ys []float64
	pts := make(plotter.XYs, 0, len(d.State.RSS))
	for _, p := range d.State.RSS {
		x, y := p.ElapsedSeconds/60, float64(p.Bytes)/mib
		xs, ys = append(xs, x), append(ys, y)
		pts = append(pts, plotter.XY{X: x, Y: y})
	}
	slope := stats.Slope(xs, ys, DefaultConfidence) // MiB per minute
	p := newPlot("Resident set size over the soak", "minutes into the soak", "RSS (MiB)")
	line, err := plotter.NewLine(pts)
	if err != nil {
		return "", "", err
	}
	line.Color, line.Width = paletteColor(0), vg.Points(1.5)
	dots, err := plotter.NewScatter(pts)
	if err != nil {
		return "", "", err
	}
	dots.Color, dots.Radius = paletteColor(0), vg.Points(2)
	p.Add(line, dots)
	p.Legend.Add("RSS at each checkpoint", line)
	if !math.IsNaN(slope.Center) {
		mx, my := mean(xs), mean(ys)
		fit, err := plotter.NewLine(plotter.XYs{{X: xs[0], Y: my + slope.Center*(xs[0]-mx)}, {X: xs[len(xs)-1], Y: my + slope.Center*(xs[len(xs)-1]-mx)}})
		if err != nil {
			return "", "", err
		}
		fit.Color, fit.Width, fit.Dashes = paletteColor(1), vg.Points(1), []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(fit)
		p.Legend.Add("least-squares line", fit)
	}
	p.Y.Min = 0
	p.Legend.Top = false
	svg, err := svgOf(p, 7*vg.Inch, 3.5*vg.Inch)
	if err != nil {
		return "", "", err
	}
	caption := fmt.Sprintf("Resident set size of the sidebench process at each of %d checkpoints, from %.0f MiB to %.0f MiB.", len(ys), ys[0], ys[len(ys)-1])
	switch {
	case math.IsInf(slope.Lo, 0) || math.IsInf(slope.Hi, 0):
		caption += " Too few checkpoints for a slope."
	default:
		perHour := func(v float64) float64 { return 60 * v }
		flat := "flat within noise: the interval contains 0"
		if slope.Lo > 0 || slope.Hi < 0 {
			flat = "not flat: the interval excludes 0"
		}
		caption += fmt.Sprintf(" Least-squares slope %+.2f MiB/h, 95%% CI [%+.2f, %+.2f] (%s).", perHour(slope.Center), perHour(slope.Lo), perHour(slope.Hi), flat)
	}
	return template.HTML(svg), caption, nil
}

func mean(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}
