package check

import (
	"sort"

	"github.com/sidebench/sidebench/harness/history"
)

// Completion, phase and conditions, SEMANTICS.md §2.3–2.4.
// §5: garbage-collected container records are a known way to lose phase
// and condition status (#108537), so GC excuses these.
var phaseInvs = []*inv{
	{id: "INV-C1", level: Hard, ex: exDefault, fn: checkC1,
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
	grace := p.Spec.Grace
	if w := p.termAfter(done); w != nil {
		grace = w.Grace
	}
	dl := p.T(done) + grace + 2e9 + p.Tol + p.Slack()
	if p.Horizon <= dl {
		return hits // the history stops before anything is overdue
	}
	for _, s := range p.Sidecars {
		if a := p.attAt(s, done); a != nil && (a.Stop == none || p.T(a.Stop) > dl) {
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
		var last *Attempt
		for k := range p.Ctrs[m].Att {
			if a := &p.Ctrs[m].Att[k]; a.Start() != none && a.Start() < i {
				last = a
			}
		}
		if last == nil || last.Exited == none || last.Exited > i || last.Code != 0 {
			return false
		}
		if last.KillReason == "RestartAllContainers" && p.eventOf(m, history.ContainerRemoved, last.Exited, i) != none {
			// Killed and removed by a reset, not yet re-run: its status is a
			// reset termination (RestartingAllContainers), not a success.
			// (Deleted before the removal, its own exit code stands.)
			return false
		}
	}
	return true
}

// phaseHit checks terminal phase event i against the main containers.
func (p *Pod) phaseHit(hits []Hit, i int32) []Hit {
	e := &p.Ev[i]
	ok := p.mainsSucceeded(i)
	switch {
	case e.Phase == "Succeeded" && !ok:
		hits = append(hits, p.at(i, none, "phase Succeeded although a main container did not exit 0"))
	case e.Phase == "Failed" && ok && e.Reason != "Terminated":
		hits = append(hits, p.at(i, none, "phase Failed although every main container exited 0"))
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
		case ph == "Running" && !ran && !p.initDone(sb, i) && p.termAt(i) == nil:
			// (During a kill the phase follows the exiting containers.)
			hits = append(hits, p.at(i, none, "phase Running while initialization was incomplete"))
		case ph == "Pending" && ran && (p.Sandboxes[sb].End == none || p.Sandboxes[sb].End > i):
			hits = append(hits, p.at(i, p.firstMainStart(sb), "phase returned to Pending after a main container ran"))
		}
	}
	return hits
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
		if !e.Value && ran && (p.Sandboxes[sb].End == none || p.Sandboxes[sb].End > i) {
			hits = append(hits, p.at(i, p.firstMainStart(sb), "Initialized flapped to False after a main container started"))
		}
	}
	return hits
}

func checkP3(p *Pod, hits []Hit) []Hit {
	for _, i := range p.Conds {
		e := &p.Ev[i]
		if !e.Value || e.Cond != "ContainersReady" && e.Cond != "Ready" {
			continue
		}
		for c := range p.Ctrs {
			if p.Ctrs[c].Role == RoleInit {
				continue
			}
			if r, ok := p.readyAt(c, i); !ok {
				hits = append(hits, p.at(i, r, "%s=True while %s %q was not ready", e.Cond, what(p.Ctrs[c].Role), p.Ctrs[c].Name))
				break
			}
		}
	}
	return hits
}

// readyAt reports whether container c was ready at event i: its last
// ready event up to i's instant says true and it has not exited since.
//
// Events of i's instant count whatever their order (a status update is
// several events in any order), except an exit after i in the file: the
// history orders an instant's events causally, so that exit, and what
// follows it, happened after the status i was published. (A process that
// crashes in the nanosecond it started, as the sim draws at a 1µs
// crashMTBF, is Running, published Ready, then exits, all at one instant;
// counting the exit made a false INV-P3 violation.)
//
// It binary-searches the container's events: a pod with many restarts or
// outages has many Ready conditions, and a scan from the start for each
// made the check quadratic.
func (p *Pod) readyAt(c int, i int32) (int32, bool) {
	evs := p.Ctrs[c].Ev
	ti := p.T(i)
	if len(evs) <= 32 { // the usual pod: a scan is cheaper than searching
		last, ready := none, false
		for _, j := range evs {
			tj := p.T(j)
			k := p.Ev[j].Kind
			if tj > ti || tj == ti && j > i && k == history.ContainerExited {
				break
			}
			switch k {
			case history.ContainerReady:
				last, ready = j, p.Ev[j].Value
			case history.ContainerExited:
				last, ready = j, false
			}
		}
		return last, ready
	}
	hi := sort.Search(len(evs), func(k int) bool { return p.T(evs[k]) > ti })
	for k := sort.Search(hi, func(k int) bool { return p.T(evs[k]) >= ti }); k < hi; k++ {
		if evs[k] > i && p.Ev[evs[k]].Kind == history.ContainerExited {
			hi = k
			break
		}
	}
	for k := hi - 1; k >= 0; k-- {
		switch j := evs[k]; p.Ev[j].Kind {
		case history.ContainerReady:
			return j, p.Ev[j].Value
		case history.ContainerExited:
			return j, false
		}
	}
	return none, false
}
