// Package kubelet is sidebench's reference in-node implementation of sidecar
// ordering: a pure planner (Plan) in the shape of the kubelet's
// computePodActions, and a Machine that wraps it in raft's RawNode shape.
//
// Neither reads a clock, starts a goroutine, draws a random number or does
// I/O: time arrives as an argument and timers are requests (Ready.WakeAt).
// The same inputs therefore always give the same outputs.
package kubelet

import (
	"fmt"
	"time"

	"github.com/sidebench/sidebench/reference-impl/api"
)

// Machine plays the kubelet for one pod on one node.
//
// Host contract: after every Step, while HasReady(): take rd := Ready(),
// issue rd.Actions in order, record rd.Trace, arm a timer for rd.WakeAt
// (api.Never = none; a newer WakeAt replaces older ones), then Advance(rd).
// Report what the runtime does as inputs: InSandbox after
// ActCreateSandbox, InContainer (Running, then Exited) after
// ActStartContainer, InPostStartDone, InPreStopDone after ActRunPreStop,
// InContainer Exited after ActStopContainer, and InActionFailed when the
// runtime refused a call.
//
// A kubelet restart is modelled by discarding the machine and creating a
// new one, which knows only what it is told by an InRelist input.
type Machine struct {
	spec  *api.PodSpec
	gates api.Gates

	obs api.Observed
	// plan is the planner's output of the current step: the machine's
	// own, or its Scratch's.
	plan *api.Plan
	// shared, if set, lends the output batch (actions and traces) while
	// the host collects it (Scratch).
	shared *Scratch

	// actions and traces are the pending output batch (Ready's slices;
	// its Status is last, its WakeAt wakeAt).
	actions []api.Action
	traces  []api.TraceEvent
	last    api.PodStatus
	wakeAt  api.Time

	specOwned bool
	hasReady  bool
	published bool

	// kinds[i] is container i's kind (i < len(obs.Containers)). An array,
	// not a slice: a machine the host keeps in its own storage
	// (Scratch.InitMachine) then holds no pointer into itself and no
	// storage of its own.
	kinds [api.MaxContainers]kind
}

// NewMachine validates spec and returns a machine with no memory, as a
// freshly started kubelet has. The machine does not modify spec; it copies
// it before applying a spec change (InImage).
func NewMachine(spec *api.PodSpec, gates api.Gates) (*Machine, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	m := newMachine(spec, gates)
	m.plan = &api.Plan{Actions: make([]api.Action, 0, 2*spec.Len())}
	m.actions = make([]api.Action, 0, 2*spec.Len())
	m.traces = make([]api.TraceEvent, 0, 8)
	return m, nil
}

// Scratch is the working memory of machines' steps: the plan being
// computed and the output batch (Ready's Actions and Trace) until the host
// advances it. A machine made by Scratch.NewMachine keeps none of its own.
// A host running many pods drives one machine at a time and collects each
// Ready before stepping another (the sim, with 150,000 machines alive in
// the scale envelope): one batch then serves every machine, stays in the
// cache, and costs no memory per pod. A machine that finds the batch still
// held by another (a host stepping a second machine before advancing the
// first) uses buffers of its own instead: sharing never mixes two
// machines' output. A Scratch is not safe for concurrent use: its
// machines are driven from one goroutine.
type Scratch struct {
	plan    api.Plan
	actions []api.Action
	trace   []api.TraceEvent
	holder  *Machine // the machine whose Ready holds actions and trace
}

// NewMachine is kubelet.NewMachine for a machine sharing s.
func (s *Scratch) NewMachine(spec *api.PodSpec, gates api.Gates) (*Machine, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	m := newMachine(spec, gates)
	m.plan, m.shared = &s.plan, s
	return m, nil
}

