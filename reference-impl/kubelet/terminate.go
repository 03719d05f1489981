package kubelet

import (
	"time"

	"github.com/sidebench/sidebench/reference-impl/api"
)

// planTermination continues a whole-pod kill (killPodWithSyncResult plus
// the sidecar termination ordering of kuberuntime_termination_order.go),
// with the goroutine waits turned into deadlines:
//
//  1. every running container's preStop hook starts at once (INV-T1);
//  2. a container is stopped when its preStop returned and, under
//     ordering, its turn came: mains have no prerequisites (INV-T2); a
//     sidecar waits for every main and for the next sidecar in spec order
//     (INV-T3, T4; containers not running then count as terminated,
//     INV-T9);
//  3. the stop grace is what remains of the shared budget, never less than
//     2 s; when the budget is exhausted every remaining container is
//     stopped at once with 2 s (INV-T5);
//  4. a container whose StopContainer the runtime refused is not signalled
//     again in this round (its goroutine returned the error) and holds
//     those waiting for it until their grace runs out. When the round is
//     over with such a container still running, StopPodSandbox is sent
//     (killPodWithSyncResult stops the sandboxes whatever the containers'
//     results; it SIGKILLs what is left); if the runtime refuses that too,
//     the sync failed and the next one kills the pod again (retryKill).
func (p *planner) planTermination() {
	t := &p.obs.Term
	deadline := t.Deadline()
	busy, refused := false, false
	for i := range p.obs.Containers {
		c := &p.obs.Containers[i]
		r := p.rec(i)
		if c.StartPending {
			// A start already in flight when the kill began: wait for it to
			// come up and stop it then (INV-T10 forbids new starts only).
			busy = true
		}
		if r == nil {
			continue
		}
		if r.State != api.StateRunning && !p.killedAlive(i) {
			if p.restartInTermination(i) {
				busy = true
				p.start(i)
			}
			continue
		}
		if c.StopRefused {
			// Its goroutine is over. One the runtime now reports Unknown
			// is left like any Unknown container at a kill's end.
			refused = refused || r.State == api.StateRunning
			continue
		}
		busy = true
		if c.StopRequested {
			continue // the runtime SIGKILLs it when its grace runs out
		}
		spec := p.spec.At(i)
		beforeDeadline := p.now < deadline
		if spec.PreStop && c.PreStop == api.HookNone && beforeDeadline && !c.RestartedInTerm {
			p.act(api.Action{Kind: api.ActRunPreStop, Container: i, Reason: t.Reason})
			p.wake(deadline)
			continue
		}
		if c.PreStop == api.HookRunning && beforeDeadline {
			p.wake(deadline)
			continue
		}
		if beforeDeadline && t.Ordered && t.RunningAtStart.Has(i) && !p.turnCame(i) {
			p.wake(deadline)
			continue
		}
		grace := stopGrace(deadline, p.now)
		if c.RestartedInTerm {
			// KEP-4438 alpha limitation: a sidecar restarted during
			// termination is SIGKILLed at its turn.
			grace = 0
		}
		p.act(api.Action{Kind: api.ActStopContainer, Container: i, Grace: grace, Reason: t.Reason})
	}
	switch {
	case busy:
	case refused:
		// killPodWithSyncResult stops every sandbox of the running pod,
		// ready or not; once sent, its SIGKILLs or its refusal are on
		// their way.
		if !t.SandboxStopSent {
			p.act(api.Action{Kind: api.ActStopSandbox})
		}
	default:
		p.out.TermComplete = true
		if p.obs.Sandbox.State == api.SandboxReady && t.Reason != api.KillSandboxLost && !t.SandboxStopSent {
			p.act(api.Action{Kind: api.ActStopSandbox})
		}
	}
}

// killedAlive reports whether container i, which the runtime now reports
// Unknown, still counts as running in the kill in progress: it was running
// when the kill began, so killPodWithSyncResult has a goroutine killing it
// whose StopContainer returns only once the process is gone, and the
// ordering's containerTerminated follows that return
// (kuberuntime_container.go killContainer). A container Unknown before the
// kill began is not in the running pod (ConvertPodStatusToRunningPod keeps
// Running containers only) and takes no part.
func (p *planner) killedAlive(i int) bool {
	r := p.rec(i)
	return r != nil && r.State == api.StateUnknown && p.obs.Term.RunningAtStart.Has(i)
}

