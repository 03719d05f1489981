package render

import (
	"bytes"
	"fmt"
	"image/color"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/reports/stats"
)

// maxECDFPoints caps the points of one ECDF line: larger samples are drawn
// at evenly spaced ranks (the step shape is kept, the SVG stays small).
const maxECDFPoints = 2000

// palette is a colour-blind-safe qualitative palette (Okabe–Ito).
var palette = []color.RGBA{
	{0x00, 0x72, 0xB2, 0xff}, // blue
	{0xD5, 0x5E, 0x00, 0xff}, // vermillion
	{0x00, 0x9E, 0x73, 0xff}, // bluish green
	{0xCC, 0x79, 0xA7, 0xff}, // reddish purple
	{0xE6, 0x9F, 0x00, 0xff}, // orange
	{0x56, 0xB4, 0xE9, 0xff}, // sky blue
	{0xF0, 0xE4, 0x42, 0xff}, // yellow
	{0x00, 0x00, 0x00, 0xff}, // black
}

func paletteColor(i int) color.RGBA { return palette[i%len(palette)] }

// newPlot returns a plot with sans-serif text.
func newPlot(title, xlabel, ylabel string) *plot.Plot {
	p := plot.New()
	sans := func(f *font.Font) { f.Typeface, f.Variant = "Liberation", "Sans" }
	for _, f := range []*font.Font{&p.Title.TextStyle.Font, &p.X.Label.TextStyle.Font, &p.Y.Label.TextStyle.Font,
		&p.X.Tick.Label.Font, &p.Y.Tick.Label.Font, &p.Legend.TextStyle.Font} {
		sans(f)
	}
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, xlabel, ylabel
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.Add(plotter.NewGrid())
	return p
}

// svgOf renders p as an SVG element: the XML prologue and the generator
// comment are dropped so it can be inlined in HTML. The SVG uses font
// family names only (no embedded fonts, no external references).
func svgOf(p *plot.Plot, w, h vg.Length) (string, error) {
	wt, err := p.WriterTo(w, h, "svg")
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return "", err
	}
	s := buf.String()
	if i := strings.Index(s, "<svg"); i >= 0 {
		s = s[i:]
	}
	return strings.TrimSpace(s), nil
}

// ecdfMetric picks the metric the ECDF figure shows: pod_startup if any
// policy has samples of it, else the first metric with samples.
func ecdfMetric(d RunData) string {
	first := ""
	for _, l := range d.Latencies {
		if l.Ms.N() == 0 {
			continue
		}
		if l.Metric == "pod_startup" {
			return l.Metric
		}
		if first == "" {
			first = l.Metric
		}
	}
	return first
}

// ecdfPoints returns the step points of the ECDF of h: (x_(i), i/n),
// starting at (x_(1), 0), at most maxECDFPoints+2 of them; nil if h is
// empty.
func ecdfPoints(h *stats.Hist) plotter.XYs {
	n := h.N()
	if n == 0 {
		return nil
	}
	pts := plotter.XYs{{X: h.At(0), Y: 0}}
	step := 1
	if n > maxECDFPoints {
		step = (n + maxECDFPoints - 1) / maxECDFPoints
	}
	for i := step - 1; i < n; i += step {
		pts = append(pts, plotter.XY{X: h.At(i), Y: float64(i+1) / float64(n)})
	}
	if last := pts[len(pts)-1]; last.Y != 1 {
		pts = append(pts, plotter.XY{X: h.At(n - 1), Y: 1})
	}
	return pts
}

// ECDFSVG draws the empirical CDF of metric, one step line per policy, as
// an inline SVG. It returns "" if no policy has samples of metric.
func ECDFSVG(d RunData, metric string) (string, error) {
	d = normalize(d)
	return ecdfSVG(d, metric)
}

func ecdfSVG(d RunData, metric string) (string, error) {
	p := newPlot(fmt.Sprintf("%s: empirical CDF per policy", metric), metric+" (ms)", "fraction of pods ≤ x")
	p.Legend.Top = false
	p.Legend.Left = false
	p.Legend.XOffs = -vg.Points(4)
	p.Legend.YOffs = vg.Points(4)
	drawn := 0
	for i, pol := range d.Policies {
		for _, l := range d.Latencies {
			if l.Policy != pol || l.Metric != metric || l.Ms.N() == 0 {
				continue
			}
			pts := ecdfPoints(l.Ms)
			if pts == nil {
				continue
			}
			line, err := plotter.NewLine(pts)
			if err != nil {
				return "", err
			}
			line.StepStyle = plotter.PostStep
			line.Color = paletteColor(i)
			line.Width = vg.Points(1.5)
			p.Add(line)
			p.Legend.Add(fmt.Sprintf("%s (n=%d)", pol, l.Ms.N()), line)
			drawn++
		}
	}
	if drawn == 0 {
		return "", nil
	}
	p.Y.Min, p.Y.Max = 0, 1
	return svgOf(p, 7*vg.Inch, 4*vg.Inch)
}

