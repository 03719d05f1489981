package kubelet

import "github.com/sidebench/sidebench/reference-impl/api"

// status generates the pod status the kubelet publishes: per-container
// Started/Ready, the phase (kubelet_pods.go getPhase) and the Initialized,
// ContainersReady and Ready conditions (status/generate.go).
//
// The kubelet computes the phase and Initialized from the API container
// statuses, which keep a container's last Terminated state after its
// runtime record is gone (garbage collection, or the purge of init
// containers when a sandbox is recreated: convertToAPIContainerStatuses
// starts from the old status). The planner reads that from the latest
// record of each container whatever its sandbox, and from Gone.
func (p *planner) status() api.PodStatus {
	var st api.PodStatus
	n := p.spec.Len()
	st.Started = p.startedSet()
	for i := 0; i < n; i++ {
		if code, ok := p.lastExit(i); ok {
			st.Terminated = st.Terminated.With(i)
			if code != 0 {
				st.TerminatedFailed = st.TerminatedFailed.With(i)
			}
		}
		if p.kinds[i] != kindInit && p.ready(i) {
			st.ReadySet = st.ReadySet.With(i)
		}
	}
	st.Phase = p.phase(st.Started)
	if p.obs.Pod.Shutdown && p.obs.Pod.Done && st.Phase != api.PhaseSucceeded {
		// INV-F4: pods killed by graceful node shutdown are Failed with
		// reason Terminated, "unless it was already in a successful
		// terminal phase" (nodeshutdown_manager.go killPods): a pod whose
		// mains all exited 0 keeps the Succeeded of its terminal getPhase,
		// as a real kubelet v1.37.2 publishes it (local-node-shutdown).
		st.Phase, st.ShutdownTerminated = api.PhaseFailed, true
	}
	st.Initialized = p.initializedCondition(st.Started, st.Phase)
	// generate.go: a terminal phase makes ContainersReady and Ready False.
	cr := !st.Phase.Terminal()
	for i := 0; i < n && cr; i++ {
		if p.kinds[i] != kindInit && !st.ReadySet.Has(i) {
			cr = false
		}
	}
	st.ContainersReady = cr
	st.Ready = cr
	st.AllContainersRestarting = p.resetTriggered() && p.resetDecided(st.Phase)
	return st
}

// startedSet is the status's Started bits. A regular init's says
// "published Running" (its API status has started: true while it runs); it
// is not traced (publish), only read by a restarted kubelet's relist.
func (p *planner) startedSet() api.Set {
	var s api.Set
	for i := 0; i < p.spec.Len(); i++ {
		if p.kinds[i] == kindInit && p.running(i) || p.kinds[i] != kindInit && p.started(i) {
			s = s.With(i)
		}
	}
	return s
}

// lastExit returns the exit code of container i's last termination as
// the API status shows it (its latest record in any sandbox, a record
// garbage-collected after it exited, or the attempt before a record that
// never ran), and whether there is one.
func (p *planner) lastExit(i int) (int32, bool) {
	c := &p.obs.Containers[i]
	r := &c.Record
	switch {
	case r.State == api.StateExited:
		return r.ExitCode, true
	case r.State == api.StateNone && c.Gone:
		return c.GoneExitCode, true
	case r.State == api.StateCreated && r.LastExited:
		return r.LastExitCode, true
	}
	return 0, false
}

// initializedCondition is GeneratePodInitializedCondition: True once the
// pod Succeeded, or once any main container has a Running or Terminated
// status (HasAnyRegularContainerStarted over the API statuses, which keep
// the mains of a lost sandbox), or when every regular init container
// completed and every sidecar is started (INV-P2). Under the 2019
// proposal sidecars are not init containers and do not gate the
// condition.
func (p *planner) initializedCondition(started api.Set, ph api.Phase) bool {
	if ph == api.PhaseSucceeded {
		return true
	}
	for i := len(p.spec.Init); i < p.spec.Len(); i++ {
		if p.kinds[i] != kindMain {
			continue
		}
		c := &p.obs.Containers[i]
		// A running container the runtime now reports Unknown is
		// published Terminated (ContainerStatusUnknown, 137:
		// convertToAPIContainerStatuses), which counts as well.
		if s := c.Record.State; s == api.StateRunning || s == api.StateExited || (s == api.StateNone && c.Gone) ||
			(s == api.StateUnknown && c.Record.StartedAt != 0) {
			return true
		}
	}
	for i := range p.spec.Init {
		switch p.kinds[i] {
		case kindInit:
			if code, ok := p.lastExit(i); !ok || code != 0 {
				return false
			}
		case kindSidecar:
			if !started.Has(i) {
				return false
			}
		}
	}
	return true
}

