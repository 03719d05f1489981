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
)

// palette is a colour-blind-safe qualitative palette (Okabe–Ito), yellow
// last: on the white page its contrast is 1.3:1, and as the seventh colour
// it drew debate-2019's none baseline, the policy with every violation,
// as the faintest marks of the figure.
var palette = []color.RGBA{
	{0x00, 0x72, 0xB2, 0xff}, // blue
	{0xD5, 0x5E, 0x00, 0xff}, // vermillion
	{0x00, 0x9E, 0x73, 0xff}, // bluish green
	{0xCC, 0x79, 0xA7, 0xff}, // reddish purple
	{0xE6, 0x9F, 0x00, 0xff}, // orange
	{0x56, 0xB4, 0xE9, 0xff}, // sky blue
	{0x00, 0x00, 0x00, 0xff}, // black
	{0xF0, 0xE4, 0x42, 0xff}, // yellow
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
	p.X.Tick.Marker, p.Y.Tick.Marker = linearTicks(), linearTicks()
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
	// Windows are the fault instances that touched the pod or its node,
	// fault.begin → fault.end (shaded and labelled).
	Windows []GanttWindow
	// Findings are the checker's verdicts on the pod, drawn at their
	// instants (Timeline.Marks).
	Findings []TimelineMark
}

// GanttWindow is one fault instance on a pod's timeline.
type GanttWindow struct {
	Fault    string
	ID       uint32
	From, To int64
	// Open: no fault.end was recorded (To is the end of the history).
	Open bool
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
	// Fault is the fault kind of a LineFault.
	Fault string
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
	open := map[int]int{}       // row → index of its open bar
	openWin := map[uint32]int{} // fault ID → index of its open window
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
		case history.FaultBegin:
			openWin[e.FaultID] = len(g.Windows)
			g.Windows = append(g.Windows, GanttWindow{Fault: e.Fault, ID: e.FaultID, From: e.T, To: e.T, Open: true})
			g.Lines = append(g.Lines, GanttLine{T: e.T, Kind: LineFault, Label: fmt.Sprintf("%s %s#%d", e.Kind, e.Fault, e.FaultID), Fault: e.Fault})
		case history.FaultEffect:
			g.Lines = append(g.Lines, GanttLine{T: e.T, Kind: LineFault, Label: fmt.Sprintf("%s %s#%d", e.Kind, e.Fault, e.FaultID), Fault: e.Fault})
		case history.FaultEnd:
			if j, ok := openWin[e.FaultID]; ok {
				g.Windows[j].To, g.Windows[j].Open = e.T, false
				delete(openWin, e.FaultID)
			}
			g.Lines = append(g.Lines, GanttLine{T: e.T, Kind: LineFault, Label: fmt.Sprintf("%s %s#%d", e.Kind, e.Fault, e.FaultID), Fault: e.Fault})
		case history.PodDeleted:
			g.Lines = append(g.Lines, GanttLine{T: e.T, Kind: LineDeleted, Label: e.Kind.String()})
		}
	}
	for _, r := range sortedIntKeys(open) {
		g.Rows[r].Bars[open[r]].To = g.End
	}
	for _, j := range openWin {
		g.Windows[j].To = g.End
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