// newMachine returns a machine with no memory for spec, its observed
// containers allocated with it in one object for pods of up to eight
// containers: the planner reads all of them on every step, and one object
// puts them on adjacent cache lines (one allocation per pod, not two).
func newMachine(spec *api.PodSpec, gates api.Gates) *Machine {
	n := spec.Len()
	var m *Machine
	switch {
	case n <= 1:
		b := new(struct {
			m Machine
			c [1]api.ContainerObs
		})
		b.m.obs.Containers, m = b.c[:n], &b.m
	case n == 2:
		b := new(struct {
			m Machine
			c [2]api.ContainerObs
		})
		b.m.obs.Containers, m = b.c[:], &b.m
	case n == 3:
		b := new(struct {
			m Machine
			c [3]api.ContainerObs
		})
		b.m.obs.Containers, m = b.c[:], &b.m
	case n == 4:
		b := new(struct {
			m Machine
			c [4]api.ContainerObs
		})
		b.m.obs.Containers, m = b.c[:], &b.m
	case n <= 6:
		b := new(struct {
			m Machine
			c [6]api.ContainerObs
		})
		b.m.obs.Containers, m = b.c[:n], &b.m
	case n <= 8:
		b := new(struct {
			m Machine
			c [8]api.ContainerObs
		})
		b.m.obs.Containers, m = b.c[:n], &b.m
	default:
		m = &Machine{}
		m.obs.Containers = make([]api.ContainerObs, n)
	}
	m.spec, m.gates, m.wakeAt = spec, gates, api.Never
	setKinds(&m.kinds, spec, gates)
	return m
}

// output makes m's batch ready for appending: the Scratch's batch if
// m shares one that no other machine holds, else m's own buffers.
func (m *Machine) output() {
	s := m.shared
	if s == nil || s.holder == m || m.actions != nil {
		return
	}
	if s.holder == nil {
		s.holder = m
		m.actions, m.traces = s.actions[:0], s.trace[:0]
		return
	}
	m.actions, m.traces = make([]api.Action, 0, 8), make([]api.TraceEvent, 0, 8)
}

// release gives the Scratch's batch back (after Advance or Reset).
func (m *Machine) release() {
	if s := m.shared; s != nil && s.holder == m {
		s.actions, s.trace = m.actions[:0], m.traces[:0]
		s.holder = nil
		m.actions, m.traces = nil, nil
	}
}

// Reset turns m into a machine with no memory for spec and gates, exactly
// as NewMachine would return, reusing m's storage. Hosts that run many
// short-lived pods pool machines this way.
func (m *Machine) Reset(spec *api.PodSpec, gates api.Gates) error {
	if err := spec.Validate(); err != nil {
		return err
	}
	n := spec.Len()
	containers := m.obs.Containers[:0]
	if cap(containers) < n {
		containers = make([]api.ContainerObs, 0, n)
	}
	m.release()
	plan := m.plan
	if m.shared == nil {
		plan.Actions = plan.Actions[:0]
	}
	m.init(spec, gates, containers[:n], plan, m.shared)
	return nil
}

// InitMachine is NewMachine for a machine sharing s, in storage the host
// provides: it makes m (a zero Machine, or one used before) a machine with
// no memory for spec and gates whose observed containers are containers,
// spec.Len() of them, whose contents it overwrites. A host that keeps m
// and containers in its own per-pod storage (the sim's pod slot) puts a
// pod's machine next to its own state, at addresses it can compute without
// loading a pointer first, and allocates nothing per pod; m then holds no
// pointer into itself, so the host may also copy it between pods.
func (s *Scratch) InitMachine(m *Machine, spec *api.PodSpec, gates api.Gates, containers []api.ContainerObs) error {
	if err := spec.Validate(); err != nil {
		return err
	}
	if len(containers) != spec.Len() {
		return fmt.Errorf("kubelet: %d observed containers for a pod of %d", len(containers), spec.Len())
	}
	m.release()
	m.init(spec, gates, containers, &s.plan, s)
	return nil
}

// init sets every field of m as for a new machine of spec and gates over
// containers (cleared), with plan and shared as given and m's own output
// buffers kept for reuse.
func (m *Machine) init(spec *api.PodSpec, gates api.Gates, containers []api.ContainerObs, plan *api.Plan, shared *Scratch) {
	clear(containers)
	*m = Machine{
		spec: spec, gates: gates, wakeAt: api.Never,
		obs:  api.Observed{Containers: containers},
		plan: plan, shared: shared,
		actions: m.actions[:0], traces: m.traces[:0],
	}
	setKinds(&m.kinds, spec, gates)
}

// kindList is the kinds of m's containers.
func (m *Machine) kindList() []kind { return m.kinds[:len(m.obs.Containers)] }

// Spec returns the machine's current pod spec (after image changes).
func (m *Machine) Spec() *api.PodSpec { return m.spec }

// Observed returns the machine's view of the pod, for tests and tracing.
func (m *Machine) Observed() *api.Observed { return &m.obs }

