package api

import (
	"fmt"
	"time"
)

// InputKind names what happened.
type InputKind uint8

const (
	// InTick: nothing changed; a timer the machine asked for (WakeAt) fired.
	InTick InputKind = iota
	// InRelist: a full runtime snapshot (Sandbox, Records, Started). A fresh
	// machine after a kubelet restart starts from one; the planner does not
	// run between the records of one relist.
	InRelist
	// InSandbox: the sandbox changed (Sandbox).
	InSandbox
	// InContainer: one container record changed or vanished (Container,
	// Record; Record.State == StateNone means removed).
	InContainer
	// InProbe: a probe result (Container, Probe, Result).
	InProbe
	// InPostStartDone: the postStart hook returned (Container, OK=false if it
	// failed, which kills the container: FailedPostStartHook).
	InPostStartDone
	// InPreStopDone: the preStop hook returned (Container).
	InPreStopDone
	// InDelete: the API server marked the pod for deletion (Grace).
	InDelete
	// InNodeShutdown: graceful node shutdown kills the pod with Grace as the
	// budget (INV-F4).
	InNodeShutdown
	// InImage: the spec image of Container changed to Image (INV-U1).
	InImage
	// InActionFailed: the runtime refused Action for Container (runtime
	// down); with PullFailed, the start of Container failed because its
	// image could not be pulled (ErrImagePull).
	InActionFailed
	// InResize: the spec resources of Container changed to Resources (an
	// in-place resize request, INV-U2).
	InResize
)

var inputKindNames = [...]string{"tick", "relist", "sandbox", "container", "probe", "poststart-done", "prestop-done", "delete", "node-shutdown", "image", "action-failed", "resize"}

func (k InputKind) String() string {
	if int(k) < len(inputKindNames) {
		return inputKindNames[k]
	}
	return fmt.Sprintf("InputKind(%d)", uint8(k))
}

// Input is one thing that happened, fed to Machine.Step. It is a flat value
// so stepping does not allocate.
type Input struct {
	Kind      InputKind
	Container int
	Probe     ProbeKind
	Result    ProbeResult
	OK        bool
	Grace     time.Duration
	Image     string
	Resources Resources
	Action    ActionKind
	Sandbox   Sandbox
	Record    ContainerRecord
	// Records and Status carry an InRelist snapshot: one record per
	// container (indexed like PodSpec.At) and the pod status the API server
	// holds (what the previous kubelet last published), which a restarted
	// kubelet's status manager starts from so Started/Ready do not flap.
	Records []ContainerRecord
	Status  PodStatus
	// PullFailed (InActionFailed of ActStartContainer): the image pull
	// failed, so the start failed with ErrImagePull and the image back-off
	// grows.
	PullFailed bool
	// Deleted says the pod already has a deletionTimestamp (with Grace)
	// when the kubelet relists: a restarted kubelet retries termination
	// from the start with the full grace (INV-F6).
	Deleted bool
	// More says another input of the same observation follows at the same
	// instant: the machine applies this one and plans only after the last.
	// A relist that succeeds after failing (the runtime is back) reports
	// every change since in one pass, and the pod worker's next sync reads
	// them all from the cache at once: a sidecar's exit must not be acted
	// on before the main's exit heard in the same relist.
	More bool
}

// ActionKind names what the kubelet asks the runtime to do.
type ActionKind uint8

const (
	// ActCreateSandbox: create a new sandbox (Attempt).
	ActCreateSandbox ActionKind = iota + 1
	// ActStartContainer: create and start Container (attempt Attempt); if the
	// spec has a postStart hook the backend runs it and reports
	// InPostStartDone.
	ActStartContainer
	// ActRunPreStop: run the preStop hook of Container; report InPreStopDone.
	ActRunPreStop
	// ActStopContainer: CRI StopContainer(Container, Grace): SIGTERM now,
	// SIGKILL when Grace runs out.
	ActStopContainer
	// ActStopSandbox: the pod is finished on this node; stop its sandbox.
	ActStopSandbox
	// ActRemoveContainer: CRI RemoveContainer of Container's record (a
	// RestartAllContainers reset); report InContainer with StateNone.
	ActRemoveContainer
	// ActResizeContainer: CRI UpdateContainerResources of Container to
	// its spec resources (Resources); report InContainer with the record's
	// new Resources.
	ActResizeContainer
)

