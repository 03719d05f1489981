package render

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/sidebench/sidebench/reports/stats"
)

// The soak figures: how far the accumulated lifecycles are from the number
// a violation-rate target needs, and the process's memory over time.

// lifecyclesFigure draws, per judged policy of the scenario, the pod
// lifecycles accumulated at each soak checkpoint against the lifecycles
// each rate target needs (RateTarget.Needed); ok is false without at
// least one checkpoint.
func lifecyclesFigure(d RunData) (fig figure, ok bool, err error) {
	if d.State == nil {
		return fig, false, nil
	}
	type series struct {
		idx int
		pts plotter.XYs
	}
	var ss []series
	tmax, ymax, ymin := 0.0, 1.0, math.Inf(1)
	for i, pol := range d.Policies {
		s := series{idx: i}
		for _, pp := range d.State.Progress {
			if pp.Scenario != d.Scenario || pp.Policy != pol || pp.Pods <= 0 {
				continue
			}
			s.pts = append(s.pts, plotter.XY{X: pp.ElapsedSeconds, Y: float64(pp.Pods)})
			tmax = max(tmax, pp.ElapsedSeconds)
			ymax = max(ymax, float64(pp.Pods))
			ymin = min(ymin, float64(pp.Pods))
		}
		if len(s.pts) > 0 {
			ss = append(ss, s)
		}
	}
	if len(ss) == 0 {
		return fig, false, nil
	}
	var targets []RateTarget
	for _, t := range d.RateTargets {
		if t.Needed > 0 {
			targets = append(targets, t)
			ymax = max(ymax, float64(t.Needed))
			ymin = min(ymin, float64(t.Needed))
		}
	}
	div, unit := timeUnit(tmax)
	for _, s := range ss {
		for i := range s.pts {
			s.pts[i].X /= div
			s.pts[i].Y = lg(s.pts[i].Y)
		}
	}
	xmax := max(tmax/div, 1e-9) * 1.05
	p := newPlot("", fmt.Sprintf("elapsed (%s)", unit), "pod lifecycles (log scale)")
	p.Y.Tick.Marker = logAxisTicks(fmtCount)
	var key []keyItem
	for _, s := range ss {
		st := styleOf(s.idx)
		l, err := plotter.NewLine(s.pts)
		if err != nil {
			return fig, false, err
		}
		l.Color, l.Width, l.Dashes = st.color, vg.Points(2), st.dashes
		sc, err := plotter.NewScatter(s.pts)
		if err != nil {
			return fig, false, err
		}
		sc.GlyphStyle = draw.GlyphStyle{Shape: st.glyph, Color: st.color, Radius: vg.Points(3)}
		p.Add(l, sc)
		key = append(key, policyKey(s.idx, d.Policies[s.idx]+" lifecycles", true))
	}
	red := color.RGBA{0xC0, 0x00, 0x00, 0xff}
	var lpts plotter.XYs
	var labels []string
	var notes []string
	for _, t := range targets {
		if err := segment(p, 0, lg(float64(t.Needed)), xmax, lg(float64(t.Needed)), red, vg.Points(1), []vg.Length{vg.Points(5), vg.Points(3)}); err != nil {
			return fig, false, err
		}
		lpts = append(lpts, plotter.XY{X: 0, Y: lg(float64(t.Needed))})
		labels = append(labels, fmt.Sprintf("%s: %s needed (%s)", t.Name, fmtCount(float64(t.Needed)), t.Policy))
		if eta := soakETA(d, t); eta != "" {
			notes = append(notes, eta)
		}
	}
	if err := addLabels(p, lpts, labels, labelStyle(8.5, red), vg.Point{X: vg.Points(3), Y: vg.Points(2)}); err != nil {
		return fig, false, err
	}
	p.X.Min, p.X.Max = 0, xmax
	p.Y.Min, p.Y.Max = lg(decadeBelow(max(ymin/2, 1))), lg(decadeAbove(ymax*1.5))
	svg, err := svgOf(p, 8*vg.Inch, 4*vg.Inch)
	if err != nil {
		return fig, false, err
	}
	fig = figure{ID: "soak-lifecycles", SVG: svg, Key: key,
		Caption: "Pod lifecycles of each judged policy at each checkpoint. A dashed red line is the number of lifecycles a graduation stage's violation-rate target needs " +
			"if violations keep occurring at the rate seen so far (the count at which the Clopper–Pearson bound of the stage falls below its target); the verdict table's \"more trials needed\" is the gap."}
	for _, n := range notes {
		fig.Caption += " " + n
	}
	return fig, true, nil
}