// Status returns the last computed pod status.
func (m *Machine) Status() api.PodStatus { return m.last }

// Terminating reports whether a whole-pod kill is in progress (probers stop
// liveness probes then, INV-P6).
func (m *Machine) Terminating() bool { return m.obs.Term.Active }

// Done reports whether the pod is finished on this node: terminal and
// nothing running.
func (m *Machine) Done() bool { return m.obs.Pod.Done }

// HasReady reports whether there is output to collect.
func (m *Machine) HasReady() bool { return m.hasReady }

// Ready returns the pending output batch. Its slices are owned by the
// machine and valid until Advance.
func (m *Machine) Ready() api.Ready {
	return api.Ready{Actions: m.actions, Trace: m.traces, Status: m.last, WakeAt: m.wakeAt}
}

// Advance acknowledges that rd was executed.
func (m *Machine) Advance(api.Ready) {
	m.actions = m.actions[:0]
	m.traces = m.traces[:0]
	m.release()
	m.hasReady = false
}

// Step applies one input observed at now and replans (unless in.More:
// then the next input's step plans for both).
func (m *Machine) Step(now api.Time, in api.Input) error {
	if err := m.apply(now, &in); err != nil {
		return err
	}
	if in.More {
		return nil
	}
	m.replan(now)
	return nil
}

func (m *Machine) container(i int) (*api.ContainerObs, error) {
	if i < 0 || i >= len(m.obs.Containers) {
		return nil, fmt.Errorf("kubelet: container index %d out of range [0,%d)", i, len(m.obs.Containers))
	}
	return &m.obs.Containers[i], nil
}

// resetAttempt forgets what the kubelet knew about a container attempt
// that ended or was replaced.
func resetAttempt(c *api.ContainerObs) {
	c.Probe = [3]api.ProbeResult{}
	c.PostStart = api.HookNone
	c.PreStop = api.HookNone
	c.StopRequested = false
	c.Killing = false
	c.StartedSeen = false
	c.ReadySeen = false
	c.RestartedInTerm = false
	c.ResizePending = false
}

// forgetKill drops container c's single-container kill and the preStop it
// ran: the kubelet keeps nothing of a killContainer call that did not end
// the container (its StopContainer failed, or its sync was cancelled), and
// the next sync, or the pod kill, decides afresh.
func forgetKill(c *api.ContainerObs) {
	c.Killing, c.KillReason, c.KillRestart, c.KillDeadline = false, api.KillNone, false, 0
	c.PreStop = api.HookNone
}