// phase mirrors getPhase (kubelet_pods.go): sidecar exits never decide the
// phase (INV-C2); a regular init container running, or never run, and a
// sidecar running but not Started before any main container ran in this
// sandbox keep the pod Pending (INV-P1), and so does a container that
// never ran; a pod that is done on this node is Succeeded only if every
// main container exited 0 (INV-T8), and a non-terminal phase becomes
// Failed then (status_manager.go TerminatePod).
//
// During re-initialization after a lost sandbox the statuses of the lost
// sandbox carry over: completed inits are not pending, the lost mains
// count as stopped, so the phase is Running except while a regular init
// runs or a sidecar runs unstarted (issue 16 A7, docs/reference-impl.md).
func (p *planner) phase(started api.Set) api.Phase {
	var pendingInit, failedInit, pendingSidecars int
	var n phaseCounts
	// podHasInitialized: HasAnyActiveRegularContainerStarted, over the
	// containers of the active sandbox, which the runtime manager sets only
	// when the latest sandbox is READY (GetPodStatus): a lost sandbox has
	// no active containers, so a sidecar running unstarted makes the pod
	// Pending until the mains run again.
	hasInitialized := p.obs.Sandbox.State == api.SandboxReady && p.anyMainStarted()
	for i := range p.spec.Init {
		c := &p.obs.Containers[i]
		r := &c.Record
		cur := r.State != api.StateNone && r.SandboxAttempt == p.obs.Sandbox.Attempt
		switch p.kinds[i] {
		case kindInit:
			switch {
			case cur && r.State == api.StateRunning:
				pendingInit++
			case r.State == api.StateUnknown:
				// Reported Terminated, exit 137.
				if p.initFailureEndsPod(i, 137) {
					failedInit++
				}
			case r.State == api.StateNone && !c.Gone:
				// Never ran, or its record vanished: once a main ran the
				// API status still shows it completed.
				if !hasInitialized {
					pendingInit++
				}
			default:
				if code, ok := p.lastExit(i); !ok {
					pendingInit++ // created, never ran
				} else if code != 0 && p.initFailureEndsPod(i, code) {
					failedInit++
				}
			}
		case kindSidecar:
			switch {
			case cur && r.State == api.StateRunning:
				n.running++
				if !started.Has(i) {
					pendingSidecars++
				}
			case r.State == api.StateExited, r.State == api.StateUnknown, r.State == api.StateCreated && r.LastExited,
				r.State == api.StateNone && (c.Gone || c.NextAttempt > 0):
				// A terminated sidecar (or one waiting with a last
				// termination) is "not taken into account".
			case r.State == api.StateNone && hasInitialized:
				// Its record vanished after the pod initialized: the API
				// status still shows its termination.
			default:
				// Waiting without a last termination: never ran.
				pendingSidecars++
				n.waiting++
			}
		case kindSidecar2019:
			// Excluded from the phase (KEP-19b), but a sidecar that has not
			// come up yet keeps the pod Pending.
			rr := p.rec(i)
			if rr == nil && !hasInitialized {
				n.waiting++
			} else if rr != nil && rr.State == api.StateRunning {
				n.running++
			}
		case kindMain:
			p.countMain(i, &n)
		}
	}
	for i := len(p.spec.Init); i < p.spec.Len(); i++ {
		p.countMain(i, &n)
	}
	terminal := p.obs.Pod.Done
	if failedInit > 0 {
		return api.PhaseFailed
	}
	switch {
	case pendingInit > 0 || (pendingSidecars > 0 && !hasInitialized):
		return p.terminalOr(terminal, api.PhasePending)
	case n.waiting > 0:
		return p.terminalOr(terminal, api.PhasePending)
	case n.running > 0 && n.unknown == 0 && !terminal:
		return api.PhaseRunning
	case n.running == 0 && n.stopped > 0 && n.unknown == 0:
		if terminal {
			if n.stopped == n.succeeded {
				return api.PhaseSucceeded
			}
			return api.PhaseFailed
		}
		if p.g.ContainerRestartRules {
			// "At least one containers are in the process of restarting":
			// a stopped main its rules or own policy restart keeps the pod
			// Running in a Never or OnFailure pod.
			switch {
			case n.stopped != n.stoppedNotRestartable:
				return api.PhaseRunning
			case n.stopped == n.succeeded:
				return api.PhaseSucceeded
			}
			return api.PhaseFailed
		}
		if p.spec.RestartPolicy == api.RestartAlways {
			return api.PhaseRunning
		}
		if n.stopped == n.succeeded {
			return api.PhaseSucceeded
		}
		if p.spec.RestartPolicy == api.RestartNever {
			return api.PhaseFailed
		}
		return api.PhaseRunning
	}
	return p.terminalOr(terminal, api.PhasePending)
}

