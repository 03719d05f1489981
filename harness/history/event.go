// Package history defines the event log every sidebench backend writes and
// every consumer (checker, metrics, reports) reads: typed container, pod,
// sandbox, probe and fault events with nanosecond timestamps, plus run
// metadata. The JSONL encoding is documented in docs/history.md.
//
// It imports the standard library only: the history is the contract between
// backends and consumers, so it must not drag either side's dependencies.
package history

import (
	"fmt"
)

// Kind is the type of an event. Its JSON form is the dotted name in
// kindNames (e.g. "container.started").
type Kind uint8

const (
	KindInvalid Kind = iota

	// Run framing.
	RunMeta // first line of every run: Meta
	RunEnd  // last line of a complete run: Msg "complete" or "partial"

	// Pod lifecycle (control plane and kubelet status).
	PodCreated     // Spec; the API object exists
	PodScheduled   // Node
	PodDeleted     // deletionTimestamp set; Grace
	PodTerminating // the kubelet began a whole-pod kill: Reason, Grace, Value=ordered
	PodPhase       // Phase, Reason ("Terminated" after node shutdown)
	PodCondition   // Cond, Value
	PodRemoved     // the API object is gone

	// Sandbox.
	SandboxCreated // Attempt
	SandboxLost    // the sandbox died (node reboot, runtime lost it)
	SandboxStopped // the kubelet stopped it (pod finished)

	// Container lifecycle. Container names the container; Attempt is its CRI
	// attempt.
	ContainerStartRequested // kubelet asked the runtime to create+start
	ContainerRunning        // the process started (CRI state Running)
	ContainerPostStartDone  // postStart hook returned; Value=false if it failed
	ContainerStarted        // Started flag published: Value
	ContainerReady          // Ready flag published: Value
	ContainerExited         // Code, Reason
	ContainerPreStopBegin   // Reason (why the container is killed)
	ContainerPreStopEnd
	ContainerStopRequested // CRI StopContainer: SIGTERM with Grace
	ContainerKilled        // SIGKILL (Grace ran out)
	ContainerRemoved       // record removed from the runtime (GC)
	ContainerBackoff       // restart delayed: Grace = delay
	ContainerImageChanged  // spec image changed: Msg = new image
	ContainerStartFailed   // the runtime refused the start: Msg
	// In-place resize (INV-U2). CPU/Mem are requests, CPULimit/MemLimit
	// limits.
	ContainerResize  // spec resources changed: the desired resources
	ContainerResized // the kubelet applied them in place (CRI UpdateContainerResources)
	// ContainerUnknown: the runtime reports the container's state as
	// Unknown (CRI CONTAINER_UNKNOWN); the kubelet kills and recreates it.
	ContainerUnknown
	// ContainerAppStarted: the entrypoint wrapper of a container (a
	// workaround's wait-wrapper, scuttle) exec'd the application after
	// waiting for the pod's sidecars: the application's start, later than
	// container.running. Value: the wait ended with every sidecar ready
	// (false: its timeout expired and it started anyway).
	ContainerAppStarted
	// ContainerServing: the container's application began answering its
	// readiness endpoint (Value true), as the runtime that executes its
	// behaviour knows it, whatever the kubelet's prober has seen yet.
	// Written for the user's sidecars (native, or run as regular
	// containers by a workaround), for the user-level guarantees. Its end
	// is the container's exit.
	ContainerServing

	// Probes.
	ProbeResult // Container, Probe, Result

	// Node-level components (Pod empty, Node set).
	KubeletDown
	KubeletUp
	RuntimeDown
	RuntimeUp
	NodeDown // power-off or shutdown completed
	NodeUp
	NodeShutdown // graceful node shutdown began: Grace = budget

	// Faults. Fault names the catalogue entry, FaultID the instance.
	FaultBegin      // Target describes what it aims at
	FaultEffect     // the fault was verified to have taken effect
	FaultEnd        // the fault is over (e.g. the kubelet is back)
	FaultNotApplied // the fault could not take effect: Msg says why

	kindCount
)

