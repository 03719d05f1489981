package check

import (
	"fmt"

	"github.com/sidebench/sidebench/harness/history"
)

// Completion, phase and conditions, SEMANTICS.md §2.3–2.4.
// §5: garbage-collected container records are a known way to lose phase
// and condition status (#108537), so GC excuses these.
var phaseInvs = []*inv{
	// Vacuous without a main's exit outside a pod kill: completion needs
	// one (every main's last exit, where termAt is nil).
	{id: "INV-C1", level: Hard, ex: exDefault, fn: checkC1, needs: fMainExitAlone,
		rule: "Never/OnFailure: once the last main finished, every running sidecar is signalled and the pod reaches a terminal phase"},
	{id: "INV-C2", level: Hard, ex: exDefault | ExGC, fn: checkC2,
		rule: "terminal phase is Succeeded iff every main container exited 0; sidecar exit codes never matter"},
	{id: "INV-P1", level: Hard, ex: exDefault | ExGC, fn: checkP1,
		rule: "phase is Pending while initialization is incomplete, and never returns to Pending in the same sandbox once a main container ran"},
	{id: "INV-P2", level: Hard, ex: exDefault | ExGC, fn: checkP2,
		rule: "Initialized=True needs every regular init exited 0 and every sidecar started; it stays True once a main started"},
	{id: "INV-P3", level: Hard, ex: exDefault, fn: checkP3,
		rule: "ContainersReady/Ready=True needs every sidecar and every main container ready"},
}

func terminal(phase string) bool { return phase == "Succeeded" || phase == "Failed" }

func checkC1(p *Pod, hits []Hit) []Hit {
	done := p.completion()
	if done == none {
		return hits
	}
	// The kill's budget counts from the kill after the completion, or from
	// a kill the kubelet began again after a restart (a retried deletion,
	// INV-F6, or a forgotten completion kill decided anew): the new kill
	// runs the hooks again within its own budget.
	start, grace := p.T(done), p.Spec.Grace
	var prev *Term
	for t := range p.Terms {
		w := &p.Terms[t]
		switch {
		case w.Idx <= done:
		case prev == nil:
			grace, prev = w.Grace, w
		case p.kubeletRestartedBetween(prev.Idx, w.Idx):
			start, grace, prev = w.T, w.Grace, w
		}
	}
	// One Slack for the kill to begin (INV-R6 allows it), one for the
	// terminal phase to be published: the pod worker waits for the next
	// PLEG relist before getPhase can say so (pod_workers.go, "adds ~1s
	// of latency").
	dl := start + grace + 2e9 + p.Tol + 2*p.Slack()
	if p.Horizon <= dl {
		return hits // the history stops before anything is overdue
	}
	for _, s := range p.Sidecars {
		a := p.attAt(s, done)
		if a == nil || a.Stop == none && a.Exited != none && p.T(a.Exited) <= dl {
			continue // not running, or it exited on its own in time: nothing to signal
		}
		if a.Stop == none || p.T(a.Stop) > dl {
			h := p.late(done, a.Stop, dl, "sidecar %q not signalled after the last main container finished", p.Ctrs[s].Name)
			if a.Stop == none {
				h.Kind = Order // never signalled: the sidecar kept the pod alive
			}
			hits = append(hits, h)
		}
	}
	for _, i := range p.Phases {
		if i > done && terminal(p.Ev[i].Phase) {
			if p.T(i) > dl {
				hits = append(hits, p.late(done, i, dl, "terminal phase %s published %s after the last main finished", p.Ev[i].Phase, ms(p.T(i)-p.T(done))))
			}
			return hits
		}
	}
	h := p.late(done, none, dl, "no terminal phase after the last main container finished")
	h.Kind = Order
	return append(hits, h)
}

// mainsSucceeded reports whether, at event index i, every main container
// has run and its latest attempt exited 0.
func (p *Pod) mainsSucceeded(i int32) bool {
	for _, m := range p.Mains {
		last := p.latestBefore(m, i)
		if last == nil || last.Exited == none || last.Exited > i || last.Code != 0 {
			return false
		}
		if p.removedByReset(m, last, i) {
			// Removed by a reset, not yet re-run: convertToAPIContainerStatuses
			// publishes a container missing while the pod restarts as
			// Waiting, last terminated 137 (RestartingAllContainers),
			// whatever its own exit was, so getPhase counts it stopped, not
			// succeeded. (Killed by a deletion, its own exit code stands.)
			return false
		}
	}
	return true
}

