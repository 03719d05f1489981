package sim

import (
	"github.com/sidebench/sidebench/harness/behavior"
	"github.com/sidebench/sidebench/harness/faults"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/reference-impl/api"
	"github.com/sidebench/sidebench/reference-impl/kubelet"
)

// runtimeOK reports whether p's node runtime accepts calls.
func (e *engine) runtimeOK(p *pod) bool {
	n := &e.nodes[p.node]
	return n.up && n.runtimeUp
}

// failAction reports that the runtime refused an action of the current
// machine. The report reaches the machine RetryDelay later: the kubelet's
// pod worker requeues a failed sync after a backoff, and the machine
// retries as soon as it hears of the failure.
func (e *engine) failAction(p *pod, k api.ActionKind, c int) {
	e.failActionAfter(p, k, c, e.retryDelay)
}

// failActionAfter reports the refusal delay after now (0: a call whose
// caller hears of the failure at once).
func (e *engine) failActionAfter(p *pod, k api.ActionKind, c int, delay int64) {
	e.push(event{t: e.now + delay, evWho: evWho{slot: p.slot, id: p.id}, evWhat: evWhat{kind: evActionFailed, gen: p.mgen, c: uint8(c), aux: uint16(k)}})
	if delay > 0 && p.node >= 0 {
		n := &e.nodes[p.node]
		drop := 0 // reported ones: their events fired before now
		for drop < len(n.refusals) && n.refusals[drop].due < e.now {
			drop++
		}
		n.refusals = append(n.refusals[:0], n.refusals[drop:]...)
		n.refusals = append(n.refusals, refusal{due: e.now + delay, slot: p.slot, id: p.id, mgen: p.mgen, c: uint8(c), k: k})
	}
}

