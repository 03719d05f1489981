package sim

import (
	"github.com/sidebench/sidebench/harness/behavior"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/reference-impl/api"
)

// Wiring (behavior.Wiring) is what a workaround policy adds to a pod's
// containers: an entrypoint that waits for the sidecars before it execs
// the application, a postStart that polls readiness (hold), a preStop that
// drains until the mains exited, a quit signal on the application's exit;
// and, on every user sidecar, container.serving. It runs at the runtime
// level, like the processes it wraps: a wrapper keeps polling while the
// kubelet is down; a hook is the kubelet's (it is lost with the kubelet,
// as hooks in flight are).
//
// A wrapped main's application starts at the exec, not at the process
// start: until then its behaviour clock (startup, readiness, liveness, run
// time, memory) has not begun, so its probes fail as the kubelet's would
// against a wrapper that does not answer them yet.

// notStarted stands for the start time of an application the wrapper has
// not exec'd yet: far enough that every behaviour timer measured from it
// lies beyond any horizon.
const notStarted = int64(1) << 61

// Wiring poll kinds (event aux).
const (
	pollWait uint16 = iota
	pollHold
	pollDrain
)

// ctrWire is the wiring state of one container, allocated only for pods
// whose workload wires more than container.serving (cold, like ctrFault).
type ctrWire struct {
	waiting  bool  // the wrapper waits; the application has not been exec'd
	waitFrom int64 // when the wait began
	exitAt   int64 // the drawn exit, from the application's start (Never: none)
	hookFrom int64 // when the hold postStart began
}

// wiring returns container c's wiring, or nil.
func (e *engine) wiring(p *pod, c int) *behavior.Wiring {
	ws := &e.wls[p.wl]
	if j := ws.beh[c]; j >= 0 {
		return ws.cfg.Behavior[j].Wiring
	}
	return nil
}

// wires reports whether the workload of p wires more than serving.
func (e *engine) wires(p *pod) bool {
	ws := &e.wls[p.wl]
	for c := range ws.beh {
		if w := e.wiring(p, c); w != nil && (w.Wait != nil || w.Hold != nil || w.Drain != nil || w.Signal != nil || w.Quit != nil) {
			return true
		}
	}
	return false
}

func (e *engine) wireState(p *pod, c int) *ctrWire {
	if p.wx == nil {
		p.wx = make([]ctrWire, len(p.cs))
	}
	return &p.wx[c]
}

// wireDraw adjusts an attempt's drawn plan for c's wiring before the
// runtime starts it: a wrapped application exits (run time, crash, OOM)
// measured from its exec, so the exit waits for it; a hold or drain hook
// lasts until its condition, not for the drawn duration.
func (e *engine) wireDraw(p *pod, c int, out *plan) {
	w := e.wiring(p, c)
	if w == nil {
		return
	}
	if w.Wait != nil {
		x := e.wireState(p, c)
		x.exitAt = int64(out.exitAfter)
		out.exitAfter = behavior.Never
	}
	if w.Hold != nil {
		out.postStart = behavior.Never
	}
	if w.Drain != nil {
		out.preStop = behavior.Never
	}
}

