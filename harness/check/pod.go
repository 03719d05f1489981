package check

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/sidebench/sidebench/harness/history"
)

// none marks an event index that does not exist.
const none int32 = -1

// Role is a container's role in the spec.
type Role uint8

const (
	RoleInit    Role = iota // regular init container
	RoleSidecar             // init container with restartPolicy Always
	RoleMain                // entry of spec.containers
)

// Attempt is one run of a container: from its start request to its exit.
// Fields are indices into Pod.Ev (none if the event did not happen), so a
// checker compares causality by index (file order, which breaks timestamp
// ties the way the backend observed them) and reads times through Pod.T.
type Attempt struct {
	Sandbox    int32 // index into Pod.Sandboxes
	Req        int32 // container.start-requested
	Running    int32 // container.running
	PostStart  int32 // container.poststart-done
	Started    int32 // first container.started=true
	StartupOK  int32 // first startup probe success
	PreStop    int32 // container.prestop-begin
	PreStopEnd int32
	Stop       int32 // first container.stop-requested (SIGTERM)
	Kill       int32 // container.killed (SIGKILL)
	// Signal is the first container.stop-requested the runtime took (it
	// was up), or the first after a runtime restart that cut it: a refused
	// request signalled nothing, and a restart loses the SIGKILL timer of
	// a call in flight.
	Signal int32
	// Unknown is the first container.unknown: the runtime reported the
	// state Unknown (the process may still run).
	Unknown int32
	// PostStartFailed: the postStart hook returned an error (poststart-done
	// value=false): the kubelet kills the attempt, which never counts as
	// Started (kuberuntime_container.go startContainer step 4).
	PostStartFailed bool
	// probeFailed is the probe of this attempt that failed last and has not
	// passed since (probeLiveness, probeStartup; 0 none): the local and
	// kube backends cannot see why the kubelet stopped a container (CRI
	// StopContainer carries no reason), but they record the probe's
	// failure before it. A byte, not the reason string: attempts are hot.
	probeFailed uint8
	// stopRefused: the attempt's latest kill reached a runtime that was
	// down. The kubelet keeps nothing of a failed killContainer, so a
	// later kill of the attempt is a new decision with its own reason.
	stopRefused bool
	// App is container.app-started (a wrapper exec'd the application),
	// AppOK its value; Serving the first container.serving=true.
	App        int32
	AppOK      bool
	Serving    int32
	Exited     int32
	Code       int32
	ExitReason string
	KillReason string // from prestop-begin or stop-requested
	StopGrace  int64
}

// podWorkerMinGrace is the shortest kill the pod worker gives a pod it
// terminates (a deletion, a node shutdown): calculateEffectiveGracePeriod
// (pod_workers.go) "always supplies a grace period of 1".
const podWorkerMinGrace int64 = 1e9

// Start is the index of the attempt's start: the request if recorded, the
// process start otherwise.
func (a *Attempt) Start() int32 {
	if a.Req != none {
		return a.Req
	}
	return a.Running
}

// runningAt reports whether the attempt's process ran at event index i.
func (a *Attempt) runningAt(i int32) bool {
	return a.Running != none && a.Running < i && (a.Exited == none || a.Exited > i)
}

// Ctr is one container of the spec with its attempts in order.
type Ctr struct {
	Name string
	Role Role
	Spec *history.ContainerSpec
	Att  []Attempt
	Ev   []int32 // every event naming this container

	// alias is the string data of the last event name build found this
	// container by (ctrOf).
	alias *byte
	// preStopSeen: build has read a container.prestop-begin of it;
	// serving: a container.serving.
	preStopSeen, serving bool
}

// Sandbox is one pod sandbox: from sandbox.created to its loss or stop.
type Sandbox struct {
	Idx  int32 // sandbox.created (none for an implicit first sandbox)
	End  int32 // sandbox.lost / sandbox.stopped, none while it lives
	Lost bool
	// Reset marks a virtual sandbox: a RestartAllContainers reset began at
	// Idx (pod.condition AllContainersRestarting=True) in the same real
	// sandbox. Everything started after it is a new initialization, so the
	// start invariants apply again (INV-RA8).
	Reset bool
}

