package render

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"github.com/sidebench/sidebench/reports/stats"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// svgStructure summarises an SVG without its coordinates: the elements by
// tag, every text in document order, and the drawing styles (stroke,
// width, dashes, fill) with how many elements use each. Two renderings
// with the same structure draw the same things in the same styles; the
// golden files hold it, so that a figure losing a line, a marker, a label
// or a style fails a test while a pixel shift does not.
func svgStructure(t *testing.T, svg string) string {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(svg))
	tags := map[string]int{}
	styles := map[string]int{}
	var texts []string
	inText := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG does not parse: %v", err)
		}
		switch x := tok.(type) {
		case xml.StartElement:
			tags[x.Name.Local]++
			inText = x.Name.Local == "text"
			for _, a := range x.Attr {
				if a.Name.Local != "style" || x.Name.Local == "text" {
					continue
				}
				var parts []string
				for _, kv := range strings.Split(a.Value, ";") {
					k, v, ok := strings.Cut(kv, ":")
					if !ok {
						continue
					}
					switch k {
					case "stroke", "stroke-width", "stroke-dasharray", "fill", "fill-opacity", "stroke-opacity":
						parts = append(parts, k+"="+v)
					}
				}
				slices.Sort(parts)
				styles[x.Name.Local+" "+strings.Join(parts, " ")]++
			}
		case xml.CharData:
			if inText {
				if s := strings.TrimSpace(string(x)); s != "" {
					texts = append(texts, s)
				}
			}
		case xml.EndElement:
			inText = false
		}
	}
	var b strings.Builder
	var keys []string
	for k := range tags {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b.WriteString("elements:")
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%d", k, tags[k])
	}
	b.WriteString("\ntext: " + strings.Join(texts, " | ") + "\nstyles:\n")
	keys = keys[:0]
	for k := range styles {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "  %3d× %s\n", styles[k], k)
	}
	return b.String()
}

// TestFigureStructureGolden renders every figure of a run and of a soak
// checkpoint and compares their structure with testdata/figures.golden.
func TestFigureStructureGolden(t *testing.T) {
	var b strings.Builder
	for _, c := range []struct {
		name string
		d    RunData
	}{{"run", sampleRun(t)}, {"soak", sampleSoak(t)}} {
		figs, err := reportFigures(normalize(c.d))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range figs {
			fmt.Fprintf(&b, "=== %s: figure %d %s: %s\n", c.name, f.Number, f.ID, f.Title)
			b.WriteString(svgStructure(t, string(f.SVG)))
			var key []string
			for _, k := range f.Key {
				key = append(key, fmt.Sprintf("%s %s %s line=%v dash=%q", k.Symbol, k.Color, k.Text, k.Line, k.Dash))
			}
			fmt.Fprintf(&b, "key: %s\ncaption: %s\n\n", strings.Join(key, "; "), f.Caption)
		}
	}
	golden(t, "figures.golden", []byte(b.String()))
}

// TestReportFigures checks that a run with violations, faults and
// latencies gets every kind of figure, a soak its two more, in page order.
func TestReportFigures(t *testing.T) {
	ids := func(d RunData) []string {
		figs, err := reportFigures(normalize(d))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, f := range figs {
			out = append(out, f.ID)
		}
		return out
	}
	want := []string{"forest", "latency-pod_startup", "latency-sidecar_gate", "run-timeline", "gantt", "gantt"}
	if got := ids(sampleRun(t)); !slices.Equal(got, want) {
		t.Errorf("run figures %v, want %v", got, want)
	}
	if got := ids(sampleSoak(t)); !slices.Equal(got, append(want, "soak-lifecycles", "soak-rss")) {
		t.Errorf("soak figures %v", got)
	}
}