var kindNames = [kindCount]string{
	KindInvalid:             "",
	RunMeta:                 "run.meta",
	RunEnd:                  "run.end",
	PodCreated:              "pod.created",
	PodScheduled:            "pod.scheduled",
	PodDeleted:              "pod.deleted",
	PodTerminating:          "pod.terminating",
	PodPhase:                "pod.phase",
	PodCondition:            "pod.condition",
	PodRemoved:              "pod.removed",
	SandboxCreated:          "sandbox.created",
	SandboxLost:             "sandbox.lost",
	SandboxStopped:          "sandbox.stopped",
	ContainerStartRequested: "container.start-requested",
	ContainerRunning:        "container.running",
	ContainerPostStartDone:  "container.poststart-done",
	ContainerStarted:        "container.started",
	ContainerReady:          "container.ready",
	ContainerExited:         "container.exited",
	ContainerPreStopBegin:   "container.prestop-begin",
	ContainerPreStopEnd:     "container.prestop-end",
	ContainerStopRequested:  "container.stop-requested",
	ContainerKilled:         "container.killed",
	ContainerRemoved:        "container.removed",
	ContainerBackoff:        "container.backoff",
	ContainerImageChanged:   "container.image-changed",
	ContainerStartFailed:    "container.start-failed",
	ContainerResize:         "container.resize",
	ContainerResized:        "container.resized",
	ContainerUnknown:        "container.unknown",
	ContainerAppStarted:     "container.app-started",
	ContainerServing:        "container.serving",
	ProbeResult:             "probe.result",
	KubeletDown:             "kubelet.down",
	KubeletUp:               "kubelet.up",
	RuntimeDown:             "runtime.down",
	RuntimeUp:               "runtime.up",
	NodeDown:                "node.down",
	NodeUp:                  "node.up",
	NodeShutdown:            "node.shutdown",
	FaultBegin:              "fault.begin",
	FaultEffect:             "fault.effect",
	FaultEnd:                "fault.end",
	FaultNotApplied:         "fault.not-applied",
}

var kindByName = func() map[string]Kind {
	m := make(map[string]Kind, kindCount)
	for k, n := range kindNames {
		if n != "" {
			m[n] = Kind(k)
		}
	}
	return m
}()