// Term is one whole-pod kill: from pod.terminating to the next one, the
// next sandbox, or the end of the history.
type Term struct {
	Idx     int32
	End     int32 // exclusive
	T       int64
	Grace   int64
	Reason  string
	Ordered bool
	// Abandoned: a kill the kubelet forgot when it restarted
	// (forgottenKill; End is the kubelet.down); nothing after it is part
	// of it.
	Abandoned bool
	Running   uint64 // bit c set: Ctrs[c] was running at Idx
	// Unheard: bit c set: Ctrs[c] exited (or turned Unknown) while the
	// runtime was down, and it is still down at Idx. The PLEG's relist
	// fails until the runtime is back (GenericPLEG.Relist), so to the
	// kubelet the container still runs: it is in the kill's running pod,
	// its StopContainer is refused, and the sidecar before it waits out
	// the grace for its turn.
	Unheard uint64
}

// forgottenKill reports whether a whole-pod kill for reason dies with the
// kubelet, so that a restarted kubelet decides afresh what the pod needs.
// A graceful node shutdown's: the shutdown manager learns of the shutdown
// from logind's PrepareForShutdown signal, sent once, and a restarted
// kubelet starts with nodeShuttingDownNow false
// (nodeshutdown_manager_linux.go), while the pod, neither deleted nor
// terminal in the API (the status manager holds the terminal phase back
// until the kill ends), is synced as a live pod. And a kill SyncPod
// decided itself (computePodActions' KillPod: a completed pod, a failed
// init, a lost sandbox), which the restarted kubelet decides again only if
// the runtime still says so (a completed main whose record GC removed is
// started again). A deletion's kill is retried (INV-F6).
func forgottenKill(reason string) bool {
	switch reason {
	case "NodeShutdown", "PodCompleted", "InitFailed", "SandboxLost":
		return true
	}
	return false
}

func (w *Term) ran(c int) bool { return w.Running&(1<<uint(c)) != 0 }

// inKill reports whether the kill's running pod held Ctrs[c]: it ran at
// Idx, or the kubelet had not heard that it stopped.
func (w *Term) inKill(c int) bool { return (w.Running|w.Unheard)&(1<<uint(c)) != 0 }

// Outage is a period when a node component was down.
type Outage struct {
	What     history.Kind // KubeletDown, RuntimeDown or NodeDown
	Down, Up int32        // Up is none while still down
}

// runtimeDownSince reports whether the runtime went down before event j
// and is still down at event i (j < i), as far as the history read so far
// says: from j to i the kubelet's relist failed, so what the runtime
// recorded at j has not reached the kubelet by i.
func (p *Pod) runtimeDownSince(j, i int32) bool {
	for o := len(p.Outages) - 1; o >= 0; o-- {
		if u := &p.Outages[o]; u.What == history.RuntimeDown && u.Down <= j && (u.Up == none || u.Up > i) {
			return true
		}
	}
	return false
}

// during reports whether the component was down at some point of (i, j):
// it went down before j and was not back by i. during(i, i) says it was
// down at event i.
func (o *Outage) during(i, j int32) bool {
	return o.Down < j && (o.Up == none || o.Up > i)
}

// beganIn reports whether the component went down between events i and
// j (exclusive): a call made at i and still in flight at j was cut.
func (o *Outage) beganIn(i, j int32) bool { return o.Down > i && o.Down < j }

// Fault is one fault instance seen in the pod's history.
type Fault struct {
	Idx        int32
	Name       string
	ID         uint32
	T, EndT    int64 // EndT = horizon while open
	NotApplied bool
}

// Pod is the pre-digested view of one pod's history that every checker
// reads. Build it with BuildPod; Reset lets a worker reuse one.
type Pod struct {
	Name, Node string
	Meta       *history.Meta
	Spec       *history.PodSpec
	Ev         []history.Event
	Tol        int64 // timing tolerance from run.meta
	Horizon    int64 // the history is known to continue at least until here

	Ctrs     []Ctr
	Inits    []int // regular init containers (indices into Ctrs), spec order
	Sidecars []int
	Mains    []int
	NInit    int // len(Spec.Init): Ctrs[:NInit] are init containers
	// USidecars are the user's sidecars (native, or run as regular
	// containers by a workaround: history.ContainerSpec.UserSidecar) and
	// UMains the other main containers: the roles user-level guarantees
	// judge (user.go).
	USidecars []int
	UMains    []int

	Sandboxes []Sandbox
	Terms     []Term
	Outages   []Outage
	Faults    []Fault
	Phases    []int32 // pod.phase
	Conds     []int32 // pod.condition
	Images    []int32 // container.image-changed
	Resizes   []int32 // container.resize
	Scheduled []int32 // pod.scheduled
	Shutdowns []int32 // node.shutdown
	Created   int32   // pod.created with the spec
	Deleted   int32
	Removed   int32

	windows []window
	hint    int // the container ctrOf found last
	// feat is what the history holds, for the worker to skip the
	// checkers that cannot report anything on it (inv.needs).
	feat feature
	// scratch space of the user-level checkers (user.go), reused
	spans, gaps []span
}