func (m *Machine) apply(now api.Time, in *api.Input) error {
	o := &m.obs
	switch in.Kind {
	case api.InTick:
	case api.InRelist:
		if len(in.Records) != len(o.Containers) {
			return fmt.Errorf("kubelet: relist has %d records, pod has %d containers", len(in.Records), len(o.Containers))
		}
		o.Sandbox = in.Sandbox
		for i := range o.Containers {
			c := &o.Containers[i]
			c.Record = in.Records[i]
			c.StartedSeen = in.Status.Started.Has(i) && c.Record.State == api.StateRunning
			c.ReadySeen = c.StartedSeen && m.keepsReady(now, i, &in.Status)
			if c.Record.State != api.StateNone && c.Record.Attempt+1 > c.NextAttempt {
				c.NextAttempt = c.Record.Attempt + 1
			}
			// A record the runtime removed (garbage collection) while the
			// old kubelet ran: its exit stays in the API status, which the
			// new kubelet starts from (convertToAPIContainerStatuses), so
			// the phase does not forget it.
			switch {
			case c.Record.State != api.StateNone: // the runtime has it: nothing to rebuild
			case in.Status.Terminated.Has(i):
				c.Gone = true
				c.GoneExitCode = 0
				if in.Status.TerminatedFailed.Has(i) {
					c.GoneExitCode = 1 // the status's code; only zero or not matters here
				}
			case (m.kinds[i] == kindInit || m.kinds[i] == kindMain || m.kinds[i] == kindSidecar) && in.Status.Started.Has(i):
				// A regular init, a sidecar or a main the API shows running
				// whose record is gone (it exited and was removed while no
				// kubelet ran): the new kubelet publishes it Waiting, last
				// terminated 137 (ContainerStatusUnknown, "The container
				// used to be Running"), and getPhase counts that a failed
				// init, or a stopped main that did not succeed, whatever
				// it had exited with (convertToAPIContainerStatuses), and
				// leaves such a sidecar out (a terminated restartable init
				// container is "not taken into account"). The API's
				// Started stands for its Running state here: a container
				// running unstarted (a startup probe pending) that vanishes
				// is counted waiting (a known gap).
				c.Gone, c.GoneExitCode = true, 137
			}
		}
		if !m.published {
			m.last, m.published = in.Status, in.Status != (api.PodStatus{})
		}
		o.Pod.Restarting = in.Status.AllContainersRestarting
		if in.Deleted && !o.Pod.Deleted && !o.Term.Active {
			grace := in.Grace
			if grace < 0 {
				grace = m.spec.TerminationGracePeriod
			}
			o.Pod.Deleted, o.Pod.DeletedAt, o.Pod.DeleteGrace = true, now, grace
			m.beginTermination(now, api.KillPodDeleted, podWorkerGrace(grace))
		}
	case api.InSandbox:
		newSandbox := in.Sandbox.Attempt != o.Sandbox.Attempt || o.Sandbox.State == api.SandboxNone
		o.Sandbox = in.Sandbox
		o.Pod.SandboxRequested = false
		if newSandbox && in.Sandbox.State == api.SandboxReady {
			for i := range o.Containers {
				resetAttempt(&o.Containers[i])
				o.Containers[i].StartPending = false
			}
		}
	case api.InContainer:
		c, err := m.container(in.Container)
		if err != nil {
			return err
		}
		old := c.Record
		c.Record = in.Record
		c.ResizePending = false // the runtime answered
		if in.Record.State != api.StateNone && in.Record.Attempt+1 > c.NextAttempt {
			c.NextAttempt = in.Record.Attempt + 1
		}
		if in.Record.State == api.StateExited && (old.State == api.StateRunning || old.State == api.StateUnknown) &&
			c.KillRestart && m.restartHeldByBackoff(now, c, &old) {
			// The kubelet restarts a container it killed in the same
			// SyncPod, through doBackOff measured from the exit before
			// the killed attempt. When that backoff still runs, the start
			// fails with CrashLoopBackOff and the restart is forgotten:
			// from now on the restart policy decides on the new exit
			// (ShouldContainerBeRestarted), e.g. exit 0 under OnFailure
			// ends the pod. A container killed because the runtime
			// reported it Unknown is restarted the same way (the kill
			// and the start in one SyncPod), so the same holds.
			c.KillRestart = false
		}
		switch in.Record.State {
		case api.StateRunning:
			if old.State != api.StateRunning || old.Attempt != in.Record.Attempt || old.SandboxAttempt != in.Record.SandboxAttempt {
				restartedInTerm := c.RestartedInTerm
				resetAttempt(c)
				c.RestartedInTerm = restartedInTerm
				if c.StartPending && m.spec.At(in.Container).PostStart {
					c.PostStart = api.HookRunning
				}
			}
			c.StartPending = false
		case api.StateExited, api.StateUnknown:
			// A running attempt the runtime now reports Unknown is the
			// same attempt: a kill of it in flight goes on (its
			// StopContainer returns once the process is gone).
			sameAttempt := old.Attempt == in.Record.Attempt && old.SandboxAttempt == in.Record.SandboxAttempt
			if !(in.Record.State == api.StateUnknown && old.State == api.StateRunning && sameAttempt) &&
				(old.State != in.Record.State || !sameAttempt) {
				resetAttempt(c)
			}
			c.StartPending = false
		case api.StateNone:
			// Removed from the runtime (GC, reset). Nothing the kubelet
			// remembers about the attempt matters any more, but its exit
			// stays in the published status unless a reset removed it.
			resetAttempt(c)
			c.Gone = old.State == api.StateExited && !c.RemovePending && old.SandboxAttempt == o.Sandbox.Attempt
			c.GoneExitCode = old.ExitCode
			c.RemovePending = false
		}
		if in.Record.State != api.StateNone {
			c.Gone = false
		}
	case api.InProbe:
		c, err := m.container(in.Container)
		if err != nil {
			return err
		}
		if in.Probe > api.ProbeLiveness {
			return fmt.Errorf("kubelet: unknown probe kind %d", in.Probe)
		}
		if c.Record.State == api.StateRunning {
			c.Probe[in.Probe] = in.Result
		}
	case api.InPostStartDone:
		c, err := m.container(in.Container)
		if err != nil {
			return err
		}
		if c.PostStart != api.HookRunning {
			return nil
		}
		c.PostStart = api.HookDone
		if !in.OK {
			// A failed postStart hook kills the container
			// (FailedPostStartHook, planSingleKills; during a pod kill the
			// kill in progress stops it); the restart policy decides the
			// rest. It is never Started: the pod worker is inside
			// startContainer until that kill ends, so no status in
			// between shows it running.
			c.PostStart = api.HookFailed
		}
	case api.InPreStopDone:
		c, err := m.container(in.Container)
		if err != nil {
			return err
		}
		if c.PreStop == api.HookRunning {
			c.PreStop = api.HookDone
		}
	case api.InDelete, api.InNodeShutdown:
		if o.Pod.Done {
			o.Pod.Deleted = o.Pod.Deleted || in.Kind == api.InDelete
			return nil
		}
		grace := in.Grace
		if grace < 0 || (in.Kind == api.InNodeShutdown && grace > m.spec.TerminationGracePeriod) {
			grace = m.spec.TerminationGracePeriod
		}
		reason := api.KillPodDeleted
		if in.Kind == api.InNodeShutdown {
			reason = api.KillNodeShutdown
			if o.Term.Active && (o.Term.Reason == api.KillPodDeleted || o.Term.Reason == api.KillNodeShutdown) {
				// The shutdown manager's status function ("Terminated")
				// is applied when a SyncTerminatingPod begins
				// (acknowledgeTerminating); the one already running
				// ignores it and completeTerminating drops it, so a pod
				// already being deleted ends without the reason. (A kill
				// inside SyncPod, a Job's completion or a lost sandbox,
				// is followed by a SyncTerminatingPod that applies it.)
				return nil
			}
			o.Pod.Shutdown = true
		} else {
			o.Pod.Deleted, o.Pod.DeletedAt, o.Pod.DeleteGrace = true, now, grace
		}
		grace = podWorkerGrace(grace)
		if o.Term.Active {
			// A kill in progress keeps its grace, even when the new one is
			// shorter. The pod worker cancels the sync for a shorter grace,
			// but SyncTerminatingPod runs on context.TODO() (kubelet.go,
			// "TODO(#113606)"), so the stops already sent and the sidecars'
			// waits keep the old budget, and the kill completes with it.
			return nil
		}
		m.beginTermination(now, reason, grace)
	case api.InImage:
		if _, err := m.container(in.Container); err != nil {
			return err
		}
		if o.Pod.Done {
			return nil
		}
		// The kubelet receives spec updates of a terminating pod too, but
		// a terminating pod is only killed (SyncTerminatingPod), never
		// synced, so nothing restarts for it (INV-U1, T10): the planner
		// does not look at images during a whole-pod kill. The change is
		// kept for what follows a sandbox-loss kill (re-initialization).
		m.ownSpec()
		if m.spec.At(in.Container).Image != in.Image {
			m.newBackoffKey(in.Container)
		}
		m.spec.At(in.Container).Image = in.Image
	case api.InResize:
		if _, err := m.container(in.Container); err != nil {
			return err
		}
		if o.Pod.Done {
			return nil
		}
		// Like an image change: the spec changes at once; whether a
		// running container is resized in place or restarted is the
		// planner's (computePodResizeAction); a terminating pod applies
		// nothing.
		m.ownSpec()
		if m.spec.At(in.Container).Resources != in.Resources {
			m.newBackoffKey(in.Container)
		}
		m.spec.At(in.Container).Resources = in.Resources
	case api.InActionFailed:
		switch in.Action {
		case api.ActResizeContainer:
			c, err := m.container(in.Container)
			if err != nil {
				return err
			}
			c.ResizePending = false
		case api.ActCreateSandbox:
			o.Pod.SandboxRequested = false
		case api.ActStartContainer:
			c, err := m.container(in.Container)
			if err != nil {
				return err
			}
			c.StartPending = false
			if in.PullFailed {
				c.PullBackoff = NextImageBackoff(c.PullBackoff, c.PullFailedAt, now)
				c.PullFailedAt = now
			}
		case api.ActStopContainer:
			c, err := m.container(in.Container)
			if err != nil {
				return err
			}
			c.StopRequested = false
			if o.Term.Active && c.StopRequestedAt >= o.Term.Start {
				// A stop of this round of the pod kill (not a
				// single-container kill's from before it, which the pod
				// kill cancelled and now decides afresh).
				c.StopRefused = true
			}
			if c.Killing && !o.Term.Active {
				// A single-container kill is one killContainer call inside
				// a sync; when StopContainer fails (the runtime is down)
				// the sync ends with the error and nothing of the kill is
				// kept. The next sync decides again from what it sees: a
				// probe result on hold (worker.go onHold), a changed spec
				// hash or resources, an Unknown state kill again, with
				// their preStop and a full grace once more. After a
				// failed postStart nothing decides again: startContainer
				// only logged the failed kill and returned
				// ErrPostStartHook, so the next sync keeps the running
				// container and reports it Started like any other.
				if c.KillReason == api.KillFailedPostStartHook {
					c.PostStart = api.HookDone
				}
				forgetKill(c)
			}
		case api.ActRemoveContainer:
			c, err := m.container(in.Container)
			if err != nil {
				return err
			}
			c.RemovePending = false
		case api.ActRunPreStop:
			c, err := m.container(in.Container)
			if err != nil {
				return err
			}
			if c.PreStop == api.HookRunning {
				c.PreStop = api.HookDone
			}
		case api.ActStopSandbox:
			if o.Term.Active && o.Term.SandboxStopSent {
				m.retryKill(now)
			}
		}
	default:
		return fmt.Errorf("kubelet: unknown input kind %d", in.Kind)
	}
	return nil
}

