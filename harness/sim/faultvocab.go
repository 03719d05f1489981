package sim

import (
	"strconv"
	"time"

	"github.com/sidebench/sidebench/harness/behavior"
	"github.com/sidebench/sidebench/harness/faults"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/reference-impl/api"
)

// The faults of issue 16 D: image pull failure, external container kill,
// a container state reported Unknown, in-place resize, and the
// on-container schedule (a fault at an exact time after a container
// event). docs/faults.md gives their semantics and the kubelet source
// each follows.

// --- image pull failure ---------------------------------------------------

// applyPullFailure makes the pulls of container c's image fail from now for
// the fault's window (for good with no window). It takes effect at the
// container's next start; a container that does not start in the window
// is left alone (fault.not-applied).
func (e *engine) applyPullFailure(fi int, id uint32, p *pod, c int) {
	s := e.faults[fi].spec
	fx := e.podFaults(p, c)
	if fx.pullFault != 0 {
		e.endPullFault(p, c, "superseded by a later image pull failure")
	}
	e.faultBegin(fi, id, -1, p, c)
	fx.pullFault, fx.pullIdx, fx.pullApplied = id+1, uint16(fi), false
	fx.pullUntil = int64(api.Never)
	if s.Window > 0 {
		fx.pullUntil = e.now + int64(s.Window)
		e.push(event{t: fx.pullUntil, evWho: evWho{slot: p.slot, id: p.id}, evWhat: evWhat{kind: evPullFaultEnd, gen: id, c: uint8(c), aux: uint16(fi)}})
	}
}

// pullFails reports whether a pull of container c's image fails now.
func (e *engine) pullFails(p *pod, c int) bool {
	return p.fx != nil && p.fx[c].pullFault != 0 && e.now < p.fx[c].pullUntil
}

// failPull is the failed start of container c: EnsureImageExists fails
// with ErrImagePull before anything is created (kuberuntime_container.go
// startContainer step 1), and the kubelet hears of it within the same
// sync, growing the image back-off (images/image_manager.go).
func (e *engine) failPull(p *pod, c int, attempt uint32) {
	fx := &p.fx[c]
	e.emitC(history.ContainerStartFailed, p, c)
	e.ev.Attempt = attempt
	e.ev.Msg = "ErrImagePull: " + p.spec.At(c).Image
	e.write()
	if !fx.pullApplied {
		fx.pullApplied = true
		e.faultEffect(int(fx.pullIdx), fx.pullFault-1, p, c, "pull of "+p.spec.At(c).Image+" failed: ErrImagePull, then image pull back-off")
	}
	e.push(event{t: e.now, evWho: evWho{slot: p.slot, id: p.id}, evWhat: evWhat{kind: evPullFailed, gen: p.mgen, c: uint8(c)}})
}

func (e *engine) onPullFaultEnd(p *pod, c int, ev *event) {
	if p.fx == nil || p.fx[c].pullFault != ev.gen+1 {
		return // superseded
	}
	e.endPullFault(p, c, "")
}

// endPullFault closes container c's image pull failure.
func (e *engine) endPullFault(p *pod, c int, why string) {
	fx := &p.fx[c]
	fi, id := int(fx.pullIdx), fx.pullFault-1
	if !fx.pullApplied {
		msg := "no start of the container while its pulls failed"
		if why != "" {
			msg += " (" + why + ")"
		}
		e.notApplied(fi, id, -1, p, c, msg)
	}
	e.faultEnd(fi, id, p, c)
	fx.pullFault, fx.pullApplied = 0, false
}

// --- external container kill ----------------------------------------------