// feature is a set of things a pod's history may hold, which build
// records as it reads the events. A checker's precondition (inv.needs) is
// a set of features at least one of which its every hit, and every panic,
// requires: a pod with none of them is vacuous for it, and the worker
// skips the call. The differential tests run every pod both ways: on every
// history this package's tests build, and random mutations of them
// (gating_test.go), and on the sim's histories of every shipped scenario
// (internal/integration).
type feature uint64

const (
	fTerm         feature = 1 << iota // a whole-pod kill (p.Terms)
	fKubeletDown                      // a kubelet outage (p.Outages)
	fRuntimeDown                      // a runtime outage
	fNodeDown                         // a node outage
	fOutageInKill                     // a kubelet or runtime outage that began inside a whole-pod kill (termAt holds at its start)
	fShutdown                         // a node.shutdown (p.Shutdowns)
	fImage                            // a container.image-changed (p.Images)
	fResize                           // a container.resize (p.Resizes)
	fSandboxes                        // more than one sandbox, real or a reset's
	fReset                            // a RestartAllContainers reset (Sandbox.Reset)
	fDeleted                          // pod.deleted (p.Deleted)
	fSchedReq                         // a pod.scheduled with requests (CPU or Mem)
	fRestartRules                     // the run's policy enables ContainerRestartRules
	// The spec.
	fInitHook           // a regular init container with a probe or hook, or a probe result or hook event of one
	fSpecPreStop        // a container with a preStop hook
	fSpecPostStart      // a container with a postStart hook
	fSpecStartupSidecar // a sidecar with a startup probe
	// Events of the spec's containers (Ctr.Ev) and their attempts.
	fRestart        // a container with more than one attempt
	fStartAfterKill // an attempt that began after a pod.terminating
	// Exits outside every whole-pod kill (termAt is nil for them), by role:
	fInitFailAlone    // of a regular init container, with a code other than 0
	fSidecarExitAlone // of a sidecar
	fMainExitAlone    // of a main container
	fStop             // a container.stop-requested
	fSidecarFlap      // a sidecar's Started=false or stop outside every whole-pod kill, after a kubelet outage began
	fPreStopAlone     // a container.prestop-begin outside every whole-pod kill
	fPreStopAgain     // a container's second container.prestop-begin
	fStopInHook       // an attempt's first stop while its preStop ran (begun, not ended)
	fHookSkipped      // an attempt's first stop with no preStop before it, of a container with one in the spec
	fPostStartFailed  // a postStart hook that failed (Attempt.PostStartFailed)
	fProbeReason      // a stop or preStop with reason LivenessProbe or StartupProbe
	fProbeKill        // an attempt's KillReason set to LivenessProbe or StartupProbe
	fEarlyProbe       // a probe result other than startup's, of a container with a startup probe, before the attempt's first startup success
	fProbeInKill      // a probe result inside a whole-pod kill (termAt holds for it)
	fUnknownKill      // a stop or preStop with reason UnknownState
	fOOM              // an exit with reason OOMKilled
	fOOMScore         // a start request with an oom_score_adj
	fCPUs             // a start request with exclusive CPUs
	fStartFailed      // a container.start-failed
)

// has reports whether the pod has at least one of the features in f.
func (p *Pod) has(f feature) bool { return p.feat&f != 0 }

// inKill reports, while build reads event i, whether a whole-pod kill
// began before i and is still open: it will end after i (closeTerm runs at
// a later event, or at the end), so termAt(i) will hold. Without an open
// kill, every kill began after i or ended before it: termAt(i) is nil.
func (p *Pod) inKill() bool {
	n := len(p.Terms)
	return n > 0 && p.Terms[n-1].End == none
}

