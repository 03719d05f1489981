package render

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"flag"
	"fmt"
	"github.com/sidebench/sidebench/reports/stats"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/rundir"
)

var (
	update = flag.Bool("update", false, "rewrite testdata/*.golden and testdata/history.jsonl")
	outDir = flag.String("out", "", "also write the sample run directory here (for looking at report.html)")
)

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		gotPath := path + ".got"
		_ = os.WriteFile(gotPath, got, 0o644)
		t.Errorf("%s differs from the golden file; got written to %s (diff them, then go test -update if intended)", path, gotPath)
	}
}

const (
	ms  = int64(1e6)
	sec = int64(1e9)
)

var sampleMeta = history.Meta{
	Scenario: "sidecar-basic", ScenarioHash: "sha256:1f2e", Seed: 42, Policy: "kep753", Backend: "sim",
	Version: "v0.1.0", StartUnixNano: 1780000000000000000,
}

func spec() *history.PodSpec {
	return &history.PodSpec{
		Init: []history.ContainerSpec{
			{Name: "setup", Role: "init"},
			{Name: "proxy", Role: "sidecar", Startup: true, Readiness: true},
		},
		Main:          []history.ContainerSpec{{Name: "app", Role: "main", Readiness: true}},
		RestartPolicy: "Always", Grace: 30 * sec, Workload: "web",
	}
}

// sampleHistory is the committed testdata/history.jsonl: two pods of one
// run. web-1 is terminated gracefully after a kubelet crash (SIGTERM to
// the main container, then the sidecar, which is SIGKILLed when its grace
// runs out); web-3's main container starts before its sidecar's startup
// probe passed (an S3 violation).
func sampleHistory() []history.Event {
	m := sampleMeta
	ev := []history.Event{{T: 0, Kind: history.RunMeta, Meta: &m}}
	add := func(t int64, k history.Kind, pod, c string, f func(e *history.Event)) {
		e := history.Event{T: t, Kind: k, Pod: pod, Container: c}
		if pod != "" {
			e.Node = "node-1"
		}
		if f != nil {
			f(&e)
		}
		ev = append(ev, e)
	}
	w1, w3 := "default/web-1", "default/web-3"
	add(0, history.PodCreated, w1, "", func(e *history.Event) { e.Node = ""; e.Spec = spec() })
	add(0, history.PodCreated, w3, "", func(e *history.Event) { e.Node = ""; e.Spec = spec() })
	add(5*ms, history.PodScheduled, w1, "", nil)
	add(6*ms, history.PodScheduled, w3, "", nil)
	add(20*ms, history.SandboxCreated, w1, "", nil)
	add(22*ms, history.SandboxCreated, w3, "", nil)
	// web-1: init, sidecar with startup probe, main.
	add(30*ms, history.ContainerRunning, w1, "setup", nil)
	add(30*ms, history.ContainerStarted, w1, "setup", func(e *history.Event) { e.Value = true })
	add(250*ms, history.ContainerExited, w1, "setup", func(e *history.Event) { e.Reason = "Completed" })
	add(260*ms, history.ContainerRunning, w1, "proxy", nil)
	add(560*ms, history.ProbeResult, w1, "proxy", func(e *history.Event) { e.Probe, e.Result = "startup", "failure" })
	add(860*ms, history.ProbeResult, w1, "proxy", func(e *history.Event) { e.Probe, e.Result = "startup", "success" })
	add(860*ms, history.ContainerStarted, w1, "proxy", func(e *history.Event) { e.Value = true })
	add(900*ms, history.ContainerRunning, w1, "app", nil)
	add(900*ms, history.ContainerStarted, w1, "app", func(e *history.Event) { e.Value = true })
	// web-3: the main container runs before the sidecar has started.
	add(40*ms, history.ContainerRunning, w3, "setup", nil)
	add(40*ms, history.ContainerStarted, w3, "setup", func(e *history.Event) { e.Value = true })
	add(300*ms, history.ContainerExited, w3, "setup", func(e *history.Event) { e.Reason = "Completed" })
	add(310*ms, history.ContainerRunning, w3, "proxy", nil)
	add(320*ms, history.ContainerRunning, w3, "app", nil)
	add(320*ms, history.ContainerStarted, w3, "app", func(e *history.Event) { e.Value = true })
	add(700*ms, history.ProbeResult, w3, "proxy", func(e *history.Event) { e.Probe, e.Result = "startup", "success" })
	add(700*ms, history.ContainerStarted, w3, "proxy", func(e *history.Event) { e.Value = true })
	// A kubelet crash on node-1.
	add(2*sec, history.FaultBegin, "", "", func(e *history.Event) {
		e.Node, e.Fault, e.FaultID, e.Target = "node-1", "kubelet-crash", 1, "node-1/kubelet"
	})
	add(2*sec, history.KubeletDown, "", "", func(e *history.Event) { e.Node = "node-1" })
	add(2100*ms, history.FaultEffect, "", "", func(e *history.Event) { e.Node, e.Fault, e.FaultID = "node-1", "kubelet-crash", 1 })
	add(4*sec, history.KubeletUp, "", "", func(e *history.Event) { e.Node = "node-1" })
	add(4*sec, history.FaultEnd, "", "", func(e *history.Event) { e.Node, e.Fault, e.FaultID = "node-1", "kubelet-crash", 1 })
	// web-1 is deleted: SIGTERM app, then proxy; proxy ignores SIGTERM.
	add(5*sec, history.PodDeleted, w1, "", func(e *history.Event) { e.Grace = 3 * sec })
	add(5*sec, history.ContainerStopRequested, w1, "app", func(e *history.Event) { e.Reason, e.Grace = "PodDeleted", 3*sec })
	add(5600*ms, history.ContainerExited, w1, "app", func(e *history.Event) { e.Code, e.Reason = 143, "Error" })
	add(5600*ms, history.ContainerStopRequested, w1, "proxy", func(e *history.Event) { e.Reason, e.Grace = "PodDeleted", 2400*ms })
	add(8*sec, history.ContainerKilled, w1, "proxy", nil)
	add(8*sec, history.ContainerExited, w1, "proxy", func(e *history.Event) { e.Code, e.Reason = 137, "Error" })
	add(8100*ms, history.PodRemoved, w1, "", nil)
	add(9*sec, history.RunEnd, "", "", func(e *history.Event) { e.Msg = "complete" })
	slices.SortStableFunc(ev, func(a, b history.Event) int {
		switch {
		case a.T < b.T:
			return -1
		case a.T > b.T:
			return 1
		}
		return 0
	})
	return ev
}

