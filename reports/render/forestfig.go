package render

import (
	"fmt"
	"image/color"
	"strconv"
	"strings"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/sidebench/sidebench/reports/stats"
)

// figure is one figure of report.html: an inline SVG, a caption and an
// optional key printed under it (for figures whose legend would hide
// data).
type figure struct {
	ID      string
	Title   string
	SVG     string
	Caption string
	Key     []keyItem
}

// keyItem is one entry of a figure's key: a symbol in a colour and what
// it means; with Line, a line swatch in the figure's dash pattern and
// width comes first.
type keyItem struct {
	Symbol, Color, Text string
	Line                bool
	Dash                string // SVG stroke-dasharray, "" for solid
	Width               float64
}

// policyKey is a policy's key entry: its line and glyph.
func policyKey(i int, text string, line bool) keyItem {
	st := styleOf(i)
	k := keyItem{Symbol: glyphNames[i%len(glyphNames)], Color: hexColor(st.color), Text: text, Line: line, Width: float64(st.width) / float64(vg.Points(1))}
	var ds []string
	for _, d := range st.dashes {
		ds = append(ds, strconv.FormatFloat(float64(d)/float64(vg.Points(1)), 'g', 3, 64))
	}
	k.Dash = strings.Join(ds, " ")
	return k
}

// GroupAll is the GroupRate.Group of every invariant together: the pods
// with at least one violation of any invariant.
const GroupAll = "all"

// forestRow is one row of the forest plot.
type forestRow struct {
	group, policy string
	idx           int
	rate          stats.RateSummary
}

// forestRows are the rows drawn: every policy's overall rate, then each
// group in which some policy has a violation. Groups without a violation
// are returned apart, for the caption.
func forestRows(d RunData) (rows []forestRow, clean []string) {
	byGroup := map[string][]GroupRate{}
	var order []string
	for _, g := range d.Groups {
		if _, ok := byGroup[g.Group]; !ok {
			order = append(order, g.Group)
		}
		byGroup[g.Group] = append(byGroup[g.Group], g)
	}
	add := func(g GroupRate) {
		rows = append(rows, forestRow{group: g.Group, policy: g.Policy, idx: policyIndex(d, g.Policy),
			rate: stats.Rate(min(g.ViolatingPods, g.Pods), g.Pods, DefaultConfidence)})
	}
	for _, g := range byGroup[GroupAll] {
		add(g)
	}
	for _, name := range order {
		if name == GroupAll {
			continue
		}
		any := false
		for _, g := range byGroup[name] {
			any = any || g.ViolatingPods > 0
		}
		if !any {
			clean = append(clean, name)
			continue
		}
		for _, g := range byGroup[name] {
			add(g)
		}
	}
	return rows, clean
}

func policyIndex(d RunData, pol string) int {
	for i, p := range d.Policies {
		if p == pol {
			return i
		}
	}
	return len(d.Policies)
}