// removedByReset reports whether main m's attempt a, which exited, had its
// record removed by a RestartAllContainers reset before event index to:
// the reset will run it again (its record is gone:
// ShouldContainerBeRestarted), whatever it exited with.
func (p *Pod) removedByReset(m int, a *Attempt, to int32) bool {
	r := p.eventOf(m, history.ContainerRemoved, a.Exited, to)
	return r != none && (a.KillReason == "RestartAllContainers" || p.resetActiveAt(r))
}

// resetActiveAt reports whether a RestartAllContainers reset is in progress
// at event index r: AllContainersRestarting=True published at or before it
// (by the clock, within Slack: the condition comes through the API watch,
// the removal from the runtime) and not yet False.
func (p *Pod) resetActiveAt(r int32) bool {
	active := false
	for _, j := range p.Conds {
		e := &p.Ev[j]
		if e.Cond != "AllContainersRestarting" {
			continue
		}
		if j > r && !(e.Value && p.T(j) <= p.T(r)+p.Slack()) {
			break
		}
		active = e.Value
	}
	return active
}

// phaseHit checks terminal phase event i against the main containers.
func (p *Pod) phaseHit(hits []Hit, i int32) []Hit {
	e := &p.Ev[i]
	ok := p.mainsSucceeded(i)
	switch {
	case e.Phase == "Succeeded" && !ok:
		hits = append(hits, p.at(i, none, "phase Succeeded although a main container did not exit 0"))
	case e.Phase == "Failed" && ok && e.Reason != "Terminated":
		h := p.at(i, none, "phase Failed although every main container exited 0")
		if x := p.waitingUnterminated(i); x != "" {
			// getPhase gave Pending, which TerminatePod
			// (status_manager.go) makes Failed at the kill's end.
			h.Excuse = x + " at the end of the kill"
		}
		hits = append(hits, h)
	}
	return hits
}

func checkC2(p *Pod, hits []Hit) []Hit {
	for _, i := range p.Phases {
		if terminal(p.Ev[i].Phase) {
			return p.phaseHit(hits, i) // the first terminal phase is the one that counts
		}
	}
	return hits
}

// Status checks (P1–P3) compare a published pod status with container
// statuses as snapshots: a backend publishes one status update as several
// events with the same timestamp, in any order, so "before" means "at or
// before the same instant" here, not "earlier in the file".

// mainRanIn reports whether a main container's process ran in sandbox sb
// by the time of event i.
func (p *Pod) mainRanIn(sb, i int32) bool {
	for _, m := range p.Mains {
		if a := p.firstIn(m, sb); a != nil && a.Running != none && p.T(a.Running) <= p.T(i) {
			return true
		}
	}
	return false
}

func checkP1(p *Pod, hits []Hit) []Hit {
	for _, i := range p.Phases {
		sb := p.sandboxAt(i)
		if p.Sandboxes[sb].Reset {
			// During and after a RestartAllContainers reset the kubelet's
			// phase may move between Pending and Running; only "not
			// terminal because of the reset" is asserted (INV-RA11).
			continue
		}
		ran := p.mainRanIn(sb, i)
		switch ph := p.Ev[i].Phase; {
		case ph == "Running" && !ran && !p.initDone(sb, i) && p.termAt(i) == nil && !p.mainsRanBefore(sb, i):
			// (During a kill the phase follows the exiting containers.)
			hits = append(hits, p.at(i, none, "phase Running while initialization was incomplete"))
		case ph == "Pending" && ran && (p.Sandboxes[sb].End == none || p.Sandboxes[sb].End > i):
			h := p.at(i, p.firstMainStart(sb), "phase returned to Pending after a main container ran")
			h.Excuse = p.waitingUnterminated(i)
			hits = append(hits, h)
		}
	}
	return hits
}