var actionKindNames = [...]string{"", "create-sandbox", "start", "prestop", "stop", "stop-sandbox", "remove", "resize"}

func (k ActionKind) String() string {
	if int(k) < len(actionKindNames) && k != 0 {
		return actionKindNames[k]
	}
	return fmt.Sprintf("ActionKind(%d)", uint8(k))
}

// KillReason says why a container or the pod is killed (typed, as in the
// kubelet's containerKillReason).
type KillReason uint8

const (
	KillNone KillReason = iota
	KillPodDeleted
	KillPodCompleted // no main container running or restartable (INV-R6, C1)
	KillInitFailed   // regular init failed under restartPolicy Never (INV-S6)
	KillSandboxLost  // INV-F3
	KillNodeShutdown // INV-F4
	KillLivenessProbe
	KillStartupProbe
	KillFailedPostStartHook
	KillSpecChanged  // image change, INV-U1
	KillUnknownState // INV-F8
	KillRestartAll   // RestartAllContainers reset (INV-RA*)
	KillResize       // in-place resize with resizePolicy RestartContainer (INV-U2)
)

var killReasonNames = [...]string{"", "PodDeleted", "PodCompleted", "InitFailed", "SandboxLost", "NodeShutdown", "LivenessProbe", "StartupProbe", "FailedPostStartHook", "SpecChanged", "UnknownState", "RestartAllContainers", "ResizeRestart"}

// WholePod reports whether r is the reason of a whole-pod kill
// (killPodWithSyncResult) rather than of a single container's.
func (r KillReason) WholePod() bool { return r >= KillPodDeleted && r <= KillNodeShutdown }

func (r KillReason) String() string {
	if int(r) < len(killReasonNames) {
		return killReasonNames[r]
	}
	return fmt.Sprintf("KillReason(%d)", uint8(r))
}

// ParseKillReason is the inverse of KillReason.String.
func ParseKillReason(s string) (KillReason, bool) {
	for i, n := range killReasonNames {
		if n == s {
			return KillReason(i), true
		}
	}
	return 0, false
}

// Action is one runtime call the planner decided on.
type Action struct {
	Kind      ActionKind
	Container int
	Attempt   uint32
	Grace     time.Duration
	Reason    KillReason
	// Resources are the resources of an ActResizeContainer.
	Resources Resources
	// Restart marks a kill (ActRunPreStop/ActStopContainer of a single
	// container) after which the container is restarted whatever the pod
	// restart policy (spec change, probe failure under Always/OnFailure,
	// unknown state).
	Restart bool
}

func (a Action) String() string {
	switch a.Kind {
	case ActCreateSandbox:
		return fmt.Sprintf("create-sandbox attempt=%d", a.Attempt)
	case ActStartContainer:
		return fmt.Sprintf("start #%d attempt=%d", a.Container, a.Attempt)
	case ActRunPreStop:
		return fmt.Sprintf("prestop #%d reason=%s", a.Container, a.Reason)
	case ActStopContainer:
		return fmt.Sprintf("stop #%d grace=%v reason=%s", a.Container, a.Grace, a.Reason)
	case ActStopSandbox:
		return "stop-sandbox"
	case ActRemoveContainer:
		return fmt.Sprintf("remove #%d reason=%s", a.Container, a.Reason)
	case ActResizeContainer:
		return fmt.Sprintf("resize #%d %+v", a.Container, a.Resources)
	}
	return a.Kind.String()
}

// Phase is the pod phase.
type Phase uint8

const (
	PhasePending Phase = iota
	PhaseRunning
	PhaseSucceeded
	PhaseFailed
)

var phaseNames = [...]string{"Pending", "Running", "Succeeded", "Failed"}