// loadHistory reads testdata/history.jsonl (rewriting it first with
// -update) and returns each pod's partition.
func loadHistory(t testing.TB) map[string][]history.Event {
	t.Helper()
	path := filepath.Join("testdata", "history.jsonl")
	if *update {
		var buf bytes.Buffer
		w := history.NewWriter(&buf)
		for _, e := range sampleHistory() {
			if err := w.Write(&e); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pods := map[string][]history.Event{}
	err = history.ForEachPod(history.NewReader(f), func(_ *history.Meta, pod string, events []history.Event) error {
		pods[pod] = slices.Clone(events)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pods
}

// excerpt returns the events of a pod between two kinds' first
// occurrences (inclusive), as the checker's excerpt would.
func excerpt(evs []history.Event, from, to int) []history.Event {
	return slices.Clone(evs[from : to+1])
}

func series(n int, f func(i int) float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

// sampleRun is the small committed input of the golden tests.
func sampleRun(t testing.TB) RunData {
	pods := loadHistory(t)
	w1, w3 := pods["default/web-1"], pods["default/web-3"]
	if len(w1) == 0 || len(w3) == 0 {
		t.Fatalf("history partitions missing: %d pods", len(pods))
	}
	iw3 := func(k history.Kind, c string) int {
		for i, e := range w3 {
			if e.Kind == k && e.Container == c {
				return i
			}
		}
		t.Fatalf("web-3 has no %s %s", k, c)
		return -1
	}
	return RunData{
		Scenario: "sidecar-basic",
		Policies: []string{"kep753", "none"},
		Roles:    map[string]string{"kep753": RoleJudged, "none": RoleBaseline},
		PolicyRuns: map[string]PolicyRun{"kep753": {Trials: 2, Pods: 20, ElapsedSeconds: 1.25,
			Faults: map[string]FaultTally{"oom-kill": {Applied: 3, NotApplied: 2, Reasons: []string{"container not running"}}, "kubelet-crash": {Applied: 1}}},
			"none": {Trials: 2, Pods: 20, ElapsedSeconds: 0.5, Faults: map[string]FaultTally{"oom-kill": {Applied: 5}}}},
		Meta: Meta{Seed: 42, Trials: 2, Backend: "sim", Version: "v0.1.0", ScenarioHash: "sha256:1f2e",
			StartUnixNano: 1780000000000000000, Pods: 40, Extra: map[string]string{"nodes": "2", "kubelet": "reference"}},
		Latencies: []Latency{
			// Deliberately out of order: normalize sorts.
			{Policy: "none", Metric: "pod_startup", Ms: stats.HistOf(series(20, func(i int) float64 { return 700 + float64((i*53)%20)*20 }))},
			{Policy: "kep753", Metric: "sidecar_gate", Ms: stats.HistOf(series(20, func(i int) float64 { return 30 + float64((i*7)%20)*1.5 }))},
			{Policy: "kep753", Metric: "pod_startup", FaultedExcluded: 1,
				Ms: stats.HistOf(series(20, func(i int) float64 { return 900 + float64((i*37)%20)*25 }))},
		},
		Invariants: []InvariantRow{
			{Policy: "kep753", ID: "T10", Rule: "grace period honoured", Level: "BEST-EFFORT", Checked: 20, BoundsExceeded: 1},
			{Policy: "kep753", ID: "S3", Rule: "mains start after every sidecar started", Level: "HARD", Checked: 20, Violations: 1},
			{Policy: "kep753", ID: "S1", Rule: "init containers run in order", Level: "HARD", Checked: 20},
			{Policy: "kep753", ID: "T3", Rule: "sidecars stop after mains", Level: "HARD", Checked: 20, Degradations: 2},
			{Policy: "none", ID: "S3", Rule: "mains start after every sidecar started", Level: "HARD", Checked: 20, Violations: 12},
			{Policy: "none", ID: "S1", Rule: "init containers run in order", Level: "HARD", Checked: 19, Unknown: 1},
		},
		Matrix: []MatrixCell{
			{Policy: "none", ID: "S3", Fault: "none", Violations: 12},
			{Policy: "kep753", ID: "T3", Fault: "kubelet-crash", Degradations: 2},
			{Policy: "kep753", ID: "S3", Fault: "none", Violations: 1},
			{Policy: "kep753", ID: "T10", Fault: "none", BoundsExceeded: 1},
		},
		Findings: []Finding{
			{Policy: "kep753", Trial: 1, Seed: 7, ID: "T3", Class: ClassDegradation, Pod: "default/web-7", Node: "node-2", T: 3 * sec,
				Msg: "sidecar proxy stopped before main app exited", Excuse: "kubelet-crash", Fault: "kubelet-crash", FaultID: 2, FaultT: 2 * sec},
			{Policy: "kep753", Trial: 0, Seed: 42, ID: "S3", Class: ClassViolation, Pod: "default/web-3", Node: "node-1", T: 320 * ms,
				Msg:     "main app started at 0.320s before sidecar proxy started (0.700s)",
				Excerpt: excerpt(w3, iw3(history.ContainerRunning, "proxy"), iw3(history.ContainerStarted, "proxy"))},
			{Policy: "kep753", Trial: 0, Seed: 42, ID: "T10", Class: ClassBound, Pod: "default/web-1", Node: "node-1", T: 8 * sec,
				Msg: "proxy SIGKILLed 3.000s after deletion | grace 3s", Fault: "kubelet-crash", FaultID: 1, FaultT: 2 * sec},
		},
		Verdicts: []Verdict{
			{Policy: "kep753", Criterion: "violation-rate", Status: StatusFail, Observed: 0.05, Bound: 0.2487, Threshold: 0.001,
				Message: "1 violation in 20 lifecycles: rate 5% > 0.1%"},
			{Policy: "kep753", Criterion: "pod-startup", Status: StatusPass, Observed: 1375, Bound: math.Inf(1), Threshold: 5000,
				Message: "p99 1375 ms ≤ 5000 ms", Warnings: []string{"need >= 368 samples for confidence interval at level 0.95"}},
			{Policy: "kep753", Criterion: "sidecar-jobs-complete", Status: StatusInsufficient, Observed: math.NaN(), Bound: math.NaN(),
				Threshold: 0.99, Message: "no Jobs with sidecars", MoreTrialsNeeded: 299},
		},
		Timelines: []Timeline{
			{Policy: "kep753", Pod: "default/web-3", Why: "S3 violation", Trial: 0, Seed: 42, Events: w3,
				Marks: []TimelineMark{{T: 320 * ms, ID: "S3", Class: ClassViolation}}},
			{Policy: "kep753", Pod: "default/web-1", Why: "T10 bound-exceeded", Trial: 0, Seed: 42, Events: w1,
				Marks: []TimelineMark{{T: 8 * sec, ID: "T10", Class: ClassBound}}},
		},
		Warnings: []string{"history.jsonl: 1 pod still live at the end of the run"},
		Groups: []GroupRate{
			{Policy: "kep753", Group: GroupAll, Pods: 20, ViolatingPods: 1},
			{Policy: "kep753", Group: "S", Pods: 20, ViolatingPods: 1},
			{Policy: "kep753", Group: "T", Pods: 20},
			{Policy: "none", Group: GroupAll, Pods: 20, ViolatingPods: 12},
			{Policy: "none", Group: "S", Pods: 20, ViolatingPods: 12},
			{Policy: "none", Group: "T", Pods: 20},
		},
		FaultWindows: []FaultWindow{
			{Policy: "kep753", Trial: 0, Fault: "kubelet-crash", ID: 1, Node: "node-1", Begin: 2 * sec, End: 4 * sec},
			{Policy: "none", Trial: 0, Fault: "kubelet-crash", ID: 1, Node: "node-1", Begin: 2 * sec, End: 4 * sec},
			{Policy: "kep753", Trial: 1, Fault: "kubelet-crash", ID: 2, Node: "node-2", Begin: 2 * sec, End: 5 * sec},
			{Policy: "kep753", Trial: 1, Fault: "container-gc", ID: 3, Node: "node-2", Begin: 6 * sec, End: 6 * sec, NotApplied: true},
		},
		FindingPoints: []FindingPoint{
			{Policy: "kep753", Trial: 0, ID: "S3", Class: ClassViolation, Node: "node-1", T: 320 * ms},
			{Policy: "kep753", Trial: 1, ID: "T3", Class: ClassDegradation, Node: "node-2", Fault: "kubelet-crash", T: 3 * sec},
			{Policy: "kep753", Trial: 0, ID: "T10", Class: ClassBound, Node: "node-1", T: 8 * sec},
			{Policy: "none", Trial: 0, ID: "S3", Class: ClassViolation, Node: "node-0", T: 400 * ms},
		},
		LatencyLimits: []LatencyLimit{{Metric: "pod_startup", Quantile: 0.99, Ms: 5000, Label: "criteria.podStartupP99"}},
		RateTargets:   []RateTarget{{Policy: "kep753", Name: "beta 0.1%", Rate: 1e-3, Needed: 2995}},
	}
}

// sampleSoak is sampleRun as a soak's checkpoint: progress and memory
// over time.
func sampleSoak(t testing.TB) RunData {
	d := sampleRun(t)
	d.Meta.Extra = map[string]string{"command": "soak"}
	d.State = &RunState{Command: "soak", Status: "running", Resumes: 0,
		RSS: []RSSPoint{{0, 40 << 20}, {300, 61 << 20}, {600, 63 << 20}, {900, 62 << 20}},
		Progress: []ProgressPoint{
			{ElapsedSeconds: 0, Scenario: "sidecar-basic", Policy: "kep753", Pods: 0},
			{ElapsedSeconds: 300, Scenario: "sidecar-basic", Policy: "kep753", Pods: 700},
			{ElapsedSeconds: 600, Scenario: "sidecar-basic", Policy: "kep753", Pods: 1400},
			{ElapsedSeconds: 900, Scenario: "sidecar-basic", Policy: "kep753", Pods: 2100, ViolatingPods: 0},
		}}
	d.RateTargets = []RateTarget{
		{Policy: "kep753", Name: "alpha 1%", Rate: 1e-2, Needed: 368},
		{Policy: "kep753", Name: "beta 0.1%", Rate: 1e-3, Needed: 3688},
		{Policy: "kep753", Name: "ga 0.01%", Rate: 1e-4, Needed: 36887},
	}
	return d
}

func render(t *testing.T, f func(*bytes.Buffer, RunData) error, d RunData) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := f(&buf, d); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestGolden(t *testing.T) {
	d := sampleRun(t)
	golden(t, "report.md.golden", render(t, func(b *bytes.Buffer, d RunData) error { return WriteMarkdown(b, d) }, d))
	golden(t, "summary.json.golden", render(t, func(b *bytes.Buffer, d RunData) error { return WriteSummaryJSON(b, d) }, d))
	golden(t, "junit.xml.golden", render(t, func(b *bytes.Buffer, d RunData) error { return WriteJUnit(b, d) }, d))
	files := PerfDataFiles(d)
	if len(files) != 2 {
		t.Fatalf("PerfData files: %d, want 2", len(files))
	}
	var buf bytes.Buffer
	for _, f := range files {
		buf.WriteString("== " + f.Name + "\n")
		if err := writeJSON(&buf, f.Data); err != nil {
			t.Fatal(err)
		}
	}
	golden(t, "perfdata.golden", buf.Bytes())
	if *outDir != "" {
		names, err := Write(*outDir, d)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %v into %s", names, *outDir)
	}
}

// TestDeterministic renders twice, and from shuffled input, and expects
// identical bytes for every file (HTML with its SVG figures included).
func TestDeterministic(t *testing.T) {
	d := sampleRun(t)
	shuffled := sampleRun(t)
	slices.Reverse(shuffled.Latencies)
	slices.Reverse(shuffled.Invariants)
	slices.Reverse(shuffled.Matrix)
	slices.Reverse(shuffled.Findings)
	slices.Reverse(shuffled.Timelines)
	a, b := t.TempDir(), t.TempDir()
	na, err := Write(a, d)
	if err != nil {
		t.Fatal(err)
	}
	nb, err := Write(b, shuffled)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(na, nb) {
		t.Fatalf("file lists differ: %v vs %v", na, nb)
	}
	want := []string{"report.md", "report.html", "junit.xml",
		"PodStartupLatency_sidecar-basic_kep753.json", "PodStartupLatency_sidecar-basic_none.json", "summary.json"}
	if !slices.Equal(na, want) {
		t.Errorf("files = %v, want %v", na, want)
	}
	for _, n := range na {
		x, _ := os.ReadFile(filepath.Join(a, n))
		y, _ := os.ReadFile(filepath.Join(b, n))
		if len(x) == 0 || !bytes.Equal(x, y) {
			t.Errorf("%s: not deterministic (len %d vs %d)", n, len(x), len(y))
		}
	}
	entries, _ := os.ReadDir(a)
	if len(entries) != len(na) {
		t.Errorf("run dir has %d entries, want %d (temporary files left?)", len(entries), len(na))
	}
}

func TestHTMLSelfContained(t *testing.T) {
	d := sampleRun(t)
	page := string(render(t, func(b *bytes.Buffer, d RunData) error { return WriteHTML(b, d) }, d))
	for _, bad := range []string{"<script", "<link", "<img", "<iframe", "@import", "url(", " src=", "href=", "<?xml"} {
		if strings.Contains(strings.ToLower(page), bad) {
			t.Errorf("report.html contains %q", bad)
		}
	}
	// The only URLs allowed are XML namespace names on <svg> elements.
	for _, m := range regexp.MustCompile(`https?://[^"'\s<>]*`).FindAllString(page, -1) {
		if m != "http://www.w3.org/2000/svg" && m != "http://www.w3.org/1999/xlink" {
			t.Errorf("report.html references %s", m)
		}
	}
	figs := regexp.MustCompile(`(?s)<figure class="fig".*?</figure>`).FindAllString(page, -1)
	if len(figs) != 6 {
		t.Errorf("%d figures, want 6 (forest, 2 latency, run timeline, 2 pod timelines)", len(figs))
	}
	for _, f := range figs {
		if !strings.Contains(f, "<svg") || strings.Count(f, "<svg") != strings.Count(f, "</svg>") {
			t.Errorf("figure without a complete SVG: %.200s", f)
		}
	}
	for _, want := range []string{"sidecar-basic", "Latency: pod_startup", "kep753 (n=20)", "none (n=20)",
		"S3", "kubelet-crash", "INSUFFICIENT DATA", "Pod default/web-3 · policy kep753 · trial 0 · seed 42 — S3 violation",
		"main app started at 0.320s before sidecar proxy started (0.700s)", "How to read this"} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	// Fonts are referenced by family name only, never embedded or fetched.
	if strings.Contains(page, "@font-face") {
		t.Errorf("report.html embeds a font")
	}
	if !strings.Contains(page, "font-family:Liberation Sans") {
		t.Errorf("SVG text does not name its font family")
	}
}

func TestBuildGantt(t *testing.T) {
	pods := loadHistory(t)
	g := BuildGantt(pods["default/web-1"])
	if g.Pod != "default/web-1" || g.T0 != 0 || g.End != 8100*ms {
		t.Fatalf("pod=%q t0=%d end=%d", g.Pod, g.T0, g.End)
	}
	var rows []string
	for _, r := range g.Rows {
		s := r.Role + ":" + r.Container
		for _, b := range r.Bars {
			s += " [" + fmtSec(b.From) + "→" + fmtSec(b.To) + " " + b.End + "]"
		}
		rows = append(rows, s)
	}
	want := []string{
		"init:setup [0.030s→0.250s exit 0 Completed]",
		"sidecar:proxy [0.260s→8.000s exit 137 Error]",
		"main:app [0.900s→5.600s exit 143 Error]",
	}
	if !slices.Equal(rows, want) {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
	count := map[string]int{}
	for _, m := range g.Marks {
		count[m.Kind]++
	}
	if count[MarkSIGTERM] != 2 || count[MarkSIGKILL] != 1 || count[MarkProbeFail] != 1 || count[MarkProbeOK] != 1 || count[MarkStarted] != 3 {
		t.Errorf("marks: %v", count)
	}
	lines := map[string]int{}
	for _, l := range g.Lines {
		lines[l.Kind]++
	}
	if lines[LineFault] != 3 || lines[LineDeleted] != 1 || lines[LineNode] != 2 {
		t.Errorf("lines: %v", lines)
	}
	// An open run ends at the end of the history.
	g3 := BuildGantt(pods["default/web-3"])
	for _, r := range g3.Rows {
		if r.Container == "app" && (len(r.Bars) != 1 || r.Bars[0].End != "open" || r.Bars[0].To != g3.End) {
			t.Errorf("web-3 app bars: %+v (end %d)", r.Bars, g3.End)
		}
	}
}

func TestJUnitParses(t *testing.T) {
	d := sampleRun(t)
	d.Meta.Partial = true
	out := render(t, func(b *bytes.Buffer, d RunData) error { return WriteJUnit(b, d) }, d)
	var doc junitSuites
	if err := xml.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	// run complete (partial: fails) + per policy "[trials]" + kep753's 4
	// invariants and 3 criteria; none is a baseline: no invariant cases,
	// its findings are properties.
	if doc.Tests != 10 || doc.Failures != 3 || doc.Skipped != 1 {
		t.Errorf("tests=%d failures=%d skipped=%d, want 10/3/1", doc.Tests, doc.Failures, doc.Skipped)
	}
	props := map[string]string{}
	for _, p := range doc.Suites[0].Properties {
		props[p.Name] = p.Value
	}
	if props["baseline.none.S3"] != "violations=12 degradations=0 boundsExceeded=0 checked=20" || props["role.none"] != "baseline" {
		t.Errorf("baseline findings are not properties: %v", props)
	}
	if doc.Suites[0].Time != "1.750" && doc.Time != "1.750" {
		// Meta.ElapsedSeconds is 0 in the sample; the policy cases carry
		// their trials' time.
	}
	for _, c := range doc.Suites[0].Cases {
		if c.Name == "[trials] kep753" && c.Time != "1.250" {
			t.Errorf("[trials] kep753 time %q, want 1.250", c.Time)
		}
		if strings.HasPrefix(c.Name, "[invariant] none") {
			t.Errorf("baseline policy has an invariant testcase %q", c.Name)
		}
	}
	var s3 *junitCase
	for i, c := range doc.Suites[0].Cases {
		if strings.HasPrefix(c.Name, "[invariant] kep753 S3") {
			s3 = &doc.Suites[0].Cases[i]
		}
	}
	if s3 == nil || s3.Failure == nil {
		t.Fatalf("no failing kep753 S3 case")
	}
	if !strings.Contains(s3.Failure.Message, "main app started at 0.320s before sidecar proxy started") ||
		!strings.Contains(s3.Failure.Body, "container.running proxy") {
		t.Errorf("S3 failure lacks the explanation: %+v", s3.Failure)
	}
}

func TestSummaryJSON(t *testing.T) {
	d := sampleRun(t)
	out := render(t, func(b *bytes.Buffer, d RunData) error { return WriteSummaryJSON(b, d) }, d)
	var s Summary
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		t.Fatal(err)
	}
	if s.SchemaVersion != 1 || s.Run.Start != "2026-05-28T20:26:40Z" || s.Run.Pods != 40 {
		t.Errorf("schemaVersion=%d start=%q pods=%d", s.SchemaVersion, s.Run.Start, s.Run.Pods)
	}
	// 20 samples cannot bound the p99 from above: hi is null.
	l := s.Latencies[0]
	if l.Policy != "kep753" || l.Metric != "pod_startup" || l.P99.Hi != nil || l.P99.Value == nil || *l.P99.Value != 1375 {
		t.Errorf("first latency: %+v", l)
	}
	// 0 of 20: Wilson upper 16.1%, Clopper–Pearson 16.8% (two-sided 95%).
	for _, r := range s.Invariants {
		if r.Policy == "kep753" && r.ID == "S1" {
			if math.Abs(r.WilsonUpper-0.1611) > 5e-4 || math.Abs(r.CPUpper-0.1684) > 5e-4 {
				t.Errorf("S1 bounds: wilson=%v cp=%v", r.WilsonUpper, r.CPUpper)
			}
		}
	}
	if s.Graduation.Overall != StatusFail {
		t.Errorf("overall = %q", s.Graduation.Overall)
	}
}

func TestEmptyRun(t *testing.T) {
	d := RunData{Scenario: "empty"}
	dir := t.TempDir()
	names, err := Write(dir, d)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, []string{"report.md", "report.html", "junit.xml", "summary.json"}) {
		t.Errorf("files = %v", names)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "summary.json"))
	if !bytes.Contains(b, []byte(`"latencies": []`)) || !bytes.Contains(b, []byte(`"policies": []`)) {
		t.Errorf("empty lists must be [] not null:\n%s", b)
	}
}

func TestNaturalCompare(t *testing.T) {
	ids := []string{"T10", "S3", "T2", "S10", "S1", "F1", "T1"}
	slices.SortFunc(ids, naturalCompare)
	if want := []string{"F1", "S1", "S3", "S10", "T1", "T2", "T10"}; !slices.Equal(ids, want) {
		t.Errorf("got %v, want %v", ids, want)
	}
}

func TestCCDFIndicesKeepTheTail(t *testing.T) {
	for _, n := range []int{1, 10, maxCCDFPoints + maxTailPoints, 100_000} {
		idx := ccdfIndices(n)
		if idx[0] != 0 || idx[len(idx)-1] != n-1 || len(idx) > maxCCDFPoints+maxTailPoints+1 {
			t.Errorf("n=%d: %d indices from %d to %d", n, len(idx), idx[0], idx[len(idx)-1])
		}
		// The tail: every one of the last maxTailPoints ranks.
		if tail := min(n, maxTailPoints); !slices.Equal(idx[len(idx)-tail:], series2(n-tail, n)) {
			t.Errorf("n=%d: tail thinned", n)
		}
	}
}

func series2(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// TestEdgeCases renders degenerate inputs without errors: one sample, all
// equal samples, NaN samples, a pod with no container events, a container
// that exits the instant it runs.
func TestEdgeCases(t *testing.T) {
	d := RunData{
		Scenario: "edge",
		Latencies: []Latency{
			{Policy: "a", Metric: "pod_startup", Ms: stats.HistOf([]float64{5})},
			{Policy: "b", Metric: "pod_startup", Ms: stats.HistOf([]float64{7, 7, 7, 7})},
			{Policy: "c", Metric: "pod_startup", Ms: stats.HistOf([]float64{math.NaN()})},
			{Policy: "d", Metric: "custom_metric", N: 0},
		},
		Verdicts: []Verdict{{Criterion: "x", Status: StatusPass, Observed: math.Inf(1), Bound: math.NaN(), Threshold: math.NaN()}},
		Timelines: []Timeline{
			{Pod: "ns/empty", Events: []history.Event{{T: 5, Kind: history.PodCreated, Pod: "ns/empty"}}},
			{Pod: "ns/flash", Events: []history.Event{
				{T: 0, Kind: history.PodCreated, Pod: "ns/flash"},
				{T: 10, Kind: history.ContainerRunning, Pod: "ns/flash", Container: "c"},
				{T: 10, Kind: history.ContainerExited, Pod: "ns/flash", Container: "c", Code: 1},
				{T: 20, Kind: history.ContainerRunning, Pod: "ns/flash", Container: "c", Attempt: 1},
				{T: 30, Kind: history.ContainerRunning, Pod: "ns/flash", Container: "c", Attempt: 2},
				{T: 40, Kind: history.SandboxLost, Pod: "ns/flash"},
			}},
		},
	}
	if _, err := Write(t.TempDir(), d); err != nil {
		t.Fatal(err)
	}
	g := BuildGantt(d.Timelines[1].Events)
	if len(g.Rows) != 1 || len(g.Rows[0].Bars) != 3 || g.Rows[0].Bars[1].End != "replaced" || g.Rows[0].Bars[2].End != "sandbox lost" {
		t.Errorf("flash gantt: %+v", g.Rows)
	}
	var buf bytes.Buffer
	if err := WriteSummaryJSON(&buf, d); err != nil {
		t.Fatal(err)
	}
	if !json.Valid(buf.Bytes()) {
		t.Errorf("invalid JSON:\n%s", buf.Bytes())
	}
}

// TestSummaryRoundTrip reads summary.json back and renders it again:
// summary.json and report.md come out identical (the markdown does not
// use samples or timelines).
func TestSummaryRoundTrip(t *testing.T) {
	d := sampleRun(t)
	// JSON has one null for "unbounded" and "unknown": a verdict bound of
	// +Inf reads back as unknown (NaN).
	d.Verdicts[1].Bound = math.NaN()
	var js, md bytes.Buffer
	if err := WriteSummaryJSON(&js, d); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, d); err != nil {
		t.Fatal(err)
	}
	s, err := ReadSummaryJSON(bytes.NewReader(js.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	back := s.RunData()
	var js2, md2 bytes.Buffer
	if err := WriteSummaryJSON(&js2, back); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md2, back); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(js.Bytes(), js2.Bytes()) {
		t.Errorf("summary.json changed on a round trip:\n%s", js2.Bytes())
	}
	if !bytes.Equal(md.Bytes(), md2.Bytes()) {
		t.Errorf("report.md changed on a round trip:\n%s", md2.Bytes())
	}
	if _, err := ReadSummaryJSON(strings.NewReader(`{"schemaVersion": 2}`)); err == nil {
		t.Errorf("schemaVersion 2 accepted")
	}
}

// TestJUnitRoles: junit.xml is green exactly when the run is. A judged
// policy's violation fails; a baseline's never does; a bug replica fails
// only when the checker did not catch it.
func TestJUnitRoles(t *testing.T) {
	inv := func(pol string, v int) InvariantRow {
		return InvariantRow{Policy: pol, ID: "INV-S5", Rule: "mains wait for sidecars", Level: "HARD", Checked: 10, Violations: v}
	}
	caught := func(pol, status string) Verdict {
		return Verdict{Policy: pol, Criterion: "caught", Status: status, Message: "m", Observed: math.NaN(), Bound: math.NaN(), Threshold: 1}
	}
	for _, tc := range []struct {
		name     string
		role     string
		inv      InvariantRow
		verdicts []Verdict
		failures int
		cases    []string
	}{
		{"judged, clean", RoleJudged, inv("p", 0), nil, 0, []string{"[run] complete", "[trials] p", "[invariant] p INV-S5"}},
		{"judged, violated", RoleJudged, inv("p", 3), nil, 1, []string{"[run] complete", "[trials] p", "[invariant] p INV-S5"}},
		{"baseline, violated", RoleBaseline, inv("p", 3), nil, 0, []string{"[run] complete", "[trials] p"}},
		{"bug replica caught", RoleBugReplica, inv("p", 3), []Verdict{caught("p", StatusPass)}, 0, []string{"[run] complete", "[trials] p", "[bug-replica] p caught"}},
		{"bug replica missed", RoleBugReplica, inv("p", 0), []Verdict{caught("p", StatusFail)}, 1, []string{"[run] complete", "[trials] p", "[bug-replica] p caught"}},
		// A criterion the scenario cannot be asked is skipped, not passed.
		{"judged, not applicable", RoleJudged, inv("p", 0), []Verdict{{Policy: "p", Criterion: "alpha/sidecar-jobs-complete", Status: StatusNotApplicable, Message: "no Job",
			Observed: math.NaN(), Bound: math.NaN(), Threshold: 0.99}}, 0, []string{"[run] complete", "[trials] p", "[invariant] p INV-S5", "[criterion] p alpha/sidecar-jobs-complete"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := RunData{Scenario: "s", Policies: []string{"p"}, Roles: map[string]string{"p": tc.role}, Invariants: []InvariantRow{tc.inv}, Verdicts: tc.verdicts}
			out := render(t, func(b *bytes.Buffer, d RunData) error { return WriteJUnit(b, d) }, d)
			var doc junitSuites
			if err := xml.Unmarshal(out, &doc); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, c := range doc.Suites[0].Cases {
				names = append(names, c.Name)
			}
			if doc.Failures != tc.failures || !slices.Equal(names, tc.cases) {
				t.Errorf("failures %d (want %d), cases %q (want %q)", doc.Failures, tc.failures, names, tc.cases)
			}
			for _, v := range tc.verdicts {
				if skipped := bytes.Contains(out, []byte("<skipped message=\"NOT APPLICABLE: ")); skipped != (v.Status == StatusNotApplicable) {
					t.Errorf("%s: skipped as not applicable: %v\n%s", v.Status, skipped, out)
				}
			}
		})
	}
}

// TestRSSFigure: a soak's report plots its RSS samples with the slope in
// the caption, judged on the second half: a warm-up followed by a flat
// line is flat, a steady climb is not.
func TestRSSFigure(t *testing.T) {
	for _, tc := range []struct {
		name string
		mib  func(i int) float64
		want string
	}{
		{"warm-up then flat", func(i int) float64 { return min(60+float64(i)*8, 100) + float64(i%3) }, "flat within noise"},
		{"leak", func(i int) float64 { return 60 + float64(i)*2 + float64(i%3) }, "not flat"},
	} {
		st := &RunState{Status: "complete"}
		for i := range 30 {
			st.RSS = append(st.RSS, RSSPoint{ElapsedSeconds: float64(60 * i), Bytes: int64(tc.mib(i) * (1 << 20))})
		}
		fig, ok, err := rssFigure(RunData{Scenario: "soak", State: st})
		if err != nil || !ok {
			t.Fatalf("%s: %v %v", tc.name, ok, err)
		}
		for _, want := range []string{"60 MiB at the start", "(30 samples)", "second half (dashed, from 15 min)", tc.want} {
			if !strings.Contains(fig.Caption, want) {
				t.Errorf("%s: caption lacks %q: %s", tc.name, want, fig.Caption)
			}
		}
	}
}

// TestReportsNameRunDirectoryFiles: where report.md, report.html and the
// run timeline's caption send the reader for the findings they leave out,
// they name files a run directory has. They used to name findings.jsonl
// and history.jsonl, which no run directory has (they are .jsonl.zst).
func TestReportsNameRunDirectoryFiles(t *testing.T) {
	d := sampleRun(t)
	f := d.Findings[0]
	for i := range MaxFindings + 3 {
		f.Pod = fmt.Sprintf("default/extra-%d", i)
		d.Findings = append(d.Findings, f)
	}
	d.FaultWindows = []FaultWindow{{Policy: "kep753", Fault: "kubelet-crash", ID: 1, Node: "node-0", Begin: 1 * sec, End: 2 * sec}}
	d.Dropped = TimelineDropped{FaultWindows: 1, FindingPoints: 2}
	d.Warnings = nil // the sample's warnings are test data, not sidebench's text
	md := string(render(t, func(b *bytes.Buffer, d RunData) error { return WriteMarkdown(b, d) }, d))
	html := string(render(t, func(b *bytes.Buffer, d RunData) error { return WriteHTML(b, d) }, d))
	if !strings.Contains(md, "more findings") || !strings.Contains(html, "more findings") || !strings.Contains(html, "are left out") {
		t.Fatal("the sentences under test are not rendered")
	}
	have := []string{rundir.FileHistory, rundir.FilePods, rundir.FileFindings, rundir.FileTrials, rundir.FileJournal}
	named := regexp.MustCompile(`[a-z]+\.jsonl(\.zst)?\b`)
	for name, text := range map[string]string{"report.md": md, "report.html": html} {
		for _, file := range named.FindAllString(text, -1) {
			if !slices.Contains(have, file) {
				t.Errorf("%s names %s; a run directory has %v", name, file, have)
			}
		}
	}
}

// TestFaultsInjected: report.md and report.html show every policy's fault
// tallies by kind, the firings NOT applied with their reasons (they were
// only in summary.json and the run's stderr); a run without faults has no
// such section.
func TestFaultsInjected(t *testing.T) {
	d := sampleRun(t)
	md := string(render(t, func(b *bytes.Buffer, d RunData) error { return WriteMarkdown(b, d) }, d))
	html := string(render(t, func(b *bytes.Buffer, d RunData) error { return WriteHTML(b, d) }, d))
	for _, want := range []string{
		"## Faults injected\n",
		"| kubelet-crash | kep753 | 1 | 0 |  |\n| oom-kill | kep753 | 3 | **2** | container not running |\n| oom-kill | none | 5 | 0 |  |\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	for _, want := range []string{
		"<h2>Faults injected</h2>",
		`<tr><td>oom-kill</td><td>kep753</td><td class="num">3</td><td class="num insufficient">2</td><td>container not running</td></tr>`,
		`<tr><td>oom-kill</td><td>none</td><td class="num">5</td><td class="num">0</td><td></td></tr>`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	for p, pr := range d.PolicyRuns {
		pr.Faults = nil
		d.PolicyRuns[p] = pr
	}
	md = string(render(t, func(b *bytes.Buffer, d RunData) error { return WriteMarkdown(b, d) }, d))
	html = string(render(t, func(b *bytes.Buffer, d RunData) error { return WriteHTML(b, d) }, d))
	if strings.Contains(md, "Faults injected") || strings.Contains(html, "Faults injected") {
		t.Error("a run without fault tallies has a Faults injected section")
	}
}

// TestOverallSkipsNotApplicable: the report's overall verdict, as
// graduation.Overall, counts NOT APPLICABLE criteria for nothing, and
// only such criteria are INSUFFICIENT DATA (nothing was judged).
func TestOverallSkipsNotApplicable(t *testing.T) {
	na := Verdict{Policy: "p", Criterion: "alpha/sidecar-overhead", Status: StatusNotApplicable, Observed: math.NaN(), Bound: math.NaN()}
	pass := Verdict{Policy: "p", Criterion: "maxViolations", Status: StatusPass, Observed: 0, Bound: 0}
	for _, tc := range []struct {
		vs   []Verdict
		want string
	}{
		{[]Verdict{pass, na}, StatusPass},
		{[]Verdict{na}, StatusInsufficient},
		{nil, ""},
	} {
		if got := overall(tc.vs); got != tc.want {
			t.Errorf("overall(%v) = %q, want %q", tc.vs, got, tc.want)
		}
	}
}