// keepsReady reports whether a restarted kubelet keeps container i's
// published Ready: prober_manager.go setReadyStateOnKubeletRestart keeps
// it for a container that started before kubeletRestartGracePeriod (10 s
// before the kubelet started) and, if it has a readiness probe, only while
// the pod's Ready condition is True; the readiness worker does not seed a
// Failure for it (worker.go isRestart). now is the kubelet's start.
func (m *Machine) keepsReady(now api.Time, i int, st *api.PodStatus) bool {
	c := &m.obs.Containers[i]
	if !st.ReadySet.Has(i) || c.Record.StartedAt >= now.Add(-KubeletRestartGracePeriod) {
		return false
	}
	return m.spec.At(i).ReadinessProbe == nil || st.Ready
}

// newBackoffKey forgets container i's crash-loop backoff: the kubelet keys
// it by the container's image and resources as well as its name
// (GetBackoffKey, kuberuntime/helpers.go), so after a change doBackOff
// finds no entry and the next restart is immediate. (A change back to the
// earlier image or resources within the entry's lifetime would find the
// old entry; the reference keeps one entry per container.)
func (m *Machine) newBackoffKey(i int) {
	m.obs.Containers[i].Backoff = 0
}

// restartHeldByBackoff reports whether doBackOff fails the restart of a
// container killed with a restart in the same sync: the backoff runs from
// the exit before the killed attempt (old is the killed attempt's record).
func (m *Machine) restartHeldByBackoff(now api.Time, c *api.ContainerObs, old *api.ContainerRecord) bool {
	if !old.LastExited || c.Backoff == 0 || old.LastFinishedAt.Sub(old.LastStartedAt) >= BackoffResetAfter {
		return false
	}
	return now < old.LastFinishedAt.Add(c.Backoff)
}