// ErrNoSpec is returned by BuildPod for a history without pod.created.
var ErrNoSpec = errors.New("pod history has no pod.created with a spec")

// T is the time of event i.
func (p *Pod) T(i int32) int64 { return p.Ev[i].T }

// Slack is the promptness allowance: the run's tolerance, at least 1 s
// (the skew upstream e2e tests allow, INV-T1).
func (p *Pod) Slack() int64 { return max(p.Tol, 1e9) }

// ctr returns the index of the container named name, or -1.
func (p *Pod) ctr(name string) int {
	for i := range p.Ctrs {
		if sameName(p.Ctrs[i].Name, name) {
			return i
		}
	}
	return -1
}

// ctrOf is ctr for build. It remembers the string data it found each
// container by: the events of one container usually share it (the sim's
// carry the spec's names, the JSONL reader interns them, a test's are one
// literal), so the next one is found without comparing bytes. Which
// container it returns is ctr's: a name with the same data and length has
// the same bytes, and the first container that matches wins.
//
// It tries the container of the previous event first (a container's
// events come in runs): its alias makes it the first match too.
func (p *Pod) ctrOf(name string) int {
	d := unsafe.StringData(name)
	if h := p.hint; h < len(p.Ctrs) && p.Ctrs[h].alias == d && len(p.Ctrs[h].Name) == len(name) {
		return h
	}
	for i := range p.Ctrs {
		if c := &p.Ctrs[i]; len(c.Name) == len(name) && (c.alias == d || sameName(c.Name, name)) {
			c.alias, p.hint = d, i
			return i
		}
	}
	return -1
}

// sameName is a == b, cheaper on the container lookup's usual cases: the
// same string data (the sim's events carry the spec's names), or names
// that differ in length or last byte ("proxy", "setup"; "sidecar-1",
// "sidecar-2"), decided without a call to compare the bytes.
func sameName(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 || unsafe.StringData(a) == unsafe.StringData(b) {
		return true
	}
	return a[len(a)-1] == b[len(b)-1] && a == b
}

// reset empties p, keeping its slices' storage for reuse.
func (p *Pod) reset() {
	ctrs := p.Ctrs[:cap(p.Ctrs)]
	for i := range ctrs {
		ctrs[i] = Ctr{Att: ctrs[i].Att[:0], Ev: ctrs[i].Ev[:0]}
	}
	*p = Pod{
		Ctrs: p.Ctrs[:0], Inits: p.Inits[:0], Sidecars: p.Sidecars[:0], Mains: p.Mains[:0],
		USidecars: p.USidecars[:0], UMains: p.UMains[:0],
		Sandboxes: p.Sandboxes[:0], Terms: p.Terms[:0], Outages: p.Outages[:0],
		Faults: p.Faults[:0], Phases: p.Phases[:0], Conds: p.Conds[:0],
		Images: p.Images[:0], Resizes: p.Resizes[:0], Scheduled: p.Scheduled[:0], Shutdowns: p.Shutdowns[:0],
		windows: p.windows[:0], spans: p.spans[:0], gaps: p.gaps[:0], Created: none, Deleted: none, Removed: none,
	}
}

// BuildPod digests one pod's history. meta may be nil (a run.meta event in
// events is used then). events is referenced, not copied.
func BuildPod(meta *history.Meta, name string, events []history.Event) (*Pod, error) {
	p := new(Pod)
	return p, p.build(meta, name, events)
}

