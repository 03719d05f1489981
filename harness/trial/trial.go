// Package trial compiles one trial of a scenario (a policy, a trial number,
// a seed) into a Plan: everything a backend needs to run it, decided once
// and the same for every backend. The plan holds the pod specs (the
// reference implementation's form, the history's form and the Kubernetes
// template), each container's behaviour, the pod names, the arrival
// process, the lifetimes, the fault list and the named random streams they
// are drawn from.
//
// This is the cross-backend same-seed contract: the sim and the apiserver
// backends (local, kube) read pod names, arrival offsets, lifetimes and
// fault schedules from the plan, never from the raw scenario, so a
// differential run compares the same workload on each backend
// (contract_test.go checks it against the sim's histories).
package trial

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sidebench/sidebench/harness/arrival"
	"github.com/sidebench/sidebench/harness/behavior"
	"github.com/sidebench/sidebench/harness/faults"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/history/hspec"
	"github.com/sidebench/sidebench/harness/scenario"
	"github.com/sidebench/sidebench/harness/workaround"
	"github.com/sidebench/sidebench/reference-impl/api"
)

// Plan is one compiled trial.
type Plan struct {
	// ID is the trial's identity (scenario, policy, number, seed).
	ID scenario.Trial
	// Scenario and ScenarioHash name the scenario and its file content.
	Scenario, ScenarioHash string
	// Policy is the canonical policy string, Gates its parsed form.
	Policy string
	Gates  api.Gates
	Number int
	Seed   uint64

	// Nodes and PodsPerNode size the cluster (PodsPerNode defaults to the
	// kubelet's maxPods).
	Nodes, PodsPerNode int
	// Horizon bounds the trial (virtual time on sim, wall time on the
	// apiserver backends, where a backend may cap it further).
	Horizon   time.Duration
	Workloads []Workload
	// Faults is the scenario's fault list, validated.
	Faults []faults.Spec
}

// Workload is one compiled workload.
type Workload struct {
	Name      string
	Namespace string
	Labels    map[string]string
	// Template is the Kubernetes pod template the backends create pods
	// from: as written in the scenario, or as a workaround policy
	// transforms it (harness/workaround).
	Template *corev1.PodTemplateSpec
	// Spec is the reference implementation's form of the template;
	// History the form pod.created carries.
	Spec    api.PodSpec
	History *history.PodSpec
	// Behaviors holds each container's behaviour, in spec order
	// (Spec.At(i) ↔ Behaviors[i]).
	Behaviors []ContainerBehavior
	Count     int
	Arrival   arrival.Spec
	// Lifetime is the time from creation to deletion; zero or never: the
	// pod is not deleted for its age.
	Lifetime behavior.Dist
	// DeleteGrace is the grace period of a lifetime deletion; nil: the
	// pod's own terminationGracePeriodSeconds.
	DeleteGrace *time.Duration
	// Job: restartPolicy is not Always, so the pod is expected to finish
	// and is deleted once its phase is terminal.
	Job bool

	prefix string
}

// ContainerBehavior is one container's behaviour.
type ContainerBehavior struct {
	Container string
	Behavior  behavior.Container
	// Wiring is how the behaviour depends on the pod's other containers
	// (a workaround's wrapper, hooks and quit signal; container.serving of
	// the user's sidecars); nil: none.
	Wiring *behavior.Wiring
}

// Compile compiles one trial of a loaded (validated) scenario.
func Compile(t scenario.Trial) (*Plan, error) {
	s := t.Scenario
	p := &Plan{ID: t, Scenario: s.Metadata.Name, ScenarioHash: s.Hash, Policy: t.Policy, Gates: t.Gates,
		Number: t.Number, Seed: t.Seed, Nodes: s.Cluster.Nodes, PodsPerNode: s.Cluster.PodsPerNode, Horizon: s.Horizon()}
	if p.PodsPerNode == 0 {
		p.PodsPerNode = scenario.DefaultPodsPerNode
	}
	for i := range s.Workloads {
		w, err := compileWorkload(&s.Workloads[i], t.Gates)
		if err != nil {
			return nil, fmt.Errorf("%s: workloads[%d] %q: %w", s.Metadata.Name, i, s.Workloads[i].Name, err)
		}
		p.Workloads = append(p.Workloads, w)
	}
	specs, err := s.FaultSpecs()
	if err != nil {
		return nil, err
	}
	p.Faults = specs
	return p, nil
}

// compileWorkload compiles one workload under gates: a workaround policy
// runs the pod its transform makes of the template (harness/workaround).
func compileWorkload(sw *scenario.Workload, gates api.Gates) (Workload, error) {
	pod, err := workaround.Apply(&sw.Template, gates, sw.BehaviorOf)
	if err != nil {
		return Workload{}, err
	}
	spec := pod.Spec
	w := Workload{Name: sw.Name, Namespace: sw.Template.Namespace, Labels: sw.Template.Labels, Template: pod.Template,
		Spec: spec, Count: sw.Count, Job: spec.RestartPolicy != api.RestartAlways}
	if w.Namespace == "" {
		w.Namespace = history.DefaultNamespace
	}
	w.History = hspec.Of(w.Name, w.Labels, &w.Spec)
	w.prefix = history.PodNamePrefix(w.Namespace, w.Name)
	if sw.Lifetime != nil {
		w.Lifetime = *sw.Lifetime
	}
	if sw.DeleteGrace != nil {
		g := sw.DeleteGrace.D()
		w.DeleteGrace = &g
	}
	w.Arrival = arrivalSpec(&sw.Arrival)
	for _, c := range pod.Containers {
		w.Behaviors = append(w.Behaviors, ContainerBehavior{Container: c.Name, Behavior: c.Behavior, Wiring: c.Wiring})
	}
	return w, nil
}

