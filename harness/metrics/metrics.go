// Package metrics turns one pod's history into per-pod latency metrics
// (ClusterLoader2 definitions where CL2 has one, sidecar-specific intervals
// beside them), writes and reads them as JSONL (pods.jsonl), and aggregates
// them into percentile summaries with confidence intervals (reports/stats).
//
// Units: every duration is in milliseconds as float64 (CL2's PerfData unit),
// computed from the history's nanosecond timestamps: ms = ns / 1e6.
// float64 holds integer nanoseconds exactly up to 2^53 ns (104 days), so no
// precision is lost for any pod lifetime.
//
// JSON field names are camelCase (like history.Meta); metric names are the
// snake_case CL2 transition names ("pod_startup").
package metrics

import (
	"slices"
	"sync"

	"github.com/sidebench/sidebench/harness/history"
)

// Metric names a per-pod latency. The names are stable: they are keys in
// pods.jsonl and in reports.
type Metric = string

const (
	// PodStartup is the SIG Scalability pod-startup SLI (ANCHORS.md §1.1):
	// pod creation → every container has started, as observed. "Started" is
	// the first container.started with Value=true, or the first
	// container.running for a container whose history never publishes
	// container.started (backends without the Started flag). "Every
	// container" is sidecars plus main containers: regular init containers
	// are excluded, as CL2 looks only at containerStatuses and the SLI
	// excludes init containers; sidecars are included because they are
	// long-running containers of the pod. A container that started and
	// finished early counts as started. A container whose entrypoint waits
	// for the sidecars (a workaround's wrapper, waitsForSidecars) has
	// started when its application did: its first container.app-started,
	// not the Started flag the kubelet set at the process start. Absent if
	// some container never started.
	PodStartup Metric = "pod_startup"
	// CreateToInitialized is pod creation → first pod.condition Initialized
	// true.
	CreateToInitialized Metric = "create_to_initialized"
	// CreateToReady is pod creation → first pod.condition Ready true.
	CreateToReady Metric = "create_to_ready"
	// SidecarGate is the sidecar-gated interval of the first initialization:
	// the last sidecar start (per sidecar, its latest started=true before
	// the first main container ran; the latest over sidecars) → the first
	// main container.running. Only for pods with sidecars and main
	// containers; absent if a main container ran before some sidecar had
	// started (no gate was observed, e.g. policy none). Roles are the
	// user's: a sidecar a workaround runs as a regular container is a
	// sidecar (intent), and a main whose entrypoint waits for the sidecars
	// runs its application from container.app-started.
	SidecarGate Metric = "sidecar_gate"
	// DeletionToExited is the first pod.deleted → the time the last
	// container running at or after deletion exited (container.exited; a
	// sandbox.lost or node.down ends all of the pod's containers). A sidecar
	// restarted during termination (KEP-4438) counts until its last exit.
	// Absent if nothing ran after deletion or some container was still
	// running when the history ended.
	DeletionToExited Metric = "deletion_to_exited"
	// JobCompletion is pod creation → first terminal phase (Succeeded or
	// Failed), for pods whose restartPolicy is not Always (Job pods).
	JobCompletion Metric = "job_completion"
)

// Metrics lists every metric in report order.
var Metrics = []Metric{PodStartup, CreateToInitialized, CreateToReady, SidecarGate, DeletionToExited, JobCompletion}

// Restarts counts container restarts (container.running with Attempt > 0)
// per container role.
type Restarts struct {
	Init    int `json:"init"`
	Sidecar int `json:"sidecar"`
	Main    int `json:"main"`
}

