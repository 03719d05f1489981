package api

import (
	"fmt"
	"time"
)

// SandboxState is the runtime's view of the pod sandbox.
type SandboxState uint8

const (
	// SandboxNone: no sandbox was ever created for this pod on this node.
	SandboxNone SandboxState = iota
	// SandboxReady: the sandbox exists and is usable.
	SandboxReady
	// SandboxLost: the sandbox died or vanished (node reboot, runtime
	// restart in kill-containers mode). INV-F3 applies.
	SandboxLost
)

func (s SandboxState) String() string {
	switch s {
	case SandboxNone:
		return "none"
	case SandboxReady:
		return "ready"
	case SandboxLost:
		return "lost"
	}
	return fmt.Sprintf("SandboxState(%d)", uint8(s))
}

// Sandbox is the observed pod sandbox. Attempt counts sandboxes created for
// the pod (0 for the first), like the CRI PodSandboxMetadata.Attempt.
type Sandbox struct {
	State   SandboxState
	Attempt uint32
}

// ContainerState is the CRI state of a container record.
type ContainerState uint8

const (
	// StateNone means there is no record: never created, or removed
	// (garbage-collected) from the runtime.
	StateNone ContainerState = iota
	StateCreated
	StateRunning
	StateExited
	StateUnknown
)

func (s ContainerState) String() string {
	switch s {
	case StateNone:
		return "none"
	case StateCreated:
		return "created"
	case StateRunning:
		return "running"
	case StateExited:
		return "exited"
	case StateUnknown:
		return "unknown"
	}
	return fmt.Sprintf("ContainerState(%d)", uint8(s))
}

// Reason explains an exit.
type Reason uint8

const (
	ReasonNone Reason = iota
	ReasonCompleted
	ReasonError
	ReasonOOMKilled
	// ReasonContainerCannotRun: the runtime refused to start it.
	ReasonContainerCannotRun
)

func (r Reason) String() string {
	switch r {
	case ReasonNone:
		return ""
	case ReasonCompleted:
		return "Completed"
	case ReasonError:
		return "Error"
	case ReasonOOMKilled:
		return "OOMKilled"
	case ReasonContainerCannotRun:
		return "ContainerCannotRun"
	}
	return fmt.Sprintf("Reason(%d)", uint8(r))
}

// ParseReason is the inverse of Reason.String.
func ParseReason(s string) (Reason, bool) {
	for r := ReasonNone; r <= ReasonContainerCannotRun; r++ {
		if r.String() == s {
			return r, true
		}
	}
	return 0, false
}

// ContainerRecord is the latest runtime record of one container of the pod
// (the CRI ContainerStatus the kubelet's PLEG sees). Records of earlier
// attempts are not kept: the planner, like the kubelet, decides from the
// latest record.
type ContainerRecord struct {
	// The fields are ordered by size so that the record packs without
	// padding: the planner reads every container's record on each step,
	// and a host keeps one per container of every pod alive.

	State  ContainerState
	Reason Reason
	// LastExited says the runtime still holds the record of the attempt
	// before this one, terminated with LastExitCode after running from
	// LastStartedAt to LastFinishedAt. The kubelet reads it as the
	// container's LastTerminationState (kubelet_pods.go
	// convertToAPIContainerStatuses: the second newest record of a name)
	// and as the exit doBackOff measures the backoff from when a restart
	// follows a kill in the same SyncPod (kuberuntime_manager.go). The
	// container GC keeps the newest dead record of each container, so it
	// is there unless the previous record was removed.
	LastExited bool
	// Attempt is the CRI attempt number of this record (restart count).
	Attempt uint32
	// SandboxAttempt is the sandbox this record belongs to.
	SandboxAttempt uint32
	ExitCode       int32
	LastExitCode   int32
	Image          string
	CreatedAt      Time
	StartedAt      Time
	FinishedAt     Time
	LastStartedAt  Time
	LastFinishedAt Time

	// Resources are the resources the runtime applied to the container:
	// the spec's at creation, updated by an in-place resize (the kubelet's
	// actuated resources, INV-U2).
	Resources Resources
}

// Succeed returns the record of a new attempt that replaces r, carrying
// r's termination as the last one if r had exited.
func (r *ContainerRecord) Succeed(next ContainerRecord) ContainerRecord {
	if r.State == StateExited {
		next.LastExited, next.LastExitCode = true, r.ExitCode
		next.LastStartedAt, next.LastFinishedAt = r.StartedAt, r.FinishedAt
	}
	return next
}

// ProbeKind names a probe.
type ProbeKind uint8

const (
	ProbeStartup ProbeKind = iota
	ProbeReadiness
	ProbeLiveness
)

func (k ProbeKind) String() string {
	switch k {
	case ProbeStartup:
		return "startup"
	case ProbeReadiness:
		return "readiness"
	case ProbeLiveness:
		return "liveness"
	}
	return fmt.Sprintf("ProbeKind(%d)", uint8(k))
}

// ProbeResult is the prober's latest verdict for one probe of one container
// attempt.
type ProbeResult uint8

const (
	ProbeUnknown ProbeResult = iota
	ProbeSuccess
	ProbeFailure
)

func (r ProbeResult) String() string {
	switch r {
	case ProbeUnknown:
		return "unknown"
	case ProbeSuccess:
		return "success"
	case ProbeFailure:
		return "failure"
	}
	return fmt.Sprintf("ProbeResult(%d)", uint8(r))
}

// HookState tracks a lifecycle hook of the current container attempt.
type HookState uint8

const (
	HookNone HookState = iota
	HookRunning
	HookDone
	// HookFailed: the postStart hook returned an error. The kubelet kills
	// the container inside the same startContainer call
	// (kuberuntime_container.go step 4: killContainer with reason
	// FailedPostStartHook), so until it exits the container is neither
	// Started nor done starting.
	HookFailed
)