// soakETA extrapolates, at the soak's average rate, when a target's
// lifecycles will be reached ("" if already reached or unknown).
func soakETA(d RunData, t RateTarget) string {
	var last ProgressPoint
	for _, pp := range d.State.Progress {
		if pp.Scenario == d.Scenario && pp.Policy == t.Policy && pp.ElapsedSeconds >= last.ElapsedSeconds {
			last = pp
		}
	}
	if last.Pods <= 0 || last.ElapsedSeconds <= 0 {
		return ""
	}
	if last.Pods >= t.Needed {
		return fmt.Sprintf("%s: %s reached (at ≈%s lifecycles).", t.Policy, t.Name, fmtCount(float64(t.Needed)))
	}
	rate := float64(last.Pods) / last.ElapsedSeconds
	more := float64(t.Needed-last.Pods) / rate
	div, unit := timeUnit(more)
	return fmt.Sprintf("%s: %s needs ≈%.3g %s more at this soak's rate (%.3g lifecycles/s).", t.Policy, t.Name, more/div, unit, rate)
}

// RSSFigure draws the resident set size over a run's elapsed time (soak
// checkpoints) with the least-squares line of the soak's second half, and
// says in the caption whether it is flat: the slope (MiB per hour) with its
// 95% interval (stats.Slope) over the second half, and over the whole
// soak beside it. The verdict reads the second half: the RSS climbs while
// the heap and the runtime's free lists reach their working size, a leak
// keeps climbing after that. ok is false with fewer than one sample.
func rssFigure(d RunData) (fig figure, ok bool, err error) {
	if d.State == nil || len(d.State.RSS) == 0 {
		return fig, false, nil
	}
	tmax, peak := 0.0, 0.0
	for _, r := range d.State.RSS {
		tmax = max(tmax, r.ElapsedSeconds)
		peak = max(peak, float64(r.Bytes))
	}
	div, unit := timeUnit(tmax)
	pts := make(plotter.XYs, 0, len(d.State.RSS))
	var hours, mib []float64
	for _, r := range d.State.RSS {
		pts = append(pts, plotter.XY{X: r.ElapsedSeconds / div, Y: float64(r.Bytes) / (1 << 20)})
		hours, mib = append(hours, r.ElapsedSeconds/3600), append(mib, float64(r.Bytes)/(1<<20))
	}
	p := newPlot("", fmt.Sprintf("elapsed (%s)", unit), "RSS (MiB)")
	l, err := plotter.NewLine(pts)
	if err != nil {
		return fig, false, err
	}
	l.Color, l.Width = paletteColor(0), vg.Points(2)
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return fig, false, err
	}
	sc.GlyphStyle = draw.GlyphStyle{Shape: draw.CircleGlyph{}, Color: paletteColor(0), Radius: vg.Points(2.5)}
	p.Add(l, sc)
	h := 0 // the second half
	for h < len(hours) && hours[h] < hours[len(hours)-1]/2 {
		h++
	}
	whole, late := stats.Slope(hours, mib, DefaultConfidence), stats.Slope(hours[h:], mib[h:], DefaultConfidence)
	if finite(late.Center) {
		var mx, my float64
		for i := h; i < len(hours); i++ {
			mx, my = mx+hours[i], my+mib[i]
		}
		mx, my = mx/float64(len(hours)-h), my/float64(len(hours)-h)
		at := func(x float64) plotter.XY { return plotter.XY{X: x * 3600 / div, Y: my + late.Center*(x-mx)} }
		fit, err := plotter.NewLine(plotter.XYs{at(hours[h]), at(hours[len(hours)-1])})
		if err != nil {
			return fig, false, err
		}
		fit.Color, fit.Width, fit.Dashes = paletteColor(1), vg.Points(1.2), []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(fit)
	}
	p.X.Min, p.X.Max = 0, max(tmax/div, 1e-9)*1.05
	p.Y.Min, p.Y.Max = 0, peak/(1<<20)*1.15
	svg, err := svgOf(p, 8*vg.Inch, 3.2*vg.Inch)
	if err != nil {
		return fig, false, err
	}
	first, last := d.State.RSS[0], d.State.RSS[len(d.State.RSS)-1]
	caption := fmt.Sprintf("VmRSS sampled at each checkpoint: %.0f MiB at the start, %.0f MiB at the end, peak %.0f MiB (%d samples).",
		float64(first.Bytes)/(1<<20), float64(last.Bytes)/(1<<20), peak/(1<<20), len(d.State.RSS))
	slope := func(s stats.Summary) string {
		return fmt.Sprintf("%+.2f MiB/h, 95%% CI [%+.2f, %+.2f]", s.Center, s.Lo, s.Hi)
	}
	if finite(late.Lo) && finite(late.Hi) {
		flat := "flat within noise: the interval contains 0"
		if late.Lo > 0 || late.Hi < 0 {
			flat = "not flat: the interval excludes 0"
		}
		caption += fmt.Sprintf(" Least-squares slope over the second half (dashed, from %.3g %s): %s, %s; over the whole soak, warm-up included: %s.",
			hours[h]*3600/div, unit, slope(late), flat, slope(whole))
	}
	caption += " The runner holds each metric's 1 ms histogram (bounded by the latencies' range), a bounded sample of the figures' data and 16 bytes per committed trial, never the history: growth beyond the warm-up is a leak."
	return figure{ID: "soak-rss", SVG: svg, Caption: caption}, true, nil
}