// arrivalSpec maps the scenario's arrival onto the process: constant
// without a rate creates every pod at start.
func arrivalSpec(a *scenario.Arrival) arrival.Spec {
	out := arrival.Spec{Start: a.Start.D()}
	switch a.Type {
	case "poisson":
		out.Kind, out.Rate = arrival.Poisson, a.Rate
	case "burst":
		out.Kind, out.BurstSize, out.BurstInterval = arrival.Burst, a.Size, a.Every.D()
	default: // constant
		if a.Rate > 0 {
			out.Kind, out.Rate = arrival.Constant, a.Rate
		} else {
			out.Kind = arrival.Burst // everything at Start
		}
	}
	return out
}

// PodName is the name ("namespace/name") of the workload's n-th pod.
func (w *Workload) PodName(n int) string {
	return string(history.AppendPodName(nil, w.prefix, n))
}

// PodNamePrefix is what every pod name of the workload starts with.
func (w *Workload) PodNamePrefix() string { return w.prefix }

// HasLifetime reports whether pods are deleted for their age.
func (w *Workload) HasLifetime() bool { return !w.Lifetime.IsZero() && !w.Lifetime.IsNever() }

// Arrivals returns the process of the workload's creations in this trial.
func (p *Plan) Arrivals(w int) arrival.Process {
	wl := &p.Workloads[w]
	return arrival.New(wl.Arrival, wl.Count, behavior.ArrivalKey(p.Seed, wl.Name).Rand())
}

// Lifetime returns the lifetime of the named pod of workload w (false if
// its pods are not deleted for their age).
func (p *Plan) Lifetime(w int, pod string) (time.Duration, bool) {
	wl := &p.Workloads[w]
	if !wl.HasLifetime() {
		return 0, false
	}
	return wl.Lifetime.Sample(behavior.LifetimeKey(p.Seed, pod).Rand()), true
}

// FaultStreams returns the random streams of the i-th fault: its firing
// times and its target picks.
func (p *Plan) FaultStreams(i int) (schedule, targets *rand.Rand) {
	l := p.Faults[i].Label(i)
	return behavior.FaultKey(p.Seed, l, i).Rand(), behavior.FaultTargetKey(p.Seed, l, i).Rand()
}

// Firing is one firing of a timed fault.
type Firing struct {
	// Fault indexes Plan.Faults; N counts its firings from 0.
	Fault, N int
	At       time.Duration
}

// FaultSchedule returns the firings of the i-th fault before horizon
// (nothing for a fault that is not timed: on-phase faults fire on a pod's
// lifecycle, not on the clock). It draws from a fresh schedule stream, as
// every backend does, so it is what each of them fires.
func (p *Plan) FaultSchedule(i int, horizon time.Duration) []Firing {
	sp := &p.Faults[i]
	if !sp.When.Timed() {
		return nil
	}
	rng, _ := p.FaultStreams(i)
	var out []Firing
	at, ok := sp.When.First(rng)
	for n := 0; ok && at <= horizon; n++ {
		out = append(out, Firing{Fault: i, N: n, At: at})
		at, ok = sp.When.Next(at, n+1, rng)
	}
	return out
}

// Arrival is one pod creation of the plan.
type Arrival struct {
	// At is the offset from the start of the trial.
	At time.Duration
	// Workload indexes Plan.Workloads; Index is the pod's number in it.
	Workload, Index int
	Pod             string
}

// AllArrivals returns every pod creation of the trial in the order the sim
// creates them, for the apiserver backends, which drive pods one by one
// (and assign nodes in that order). Equal offsets are ordered as the sim's
// event queue orders them: a workload's next batch is queued when its
// previous batch is created, earlier-queued first, and a batch due at the
// current instant is created at once (the sim's immediate queue).
func (p *Plan) AllArrivals() []Arrival {
	type pending struct {
		at       time.Duration
		seq      int
		workload int
	}
	procs := make([]arrival.Process, len(p.Workloads))
	created := make([]int, len(p.Workloads))
	var queue, now []pending // queue: due later, by (at, seq); now: due at once, FIFO
	var seq int
	var t time.Duration
	push := func(w int) {
		at, ok := procs[w].Peek()
		if !ok {
			return
		}
		if at <= t {
			now = append(now, pending{t, seq, w})
		} else {
			queue = append(queue, pending{at, seq, w})
		}
		seq++
	}
	for w := range p.Workloads {
		procs[w] = p.Arrivals(w)
		push(w)
	}
	var out []Arrival
	for len(now) > 0 || len(queue) > 0 {
		var next pending
		if len(now) > 0 {
			next, now = now[0], now[1:]
		} else {
			k := 0
			for i := range queue {
				if queue[i].at < queue[k].at || (queue[i].at == queue[k].at && queue[i].seq < queue[k].seq) {
					k = i
				}
			}
			next = queue[k]
			queue = slices.Delete(queue, k, k+1)
			t = next.at
		}
		w := next.workload
		at, n, _ := procs[w].Next()
		for range n {
			out = append(out, Arrival{At: at, Workload: w, Index: created[w], Pod: p.Workloads[w].PodName(created[w])})
			created[w]++
		}
		push(w)
	}
	return out
}

// TotalPods is the number of pods the trial creates.
func (p *Plan) TotalPods() int {
	n := 0
	for i := range p.Workloads {
		n += p.Workloads[i].Count
	}
	return n
}

// String names the trial: "scenario/policy#number".
func (p *Plan) String() string { return p.ID.String() }