// TestBannerGolden renders the verdict banner of report.html for each
// kind of outcome.
func TestBannerGolden(t *testing.T) {
	base := sampleRun(t)
	partial := sampleRun(t)
	partial.Meta.Partial = true
	pass := sampleRun(t)
	pass.Verdicts = []Verdict{
		{Policy: "kep753", Criterion: "maxViolations", Status: StatusPass, Message: "violations 0 <= maxViolations 0"},
		{Policy: "kep753", Criterion: "beta/violation-rate", Status: StatusInsufficient, Message: "0 violations in 20 lifecycles", MoreTrialsNeeded: 3668},
		{Policy: "kep753", Criterion: "beta/pod-startup", Status: StatusPass, Message: "p99 1375 ms ≤ 5000 ms"},
	}
	bugs := RunData{Scenario: "bug-replicas", Policies: []string{"kep753", "kep753+bug:sidecars-with-mains", "none"},
		Roles: map[string]string{"kep753+bug:sidecars-with-mains": RoleBugReplica, "none": RoleBaseline},
		Meta:  Meta{Trials: 2, Backend: "sim", Seed: 1, Pods: 180},
		Verdicts: []Verdict{
			{Policy: "kep753", Criterion: "maxViolations", Status: StatusPass, Message: "violations 0 <= maxViolations 0"},
			{Policy: "kep753+bug:sidecars-with-mains", Criterion: "caught", Status: StatusFail, Message: "the checker did not catch it"},
		}}
	none := RunData{Scenario: "unjudged", Policies: []string{"none"}, Roles: map[string]string{"none": RoleBaseline}, Meta: Meta{Trials: 1, Backend: "sim"}}
	var b strings.Builder
	for _, c := range []struct {
		name string
		d    RunData
	}{{"fail", base}, {"partial", partial}, {"insufficient", pass}, {"bug replica not caught", bugs}, {"nothing judged", none}} {
		page := string(render(t, func(b *bytes.Buffer, d RunData) error { return WriteHTML(b, d) }, c.d))
		i, j := strings.Index(page, `<section id="verdict-banner"`), strings.Index(page, "</section>")
		if i < 0 || j < i {
			t.Fatalf("%s: no verdict banner", c.name)
		}
		if k := strings.Index(page, "<h2>"); k >= 0 && k < i {
			t.Errorf("%s: the banner is not the first thing on the page", c.name)
		}
		fmt.Fprintf(&b, "=== %s\n%s\n\n", c.name, page[i:j+len("</section>")])
	}
	golden(t, "banner.golden", []byte(b.String()))
}

// TestDurationTicks guards the "2500.00" ticks: a latency axis is labelled
// in round durations, never with trailing zeros.
func TestDurationTicks(t *testing.T) {
	var labels []string
	for _, tk := range logTicks(fmtDurationMs).Ticks(400, 12000) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if want := []string{"500 ms", "1 s", "2 s", "5 s", "10 s"}; !slices.Equal(labels, want) {
		t.Errorf("labels %v, want %v", labels, want)
	}
	for _, l := range labels {
		if strings.Contains(l, ".00") {
			t.Errorf("label %q", l)
		}
	}
	if got := fmtDurationMs(2500); got != "2.5 s" {
		t.Errorf("fmtDurationMs(2500) = %q", got)
	}
}

// svgTextY returns the y of the first <text> whose content is s.
func svgTextY(t *testing.T, svg, s string) float64 {
	t.Helper()
	re := regexp.MustCompile(`<text x="[-\d.e]+" y="([-\d.e]+)"[^>]*>` + regexp.QuoteMeta(s) + `</text>`)
	m := re.FindStringSubmatch(svg)
	if m == nil {
		t.Fatalf("no text %q", s)
	}
	y, _ := strconv.ParseFloat(m[1], 64)
	return -y // texts are drawn under transform scale(1, -1)
}

// svgPathYs returns the y of every horizontal path segment ("Mx,yLx,y")
// whose style matches style (a regexp).
func svgPathYs(svg, style string) []float64 {
	re := regexp.MustCompile(`<path d="M[-\d.e]+,([-\d.e]+)L[-\d.e]+,([-\d.e]+)" style="[^"]*` + style)
	var out []float64
	for _, m := range re.FindAllStringSubmatch(svg, -1) {
		if m[1] == m[2] {
			y, _ := strconv.ParseFloat(m[1], 64)
			out = append(out, y)
		}
	}
	return out
}

// TestRunTimelineLanes checks that a fault window is drawn in the lane
// of its node: its bar and the lane's label are at the same height (the
// lanes were once labelled bottom-up and drawn top-down).
func TestRunTimelineLanes(t *testing.T) {
	d := RunData{Scenario: "lanes", Policies: []string{"kep753"}, Meta: Meta{Trials: 1},
		FaultWindows: []FaultWindow{{Policy: "kep753", Fault: "kubelet-crash", ID: 1, Node: "node-0", Begin: 1 * sec, End: 2 * sec}},
		FindingPoints: []FindingPoint{
			{Policy: "kep753", ID: "S3", Class: ClassViolation, Node: "node-1", T: 3 * sec},
			{Policy: "kep753", ID: "S3", Class: ClassViolation, Node: "node-2", T: 3 * sec},
		}}
	fig, ok, err := runTimelineFigure(normalize(d))
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	ys := svgPathYs(fig.SVG, `stroke-width:11"`) // fault window bars
	if len(ys) != 1 {
		t.Fatalf("kubelet-crash bars at %v, want one", ys)
	}
	label := svgTextY(t, fig.SVG, "node-0")
	for _, other := range []string{"node-1", "node-2"} {
		if math.Abs(svgTextY(t, fig.SVG, other)-ys[0]) < math.Abs(label-ys[0]) {
			t.Errorf("the node-0 window is drawn nearer the %s lane", other)
		}
	}
	if math.Abs(label-ys[0]) > 6 {
		t.Errorf("node-0 window at y=%.1f, its lane label at y=%.1f", ys[0], label)
	}
}