// Record is the per-pod line of pods.jsonl.
type Record struct {
	// Run identity, from history.Meta (empty if the run had none).
	Scenario string `json:"scenario"`
	Policy   string `json:"policy"`
	Seed     uint64 `json:"seed"`
	Trial    int    `json:"trial"`
	Backend  string `json:"backend,omitempty"`

	Pod      string `json:"pod"`
	Workload string `json:"workload,omitempty"`
	Node     string `json:"node,omitempty"`
	// RestartPolicy is the pod's restartPolicy; Job is true when it is not
	// Always (the pod is expected to finish).
	RestartPolicy string `json:"restartPolicy,omitempty"`
	Job           bool   `json:"job"`
	// Containers per role, from the pod.created spec; a sidecar a
	// workaround runs as a regular container counts as a sidecar.
	Inits    int `json:"inits"`
	Sidecars int `json:"sidecars"`
	Mains    int `json:"mains"`

	// Phase is the last pod.phase observed ("" if none).
	Phase   string `json:"phase"`
	Deleted bool   `json:"deleted"`
	// Removed is true if the history reached pod.removed; otherwise the pod
	// was still live when the history ended.
	Removed bool `json:"removed"`
	// Faulted is true if a fault verifiably touched the pod, its node or the
	// whole cluster while the pod lived: the pod's history (which includes
	// its node's and cluster-wide events) has a fault.effect after
	// pod.created, or a fault.end of an instance (name, FaultID) with no
	// fault.not-applied (in effect since before the pod's history began).
	// A fault.begin alone does not count: faults count once they took
	// effect (ARCHITECTURE.md rule 5), except that two events of the pod's
	// own history prove a fault's effect before its fault.effect does: a
	// node.shutdown on the pod's node is the effect of the node-shutdown
	// fault that began there (its fault.effect summarises the shutdown at
	// its end, often after the pods it terminated are gone), and a
	// container.image-changed of the pod that of its image-change (whose
	// fault.effect waits for the new image to run: a pod removed first,
	// after the kubelet stopped the container for it, gets a
	// fault.not-applied).
	// Faults lists the catalogue names.
	Faulted bool     `json:"faulted"`
	Faults  []string `json:"faults,omitempty"`

	// LatenciesMs maps a Metric to its value in milliseconds. A metric the
	// history does not support for this pod is absent.
	LatenciesMs map[Metric]float64 `json:"latenciesMs"`
	Restarts    Restarts           `json:"restarts"`
	// Notes explain missing or suspicious values (no pod.created event,
	// negative interval).
	Notes []string `json:"notes,omitempty"`
	// Unmet lists the user-level guarantees (harness/check, Level USER)
	// the pod did not get, by ID: the runner fills it from the checker.
	Unmet []string `json:"unmet,omitempty"`
}

// Latency returns a metric's value in milliseconds and whether it is set.
func (r *Record) Latency(m Metric) (float64, bool) {
	v, ok := r.LatenciesMs[m]
	return v, ok
}

// HasSidecars reports whether the pod's spec has at least one sidecar.
func (r *Record) HasSidecars() bool { return r.Sidecars > 0 }

// Succeeded reports whether the pod ended in phase Succeeded.
func (r *Record) Succeeded() bool { return r.Phase == "Succeeded" }

const (
	roleInit    = "init"
	roleSidecar = "sidecar"
	roleMain    = "main"
)

// container is what FromEvents tracks per container.
type container struct {
	name         string
	role         string
	waits        bool  // entrypoint waits for the sidecars: the app starts at app-started
	firstApp     int64 // first container.app-started; -1 until seen
	firstRunning int64 // -1 until seen
	firstStarted int64 // first started=true; -1 until seen
	sawStarted   bool  // any container.started event (true or false)
	startedTimes []int64
	running      bool
	// ranAfterDeletion: running at pod.deleted or (re)started after it;
	// lastExitAfterDeletion: its latest exit after pod.deleted.
	ranAfterDeletion      bool
	lastExitAfterDeletion int64 // -1 until seen
}

const never = -1

// faultKey identifies a fault instance: catalogue name and FaultID.
type faultKey struct {
	name string
	id   uint32
}

type faultSeen struct{ begun, effect, proven, end, notApplied bool }

func msBetween(from, to int64) float64 { return float64(to-from) / 1e6 }

// measurer is FromEvents' scratch space, reused across pods (a pool), so
// measuring a pod allocates only its Record's map and slices.
type measurer struct {
	ctrs   []container // spec order, then first appearance
	faults []faultState
}

type faultState struct {
	key  faultKey
	seen faultSeen
}

var measurers = sync.Pool{New: func() any { return new(measurer) }}

// get returns the container named name, adding it if new.
func (m *measurer) get(name string) *container {
	for i := range m.ctrs {
		if m.ctrs[i].name == name {
			return &m.ctrs[i]
		}
	}
	var times []int64
	if n := len(m.ctrs); n < cap(m.ctrs) {
		times = m.ctrs[:n+1][n].startedTimes[:0] // reuse the storage
	}
	m.ctrs = append(m.ctrs, container{name: name, role: roleMain, firstRunning: never, firstStarted: never, firstApp: never,
		lastExitAfterDeletion: never, startedTimes: times})
	return &m.ctrs[len(m.ctrs)-1]
}

