package sim

import (
	"errors"
	"fmt"
	"time"

	"github.com/sidebench/sidebench/harness/arrival"
	"github.com/sidebench/sidebench/harness/behavior"
	"github.com/sidebench/sidebench/harness/faults"
	"github.com/sidebench/sidebench/reference-impl/api"
)

// Config describes one trial of the sim backend. It is plain data (no
// functions, no pointers that must be shared) so that a scenario file can be
// decoded into it; the zero value of every optional field is a sensible
// default. Run does not modify it and several trials may share it.
type Config struct {
	// Scenario names the scenario (history run.meta); ScenarioHash
	// identifies its file content. Both are copied into run.meta only.
	Scenario     string
	ScenarioHash string
	// Version is the sidebench version written to run.meta.
	Version string

	Cluster   Cluster
	Workloads []Workload
	// Faults is the fault list, validated against the workloads before the
	// run (faults.Validate).
	Faults []faults.Spec
	// Gates is the policy and feature-gate set every simulated kubelet
	// runs under.
	Gates api.Gates
	Stop  Stop
}

// Cluster describes the simulated nodes and control plane.
type Cluster struct {
	// Nodes is the number of nodes (>= 1). Node i is named "node-<i>".
	Nodes int
	// PodsPerNode is the scheduling capacity of each node (0 = unlimited).
	// Pods that fit nowhere wait in a FIFO until a node frees capacity.
	PodsPerNode int
	// APIDelay is the API/watch delay: the time between a write to the API
	// server and a watcher seeing it. It delays the kubelet seeing a new
	// binding or a deletion, and the control plane seeing a terminal phase
	// (Job completion) or a finished pod (removal). Default 0.
	APIDelay time.Duration
	// SandboxLatency is the time the runtime takes to create a sandbox
	// (RunPodSandbox). Default 0.
	SandboxLatency time.Duration
	// RetryDelay is how long after a runtime call failed (runtime down)
	// the kubelet hears of it and retries: the pod worker's requeue
	// backoff after a failed sync. Default DefaultRetryDelay.
	RetryDelay time.Duration
	// NodeCPU (milli-CPU) and NodeMemory (bytes) are each node's
	// allocatable resources: a pod is bound only where its effective
	// requests (INV-Q1) fit next to those of the pods already there.
	// 0 = unlimited. NodeMemory is also the memory capacity the kubelet
	// computes oom_score_adj from (INV-Q3; DefaultNodeMemory when 0).
	NodeCPU    int64
	NodeMemory int64
	// CPUManagerStatic runs every kubelet with the static CPU manager:
	// containers of Guaranteed pods with integral CPU requests get
	// exclusive CPUs of their node (INV-Q5). Needs NodeCPU, at most 64
	// whole CPUs.
	CPUManagerStatic bool
}

// DefaultRetryDelay is the default Cluster.RetryDelay: the kubelet's
// backOffPeriod, by which completeWork requeues a pod whose sync failed
// (pod_workers.go; jittered to 10-15 s there, its lower end here). A sync
// the relist after a runtime's return triggers comes sooner (relistPod).
// It was 1 s until session 13.
const DefaultRetryDelay = 10 * time.Second

// DefaultNodeMemory is the memory capacity oom_score_adj is computed from
// when Cluster.NodeMemory is 0.
const DefaultNodeMemory = 32 << 30

