package metrics

import (
	"bytes"
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/sidebench/sidebench/harness/history"
)

const ms = int64(1e6)

// h builds a pod history by hand. Times are in milliseconds.
type h struct {
	pod    string
	node   string
	events []history.Event
}

func newH(pod string) *h { return &h{pod: pod, node: "node-1"} }

func (b *h) add(tMs int64, k history.Kind, f func(e *history.Event)) *h {
	e := history.Event{T: tMs * ms, Kind: k, Pod: b.pod}
	if k != history.PodCreated {
		e.Node = b.node
	}
	if f != nil {
		f(&e)
	}
	b.events = append(b.events, e)
	return b
}

func (b *h) created(t int64, spec *history.PodSpec) *h {
	return b.add(t, history.PodCreated, func(e *history.Event) { e.Spec = spec })
}
func (b *h) scheduled(t int64) *h { return b.add(t, history.PodScheduled, nil) }
func (b *h) running(t int64, c string, attempt uint32) *h {
	return b.add(t, history.ContainerRunning, func(e *history.Event) { e.Container, e.Attempt = c, attempt })
}
func (b *h) started(t int64, c string, v bool) *h {
	return b.add(t, history.ContainerStarted, func(e *history.Event) { e.Container, e.Value = c, v })
}
func (b *h) exited(t int64, c string, code int32) *h {
	return b.add(t, history.ContainerExited, func(e *history.Event) { e.Container, e.Code = c, code })
}
func (b *h) cond(t int64, cond string, v bool) *h {
	return b.add(t, history.PodCondition, func(e *history.Event) { e.Cond, e.Value = cond, v })
}
func (b *h) phase(t int64, p string) *h {
	return b.add(t, history.PodPhase, func(e *history.Event) { e.Phase = p })
}
func (b *h) deleted(t int64) *h { return b.add(t, history.PodDeleted, nil) }
func (b *h) removed(t int64) *h { return b.add(t, history.PodRemoved, nil) }
func (b *h) raw(e history.Event) *h {
	e.T *= ms
	b.events = append(b.events, e)
	return b
}

func sidecarSpec(restart string) *history.PodSpec {
	return &history.PodSpec{
		Init: []history.ContainerSpec{
			{Name: "setup", Role: "init"},
			{Name: "proxy", Role: "sidecar", Startup: true},
		},
		Main:          []history.ContainerSpec{{Name: "app", Role: "main"}},
		RestartPolicy: restart,
		Workload:      "web",
	}
}

var meta = &history.Meta{Scenario: "basic", Policy: "kep753", Seed: 42, Trial: 3, Backend: "sim"}

