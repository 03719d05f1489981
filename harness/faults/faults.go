// Package faults is sidebench's fault catalogue and schedule: what a fault
// does (Kind and its parameters), when it fires (Schedule) and where it hits
// (Target). It is pure data plus selection logic; each backend applies the
// faults its own way and records in the history that they took effect
// (fault.begin, fault.effect, fault.end, fault.not-applied).
//
// The package holds no backend types: selection works on plain descriptions
// of the world (World, Workload, Container) and a caller-supplied random
// source, so that a backend stays deterministic.
package faults

import (
	"fmt"
	"math"
	"time"

	"github.com/sidebench/sidebench/reference-impl/api"
)

// Kind names a fault of the catalogue.
type Kind uint8

const (
	KindInvalid Kind = iota
	// KubeletCrash: the kubelet process dies; its pod state machines are
	// discarded at once. For Downtime nothing is started, stopped or probed
	// and no status is published, while containers keep running (and
	// exiting) under the runtime. Then a fresh kubelet with no memory
	// relists from the runtime's records (INV-F1, INV-F2, INV-F6).
	// RecoveryCrash makes it crash once more shortly after coming back.
	KubeletCrash
	// RuntimeRestart: the container runtime refuses every call for Downtime;
	// calls in flight fail (the kubelet retries). Mode KeepContainers keeps
	// containers and sandboxes (INV-F7); KillContainers loses them all
	// (sandbox lost: INV-F3 re-initialization).
	RuntimeRestart
	// OOMKill: the target container exits 137, reason OOMKilled, with no
	// preStop hook (INV-Q4, INV-H1).
	OOMKill
	// NodeShutdown: graceful node shutdown (INV-F4). The kubelet terminates
	// regular pods with budget ShutdownGracePeriod −
	// ShutdownGracePeriodCriticalPods, then critical pods with
	// ShutdownGracePeriodCriticalPods; then the node goes down. With Return
	// it comes back after Downtime with every sandbox lost.
	NodeShutdown
	// NodePoweroff: everything on the node dies at once (exit 137, no
	// preStop, no grace, INV-F5). With Return the node comes back after
	// Downtime with every sandbox lost and a fresh kubelet relists (INV-F3).
	NodePoweroff
	// ContainerGC: the runtime removes exited regular init container records
	// (AllExited: every exited container record) (INV-F1).
	ContainerGC
	// ProbeFailure: the Probe of the target container fails for Window,
	// whatever the container's behaviour says.
	ProbeFailure
	// ImageChange: the spec image of the target container changes to Image
	// (INV-U1).
	ImageChange
	// ImagePullFailure: pulls of the target container's image fail for
	// Window (0: for good). Each start in that time fails with ErrImagePull
	// and the kubelet's image back-off holds the next (ImagePullBackOff).
	ImagePullFailure
	// ContainerKill: something outside the kubelet kills the target
	// container: Signal (default SIGKILL: exit 137; SIGTERM: the
	// container's own SIGTERM handling) or an exit with ExitCode. No
	// preStop; the kubelet sees an exit and applies the restart policy.
	ContainerKill
	// ContainerUnknown: the runtime reports the target container's state
	// as Unknown (CRI CONTAINER_UNKNOWN); the kubelet kills and recreates
	// it (INV-F8).
	ContainerUnknown
	// Resize: the target container's resources change in place through
	// the API (an in-place resize request, INV-U2); its resizePolicy says
	// whether the kubelet restarts it.
	Resize

	kindCount
)

var kindNames = [kindCount]string{"", "kubelet-crash", "runtime-restart", "oom-kill", "node-shutdown", "node-poweroff", "container-gc", "probe-failure", "image-change",
	"image-pull-failure", "container-kill", "container-unknown", "resize"}

