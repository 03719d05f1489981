package kubelet

import "github.com/sidebench/sidebench/reference-impl/api"

// status generates the pod status the kubelet publishes: per-container
// Started/Ready, the phase (kubelet_pods.go getPhase) and the Initialized,
// ContainersReady and Ready conditions (status/generate.go).
func (p *planner) status() api.PodStatus {
	var st api.PodStatus
	n := p.spec.Len()
	for i := 0; i < n; i++ {
		if p.kinds[i] == kindInit {
			continue
		}
		if p.started(i) {
			st.Started = st.Started.With(i)
		}
		if p.ready(i) {
			st.ReadySet = st.ReadySet.With(i)
		}
	}
	st.Initialized = p.initializedCondition(st.Started)
	st.Phase = p.phase(st.Started, st.Initialized)
	if p.obs.Pod.Shutdown && p.obs.Pod.Done {
		// INV-F4: pods killed by graceful node shutdown are Failed with
		// reason Terminated (a pod that had already succeeded is not
		// killed, so Shutdown is never set for it).
		st.Phase, st.Reason = api.PhaseFailed, "Terminated"
	}
	cr := st.Phase != api.PhaseSucceeded
	for i := 0; i < n && cr; i++ {
		if p.kinds[i] != kindInit && !st.ReadySet.Has(i) {
			cr = false
		}
	}
	st.ContainersReady = cr
	st.Ready = cr
	st.AllContainersRestarting = !st.Phase.Terminal() && p.resetTriggered()
	return st
}

// initializedCondition: every regular init container completed and every
// sidecar started, or a main container already started in this sandbox
// (INV-P2). Under the 2019 proposal sidecars are not init containers and do
// not gate the condition.
func (p *planner) initializedCondition(started api.Set) bool {
	if p.anyMainStarted() {
		return true
	}
	for i := range p.spec.Init {
		switch p.kinds[i] {
		case kindInit:
			r := p.rec(i)
			if r == nil || r.State != api.StateExited || r.ExitCode != 0 {
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

// phase mirrors getPhase: sidecar exits never decide the phase (INV-C2), a
// running-but-not-started sidecar keeps the pod Pending until it
// initialized (INV-P1), and a pod that is done on this node is Succeeded
// only if every main container exited 0 (INV-T8).
func (p *planner) phase(started api.Set, initialized bool) api.Phase {
	var pendingInit, failedInit, pendingSidecars int
	var running, waiting, stopped, succeeded, unknown int
	hasInitialized := p.anyMainStarted()
	for i := range p.spec.Init {
		r := p.rec(i)
		switch p.kinds[i] {
		case kindInit:
			if hasInitialized {
				continue // records may be gone; the API keeps the old status
			}
			switch {
			case r == nil, r.State == api.StateRunning, r.State == api.StateCreated, r.State == api.StateUnknown:
				pendingInit++
			case r.ExitCode != 0:
				failedInit++
			}
		case kindSidecar:
			switch {
			case r == nil:
				if !hasInitialized {
					pendingSidecars++
				}
			case r.State == api.StateRunning:
				running++
				if !started.Has(i) {
					pendingSidecars++
				}
			case r.State == api.StateCreated && r.Attempt == 0:
				pendingSidecars++
			}
		case kindSidecar2019:
			// Excluded from the phase (KEP-19b), but a sidecar that has not
			// come up yet keeps the pod Pending.
			if r == nil && !hasInitialized {
				waiting++
			} else if r != nil && r.State == api.StateRunning {
				running++
			}
		case kindMain:
			p.countMain(i, &running, &waiting, &stopped, &succeeded, &unknown)
		}
	}
	for i := len(p.spec.Init); i < p.spec.Len(); i++ {
		p.countMain(i, &running, &waiting, &stopped, &succeeded, &unknown)
	}
	terminal := p.obs.Pod.Done
	if failedInit > 0 && p.spec.RestartPolicy == api.RestartNever {
		return api.PhaseFailed
	}
	switch {
	case pendingInit > 0 || (pendingSidecars > 0 && !initialized && !hasInitialized):
		return p.terminalOr(terminal, api.PhasePending)
	case waiting > 0:
		return p.terminalOr(terminal, api.PhasePending)
	case running > 0 && unknown == 0 && !terminal:
		return api.PhaseRunning
	case running == 0 && stopped > 0 && unknown == 0:
		if terminal {
			if stopped == succeeded {
				return api.PhaseSucceeded
			}
			return api.PhaseFailed
		}
		if p.spec.RestartPolicy == api.RestartAlways {
			return api.PhaseRunning
		}
		if stopped == succeeded {
			return api.PhaseSucceeded
		}
		if p.spec.RestartPolicy == api.RestartNever {
			return api.PhaseFailed
		}
		return api.PhaseRunning
	}
	return p.terminalOr(terminal, api.PhasePending)
}

// terminalOr: a pod that is done on this node but has no decisive
// container statuses (deleted while initializing) is Failed.
func (p *planner) terminalOr(terminal bool, ph api.Phase) api.Phase {
	if terminal {
		return api.PhaseFailed
	}
	return ph
}

func (p *planner) countMain(i int, running, waiting, stopped, succeeded, unknown *int) {
	if p.kinds[i] != kindMain {
		return
	}
	c := &p.obs.Containers[i]
	r := &c.Record
	if r.State != api.StateNone && r.SandboxAttempt != p.obs.Sandbox.Attempt {
		// A main of an earlier sandbox: it is waiting to be restarted in
		// this one, with a last termination state.
		*stopped++
		if r.ExitCode == 0 {
			*succeeded++
		}
		return
	}
	switch r.State {
	case api.StateNone:
		if c.Gone {
			// Garbage-collected after it exited: the status keeps its last
			// termination.
			*stopped++
			if c.GoneExitCode == 0 {
				*succeeded++
			}
			return
		}
		*waiting++
	case api.StateRunning:
		*running++
	case api.StateExited:
		*stopped++
		if r.ExitCode == 0 {
			*succeeded++
		}
	case api.StateCreated:
		if r.Attempt == 0 {
			*waiting++
		} else {
			*stopped++
		}
	default:
		*unknown++
	}
}