// wireRunning arms c's wiring once its process runs (before the kubelet
// hears of it).
func (e *engine) wireRunning(p *pod, c int) {
	w := e.wiring(p, c)
	if w == nil {
		return
	}
	cs := &p.cs[c]
	if w.Serving && cs.plan.readyAfter != behavior.Never {
		e.push(event{t: cs.startedAt + int64(cs.plan.readyAfter), evWho: evWho{slot: p.slot, id: p.id}, evWhat: evWhat{kind: evServing, gen: cs.gen, c: uint8(c)}})
	}
	if w.Wait != nil {
		x := e.wireState(p, c)
		x.waiting, x.waitFrom = true, e.now
		cs.startedAt = notStarted
		e.push(event{t: e.now, evWho: evWho{slot: p.slot, id: p.id}, evWhat: evWhat{kind: evWirePoll, gen: cs.gen, c: uint8(c), aux: pollWait}})
	}
	if w.Hold != nil && cs.postStartOn {
		e.wireState(p, c).hookFrom = e.now
		e.push(event{t: e.now, evWho: evWho{slot: p.slot, id: p.id}, evWhat: evWhat{kind: evWirePoll, gen: cs.hgen, c: uint8(c), aux: pollHold}})
	}
	if w.Quit != nil && w.Quit.File && p.quitFile {
		// A sidecar (re)started after the quit file was written finds it
		// on its wrapper's first look.
		e.push(event{t: e.now, evWho: evWho{slot: p.slot, id: p.id}, evWhat: evWhat{kind: evQuit, gen: cs.gen, c: uint8(c)}})
	}
}

// wirePreStop arms a drain preStop that began now.
func (e *engine) wirePreStop(p *pod, c int) {
	w := e.wiring(p, c)
	cs := &p.cs[c]
	if w == nil || w.Drain == nil || !cs.preStopOn || !e.runtimeOK(p) || cs.rec.State != api.StateRunning {
		return
	}
	e.push(event{t: e.now, evWho: evWho{slot: p.slot, id: p.id}, evWhat: evWhat{kind: evWirePoll, gen: cs.hgen, c: uint8(c), aux: pollDrain}})
}

// ready reports whether container j's application answers its readiness
// endpoint now (what a wrapper's poll sees): running, its readiness time
// passed, no fault forcing its readiness probe to fail.
func (e *engine) ready(p *pod, j int) bool {
	cs := &p.cs[j]
	return cs.rec.State == api.StateRunning && !cs.starting && e.outcome(p, j, api.ProbeReadiness)
}

func (e *engine) index(p *pod, name string) int { return p.spec.IndexOf(name) }

func (e *engine) onWire(p *pod, ev *event) {
	c := int(ev.c)
	cs := &p.cs[c]
	w := e.wiring(p, c)
	if w == nil {
		return
	}
	switch ev.kind {
	case evServing:
		if ev.gen == cs.gen && cs.rec.State == api.StateRunning {
			e.emitC(history.ContainerServing, p, c)
			e.ev.Value = true
			e.write()
		}
	case evQuit:
		if ev.gen == cs.gen && cs.rec.State == api.StateRunning {
			e.exitContainer(p, c, 0, api.ReasonCompleted)
		}
	case evWirePoll:
		switch ev.aux {
		case pollWait:
			e.pollWait(p, c, w.Wait, ev.gen)
		case pollHold:
			if ev.gen != cs.hgen || !cs.postStartOn {
				return
			}
			x := e.wireState(p, c)
			switch {
			case e.ready(p, c):
				e.postStartEnd(p, c, true)
			case w.Hold.Timeout > 0 && e.now-x.hookFrom >= int64(w.Hold.Timeout):
				e.postStartEnd(p, c, false) // pilot-agent wait timed out: the hook fails
			default:
				e.push(event{t: e.now + int64(w.Hold.Period), evWho: evWho{slot: p.slot, id: p.id}, evWhat: evWhat{kind: evWirePoll, gen: cs.hgen, c: uint8(c), aux: pollHold}})
			}
		case pollDrain:
			if ev.gen != cs.hgen || !cs.preStopOn {
				return
			}
			for _, name := range w.Drain.Of {
				if j := e.index(p, name); j >= 0 && p.cs[j].rec.State == api.StateRunning {
					e.push(event{t: e.now + int64(w.Drain.Period), evWho: evWho{slot: p.slot, id: p.id}, evWhat: evWhat{kind: evWirePoll, gen: cs.hgen, c: uint8(c), aux: pollDrain}})
					return
				}
			}
			e.onPreStopDone(p, c) // zero connections: the mains are gone
		}
	}
}