// act executes one action of a Ready batch against the simulated runtime.
func (e *engine) act(p *pod, a *api.Action) {
	c := a.Container
	switch a.Kind {
	case api.ActCreateSandbox:
		if !e.runtimeOK(p) {
			e.failAction(p, api.ActCreateSandbox, 0)
			return
		}
		p.sbGen++
		p.sbBusy = true
		p.sbAttempt = a.Attempt
		e.push(event{t: e.now + int64(e.cfg.Cluster.SandboxLatency), evWho: evWho{slot: p.slot, id: p.id}, evWhat: evWhat{kind: evSandbox, gen: p.sbGen}})

	case api.ActStartContainer:
		if !e.runtimeOK(p) {
			e.emitC(history.ContainerStartFailed, p, c)
			e.ev.Attempt = a.Attempt
			e.ev.Msg = "runtime down"
			e.write()
			e.failAction(p, api.ActStartContainer, c)
			return
		}
		if e.pullFails(p, c) {
			e.failPull(p, c, a.Attempt)
			return
		}
		cs := &p.cs[c]
		cs.gen++
		cs.hgen++
		cs.pgen++
		latency := e.drawAttempt(p, c, a.Attempt, cs)
		cs.starting, cs.stopping, cs.preStopOn, cs.postStartOn, cs.startupOK = true, false, false, false, false
		cs.probe = probes{}
		// A new record; the runtime keeps the exited one before it (the
		// container GC keeps the newest dead container of each name).
		p.cs[c].rec = p.cs[c].rec.Succeed(api.ContainerRecord{State: api.StateCreated, Attempt: a.Attempt,
			SandboxAttempt: p.sandbox.Attempt, Image: p.spec.At(c).Image, CreatedAt: api.Time(e.now),
			Resources: p.spec.At(c).Resources})
		e.emitC(history.ContainerStartRequested, p, c)
		// CreateContainer carries the oom_score_adj in
		// LinuxContainerResources (INV-Q3).
		if ws := &e.wls[p.wl]; p.spec == ws.spec {
			e.ev.OOMScoreAdj = ws.oom[c]
		} else {
			// The pod's own spec (resized, image changed): from its own
			// resources.
			e.ev.OOMScoreAdj = kubelet.OOMScoreAdj(p.spec, c, e.memCapacity(), e.cfg.Gates)
		}
		if p.cpuNames != nil {
			e.ev.CPUs = p.cpuNames[c]
		}
		e.write()
		e.push(event{t: e.now + int64(latency), evWho: evWho{slot: p.slot, id: p.id}, evWhat: evWhat{kind: evRunning, gen: cs.gen, c: uint8(c)}})

	case api.ActRunPreStop:
		cs := &p.cs[c]
		e.emitC(history.ContainerPreStopBegin, p, c)
		e.ev.Reason = a.Reason.String()
		e.write()
		cs.hgen++
		cs.preStopOn = true
		d := cs.plan.preStop
		if !e.runtimeOK(p) || p.cs[c].rec.State != api.StateRunning {
			d = 0 // the hook's exec fails at once
		}
		if d != behavior.Never {
			e.push(event{t: e.now + int64(d), evWho: evWho{slot: p.slot, id: p.id}, evWhat: evWhat{kind: evPreStop, gen: cs.hgen, c: uint8(c)}})
		}
		e.wirePreStop(p, c)

	case api.ActStopContainer:
		e.emitC(history.ContainerStopRequested, p, c)
		e.ev.Grace = int64(a.Grace)
		e.ev.Reason = a.Reason.String()
		e.write()
		if !e.runtimeOK(p) {
			if a.Reason.WholePod() {
				// A pod kill's goroutine returns the error at once, before
				// the ordering would release the containers waiting for
				// this one (killContainer); the next sync comes only
				// once the kill is over (the refused sandbox stop's).
				e.failActionAfter(p, api.ActStopContainer, c, 0)
				return
			}
			e.failAction(p, api.ActStopContainer, c)
			return
		}
		switch p.cs[c].rec.State {
		case api.StateRunning, api.StateUnknown:
			// A container in Unknown state: the runtime kills what it
			// can find of it (kuberuntime_manager.go: "try killing it
			// before restart").
			e.stopContainer(p, c, int64(a.Grace))
		case api.StateCreated:
			// Stopping a container whose start is in flight: it never runs.
			cs := &p.cs[c]
			cs.gen++
			e.push(event{t: e.now, evWho: evWho{slot: p.slot, id: p.id}, evWhat: evWhat{kind: evKill, gen: cs.gen, c: uint8(c)}})
		}

	case api.ActRemoveContainer:
		if !e.runtimeOK(p) {
			e.failAction(p, api.ActRemoveContainer, c)
			return
		}
		// CRI RemoveContainer: the record goes (a running container is
		// removed forcibly); the kubelet hears of it as a vanished record.
		cs := &p.cs[c]
		if p.cs[c].rec.State == api.StateRunning {
			cs.pgen++
		}
		cs.gen++
		cs.hgen++
		cs.starting, cs.stopping, cs.preStopOn, cs.postStartOn = false, false, false, false
		e.emitC(history.ContainerRemoved, p, c)
		e.ev.Msg = "RemoveContainer"
		e.write()
		p.cs[c].rec = api.ContainerRecord{}
		e.push(event{t: e.now, evWho: evWho{slot: p.slot, id: p.id}, evWhat: evWhat{kind: evRemoved, gen: cs.gen, c: uint8(c)}})

	case api.ActResizeContainer:
		if !e.runtimeOK(p) {
			e.failAction(p, api.ActResizeContainer, c)
			return
		}
		// CRI UpdateContainerResources: applied at once; the kubelet hears
		// the record back as an event.
		cs := &p.cs[c]
		if cs.rec.State != api.StateRunning {
			e.failAction(p, api.ActResizeContainer, c)
			return
		}
		cs.rec.Resources = a.Resources
		e.emitC(history.ContainerResized, p, c)
		e.ev.CPU, e.ev.Mem, e.ev.CPULimit, e.ev.MemLimit = a.Resources.CPURequest, a.Resources.MemRequest, a.Resources.CPULimit, a.Resources.MemLimit
		e.write()
		e.push(event{t: e.now, evWho: evWho{slot: p.slot, id: p.id}, evWhat: evWhat{kind: evResized, gen: cs.gen, c: uint8(c)}})

	case api.ActStopSandbox:
		// StopPodSandbox stops every container still running in the
		// sandbox first, with no grace (containerd's sandbox stop). The
		// kubelet sends it with containers running only when their
		// StopContainer was refused (killPodWithSyncResult stops the
		// sandboxes whatever the containers' results); a sandbox stop
		// then fails like any call while the runtime is down.
		running := false
		for c := range p.cs {
			running = running || p.cs[c].rec.State == api.StateRunning
		}
		if !e.runtimeOK(p) && (running || (p.hasM && !p.m.Done())) {
			// Refused. A kill that sent it with containers it still
			// believes running (their stops refused; their exits, while
			// the runtime is down, unheard) hears of it and runs again.
			e.failAction(p, api.ActStopSandbox, 0)
			return
		}
		if !running {
			// The stop that ends a finished pod: see docs/sim.md for the
			// one refused while the runtime is down (not modelled).
			e.stopSandbox(p)
			return
		}
		// The SIGKILLs happen inside the call, before it returns; the
		// kubelet hears of the exits afterwards (evExitSeen), as of any
		// action's result.
		for c := range p.cs {
			if p.cs[c].rec.State == api.StateRunning {
				e.emitC(history.ContainerKilled, p, c)
				e.write()
				e.recordExit(p, c, 137, api.ReasonError)
				e.push(event{t: e.now, evWho: evWho{slot: p.slot, id: p.id}, evWhat: evWhat{kind: evExitSeen, gen: p.cs[c].gen, c: uint8(c)}})
			}
		}
		e.stopSandbox(p)
	}
}

