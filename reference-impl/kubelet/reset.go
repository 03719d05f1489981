package kubelet

import "github.com/sidebench/sidebench/reference-impl/api"

// isTrigger reports whether container i's record in the current sandbox is
// an exit whose first matching rule is RestartAllContainers (INV-RA1): a
// source of the current sandbox.
func (p *planner) isTrigger(i int) bool {
	return p.rec(i) != nil && p.isSource(i)
}

// isSource reports whether container i's record, whatever its sandbox, is
// an exit whose first matching rule is RestartAllContainers: the reset's
// sources, removed last (getContainersToReset classifies every record of
// the pod; a reset that outlives its sandbox still removes its trigger of
// the lost one last, rules-restart-all-main with a kill-containers runtime
// restart).
func (p *planner) isSource(i int) bool {
	r := &p.obs.Containers[i].Record
	if r.State != api.StateExited {
		return false
	}
	rule := p.spec.At(i).MatchRule(r.ExitCode)
	return rule != nil && rule.Action == api.RuleRestartAllContainers
}

// resetTriggered reports whether a RestartAllContainers reset is in
// progress: kubecontainer.ShouldAllContainersRestart (the API status's
// AllContainersRestarting condition, or an exit that matches a
// RestartAllContainers rule) while the runtime still holds a record of the
// pod (AllContainersRestartCleanedUp). A restarted kubelet resumes it from
// the triggering records, which are removed last (INV-RA3), and from the
// condition, which keeps it going when something else removed the
// trigger's record (container GC during the reset: the reference ended the
// reset there and restarted the trigger without re-initialization).
func (p *planner) resetTriggered() bool {
	if !p.g.RestartAllContainersOnContainerExits {
		return false
	}
	records := false
	for i := range p.obs.Containers {
		if p.isTrigger(i) {
			return true
		}
		// AllContainersRestartCleanedUp: no record of the container in
		// any sandbox (FindContainerStatusByName).
		records = records || p.obs.Containers[i].Record.State != api.StateNone
	}
	return p.obs.Pod.Restarting && records
}

// resetDecided reports whether a triggered reset is decided, given the phase
// the status generation gives: the AllContainersRestarting condition that
// the plan resets under and the status publishes. SyncPod resets only under
// AllContainersRestarting=True, which GenerateAllContainersRestartingCondition
// makes False when the phase the same sync generated is terminal (a Job
// whose mains completed is not reset by a sidecar's exit a restarted kubelet
// finds). And the condition comes from the status a sync generates when it
// begins: while the pod worker is inside the SyncPod that starts a
// container (through its postStart hook, and the kill that follows a failed
// one), a reset not yet under way is the next sync's, decided from what the
// runtime holds then (if its trigger's record vanishes meanwhile, container
// GC, there is none).
func (p *planner) resetDecided(phase api.Phase) bool {
	return !phase.Terminal() && (p.obs.Pod.Restarting || !p.startInFlight())
}

// planReset moves a RestartAllContainers reset forward: every other
// container is stopped (2 s, no preStop, no ordering) and removed, the
// triggering containers last; nothing starts until the runtime holds no
// record of the pod, after which initialization re-runs from the first
// init container in the same sandbox (INV-RA2..RA5).
func (p *planner) planReset() {
	others := false
	for i := len(p.obs.Containers) - 1; i >= 0; i-- {
		if p.isSource(i) {
			continue
		}
		if p.resetOne(i) {
			others = true
		}
	}
	if p.g.Bug == api.BugResetTriggerFirst {
		// Bug replica: the triggering main is restarted at once, like an
		// ordinary restart, while the rest of the pod is still being reset.
		for i := len(p.spec.Init); i < p.spec.Len(); i++ {
			if p.isTrigger(i) {
				p.start(i)
			}
		}
		return
	}
	if others {
		return
	}
	for i := len(p.obs.Containers) - 1; i >= 0; i-- {
		if p.isSource(i) {
			p.resetOne(i)
		}
	}
}

// resetOne stops or removes container i; it reports whether i still has a
// record, or a start in flight that will make one. The reset purges every
// record of the pod, an earlier sandbox's as well (getContainersToReset
// walks all of podStatus.ContainerStatuses: "RestartAllContainers require
// all container to be purged from runtime"): an init whose start a lost
// sandbox cut is removed before the trigger (the sweep's kitchen-sink under
// KEP-4438's policy).
func (p *planner) resetOne(i int) bool {
	c := &p.obs.Containers[i]
	if c.StartPending {
		// The kubelet starts containers inside SyncPod and the pod worker
		// runs one sync at a time: the reset is the next sync's, which
		// sees this container running and stops it with the rest. Until
		// the runtime reports the attempt there is nothing to stop, and
		// the trigger stays so that the reset cannot end first.
		return true
	}
	r := &c.Record
	if r.State == api.StateNone {
		return false
	}
	switch {
	case r.State == api.StateRunning || r.State == api.StateUnknown:
		if !c.StopRequested {
			p.act(api.Action{Kind: api.ActStopContainer, Container: i, Grace: MinimumGracePeriod, Reason: api.KillRestartAll})
		}
	case !c.RemovePending:
		p.act(api.Action{Kind: api.ActRemoveContainer, Container: i, Reason: api.KillRestartAll})
	}
	return true
}
