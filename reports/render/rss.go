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
// sampled at every checkpoint) with the least-squares line of its second
// half, and says in the caption whether it is flat: the slope in MiB per
// hour with its 95% interval (stats.Slope) over the whole soak and over
// its second half. The verdict reads the second half: a process's RSS
// climbs while its heap and the runtime's free lists reach their working
// size (the first minutes), and a leak keeps climbing after that. It
// returns "" for a run with fewer than two samples (a run, not a soak).
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
	h := 0                                          // the second half
	for h < len(xs) && xs[h] < xs[len(xs)-1]/2 {
		h++
	}
	late := stats.Slope(xs[h:], ys[h:], DefaultConfidence)
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
	if !math.IsNaN(late.Center) {
		mx, my := mean(xs[h:]), mean(ys[h:])
		x0, x1 := xs[h], xs[len(xs)-1]
		fit, err := plotter.NewLine(plotter.XYs{{X: x0, Y: my + late.Center*(x0-mx)}, {X: x1, Y: my + late.Center*(x1-mx)}})
		if err != nil {
			return "", "", err
		}
		fit.Color, fit.Width, fit.Dashes = paletteColor(1), vg.Points(1), []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(fit)
		p.Legend.Add("least-squares line, second half", fit)
	}
	p.Y.Min = 0
	p.Legend.Top = false
	svg, err := svgOf(p, 7*vg.Inch, 3.5*vg.Inch)
	if err != nil {
		return "", "", err
	}
	caption := fmt.Sprintf("Resident set size of the sidebench process at each of %d checkpoints, from %.0f MiB to %.0f MiB (peak %.0f MiB).", len(ys), ys[0], ys[len(ys)-1], maxOf(ys))
	perHour := func(s stats.Summary) string {
		return fmt.Sprintf("%+.2f MiB/h, 95%% CI [%+.2f, %+.2f]", 60*s.Center, 60*s.Lo, 60*s.Hi)
	}
	switch {
	case math.IsInf(late.Lo, 0) || math.IsInf(late.Hi, 0):
		caption += " Too few checkpoints for a slope."
	default:
		flat := "flat within noise: the interval contains 0"
		if late.Lo > 0 || late.Hi < 0 {
			flat = "not flat: the interval excludes 0"
		}
		caption += fmt.Sprintf(" Least-squares slope over the second half (from minute %.0f): %s, %s; over the whole soak, warm-up included: %s.",
			xs[h], perHour(late), flat, perHour(slope))
	}
	return template.HTML(svg), caption, nil
}

func maxOf(x []float64) float64 {
	m := math.Inf(-1)
	for _, v := range x {
		m = max(m, v)
	}
	return m
}

func mean(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}