// stopSandbox records that p's sandbox was stopped.
func (e *engine) stopSandbox(p *pod) {
	e.emitP(history.SandboxStopped, p)
	e.ev.Attempt = p.sandbox.Attempt
	e.write()
}

// memCapacity is the node memory the kubelet computes oom_score_adj from.
func (e *engine) memCapacity() int64 {
	if m := e.cfg.Cluster.NodeMemory; m > 0 {
		return m
	}
	return DefaultNodeMemory
}

// resizeContainer changes the spec resources of container c of p (an
// in-place resize request through the API server, INV-U2): it writes
// container.resize and tells the kubelet, which resizes the container in
// place or restarts it per its resizePolicy.
func (e *engine) resizeContainer(p *pod, c int, r api.Resources) {
	if p.spec == e.wls[p.wl].spec {
		p.spec = copySpec(p.spec) // the pod's own spec from now on
	}
	p.spec.At(c).Resources = r
	e.emitC(history.ContainerResize, p, c)
	e.ev.CPU, e.ev.Mem, e.ev.CPULimit, e.ev.MemLimit = r.CPURequest, r.MemRequest, r.CPULimit, r.MemLimit
	e.write()
	e.step(p, &api.Input{Kind: api.InResize, Container: c, Resources: r})
}

// stopContainer is CRI StopContainer(c, grace): SIGTERM now; the process
// exits after its drawn TermHandling, or is SIGKILLed when grace runs out.
func (e *engine) stopContainer(p *pod, c int, grace int64) {
	cs := &p.cs[c]
	if grace < 0 {
		grace = 0
	}
	deadline := e.now + grace
	if cs.stopping {
		if deadline < cs.killAt {
			cs.killAt = deadline
			e.push(event{t: deadline, evWho: evWho{slot: p.slot, id: p.id}, evWhat: evWhat{kind: evKill, gen: cs.gen, c: uint8(c)}})
		}
		return
	}
	cs.stopping = true
	cs.killAt = deadline
	th := cs.plan.termHandling
	if th != behavior.Never {
		// Even past the deadline: a runtime restart can lose the SIGKILL
		// timer (failInFlight), and the handler's exit comes all the same.
		e.push(event{t: e.now + int64(th), evWho: evWho{slot: p.slot, id: p.id}, evWhat: evWhat{kind: evTermExit, gen: cs.gen, c: uint8(c)}})
	}
	if th == behavior.Never || e.now+int64(th) > deadline {
		e.push(event{t: deadline, evWho: evWho{slot: p.slot, id: p.id}, evWhat: evWhat{kind: evKill, gen: cs.gen, c: uint8(c)}})
	}
}

func (e *engine) onSandboxReady(p *pod) {
	p.sbBusy = false
	p.sandbox = api.Sandbox{State: api.SandboxReady, Attempt: p.sbAttempt}
	e.emitP(history.SandboxCreated, p)
	e.ev.Attempt = p.sbAttempt
	e.write()
	if !p.inited {
		p.inited = true
		e.onPhase(p, faults.PhaseInitializing)
	}
	e.step(p, &api.Input{Kind: api.InSandbox, Sandbox: p.sandbox})
}

