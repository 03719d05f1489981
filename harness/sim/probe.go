package sim

import (
	"time"

	"github.com/sidebench/sidebench/harness/behavior"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/reference-impl/api"
)

// The prober mirrors the kubelet's: per running container and probe, a
// first probe InitialDelay after the start, then one every Period; startup
// first, readiness and liveness only once startup succeeded (or if there
// is no startup probe); Success/FailureThreshold consecutive results flip
// the result, and only changes are reported (InProbe) and recorded
// (probe.result). A main container's liveness and startup probes stop when
// the pod terminates (SyncTerminatingPod: StopLivenessAndStartup, which
// walks spec.containers only); a sidecar's keep running, inert: a
// terminating pod is killed, never synced (INV-P6).
//
// Probes are cheap in the sim: a probe's outcome is a step function of
// time (startup/readiness fail until the drawn StartupAfter/ReadyAfter,
// liveness passes until LivenessFailAfter) unless a probe-failure fault
// forces failures. So instead of one event per Period the prober jumps to
// the next probe that can change the result; the skipped probes are
// accounted for in the consecutive counters. A fault forcing failures
// re-arms the probe on its period grid.

// startProbes arms c's probes after its process started (or after a
// kubelet restart, with startedAlready from the API server's Started
// flag: a restarted kubelet does not re-run a passed startup probe).
func (e *engine) startProbes(p *pod, c int, startedAlready bool) {
	spec := p.spec.At(c)
	cs := &p.cs[c]
	cs.probe = probes{}
	if spec.StartupProbe != nil && !startedAlready {
		cs.startupOK = false
		e.armProbe(p, c, api.ProbeStartup, cs.startedAt+int64(spec.StartupProbe.InitialDelay))
		return
	}
	cs.startupOK = true
	e.armAfterStartup(p, c)
}

func (e *engine) armAfterStartup(p *pod, c int) {
	spec := p.spec.At(c)
	cs := &p.cs[c]
	if pr := spec.ReadinessProbe; pr != nil {
		e.armProbe(p, c, api.ProbeReadiness, max(e.now, cs.startedAt+int64(pr.InitialDelay)))
	}
	if pr := spec.LivenessProbe; pr != nil {
		e.armProbe(p, c, api.ProbeLiveness, max(e.now, cs.startedAt+int64(pr.InitialDelay)))
	}
}

func (e *engine) armProbe(p *pod, c int, k api.ProbeKind, t int64) {
	e.push(event{t: t, evWho: evWho{slot: p.slot, id: p.id}, evWhat: evWhat{kind: evProbe, gen: p.cs[c].pgen, c: uint8(c), aux: uint16(k)}})
}

// outcome is the raw result of one probe of c at now.
func (e *engine) outcome(p *pod, c int, k api.ProbeKind) bool {
	if e.forced(p, c, k) {
		return false
	}
	cs := &p.cs[c]
	el := e.now - cs.startedAt
	switch k {
	case api.ProbeStartup:
		return el >= int64(cs.plan.startupAfter)
	case api.ProbeReadiness:
		return el >= int64(cs.plan.readyAfter)
	}
	return cs.plan.livenessFailAfter == behavior.Never || el < int64(cs.plan.livenessFailAfter)
}

// flipAt returns when the raw outcome changes from ok, or never.
func (e *engine) flipAt(cs *ctr, k api.ProbeKind, ok bool) int64 {
	var d time.Duration
	switch {
	case k == api.ProbeLiveness && ok:
		d = cs.plan.livenessFailAfter
	case k == api.ProbeStartup && !ok:
		d = cs.plan.startupAfter
	case k == api.ProbeReadiness && !ok:
		d = cs.plan.readyAfter
	default:
		return neverT
	}
	if d == behavior.Never {
		return neverT
	}
	return cs.startedAt + int64(d)
}

// forced reports whether a probe-failure fault forces probe k of c to
// fail now.
func (e *engine) forced(p *pod, c int, k api.ProbeKind) bool {
	return p.fx != nil && p.fx[c].forcedUntil[k] > e.now
}

const neverT = int64(1<<63 - 1)