// TestIdenticalPoliciesStayVisible guards "kep753's line is invisible":
// two policies with identical samples get distinct colours, dashes and
// widths (the first wider), and the key says they are identical.
func TestIdenticalPoliciesStayVisible(t *testing.T) {
	s := series(50, func(i int) float64 { return 1000 + float64(i)*37 })
	d := normalize(RunData{Scenario: "same", Policies: []string{"kep753", "kep753-2019"}, Latencies: []Latency{
		{Policy: "kep753", Metric: "pod_startup", Ms: stats.HistOf(s)}, {Policy: "kep753-2019", Metric: "pod_startup", Ms: stats.HistOf(s)}}})
	fig, ok, err := latencyFigure(d, "pod_startup")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	a, b := styleOf(0), styleOf(1)
	if a.color == b.color || slices.Equal(a.dashes, b.dashes) || a.width <= b.width {
		t.Errorf("styles not distinct: %+v %+v", a, b)
	}
	for _, c := range []string{hexColor(a.color), hexColor(b.color)} {
		if !strings.Contains(fig.SVG, "stroke:"+c) {
			t.Errorf("no line in %s", c)
		}
	}
	if len(fig.Key) != 2 || !strings.Contains(fig.Key[1].Text, "identical to kep753") {
		t.Errorf("key %+v", fig.Key)
	}
	// Policy names are identifiers: the caption does not capitalise one
	// that starts a sentence ("Kep753-2019's samples", "None's samples").
	if !strings.Contains(fig.Caption, " The samples of kep753-2019 are identical to those of kep753: its line is drawn thinner, on top.") {
		t.Errorf("caption %q", fig.Caption)
	}
}