// onRunning: the process of container c started.
func (e *engine) onRunning(p *pod, c int) {
	cs := &p.cs[c]
	rec := &p.cs[c].rec
	cs.starting = false
	cs.startedAt = e.now
	rec.State = api.StateRunning
	rec.StartedAt = api.Time(e.now)
	e.emitC(history.ContainerRunning, p, c)
	e.write()
	if p.fx != nil && p.fx[c].imageFault != 0 && rec.Image == p.spec.At(c).Image {
		fx := &p.fx[c]
		e.faultEffect(int(fx.imageFaultIdx), fx.imageFault-1, p, c, "container running the new image "+rec.Image)
		e.faultEnd(int(fx.imageFaultIdx), fx.imageFault-1, p, c)
		fx.imageFault = 0
	}
	if cs.plan.exitAfter != behavior.Never {
		e.push(event{t: e.now + int64(cs.plan.exitAfter), evWho: evWho{slot: p.slot, id: p.id}, evWhat: evWhat{kind: evExit, gen: cs.gen, c: uint8(c)}})
	}
	if p.hasM {
		// The kubelet runs the postStart hook after StartContainer returns,
		// and the prober starts.
		if p.spec.At(c).PostStart {
			cs.hgen++
			cs.postStartOn = true
			if d := cs.plan.postStart; d != behavior.Never {
				e.push(event{t: e.now + int64(d), evWho: evWho{slot: p.slot, id: p.id}, evWhat: evWhat{kind: evPostStart, gen: cs.hgen, c: uint8(c)}})
			}
		}
		e.startProbes(p, c, false)
	}
	e.wireRunning(p, c)
	e.step(p, &api.Input{Kind: api.InContainer, Container: c, Record: *rec})
}

func (e *engine) onPostStartDone(p *pod, c int) {
	cs := &p.cs[c]
	cs.postStartOn = false
	ok := !cs.postStartFails
	e.emitC(history.ContainerPostStartDone, p, c)
	e.ev.Value = ok
	if !ok {
		e.ev.Msg = "FailedPostStartHook"
	}
	e.write()
	e.step(p, &api.Input{Kind: api.InPostStartDone, Container: c, OK: ok})
}

func (e *engine) onPreStopDone(p *pod, c int) {
	cs := &p.cs[c]
	cs.preStopOn = false
	e.emitC(history.ContainerPreStopEnd, p, c)
	if cs.preStopFails {
		// FailedPreStopHook: the kubelet logs it and stops the container
		// as it would after a successful hook (executePreStopHook).
		e.ev.Msg = "FailedPreStopHook"
	}
	e.write()
	e.step(p, &api.Input{Kind: api.InPreStopDone, Container: c})
}

// onKill: SIGKILL when the stop grace ran out (or a stop of a container
// that never ran).
func (e *engine) onKill(p *pod, c int) {
	switch p.cs[c].rec.State {
	case api.StateRunning, api.StateUnknown:
		e.emitC(history.ContainerKilled, p, c)
		e.write()
		e.exitContainer(p, c, 137, api.ReasonError)
	case api.StateCreated:
		e.exitContainer(p, c, 137, api.ReasonError)
	}
}

// exitContainer records that c's process exited and tells the kubelet.
func (e *engine) exitContainer(p *pod, c int, code int32, reason api.Reason) {
	e.recordExit(p, c, code, reason)
	// The exit resets the attempt in the machine, hook included, so no
	// InPreStopDone follows.
	e.tellRecord(p, c)
}

// plegBlind reports whether p's kubelet is blind to its runtime: the node
// runs but the runtime refuses calls, so the PLEG's relist fails
// (GenericPLEG.Relist returns on GetPods' error, before any event and
// before the cache's timestamp moves) and nothing the runtime's records
// say reaches the kubelet until a relist succeeds again.
func (e *engine) plegBlind(p *pod) bool {
	n := &e.nodes[p.node]
	return n.up && !n.runtimeUp
}

// tellRecord tells p's kubelet that container c's record changed: at once
// (the sim's PLEG relists instantly), or, while the runtime is down, at
// the first relist after it is back (onRuntimeUp), with the record as it
// is then: an exit, an Unknown state or a removal during a runtime
// restart is news only when the restart is over.
func (e *engine) tellRecord(p *pod, c int) {
	if e.plegBlind(p) {
		p.cs[c].unseen = true
		return
	}
	e.step(p, &api.Input{Kind: api.InContainer, Container: c, Record: p.cs[c].rec})
}

// tellSandbox is tellRecord for p's sandbox.
func (e *engine) tellSandbox(p *pod) {
	if e.plegBlind(p) {
		n := &e.nodes[p.node]
		n.sbUnseen = append(n.sbUnseen, pendingPod{slot: p.slot, id: p.id})
		return
	}
	e.step(p, &api.Input{Kind: api.InSandbox, Sandbox: p.sandbox})
}

// relistUnseen is the first relist after node k's runtime came back: each
// kubelet hears every record that changed while it could not list them,
// containers in spec order, then its sandbox (the order a kill-containers
// restart itself reports them in: the exits, then the lost sandbox), in
// one batch its planner sees whole (api.Input.More).
func (e *engine) relistUnseen(k int) {
	n := &e.nodes[k]
	// Telling a kubelet may end its pod and take it off the node (a
	// swap-removal): walk by index and revisit a moved-in slot.
	for i := 0; i < len(n.pods) && e.err == nil; {
		slot := n.pods[i]
		e.relistPod(e.pod(slot), n.sbUnseen)
		if i < len(n.pods) && n.pods[i] == slot {
			i++
		}
	}
	n.sbUnseen = n.sbUnseen[:0]
}

