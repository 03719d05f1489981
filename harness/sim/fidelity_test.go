package sim

import (
	"context"
	"testing"
	"time"

	"github.com/sidebench/sidebench/harness/behavior"
	"github.com/sidebench/sidebench/harness/check"
	"github.com/sidebench/sidebench/harness/faults"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/reference-impl/api"
)

// Issue 16 A2: when the last container of a terminating pod exits while
// its preStop hook still runs, the hook ends with it (docs/sim.md) and
// the history says so, even though the exit finishes the pod and releases
// its kubelet machine.
func TestPreStopEndsWithTheLastContainer(t *testing.T) {
	spec := api.PodSpec{
		Main:                   []api.Container{{Name: "app", Image: "app:v1", Role: api.RoleMain, PreStop: true}},
		RestartPolicy:          api.RestartAlways,
		TerminationGracePeriod: 3 * time.Second,
	}
	app := behavior.Default()
	app.PreStop = behavior.Fixed(time.Minute) // outlives the 3 s budget
	app.TermHandling = behavior.NeverDist()   // waits for SIGKILL
	cfg := &Config{
		Scenario: "prestop",
		Cluster:  Cluster{Nodes: 1, PodsPerNode: 1},
		Workloads: []Workload{{Name: "web", Spec: spec, Behavior: []ContainerBehavior{{Container: "app", Behavior: app}},
			Count: 1, Lifetime: behavior.Fixed(10 * time.Second)}},
	}
	s, _ := runMem(t, cfg, 1)
	l := evs(s.evs)
	begins, ends := l.kind(history.ContainerPreStopBegin), l.kind(history.ContainerPreStopEnd)
	if len(begins) != 1 {
		t.Fatalf("%d prestop-begin events, want 1", len(begins))
	}
	if len(ends) != 1 || ends[0].Attempt != begins[0].Attempt {
		t.Fatalf("prestop-begin without its prestop-end: begins %v ends %v\n%s", begins, ends, dump(l))
	}
	if ex := l.kind(history.ContainerExited).first(); ex == nil || ends[0].T != ex.T {
		t.Errorf("the hook should end with its container's exit: exit %v, end %v", ex, ends[0])
	}
}

// Issue 16 A10: an image change during termination reaches the kubelet
// (the API server accepts spec updates of a terminating pod); the kubelet
// restarts nothing for it (INV-U1, T10).
func TestFaultImageChangeDuringTermination(t *testing.T) {
	cfg := faultConfig(1, faults.Spec{Kind: faults.ImageChange, Image: "envoy:2",
		When:  faults.Schedule{Kind: faults.OnPhase, Phase: faults.PhaseTerminating, Delay: 10 * time.Millisecond},
		Where: faults.Target{Container: "proxy"}})
	l, _ := runFault(t, cfg)
	wantFault(t, l, 1)
	if len(l.kind(history.FaultNotApplied)) != 0 {
		t.Fatalf("image change during termination refused: %v", l.kind(history.FaultNotApplied))
	}
	ch := l.kind(history.ContainerImageChanged).first()
	term := l.kind(history.PodTerminating).first()
	if ch == nil || term == nil || ch.T < term.T {
		t.Fatalf("want container.image-changed after pod.terminating: %v %v", ch, term)
	}
	for _, e := range l.kind(history.ContainerStopRequested) {
		if e.Reason == "SpecChanged" {
			t.Errorf("the image change restarted %s during termination", e.Container)
		}
	}
	if n := len(l.kind(history.ContainerStartRequested).c("proxy")); n != 1 {
		t.Errorf("proxy started %d times, want 1", n)
	}
}

// resPod: a Burstable pod, sidecar proxy (cpu NotRequired on resize),
// main app (RestartContainer for cpu).
func resPod() api.PodSpec {
	return api.PodSpec{
		Init: []api.Container{{Name: "proxy", Image: "envoy", Role: api.RoleSidecar,
			Resources: api.Resources{CPURequest: 100, MemRequest: 64 << 20}}},
		Main: []api.Container{{Name: "app", Image: "app", Role: api.RoleMain,
			Resources:    api.Resources{CPURequest: 500, CPULimit: 1000, MemRequest: 1 << 30, MemLimit: 1 << 30},
			ResizePolicy: api.ResizePolicy{CPURestart: true}}},
		RestartPolicy:          api.RestartAlways,
		TerminationGracePeriod: 30 * time.Second,
	}
}