// Workload is a group of identical pods.
type Workload struct {
	// Name names the workload; pods are named "<Namespace>/<Name>-<n>"
	// with n counting from 0. Names must be unique.
	Name string
	// Namespace defaults to "default".
	Namespace string
	// Labels are the pods' labels (fault targeting, reports).
	Labels map[string]string
	// Spec is the pod template. It must pass api.PodSpec.Validate.
	Spec api.PodSpec
	// Behavior gives each container's behaviour, by container name.
	// Containers not listed behave as behavior.Default() (start in 100ms,
	// started and ready at once, run until stopped, exit 0 100ms after
	// SIGTERM).
	Behavior []ContainerBehavior
	// Count is the number of pods to create (>= 0).
	Count int
	// Arrival says when the pods are created.
	Arrival Arrival
	// Lifetime is the time from creation to deletion by the control plane.
	// The zero Dist means "never deleted by lifetime": pods end only by
	// themselves (restartPolicy Never/OnFailure Jobs: deleted once their
	// phase is terminal) or with the run.
	Lifetime behavior.Dist
	// DeleteGrace is the grace period of a lifetime deletion; 0 means the
	// pod's terminationGracePeriodSeconds.
	DeleteGrace time.Duration
}

// ContainerBehavior binds a behaviour to a container of the pod template.
type ContainerBehavior struct {
	// Container is the container name in Spec.
	Container string
	Behavior  behavior.Container
	// Wiring is what a workaround adds (a wrapper, hooks that poll, a
	// quit signal; container.serving of the user's sidecars); nil: none.
	Wiring *behavior.Wiring
}

// Arrival is a pod arrival process (harness/arrival: one implementation
// for every backend).
type Arrival = arrival.Spec

// ArrivalKind names an arrival process.
type ArrivalKind = arrival.Kind

// Arrival kinds.
const (
	ArrivalBurst    = arrival.Burst
	ArrivalConstant = arrival.Constant
	ArrivalPoisson  = arrival.Poisson
)

// ParseArrivalKind is the inverse of ArrivalKind.String.
func ParseArrivalKind(s string) (ArrivalKind, bool) { return arrival.ParseKind(s) }

// Stop says when a trial ends.
type Stop struct {
	// MaxDuration ends the trial at this virtual time (0 = no limit). A
	// trial always ends once every pod of every workload was created and
	// removed. Workloads whose pods never end (restartPolicy Always with
	// no Lifetime) need a MaxDuration.
	MaxDuration time.Duration
}

// Result summarises a trial.
type Result struct {
	Seed uint64
	// PodsCreated, PodsScheduled and PodsRemoved count pod.created,
	// pod.scheduled and pod.removed; PodsCompleted counts pods removed after
	// the kubelet finished them, PodsLost pods removed with a node that
	// never came back.
	PodsCreated   int
	PodsScheduled int
	PodsRemoved   int
	PodsCompleted int
	PodsLost      int
	// PeakLivePods is the largest number of pods alive at once.
	PeakLivePods int
	// Events counts the engine's processed events; HistoryEvents the events
	// written to the sink.
	Events        uint64
	HistoryEvents uint64
	// PeakPending is the largest number of scheduled events at once.
	PeakPending int
	// FaultsFired counts fault firings (one firing may hit several
	// targets); FaultsApplied counts targets with a recorded fault.effect;
	// FaultsNotApplied counts fault.not-applied records.
	FaultsFired      int
	FaultsApplied    int
	FaultsNotApplied int
	// End is the virtual time the trial ended at.
	End time.Duration
	// Partial is set when the trial was cancelled (ctx) before its stop
	// condition; the counts say what was done.
	Partial bool
}

