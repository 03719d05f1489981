package sim

import (
	"fmt"

	"github.com/sidebench/sidebench/harness/faults"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/reference-impl/api"
)

func (e *engine) podErr(p *pod, what string, err error) error {
	return fmt.Errorf("sim: t=%d pod %s: %s: %w", e.now, p.name, what, err)
}

func (e *engine) onPodEvent(p *pod, ev *event) {
	c := int(ev.c)
	switch ev.kind {
	case evBind:
		e.onBind(p)
	case evWake:
		if ev.gen == p.wgen && p.hasM {
			e.step(p, &api.Input{Kind: api.InTick})
		}
	case evSandbox:
		if ev.gen == p.sbGen {
			e.onSandboxReady(p)
		}
	case evRunning:
		if ev.gen == p.cs[c].gen {
			e.onRunning(p, c)
		}
	case evExit:
		if ev.gen == p.cs[c].gen {
			cs := &p.cs[c]
			reason := cs.exitReason
			e.exitContainer(p, c, cs.plan.exitCode, reason)
			e.wireExit(p, c, reason)
		}
	case evTermExit:
		if ev.gen == p.cs[c].gen {
			code := p.cs[c].plan.termExitCode
			r := api.ReasonCompleted
			if code != 0 {
				r = api.ReasonError
			}
			e.exitContainer(p, c, code, r)
			e.wireExit(p, c, r)
		}
	case evKill:
		// A stop's SIGKILL timer fires only while it stands (a runtime
		// restart loses it: killAt is then Never).
		if cs := &p.cs[c]; ev.gen == cs.gen && (!cs.stopping || e.now >= cs.killAt) {
			e.onKill(p, c)
		}
	case evPostStart:
		if ev.gen == p.cs[c].hgen && p.cs[c].postStartOn {
			e.onPostStartDone(p, c)
		}
	case evPreStop:
		if ev.gen == p.cs[c].hgen && p.cs[c].preStopOn {
			e.onPreStopDone(p, c)
		}
	case evProbe:
		if ev.gen == p.cs[c].pgen {
			e.onProbe(p, c, api.ProbeKind(ev.aux))
		}
	case evActionFailed:
		if ev.gen == p.mgen && p.hasM && e.firstReport(p, ev) {
			if k := api.ActionKind(ev.aux); k == api.ActStartContainer && p.cs[c].rec.State == api.StateCreated {
				// A start cut by a runtime restart left its record
				// Created: the kubelet's relist sees it (a Waiting status
				// whose last termination is the attempt before).
				e.step(p, &api.Input{Kind: api.InContainer, Container: c, Record: p.cs[c].rec})
			}
			e.step(p, &api.Input{Kind: api.InActionFailed, Action: api.ActionKind(ev.aux), Container: c})
		}
	case evLifetime:
		e.deletePod(p, e.wls[p.wl].grace)
	case evDeliverDelete:
		e.onDeliverDelete(p)
	case evAPIDelete:
		e.deletePod(p, e.wls[p.wl].grace)
	case evRemove:
		e.removePod(p, false)
	case evFaultPod:
		e.fireOnPod(int(ev.aux), p)
	case evRemoved:
		if ev.gen == p.cs[c].gen && p.cs[c].rec.State == api.StateNone {
			e.step(p, &api.Input{Kind: api.InContainer, Container: c})
		}
	case evResized:
		if ev.gen == p.cs[c].gen && p.cs[c].rec.State == api.StateRunning {
			e.step(p, &api.Input{Kind: api.InContainer, Container: c, Record: p.cs[c].rec})
		}
	case evProbeFaultEnd:
		e.onProbeFaultEnd(p, c, ev)
	case evServing, evWirePoll, evQuit:
		e.onWire(p, ev)
	case evPullFailed:
		if ev.gen == p.mgen && p.hasM {
			e.step(p, &api.Input{Kind: api.InActionFailed, Action: api.ActStartContainer, Container: c, PullFailed: true})
		}
	case evPullFaultEnd:
		e.onPullFaultEnd(p, c, ev)
	case evExitSeen:
		if ev.gen == p.cs[c].gen {
			e.tellRecord(p, c)
		}
	}
}

func reasonOf(s string) api.Reason {
	switch s {
	case "Completed":
		return api.ReasonCompleted
	case "OOMKilled":
		return api.ReasonOOMKilled
	case "":
		return api.ReasonNone
	}
	return api.ReasonError
}

// step feeds one input to p's machine and executes what it decides.
func (e *engine) step(p *pod, in *api.Input) {
	if !p.hasM || e.err != nil {
		return
	}
	if err := p.m.Step(api.Time(e.now), *in); err != nil {
		e.err = e.podErr(p, "step "+in.Kind.String(), err)
		return
	}
	e.drive(p)
}