func (p *Pod) build(meta *history.Meta, name string, events []history.Event) error {
	p.reset()
	p.Name, p.Meta, p.Ev = name, meta, events
	if len(events) > 1<<30 {
		return errors.New("pod history too long")
	}
	cur := int32(-1) // current sandbox
	for idx := range events {
		i := int32(idx)
		e := &events[i]
		p.Horizon = max(p.Horizon, e.T)
		if p.Node == "" && e.Pod != "" {
			p.Node = e.Node // until pod.scheduled says otherwise
		}
		switch e.Kind {
		case history.RunMeta:
			if p.Meta == nil {
				p.Meta = e.Meta
			}
		case history.PodCreated:
			if p.Spec == nil && e.Spec != nil {
				if err := p.setSpec(e.Spec); err != nil {
					return err
				}
				p.Created = i
			}
		case history.PodScheduled:
			p.Node = e.Node
			p.Scheduled = append(p.Scheduled, i)
			if e.CPU != 0 || e.Mem != 0 {
				p.feat |= fSchedReq
			}
		case history.NodeShutdown:
			p.Shutdowns = append(p.Shutdowns, i)
		case history.SandboxCreated:
			if cur >= 0 && p.Sandboxes[cur].End == none {
				p.Sandboxes[cur].End = i
			}
			p.closeTerm(i)
			p.Sandboxes = append(p.Sandboxes, Sandbox{Idx: i, End: none})
			cur = int32(len(p.Sandboxes) - 1)
		case history.SandboxLost, history.SandboxStopped:
			if cur >= 0 {
				sb := &p.Sandboxes[cur]
				if sb.End == none {
					sb.End = i
				}
				// A stopped sandbox can still be reported lost (the runtime
				// restart that took it): lost wins.
				sb.Lost = sb.Lost || e.Kind == history.SandboxLost
			}
		case history.PodTerminating:
			p.closeTerm(i)
			w := Term{Idx: i, End: none, T: e.T, Grace: e.Grace, Reason: e.Reason, Ordered: e.Value}
			switch {
			case w.Grace == 0 && (e.Reason == "PodDeleted" || e.Reason == "NodeShutdown"):
				// A force delete (grace 0) is a 1 s kill, not the spec's.
				w.Grace = podWorkerMinGrace
			case w.Grace == 0 && p.Spec != nil:
				w.Grace = p.Spec.Grace
			}
			for c := range p.Ctrs {
				// A container the runtime reports Unknown is not in the
				// kubelet's running pod (ConvertPodStatusToRunningPod keeps
				// Running containers only): the kill neither stops it nor
				// waits for it.
				a := p.last(c)
				if a == nil || a.Running == none || a.Running >= i {
					continue
				}
				switch {
				case a.runningAt(i) && (a.Unknown == none || a.Unknown > i):
					w.Running |= 1 << uint(c)
				case a.Exited != none && a.Exited < i && p.runtimeDownSince(a.Exited, i),
					a.Unknown != none && a.Unknown < i && p.runtimeDownSince(a.Unknown, i):
					w.Unheard |= 1 << uint(c)
				}
			}
			p.Terms = append(p.Terms, w)
		case history.PodDeleted:
			if p.Deleted == none {
				p.Deleted = i
			}
		case history.PodRemoved:
			if p.Removed == none {
				p.Removed = i
			}
		case history.PodPhase:
			p.Phases = append(p.Phases, i)
		case history.PodCondition:
			p.Conds = append(p.Conds, i)
			if e.Cond == "AllContainersRestarting" && e.Value {
				if cur >= 0 && p.Sandboxes[cur].End == none {
					p.Sandboxes[cur].End = i
				}
				p.Sandboxes = append(p.Sandboxes, Sandbox{Idx: i, End: none, Reset: true})
				cur = int32(len(p.Sandboxes) - 1)
			}
		case history.KubeletDown, history.RuntimeDown, history.NodeDown:
			p.Outages = append(p.Outages, Outage{What: e.Kind, Down: i, Up: none})
			if n := len(p.Terms); e.Kind == history.KubeletDown && n > 0 && p.Terms[n-1].End == none && forgottenKill(p.Terms[n-1].Reason) {
				p.closeTerm(i)
				p.Terms[n-1].Abandoned = true
			}
			switch {
			case e.Kind == history.NodeDown:
				p.feat |= fNodeDown
			case e.Kind == history.KubeletDown:
				p.feat |= fKubeletDown
			default:
				p.feat |= fRuntimeDown
			}
			if e.Kind != history.NodeDown && p.inKill() { // (after an abandoned kill closed)
				p.feat |= fOutageInKill
			}
		case history.KubeletUp, history.RuntimeUp, history.NodeUp:
			down := e.Kind - 1 // the *Up kinds follow their *Down kinds
			for o := len(p.Outages) - 1; o >= 0; o-- {
				if p.Outages[o].What == down && p.Outages[o].Up == none {
					p.Outages[o].Up = i
					break
				}
			}
		case history.FaultBegin:
			p.Faults = append(p.Faults, Fault{Idx: i, Name: e.Fault, ID: e.FaultID, T: e.T, EndT: -1})
		case history.FaultEnd, history.FaultNotApplied:
			for f := len(p.Faults) - 1; f >= 0; f-- {
				if p.Faults[f].ID == e.FaultID && p.Faults[f].Name == e.Fault {
					if e.Kind == history.FaultEnd {
						p.Faults[f].EndT = e.T
					} else {
						p.Faults[f].NotApplied = true
					}
					break
				}
			}
		case history.ContainerImageChanged:
			p.Images = append(p.Images, i)
			p.containerEvent(i, e, cur)
		case history.ContainerResize:
			p.Resizes = append(p.Resizes, i)
			p.containerEvent(i, e, cur)
		default:
			if e.Kind >= history.ContainerStartRequested && e.Kind <= history.ProbeResult {
				p.containerEvent(i, e, cur)
			}
		}
	}
	if p.Spec == nil {
		return ErrNoSpec
	}
	if len(p.Sandboxes) == 0 {
		// Backends that do not report sandboxes get one implicit sandbox.
		p.Sandboxes = append(p.Sandboxes, Sandbox{Idx: none, End: none})
	}
	p.closeTerm(int32(len(events)))
	if p.Meta != nil {
		p.Tol = p.Meta.ToleranceNanos
	}
	for f := range p.Faults {
		if p.Faults[f].EndT < 0 {
			p.Faults[f].EndT = p.Horizon
		}
	}
	p.buildWindows()
	p.summarize()
	return nil
}