func (p Phase) String() string {
	if int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return fmt.Sprintf("Phase(%d)", uint8(p))
}

// ParsePhase is the inverse of Phase.String.
func ParsePhase(s string) (Phase, bool) {
	for i, n := range phaseNames {
		if n == s {
			return Phase(i), true
		}
	}
	return 0, false
}

// Terminal reports whether p is Succeeded or Failed.
func (p Phase) Terminal() bool { return p == PhaseSucceeded || p == PhaseFailed }

// PodStatus is what the kubelet publishes.
type PodStatus struct {
	Phase           Phase
	Initialized     bool
	ContainersReady bool
	Ready           bool
	// AllContainersRestarting is the KEP-5532 condition: a
	// RestartAllContainers reset is in progress.
	AllContainersRestarting bool
	// ShutdownTerminated: a pod killed by graceful node shutdown; its
	// status reason is "Terminated" (Reason). A flag, not a string, keeps
	// the status within its cache budget (harness/sim layout_test.go).
	ShutdownTerminated bool
	// Started and ReadySet hold the per-container Started/Ready flags.
	Started  Set
	ReadySet Set
	// Terminated holds the containers whose status shows a last
	// termination (a terminated state, kept after the runtime removed the
	// record), and TerminatedFailed those of them with a non-zero exit
	// code. A restarted kubelet rebuilds from them the exits of removed
	// records, as convertToAPIContainerStatuses starts from the old
	// status.
	Terminated       Set
	TerminatedFailed Set
}

// Reason is the pod status reason: "Terminated" after a graceful node
// shutdown killed the pod, else "".
func (s *PodStatus) Reason() string {
	if s.ShutdownTerminated {
		return "Terminated"
	}
	return ""
}

// Condition names a pod condition.
type Condition uint8

const (
	CondInitialized Condition = iota
	CondContainersReady
	CondReady
	CondAllContainersRestarting
)

var conditionNames = [...]string{"Initialized", "ContainersReady", "Ready", "AllContainersRestarting"}

func (c Condition) String() string {
	if int(c) < len(conditionNames) {
		return conditionNames[c]
	}
	return fmt.Sprintf("Condition(%d)", uint8(c))
}

// ParseCondition is the inverse of Condition.String.
func ParseCondition(s string) (Condition, bool) {
	for i, n := range conditionNames {
		if n == s {
			return Condition(i), true
		}
	}
	return 0, false
}

// Plan is the planner's decision for one step, the analogue of the
// kubelet's podActions. Actions are listed in the order they must be
// issued.
type Plan struct {
	Actions []Action
	// KillPod asks the host (the Machine) to begin a whole-pod kill for
	// KillReason; the next plan then carries the termination actions.
	KillPod    bool
	KillReason KillReason
	// TermComplete says the whole-pod kill in progress has finished: no
	// container of the pod is running any more.
	TermComplete bool
	Status       PodStatus
	// WakeAt asks to be stepped again at this time (backoff expiry, grace
	// deadline); Never means no timer is needed.
	WakeAt Time
}

// TraceKind names a machine transition.
type TraceKind uint8

const (
	TracePhase TraceKind = iota + 1
	TraceCondition
	TraceStarted
	TraceReady
	// TraceTerminating: a whole-pod kill began (Reason, Grace, Ordered).
	TraceTerminating
	// TraceBackoff: a restart of Container is delayed until At.
	TraceBackoff
)

// TraceEvent is one typed transition of the machine, written to the
// history by the backend.
type TraceEvent struct {
	Kind      TraceKind
	Container int
	Value     bool
	Phase     Phase
	Cond      Condition
	Reason    KillReason
	Grace     time.Duration
	At        Time
}

// Ready is the batch of output a machine has for its host, in the shape of
// raft's Ready: execute the actions in order, record the trace, arm a timer
// for WakeAt, then call Advance.
type Ready struct {
	Actions []Action
	Trace   []TraceEvent
	Status  PodStatus
	WakeAt  Time
}
