package sim

import (
	"testing"
	"time"

	"github.com/sidebench/sidebench/harness/behavior"
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
		Workloads: []Workload{{Name: "web", Spec: spec, Behavior: []ContainerBehavior{{"app", app}},
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