// Gantt is a pod's timeline: one row per container with a bar per run
// (container.running → exit), markers and vertical event lines. Times are
// nanoseconds on the run's clock.
type Gantt struct {
	Pod   string
	T0    int64 // pod.created, or the first event
	End   int64 // the last event
	Rows  []GanttRow
	Marks []GanttMark
	Lines []GanttLine
}

// GanttRow is one container.
type GanttRow struct {
	Container string
	Role      string // init, sidecar, main ("" if not in the spec)
	Bars      []GanttBar
}

// GanttBar is one run of a container.
type GanttBar struct {
	Attempt  uint32
	From, To int64
	// End says how the run ended: "exit <code> <reason>", "sandbox lost",
	// "node down" or "open" (still running when the history ended).
	End string
}

// Marker kinds.
const (
	MarkStarted   = "started"
	MarkProbeOK   = "probe ok"
	MarkProbeFail = "probe failed"
	MarkSIGTERM   = "SIGTERM"
	MarkSIGKILL   = "SIGKILL"
)

// GanttMark is a point event on a container's row.
type GanttMark struct {
	Row   int
	T     int64
	Kind  string
	Label string
}

// Line kinds.
const (
	LineFault   = "fault"
	LineDeleted = "pod deleted"
	LineNode    = "node/kubelet"
)

// GanttLine is a vertical line across all rows.
type GanttLine struct {
	T     int64
	Kind  string
	Label string
}

// BuildGantt builds the timeline of the pod whose history is events (one
// pod's partition: its own events plus its node's and faults). Containers
// are in spec order (init containers and sidecars, then mains), followed by
// any container not in the spec in order of appearance.
func BuildGantt(events []history.Event) Gantt {
	var g Gantt
	if len(events) == 0 {
		return g
	}
	g.T0, g.End = events[0].T, events[0].T
	rowOf := map[string]int{}
	addRow := func(name, role string) int {
		if i, ok := rowOf[name]; ok {
			return i
		}
		rowOf[name] = len(g.Rows)
		g.Rows = append(g.Rows, GanttRow{Container: name, Role: role})
		return len(g.Rows) - 1
	}
	open := map[int]int{} // row → index of its open bar
	closeAll := func(t int64, why string) {
		for _, r := range sortedIntKeys(open) {
			b := &g.Rows[r].Bars[open[r]]
			b.To, b.End = t, why
		}
		clear(open)
	}
	for i := range events {
		e := &events[i]
		g.End = max(g.End, e.T)
		switch e.Kind {
		case history.PodCreated:
			if g.Pod == "" {
				g.Pod, g.T0 = e.Pod, e.T
			}
			if e.Spec != nil {
				for _, c := range e.Spec.Init {
					addRow(c.Name, c.Role)
				}
				for _, c := range e.Spec.Main {
					addRow(c.Name, c.Role)
				}
			}
		case history.ContainerRunning:
			r := addRow(e.Container, "")
			if j, ok := open[r]; ok { // a restart without a recorded exit
				g.Rows[r].Bars[j].To, g.Rows[r].Bars[j].End = e.T, "replaced"
			}
			g.Rows[r].Bars = append(g.Rows[r].Bars, GanttBar{Attempt: e.Attempt, From: e.T, To: e.T, End: "open"})
			open[r] = len(g.Rows[r].Bars) - 1
		case history.ContainerExited:
			r := addRow(e.Container, "")
			if j, ok := open[r]; ok {
				b := &g.Rows[r].Bars[j]
				b.To, b.End = e.T, strings.TrimSpace(fmt.Sprintf("exit %d %s", e.Code, e.Reason))
				delete(open, r)
			}
		case history.ContainerStarted:
			if e.Value {
				g.Marks = append(g.Marks, GanttMark{Row: addRow(e.Container, ""), T: e.T, Kind: MarkStarted})
			}
		case history.ProbeResult:
			kind := MarkProbeOK
			if e.Result != "success" {
				kind = MarkProbeFail
			}
			g.Marks = append(g.Marks, GanttMark{Row: addRow(e.Container, ""), T: e.T, Kind: kind, Label: e.Probe})
		case history.ContainerStopRequested:
			g.Marks = append(g.Marks, GanttMark{Row: addRow(e.Container, ""), T: e.T, Kind: MarkSIGTERM, Label: e.Reason})
		case history.ContainerKilled:
			g.Marks = append(g.Marks, GanttMark{Row: addRow(e.Container, ""), T: e.T, Kind: MarkSIGKILL})
		case history.SandboxLost:
			closeAll(e.T, "sandbox lost")
		case history.NodeDown:
			closeAll(e.T, "node down")
			g.Lines = append(g.Lines, GanttLine{T: e.T, Kind: LineNode, Label: e.Kind.String()})
		case history.KubeletDown, history.KubeletUp, history.RuntimeDown, history.RuntimeUp, history.NodeUp, history.NodeShutdown:
			g.Lines = append(g.Lines, GanttLine{T: e.T, Kind: LineNode, Label: e.Kind.String()})
		case history.FaultBegin, history.FaultEffect, history.FaultEnd:
			g.Lines = append(g.Lines, GanttLine{T: e.T, Kind: LineFault, Label: fmt.Sprintf("%s %s#%d", e.Kind, e.Fault, e.FaultID)})
		case history.PodDeleted:
			g.Lines = append(g.Lines, GanttLine{T: e.T, Kind: LineDeleted, Label: e.Kind.String()})
		}
	}
	for _, r := range sortedIntKeys(open) {
		g.Rows[r].Bars[open[r]].To = g.End
	}
	return g
}