func maxDuration(a, b time.Duration) time.Duration {
	if a > b {
		return a
	}
	return b
}

// ownSpec copies the shared spec before the machine changes it.
func (m *Machine) ownSpec() {
	if m.specOwned {
		return
	}
	s := *m.spec
	s.Init = append([]api.Container(nil), s.Init...)
	s.Main = append([]api.Container(nil), s.Main...)
	m.spec, m.specOwned = &s, true
}

// podWorkerGrace is the grace of a kill the pod worker starts (a deleted
// pod, a node shutdown, an eviction): calculateEffectiveGracePeriod
// (pod_workers.go) "always supplies a grace period of 1", so a deletion
// with grace 0 still runs the preStop hooks and the sidecar ordering for up
// to a second. A Job's completion kill (SyncPod, killPodWithSyncResult
// with no override) takes the spec's grace as it is.
func podWorkerGrace(g time.Duration) time.Duration {
	return max(g, time.Second)
}

func (m *Machine) beginTermination(now api.Time, reason api.KillReason, grace time.Duration) {
	o := &m.obs
	var running api.Set
	for i := range o.Containers {
		c := &o.Containers[i]
		r := &c.Record
		if r.State == api.StateRunning && r.SandboxAttempt == o.Sandbox.Attempt {
			running = running.With(i)
		}
		c.StopRefused = false // a new kill, goroutines of its own
		if c.Killing && !c.StopRequested && (reason == api.KillPodDeleted || reason == api.KillNodeShutdown) {
			// A deletion or a node shutdown cancels the sync in progress
			// (pod_workers.go UpdatePod: "Cancelling current pod sync"):
			// a single-container kill still in its preStop hook ends
			// there, its hook's exec cut and its StopContainer failing on
			// the cancelled context, and SyncTerminatingPod kills the
			// container like the others, preStop again, within the pod
			// kill's budget. (A kill whose StopContainer was sent goes on:
			// the runtime has the signal.)
			forgetKill(c)
		}
	}
	o.Term = api.Termination{
		Active:         true,
		Reason:         reason,
		Start:          now,
		Grace:          grace,
		Ordered:        ordered(m.spec, m.kindList()),
		RunningAtStart: running,
	}
	m.trace(api.TraceEvent{Kind: api.TraceTerminating, Reason: reason, Grace: grace, Value: o.Term.Ordered, At: now})
}