// runUntil runs e's loop up to virtual time t.
func runUntil(e *engine, t time.Duration) {
	e.cfg.Stop.MaxDuration = t
	e.loop()
}

// INV-U2 in the sim: a resize request reaches the kubelet, which resizes a
// sidecar in place and restarts a main whose resizePolicy says so; the
// checker finds the history consistent.
func TestResize(t *testing.T) {
	cfg := &Config{Scenario: "resize", Cluster: Cluster{Nodes: 1},
		Workloads: []Workload{{Name: "web", Spec: resPod(), Count: 1, Lifetime: behavior.Fixed(time.Minute)}}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s := &memSink{}
	e := newEngine(context.Background(), cfg, 1, s)
	e.emitMeta(0)
	e.start()
	runUntil(e, 10*time.Second)
	p := e.pod(0)
	e.resizeContainer(p, 0, api.Resources{CPURequest: 200, MemRequest: 64 << 20})
	runUntil(e, 20*time.Second)
	e.resizeContainer(p, 1, api.Resources{CPURequest: 700, CPULimit: 1000, MemRequest: 1 << 30, MemLimit: 1 << 30})
	runUntil(e, 0)
	if e.err != nil {
		t.Fatal(e.err)
	}
	l := evs(s.evs)
	if r := l.kind(history.ContainerResized).c("proxy").first(); r == nil || r.CPU != 200 || r.T != 10*sec {
		t.Errorf("sidecar not resized in place at 10s: %v", r)
	}
	if n := len(l.kind(history.ContainerStartRequested).c("proxy")); n != 1 {
		t.Errorf("sidecar started %d times, want once (resized in place)", n)
	}
	stop := l.kind(history.ContainerStopRequested).c("app").first()
	if stop == nil || stop.Reason != "ResizeRestart" || stop.T != 20*sec {
		t.Fatalf("main not restarted for its resize at 20s: %v\n%s", stop, dump(l))
	}
	if n := len(l.kind(history.ContainerStartRequested).c("app")); n != 2 {
		t.Errorf("main started %d times, want twice", n)
	}
	if r := l.kind(history.ContainerResized).c("app"); len(r) != 0 {
		t.Errorf("main resized in place although its policy restarts it: %v", r)
	}
	rep := check.CheckEvents(s.evs)
	if rep.Violations() != 0 || len(rep.Findings) != 0 {
		t.Errorf("checker findings on the resize history: %v", rep.Findings)
	}
}

// INV-Q1..Q3 in the sim: the history carries the QoS class, the effective
// requests the scheduler counts, and each container's oom_score_adj; pods
// wait for a node with room for their effective requests.
func TestResourcesInHistory(t *testing.T) {
	cfg := &Config{Scenario: "resources", Cluster: Cluster{Nodes: 1, NodeCPU: 1000, NodeMemory: 2 << 30},
		Workloads: []Workload{{Name: "web", Spec: resPod(), Count: 1, Lifetime: behavior.Fixed(10 * time.Second)},
			{Name: "job", Spec: resPod(), Count: 1, Lifetime: behavior.Fixed(30 * time.Second)}}}
	s, _ := runMem(t, cfg, 1)
	l := evs(s.evs)
	if c := l.kind(history.PodCreated).first(); c == nil || c.Spec.QOSClass != "Burstable" {
		t.Fatalf("pod.created: %v", c)
	}
	sched := l.kind(history.PodScheduled)
	if len(sched) != 2 || sched[0].CPU != 600 || sched[0].Mem != 64<<20+1<<30 {
		t.Fatalf("pod.scheduled: %v", sched)
	}
	// 600m each on a 1000m node: the second pod waits for the first.
	if rm := l.kind(history.PodRemoved).first(); rm == nil || sched[1].T < rm.T {
		t.Errorf("second pod bound at %d before the first left (%v)", sched[1].T, rm)
	}
	proxy, app := l.kind(history.ContainerStartRequested).c("proxy").first(), l.kind(history.ContainerStartRequested).c("app").first()
	// 1000 - 1000*1Gi/2Gi = 500 for the main; the sidecar's own 969 is
	// capped at the main's.
	if proxy == nil || app == nil || app.OOMScoreAdj != 500 || proxy.OOMScoreAdj != 500 {
		t.Errorf("oom_score_adj proxy %v app %v, want 500 both", proxy, app)
	}
	rep := check.CheckEvents(s.evs)
	if len(rep.Findings) != 0 {
		t.Errorf("checker findings: %v", rep.Findings)
	}
}

// INV-Q5 in the sim: with the static CPU manager a Guaranteed pod's
// containers get exclusive CPUs; a sidecar's are not reused by the main
// after it — unless the bug replica sidecar-cpus-reused says so, which
// the checker catches.
func TestExclusiveCPUs(t *testing.T) {
	g := func(name string, role api.Role, cpus int64) api.Container {
		return api.Container{Name: name, Image: name, Role: role, Resources: api.Resources{CPURequest: cpus * 1000, CPULimit: cpus * 1000, MemRequest: 64 << 20, MemLimit: 64 << 20}}
	}
	spec := api.PodSpec{
		Init:                   []api.Container{g("setup", api.RoleInit, 2), g("proxy", api.RoleSidecar, 1)},
		Main:                   []api.Container{g("app", api.RoleMain, 2)},
		RestartPolicy:          api.RestartAlways,
		TerminationGracePeriod: 30 * time.Second,
	}
	setup := behavior.Default()
	setup.RunTime = behavior.Fixed(100 * time.Millisecond)
	for _, tc := range []struct {
		gates api.Gates
		want  int // INV-Q5 violations
	}{{api.Gates{}, 0}, {api.Gates{Bug: api.BugSidecarCPUsReused}, 3}} {
		cfg := &Config{Scenario: "cpus", Gates: tc.gates, Cluster: Cluster{Nodes: 1, NodeCPU: 16000, CPUManagerStatic: true},
			Workloads: []Workload{{Name: "web", Spec: spec, Count: 3, Lifetime: behavior.Fixed(10 * time.Second), Behavior: []ContainerBehavior{{Container: "setup", Behavior: setup}}}}}
		s, _ := runMem(t, cfg, 1)
		l := evs(s.evs)
		reqs := l.kind(history.ContainerStartRequested)
		if len(reqs) != 9 || reqs[0].CPUs == "" {
			t.Fatalf("%v: start requests %v", tc.gates, reqs)
		}
		rep := check.CheckEvents(s.evs)
		if got := rep.Row("INV-Q5").Violations; got != tc.want {
			t.Errorf("%v: %d INV-Q5 violations, want %d: %v", tc.gates, got, tc.want, rep.Findings)
		}
	}
}

// The kubelet probes a container only once the status manager has its
// status (prober/worker.go: "Probe target container not found"), which
// the sync publishes after startContainer returned, postStart hook
// included: no probe result, and so no probe kill, while the hook runs.
// The sim probed from the process start and killed a sidecar for its
// startup probe in the middle of its postStart hook.
func TestNoProbeDuringPostStart(t *testing.T) {
	probe := &api.Probe{Period: time.Second, SuccessThreshold: 1, FailureThreshold: 3}
	spec := api.PodSpec{
		Init:                   []api.Container{{Name: "proxy", Image: "envoy", Role: api.RoleSidecar, StartupProbe: probe, PostStart: true}},
		Main:                   []api.Container{{Name: "app", Image: "app:v1", Role: api.RoleMain}},
		RestartPolicy:          api.RestartAlways,
		TerminationGracePeriod: 30 * time.Second,
	}
	proxy := behavior.Default()
	proxy.PostStart = behavior.Fixed(20 * time.Second)
	proxy.StartupAfter = behavior.NeverDist() // its startup probe always fails
	cfg := &Config{
		Scenario:  "poststart",
		Cluster:   Cluster{Nodes: 1, PodsPerNode: 1},
		Workloads: []Workload{{Name: "web", Spec: spec, Behavior: []ContainerBehavior{{Container: "proxy", Behavior: proxy}}, Count: 1, Lifetime: behavior.Fixed(time.Minute)}},
	}
	s, _ := runMem(t, cfg, 1)
	l := evs(s.evs)
	done := l.kind(history.ContainerPostStartDone).first()
	if done == nil {
		t.Fatalf("no postStart-done\n%s", dump(l))
	}
	for _, e := range l.kind(history.ProbeResult) {
		if e.T < done.T {
			t.Errorf("probe result at %v, before the postStart hook ended at %v", time.Duration(e.T), time.Duration(done.T))
		}
	}
	for _, e := range l.kind(history.ContainerStopRequested) {
		if e.T < done.T {
			t.Errorf("%s stopped (%s) at %v, during its postStart hook", e.Container, e.Reason, time.Duration(e.T))
		}
	}
	if len(l.kind(history.ProbeResult)) == 0 {
		t.Errorf("no probe after the hook either\n%s", dump(l))
	}
}