func (e *engine) onProbe(p *pod, c int, k api.ProbeKind) {
	cs := &p.cs[c]
	if !p.hasM || p.cs[c].rec.State != api.StateRunning {
		return
	}
	if e.probeStopped(p, c, k) {
		return
	}
	pr := p.spec.At(c).Probe(k)
	period := int64(pr.Period)
	if cs.postStartOn {
		// The prober probes a container only once the status manager has
		// its status ("Probe target container not found", prober/
		// worker.go), published by the sync that ends after startContainer
		// and its postStart hook: the worker ticks on without a result.
		e.armProbe(p, c, k, e.now+period)
		return
	}
	ps := &cs.probe
	// Probes skipped since the last one had the last one's outcome.
	if ps.last[k] > 0 {
		if skipped := (e.now-ps.last[k])/period - 1; skipped > 0 {
			if ps.lastOK[k] {
				ps.succ[k] += int32(min(skipped, 1<<20))
				ps.fail[k] = 0
			} else {
				ps.fail[k] += int32(min(skipped, 1<<20))
				ps.succ[k] = 0
			}
		}
	}
	ok := e.outcome(p, c, k)
	ps.last[k], ps.lastOK[k] = e.now, ok
	changed := false
	if ok {
		ps.succ[k]++
		ps.fail[k] = 0
		if ps.result[k] != api.ProbeSuccess && ps.succ[k] >= pr.SuccessThreshold {
			ps.result[k], changed = api.ProbeSuccess, true
		}
	} else {
		ps.fail[k]++
		ps.succ[k] = 0
		if ps.result[k] != api.ProbeFailure && ps.fail[k] >= pr.FailureThreshold {
			ps.result[k], changed = api.ProbeFailure, true
		}
	}
	// Arm the next probe that can change anything (before stepping the
	// machine: a kill it decides bumps the probe generation).
	if k == api.ProbeStartup && ps.result[k] == api.ProbeSuccess {
		cs.startupOK = true // the startup probe stops; the others begin
		e.armAfterStartup(p, c)
	} else {
		next := neverT
		if e.forced(p, c, k) {
			next = e.now + period
		} else {
			if f := e.flipAt(cs, k, ok); f != neverT {
				// first probe on the grid at or after f
				n := (f - e.now + period - 1) / period
				if n < 1 {
					n = 1
				}
				next = e.now + n*period
			}
			var need int32
			if ok && ps.result[k] != api.ProbeSuccess {
				need = pr.SuccessThreshold - ps.succ[k]
			} else if !ok && ps.result[k] != api.ProbeFailure {
				need = pr.FailureThreshold - ps.fail[k]
			}
			if need > 0 {
				next = min(next, e.now+int64(need)*period)
			}
		}
		if next != neverT {
			e.armProbe(p, c, k, next)
		}
	}
	if !changed {
		return
	}
	e.emitC(history.ProbeResult, p, c)
	e.ev.Probe = k.String()
	e.ev.Result = ps.result[k].String()
	e.write()
	if ps.result[k] == api.ProbeFailure && e.forced(p, c, k) && p.fx[c].forcedFault[k] != 0 {
		fx := &p.fx[c]
		e.faultEffect(int(fx.forcedIdx[k]), fx.forcedFault[k]-1, p, c, k.String()+" probe failed")
		fx.forcedFault[k] = 0
	}
	e.step(p, &api.Input{Kind: api.InProbe, Container: c, Probe: k, Result: ps.result[k]})
}

// probeActive reports whether probe k of c is being run now.
func (e *engine) probeActive(p *pod, c int, k api.ProbeKind) bool {
	cs := &p.cs[c]
	if !p.hasM || p.cs[c].rec.State != api.StateRunning || cs.starting || p.spec.At(c).Probe(k) == nil {
		return false
	}
	switch k {
	case api.ProbeStartup:
		return !cs.startupOK && !e.probeStopped(p, c, k)
	case api.ProbeLiveness:
		return cs.startupOK && !e.probeStopped(p, c, k)
	}
	return cs.startupOK
}

// probeStopped reports whether probe k of c stopped because the pod
// terminates: liveness and startup probes of main containers
// (StopLivenessAndStartup at the start of SyncTerminatingPod; a sandbox-loss
// kill is part of SyncPod and stops nothing).
func (e *engine) probeStopped(p *pod, c int, k api.ProbeKind) bool {
	return k != api.ProbeReadiness && p.m.Terminating() && p.termReason != api.KillSandboxLost && p.spec.At(c).Role == api.RoleMain
}

// rearmProbe puts probe k of c back on its period grid (after a fault
// changed its outcome). It re-arms every probe of c (the generation is per
// container).
func (e *engine) rearmProbes(p *pod, c int) {
	cs := &p.cs[c]
	cs.pgen++
	for k := api.ProbeStartup; k <= api.ProbeLiveness; k++ {
		if !e.probeActive(p, c, k) {
			continue
		}
		pr := p.spec.At(c).Probe(k)
		ps := &cs.probe
		first := cs.startedAt + int64(pr.InitialDelay)
		t := first
		if ps.last[k] > 0 {
			period := int64(pr.Period)
			n := (e.now - ps.last[k] + period - 1) / period
			if n < 1 {
				n = 1
			}
			t = ps.last[k] + n*period
		} else if k != api.ProbeStartup {
			t = max(t, e.now)
		}
		e.armProbe(p, c, k, t)
	}
}