// TestNotableFindingsNameTheirTrials guards "identical findings of
// different trials twice with no trial number".
func TestNotableFindingsNameTheirTrials(t *testing.T) {
	f := Finding{Policy: "kep753+bug:reinit-mains-first", ID: "INV-F1", Class: ClassViolation, Pod: "default/svc-16", Node: "node-1", T: 6 * sec, Msg: "init re-run"}
	f0, f1, other := f, f, f
	f0.Trial, f0.Seed = 0, 11
	f1.Trial, f1.Seed = 1, 12
	other.Pod, other.Trial = "default/svc-17", 1
	d := RunData{Scenario: "s", Policies: []string{f.Policy}, Findings: []Finding{f1, f0, other}}
	md := string(render(t, func(b *bytes.Buffer, d RunData) error { return WriteMarkdown(b, d) }, d))
	if n := strings.Count(md, "### INV-F1 violation: pod default/svc-16"); n != 1 {
		t.Errorf("%d entries for the same finding, want 1:\n%s", n, md)
	}
	for _, want := range []string{"(policy kep753+bug:reinit-mains-first, trial 0)", "trial 0, seed 11; the same finding in trial(s) 1",
		"--pod default/svc-16 --trial 0", "### INV-F1 violation: pod default/svc-17 on node-1 at 6.000s (policy kep753+bug:reinit-mains-first, trial 1)"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
}

// TestTablesCollapse guards the 117-row invariants table and the warning
// on every latency row: clean invariants are one line per policy, with
// their IDs and rules in tooltips and footnotes; a warning is said once.
func TestTablesCollapse(t *testing.T) {
	d := RunData{Scenario: "s", Policies: []string{"kep753"}, Meta: Meta{Pods: 200}}
	for i := 1; i <= 36; i++ {
		d.Invariants = append(d.Invariants, InvariantRow{Policy: "kep753", ID: fmt.Sprintf("INV-X%d", i), Rule: fmt.Sprintf("rule %d", i), Level: "HARD", Checked: 200})
	}
	d.Invariants = append(d.Invariants, InvariantRow{Policy: "kep753", ID: "INV-S3", Rule: "mains after sidecars", Level: "HARD", Checked: 200, Violations: 2, ViolatingPods: 2})
	for _, m := range []string{"pod_startup", "create_to_ready", "sidecar_gate"} {
		d.Latencies = append(d.Latencies, Latency{Policy: "kep753", Metric: m, Ms: stats.HistOf(series(200, func(i int) float64 { return float64(100 + i) }))})
	}
	page := string(render(t, func(b *bytes.Buffer, d RunData) error { return WriteHTML(b, d) }, d))
	md := string(render(t, func(b *bytes.Buffer, d RunData) error { return WriteMarkdown(b, d) }, d))
	for _, out := range []string{page, md} {
		if !strings.Contains(out, "36 invariants: 0 findings in 200 pods") {
			t.Errorf("no collapsed line")
		}
		if n := strings.Count(out, "p99: need &gt;= 368 samples") + strings.Count(out, "p99: need >= 368 samples"); n != 1 {
			t.Errorf("the p99 warning is said %d times, want once", n)
		}
	}
	if n := strings.Count(page, "<tr class="); n != 2 { // INV-S3 and the collapsed line
		t.Errorf("%d invariant rows, want 2", n)
	}
	for _, want := range []string{`<abbr title="rule 7">INV-X7</abbr>`, `<dt id="rule-INV-X7">INV-X7</dt><dd>rule 7`, `<abbr title="mains after sidecars">INV-S3</abbr>`} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

// TestResultTableFits120 guards the 200-column result table: with the
// 91-character policy of the restart-rules scenarios and long scenario
// names, no line is wider than TableWidth, and a shortened name is listed
// in full under the table.
func TestResultTableFits120(t *testing.T) {
	long := "kep753+ContainerRestartRules+RestartAllContainersOnContainerExits+bug:reset-trigger-first"
	rows := []StateRow{
		{Scenario: "rules-restart-all-main", Policy: "kep753+ContainerRestartRules+RestartAllContainersOnContainerExits", Role: RoleJudged, Trials: 3, Pods: 180, Status: StatusPass,
			PodStartupMs: StartupRow{N: 10, FaultedExcluded: 170, P50: 2300, P99: 2300}},
		{Scenario: "rules-restart-all-main", Policy: long, Role: RoleBugReplica, Trials: 3, PartialTrials: 1, Pods: 180, Violations: 2156, Status: StatusPass,
			PodStartupMs: StartupRow{N: 15, FaultedExcluded: 165, P50: 2300, P99: 2300}},
		{Scenario: "local/fault-runtime-restart-keep", Policy: "kep753", Role: RoleJudged, Trials: 3, Pods: 208200, Degradations: 22, Status: StatusInsufficient,
			PodStartupMs: StartupRow{N: 197112, FaultedExcluded: 11015, P50: 1659, P99: 17738},
			Criteria: []StateCriterion{{Name: "beta/violation-rate", Status: StatusInsufficient, MoreTrialsNeeded: 3480,
				Message: "0 violations in 208 lifecycles: rate 0, Clopper–Pearson 0.95 two-sided upper bound 0.0176 >= 0.001; more lifecycles needed assuming violations continue at the observed rate"}}},
	}
	var b bytes.Buffer
	WriteResultTable(&b, rows)
	for _, line := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
		if n := len([]rune(line)); n > TableWidth {
			t.Errorf("line of %d columns: %s", n, line)
		}
	}
	golden(t, "table.golden", b.Bytes())
	if !strings.Contains(b.String(), "[2] "+long) {
		t.Errorf("the shortened policy is not listed in full:\n%s", b.String())
	}
}

// TestLatencyFigureAllZero: a metric whose samples are all 0 (sidecar_gate
// of a pod whose sidecars start at once: kube-start-ordering's two runs
// merged) has the interval [0, 0] at its quantiles from eight samples on;
// its log10 was -Inf and failed report.html ("latency figure sidecar_gate:
// plotter: infinite data point", merge exit 3). The curve and the
// intervals are drawn at the left edge.
func TestLatencyFigureAllZero(t *testing.T) {
	for _, n := range []int{4, 8, 400} {
		d := sampleRun(t)
		h := &stats.Hist{}
		for range n {
			h.Add(0)
		}
		for i := range d.Latencies {
			if l := &d.Latencies[i]; l.Metric == "sidecar_gate" {
				l.Ms, l.N = h, n
				l.P50, l.P90, l.P99 = stats.QuantileSummaryOf(h, 0.5, 0.95), stats.QuantileSummaryOf(h, 0.9, 0.95), stats.QuantileSummaryOf(h, 0.99, 0.95)
			}
		}
		if _, ok, err := latencyFigure(normalize(d), "sidecar_gate"); err != nil || !ok {
			t.Errorf("%d samples of 0: ok=%v err=%v", n, ok, err)
		}
		if err := WriteHTML(io.Discard, d); err != nil {
			t.Errorf("%d samples of 0: report.html: %v", n, err)
		}
	}
}
