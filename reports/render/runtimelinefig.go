package render

import (
	"fmt"
	"image/color"
	"slices"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The run timeline, Jepsen style: time since each trial's start on x, one
// lane per node (or, on clusters too large for that, per fault kind), the
// fault windows as bars in their lane and the findings as marks on top,
// every trial overlaid. A finding right after a fault window in the same
// lane is what the attribution column of the tables says in words.

// maxNodeLanes is the most nodes given a lane each; beyond, lanes are
// fault kinds.
const maxNodeLanes = 16

// Lane names of the run timeline besides nodes and fault kinds.
const (
	laneNoNode       = "(no node)"
	laneUnattributed = "unattributed"
)

var classColor = map[string]color.RGBA{
	ClassViolation:   {0xC0, 0x00, 0x00, 0xff},
	ClassDegradation: {0xE6, 0x9F, 0x00, 0xff},
	ClassBound:       {0x8C, 0x6D, 0x00, 0xff},
}

// faultColors give each fault kind (harness/faults' catalogue) one
// colour in every figure; other names share the last one.
var faultColors = map[string]color.RGBA{
	"kubelet-crash":   {0x56, 0xB4, 0xE9, 0xff},
	"runtime-restart": {0x00, 0x9E, 0x73, 0xff},
	"oom-kill":        {0xD5, 0x5E, 0x00, 0xff},
	"node-shutdown":   {0x00, 0x72, 0xB2, 0xff},
	"node-poweroff":   {0x33, 0x33, 0x33, 0xff},
	"container-gc":    {0xCC, 0x79, 0xA7, 0xff},
	"probe-failure":   {0xE6, 0x9F, 0x00, 0xff},
	"image-change":    {0x8C, 0x56, 0x4B, 0xff},
	// The catalogue's later kinds (Tol's muted colours): they shared the
	// grey of unknown names, so a run of two drew them alike.
	"image-pull-failure": {0x88, 0x22, 0x55, 0xff},
	"container-kill":     {0x11, 0x77, 0x33, 0xff},
	"container-unknown":  {0x33, 0x22, 0x88, 0xff},
	"resize":             {0xAA, 0x44, 0x99, 0xff},
}

func faultColor(k string) color.RGBA {
	if c, ok := faultColors[k]; ok {
		return c
	}
	return color.RGBA{0x99, 0x99, 0x99, 0xff}
}

// faultKinds lists the fault kinds of d's windows and findings, sorted.
func faultKinds(d RunData) []string {
	var ks []string
	add := func(k string) {
		if k != "" && !slices.Contains(ks, k) {
			ks = append(ks, k)
		}
	}
	for _, w := range d.FaultWindows {
		add(w.Fault)
	}
	for _, f := range d.FindingPoints {
		add(f.Fault)
	}
	slices.SortFunc(ks, naturalCompare)
	return ks
}

// runTimelineFigure draws the run timeline; ok is false when the run had
// no fault and no finding.
func runTimelineFigure(d RunData) (fig figure, ok bool, err error) {
	if len(d.FaultWindows) == 0 && len(d.FindingPoints) == 0 {
		return fig, false, nil
	}
	kinds := faultKinds(d)
	var nodes []string
	addNode := func(n string) {
		if n == "" {
			n = laneNoNode
		}
		if !slices.Contains(nodes, n) {
			nodes = append(nodes, n)
		}
	}
	for _, w := range d.FaultWindows {
		addNode(w.Node)
	}
	for _, f := range d.FindingPoints {
		addNode(f.Node)
	}
	slices.SortFunc(nodes, naturalCompare)
	byNode := len(nodes) <= maxNodeLanes
	var lanes []string
	if byNode {
		lanes = nodes
	} else {
		lanes = append(slices.Clone(kinds), laneUnattributed)
	}
	laneOfWindow := func(w FaultWindow) string {
		if !byNode {
			return w.Fault
		}
		if w.Node == "" {
			return laneNoNode
		}
		return w.Node
	}
	laneOfFinding := func(f FindingPoint) string {
		switch {
		case byNode && f.Node == "":
			return laneNoNode
		case byNode:
			return f.Node
		case f.Fault == "":
			return laneUnattributed
		}
		return f.Fault
	}
	n := len(lanes)
	y := func(lane string) float64 { return float64(n - 1 - slices.Index(lanes, lane)) }
	tmax := int64(0)
	trials := map[[2]any]bool{}
	for _, w := range d.FaultWindows {
		tmax = max(tmax, w.End, w.Begin)
		trials[[2]any{w.Policy, w.Trial}] = true
	}
	for _, f := range d.FindingPoints {
		tmax = max(tmax, f.T)
		trials[[2]any{f.Policy, f.Trial}] = true
	}
	div, unit := timeUnit(float64(tmax) / 1e9)
	x := func(t int64) float64 { return float64(t) / 1e9 / div }
	xmax := max(x(tmax)*1.03, 1/div)
	lanesBy := "node"
	if !byNode {
		lanesBy = "fault kind (findings in the lane of the fault they are attributed to)"
	}
	p := newPlot("", fmt.Sprintf("time since the trial's start (%s); trials overlaid", unit), "")

	// Fault windows: identical windows of different policies (the same
	// trial seeds give the same faults) are drawn once.
	type wkey struct {
		trial      int
		fault      string
		node       string
		begin, end int64
	}
	drawn := map[wkey]bool{}
	keyed := map[string]bool{}
	for _, w := range d.FaultWindows {
		k := wkey{w.Trial, w.Fault, w.Node, w.Begin, w.End}
		if drawn[k] {
			continue
		}
		drawn[k] = true
		c := faultColor(w.Fault)
		ly := y(laneOfWindow(w))
		if w.NotApplied {
			if err := segment(p, x(w.Begin), ly-0.3, x(w.Begin), ly+0.3, color.RGBA{0x80, 0x80, 0x80, 0xff}, vg.Points(1), []vg.Length{vg.Points(1.5), vg.Points(1.5)}); err != nil {
				return fig, false, err
			}
			continue
		}
		end := max(w.End, w.Begin+max(tmax/600, 1))
		l, err := plotter.NewLine(plotter.XYs{{X: x(w.Begin), Y: ly}, {X: x(end), Y: ly}})
		if err != nil {
			return fig, false, err
		}
		l.Color, l.Width = withAlpha(c, 0x70), vg.Points(11)
		p.Add(l)
		keyed[w.Fault] = true
	}
	// Findings: colour by class, glyph by policy, a small offset per
	// policy inside the lane.
	np := max(len(d.Policies), 1)
	off := func(idx int) float64 {
		if np == 1 {
			return 0
		}
		return (float64(idx) - float64(np-1)/2) * min(0.6/float64(np-1), 0.15)
	}
	type skey struct {
		class string
		idx   int
	}
	pts := map[skey]plotter.XYs{}
	var order []skey
	for _, f := range d.FindingPoints {
		k := skey{f.Class, policyIndex(d, f.Policy)}
		if _, ok := pts[k]; !ok {
			order = append(order, k)
		}
		pts[k] = append(pts[k], plotter.XY{X: x(f.T), Y: y(laneOfFinding(f)) + off(k.idx)})
	}
	slices.SortFunc(order, func(a, b skey) int {
		if c := ClassRank(b.class) - ClassRank(a.class); c != 0 {
			return c // violations drawn last, on top
		}
		return a.idx - b.idx
	})
	for _, k := range order {
		sc, err := plotter.NewScatter(pts[k])
		if err != nil {
			return fig, false, err
		}
		sc.GlyphStyle = draw.GlyphStyle{Shape: styleOf(k.idx).glyph, Color: withAlpha(classColor[k.class], 0xC0), Radius: vg.Points(2.6)}
		p.Add(sc)
	}
	names := slices.Clone(lanes)
	slices.Reverse(names) // NominalY labels from the bottom; lane 0 is on top
	p.NominalY(names...)
	p.Y.Min, p.Y.Max = -0.6, float64(n)-0.4
	p.X.Min, p.X.Max = 0, xmax
	h := vg.Length(1.3)*vg.Inch + vg.Length(n)*vg.Points(26)
	svg, err := svgOf(p, 8*vg.Inch, h)
	if err != nil {
		return fig, false, err
	}
	fig = figure{ID: "run-timeline", SVG: svg,
		Caption: fmt.Sprintf("One lane per %s. Bars are fault windows (fault.begin → fault.end), dashed grey ticks faults that could not be applied; marks are findings, coloured by class, shaped by policy. %d trial × policy histories overlaid on their own clocks.",
			lanesBy, len(trials))}
	if d.Dropped.FaultWindows > 0 || d.Dropped.FindingPoints > 0 {
		fig.Caption += fmt.Sprintf(" To bound memory, a uniform sample is drawn: %d fault windows and %d findings are left out (findings.jsonl.zst and history.jsonl.zst in the run directory have them all).", d.Dropped.FaultWindows, d.Dropped.FindingPoints)
	}
	if d.State != nil && d.State.Resumes > 0 {
		fig.Caption += fmt.Sprintf(" The run was resumed after %d committed trials: their fault windows and pod timelines are not drawn (their findings are).", d.State.Resumes)
	}
	for _, k := range kinds {
		if keyed[k] {
			fig.Key = append(fig.Key, keyItem{Symbol: "▬", Color: hexColor(faultColor(k)), Text: k})
		}
	}
	for _, c := range []string{ClassViolation, ClassDegradation, ClassBound} {
		for _, k := range order {
			if k.class == c {
				fig.Key = append(fig.Key, keyItem{Symbol: "■", Color: hexColor(classColor[c]), Text: c})
				break
			}
		}
	}
	seenIdx := map[int]bool{}
	for _, k := range order {
		if !seenIdx[k.idx] && k.idx < len(d.Policies) {
			seenIdx[k.idx] = true
		}
	}
	for i, pol := range d.Policies {
		if seenIdx[i] {
			fig.Key = append(fig.Key, keyItem{Symbol: glyphNames[i%len(glyphNames)], Color: "#333333", Text: pol})
		}
	}
	return fig, true, nil
}