// waitingUnterminated names a main or sidecar whose API status at event i
// is Waiting with no last termination (shownWaitingAt): getPhase counts it
// "waiting", so the phase is Pending whatever else ran. "" if none.
func (p *Pod) waitingUnterminated(i int32) string {
	for _, cs := range [2][]int{p.Mains, p.Sidecars} {
		for _, c := range cs {
			if p.shownWaitingAt(c, i) {
				return fmt.Sprintf("%s %q shows no termination (its newest record never ran, nor did the one before it, or that one is gone)", what(p.Ctrs[c].Role), p.Ctrs[c].Name)
			}
		}
	}
	return ""
}

// shownWaitingAt reports whether container c's API status at event i
// is Waiting with no last termination, which getPhase counts "waiting"
// (Pending; for a sidecar a pending restartable init as well) although
// the container ran. convertToAPIContainerStatuses
// (kubelet_pods.go) takes the state from c's newest runtime record and
// the last termination from the one before it: when the newest was
// created but never ran (a start cut by a runtime restart) and the one
// before never ran either, or there is none (container GC removed it),
// neither shows a termination (the sweep's hook-kill-refused shape: two
// starts cut in a row).
func (p *Pod) shownWaitingAt(c int, i int32) bool {
	var recs [2]*Attempt
	n := 0
	att := p.Ctrs[c].Att
	for k := len(att) - 1; k >= 0 && n < 2; k-- {
		a := &att[k]
		if a.Req == none || a.Req >= i || p.recordRemovedBefore(c, a, i) {
			continue
		}
		recs[n] = a
		n++
	}
	ranBy := func(a *Attempt) bool {
		return a.Running != none && a.Running < i || a.Exited != none && a.Exited < i
	}
	return n > 0 && !ranBy(recs[0]) && (n == 1 || !ranBy(recs[1]))
}

// recordRemovedBefore reports whether the runtime record of container c's
// attempt a was removed before event i.
func (p *Pod) recordRemovedBefore(c int, a *Attempt, i int32) bool {
	n := p.Ev[a.Req].Attempt
	for _, j := range p.Ctrs[c].Ev {
		if j > a.Req && j < i && p.Ev[j].Kind == history.ContainerRemoved && p.Ev[j].Attempt == n {
			return true
		}
	}
	return false
}

// mainsRanBefore reports whether every main container ran in a sandbox
// before sb (by the time of event i). During re-initialization after a
// lost sandbox the kubelet's getPhase sees those mains as stopped (their
// terminated statuses carry over, kubelet_pods.go
// convertToAPIContainerStatuses), so it publishes Running whenever no
// regular init runs and no sidecar runs unstarted: Running there is the
// kubelet's (issue 16 A7), not a break of INV-P1. A main that never ran is
// "waiting" and keeps the pod Pending.
func (p *Pod) mainsRanBefore(sb, i int32) bool {
	if sb == 0 {
		return false
	}
	for _, m := range p.Mains {
		ran := false
		for k := range p.Ctrs[m].Att {
			a := &p.Ctrs[m].Att[k]
			if a.Sandbox < sb && a.Running != none && a.Running < i {
				ran = true
				break
			}
		}
		if !ran {
			return false
		}
	}
	return true
}

// initDone reports whether, by the time of event i, every init container
// of sandbox sb is done (regular: exited 0; sidecar: started).
func (p *Pod) initDone(sb, i int32) bool {
	for c := range p.NInit {
		if d := p.doneIn(c, sb); d == none || p.T(d) > p.T(i) {
			return false
		}
	}
	return true
}

func checkP2(p *Pod, hits []Hit) []Hit {
	for _, i := range p.Conds {
		e := &p.Ev[i]
		if e.Cond != "Initialized" {
			continue
		}
		sb := p.sandboxAt(i)
		ran := p.mainRanIn(sb, i)
		if e.Value && !ran {
			for c := range p.NInit {
				if d := p.doneIn(c, sb); d == none || p.T(d) > p.T(i) {
					hits = append(hits, p.at(i, d, "Initialized=True before %s %q was done", what(p.Ctrs[c].Role), p.Ctrs[c].Name))
					break
				}
			}
		}
		if !e.Value && ran && (p.Sandboxes[sb].End == none || p.Sandboxes[sb].End > i) && !p.mainsWaitingAt(i) {
			hits = append(hits, p.at(i, p.firstMainStart(sb), "Initialized flapped to False after a main container started"))
		}
	}
	return hits
}

