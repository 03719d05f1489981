package render

import (
	"fmt"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/sidebench/sidebench/reports/stats"
)

// The latency figures: one per metric that has samples (pod_startup, the
// sidecar gate, deletion → exited), drawn as survival curves (CCDF) on
// log–log axes so that the tail a p99 lives in gets as much room as the
// median. Each policy keeps its colour, dash and glyph; p50/p90/p99 are
// marked with their confidence intervals, criteria on the metric are
// drawn, and a DKW band shows how far the curve itself can be trusted.

// latencyFigureMetrics are the metrics drawn, in order.
var latencyFigureMetrics = []string{"pod_startup", "sidecar_gate", "deletion_to_exited"}

// maxCCDFPoints caps the steps drawn per curve: the last maxTailPoints
// ranks are always kept (the tail), the rest are thinned evenly.
const (
	maxCCDFPoints = 1500
	maxTailPoints = 500
)

// dkwEpsilon is the half-width of the Dvoretzky–Kiefer–Wolfowitz band
// (Massart's constant): with probability ≥ confidence the true CDF lies
// within ±ε of the empirical one everywhere.
func dkwEpsilon(n int, confidence float64) float64 {
	return math.Sqrt(math.Log(2/(1-confidence)) / (2 * float64(n)))
}

type latencySeries struct {
	policy string
	idx    int // the policy's index: its style
	lat    Latency
	// sorted is the distribution (1 ms resolution) in ascending order:
	// sorted.At(i) is the (i+1)-th smallest latency, without ever
	// materialising the samples (a soak has millions).
	sorted    *stats.Hist
	identical string // an earlier policy with the same samples
}

// latencySeriesOf returns the policies' distributions of metric.
func latencySeriesOf(d RunData, metric string) (out []latencySeries) {
	for i, pol := range d.Policies {
		for _, l := range d.Latencies {
			if l.Policy != pol || l.Metric != metric || l.Ms.N() == 0 {
				continue
			}
			ls := latencySeries{policy: pol, idx: i, lat: l, sorted: l.Ms}
			for _, prev := range out {
				if prev.sorted.Equal(l.Ms) {
					ls.identical = prev.policy
					break
				}
			}
			out = append(out, ls)
		}
	}
	return out
}

// ccdfIndices are the ranks drawn of a sorted sample of n.
func ccdfIndices(n int) []int {
	idx := make([]int, 0, min(n, maxCCDFPoints+maxTailPoints))
	if n <= maxCCDFPoints+maxTailPoints {
		for i := range n {
			idx = append(idx, i)
		}
		return idx
	}
	head := n - maxTailPoints
	step := (head + maxCCDFPoints - 1) / maxCCDFPoints
	for i := 0; i < head; i += step {
		idx = append(idx, i)
	}
	for i := head; i < n; i++ {
		idx = append(idx, i)
	}
	return idx
}