func (m *measurer) fault(k faultKey) *faultSeen {
	for i := range m.faults {
		if m.faults[i].key == k {
			return &m.faults[i].seen
		}
	}
	m.faults = append(m.faults, faultState{key: k})
	return &m.faults[len(m.faults)-1].seen
}

// FromEvents computes the Record of one pod from its history: the pod's
// events in history order, as history's per-pod partitioning delivers them
// (the pod's own events with its node's and cluster-wide events
// interleaved). Events of other pods are ignored. meta may be nil.
// FromEvents does not keep events.
func FromEvents(meta *history.Meta, pod string, events []history.Event) Record {
	m := measurers.Get().(*measurer)
	r := m.measure(meta, pod, events)
	measurers.Put(m)
	return r
}

func (m *measurer) measure(meta *history.Meta, pod string, events []history.Event) Record {
	r := Record{Pod: pod, LatenciesMs: map[Metric]float64{}}
	if meta != nil {
		r.Scenario, r.Policy, r.Seed, r.Trial, r.Backend = meta.Scenario, meta.Policy, meta.Seed, meta.Trial, meta.Backend
	}
	var (
		created, deleted   int64 = never, never
		initialized, ready int64 = never, never
		terminal           int64 = never
		firstMainRunning   int64 = never
		haveSpec           bool
	)
	m.ctrs, m.faults = m.ctrs[:0], m.faults[:0]
	get := m.get
	exitAll := func(t int64) {
		for i := range m.ctrs {
			c := &m.ctrs[i]
			if c.running && c.ranAfterDeletion {
				c.lastExitAfterDeletion = t
			}
			c.running = false
		}
	}
	for i := range events {
		e := &events[i]
		if e.Pod != "" && e.Pod != pod {
			continue
		}
		switch e.Kind {
		case history.PodCreated:
			if created == never {
				created = e.T
			}
			if e.Spec != nil && !haveSpec {
				haveSpec = true
				r.Workload = e.Spec.Workload
				r.RestartPolicy = e.Spec.RestartPolicy
				r.Job = e.Spec.RestartPolicy != "" && e.Spec.RestartPolicy != "Always"
				for _, part := range [2][]history.ContainerSpec{e.Spec.Init, e.Spec.Main} {
					for i := range part {
						cs := &part[i]
						c := get(cs.Name)
						c.role = cs.Role
						if cs.UserSidecar() {
							c.role = roleSidecar
						}
						c.waits = cs.WaitsForSidecars
						switch c.role {
						case roleInit:
							r.Inits++
						case roleSidecar:
							r.Sidecars++
						default:
							r.Mains++
						}
					}
				}
			}
		case history.PodScheduled:
			if r.Node == "" {
				r.Node = e.Node
			}
		case history.PodDeleted:
			if deleted == never {
				deleted = e.T
				r.Deleted = true
				for i := range m.ctrs {
					c := &m.ctrs[i]
					c.ranAfterDeletion = c.running
				}
			}
		case history.PodPhase:
			r.Phase = e.Phase
			if (e.Phase == "Succeeded" || e.Phase == "Failed") && terminal == never {
				terminal = e.T
			}
		case history.PodCondition:
			if e.Value && e.Cond == "Initialized" && initialized == never {
				initialized = e.T
			}
			if e.Value && e.Cond == "Ready" && ready == never {
				ready = e.T
			}
		case history.PodRemoved:
			r.Removed = true
		case history.ContainerRunning:
			c := get(e.Container)
			if c.firstRunning == never {
				c.firstRunning = e.T
			}
			c.running = true
			if deleted != never {
				c.ranAfterDeletion = true
			}
			if e.Attempt > 0 {
				switch c.role {
				case roleInit:
					r.Restarts.Init++
				case roleSidecar:
					r.Restarts.Sidecar++
				default:
					r.Restarts.Main++
				}
			}
			if c.role == roleMain && !c.waits && firstMainRunning == never {
				firstMainRunning = e.T
			}
		case history.ContainerAppStarted:
			c := get(e.Container)
			if c.firstApp == never {
				c.firstApp = e.T
			}
			if c.role == roleMain && c.waits && firstMainRunning == never {
				firstMainRunning = e.T
			}
		case history.ContainerStarted:
			c := get(e.Container)
			c.sawStarted = true
			if e.Value {
				if c.firstStarted == never {
					c.firstStarted = e.T
				}
				c.startedTimes = append(c.startedTimes, e.T)
			}
		case history.ContainerExited:
			c := get(e.Container)
			if c.running && c.ranAfterDeletion {
				c.lastExitAfterDeletion = e.T
			}
			c.running = false
		case history.SandboxLost:
			exitAll(e.T)
		case history.NodeDown:
			if e.Node == "" || e.Node == r.Node {
				exitAll(e.T)
			}
		case history.NodeShutdown:
			if created != never && e.T >= created && (e.Node == "" || e.Node == r.Node) {
				for i := range m.faults {
					if fs := &m.faults[i].seen; m.faults[i].key.name == "node-shutdown" && fs.begun && !fs.notApplied {
						fs.effect, fs.proven = true, true
					}
				}
			}
		case history.ContainerImageChanged:
			if created != never && e.T >= created && e.Pod == pod {
				for i := range m.faults {
					if fs := &m.faults[i].seen; m.faults[i].key.name == "image-change" && fs.begun && !fs.effect {
						fs.effect, fs.proven = true, true
					}
				}
			}
		case history.FaultBegin:
			if e.Fault == "node-shutdown" || e.Fault == "image-change" {
				m.fault(faultKey{e.Fault, e.FaultID}).begun = true
			}
		case history.FaultEffect, history.FaultEnd, history.FaultNotApplied:
			if created != never && e.T >= created { // "while it lived"
				fs := m.fault(faultKey{e.Fault, e.FaultID})
				switch e.Kind {
				case history.FaultEffect:
					fs.effect = true
				case history.FaultEnd:
					fs.end = true
				default:
					fs.notApplied = !fs.proven // the pod's history proved it took effect
				}
			}
		}
		if r.Node == "" && e.Node != "" && e.Pod == pod {
			r.Node = e.Node
		}
	}
	for _, f := range m.faults {
		k, fs := f.key, f.seen
		// Effect seen during the pod's life, or the end of a fault that
		// was in effect when the pod's history began (no not-applied).
		if fs.effect || (fs.end && !fs.notApplied) {
			r.Faulted = true
			if k.name != "" && !slices.Contains(r.Faults, k.name) {
				r.Faults = append(r.Faults, k.name)
			}
		}
	}
	slices.Sort(r.Faults)

	set := func(m Metric, from, to int64) {
		if from == never || to == never {
			return
		}
		if to < from {
			r.Notes = append(r.Notes, m+": negative interval")
		}
		r.LatenciesMs[m] = msBetween(from, to)
	}
	if created == never {
		r.Notes = append(r.Notes, "no pod.created event: creation-based metrics omitted")
	}

	// pod_startup: all sidecars and mains started.
	startupAt, counted := int64(never), 0
	allStarted := true
	for i := range m.ctrs {
		c := &m.ctrs[i]
		if c.role == roleInit {
			continue
		}
		counted++
		t := c.firstStarted
		switch {
		case c.waits:
			t = c.firstApp
		case !c.sawStarted:
			t = c.firstRunning
		}
		if t == never {
			allStarted = false
			break
		}
		startupAt = max(startupAt, t)
	}
	if allStarted && counted > 0 {
		set(PodStartup, created, startupAt)
	}
	set(CreateToInitialized, created, initialized)
	set(CreateToReady, created, ready)
	if r.Job {
		set(JobCompletion, created, terminal)
	}

	// sidecar_gate: last sidecar start before the first main ran → that run.
	if r.Sidecars > 0 && firstMainRunning != never {
		gate, ok := int64(never), true
		for i := range m.ctrs {
			c := &m.ctrs[i]
			if c.role != roleSidecar {
				continue
			}
			times := c.startedTimes
			if !c.sawStarted && c.firstRunning != never {
				times = []int64{c.firstRunning} // does not escape
			}
			last := int64(never)
			for _, t := range times {
				if t <= firstMainRunning {
					last = max(last, t)
				}
			}
			if last == never {
				ok = false
				break
			}
			gate = max(gate, last)
		}
		if ok {
			set(SidecarGate, gate, firstMainRunning)
		} else {
			r.Notes = append(r.Notes, "sidecar_gate: a main container ran before every sidecar had started")
		}
	}

	// deletion_to_exited.
	if deleted != never {
		end, anyRunning, done := int64(never), false, true
		for i := range m.ctrs {
			c := &m.ctrs[i]
			if !c.ranAfterDeletion {
				continue
			}
			anyRunning = true
			if c.running || c.lastExitAfterDeletion == never {
				done = false
				break
			}
			end = max(end, c.lastExitAfterDeletion)
		}
		if anyRunning && done {
			set(DeletionToExited, deleted, end)
		}
	}
	return r
}