// ContainerObs is everything the kubelet knows about one container: the
// runtime record (survives kubelet restarts) plus kubelet-local memory
// (probe results, hooks in flight, signals sent, backoff) that a restarted
// kubelet does not have.
type ContainerObs struct {
	Record ContainerRecord

	// --- kubelet-local memory below; zero after a kubelet restart ---
	// (flags first, then counters, then times: packed without padding)

	Probe [3]ProbeResult // indexed by ProbeKind, for Record.Attempt
	// PostStart is the postStart hook state of the current attempt.
	PostStart HookState
	// StartPending is set when a start was requested (at
	// StartRequestedAt) and the runtime has not yet reported the new
	// attempt.
	StartPending bool
	// PreStop is the preStop hook state during a kill (started at
	// PreStopStartedAt).
	PreStop HookState
	// StopRequested is set once StopContainer (SIGTERM) was sent (at
	// StopRequestedAt).
	StopRequested bool
	// Killing: a single-container kill is in progress (liveness/startup
	// failure, image change), until KillDeadline, for KillReason.
	Killing     bool
	KillRestart bool // restart after the single-container kill finishes
	KillReason  KillReason

	// RestartedInTerm marks a sidecar restarted during pod termination
	// (KEP-4438); it is SIGKILLed at its turn (alpha limitation).
	RestartedInTerm bool

	// Gone remembers the exit (GoneExitCode) of a record the runtime no
	// longer has (garbage-collected): the kubelet's status manager keeps
	// the last terminated state, so the phase does not regress (INV-C2,
	// P1).
	Gone bool

	// RemovePending is set while a RemoveContainer is in flight.
	RemovePending bool

	// StartedSeen records that status published Started=true for this
	// attempt; it seeds a restarted kubelet from the API server's copy so
	// that Started/Ready do not flap (INV-F1).
	StartedSeen bool
	// ResizePending is set while an in-place resize (CRI
	// UpdateContainerResources) is in flight.
	ResizePending bool

	// ReadySeen is the same for Ready: a restarted kubelet keeps the
	// published Ready of a container that ran before it started until
	// the container's first readiness result (ChangeContainerStatusOn-
	// KubeletRestart off since 1.35: prober_manager.go UpdatePodStatus,
	// setReadyStateOnKubeletRestart).
	ReadySeen bool

	GoneExitCode int32
	// NextAttempt is the attempt number the next start uses; it survives
	// record removal so restart counts keep growing across a reset.
	NextAttempt uint32
	// Restarts counts restarts this kubelet issued (for backoff).
	Restarts uint32
	// StopRefused marks a container whose StopContainer the runtime
	// refused in the current round of a whole-pod kill: its goroutine in
	// killContainersWithSyncResult returned the error without
	// containerTerminated, so it is not signalled again in this round and
	// those waiting for it wait out their grace (even if it exits on its
	// own). (After the counters: it fills their padding.)
	StopRefused bool

	StartRequestedAt Time
	PreStopStartedAt Time
	StopRequestedAt  Time
	KillDeadline     Time

	// Backoff is the crash-loop backoff applied before the next restart.
	Backoff time.Duration

	// PullBackoff is the image pull back-off of the container's image
	// after its last failed pull at PullFailedAt (kubelet memory: the
	// image manager's flowcontrol.Backoff keyed by pod UID and image,
	// 10 s doubling to 300 s, images/image_manager.go EnsureImageExists).
	// While it runs, a start fails with ImagePullBackOff without pulling.
	PullBackoff  time.Duration
	PullFailedAt Time
}

// Termination is the kubelet-local state of a whole-pod kill in progress.
type Termination struct {
	Active bool
	// Reason says why the pod is being killed.
	Reason KillReason
	// Ordered says sidecar termination ordering applies (the pod had a
	// sidecar when the kill began and the policy orders termination).
	Ordered bool
	// SandboxStopSent: the round ended with a refused container still
	// running and StopPodSandbox was sent (killPodWithSyncResult stops
	// the sandboxes whatever the containers' results), which SIGKILLs
	// what is left in the sandbox.
	SandboxStopSent bool
	Start           Time
	Grace           time.Duration
	// RunningAtStart is the set of containers running when the kill began;
	// only those take part in ordering (INV-T9).
	RunningAtStart Set
}

// Deadline is the end of the shared grace budget.
func (t *Termination) Deadline() Time { return t.Start.Add(t.Grace) }

// PodObs is the pod-level part of the observed state.
type PodObs struct {
	// Deleted is set once the API server marked the pod for deletion
	// (deletionTimestamp, DeletedAt, with DeleteGrace), or node shutdown
	// decided to terminate it.
	Deleted bool
	// Shutdown marks a termination caused by graceful node shutdown
	// (INV-F4: terminal phase Failed, reason Terminated).
	Shutdown bool
	// SandboxRequested is set while a sandbox creation is in flight.
	SandboxRequested bool
	// Done is set when the pod reached a terminal state on this node and the
	// kubelet has nothing more to do.
	Done bool
	// Restarting is the API status's AllContainersRestarting condition (the
	// last one published, or the API server's after a kubelet restart): a
	// RestartAllContainers reset goes on while it is True and the runtime
	// holds a record of the pod, even once its trigger's record is gone
	// (kubecontainer.ShouldAllContainersRestart reads the condition first).
	Restarting  bool
	DeletedAt   Time
	DeleteGrace time.Duration
}

// Observed is the full input of the planner besides the spec.
type Observed struct {
	Sandbox    Sandbox
	Containers []ContainerObs // indexed like PodSpec.At
	Pod        PodObs
	Term       Termination
}