// pollWait is one poll of c's wrapper: exec the application once every
// sidecar it waits for is ready; after the timeout, exec anyway or exit 1.
func (e *engine) pollWait(p *pod, c int, w *behavior.Wait, gen uint32) {
	cs := &p.cs[c]
	x := e.wireState(p, c)
	if gen != cs.gen || cs.rec.State != api.StateRunning || !x.waiting {
		return
	}
	all := true
	for _, name := range w.For {
		if j := e.index(p, name); j < 0 || !e.ready(p, j) {
			all = false
			break
		}
	}
	switch {
	case all:
		e.execApp(p, c, true)
	case w.Timeout > 0 && e.now-x.waitFrom >= int64(w.Timeout):
		if w.StartOnTimeout {
			e.execApp(p, c, false)
		} else {
			x.waiting = false
			e.exitContainer(p, c, 1, api.ReasonError)
		}
	default:
		e.push(event{t: e.now + int64(w.Period), evWho: evWho{slot: p.slot, id: p.id}, evWhat: evWhat{kind: evWirePoll, gen: cs.gen, c: uint8(c), aux: pollWait}})
	}
}

// execApp starts c's application: container.app-started, and its
// behaviour clock begins (probes re-armed on their grid, the drawn exit
// armed from now).
func (e *engine) execApp(p *pod, c int, ok bool) {
	cs := &p.cs[c]
	x := e.wireState(p, c)
	x.waiting = false
	cs.startedAt = e.now
	e.emitC(history.ContainerAppStarted, p, c)
	e.ev.Value = ok
	e.write()
	if x.exitAt != int64(behavior.Never) {
		e.push(event{t: e.now + x.exitAt, evWho: evWho{slot: p.slot, id: p.id}, evWhat: evWhat{kind: evExit, gen: cs.gen, c: uint8(c)}})
	}
	if p.hasM {
		e.rearmProbes(p, c)
	}
}

// postStartEnd ends a hold postStart hook (ok false: it failed, and the
// kubelet kills the container, FailedPostStartHook).
func (e *engine) postStartEnd(p *pod, c int, ok bool) {
	p.cs[c].postStartOn = false
	e.emitC(history.ContainerPostStartDone, p, c)
	e.ev.Value = ok
	if !ok {
		e.ev.Msg = "readiness wait timed out"
	}
	e.write()
	e.step(p, &api.Input{Kind: api.InPostStartDone, Container: c, OK: ok})
}

// wireExit runs after c's application exited on its own (its run time, a
// crash, SIGTERM handled; an OOM kill never gets here with a signal): the
// wrapper tells the sidecars to quit.
func (e *engine) wireExit(p *pod, c int, reason api.Reason) {
	w := e.wiring(p, c)
	if w == nil || w.Signal == nil || (p.wx != nil && p.wx[c].waiting) || !behavior.SignalsOnExit(reason.String(), false) {
		return
	}
	if w.Signal.File {
		p.quitFile = true
	}
	for _, name := range w.Signal.To {
		j := e.index(p, name)
		if j < 0 {
			continue
		}
		js := &p.cs[j]
		jw := e.wiring(p, j)
		if js.rec.State != api.StateRunning || js.starting || jw == nil || jw.Quit == nil {
			continue // /quitquitquit to a proxy that is not running is lost
		}
		at := e.now
		if jw.Quit.File && jw.Quit.Period > 0 {
			// The sidecar's wrapper sees the file on its next poll.
			at = js.startedAt + ((e.now-js.startedAt)/int64(jw.Quit.Period)+1)*int64(jw.Quit.Period)
		}
		e.push(event{t: at, evWho: evWho{slot: p.slot, id: p.id}, evWhat: evWhat{kind: evQuit, gen: js.gen, c: uint8(j)}})
	}
}

func specNames(s *api.PodSpec) []string {
	out := make([]string, s.Len())
	for i := range out {
		out[i] = s.At(i).Name
	}
	return out
}