// mainsWaitingAt reports whether, at event i, every main is Waiting: its
// latest attempt was created but never ran (a restart whose start was
// cut, its record left Created), or it never started at all (its image
// never pulled). GeneratePodInitializedCondition (status/generate.go) then
// falls back to the init containers: HasAnyRegularContainerStarted needs
// a Running or Terminated main, so an unstarted sidecar makes Initialized
// False.
func (p *Pod) mainsWaitingAt(i int32) bool {
	for _, m := range p.Mains {
		last := p.latestBefore(m, i)
		if last == nil {
			continue // never started: Waiting
		}
		if last.Req == none || (last.Running != none && last.Running < i) || (last.Exited != none && last.Exited < i) {
			return false
		}
	}
	return len(p.Mains) > 0
}

func checkP3(p *Pod, hits []Hit) []Hit {
	for _, i := range p.Conds {
		e := &p.Ev[i]
		if !e.Value || e.Cond != "ContainersReady" && e.Cond != "Ready" {
			continue
		}
		_, end := p.publication(i)
		for c := range p.Ctrs {
			if p.Ctrs[c].Role == RoleInit {
				continue
			}
			if r, ok := p.readyAt(c, i, end); !ok {
				hits = append(hits, p.at(i, r, "%s=True while %s %q was not ready", e.Cond, what(p.Ctrs[c].Role), p.Ctrs[c].Name))
				break
			}
		}
	}
	return hits
}

// readyAt reports whether container c was ready when status event i was
// published: its last ready event in the history up to end, the end of
// i's publication, says true and it has not exited since.
//
// A publication is one status update: a backend writes it as several
// status events with one timestamp, in any order, so the container flags
// of i's publication count even if they follow i in the file. What
// follows the publication at the same instant (the container exiting, the
// next status update) happened after it: a container that becomes ready
// and dies within the same nanosecond is a flap, not a false
// ContainersReady (issue 16 B; at a 1µs crashMTBF the sim draws a process
// that runs 0 ns: Running, published Ready, then exits, at one instant).
//
// On a real backend (Tol > 0) the kubelet publishes what it has observed,
// and it observes an exit up to a PLEG relist later than the runtime (or
// a witness) timed it: an exit within Tol before the publication does not
// make it false (observed in make e2e: a sidecar OOM-killed 15 ms before a
// ContainersReady=True on kubelet v1.37.2).
//
// It binary-searches the container's events: a pod with many restarts or
// outages has many Ready conditions, and a scan from the start for each
// made the check quadratic.
func (p *Pod) readyAt(c int, i, end int32) (int32, bool) {
	evs := p.Ctrs[c].Ev
	ti := p.T(i)
	hi := firstAfter(evs, end)
	for k := hi - 1; k >= 0; k-- {
		switch j := evs[k]; p.Ev[j].Kind {
		case history.ContainerReady:
			return j, p.Ev[j].Value
		case history.ContainerExited:
			if p.Tol > 0 && j < i && ti-p.T(j) <= p.Tol {
				continue // not yet observable by the kubelet
			}
			if j < i && p.runtimeDownSince(j, i) {
				continue // the kubelet's relist has failed since
			}
			return j, false
		}
	}
	return none, false
}

// firstAfter is the position of the first index in evs (ascending) above
// i: slices.BinarySearch, without the call.
func firstAfter(evs []int32, i int32) int {
	lo, hi := 0, len(evs)
	for lo < hi {
		if m := int(uint(lo+hi) >> 1); evs[m] <= i {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// publication returns the index range [lo, hi] of the status update that
// status event i belongs to: the run of status events (phase, conditions,
// container Started/Ready) around i with i's timestamp.
func (p *Pod) publication(i int32) (lo, hi int32) {
	t := p.T(i)
	lo, hi = i, i
	for lo > 0 && p.T(lo-1) == t && isStatus(p.Ev[lo-1].Kind) {
		lo--
	}
	for hi+1 < p.n() && p.T(hi+1) == t && isStatus(p.Ev[hi+1].Kind) {
		hi++
	}
	return lo, hi
}

// isStatus reports whether events of kind k are part of a published pod
// status.
func isStatus(k history.Kind) bool {
	switch k {
	case history.PodPhase, history.PodCondition, history.ContainerStarted, history.ContainerReady:
		return true
	}
	return false
}