// Validate checks cfg before a run: the cluster, every workload (its spec,
// behaviours and arrival) and every fault against the workloads.
func (cfg *Config) Validate() error {
	if cfg.Cluster.Nodes < 1 {
		return fmt.Errorf("sim: cluster.nodes must be >= 1, got %d", cfg.Cluster.Nodes)
	}
	if cfg.Cluster.PodsPerNode < 0 || cfg.Cluster.APIDelay < 0 || cfg.Cluster.SandboxLatency < 0 || cfg.Cluster.RetryDelay < 0 ||
		cfg.Cluster.NodeCPU < 0 || cfg.Cluster.NodeMemory < 0 {
		return errors.New("sim: cluster: podsPerNode, apiDelay, sandboxLatency, retryDelay, nodeCPU and nodeMemory must be >= 0")
	}
	if cfg.Cluster.CPUManagerStatic && (cfg.Cluster.NodeCPU < 1000 || cfg.Cluster.NodeCPU > 64000) {
		return errors.New("sim: cluster.cpuManagerStatic needs nodeCPU between 1 and 64 CPUs (1000..64000)")
	}
	if cfg.Stop.MaxDuration < 0 {
		return errors.New("sim: stop.maxDuration must be >= 0")
	}
	names := make(map[string]bool, len(cfg.Workloads))
	for i := range cfg.Workloads {
		w := &cfg.Workloads[i]
		if w.Name == "" {
			return fmt.Errorf("sim: workload %d: name is required", i)
		}
		if names[w.Name] {
			return fmt.Errorf("sim: workload %q: duplicate name", w.Name)
		}
		names[w.Name] = true
		if err := w.Spec.Validate(); err != nil {
			return fmt.Errorf("sim: workload %q: %w", w.Name, err)
		}
		if w.Count < 0 {
			return fmt.Errorf("sim: workload %q: count must be >= 0", w.Name)
		}
		switch w.Arrival.Kind {
		case ArrivalBurst:
			if w.Arrival.BurstSize < 0 || (w.Arrival.BurstSize > 0 && w.Arrival.BurstSize < w.Count && w.Arrival.BurstInterval <= 0) {
				return fmt.Errorf("sim: workload %q: burst arrival needs burstSize >= 0 and burstInterval > 0 when burstSize < count", w.Name)
			}
		case ArrivalConstant, ArrivalPoisson:
			if !(w.Arrival.Rate > 0) {
				return fmt.Errorf("sim: workload %q: %s arrival needs rate > 0", w.Name, w.Arrival.Kind)
			}
		default:
			return fmt.Errorf("sim: workload %q: unknown arrival kind %d", w.Name, w.Arrival.Kind)
		}
		if w.Arrival.Start < 0 || w.DeleteGrace < 0 {
			return fmt.Errorf("sim: workload %q: arrival.start and deleteGrace must be >= 0", w.Name)
		}
		for j := range w.Behavior {
			b := &w.Behavior[j]
			if w.Spec.IndexOf(b.Container) < 0 {
				return fmt.Errorf("sim: workload %q: behavior for unknown container %q", w.Name, b.Container)
			}
			for k := 0; k < j; k++ {
				if w.Behavior[k].Container == b.Container {
					return fmt.Errorf("sim: workload %q: two behaviors for container %q", w.Name, b.Container)
				}
			}
			if err := validateBehavior(&b.Behavior); err != nil {
				return fmt.Errorf("sim: workload %q: container %q: %w", w.Name, b.Container, err)
			}
			if err := b.Wiring.Validate(b.Container, specNames(&w.Spec)); err != nil {
				return fmt.Errorf("sim: workload %q: container %q: wiring: %w", w.Name, b.Container, err)
			}
		}
		if cfg.Stop.MaxDuration == 0 && w.Count > 0 && w.Spec.RestartPolicy == api.RestartAlways && distIsZero(&w.Lifetime) {
			return fmt.Errorf("sim: workload %q: pods with restartPolicy Always and no lifetime never end: set a lifetime or stop.maxDuration", w.Name)
		}
	}
	world := cfg.World()
	if err := faults.Validate(cfg.Faults, &world); err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	return nil
}

// World describes the cluster and workloads for fault validation and
// selection.
func (cfg *Config) World() faults.World {
	w := faults.World{Nodes: cfg.Cluster.Nodes, Workloads: make([]faults.Workload, len(cfg.Workloads))}
	for i := range cfg.Workloads {
		wl := &cfg.Workloads[i]
		w.Workloads[i] = faults.WorldOf(wl.Name, wl.Labels, &wl.Spec)
	}
	return w
}