// initFailureEndsPod reports whether regular init i's failure with code
// makes the pod Failed: getPhase's failedInitializationNotRestartable
// under ContainerRestartRules (ContainerShouldRestart: the rules, else the
// container's policy, else the pod's), or any failure in a Never pod
// without the gate.
func (p *planner) initFailureEndsPod(i int, code int32) bool {
	if p.g.ContainerRestartRules {
		return !p.containerShouldRestart(i, code)
	}
	return p.spec.RestartPolicy == api.RestartNever
}

// terminalOr: a pod that is done on this node but has no decisive
// container statuses (deleted while initializing) is Failed
// (TerminatePod).
func (p *planner) terminalOr(terminal bool, ph api.Phase) api.Phase {
	if terminal {
		return api.PhaseFailed
	}
	return ph
}

// phaseCounts are getPhase's counters over the sidecars and main
// containers.
type phaseCounts struct {
	running, waiting, stopped, succeeded, unknown int
	// stoppedNotRestartable counts the stopped mains that will not be
	// restarted (ContainerShouldRestart on their exit): under
	// ContainerRestartRules a pod whose stopped mains may all still restart
	// is Running whatever its policy.
	stoppedNotRestartable int
}

// stop counts main i stopped with exit code.
func (n *phaseCounts) stop(p *planner, i int, code int32) {
	n.stopped++
	if !p.containerShouldRestart(i, code) {
		n.stoppedNotRestartable++
	}
}

// countMain counts main container i as getPhase does, from its latest
// record in any sandbox (a main of a lost sandbox is stopped, waiting to
// be restarted in the new one).
func (p *planner) countMain(i int, n *phaseCounts) {
	if p.kinds[i] != kindMain {
		return
	}
	c := &p.obs.Containers[i]
	r := &c.Record
	cur := r.State != api.StateNone && r.SandboxAttempt == p.obs.Sandbox.Attempt
	switch r.State {
	case api.StateRunning:
		if cur {
			n.running++
		} else {
			n.unknown++ // cannot be: a lost sandbox's containers are dead
		}
		return
	case api.StateExited:
		if cur && (c.KillRestart || c.StartPending) && !p.obs.Pod.Deleted {
			// Killed with a restart, or restarting: the kubelet kills and
			// starts it in one SyncPod, so no status in between shows it
			// stopped (issue 16 A3); it is running again by the next one.
			// Not once the pod is deleted: the deletion cancels that sync
			// and a terminating pod restarts nothing (SyncTerminatingPod),
			// so the exit is final.
			n.running++
			return
		}
	case api.StateUnknown:
		// convertToAPIContainerStatuses: a container in Unknown state that
		// was running is reported Terminated, exit 137
		// (ContainerStatusUnknown).
		n.stop(p, i, 137)
		return
	case api.StateCreated:
		if r.LastExited {
			// Waiting, with the previous attempt as its last termination
			// (a restart whose start failed): getPhase counts it stopped
			// but never succeeded — succeeded counts State.Terminated
			// with exit 0 only — so a finished pod is Failed. (1M mixed
			// faults: a restart cut by a runtime restart, then deletion,
			// published Succeeded: INV-C2, T8.)
			n.stop(p, i, r.LastExitCode)
			return
		}
	}
	if code, ok := p.lastExit(i); ok {
		n.stop(p, i, code)
		if code == 0 {
			n.succeeded++
		}
		return
	}
	// No termination yet: never ran (a Created record included, issue 16
	// A6), or vanished without one.
	n.waiting++
}
