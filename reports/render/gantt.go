package render

import (
	"fmt"
	"image/color"
	"slices"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// ganttLabel is a text label above a Gantt chart's rows, at an instant.
type ganttLabel struct {
	t     int64
	text  string
	color color.RGBA
}

// labelSpan is where a label's text lies on the x axis.
type labelSpan struct{ from, to float64 }

// labelRows assigns labels to rows above the chart so that none overlaps
// another in its row: a label goes to the first row whose labels all end
// before it starts or start after it ends.
func labelRows(spans []labelSpan) []int {
	rows := make([]int, len(spans))
	var taken [][]labelSpan
	for i, sp := range spans {
		r := 0
		for ; r < len(taken); r++ {
			free := true
			for _, o := range taken[r] {
				if sp.from < o.to && o.from < sp.to {
					free = false
					break
				}
			}
			if free {
				break
			}
		}
		if r == len(taken) {
			taken = append(taken, nil)
		}
		taken[r] = append(taken[r], sp)
		rows[i] = r
	}
	return rows
}

// GanttSVG draws g as an inline SVG (x: seconds since pod creation; one
// row per container, first container on top). Fault windows are shaded
// and labelled with the fault and its instance, node events and the
// deletion are labelled lines, and each finding is a red line at the
// instant the checker decided it, labelled with the invariant. The key of
// the markers is printed by the HTML report under the figure.
func GanttSVG(g Gantt, title string) (string, error) {
	if len(g.Rows) == 0 {
		return "", nil
	}
	p := newPlot(title, "seconds since pod creation", "")
	n := len(g.Rows)
	y := func(row int) float64 { return float64(n - 1 - row) }
	x := func(t int64) float64 { return float64(t-g.T0) / 1e9 }
	xmax := max(x(g.End), 1e-3)
	for _, f := range g.Findings {
		xmax = max(xmax, x(f.T))
	}
	names := make([]string, n)
	for i, r := range g.Rows {
		label := r.Container
		if r.Role != "" {
			label = r.Role + ": " + r.Container
		}
		names[n-1-i] = label
	}
	top := float64(n) - 0.5
	// Fault windows first, under everything.
	var labels []ganttLabel
	for _, w := range g.Windows {
		to := max(w.To, w.From+max((g.End-g.T0)/300, 1))
		poly, err := plotter.NewPolygon(plotter.XYs{{X: x(w.From), Y: -0.5}, {X: x(to), Y: -0.5}, {X: x(to), Y: top}, {X: x(w.From), Y: top}})
		if err != nil {
			return "", err
		}
		c := faultColor(w.Fault)
		poly.Color = withAlpha(c, 0x30)
		poly.LineStyle.Width = 0
		p.Add(poly)
		text := fmt.Sprintf("%s#%d", w.Fault, w.ID)
		if w.Open {
			text += " (no end)"
		}
		labels = append(labels, ganttLabel{t: w.From, text: text, color: c})
	}
	for i, r := range g.Rows {
		for _, b := range r.Bars {
			to := b.To
			if to == b.From { // make instantaneous runs visible
				to = b.From + max((g.End-g.T0)/400, 1)
			}
			l, err := plotter.NewLine(plotter.XYs{{X: x(b.From), Y: y(i)}, {X: x(to), Y: y(i)}})
			if err != nil {
				return "", err
			}
			l.Color = roleColor[r.Role]
			l.Width = vg.Points(9)
			p.Add(l)
		}
	}
	for _, kind := range []string{LineFault, LineDeleted, LineNode} {
		for _, ln := range g.Lines {
			if ln.Kind != kind {
				continue
			}
			st := lineStyles[kind]
			if kind == LineFault {
				st.color = faultColor(ln.Fault)
			}
			if err := segment(p, x(ln.T), -0.5, x(ln.T), top, st.color, vg.Points(1.2), st.dash); err != nil {
				return "", err
			}
			switch kind {
			case LineDeleted:
				labels = append(labels, ganttLabel{t: ln.T, text: "deleted", color: st.color})
			case LineNode:
				labels = append(labels, ganttLabel{t: ln.T, text: ln.Label, color: st.color})
			}
		}
	}
	red := classColor[ClassViolation]
	for _, f := range g.Findings {
		c := classColor[f.Class]
		if c == (color.RGBA{}) {
			c = red
		}
		if err := segment(p, x(f.T), -0.5, x(f.T), top, c, vg.Points(2), nil); err != nil {
			return "", err
		}
		labels = append(labels, ganttLabel{t: f.T, text: "✕ " + f.ID + " " + f.Class, color: c})
	}
	for _, kind := range []string{MarkStarted, MarkProbeOK, MarkProbeFail, MarkSIGTERM, MarkSIGKILL} {
		var pts plotter.XYs
		for _, m := range g.Marks {
			if m.Kind == kind {
				pts = append(pts, plotter.XY{X: x(m.T), Y: y(m.Row)})
			}
		}
		if len(pts) == 0 {
			continue
		}
		s, err := plotter.NewScatter(pts)
		if err != nil {
			return "", err
		}
		st := markStyles[kind]
		// A white halo keeps markers visible on bars and event lines.
		halo, err := plotter.NewScatter(pts)
		if err != nil {
			return "", err
		}
		halo.GlyphStyle = draw.GlyphStyle{Shape: draw.CircleGlyph{}, Color: color.White, Radius: vg.Points(float64(st.size) + 1.5)}
		s.GlyphStyle = draw.GlyphStyle{Shape: st.shape, Color: st.color, Radius: vg.Points(float64(st.size))}
		p.Add(halo, s)
	}
	// Labels in rows above the chart, in time order.
	slices.SortStableFunc(labels, func(a, b ganttLabel) int {
		if a.t != b.t {
			if a.t < b.t {
				return -1
			}
			return 1
		}
		return 0
	})
	xmin := min(0, x(g.T0))
	const plotWidthPt = 470.0 // the data area of an 8-inch figure
	perChar := (xmax*1.02 - xmin) / plotWidthPt * 4.6
	// Labels in the right quarter are right-aligned so that they stay on
	// the canvas.
	spans := make([]labelSpan, len(labels))
	right := make([]bool, len(labels))
	for i, l := range labels {
		w := float64(len([]rune(l.text))+1) * perChar
		lx := x(l.t)
		right[i] = lx > xmin+0.72*(xmax-xmin)
		if right[i] {
			spans[i] = labelSpan{lx - w, lx}
		} else {
			spans[i] = labelSpan{lx, lx + w}
		}
	}
	rows := labelRows(spans)
	nrows := 0
	for i, l := range labels {
		nrows = max(nrows, rows[i]+1)
		ly := top + 0.12 + 0.42*float64(rows[i])
		st := labelStyle(8, l.color)
		off := vg.Point{X: vg.Points(2)}
		if right[i] {
			st.XAlign = text.XRight
			off.X = -vg.Points(2)
		}
		if err := addLabels(p, plotter.XYs{{X: x(l.t), Y: ly}}, []string{l.text}, st, off); err != nil {
			return "", err
		}
		if err := segment(p, x(l.t), top, x(l.t), ly+0.3, l.color, vg.Points(0.6), nil); err != nil {
			return "", err
		}
	}
	p.NominalY(names...)
	p.Y.Min, p.Y.Max = -0.5, top+0.42*float64(nrows)+0.15
	p.X.Min, p.X.Max = xmin, xmax*1.02
	h := vg.Length(1.5)*vg.Inch + vg.Length(n)*vg.Points(26) + vg.Length(nrows)*vg.Points(12)
	return svgOf(p, 8*vg.Inch, h)
}