func TestFromEvents(t *testing.T) {
	tests := []struct {
		name     string
		events   []history.Event
		want     map[Metric]float64
		restarts Restarts
		phase    string
		faulted  bool
		faults   []string
		notes    []string // substrings
		check    func(t *testing.T, r Record)
	}{
		{
			name: "service pod with sidecar, deleted",
			events: newH("ns/web-0").created(0, sidecarSpec("Always")).scheduled(5).phase(7, "Pending").
				running(100, "setup", 0).started(100, "setup", true).exited(200, "setup", 0).
				running(300, "proxy", 0).started(300, "proxy", false).started(450, "proxy", true).
				cond(460, "Initialized", true).
				running(500, "app", 0).started(520, "app", true).phase(520, "Running").
				cond(700, "Ready", true).
				deleted(1000).exited(1100, "app", 0).exited(1300, "proxy", 137).removed(1400).events,
			want: map[Metric]float64{
				PodStartup:          520, // max(proxy 450, app 520); setup excluded
				CreateToInitialized: 460,
				CreateToReady:       700,
				SidecarGate:         50,  // proxy started 450 → app running 500
				DeletionToExited:    300, // deleted 1000 → proxy exited 1300
			},
			phase: "Running",
			check: func(t *testing.T, r Record) {
				if r.Scenario != "basic" || r.Policy != "kep753" || r.Seed != 42 || r.Trial != 3 || r.Backend != "sim" ||
					r.Workload != "web" || r.Node != "node-1" || r.Job || !r.Deleted || !r.Removed ||
					r.Inits != 1 || r.Sidecars != 1 || r.Mains != 1 || r.RestartPolicy != "Always" {
					t.Errorf("identity fields: %+v", r)
				}
			},
		},
		{
			name: "job with sidecar that restarts during init",
			events: newH("ns/job-0").created(0, sidecarSpec("Never")).scheduled(1).
				running(10, "setup", 0).exited(20, "setup", 0).
				running(30, "proxy", 0).started(40, "proxy", true).exited(50, "proxy", 1).started(50, "proxy", false).
				running(80, "proxy", 1).started(90, "proxy", true).
				running(100, "app", 0).started(100, "app", true).
				exited(400, "app", 0).exited(420, "proxy", 0).phase(430, "Succeeded").removed(500).events,
			want: map[Metric]float64{
				PodStartup:    100,
				SidecarGate:   10, // latest sidecar start before the main ran: 90 → 100
				JobCompletion: 430,
			},
			restarts: Restarts{Sidecar: 1},
			phase:    "Succeeded",
			check: func(t *testing.T, r Record) {
				if !r.Job || !r.Succeeded() || !r.HasSidecars() {
					t.Errorf("job flags: %+v", r)
				}
			},
		},
		{
			name: "backend without started flags falls back to running",
			events: newH("ns/p").created(10, &history.PodSpec{Main: []history.ContainerSpec{{Name: "a", Role: "main"}, {Name: "b", Role: "main"}}, RestartPolicy: "OnFailure"}).
				running(30, "a", 0).running(60, "b", 0).exited(90, "a", 1).running(120, "a", 1).
				phase(200, "Failed").events,
			want:     map[Metric]float64{PodStartup: 50, JobCompletion: 190},
			restarts: Restarts{Main: 1},
			phase:    "Failed",
		},
		{
			name: "policy none: main before sidecar, no gate",
			events: newH("ns/none").created(0, &history.PodSpec{
				Main: []history.ContainerSpec{{Name: "proxy", Role: "sidecar"}, {Name: "app", Role: "main"}}, RestartPolicy: "Always"}).
				running(10, "app", 0).started(10, "app", true).running(30, "proxy", 0).started(35, "proxy", true).events,
			want:  map[Metric]float64{PodStartup: 35},
			notes: []string{"sidecar_gate: a main container ran before"},
		},
		{
			name: "a container never starts: no pod_startup",
			events: newH("ns/stuck").created(0, sidecarSpec("Always")).
				running(10, "setup", 0).exited(20, "setup", 0).running(30, "proxy", 0).started(30, "proxy", false).events,
			want: map[Metric]float64{},
		},
		{
			name: "node fault during life marks faulted; not-applied and other pods do not",
			events: newH("ns/f").created(0, sidecarSpec("Always")).scheduled(1).
				raw(history.Event{T: 5, Kind: history.FaultBegin, Node: "node-1", Fault: "oom", FaultID: 4}).
				raw(history.Event{T: 5, Kind: history.FaultNotApplied, Node: "node-1", Fault: "oom", FaultID: 4}).
				raw(history.Event{T: 5, Kind: history.FaultEnd, Node: "node-1", Fault: "oom", FaultID: 4}).
				raw(history.Event{T: 6, Kind: history.FaultEffect, Pod: "ns/other", Fault: "other-pod"}).
				raw(history.Event{T: 7, Kind: history.FaultBegin, Node: "node-1", Fault: "kubelet-crash", FaultID: 1}).
				raw(history.Event{T: 8, Kind: history.KubeletDown, Node: "node-1"}).
				raw(history.Event{T: 9, Kind: history.FaultEffect, Node: "node-1", Fault: "kubelet-crash", FaultID: 1}).
				raw(history.Event{T: 9, Kind: history.FaultBegin, Fault: "apiserver-down", FaultID: 2}). // never takes effect
				raw(history.Event{T: 10, Kind: history.FaultEnd, Fault: "partition", FaultID: 3}).       // began before the pod's history
				events,
			want:    map[Metric]float64{},
			faulted: true,
			faults:  []string{"kubelet-crash", "partition"},
		},
		{
			name: "a graceful node shutdown of the pod's node is the node-shutdown fault's effect",
			events: newH("ns/s").created(0, sidecarSpec("Always")).scheduled(1).
				raw(history.Event{T: 5, Kind: history.FaultBegin, Node: "node-1", Fault: "node-shutdown", FaultID: 7}).
				raw(history.Event{T: 5, Kind: history.NodeShutdown, Node: "node-1", Grace: 20e9}).events,
			want:    map[Metric]float64{},
			faulted: true,
			faults:  []string{"node-shutdown"},
		},
		{
			name: "an image change the pod was removed before it ran is still the image-change fault's effect",
			events: newH("ns/i").created(0, sidecarSpec("Always")).scheduled(1).
				raw(history.Event{T: 5, Kind: history.FaultBegin, Pod: "ns/i", Node: "node-1", Container: "proxy", Fault: "image-change", FaultID: 8}).
				raw(history.Event{T: 5, Kind: history.ContainerImageChanged, Pod: "ns/i", Node: "node-1", Container: "proxy", Msg: "envoy:2"}).
				raw(history.Event{T: 9, Kind: history.FaultNotApplied, Pod: "ns/i", Node: "node-1", Fault: "image-change", FaultID: 8}).
				raw(history.Event{T: 9, Kind: history.FaultEnd, Pod: "ns/i", Node: "node-1", Fault: "image-change", FaultID: 8}).events,
			want:    map[Metric]float64{},
			faulted: true,
			faults:  []string{"image-change"},
		},
		{
			name: "fault begun but not applied: not faulted",
			events: newH("ns/nf").created(0, sidecarSpec("Always")).
				raw(history.Event{T: 5, Kind: history.FaultBegin, Fault: "apiserver-down", FaultID: 2}).
				raw(history.Event{T: 5, Kind: history.FaultNotApplied, Fault: "apiserver-down", FaultID: 2}).events,
			want: map[Metric]float64{},
		},
		{
			name: "sandbox lost after deletion ends running containers",
			events: newH("ns/lost").created(0, &history.PodSpec{Main: []history.ContainerSpec{{Name: "app", Role: "main"}}, RestartPolicy: "Always"}).
				running(10, "app", 0).started(10, "app", true).deleted(100).
				raw(history.Event{T: 150, Kind: history.SandboxLost, Pod: "ns/lost", Node: "node-1"}).events,
			want: map[Metric]float64{PodStartup: 10, DeletionToExited: 50},
		},
		{
			name: "sidecar restarted during termination counts until its last exit",
			events: newH("ns/term").created(0, sidecarSpec("Always")).
				running(10, "setup", 0).exited(20, "setup", 0).running(30, "proxy", 0).started(30, "proxy", true).
				running(40, "app", 0).started(40, "app", true).deleted(100).
				exited(120, "proxy", 1).running(130, "proxy", 1).exited(200, "app", 0).exited(260, "proxy", 0).events,
			want:     map[Metric]float64{PodStartup: 40, SidecarGate: 10, DeletionToExited: 160},
			restarts: Restarts{Sidecar: 1},
		},
		{
			name: "container still running at history end: no deletion metric",
			events: newH("ns/slow").created(0, &history.PodSpec{Main: []history.ContainerSpec{{Name: "app", Role: "main"}}, RestartPolicy: "Always"}).
				running(10, "app", 0).deleted(100).events,
			want: map[Metric]float64{PodStartup: 10},
		},
		{
			name:   "no pod.created",
			events: newH("ns/x").running(10, "app", 0).started(10, "app", true).cond(20, "Ready", true).events,
			want:   map[Metric]float64{},
			notes:  []string{"no pod.created event"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var pod string
			for _, e := range tt.events {
				if e.Pod != "" {
					pod = e.Pod
					break
				}
			}
			r := FromEvents(meta, pod, tt.events)
			if !maps.Equal(r.LatenciesMs, tt.want) {
				t.Errorf("latencies = %v, want %v", r.LatenciesMs, tt.want)
			}
			if r.Restarts != tt.restarts {
				t.Errorf("restarts = %+v, want %+v", r.Restarts, tt.restarts)
			}
			if r.Phase != tt.phase {
				t.Errorf("phase = %q, want %q", r.Phase, tt.phase)
			}
			if r.Faulted != tt.faulted || !slices.Equal(r.Faults, tt.faults) {
				t.Errorf("faulted = %v %v, want %v %v", r.Faulted, r.Faults, tt.faulted, tt.faults)
			}
			for _, n := range tt.notes {
				if !slices.ContainsFunc(r.Notes, func(s string) bool { return strings.Contains(s, n) }) {
					t.Errorf("notes %q lack %q", r.Notes, n)
				}
			}
			if tt.check != nil {
				tt.check(t, r)
			}
		})
	}
}