// retryKill begins the next round of a whole-pod kill whose round failed:
// a container's StopContainer and then StopPodSandbox were refused, so
// SyncTerminatingPod returned the error and the pod worker syncs the pod
// again (completeWork; at once on the PLEG event of a container the round
// stopped, after the requeue backoff otherwise: the sim's RetryDelay
// before the refusal was heard stands for it). killPodWithSyncResult runs
// once more over the containers still running, with the pod worker's
// grace period, not what remains of it (status.gracePeriod), their preStop
// hooks again, and a termination ordering of its own.
func (m *Machine) retryKill(now api.Time) {
	t := m.obs.Term
	for i := range m.obs.Containers {
		c := &m.obs.Containers[i]
		if c.Record.State == api.StateRunning {
			// A sidecar KEP-4438 restarted in the failed round is a
			// running container like the others to the new kill.
			c.PreStop, c.StopRequested, c.RestartedInTerm = api.HookNone, false, false
		}
	}
	m.beginTermination(now, t.Reason, t.Grace)
}

// replan runs the planner until its output is stable: a KillPod begins a
// termination, a completed termination ends the pod or (after sandbox
// loss) returns to normal planning.
func (m *Machine) replan(now api.Time) {
	for round := 0; round < 4; round++ {
		PlanInto(m.plan, m.spec, m.kindList(), &m.obs, m.gates, now)
		for _, a := range m.plan.Actions {
			m.issue(now, a)
		}
		if m.plan.KillPod && !m.obs.Term.Active {
			grace := m.spec.TerminationGracePeriod
			if m.obs.Pod.Deleted {
				grace = podWorkerGrace(m.obs.Pod.DeleteGrace)
			}
			m.beginTermination(now, m.plan.KillReason, grace)
			continue
		}
		if m.plan.TermComplete {
			if m.obs.Term.Reason == api.KillSandboxLost {
				m.obs.Term = api.Termination{}
				continue
			}
			m.obs.Term.Active = false
			m.obs.Pod.Done = true
			continue
		}
		break
	}
	m.publish(now, m.plan.Status)
	if m.plan.WakeAt != m.wakeAt {
		m.wakeAt = m.plan.WakeAt
		m.hasReady = true
	}
}

