package check

import "github.com/sidebench/sidebench/harness/history"

// checkF4 decides INV-F4 for a pod on a node that began a graceful
// shutdown (node.shutdown: Grace = shutdownGracePeriod, CritGrace =
// shutdownGracePeriodCriticalPods). nodeshutdown_manager.go killPods kills
// regular pods first, each with min(its grace, the regular group's
// budget), then critical pods with min(its grace, their budget), through
// the normal pod kill; the status is Failed (unless it had Succeeded) with
// reason Terminated.
//
// Per pod, the checker decides: the kill begins promptly (regular pods at
// the shutdown, critical ones by the end of the regular group's budget),
// its budget is the pod's group budget or its own grace if shorter, and
// the terminal phase after it is Failed/Terminated unless the pod had
// succeeded before. That critical pods wait for the regular ones is a
// property across pods: with the regular group's budget as the latest
// start it is bounded, not ordered, here.
func checkF4(p *Pod, hits []Hit) []Hit {
	for _, sd := range p.Shutdowns {
		e := &p.Ev[sd]
		if e.Grace == 0 {
			continue
		}
		start := e.T
		budget, latest := e.Grace-e.CritGrace, start
		if p.Spec.Critical {
			budget, latest = e.CritGrace, start+e.Grace-e.CritGrace
		}
		if p.Spec.Grace < budget {
			budget = p.Spec.Grace
		}
		// The override goes through the pod worker, which raises 0 (a pod
		// with terminationGracePeriodSeconds 0, or a regular group left
		// no time by the critical pods') to a second.
		budget = max(budget, podWorkerMinGrace)
		if !p.liveAt(sd) || p.termAt(sd) != nil {
			// Finished, or already being killed (deleted): the shutdown can
			// only shorten that kill, which T5 bounds.
			continue
		}
		w := p.termAfter(sd)
		down := p.nodeDownAfter(sd)
		dl := latest + p.Slack()
		if w == nil || w.Reason != "NodeShutdown" {
			if (down == none || p.T(down) > dl) && p.Horizon > dl && (w == nil || w.T > dl) {
				h := p.late(sd, none, dl, "pod not terminated by the graceful node shutdown")
				if w == nil {
					h.Kind = Order
				}
				hits = append(hits, h)
			}
			continue
		}
		if w.T > dl {
			hits = append(hits, p.late(sd, w.Idx, dl, "node-shutdown kill began %s after the shutdown, its group's budget allows %s", ms(w.T-start), ms(latest-start)))
		}
		if w.Grace > budget+p.Tol {
			hits = append(hits, p.at(w.Idx, sd, "node-shutdown kill with a %s budget, its group allows %s", ms(w.Grace), ms(budget)))
		}
		succeeded := false
		for _, j := range p.Phases {
			if j < sd && p.Ev[j].Phase == "Succeeded" {
				succeeded = true
			}
		}
		for _, j := range p.Phases {
			ph := &p.Ev[j]
			if j < w.Idx || !terminal(ph.Phase) {
				continue
			}
			// killPods' status function sets Failed "unless it was
			// already in a successful terminal phase"; the terminal
			// getPhase of a pod whose mains all exited 0 is Succeeded,
			// which a real kubelet v1.37.2 publishes
			// (nodeshutdown_manager.go killPods).
			// The reason is racy on a real kubelet: SyncTerminatingPod
			// publishes the status function's Failed/Terminated, then,
			// once the containers are gone, a regenerated status without
			// the reason (generateAPIPodStatus does not carry it over);
			// whether the first reaches the API depends on the status
			// manager's batching. A Failed phase without a reason is
			// therefore the kubelet's, not a broken guarantee.
			switch {
			case succeeded && ph.Phase == "Succeeded":
			case ph.Phase == "Succeeded" && p.mainsSucceeded(j):
			case ph.Phase == "Failed" && ph.Reason == "":
			case ph.Phase != "Failed" || ph.Reason != "Terminated":
				want := "Failed/Terminated"
				if p.mainsSucceeded(j) {
					want += " or Succeeded"
				}
				hits = append(hits, p.at(j, sd, "phase %s (reason %q) after a node-shutdown kill, want %s", ph.Phase, ph.Reason, want))
			}
			break
		}
	}
	return hits
}

// liveAt reports whether the pod had something running or still to do on
// its node at event i: scheduled there, not finished nor removed.
func (p *Pod) liveAt(i int32) bool {
	if p.Removed != none && p.Removed < i {
		return false
	}
	for _, j := range p.Phases {
		if j < i && terminal(p.Ev[j].Phase) {
			return false
		}
	}
	for c := range p.Ctrs {
		if p.attAt(c, i) != nil {
			return true
		}
	}
	return false
}

// nodeDownAfter returns the first node.down after event i, or none.
func (p *Pod) nodeDownAfter(i int32) int32 {
	for _, o := range p.Outages {
		if o.What == history.NodeDown && o.Down > i {
			return o.Down
		}
	}
	return none
}