// summarize adds the features build's slices tell.
func (p *Pod) summarize() {
	for _, f := range [...]struct {
		has  bool
		feat feature
	}{
		{len(p.Terms) > 0, fTerm},
		{len(p.Shutdowns) > 0, fShutdown},
		{len(p.Images) > 0, fImage},
		{len(p.Resizes) > 0, fResize},
		{len(p.Sandboxes) > 1, fSandboxes},
		{p.Deleted != none, fDeleted},
		{p.hasGate("ContainerRestartRules"), fRestartRules},
	} {
		if f.has {
			p.feat |= f.feat
		}
	}
	for k := range p.Sandboxes {
		if p.Sandboxes[k].Reset {
			p.feat |= fReset
		}
	}
}

func (p *Pod) setSpec(s *history.PodSpec) error {
	p.Spec = s
	n := len(s.Init) + len(s.Main)
	if n > 64 {
		return fmt.Errorf("pod has %d containers; the checker handles at most 64", n)
	}
	p.NInit = len(s.Init)
	for k := range n {
		var cs *history.ContainerSpec
		if k < len(s.Init) {
			cs = &s.Init[k]
		} else {
			cs = &s.Main[k-len(s.Init)]
		}
		role := RoleMain
		switch {
		case k >= len(s.Init):
			p.Mains = append(p.Mains, k)
		case cs.Role == "sidecar":
			role = RoleSidecar
			p.Sidecars = append(p.Sidecars, k)
		default:
			role = RoleInit
			p.Inits = append(p.Inits, k)
		}
		if k < cap(p.Ctrs) {
			p.Ctrs = p.Ctrs[:k+1]
		} else {
			p.Ctrs = append(p.Ctrs, Ctr{})
		}
		c := &p.Ctrs[k]
		c.Name, c.Role, c.Spec = cs.Name, role, cs
		if role == RoleInit && (cs.Startup || cs.Readiness || cs.Liveness || cs.PostStart || cs.PreStop) {
			p.feat |= fInitHook
		}
		if cs.PreStop {
			p.feat |= fSpecPreStop
		}
		if cs.PostStart {
			p.feat |= fSpecPostStart
		}
		if role == RoleSidecar && cs.Startup {
			p.feat |= fSpecStartupSidecar
		}
		switch {
		case cs.UserSidecar():
			p.USidecars = append(p.USidecars, k)
		case role == RoleMain:
			p.UMains = append(p.UMains, k)
		}
	}
	return nil
}

func (p *Pod) closeTerm(i int32) {
	if n := len(p.Terms); n > 0 && p.Terms[n-1].End == none {
		p.Terms[n-1].End = i
	}
}