// issue records that an action was decided and queues it for the host.
func (m *Machine) issue(now api.Time, a api.Action) {
	o := &m.obs
	switch a.Kind {
	case api.ActCreateSandbox:
		o.Pod.SandboxRequested = true
	case api.ActStartContainer:
		c := &o.Containers[a.Container]
		// doBackOff moves the backoff on (Backoff.Next) whenever it finds
		// an exited container to measure from: the latest exit, or, for a
		// restart in the SyncPod that killed the container, the exit
		// before the killed attempt. Init containers of an earlier
		// sandbox were purged: nothing to measure from.
		r := &c.Record
		purged := a.Container < len(m.spec.Init) && r.SandboxAttempt != o.Sandbox.Attempt
		switch {
		case r.State != api.StateExited || purged:
		case c.KillRestart:
			if r.LastExited {
				c.Backoff = nextBackoff(c.Backoff, r.LastFinishedAt.Sub(r.LastStartedAt))
				c.Restarts++
			}
		default:
			c.Backoff = nextBackoff(c.Backoff, r.FinishedAt.Sub(r.StartedAt))
			c.Restarts++
		}
		c.StartPending, c.StartRequestedAt = true, now
		c.KillRestart = false
		if o.Term.Active {
			c.RestartedInTerm = true
		}
	case api.ActRunPreStop:
		c := &o.Containers[a.Container]
		c.PreStop, c.PreStopStartedAt = api.HookRunning, now
		if !o.Term.Active && !c.Killing {
			c.Killing, c.KillDeadline, c.KillReason, c.KillRestart = true, now.Add(a.Grace), a.Reason, a.Restart
		}
	case api.ActRemoveContainer:
		o.Containers[a.Container].RemovePending = true
	case api.ActResizeContainer:
		o.Containers[a.Container].ResizePending = true
	case api.ActStopSandbox:
		if o.Term.Active {
			o.Term.SandboxStopSent = true
		}
	case api.ActStopContainer:
		c := &o.Containers[a.Container]
		c.StopRequested, c.StopRequestedAt = true, now
		if !o.Term.Active && !c.Killing {
			c.Killing, c.KillDeadline, c.KillReason, c.KillRestart = true, now.Add(a.Grace), a.Reason, a.Restart
		}
	}
	m.output()
	m.actions = append(m.actions, a)
	m.hasReady = true
}

func (m *Machine) trace(e api.TraceEvent) {
	m.output()
	m.traces = append(m.traces, e)
	m.hasReady = true
}

// publish diffs the new status against the last published one and traces
// every change. Conditions start False; a terminal phase is final.
func (m *Machine) publish(now api.Time, st api.PodStatus) {
	last := m.last
	if last.Phase.Terminal() {
		st.Phase, st.ShutdownTerminated = last.Phase, last.ShutdownTerminated
	}
	if st.Phase.Terminal() && !last.Phase.Terminal() && !m.obs.Pod.Done {
		// The status manager delays a terminal phase until the pod worker
		// says no container can be running any more (status_manager.go
		// mergePodStatus, couldHaveRunningContainers): until the pod's
		// kill completed, the previous phase stands (INV-C1, S6).
		st.Phase, st.ShutdownTerminated = last.Phase, last.ShutdownTerminated
	}
	if m.gates.RestartAllContainersOnContainerExits && last.Initialized && !st.Initialized {
		// GeneratePodInitializedCondition (status/generate.go) under
		// this gate: "once a pod is initialized, it cannot be
		// uninitialized": the old status's True stands while init
		// containers are incomplete again (a reset, a new sandbox). The
		// old status is the status manager's, seeded from the API after a
		// kubelet restart, as m.last is.
		st.Initialized = true
	}
	if !m.published || st.Phase != last.Phase {
		m.trace(api.TraceEvent{Kind: api.TracePhase, Phase: st.Phase, At: now})
	}
	if st.Initialized != last.Initialized {
		m.trace(api.TraceEvent{Kind: api.TraceCondition, Cond: api.CondInitialized, Value: st.Initialized, At: now})
	}
	if st.ContainersReady != last.ContainersReady {
		m.trace(api.TraceEvent{Kind: api.TraceCondition, Cond: api.CondContainersReady, Value: st.ContainersReady, At: now})
	}
	if st.Ready != last.Ready {
		m.trace(api.TraceEvent{Kind: api.TraceCondition, Cond: api.CondReady, Value: st.Ready, At: now})
	}
	if st.AllContainersRestarting != last.AllContainersRestarting {
		m.trace(api.TraceEvent{Kind: api.TraceCondition, Cond: api.CondAllContainersRestarting, Value: st.AllContainersRestarting, At: now})
	}
	if d := st.Started ^ last.Started; d != 0 {
		for i := 0; i < len(m.obs.Containers); i++ {
			if d.Has(i) && m.kinds[i] != kindInit {
				m.trace(api.TraceEvent{Kind: api.TraceStarted, Container: i, Value: st.Started.Has(i), At: now})
			}
		}
	}
	if d := st.ReadySet ^ last.ReadySet; d != 0 {
		for i := 0; i < len(m.obs.Containers); i++ {
			if d.Has(i) {
				m.trace(api.TraceEvent{Kind: api.TraceReady, Container: i, Value: st.ReadySet.Has(i), At: now})
			}
		}
	}
	m.last, m.published = st, true
	m.obs.Pod.Restarting = st.AllContainersRestarting
}