// applyContainerKill kills container c from outside the kubelet: a signal
// other than SIGTERM (or an exit code) ends the process at once with
// 128+signal (or that code), no preStop hook; SIGTERM lets the process
// handle it as it handles any SIGTERM (its termHandling and termExitCode),
// and a later kubelet StopContainer only shortens that to its grace. The
// kubelet sees an ordinary exit and applies the restart policy.
func (e *engine) applyContainerKill(fi int, id uint32, p *pod, c int) {
	cs := &p.cs[c]
	if cs.rec.State != api.StateRunning || cs.starting {
		e.notApplied(fi, id, -1, p, c, "container not running")
		return
	}
	s := e.faults[fi].spec
	code, now := s.KillExit()
	if !now && cs.stopping {
		e.notApplied(fi, id, -1, p, c, "container already handling a SIGTERM")
		return
	}
	if !now && cs.plan.termHandling == behavior.Never {
		e.notApplied(fi, id, -1, p, c, "the process ignores SIGTERM")
		return
	}
	e.faultBegin(fi, id, -1, p, c)
	attempt := strconv.Itoa(int(cs.rec.Attempt))
	if now {
		reason := api.ReasonCompleted
		if code != 0 {
			reason = api.ReasonError
		}
		e.exitContainer(p, c, code, reason)
		if p.id != 0 {
			e.faultEffect(fi, id, p, c, "container exited "+strconv.Itoa(int(code))+" "+reason.String()+" (signal "+strconv.Itoa(s.KillSignal())+", attempt "+attempt+")")
			e.faultEnd(fi, id, p, c)
		}
		return
	}
	cs.stopping, cs.killAt = true, int64(api.Never)
	e.push(event{t: e.now + int64(cs.plan.termHandling), evWho: evWho{slot: p.slot, id: p.id}, evWhat: evWhat{kind: evTermExit, gen: cs.gen, c: uint8(c)}})
	e.faultEffect(fi, id, p, c, "SIGTERM delivered (attempt "+attempt+"); the process exits "+strconv.Itoa(int(cs.plan.termExitCode))+" after "+time.Duration(cs.plan.termHandling).String())
	e.faultEnd(fi, id, p, c)
}

// --- container state Unknown ----------------------------------------------

// applyUnknown makes the runtime report running container c as Unknown
// (CRI CONTAINER_UNKNOWN: the runtime lost track of the process, which
// may still run). The kubelet kills it and starts it again
// (computePodActions / computeInitContainerActions: "try killing it
// before restart"; ShouldContainerBeRestarted restarts an Unknown
// container whatever the policy) — INV-F8.
func (e *engine) applyUnknown(fi int, id uint32, p *pod, c int) {
	cs := &p.cs[c]
	if cs.rec.State != api.StateRunning || cs.starting {
		e.notApplied(fi, id, -1, p, c, "container not running")
		return
	}
	e.faultBegin(fi, id, -1, p, c)
	cs.rec.State = api.StateUnknown
	cs.pgen++ // the prober probes running containers only
	e.emitC(history.ContainerUnknown, p, c)
	e.write()
	e.faultEffect(fi, id, p, c, "the runtime reports the container Unknown (attempt "+strconv.Itoa(int(cs.rec.Attempt))+")")
	e.faultEnd(fi, id, p, c)
	e.tellRecord(p, c)
}

// --- in-place resize -------------------------------------------------------

// applyResize changes container c's spec resources through the API (an
// in-place resize request): the kubelet resizes it in place or restarts
// it per its resizePolicy (INV-U2). The API server takes the resize of a
// pod that is not terminal; a kubelet that is down hears of it when it
// comes back.
func (e *engine) applyResize(fi int, id uint32, p *pod, c int) {
	s := e.faults[fi].spec
	cur := p.spec.At(c).Resources
	next := s.Resources.Apply(cur)
	switch {
	case p.terminal || p.kdone:
		e.notApplied(fi, id, -1, p, c, "pod finished: the API server refuses a resize")
		return
	case !p.hasM:
		e.notApplied(fi, id, -1, p, c, "kubelet down or pod finished on its node")
		return
	case next == cur:
		e.notApplied(fi, id, -1, p, c, "resources unchanged")
		return
	}
	e.faultBegin(fi, id, -1, p, c)
	e.resizeContainer(p, c, next)
	e.faultEffect(fi, id, p, c, "spec resources of the container changed (container.resize); the kubelet resizes or restarts it per its resizePolicy")
	e.faultEnd(fi, id, p, c)
}

// --- on-container schedule ------------------------------------------------

// onContainerEvent lets on-container faults react to the container event
// just written for container c of p: each matching fault fires its delay
// later on that pod.
func (e *engine) onContainerEvent(p *pod, c int) {
	ce := faults.EventOfKind(e.ev.Kind.String(), e.ev.Value)
	if ce == faults.EventNone || p.id == 0 {
		return
	}
	name := p.spec.At(c).Name
	for _, fi := range e.wls[p.wl].onContainer {
		f := &e.faults[fi]
		if f.spec.When.TriggersOn(name, ce, time.Duration(e.now), f.fired, f.sched) {
			f.fired++
			e.push(event{t: e.now + int64(f.spec.When.Delay), evWho: evWho{slot: p.slot, id: p.id}, evWhat: evWhat{kind: evFaultPod, aux: uint16(fi)}})
		}
	}
}