// last returns container c's latest attempt, or nil.
func (p *Pod) last(c int) *Attempt {
	if n := len(p.Ctrs[c].Att); n > 0 {
		return &p.Ctrs[c].Att[n-1]
	}
	return nil
}

func (p *Pod) newAttempt(c int, sb int32) *Attempt {
	if len(p.Ctrs[c].Att) > 0 {
		p.feat |= fRestart
	}
	if len(p.Terms) > 0 {
		// Every attempt's Start is set when it is made, or never (one
		// made by an exit): an attempt made now starts after Terms[0].
		p.feat |= fStartAfterKill
	}
	p.Ctrs[c].Att = append(p.Ctrs[c].Att, Attempt{
		Sandbox: max(sb, 0), Req: none, Running: none, PostStart: none, Started: none,
		StartupOK: none, PreStop: none, PreStopEnd: none, Stop: none, Kill: none, Signal: none, Unknown: none, Exited: none,
		App: none, Serving: none,
	})
	return p.last(c)
}

func (p *Pod) containerEvent(i int32, e *history.Event, sb int32) {
	c := p.ctrOf(e.Container)
	if c < 0 {
		return // unknown container (or no spec yet): nothing to attribute
	}
	p.Ctrs[c].Ev = append(p.Ctrs[c].Ev, i)
	a := p.last(c)
	switch e.Kind {
	case history.ContainerStartRequested:
		p.newAttempt(c, sb).Req = i
		if e.OOMScoreAdj != 0 {
			p.feat |= fOOMScore
		}
		if e.CPUs != "" {
			p.feat |= fCPUs
		}
	case history.ContainerRunning:
		if a == nil || a.Running != none || a.Exited != none {
			a = p.newAttempt(c, sb)
		}
		a.Running = i
	case history.ContainerPostStartDone:
		p.initHookEvent(c)
		if a != nil && a.PostStart == none {
			a.PostStart, a.PostStartFailed = i, !e.Value
			if a.PostStartFailed {
				p.feat |= fPostStartFailed
			}
		}
	case history.ContainerStarted:
		if a != nil && e.Value && a.Started == none {
			a.Started = i
		}
		if !e.Value {
			p.noteSidecarFlap(c)
		}
	case history.ProbeResult:
		p.initHookEvent(c)
		if e.Probe != "startup" && p.Ctrs[c].Spec.Startup && a != nil && a.StartupOK == none {
			p.feat |= fEarlyProbe
		}
		if p.inKill() {
			p.feat |= fProbeInKill
		}
		if a != nil && e.Probe == "startup" && e.Result == "success" && a.StartupOK == none {
			a.StartupOK = i
		}
		if a != nil && (e.Probe == "liveness" || e.Probe == "startup") {
			switch k := probeKind(e.Probe); {
			case e.Result == "failure":
				a.probeFailed = k
			case a.probeFailed == k:
				a.probeFailed = 0
			}
		}
	case history.ContainerPreStopBegin:
		p.initHookEvent(c)
		p.feat |= killReasonFeature(e.Reason)
		if !p.inKill() {
			p.feat |= fPreStopAlone
		}
		if p.Ctrs[c].preStopSeen {
			p.feat |= fPreStopAgain
		}
		p.Ctrs[c].preStopSeen = true
		if a != nil && a.PreStop == none {
			a.PreStop = i
			// The reason is the kill's that stops the attempt: a preStop
			// after its stop belongs to a later kill (a pod kill's, run on
			// a container whose own kill ended it, or whose exit a runtime
			// outage hid), which does not make the first stop its own.
			if a.Stop == none {
				a.KillReason = e.Reason
				if a.KillReason == "" {
					a.KillReason = probeKillReason(a.probeFailed)
				}
			}
		}
		p.noteKillReason(a)
	case history.ContainerPreStopEnd:
		if a != nil && a.PreStopEnd == none {
			a.PreStopEnd = i
		}
	case history.ContainerStopRequested:
		p.feat |= fStop | killReasonFeature(e.Reason)
		p.noteSidecarFlap(c)
		refused := a != nil && p.runtimeDownAt(i)
		if a != nil && !refused && (a.Signal == none || p.runtimeRestartedBetween(a.Signal, i)) {
			a.Signal = i
		}
		if a != nil && a.Stop == none {
			a.Stop, a.StopGrace = i, e.Grace
			switch {
			case a.PreStop != none && a.PreStopEnd == none:
				p.feat |= fStopInHook
			case a.PreStop == none && p.Ctrs[c].Spec.PreStop:
				p.feat |= fHookSkipped
			}
			if a.KillReason == "" || e.Reason != "" && a.PreStop != none && p.kubeletRestartedBetween(a.PreStop, i) {
				// The kubelet whose kill ran the preStop is gone; the
				// restarted one keeps nothing of that kill, so this stop
				// is its own decision, with its own reason (a startup
				// probe's kill cut by a crash, then an Unknown state's:
				// pod-kill-refused with startup-kills).
				a.KillReason = e.Reason
			}
			if a.KillReason == "" {
				// No reason recorded (local, kube): a stop right after
				// the attempt's liveness or startup probe failed is the
				// kubelet's probe kill.
				a.KillReason = probeKillReason(a.probeFailed)
			}
			a.stopRefused = refused
		} else if a != nil && a.stopRefused {
			// The kill before was refused and forgotten; this one is
			// the kubelet's new decision (an Unknown state's kill
			// restarts whatever the policy; the sweep's
			// hook-kill-refused with job-sidecar-crash).
			if e.Reason != "" {
				a.KillReason = e.Reason
			}
			a.stopRefused = refused
		}
		p.noteKillReason(a)
	case history.ContainerAppStarted:
		if a != nil && a.App == none {
			a.App, a.AppOK = i, e.Value
		}
	case history.ContainerServing:
		p.Ctrs[c].serving = true
		if a != nil && e.Value && a.Serving == none {
			a.Serving = i
		}
	case history.ContainerKilled:
		if a != nil && a.Kill == none {
			a.Kill = i
		}
	case history.ContainerUnknown:
		if a != nil && a.Unknown == none {
			a.Unknown = i
		}
	case history.ContainerExited:
		if a == nil || a.Exited != none {
			a = p.newAttempt(c, sb)
		}
		a.Exited, a.Code, a.ExitReason = i, e.Code, e.Reason
		if e.Reason == "OOMKilled" {
			p.feat |= fOOM
		}
		if !p.inKill() {
			switch p.Ctrs[c].Role {
			case RoleInit:
				if e.Code != 0 {
					p.feat |= fInitFailAlone
				}
			case RoleSidecar:
				p.feat |= fSidecarExitAlone
			default:
				p.feat |= fMainExitAlone
			}
		}
	case history.ContainerStartFailed:
		p.feat |= fStartFailed
	}
}