// turnCame reports whether container i may be signalled under ordering
// (newTerminationOrdering): a sidecar waits for every main running at
// kill time and for the next sidecar in spec order only. The chain is
// the kubelet's, not "every later sidecar": a later sidecar that was not
// running at kill time has a pre-closed channel, so the sidecars on either
// side of it are signalled together (sidecars a, b, c with b in backoff:
// a and c stop at once when the mains are gone).
func (p *planner) turnCame(i int) bool {
	k := p.kinds[i]
	if k != kindSidecar && k != kindSidecar2019 {
		return true
	}
	if p.g.Bug == api.BugSidecarsWithMains {
		return true
	}
	t := &p.obs.Term
	for j := len(p.spec.Init); j < p.spec.Len(); j++ {
		if t.RunningAtStart.Has(j) && p.holdsTurn(j) {
			return false
		}
	}
	if k == kindSidecar2019 {
		// 2019: all sidecars together once the mains are gone.
		return true
	}
	for j := i + 1; j < len(p.spec.Init); j++ {
		if p.kinds[j] == kindSidecar {
			return p.terminatedInKill(j)
		}
	}
	return true
}

// terminatedInKill reports whether sidecar j's part in the kill is over,
// as the sidecar before it sees it (containerTerminated): j was not running
// when the kill began, or its turn came and it is gone. A sidecar that
// exited on its own while waiting for its turn still holds the one before
// it: the kubelet closes its channel only after its own waitForTurn and
// StopContainer return.
func (p *planner) terminatedInKill(j int) bool {
	if !p.obs.Term.RunningAtStart.Has(j) {
		return true
	}
	if p.holdsTurn(j) {
		return false
	}
	return p.turnCame(j)
}

// holdsTurn reports whether container j, running when the kill began, has
// not yet closed its channel in the termination ordering: it is still
// running, or its StopContainer was refused (its goroutine returned the
// error without containerTerminated, so those waiting for it wait out
// their grace even once it exits on its own).
func (p *planner) holdsTurn(j int) bool {
	return p.running(j) || p.killedAlive(j) || p.obs.Containers[j].StopRefused
}

// restartInTermination implements the KEP-4438 gate: a sidecar that exits
// while waiting for its turn is restarted, unless TGPS <= 1 s or its
// sandbox is gone. Not while a RestartAllContainers reset is in progress:
// the reset stops every container without ordering and the termination
// cancels the re-initialization it was for, so a sidecar it stopped has
// no main left to serve, and restarting it would start it in a pod whose
// init containers the reset already removed (INV-S1, RA7; the sweep of
// pod shapes with both gates).
func (p *planner) restartInTermination(i int) bool {
	if !p.g.SidecarsRestartableDuringPodTermination || p.kinds[i] != kindSidecar || p.resetTriggered() {
		return false
	}
	if p.obs.Sandbox.State != api.SandboxReady {
		// Nothing to restart it in: the sandbox was lost during the
		// kill (a runtime restart that took the containers, while a
		// main whose stop the restart cut still held the sidecar's
		// turn; the sweep's harsh shape under KEP-4438's policy).
		return false
	}
	t := &p.obs.Term
	c := &p.obs.Containers[i]
	if !t.Ordered || !t.RunningAtStart.Has(i) || c.StopRequested || c.StartPending {
		return false
	}
	if p.spec.TerminationGracePeriod <= time.Second || p.now >= t.Deadline() {
		return false
	}
	return !p.turnCame(i)
}

// ordered reports whether a whole-pod kill of this pod uses sidecar
// termination ordering: only when the pod has a sidecar and the policy
// orders termination (newTerminationOrdering).
func ordered(spec *api.PodSpec, kinds []kind) bool {
	for i := range spec.Init {
		if kinds[i] == kindSidecar || kinds[i] == kindSidecar2019 {
			return true
		}
	}
	return false
}