func (k Kind) String() string {
	if k < kindCount {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// ParseKind maps a JSON kind name back to its Kind.
func ParseKind(s string) (Kind, bool) {
	k, ok := kindByName[s]
	return k, ok
}

// Kinds returns every valid kind.
func Kinds() []Kind {
	out := make([]Kind, 0, kindCount-1)
	for k := Kind(1); k < kindCount; k++ {
		out = append(out, k)
	}
	return out
}

// IsNodeLevel reports whether events of this kind concern a node rather
// than one pod.
func (k Kind) IsNodeLevel() bool {
	switch k {
	case KubeletDown, KubeletUp, RuntimeDown, RuntimeUp, NodeDown, NodeUp, NodeShutdown:
		return true
	}
	return false
}

// Event is one line of a history. It is a flat value type: most fields are
// empty for most kinds (see docs/history.md for which kind uses which).
type Event struct {
	// T is the time in nanoseconds on the backend's clock (sim: since trial
	// start; real backends: Unix time).
	T    int64
	Kind Kind
	// Slot is an in-process hint, never encoded or decoded: the producer's
	// stable number for the event's pod, plus one (0: none). A producer
	// that keeps each live pod in a slot (the sim) sets it, so that a
	// Partitioner finds the pod's buffer by index instead of hashing its
	// name, and can prefetch it ahead of the event (Prefetcher). A wrong
	// hint costs a lookup by name, never a misfiled event.
	Slot int32
	// Pod is "namespace/name", unique within a run. Empty for node-level
	// events.
	Pod  string
	Node string
	// Container names the container for container.* and probe.* events.
	Container string
	Attempt   uint32
	Code      int32
	// Reason is an exit reason (Completed, Error, OOMKilled), a kill reason
	// (PodDeleted, LivenessProbe, ...), or a phase reason (Terminated).
	Reason string
	// Grace is a duration in nanoseconds (stop grace, deletion grace,
	// backoff delay, shutdown budget).
	Grace int64
	// CritGrace is the critical pods' part of a graceful node shutdown's
	// budget (node.shutdown; shutdownGracePeriodCriticalPods), in ns.
	CritGrace int64
	// CPU (milli-CPU) and Mem (bytes) are requests: a pod's effective
	// requests as the scheduler and the kubelet's admission count them
	// (pod.scheduled, INV-Q1), a container's desired or applied requests
	// (container.resize, container.resized, INV-U2). CPULimit and MemLimit
	// are the limits of the latter two.
	CPU, Mem           int64
	CPULimit, MemLimit int64
	// OOMScoreAdj is the oom_score_adj the kubelet gave the container
	// (container.start-requested; CRI LinuxContainerResources, INV-Q3).
	// The kubelet's values are -997..1000 and never 0, so 0 means not
	// recorded.
	OOMScoreAdj int32
	// CPUs is the exclusive cpuset the static CPU manager gave the
	// container (container.start-requested; CRI
	// LinuxContainerResources.CpusetCpus, e.g. "2-3"), empty for the shared
	// pool or when not recorded (INV-Q5).
	CPUs  string
	Phase string // Pending, Running, Succeeded, Failed
	Cond  string // Initialized, ContainersReady, Ready, AllContainersRestarting; PodResizePending, PodResizeInProgress (local backend)
	Value bool
	Probe string // startup, readiness, liveness
	// Result is a probe result: success or failure.
	Result string

	Fault   string // fault catalogue name, e.g. "kubelet-crash"
	FaultID uint32
	Target  string
	Msg     string

	Spec *PodSpec // pod.created only
	Meta *Meta    // run.meta only
}

// Meta describes a run. It is the payload of the first line of a run.
type Meta struct {
	Scenario string `json:"scenario"`
	// ScenarioHash identifies the scenario file content.
	ScenarioHash string `json:"scenarioHash,omitempty"`
	Seed         uint64 `json:"seed"`
	Trial        int    `json:"trial"`
	// Policy is the api.Gates string, e.g. "kep753" or
	// "kep753+bug:reinit-mains-first".
	Policy  string `json:"policy"`
	Backend string `json:"backend"`
	Version string `json:"version"`
	// StartUnixNano anchors the run's clock: sim time 0 corresponds to it.
	StartUnixNano int64 `json:"startUnixNano,omitempty"`
	// Tolerance is the timing tolerance (ns) checkers allow for this backend.
	ToleranceNanos int64 `json:"toleranceNanos,omitempty"`
	// Extra holds backend-specific facts (kubelet version, node count...).
	Extra map[string]string `json:"extra,omitempty"`
}

// PodSpec is the part of a pod spec a consumer needs to check ordering:
// the containers in spec order with their roles and what they carry.
type PodSpec struct {
	Init          []ContainerSpec `json:"init,omitempty"`
	Main          []ContainerSpec `json:"main"`
	RestartPolicy string          `json:"restartPolicy"` // Always, OnFailure, Never
	// Grace is terminationGracePeriodSeconds in nanoseconds.
	Grace    int64 `json:"grace"`
	Critical bool  `json:"critical,omitempty"`
	// QOSClass is the pod's status.qosClass as the API server set it at
	// creation (Guaranteed, Burstable, BestEffort); empty when the backend
	// does not report it (INV-Q2).
	QOSClass string `json:"qosClass,omitempty"`
	// OverheadCPU (milli-CPU) and OverheadMem (bytes) are spec.overhead.
	OverheadCPU int64 `json:"overheadCpu,omitempty"`
	OverheadMem int64 `json:"overheadMem,omitempty"`
	// Labels are the pod's labels (for fault targeting and reports).
	Labels map[string]string `json:"labels,omitempty"`
	// Workload names the workload (template) the pod came from.
	Workload string `json:"workload,omitempty"`
}

// ContainerSpec is one container of a PodSpec.
type ContainerSpec struct {
	Name string `json:"name"`
	Role string `json:"role"` // init, sidecar, main
	// Intent is the role the scenario's template gave the container when
	// a workaround policy runs it in another role ("sidecar" for a native
	// sidecar run as a regular container); empty otherwise. User-level
	// guarantees (docs/checker.md) judge the user's sidecars by it.
	Intent string `json:"intent,omitempty"`
	// WaitsForSidecars: the container's entrypoint waits for the pod's
	// sidecars before it execs the application, which starts at
	// container.app-started, not at container.running (a workaround's
	// wrapper).
	WaitsForSidecars bool   `json:"waitsForSidecars,omitempty"`
	Image            string `json:"image,omitempty"`
	Startup          bool   `json:"startupProbe,omitempty"`
	Readiness        bool   `json:"readinessProbe,omitempty"`
	Liveness         bool   `json:"livenessProbe,omitempty"`
	PostStart        bool   `json:"postStart,omitempty"`
	PreStop          bool   `json:"preStop,omitempty"`
	// RestartPolicy is the container-level restartPolicy of a main
	// container (ContainerRestartRules), empty when unset.
	RestartPolicy string `json:"restartPolicy,omitempty"`
	// Rules are its restartPolicyRules, in order.
	Rules []RestartRule `json:"restartPolicyRules,omitempty"`
	// Resources: requests and limits in milli-CPU and bytes, as the API
	// server defaulted them (a limit without a request sets the request).
	CPURequest int64 `json:"cpuRequest,omitempty"`
	CPULimit   int64 `json:"cpuLimit,omitempty"`
	MemRequest int64 `json:"memRequest,omitempty"`
	MemLimit   int64 `json:"memLimit,omitempty"`
	// CPUResizeRestart and MemResizeRestart: resizePolicy RestartContainer
	// for that resource (NotRequired otherwise).
	CPUResizeRestart bool `json:"cpuResizeRestart,omitempty"`
	MemResizeRestart bool `json:"memResizeRestart,omitempty"`
	// Probe timings, when the backend reports them (nil otherwise).
	StartupSpec   *ProbeSpec `json:"startupProbeSpec,omitempty"`
	ReadinessSpec *ProbeSpec `json:"readinessProbeSpec,omitempty"`
	LivenessSpec  *ProbeSpec `json:"livenessProbeSpec,omitempty"`
}

// ProbeSpec is the timing of one probe. Durations are in nanoseconds.
type ProbeSpec struct {
	InitialDelay int64 `json:"initialDelay,omitempty"`
	Period       int64 `json:"period"`
	Success      int32 `json:"successThreshold"`
	Failure      int32 `json:"failureThreshold"`
	// Grace is the probe-level terminationGracePeriodSeconds (liveness and
	// startup probes; 0: the pod's applies).
	Grace int64 `json:"grace,omitempty"`
}

// RestartRule is one restartPolicyRules entry of a container.
type RestartRule struct {
	Action   string  `json:"action"`   // Restart, RestartAllContainers
	Operator string  `json:"operator"` // In, NotIn
	Values   []int32 `json:"values"`
}

// UserSidecar reports whether the scenario's template made c a sidecar,
// whatever role a workaround policy runs it in.
func (c *ContainerSpec) UserSidecar() bool { return c.Role == "sidecar" || c.Intent == "sidecar" }

// Match returns the first rule matching exit code code, or nil.
func (c *ContainerSpec) Match(code int32) *RestartRule {
	for i := range c.Rules {
		r := &c.Rules[i]
		in := false
		for _, v := range r.Values {
			if v == code {
				in = true
				break
			}
		}
		if in == (r.Operator != "NotIn") {
			return r
		}
	}
	return nil
}

// Sink receives events in order. Implementations must not keep e after
// Write returns (the caller may reuse it).
type Sink interface {
	Write(e *Event) error
}

// Discard is a Sink that drops everything (for benchmarks).
var Discard Sink = discard{}

type discard struct{}

func (discard) Write(*Event) error { return nil }