// noteKillReason records a probe kill once a stop or preStop event has
// set attempt a's KillReason (it is set nowhere else).
func (p *Pod) noteKillReason(a *Attempt) {
	if a != nil && (a.KillReason == "LivenessProbe" || a.KillReason == "StartupProbe") {
		p.feat |= fProbeKill
	}
}

// noteSidecarFlap records a Started=false or a stop of container c, if it
// is a sidecar, outside a pod kill and after a kubelet outage began.
func (p *Pod) noteSidecarFlap(c int) {
	if p.feat&fKubeletDown != 0 && p.Ctrs[c].Role == RoleSidecar && !p.inKill() {
		p.feat |= fSidecarFlap
	}
}

// initHookEvent records a probe result or hook event of container c.
func (p *Pod) initHookEvent(c int) {
	if p.Ctrs[c].Role == RoleInit {
		p.feat |= fInitHook
	}
}

// killReasonFeature is the feature a stop or preStop with this reason
// brings: the kill reasons checkers look for (an attempt's KillReason
// comes from these events' reasons, or a failed probe's).
func killReasonFeature(reason string) feature {
	switch reason {
	case "LivenessProbe", "StartupProbe":
		return fProbeReason
	case "UnknownState":
		return fUnknownKill
	}
	return 0
}

const (
	probeLiveness uint8 = 1 + iota
	probeStartup
)

// probeKind is the probeFailed value of a liveness or startup probe.
func probeKind(probe string) uint8 {
	if probe == "startup" {
		return probeStartup
	}
	return probeLiveness
}

// probeKillReason is the kill reason a failed probe implies ("" for none).
func probeKillReason(k uint8) string {
	switch k {
	case probeLiveness:
		return "LivenessProbe"
	case probeStartup:
		return "StartupProbe"
	}
	return ""
}
