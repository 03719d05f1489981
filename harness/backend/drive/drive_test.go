package drive

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/scenario"
	"github.com/sidebench/sidebench/harness/trial"
)

const planScenario = `apiVersion: sidebench.dev/v1alpha1
kind: Scenario
metadata: {name: drive}
seed: 5
cluster: {nodes: 2}
workloads:
- name: web
  count: 3
  arrival: {rate: 1}
  lifetime: uniform(min=2s, max=9s)
  template:
    spec:
      containers: [{name: app, image: app:1}]
  behaviors: {default: {startLatency: 100ms}}
- name: job
  count: 1
  template:
    spec:
      restartPolicy: Never
      containers: [{name: app, image: app:1}]
  behaviors: {default: {runTime: 1s}}
faults:
- name: crash
  type: kubelet-crash
  schedule: {type: every, at: 1s, interval: 2s, jitter: 900ms, max: 4}
  target: {nodeCount: 1}
  downtime: 300ms
- name: oom
  type: oom-kill
  schedule: {type: poisson, at: 500ms, rate: 2, until: 6s}
  target: {podCount: 1}
- name: phase
  type: kubelet-crash
  schedule: {type: on-phase, phase: terminating}
  target: {nodeCount: 1}
  downtime: 1s
`

func plan(t *testing.T) *trial.Plan {
	t.Helper()
	s, err := scenario.LoadBytes("drive.yaml", []byte(planScenario))
	if err != nil {
		t.Fatal(err)
	}
	p, err := trial.Compile(scenario.Expand(s)[0])
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// waitFor polls cond without asserting anything about time: the bound
// only turns a hang into a failure.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestScheduleFaultsOnFakeClock: the live backends fire each timed fault
// at exactly the plan's times (the sim's, see harness/trial's contract
// test), in order, with the fault's target stream; a fault that is not
// timed is recorded not applied.
func TestScheduleFaultsOnFakeClock(t *testing.T) {
	p := plan(t)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := testingclock.NewFakeClock(start)
	var events []history.Event
	var mu sync.Mutex
	log := &FaultLog{Emit: func(e history.Event) { mu.Lock(); events = append(events, e); mu.Unlock() }}
	fired := make(chan trial.Firing, 16)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	ScheduleFaults(ctx, clk, &wg, start, p, "test", log, func() bool { return false }, false, func(f Firing) {
		if f.Rand == nil {
			t.Error("firing without its target stream")
		}
		fired <- trial.Firing{Fault: f.Index, N: f.N, At: clk.Since(start)}
	})

	const horizon = time.Hour // both schedules end on their own (max, until)
	var want []trial.Firing
	for i := range p.Faults {
		want = append(want, p.FaultSchedule(i, horizon)...)
	}
	sort.SliceStable(want, func(i, j int) bool { return want[i].At < want[j].At })
	if len(want) < 5 {
		t.Fatalf("plan has %d firings; the test needs more", len(want))
	}
	for k, w := range want {
		// Every timed fault with firings left is asleep on the clock, then
		// time moves to the next planned firing.
		left := map[int]bool{}
		for _, r := range want[k:] {
			left[r.Fault] = true
		}
		waitFor(t, "the fault goroutines to sleep", func() bool { return clk.Waiters() == len(left) })
		clk.SetTime(start.Add(w.At))
		got := <-fired
		if got != w {
			t.Fatalf("fired %+v, want %+v (plan order %v)", got, w, want)
		}
	}
	cancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 1 || events[0].Kind != history.FaultNotApplied || events[0].Fault != "kubelet-crash" {
		t.Fatalf("the on-phase fault: %+v, want one fault.not-applied", events)
	}
}

// TestAwaitEndOnFakeClock: a pod is deleted at its planned lifetime, not
// before; a Job-style pod when it is terminal; any pod when it is gone.
func TestAwaitEndOnFakeClock(t *testing.T) {
	p := plan(t)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := testingclock.NewFakeClock(start)
	pod := p.Workloads[0].PodName(1)
	life, ok := p.Lifetime(0, pod)
	if !ok || life < 2*time.Second {
		t.Fatalf("lifetime %v %v", life, ok)
	}
	ended := make(chan time.Duration, 1)
	terminal, done := make(chan struct{}), make(chan struct{})
	go func() {
		AwaitEnd(context.Background(), clk, p, 0, pod, terminal, done)
		ended <- clk.Since(start)
	}()
	waitFor(t, "the lifetime timer", clk.HasWaiters)
	close(terminal) // not a Job: a terminal phase does not delete it
	clk.SetTime(start.Add(life - time.Nanosecond))
	select {
	case d := <-ended:
		t.Fatalf("deleted after %v, before its lifetime %v", d, life)
	default:
	}
	clk.SetTime(start.Add(life))
	if d := <-ended; d != life {
		t.Fatalf("deleted after %v, want %v", d, life)
	}

	// The Job pod has no lifetime: it ends when terminal.
	jobPod := p.Workloads[1].PodName(0)
	if _, ok := p.Lifetime(1, jobPod); ok {
		t.Fatal("job has a lifetime")
	}
	terminal = make(chan struct{})
	go func() {
		AwaitEnd(context.Background(), clk, p, 1, jobPod, terminal, make(chan struct{}))
		ended <- 0
	}()
	close(terminal)
	<-ended

	// Gone first: returns without waiting for the lifetime.
	done = make(chan struct{})
	close(done)
	AwaitEnd(context.Background(), clk, p, 0, pod, nil, done)

	if g := DeleteGrace(&p.Workloads[0]); g != nil {
		t.Errorf("DeleteGrace without deleteGrace: %v", *g)
	}
}