func (k Kind) String() string {
	if k < kindCount && k != KindInvalid {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// ParseKind maps a catalogue name ("kubelet-crash", ...) to its Kind.
func ParseKind(s string) (Kind, bool) {
	for k := Kind(1); k < kindCount; k++ {
		if kindNames[k] == s {
			return k, true
		}
	}
	return KindInvalid, false
}

// KindNames lists the catalogue names in catalogue order.
func KindNames() []string { return append([]string(nil), kindNames[1:]...) }

// NodeLevel reports whether the fault hits a node (kubelet, runtime, the
// whole node, the runtime's garbage collector) rather than one container.
func (k Kind) NodeLevel() bool {
	switch k {
	case KubeletCrash, RuntimeRestart, NodeShutdown, NodePoweroff, ContainerGC:
		return true
	}
	return false
}

// RuntimeMode says what a runtime restart does to containers.
type RuntimeMode uint8

const (
	// KeepContainers: containers and sandboxes survive the restart.
	KeepContainers RuntimeMode = iota
	// KillContainers: every container and sandbox of the node is lost.
	KillContainers
)

func (m RuntimeMode) String() string {
	switch m {
	case KeepContainers:
		return "keep-containers"
	case KillContainers:
		return "kill-containers"
	}
	return fmt.Sprintf("RuntimeMode(%d)", uint8(m))
}

// ParseRuntimeMode is the inverse of RuntimeMode.String.
func ParseRuntimeMode(s string) (RuntimeMode, bool) {
	switch s {
	case "keep-containers", "":
		return KeepContainers, true
	case "kill-containers":
		return KillContainers, true
	}
	return 0, false
}

// DefaultRecoveryCrashAfter is how long after coming back a kubelet with
// RecoveryCrash set crashes again when RecoveryCrashAfter is zero.
const DefaultRecoveryCrashAfter = 100 * time.Millisecond

// Spec is one entry of a scenario's fault list: what, when, where.
type Spec struct {
	// Name identifies the fault in errors and in the history (Event.Fault
	// carries the Kind name, Event.Target the Name). Empty means
	// "<kind>#<index>".
	Name string
	Kind Kind
	When Schedule
	// Where selects nodes (node-level kinds) or pods and containers.
	Where Target

	// Downtime: how long the kubelet (KubeletCrash) or the runtime
	// (RuntimeRestart) stays down, or how long the node stays off before it
	// returns (NodeShutdown, NodePoweroff with Return).
	Downtime time.Duration
	// RecoveryCrash (KubeletCrash): crash a second time RecoveryCrashAfter
	// after coming back (during recovery), down again for Downtime.
	RecoveryCrash      bool
	RecoveryCrashAfter time.Duration
	// Mode (RuntimeRestart): keep or kill containers.
	Mode RuntimeMode
	// ShutdownGracePeriod and ShutdownGracePeriodCriticalPods are the
	// kubelet settings of the same names (NodeShutdown). Regular pods get
	// ShutdownGracePeriod − ShutdownGracePeriodCriticalPods, critical pods
	// get ShutdownGracePeriodCriticalPods.
	ShutdownGracePeriod             time.Duration
	ShutdownGracePeriodCriticalPods time.Duration
	// Return (NodeShutdown, NodePoweroff): the node comes back after
	// Downtime with every sandbox lost; otherwise it stays down and the
	// control plane removes its pods.
	Return bool
	// AllExited (ContainerGC): remove every exited container record, not
	// only those of regular init containers.
	AllExited bool
	// Probe (ProbeFailure) is the probe forced to fail.
	Probe api.ProbeKind
	// Window (ProbeFailure) is how long the probe fails.
	Window time.Duration
	// Image (ImageChange) is the new image.
	Image string
	// Window also bounds an ImagePullFailure (0: for good).

	// Signal (ContainerKill) is the signal number (9 when neither it nor
	// ExitCode is set); with HasExitCode the process exits with ExitCode
	// instead.
	Signal      int
	ExitCode    int32
	HasExitCode bool
	// Resources (Resize) are the new resources; unset fields keep the
	// container's.
	Resources ResourcePatch
}

// Signal numbers the catalogue names (Linux).
const (
	SIGKILL = 9
	SIGTERM = 15
)

// SignalNames maps the signal names a container-kill accepts to their
// numbers (Linux x86-64/arm64).
var SignalNames = map[string]int{"HUP": 1, "INT": 2, "QUIT": 3, "ABRT": 6, "KILL": 9, "USR1": 10, "SEGV": 11, "USR2": 12, "PIPE": 13, "ALRM": 14, "TERM": 15}

// KillSignal is the signal of a ContainerKill (SIGKILL by default).
func (s *Spec) KillSignal() int {
	if s.Signal == 0 {
		return SIGKILL
	}
	return s.Signal
}

// KillExit is the exit code and whether the process exits at once for a
// ContainerKill: an explicit exit code, or 128 + the signal for every
// signal but SIGTERM, which the container handles as it handles any
// SIGTERM (its behaviour's termHandling and termExitCode).
func (s *Spec) KillExit() (code int32, now bool) {
	if s.HasExitCode {
		return s.ExitCode, true
	}
	if sig := s.KillSignal(); sig != SIGTERM {
		return int32(128 + sig), true
	}
	return 0, false
}

// ResourcePatch is a resize: each set field replaces the container's
// value (CPU in millicores, memory in bytes).
type ResourcePatch struct {
	CPURequest, CPULimit, MemRequest, MemLimit *int64
}

// Apply returns r with the patch applied.
func (rp *ResourcePatch) Apply(r api.Resources) api.Resources {
	set := func(dst *int64, v *int64) {
		if v != nil {
			*dst = *v
		}
	}
	set(&r.CPURequest, rp.CPURequest)
	set(&r.CPULimit, rp.CPULimit)
	set(&r.MemRequest, rp.MemRequest)
	set(&r.MemLimit, rp.MemLimit)
	return r
}

// Empty reports whether the patch changes nothing.
func (rp *ResourcePatch) Empty() bool {
	return rp.CPURequest == nil && rp.CPULimit == nil && rp.MemRequest == nil && rp.MemLimit == nil
}

// Label returns Name, or "<kind>#<index>" when Name is empty.
func (s *Spec) Label(index int) string {
	if s.Name != "" {
		return s.Name
	}
	return fmt.Sprintf("%s#%d", s.Kind, index)
}

// ScheduleKind says how a fault's firing times are chosen.
type ScheduleKind uint8

const (
	// Once fires at At.
	Once ScheduleKind = iota
	// Every fires at At, At+Interval, ... each shifted by a uniform draw
	// in [0, Jitter).
	Every
	// Poisson fires as a Poisson process of Rate per second from At.
	Poisson
	// OnPhase fires Delay after a pod matching the target enters Phase.
	OnPhase
	// OnContainer fires Delay after a container event: container
	// Container of a pod matching the target records Event ("200 ms after
	// proxy started"). The fault hits that pod (a node-level fault, its
	// node).
	OnContainer
)

var scheduleNames = [...]string{"once", "every", "poisson", "on-phase", "on-container"}

// ContainerEvent names a container event an OnContainer schedule waits
// for.
type ContainerEvent uint8

const (
	EventNone ContainerEvent = iota
	// EventStartRequested: the kubelet asked the runtime to create and
	// start the container.
	EventStartRequested
	// EventRunning: its process started.
	EventRunning
	// EventStarted: Started=true was published.
	EventStarted
	// EventReady: Ready=true was published.
	EventReady
	// EventExited: the container exited.
	EventExited
	// EventPreStop: its preStop hook began.
	EventPreStop
)

var containerEventNames = [...]string{"", "start-requested", "running", "started", "ready", "exited", "prestop-begin"}

func (c ContainerEvent) String() string {
	if int(c) < len(containerEventNames) {
		return containerEventNames[c]
	}
	return fmt.Sprintf("ContainerEvent(%d)", uint8(c))
}

// ParseContainerEvent is the inverse of ContainerEvent.String.
func ParseContainerEvent(s string) (ContainerEvent, bool) {
	for i, n := range containerEventNames {
		if i > 0 && n == s {
			return ContainerEvent(i), true
		}
	}
	return EventNone, false
}

// EventOfKind maps a history event (its kind name, "container.running",
// and its boolean) to the container event an OnContainer schedule waits
// for; EventNone for any other event. Every backend maps its history this
// way (the package does not import the history's types).
func EventOfKind(kind string, value bool) ContainerEvent {
	switch kind {
	case "container.start-requested":
		return EventStartRequested
	case "container.running":
		return EventRunning
	case "container.started":
		if value {
			return EventStarted
		}
	case "container.ready":
		if value {
			return EventReady
		}
	case "container.exited":
		return EventExited
	case "container.prestop-begin":
		return EventPreStop
	}
	return EventNone
}

// ContainerEventNames lists the events an OnContainer schedule accepts.
func ContainerEventNames() []string { return append([]string(nil), containerEventNames[1:]...) }

func (k ScheduleKind) String() string {
	if int(k) < len(scheduleNames) {
		return scheduleNames[k]
	}
	return fmt.Sprintf("ScheduleKind(%d)", uint8(k))
}

// ParseScheduleKind is the inverse of ScheduleKind.String.
func ParseScheduleKind(s string) (ScheduleKind, bool) {
	for i, n := range scheduleNames {
		if n == s {
			return ScheduleKind(i), true
		}
	}
	return 0, false
}

// PodPhase names a stage of a pod's life an OnPhase schedule can wait for.
// These are lifecycle stages, not API phases.
type PodPhase uint8

const (
	PhaseNone PodPhase = iota
	// PhaseInitializing: the kubelet created the pod's first sandbox.
	PhaseInitializing
	// PhaseRunning: the kubelet first published phase Running.
	PhaseRunning
	// PhaseTerminating: the kubelet began a whole-pod kill.
	PhaseTerminating
)

var podPhaseNames = [...]string{"", "initializing", "running", "terminating"}

func (p PodPhase) String() string {
	if int(p) < len(podPhaseNames) {
		return podPhaseNames[p]
	}
	return fmt.Sprintf("PodPhase(%d)", uint8(p))
}

// ParsePodPhase is the inverse of PodPhase.String.
func ParsePodPhase(s string) (PodPhase, bool) {
	for i, n := range podPhaseNames {
		if i > 0 && n == s {
			return PodPhase(i), true
		}
	}
	return PhaseNone, false
}

// Schedule says when a fault fires. Times are virtual durations since the
// start of the trial.
type Schedule struct {
	Kind ScheduleKind
	// At is the firing time (Once) or the earliest firing time (Every,
	// Poisson, OnPhase).
	At time.Duration
	// Interval (Every) is the period.
	Interval time.Duration
	// Jitter (Every) delays each firing by a uniform draw in [0, Jitter).
	Jitter time.Duration
	// Rate (Poisson) is the mean number of firings per second.
	Rate float64
	// Until: no firing after this time (0 = no end).
	Until time.Duration
	// Max bounds the number of firings (0 = unlimited; Once fires once).
	Max int
	// Phase (OnPhase) is the lifecycle stage that triggers the fault.
	Phase PodPhase
	// Delay (OnPhase) is the time from entering Phase to the firing.
	Delay time.Duration
	// Probability (OnPhase, OnContainer) is the chance that one matching
	// pod entering Phase (or one matching container event) triggers the
	// fault; 0 means 1 (every one, within Max).
	Probability float64
	// Container and Event (OnContainer): the fault fires Delay after
	// container Container records Event.
	Container string
	Event     ContainerEvent
}

// Rand is the random source selection draws from (*math/rand/v2.Rand
// satisfies it). Backends pass a stream derived from the trial seed.
type Rand interface {
	Float64() float64
	IntN(n int) int
}

// Timed reports whether the schedule fires at chosen times (Once, Every,
// Poisson) rather than on pod events (OnPhase, OnContainer).
func (s *Schedule) Timed() bool { return s.Kind != OnPhase && s.Kind != OnContainer }

// TriggersOn reports whether container event ev of container name at now
// triggers an OnContainer fault that already fired fired times.
func (s *Schedule) TriggersOn(name string, ev ContainerEvent, now time.Duration, fired int, r Rand) bool {
	if s.Kind != OnContainer || ev != s.Event || name != s.Container || now < s.At {
		return false
	}
	if s.Until > 0 && now > s.Until {
		return false
	}
	if s.Max > 0 && fired >= s.Max {
		return false
	}
	if s.Probability > 0 && s.Probability < 1 && r.Float64() >= s.Probability {
		return false
	}
	return true
}

// First returns the first firing time of a timed schedule.
func (s *Schedule) First(r Rand) (time.Duration, bool) {
	switch s.Kind {
	case Once:
		return s.At, true
	case Every:
		return s.within(s.At+s.jitter(r), 0)
	case Poisson:
		return s.within(s.At+s.exp(r), 0)
	}
	return 0, false
}

// Next returns the firing after one at prev, given that fired firings
// already happened; false when the schedule is exhausted.
func (s *Schedule) Next(prev time.Duration, fired int, r Rand) (time.Duration, bool) {
	switch s.Kind {
	case Every:
		// Jitter is drawn per firing around the nominal grid so it does not
		// accumulate.
		nominal := s.At + time.Duration(fired)*s.Interval
		return s.within(nominal+s.jitter(r), fired)
	case Poisson:
		return s.within(prev+s.exp(r), fired)
	}
	return 0, false
}

// Triggers reports whether a matching pod entering phase at now triggers an
// OnPhase fault that already fired fired times.
func (s *Schedule) Triggers(phase PodPhase, now time.Duration, fired int, r Rand) bool {
	if s.Kind != OnPhase || phase != s.Phase || now < s.At {
		return false
	}
	if s.Until > 0 && now > s.Until {
		return false
	}
	if s.Max > 0 && fired >= s.Max {
		return false
	}
	if s.Probability > 0 && s.Probability < 1 && r.Float64() >= s.Probability {
		return false
	}
	return true
}

func (s *Schedule) within(t time.Duration, fired int) (time.Duration, bool) {
	if s.Max > 0 && fired >= s.Max {
		return 0, false
	}
	if s.Until > 0 && t > s.Until {
		return 0, false
	}
	return t, true
}

func (s *Schedule) jitter(r Rand) time.Duration {
	if s.Jitter <= 0 {
		return 0
	}
	return time.Duration(r.Float64() * float64(s.Jitter))
}

func (s *Schedule) exp(r Rand) time.Duration {
	u := r.Float64()
	ns := -logOneMinus(u) / s.Rate * float64(time.Second)
	if !(ns < maxGapNanos) { // a rate so low that the gap overflows (or NaN)
		return time.Duration(maxGapNanos)
	}
	return time.Duration(ns)
}

// maxGapNanos caps one Poisson gap so that At plus the gap cannot
// overflow; Validate rejects rates low enough to reach it.
const maxGapNanos = float64(math.MaxInt64 / 2)

// MaxPoissonGap is the largest multiple of the mean a Poisson gap reaches
// (-ln(1-u) for the largest u below 1 a Rand returns, 1-2^-53, is 36.7).
const MaxPoissonGap = 37

// FiringRate returns the mean firings per second of a timed schedule while
// it is active: 1/Interval (Every), Rate (Poisson), 0 (Once, OnPhase).
func (s *Schedule) FiringRate() float64 {
	switch s.Kind {
	case Every:
		if s.Interval > 0 {
			return float64(time.Second) / float64(s.Interval)
		}
	case Poisson:
		return s.Rate
	}
	return 0
}

// Firings returns the expected number of firings of a timed schedule in a
// trial of the given length: within [At, min(Until, length)], at most Max.
// OnPhase schedules depend on pods and return 0.
func (s *Schedule) Firings(length time.Duration) float64 {
	end := length
	if s.Until > 0 && s.Until < end {
		end = s.Until
	}
	if s.Kind == OnPhase || s.At > end {
		return 0
	}
	n := 1.0
	if s.Kind != Once {
		n = s.FiringRate() * (end - s.At).Seconds()
		if s.Kind == Every {
			n++ // the first firing, at At
		}
	}
	if s.Max > 0 {
		n = math.Min(n, float64(s.Max))
	}
	return n
}