// latencyFigure draws metric's survival curves; ok is false when no policy
// has samples of it.
func latencyFigure(d RunData, metric string) (fig figure, ok bool, err error) {
	series := latencySeriesOf(d, metric)
	if len(series) == 0 {
		return fig, false, nil
	}
	xmin, xmax := math.Inf(1), math.Inf(-1)
	nmax := 0
	for _, s := range series {
		for v := range s.sorted.Buckets() {
			if v > 0 {
				xmin = min(xmin, float64(v))
				break
			}
		}
		n := s.sorted.N()
		xmax = max(xmax, s.sorted.At(n-1))
		nmax = max(nmax, n)
	}
	if math.IsInf(xmin, 1) { // every sample is 0
		xmin, xmax = 1, 10
	}
	var limits []LatencyLimit
	for _, l := range d.LatencyLimits {
		if l.Metric == metric && l.Ms > 0 {
			limits = append(limits, l)
			xmax = max(xmax, l.Ms)
			xmin = min(xmin, l.Ms)
		}
	}
	// Pad by a fifth of a decade each side; a degenerate range gets a
	// decade around it.
	lo, hi := xmin/1.6, xmax*1.6
	if xmax/xmin < 1.5 {
		lo, hi = xmin/3, xmax*3
	}
	floor := lo // latencies of 0 are drawn at the left edge
	raised := 0
	ymin := min(decadeBelow(0.5/float64(nmax)), 1e-2/2)
	ymin = decadeBelow(ymin)

	p := newPlot("", metric+" (log scale)", "fraction of pods ≥ x (log scale)")
	p.X.Tick.Marker = logAxisTicks(fmtDurationMs)
	p.Y.Tick.Marker = survivalTicks(ymin)
	grey := color.RGBA{0x90, 0x90, 0x90, 0xff}

	// Quantile guides: the heights p50, p90 and p99 sit at.
	for _, q := range []float64{0.5, 0.9, 0.99} {
		if y := 1 - q; y >= ymin {
			if err := segment(p, lg(lo), lg(y), lg(hi), lg(y), grey, vg.Points(0.6), []vg.Length{vg.Points(1), vg.Points(3)}); err != nil {
				return fig, false, err
			}
		}
	}
	eps := dkwEpsilon(nmax, DefaultConfidence)
	var notes []string
	var key []keyItem
	for _, s := range series {
		st := styleOf(s.idx)
		n := s.sorted.N()
		eps = dkwEpsilon(n, DefaultConfidence)
		x := func(v float64) float64 { return lg(max(v, floor)) }
		raised += s.sorted.CountLE(math.Nextafter(floor, math.Inf(-1)))
		idx := ccdfIndices(n)
		// The curve: S(x) = P(X ≥ x) steps down by 1/n at each sample;
		// drawn from (x_(1), 1) to (x_(n), 1/n).
		var curve, upper, lower plotter.XYs
		for j, i := range idx {
			y := float64(n-i) / float64(n)
			curve = append(curve, plotter.XY{X: x(s.sorted.At(i)), Y: lg(y)})
			next := s.sorted.At(n - 1)
			if j+1 < len(idx) {
				next = s.sorted.At(idx[j+1])
			}
			ya := float64(n-i-1) / float64(n) // the level right of x_(i)
			if i == n-1 {
				ya = y
			}
			upper = append(upper, plotter.XY{X: x(s.sorted.At(i)), Y: lg(min(1, ya+eps))}, plotter.XY{X: x(next), Y: lg(min(1, ya+eps))})
			lower = append(lower, plotter.XY{X: x(s.sorted.At(i)), Y: lg(max(ymin, ya-eps))}, plotter.XY{X: x(next), Y: lg(max(ymin, ya-eps))})
		}
		if s.identical == "" { // an identical sample's band is already drawn
			band := append(slices.Clone(upper), reversed(lower)...)
			poly, err := plotter.NewPolygon(band)
			if err != nil {
				return fig, false, err
			}
			poly.Color = withAlpha(st.color, 0x16)
			poly.LineStyle.Width = 0
			p.Add(poly)
		}
		line, err := plotter.NewLine(curve)
		if err != nil {
			return fig, false, err
		}
		line.StepStyle = plotter.PreStep
		line.Color, line.Width, line.Dashes = st.color, st.width, st.dashes
		p.Add(line)
		// p50/p90/p99 with their order-statistic CIs (the tables'
		// numbers: Latency.P50/P90/P99).
		var marks plotter.XYs
		for _, q := range []struct {
			s stats.Summary
			p float64
		}{{s.lat.P50, 0.5}, {s.lat.P90, 0.9}, {s.lat.P99, 0.99}} {
			y := 1 - q.p
			if q.s.N == 0 || !finite(q.s.Center) || y < ymin {
				continue
			}
			marks = append(marks, plotter.XY{X: x(q.s.Center), Y: lg(y)})
			// The interval is drawn within the axis: an unbounded end at
			// its edge, and latencies of 0 at the left edge, as the curve
			// draws them (an interval of [0, 0], eight samples of 0, was
			// log10(0) and failed the whole report).
			clo, chi := q.s.Lo, q.s.Hi
			if !finite(clo) {
				clo = floor
			}
			if !finite(chi) || chi > hi {
				chi = hi
			}
			if err := segment(p, x(clo), lg(y), x(chi), lg(y), st.color, vg.Points(1.2), nil); err != nil {
				return fig, false, err
			}
		}
		sc, err := plotter.NewScatter(marks)
		if err != nil {
			return fig, false, err
		}
		sc.GlyphStyle = draw.GlyphStyle{Shape: st.glyph, Color: st.color, Radius: vg.Points(4)}
		p.Add(sc)
		name := fmt.Sprintf("%s (n=%d)", s.policy, n)
		if s.identical != "" {
			name += ", identical to " + s.identical
			notes = append(notes, fmt.Sprintf("The samples of %s are identical to those of %s: its line is drawn thinner, on top", s.policy, s.identical))
		}
		key = append(key, policyKey(s.idx, name, true))
	}
	// Criteria: a vertical line at the limit, and the point the curve
	// must pass below (limit, 1 − q).
	red := color.RGBA{0xC0, 0x00, 0x00, 0xff}
	var lpts plotter.XYs
	var llabels []string
	for _, l := range limits {
		if err := segment(p, lg(l.Ms), lg(ymin), lg(l.Ms), 0, red, vg.Points(1.3), []vg.Length{vg.Points(5), vg.Points(3)}); err != nil {
			return fig, false, err
		}
		lpts = append(lpts, plotter.XY{X: lg(l.Ms), Y: 0})
		llabels = append(llabels, fmt.Sprintf("%s: p%g ≤ %s", l.Label, 100*l.Quantile, fmtDurationMs(l.Ms)))
		if y := 1 - l.Quantile; y >= ymin {
			sc, err := plotter.NewScatter(plotter.XYs{{X: lg(l.Ms), Y: lg(y)}})
			if err != nil {
				return fig, false, err
			}
			sc.GlyphStyle = draw.GlyphStyle{Shape: draw.CrossGlyph{}, Color: red, Radius: vg.Points(5)}
			p.Add(sc)
		}
	}
	if err := addLabels(p, lpts, llabels, labelStyle(8.5, red), vg.Point{X: vg.Points(3), Y: -vg.Points(10)}); err != nil {
		return fig, false, err
	}
	p.X.Min, p.X.Max = lg(lo), lg(hi)
	p.Y.Min, p.Y.Max = lg(ymin), 0
	svg, err := svgOf(p, 8*vg.Inch, 4.6*vg.Inch)
	if err != nil {
		return fig, false, err
	}
	fig = figure{ID: "latency-" + metric, SVG: svg, Key: key,
		Caption: fmt.Sprintf("%s per policy as a survival curve: the height at x is the fraction of pods that took at least x, on log–log axes so the p99 tail is as legible as the median. "+
			"Markers are p50, p90 and p99 (nearest rank, the tables' values) with their 95%% confidence intervals as horizontal bars; "+
			"the shaded band is the 95%% DKW band (±%.3g at n=%d). Faulted pods are excluded.", metric, eps, nmax)}
	if len(limits) > 0 {
		fig.Caption += " The red dashed line is the criterion: the curve must pass below the ✕."
	}
	if raised > 0 {
		fig.Caption += fmt.Sprintf(" %d latencies of 0 are drawn at the left edge (%s).", raised, fmtDurationMs(floor))
	}
	for _, n := range notes {
		fig.Caption += " " + n + "."
	}
	return fig, true, nil
}

// survivalTicks labels the survival axis at the heights of p50, p90, p99
// (and p99.9) and at the other powers of ten.
func survivalTicks(ymin float64) plot.Ticker {
	return plot.TickerFunc(func(min, max float64) []plot.Tick {
		var ts []plot.Tick
		for y := 1.0; y >= ymin*(1-1e-9); y /= 10 {
			y := y
			l := fmtFraction(y)
			switch y {
			case 0.1:
				l += " (p90)"
			case 0.01:
				l += " (p99)"
			case 0.001:
				l += " (p99.9)"
			}
			ts = append(ts, plot.Tick{Value: lg(y), Label: l})
			for m := 2.0; m < 10; m++ {
				if v := y / 10 * m; v >= ymin {
					t := plot.Tick{Value: lg(v)}
					if m == 5 && y == 1 {
						t.Label = "0.5 (p50)"
					}
					ts = append(ts, t)
				}
			}
		}
		return ts
	})
}

func reversed(xs plotter.XYs) plotter.XYs {
	out := slices.Clone(xs)
	slices.Reverse(out)
	return out
}