// forestFigure draws the violation rate per invariant group and policy
// with Clopper–Pearson 95% intervals, on a log axis: a rate of 0 is drawn
// as a ring at the left edge with its interval reaching the upper bound.
func forestFigure(d RunData) (fig figure, ok bool, err error) {
	rows, clean := forestRows(d)
	if len(rows) == 0 {
		return fig, false, nil
	}
	lo := 1.0
	for _, r := range rows {
		if r.rate.K > 0 {
			lo = min(lo, r.rate.CPLo)
		}
		lo = min(lo, r.rate.CPHi)
	}
	for _, t := range d.RateTargets {
		if t.Rate > 0 {
			lo = min(lo, t.Rate)
		}
	}
	lo = decadeBelow(max(lo/3, 1e-7))
	edge := lo * 1.25 // where a rate of 0 is drawn

	p := newPlot("", "pods with ≥ 1 violation / pods (log scale)", "")
	p.X.Tick.Marker = logAxisTicks(fmtPctTick)
	n := len(rows)
	y := func(i int) float64 { return float64(n - 1 - i) }
	names := make([]string, n)
	// Alternate a light band behind every other group.
	bandOn := false
	for i := 0; i < n; {
		j := i
		for j < n && rows[j].group == rows[i].group {
			j++
		}
		if bandOn {
			poly, err := plotter.NewPolygon(plotter.XYs{{X: lg(lo), Y: y(j-1) - 0.5}, {X: 0, Y: y(j-1) - 0.5}, {X: 0, Y: y(i) + 0.5}, {X: lg(lo), Y: y(i) + 0.5}})
			if err != nil {
				return fig, false, err
			}
			poly.Color = color.RGBA{0xf0, 0xf0, 0xf0, 0xff}
			poly.LineStyle.Width = 0
			p.Add(poly)
		}
		bandOn = !bandOn
		i = j
	}
	var key []keyItem
	legend := map[int]bool{}
	for i, r := range rows {
		g := "all invariants"
		if r.group != GroupAll {
			g = groupLabel(r.group)
		}
		names[n-1-i] = fmt.Sprintf("%s · %s  (%d/%d)", g, shortPolicy(r.policy), r.rate.K, r.rate.N)
		st := styleOf(r.idx)
		hi := r.rate.CPHi
		from := edge
		if r.rate.K > 0 {
			from = max(r.rate.CPLo, edge)
		}
		if err := segment(p, lg(from), y(i), lg(hi), y(i), st.color, vg.Points(2), nil); err != nil {
			return fig, false, err
		}
		if err := segment(p, lg(hi), y(i)-0.22, lg(hi), y(i)+0.22, st.color, vg.Points(2), nil); err != nil {
			return fig, false, err
		}
		pt := plotter.XYs{{X: lg(max(r.rate.Rate, edge)), Y: y(i)}}
		sc, err := plotter.NewScatter(pt)
		if err != nil {
			return fig, false, err
		}
		shape := st.glyph
		if r.rate.K == 0 {
			shape = draw.RingGlyph{}
		}
		sc.GlyphStyle = draw.GlyphStyle{Shape: shape, Color: st.color, Radius: vg.Points(4)}
		p.Add(sc)
		if !legend[r.idx] {
			legend[r.idx] = true
			key = append(key, policyKey(r.idx, r.policy, false))
		}
	}
	red := color.RGBA{0xC0, 0x00, 0x00, 0xff}
	var tpts plotter.XYs
	var tlabels []string
	seen := map[float64]bool{}
	for _, t := range d.RateTargets {
		if t.Rate <= 0 || seen[t.Rate] {
			continue
		}
		seen[t.Rate] = true
		if err := segment(p, lg(t.Rate), -0.5, lg(t.Rate), float64(n)-0.5, red, vg.Points(1), []vg.Length{vg.Points(5), vg.Points(3)}); err != nil {
			return fig, false, err
		}
		tpts = append(tpts, plotter.XY{X: lg(t.Rate), Y: float64(n) - 0.5})
		tlabels = append(tlabels, t.Name)
	}
	if err := addLabels(p, tpts, tlabels, labelStyle(8.5, red), vg.Point{X: vg.Points(2), Y: vg.Points(2)}); err != nil {
		return fig, false, err
	}
	p.NominalY(names...)
	p.Y.Min, p.Y.Max = -0.5, float64(n)-0.5
	if len(tpts) > 0 {
		p.Y.Max += 0.8
	}
	p.X.Min, p.X.Max = lg(lo), 0
	h := vg.Length(1.3)*vg.Inch + vg.Length(n)*vg.Points(17)
	svg, err := svgOf(p, 8*vg.Inch, h)
	if err != nil {
		return fig, false, err
	}
	fig = figure{ID: "forest", SVG: svg, Key: key,
		Caption: "Each row: the fraction of pod lifecycles with at least one violation of the group's invariants (k/n at the right of the label), " +
			"with its two-sided 95% Clopper–Pearson interval. A ring at the left edge is 0 observed: the bar then reaches the upper bound the run can claim (≈3/n)."}
	if len(d.RateTargets) > 0 {
		fig.Caption += " Red dashed lines are graduation targets."
	}
	if len(clean) > 0 {
		var gs []string
		for _, g := range clean {
			gs = append(gs, groupLabel(g))
		}
		fig.Caption += " No violation in any policy: " + strings.Join(gs, ", ") + "."
	}
	return fig, true, nil
}

// fmtPctTick renders a rate tick as a percentage: "100%", "1%", "0.01%".
func fmtPctTick(x float64) string {
	return strings.TrimSuffix(fmtPct(x), ".0%")
}

// shortPolicy abbreviates a long policy name for a figure's row label
// (the legend and the tables keep the full name).
func shortPolicy(p string) string {
	const maxLen = 34
	if len(p) <= maxLen {
		return p
	}
	return p[:maxLen-1] + "…"
}
