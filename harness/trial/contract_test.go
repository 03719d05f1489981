package trial_test

import (
	"context"
	"slices"
	"testing"
	"time"

	simbackend "github.com/sidebench/sidebench/harness/backend/sim"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/scenario"
	"github.com/sidebench/sidebench/harness/trial"
)

// contractScenario has one workload per arrival process, lifetimes and
// two timed faults with random schedules (jittered every, Poisson).
const contractScenario = `apiVersion: sidebench.dev/v1alpha1
kind: Scenario
metadata: {name: contract}
seed: 77
cluster: {nodes: 3}
workloads:
- name: steady
  count: 7
  arrival: {rate: 3, start: 500ms}
  lifetime: uniform(min=2s, max=6s)
  template:
    spec:
      containers: [{name: app, image: app:1}]
  behaviors: {default: {startLatency: 100ms}}
- name: pois
  count: 9
  arrival: {type: poisson, rate: 4}
  lifetime: exponential(mean=3s)
  template:
    metadata: {namespace: other}
    spec:
      initContainers: [{name: proxy, image: p:1, restartPolicy: Always}]
      containers: [{name: app, image: app:1}]
  behaviors: {default: {startLatency: "lognormal(median=200ms, p99=1s)"}}
- name: bursty
  count: 10
  arrival: {type: burst, size: 4, every: 1500ms}
  lifetime: 4s
  template:
    spec:
      containers: [{name: app, image: app:1}]
  behaviors: {default: {startLatency: 100ms}}
faults:
- name: crash
  type: kubelet-crash
  schedule: {type: every, at: 1s, interval: 2s, jitter: 700ms, max: 5}
  target: {nodeCount: 1}
  downtime: 300ms
- name: oom
  type: oom-kill
  schedule: {type: poisson, at: 500ms, rate: 1.5, until: 8s}
  target: {podCount: 1}
`

func compile(t *testing.T, text string) *trial.Plan {
	t.Helper()
	s, err := scenario.LoadBytes("contract.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	p, err := trial.Compile(scenario.Expand(s)[0])
	if err != nil {
		t.Fatal(err)
	}
	return p
}

type recorder []history.Event

func (r *recorder) Write(e *history.Event) error { *r = append(*r, *e); return nil }

// TestSameSeedContract: the plan the apiserver backends drive (names,
// arrival offsets, lifetimes, fault firing times) is exactly what the sim
// does with the same seed. The apiserver backends take these values from
// the plan (harness/backend/drive, tested there with a fake clock), so
// this pins the sim-vs-real differential to the same workload.
func TestSameSeedContract(t *testing.T) {
	p := compile(t, contractScenario)
	var h recorder
	if _, err := (simbackend.Backend{Version: "test"}).RunTrial(context.Background(), p, &h); err != nil {
		t.Fatal(err)
	}

	// Names and arrival offsets, in creation order.
	type created struct {
		pod string
		at  time.Duration
	}
	var simCreated []created
	createdAt := map[string]int64{}
	deletedAt := map[string]int64{}
	for _, e := range h {
		switch e.Kind {
		case history.PodCreated:
			simCreated = append(simCreated, created{e.Pod, time.Duration(e.T)})
			createdAt[e.Pod] = e.T
		case history.PodDeleted:
			if _, ok := deletedAt[e.Pod]; !ok {
				deletedAt[e.Pod] = e.T
			}
		}
	}
	var planCreated []created
	for _, a := range p.AllArrivals() {
		planCreated = append(planCreated, created{a.Pod, a.At})
	}
	if !slices.Equal(simCreated, planCreated) {
		t.Errorf("pod creations differ:\n sim  %v\n plan %v", simCreated, planCreated)
	}
	if len(planCreated) != p.TotalPods() || len(planCreated) != 26 {
		t.Fatalf("plan creates %d pods, want %d", len(planCreated), p.TotalPods())
	}
	kinds := map[string]bool{}
	for _, a := range p.AllArrivals() {
		kinds[p.Workloads[a.Workload].Arrival.Kind.String()] = true
	}
	if len(kinds) != 3 {
		t.Fatalf("arrival kinds covered: %v", kinds)
	}

	// Lifetimes: every pod is deleted for its age at creation + lifetime.
	for _, a := range p.AllArrivals() {
		life, ok := p.Lifetime(a.Workload, a.Pod)
		if !ok {
			t.Fatalf("%s: no lifetime", a.Pod)
		}
		del, ok := deletedAt[a.Pod]
		if !ok {
			t.Errorf("%s: never deleted by the sim", a.Pod)
			continue
		}
		if got := time.Duration(del - createdAt[a.Pod]); got != life {
			t.Errorf("%s: sim deleted it after %v, plan lifetime %v", a.Pod, got, life)
		}
	}

	// Fault firing times: the instants of fault.begin / fault.not-applied
	// per fault kind, while pods lived (the sim stops firing after the
	// last pod is gone).
	var end int64
	for _, e := range h {
		if e.Kind == history.PodRemoved {
			end = max(end, e.T)
		}
	}
	for i := range p.Faults {
		kind := p.Faults[i].Kind.String()
		var sim []time.Duration
		for _, e := range h {
			if (e.Kind == history.FaultBegin || e.Kind == history.FaultNotApplied) && e.Fault == kind {
				if n := len(sim); n == 0 || sim[n-1] != time.Duration(e.T) {
					sim = append(sim, time.Duration(e.T))
				}
			}
		}
		var plan []time.Duration
		for _, f := range p.FaultSchedule(i, time.Duration(end)) {
			plan = append(plan, f.At)
		}
		if len(plan) < 3 {
			t.Fatalf("fault %s: only %d firings in the plan: the test needs more", kind, len(plan))
		}
		if !slices.Equal(sim, plan) {
			t.Errorf("fault %s firing times differ:\n sim  %v\n plan %v", kind, sim, plan)
		}
	}
}

// TestPlanDeterministic: compiling the same trial twice gives the same
// arrivals, lifetimes and fault schedules; another seed does not.
func TestPlanDeterministic(t *testing.T) {
	a, b := compile(t, contractScenario), compile(t, contractScenario)
	if !slices.Equal(a.AllArrivals(), b.AllArrivals()) || !slices.Equal(a.FaultSchedule(1, time.Minute), b.FaultSchedule(1, time.Minute)) {
		t.Fatal("same seed, different plan")
	}
	la, _ := a.Lifetime(1, "other/pois-3")
	lb, _ := b.Lifetime(1, "other/pois-3")
	if la != lb {
		t.Fatal("same seed, different lifetime")
	}
	c := compile(t, contractScenario+"\n")
	c.Seed++
	if slices.Equal(a.AllArrivals(), c.AllArrivals()) {
		t.Error("another seed gave the same Poisson arrivals")
	}
}