// relistPod tells p's kubelet its unseen records and, if p is in
// sandboxes, its sandbox, as one batch: each input is held until the next
// is known, and sent with More set unless it is the last.
//
// The batch begins with the refusals still on their way: a call the
// runtime refused while down failed the sync that made it there and then
// (a single-container kill's StopContainer ends its SyncPod, and with it
// the restart planned in the same sync); the report's delay stands for the
// pod worker's back-off before the next sync, which the relist's events
// cut short. Heard after the records, a kill whose stop was refused would
// still restart the container that, the records say, exited on its own
// before the stop (a main exiting 0 under OnFailure, restarted by the
// Unknown state's kill: INV-R4 in the sweep under KEP-4438's policy). Their
// queued reports are then dropped (firstReport). A pod the relist brings
// no news of is not synced: its back-off runs on.
func (e *engine) relistPod(p *pod, sandboxes []pendingPod) {
	var held api.Input
	holding := false
	tell := func(in api.Input) {
		if holding {
			held.More = true
			e.step(p, &held)
		}
		held, holding = in, true
	}
	if p.hasM && e.hasNews(p, sandboxes) {
		n := &e.nodes[p.node]
		for i := range n.refusals {
			r := &n.refusals[i]
			if r.told || r.slot != p.slot || r.id != p.id || r.mgen != p.mgen {
				continue
			}
			r.told = true
			c := int(r.c)
			if r.k == api.ActStartContainer && p.cs[c].rec.State == api.StateCreated {
				tell(api.Input{Kind: api.InContainer, Container: c, Record: p.cs[c].rec}) // as evActionFailed does
			}
			tell(api.Input{Kind: api.InActionFailed, Action: r.k, Container: c})
		}
	}
	for c := range p.cs {
		if p.cs[c].unseen {
			p.cs[c].unseen = false
			tell(api.Input{Kind: api.InContainer, Container: c, Record: p.cs[c].rec})
		}
	}
	for _, pp := range sandboxes {
		if pp.slot == p.slot && pp.id == p.id {
			tell(api.Input{Kind: api.InSandbox, Sandbox: p.sandbox})
			break
		}
	}
	if holding {
		e.step(p, &held)
	}
}

// hasNews reports whether the relist has anything to tell p's kubelet.
func (e *engine) hasNews(p *pod, sandboxes []pendingPod) bool {
	for c := range p.cs {
		if p.cs[c].unseen {
			return true
		}
	}
	for _, pp := range sandboxes {
		if pp.slot == p.slot && pp.id == p.id {
			return true
		}
	}
	return false
}

// firstReport reports whether the refusal report ev has not reached the
// kubelet yet, and records that it now has.
func (e *engine) firstReport(p *pod, ev *event) bool {
	if p.node < 0 {
		return true
	}
	n := &e.nodes[p.node]
	matched := false // identical refusals: one report each
	for i := range n.refusals {
		r := &n.refusals[i]
		if r.due == ev.t && r.slot == ev.slot && r.id == ev.id && r.mgen == ev.gen && r.c == ev.c && uint16(r.k) == ev.aux {
			matched = true
			if !r.told {
				r.told = true
				return true
			}
		}
	}
	return !matched
}

// recordExit records that c's process exited; the kubelet is told by the
// caller.
func (e *engine) recordExit(p *pod, c int, code int32, reason api.Reason) {
	cs := &p.cs[c]
	rec := &p.cs[c].rec
	cs.gen++
	cs.pgen++
	cs.hgen++
	cs.probe = probes{}
	cs.starting, cs.stopping, cs.postStartOn, cs.startupOK = false, false, false, false
	preStop := cs.preStopOn
	cs.preStopOn = false
	rec.State = api.StateExited
	rec.ExitCode = code
	rec.Reason = reason
	rec.FinishedAt = api.Time(e.now)
	e.emitC(history.ContainerExited, p, c)
	e.ev.Code = code
	e.ev.Reason = reason.String()
	e.write()
	if preStop {
		// The preStop exec fails once its container is gone: the hook
		// ends with the exit. Written before the kubelet hears of the
		// exit, which may finish the pod and release its machine (issue
		// 16 A2: the last container's hook end was lost).
		e.emitC(history.ContainerPreStopEnd, p, c)
		e.ev.Msg = "container exited"
		e.write()
	}
}