// drive runs the host side of the machine contract: for each Ready batch,
// record the trace, execute the actions in order, arm the wake timer, then
// Advance. Results of actions come back later as events, never by stepping
// the machine from inside this loop.
func (e *engine) drive(p *pod) {
	m := &p.m
	for m.HasReady() {
		rd := m.Ready()
		for i := range rd.Trace {
			e.trace(p, &rd.Trace[i], &rd.Status)
		}
		for i := range rd.Actions {
			e.act(p, &rd.Actions[i])
		}
		p.status = rd.Status
		// A newer WakeAt supersedes older ones: bump the generation so the
		// earlier timer event is dropped when it pops.
		if w := int64(rd.WakeAt); w != p.wakeAt {
			p.wakeAt = w
			p.wgen++
			if rd.WakeAt != api.Never {
				e.push(event{t: w, evWho: evWho{slot: p.slot, id: p.id}, evWhat: evWhat{kind: evWake, gen: p.wgen}})
			}
		}
		m.Advance(rd)
		if e.err != nil {
			return
		}
	}
	e.afterDrive(p)
}

// trace writes one machine transition to the history and lets the
// control plane and the fault scheduler react to it.
func (e *engine) trace(p *pod, t *api.TraceEvent, st *api.PodStatus) {
	e.podEvent(0, p)
	switch t.Kind {
	case api.TracePhase:
		e.ev.Kind = history.PodPhase
		e.ev.Phase = t.Phase.String()
		if t.Phase.Terminal() {
			e.ev.Reason = st.Reason()
		}
	case api.TraceCondition:
		e.ev.Kind = history.PodCondition
		e.ev.Cond = t.Cond.String()
		e.ev.Value = t.Value
	case api.TraceStarted, api.TraceReady:
		e.ev.Kind = history.ContainerStarted
		if t.Kind == api.TraceReady {
			e.ev.Kind = history.ContainerReady
		}
		e.ev.Container = p.spec.At(t.Container).Name
		e.ev.Attempt = p.cs[t.Container].rec.Attempt
		e.ev.Value = t.Value
	case api.TraceTerminating:
		p.termReason = t.Reason
		e.ev.Kind = history.PodTerminating
		e.ev.Reason = t.Reason.String()
		e.ev.Grace = int64(t.Grace)
		e.ev.Value = t.Value
	case api.TraceBackoff:
		e.ev.Kind = history.ContainerBackoff
		e.ev.Container = p.spec.At(t.Container).Name
		e.ev.Attempt = p.cs[t.Container].rec.Attempt
		e.ev.Grace = int64(t.At) - e.now
	default:
		return
	}
	e.write()
	switch t.Kind {
	case api.TracePhase:
		if t.Phase == api.PhaseRunning && !p.ran {
			p.ran = true
			e.onPhase(p, faults.PhaseRunning)
		}
		if t.Phase.Terminal() && !p.terminal {
			p.terminal = true
			if !p.deleted {
				// Job completion (or a pod failed by node shutdown): the
				// control plane deletes terminal pods once it sees them.
				e.push(event{t: e.now + int64(e.cfg.Cluster.APIDelay), evWho: evWho{slot: p.slot, id: p.id}, evWhat: evWhat{kind: evAPIDelete}})
			}
		}
	case api.TraceTerminating:
		if !p.terminating {
			p.terminating = true
			e.onPhase(p, faults.PhaseTerminating)
		}
	}
}

// emitC prepares a container event of p.
func (e *engine) emitC(k history.Kind, p *pod, c int) {
	e.podEvent(k, p)
	e.ev.Container, e.ev.Attempt = p.spec.At(c).Name, p.cs[c].rec.Attempt
	if len(e.wls[p.wl].onContainer) > 0 {
		e.evPod, e.evC = p, c
	}
}

func (e *engine) emitP(k history.Kind, p *pod) { e.podEvent(k, p) }

// podEvent starts e.ev afresh as a k event of p. It clears e.ev in place
// and sets the fields one by one: a composite literal assigned to e.ev
// is built on the stack and then copied over (304 bytes zeroed, then 304
// copied with write barriers), which was 8-10% of the sim's CPU at 48
// events per lifecycle.
func (e *engine) podEvent(k history.Kind, p *pod) {
	ev := &e.ev
	*ev = history.Event{}
	ev.T, ev.Kind, ev.Pod, ev.Node, ev.Slot = e.now, k, p.name, p.nodeName, p.slot+1
}