func sortedIntKeys(m map[int]int) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

var roleColor = map[string]color.RGBA{
	"init":    {0x99, 0x99, 0x99, 0xff},
	"sidecar": {0x00, 0x72, 0xB2, 0xff},
	"main":    {0x00, 0x9E, 0x73, 0xff},
	"":        {0x66, 0x66, 0x66, 0xff},
}

type markStyle struct {
	shape draw.GlyphDrawer
	color color.RGBA
	size  vg.Length
}

var markStyles = map[string]markStyle{
	MarkStarted:   {draw.RingGlyph{}, color.RGBA{0, 0, 0, 0xff}, 3.5},
	MarkProbeOK:   {draw.CircleGlyph{}, color.RGBA{0x00, 0x9E, 0x73, 0xff}, 3},
	MarkProbeFail: {draw.CrossGlyph{}, color.RGBA{0xD5, 0x5E, 0x00, 0xff}, 4.5},
	MarkSIGTERM:   {draw.PyramidGlyph{}, color.RGBA{0xE6, 0x9F, 0x00, 0xff}, 5.5},
	MarkSIGKILL:   {draw.BoxGlyph{}, color.RGBA{0xC0, 0x00, 0x00, 0xff}, 4.5},
}

var lineStyles = map[string]struct {
	color color.RGBA
	dash  []vg.Length
}{
	LineFault:   {color.RGBA{0xCC, 0x79, 0xA7, 0xff}, []vg.Length{vg.Points(4), vg.Points(2)}},
	LineDeleted: {color.RGBA{0, 0, 0, 0xff}, []vg.Length{vg.Points(2), vg.Points(2)}},
	LineNode:    {color.RGBA{0x80, 0x80, 0x80, 0xff}, []vg.Length{vg.Points(1), vg.Points(2)}},
}

// GanttSVG draws g as an inline SVG (x: seconds since pod creation; one
// row per container, first container on top). The key is not drawn: the
// HTML report prints it under the figure (ganttKey).
func GanttSVG(g Gantt, title string) (string, error) {
	if len(g.Rows) == 0 {
		return "", nil
	}
	p := newPlot(title, "seconds since pod creation", "")
	n := len(g.Rows)
	y := func(row int) float64 { return float64(n - 1 - row) }
	x := func(t int64) float64 { return float64(t-g.T0) / 1e9 }
	names := make([]string, n)
	for i, r := range g.Rows {
		label := r.Container
		if r.Role != "" {
			label = r.Role + ": " + r.Container
		}
		names[n-1-i] = label
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
			l, err := plotter.NewLine(plotter.XYs{{X: x(ln.T), Y: -0.5}, {X: x(ln.T), Y: float64(n) - 0.5}})
			if err != nil {
				return "", err
			}
			st := lineStyles[kind]
			l.Color, l.Dashes, l.Width = st.color, st.dash, vg.Points(1.2)
			p.Add(l)
		}
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
	p.NominalY(names...)
	p.Y.Min, p.Y.Max = -0.5, float64(n)-0.5
	p.X.Min = min(p.X.Min, 0)
	h := vg.Length(1.6)*vg.Inch + vg.Length(n)*vg.Points(26)
	return svgOf(p, 8*vg.Inch, h)
}