func TestFromEventsIgnoresOtherPodsAndNilMeta(t *testing.T) {
	ev := newH("ns/a").created(0, &history.PodSpec{Main: []history.ContainerSpec{{Name: "app", Role: "main"}}}).events
	ev = append(ev, newH("ns/b").running(5, "app", 0).events...)
	ev = append(ev, newH("ns/a").running(7, "app", 0).events...)
	r := FromEvents(nil, "ns/a", ev)
	if got, ok := r.Latency(PodStartup); !ok || got != 7 || r.Scenario != "" {
		t.Errorf("record = %+v", r)
	}
}

func TestRecordsJSONL(t *testing.T) {
	recs := []Record{
		FromEvents(meta, "ns/web-0", newH("ns/web-0").created(0, sidecarSpec("Never")).running(1, "proxy", 0).
			started(2, "proxy", true).running(3, "app", 0).phase(9, "Succeeded").events),
		{Pod: "bare"}, // nil LatenciesMs is written as {}
	}
	var buf bytes.Buffer
	if err := WriteRecords(&buf, recs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"latenciesMs":{`) || !strings.Contains(lines[1], `"latenciesMs":{}`) {
		t.Fatalf("jsonl:\n%s", buf.String())
	}
	// Field names are part of the contract.
	for _, f := range []string{`"scenario":"basic"`, `"policy":"kep753"`, `"pod":"ns/web-0"`, `"job":true`, `"pod_startup":3`, `"job_completion":9`, `"restarts":{"init":0,"sidecar":0,"main":0}`} {
		if !strings.Contains(lines[0], f) {
			t.Errorf("line 0 lacks %s: %s", f, lines[0])
		}
	}
	got, err := ReadRecords(strings.NewReader(buf.String() + "\n\n"))
	if err != nil {
		t.Fatal(err)
	}
	recs[1].LatenciesMs = map[Metric]float64{}
	a, _ := json.Marshal(recs)
	b, _ := json.Marshal(got)
	if !bytes.Equal(a, b) {
		t.Errorf("round trip:\n%s\n%s", a, b)
	}
	if _, err := ReadRecords(strings.NewReader(`{"pod":"x"}` + "\n" + `{"pod":"y","bogus":1}`)); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("unknown field: err = %v", err)
	}
}

func TestAggregate(t *testing.T) {
	var recs []Record
	for i := 1; i <= 500; i++ {
		recs = append(recs, Record{Scenario: "s", Policy: "kep753", Sidecars: 1, Job: true, Phase: "Succeeded",
			LatenciesMs: map[Metric]float64{PodStartup: float64(i), SidecarGate: 1}})
	}
	// A faulted pod with a huge latency: excluded by default.
	recs = append(recs, Record{Scenario: "s", Policy: "kep753", Faulted: true, Job: true, Phase: "Failed",
		LatenciesMs: map[Metric]float64{PodStartup: 1e6}, Restarts: Restarts{Main: 2}})
	for i := 1; i <= 10; i++ {
		recs = append(recs, Record{Scenario: "s", Policy: "none", LatenciesMs: map[Metric]float64{PodStartup: float64(10 * i)}})
	}

	res := Aggregate(recs, Options{})
	if len(res.Latencies) != 3 {
		t.Fatalf("summaries = %+v", res.Latencies)
	}
	ps := res.Latencies[0]
	if ps.Key != (Key{"s", "kep753", PodStartup}) || ps.N != 500 || ps.FaultedExcluded != 1 ||
		ps.P50.Center != 250 || ps.P90.Center != 450 || ps.P99.Center != 495 ||
		math.IsInf(ps.P99.Hi, 1) || len(ps.P99.Warnings) != 0 || ps.P50.Confidence != 0.95 {
		t.Errorf("kep753 pod_startup = %+v", ps)
	}
	if res.Latencies[1].Metric != SidecarGate {
		t.Errorf("metric order: %+v", res.Latencies[1].Key)
	}
	none := res.Latencies[2]
	if none.Policy != "none" || none.N != 10 || none.P50.Center != 50 || !math.IsInf(none.P99.Hi, 1) ||
		!slices.Contains(none.P99.Warnings, "need >= 368 samples for confidence interval at level 0.95") {
		t.Errorf("none pod_startup = %+v", none)
	}
	if len(res.Pods) != 2 {
		t.Fatalf("pods = %+v", res.Pods)
	}
	pc := res.Pods[0]
	want := PodCounts{RunKey: RunKey{"s", "kep753"}, Pods: 501, Faulted: 1, Jobs: 501, JobsFinished: 501, JobsSucceeded: 500,
		SidecarJobs: 500, SidecarJobsFinished: 500, SidecarJobsSucceeded: 500, Restarts: Restarts{Main: 2}}
	if pc != want {
		t.Errorf("counts = %+v, want %+v", pc, want)
	}

	inc := Aggregate(recs, Options{IncludeFaulted: true, Confidence: 0.9})
	if p := inc.Latencies[0]; p.N != 501 || p.FaultedExcluded != 0 || p.P99.Confidence != 0.9 {
		t.Errorf("IncludeFaulted: %+v", p)
	}
	if _, err := json.Marshal(res); err != nil {
		t.Errorf("Result must be JSON-serialisable: %v", err)
	}
}

func BenchmarkFromEvents(b *testing.B) {
	ev := newH("ns/web-0").created(0, sidecarSpec("Always")).scheduled(5).phase(7, "Pending").
		running(100, "setup", 0).started(100, "setup", true).exited(200, "setup", 0).
		running(300, "proxy", 0).started(300, "proxy", false).started(450, "proxy", true).
		cond(460, "Initialized", true).running(500, "app", 0).started(520, "app", true).phase(520, "Running").
		cond(700, "Ready", true).deleted(1000).exited(1100, "app", 0).exited(1300, "proxy", 137).removed(1400).events
	for b.Loop() {
		FromEvents(meta, "ns/web-0", ev)
	}
}
