package sim

import (
	"slices"
	"strconv"
	"time"

	"github.com/sidebench/sidebench/harness/faults"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/reference-impl/api"
)

// Fault records. Each target a firing hits gets its own instance (FaultID):
// fault.begin when it is applied, fault.effect once the sim state shows it
// took effect, fault.end when it is over. A fault that cannot take effect
// at all is recorded as fault.not-applied (with no begin); one that began
// but never took effect (a probe failure that never reached the failure
// threshold) gets fault.not-applied before its fault.end. Event.Fault is
// the catalogue name; Event.Target says what it aims at ("node-3/kubelet",
// "node-3/runtime", "node-3", "default/web-0/proxy"); Node, Pod and
// Container are set too; the fault.begin Msg is the fault's label
// (Spec.Name or "<kind>#<index>") so the scenario entry can be found.

func (e *engine) faultEv(k history.Kind, fi int, id uint32, node int, p *pod, c int, msg string) {
	f := &e.faults[fi]
	if k == history.FaultEnd {
		e.activeFaults--
	}
	e.ev = history.Event{T: e.now, Kind: k, Fault: f.spec.Kind.String(), FaultID: id, Msg: msg}
	if p != nil {
		e.ev.Pod, e.ev.Slot = p.name, p.slot+1
		e.ev.Target = p.name
		if p.node >= 0 {
			node = int(p.node)
		}
		if c >= 0 {
			e.ev.Container = p.spec.At(c).Name
			e.ev.Attempt = p.cs[c].rec.Attempt
			e.ev.Target += "/" + e.ev.Container
		}
	}
	if node >= 0 {
		e.ev.Node = e.nodes[node].name
		if p == nil {
			e.ev.Target = e.ev.Node + faultComponent[f.spec.Kind]
		}
	}
	e.write()
}

// faultComponent names the part of a node a node-level fault aims at.
var faultComponent = map[faults.Kind]string{
	faults.KubeletCrash:   "/kubelet",
	faults.RuntimeRestart: "/runtime",
	faults.ContainerGC:    "/runtime",
}

func (e *engine) newFaultID() uint32 {
	e.nextFaultID++
	return e.nextFaultID
}

func (e *engine) faultBegin(fi int, id uint32, node int, p *pod, c int) {
	e.activeFaults++
	e.faultEv(history.FaultBegin, fi, id, node, p, c, e.faults[fi].label)
}

func (e *engine) faultEffect(fi int, id uint32, p *pod, c int, msg string) {
	e.res.FaultsApplied++
	e.faultEv(history.FaultEffect, fi, id, -1, p, c, msg)
}

func (e *engine) faultNodeEffect(fi int, id uint32, node int, msg string) {
	e.res.FaultsApplied++
	e.faultEv(history.FaultEffect, fi, id, node, nil, -1, msg)
}

func (e *engine) faultEnd(fi int, id uint32, p *pod, c int) {
	e.faultEv(history.FaultEnd, fi, id, -1, p, c, "")
}

func (e *engine) notApplied(fi int, id uint32, node int, p *pod, c int, why string) {
	e.res.FaultsNotApplied++
	e.faultEv(history.FaultNotApplied, fi, id, node, p, c, why)
}

// onFault fires a timed fault and arms its next firing.
func (e *engine) onFault(fi int, ev *event) {
	if e.arrivalsLeft == 0 && e.live == 0 {
		return // every pod is done: no new faults
	}
	f := &e.faults[fi]
	f.fired++
	e.res.FaultsFired++
	s := f.spec
	if s.Kind.NodeLevel() {
		for _, k := range s.Where.PickNodes(len(e.nodes), f.pick) {
			e.applyNode(fi, k)
		}
	} else {
		e.pickPods(fi)
		if len(e.candidate) == 0 {
			e.notApplied(fi, e.newFaultID(), -1, nil, -1, "no scheduled pod matches the target")
		}
		for _, slot := range e.candidate {
			e.applyPod(fi, e.pod(slot))
		}
	}
	if t, ok := s.When.Next(time.Duration(e.now), f.fired, f.sched); ok {
		e.push(event{t: int64(t), evWho: evWho{slot: int32(fi)}, evWhat: evWhat{kind: evFault}})
	}
}

// onPhase lets on-phase faults react to a pod entering a lifecycle stage.
func (e *engine) onPhase(p *pod, ph faults.PodPhase) {
	for _, fi := range e.wls[p.wl].onPhase[ph] {
		f := &e.faults[fi]
		if f.spec.When.Triggers(ph, time.Duration(e.now), f.fired, f.sched) {
			f.fired++
			e.push(event{t: e.now + int64(f.spec.When.Delay), evWho: evWho{slot: p.slot, id: p.id}, evWhat: evWhat{kind: evFaultPod, aux: uint16(fi)}})
		}
	}
}

// fireOnPod applies an on-phase fault to the pod that triggered it (a
// node-level fault hits the pod's node).
func (e *engine) fireOnPod(fi int, p *pod) {
	e.res.FaultsFired++
	if e.faults[fi].spec.Kind.NodeLevel() {
		if p.node < 0 {
			e.notApplied(fi, e.newFaultID(), -1, p, -1, "pod not scheduled")
			return
		}
		e.applyNode(fi, int(p.node))
		return
	}
	e.applyPod(fi, p)
}

func (e *engine) applyPod(fi int, p *pod) {
	f := &e.faults[fi]
	s := f.spec
	id := e.newFaultID()
	c := s.Where.PickContainer(&e.wls[p.wl].world, s.Kind, s.Probe, f.pick)
	if c < 0 {
		e.notApplied(fi, id, -1, p, -1, "no container of the pod matches the target")
		return
	}
	switch s.Kind {
	case faults.OOMKill:
		e.applyOOM(fi, id, p, c)
	case faults.ProbeFailure:
		e.applyProbeFailure(fi, id, p, c)
	case faults.ImageChange:
		e.applyImage(fi, id, p, c)
	case faults.ImagePullFailure:
		e.applyPullFailure(fi, id, p, c)
	case faults.ContainerKill:
		e.applyContainerKill(fi, id, p, c)
	case faults.ContainerUnknown:
		e.applyUnknown(fi, id, p, c)
	case faults.Resize:
		e.applyResize(fi, id, p, c)
	}
}

func (e *engine) applyNode(fi int, k int) {
	id := e.newFaultID()
	switch e.faults[fi].spec.Kind {
	case faults.KubeletCrash:
		e.applyKubeletCrash(fi, id, k, e.faults[fi].spec.RecoveryCrash)
	case faults.RuntimeRestart:
		e.applyRuntimeRestart(fi, id, k)
	case faults.NodeShutdown:
		e.applyNodeShutdown(fi, id, k)
	case faults.NodePoweroff:
		e.applyPoweroff(fi, id, k)
	case faults.ContainerGC:
		e.applyGC(fi, id, k)
	}
}

func (e *engine) nodeEv(k history.Kind, n int) {
	e.ev = history.Event{T: e.now, Kind: k, Node: e.nodes[n].name}
	e.write()
}

// --- kubelet crash -------------------------------------------------------

func (e *engine) applyKubeletCrash(fi int, id uint32, k int, recrash bool) {
	n := &e.nodes[k]
	switch {
	case !n.up:
		e.notApplied(fi, id, k, nil, -1, "node down")
		return
	case !n.kubeletUp:
		e.notApplied(fi, id, k, nil, -1, "kubelet already down")
		return
	}
	e.faultBegin(fi, id, k, nil, -1)
	dropped := e.crashKubelet(k)
	e.faultNodeEffect(fi, id, k, "kubelet process gone; "+strconv.Itoa(dropped)+" pod machines discarded")
	n.kFault, n.kFaultIdx = id, uint16(fi)
	n.recrashLeft = recrash
	e.push(event{t: e.now + int64(e.faults[fi].spec.Downtime), evWho: evWho{slot: int32(k)}, evWhat: evWhat{kind: evKubeletUp, gen: n.kgen}})
}

// crashKubelet discards every machine of node k (their memory, timers,
// probers and hooks in flight) and returns how many there were.
func (e *engine) crashKubelet(k int) int {
	n := &e.nodes[k]
	n.kubeletUp, n.kubeletIdle = false, false
	n.kgen++
	e.nodeEv(history.KubeletDown, k)
	dropped := 0
	for _, slot := range n.pods {
		p := e.pod(slot)
		if p.hasM {
			dropped++
		}
		e.dropMachine(p)
	}
	return dropped
}

func (e *engine) dropMachine(p *pod) {
	e.releaseMachine(p)
	p.mgen++
	p.wgen++
	p.wakeAt = int64(api.Never)
	for c := range p.cs {
		cs := &p.cs[c]
		cs.pgen++
		cs.hgen++
		cs.postStartOn, cs.preStopOn = false, false
	}
}

func (e *engine) onKubeletUp(k int, ev *event) {
	n := &e.nodes[k]
	if ev.gen != n.kgen || !n.up || n.kubeletUp {
		return
	}
	n.kubeletUp = true
	e.nodeEv(history.KubeletUp, k)
	e.restartKubelet(k)
	if n.kFault != 0 {
		fi := int(n.kFaultIdx)
		e.faultEv(history.FaultEnd, fi, n.kFault, k, nil, -1, "")
		n.kFault = 0
		if n.recrashLeft {
			n.recrashLeft = false
			d := e.faults[fi].spec.RecoveryCrashAfter
			if d == 0 {
				d = faults.DefaultRecoveryCrashAfter
			}
			e.push(event{t: e.now + int64(d), evWho: evWho{slot: int32(k)}, evWhat: evWhat{kind: evKubeletCrash, gen: n.kgen, aux: uint16(fi)}})
		}
	}
}

// restartKubelet gives every pod bound to node k a fresh machine that
// relists from the runtime. A kubelet that starts while its runtime is
// down does nothing until the runtime is back: its first runtime status
// check fails, and syncLoop skips pod synchronization until one succeeds
// (kubelet.go syncLoop, runtimeState.runtimeErrors); onRuntimeUp then
// calls this again.
func (e *engine) restartKubelet(k int) {
	n := &e.nodes[k]
	n.kubeletIdle = !n.runtimeUp
	if n.kubeletIdle {
		return
	}
	for i := 0; i < len(n.pods) && e.err == nil; i++ {
		p := e.pod(n.pods[i])
		if p.bindSeen && !p.kdone && !p.hasM {
			e.startMachine(p)
		}
	}
}

func (e *engine) onRecoveryCrash(k int, ev *event) {
	n := &e.nodes[k]
	if ev.gen != n.kgen || !n.kubeletUp {
		return
	}
	e.applyKubeletCrash(int(ev.aux), e.newFaultID(), k, false)
}

// --- runtime restart -----------------------------------------------------

func (e *engine) applyRuntimeRestart(fi int, id uint32, k int) {
	n := &e.nodes[k]
	s := e.faults[fi].spec
	switch {
	case !n.up:
		e.notApplied(fi, id, k, nil, -1, "node down")
		return
	case !n.runtimeUp:
		e.notApplied(fi, id, k, nil, -1, "runtime already down")
		return
	}
	e.faultBegin(fi, id, k, nil, -1)
	n.runtimeUp = false
	n.rgen++
	e.nodeEv(history.RuntimeDown, k)
	failed, killed, lost := 0, 0, 0
	for i := 0; i < len(n.pods) && e.err == nil; i++ {
		p := e.pod(n.pods[i])
		failed += e.failInFlight(p)
		if s.Mode == faults.KillContainers {
			for c := range p.cs {
				if p.cs[c].rec.State == api.StateRunning {
					killed++
					e.exitContainer(p, c, 137, api.ReasonError)
				}
			}
			if p.sandbox.State == api.SandboxReady {
				lost++
				e.loseSandbox(p)
			}
		}
	}
	msg := "runtime refusing calls; " + strconv.Itoa(failed) + " calls in flight failed"
	if s.Mode == faults.KillContainers {
		msg += "; " + strconv.Itoa(killed) + " containers killed, " + strconv.Itoa(lost) + " sandboxes lost"
	}
	e.faultNodeEffect(fi, id, k, msg)
	n.rFault, n.rFaultIdx = id, uint16(fi)
	e.push(event{t: e.now + int64(s.Downtime), evWho: evWho{slot: int32(k)}, evWhat: evWhat{kind: evRuntimeUp, gen: n.rgen}})
}

// failInFlight fails p's runtime calls in flight (sandbox creation,
// container starts) and returns how many.
func (e *engine) failInFlight(p *pod) int {
	n := 0
	if p.sbBusy {
		p.sbBusy = false
		p.sbGen++
		n++
		if p.hasM {
			e.failAction(p, api.ActCreateSandbox, 0)
		}
	}
	for c := range p.cs {
		cs := &p.cs[c]
		if cs.stopping && cs.killAt != int64(api.Never) {
			// A StopContainer in flight: the kubelet's call fails with the
			// connection, and the runtime's SIGKILL timer dies with it
			// (the SIGTERM was delivered: the process's own exit still
			// comes). The kubelet hears at once (killContainer returns
			// the error).
			cs.killAt = int64(api.Never)
			n++
			if p.hasM {
				e.failActionAfter(p, api.ActStopContainer, c, 0)
			}
		}
		if !cs.starting {
			continue
		}
		cs.starting = false
		cs.gen++
		n++
		if p.hasM {
			e.emitC(history.ContainerStartFailed, p, c)
			e.ev.Msg = "runtime restarted"
			e.write()
			e.failAction(p, api.ActStartContainer, c)
		}
	}
	return n
}

func (e *engine) loseSandbox(p *pod) {
	p.sandbox.State = api.SandboxLost
	e.emitP(history.SandboxLost, p)
	e.ev.Attempt = p.sandbox.Attempt
	e.write()
	e.tellSandbox(p)
}

func (e *engine) onRuntimeUp(k int, ev *event) {
	n := &e.nodes[k]
	if ev.gen != n.rgen || !n.up || n.runtimeUp {
		return
	}
	n.runtimeUp = true
	e.nodeEv(history.RuntimeUp, k)
	if n.rFault != 0 {
		e.faultEv(history.FaultEnd, int(n.rFaultIdx), n.rFault, k, nil, -1, "")
		n.rFault = 0
	}
	e.relistUnseen(k)
	if n.kubeletUp && n.kubeletIdle {
		e.restartKubelet(k)
	}
}

// --- node shutdown and power-off -----------------------------------------

func (e *engine) applyNodeShutdown(fi int, id uint32, k int) {
	n := &e.nodes[k]
	s := e.faults[fi].spec
	switch {
	case !n.up:
		e.notApplied(fi, id, k, nil, -1, "node down")
		return
	case !n.kubeletUp:
		e.notApplied(fi, id, k, nil, -1, "kubelet down: graceful node shutdown needs a running kubelet")
		return
	case n.shuttingDown:
		e.notApplied(fi, id, k, nil, -1, "node already shutting down")
		return
	}
	e.faultBegin(fi, id, k, nil, -1)
	n.shuttingDown, n.critStarted = true, false
	n.nFault, n.nFaultIdx = id, uint16(fi)
	e.ev = history.Event{T: e.now, Kind: history.NodeShutdown, Node: n.name, Grace: int64(s.ShutdownGracePeriod), CritGrace: int64(s.ShutdownGracePeriodCriticalPods)}
	e.write()
	e.shutdownPods(k, false)
	e.maybeShutdownCritical(k)
	e.push(event{t: e.now + int64(s.ShutdownGracePeriod-s.ShutdownGracePeriodCriticalPods), evWho: evWho{slot: int32(k)}, evWhat: evWhat{kind: evShutdownCritical, gen: n.ngen}})
	e.push(event{t: e.now + int64(s.ShutdownGracePeriod), evWho: evWho{slot: int32(k)}, evWhat: evWhat{kind: evShutdownEnd, gen: n.ngen}})
}

// shutdownPods tells the kubelet to terminate the regular (or critical)
// pods of node k within their node-shutdown budget (INV-F4).
func (e *engine) shutdownPods(k int, critical bool) {
	n := &e.nodes[k]
	if critical {
		if n.critStarted {
			return
		}
		n.critStarted = true
	}
	s := e.faults[n.nFaultIdx].spec
	for i := 0; i < len(n.pods) && e.err == nil; i++ {
		p := e.pod(n.pods[i])
		if p.spec.Critical != critical || p.kdone {
			continue
		}
		p.shutdown = int64(s.BudgetFor(critical, p.spec.TerminationGracePeriod))
		if p.shutdown <= 0 {
			p.shutdown = 1 // a zero budget still means "shut down now"
		}
		e.step(p, &api.Input{Kind: api.InNodeShutdown, Grace: time.Duration(p.shutdown)})
	}
}

// maybeShutdownCritical starts the critical group of node k's shutdown
// as soon as no regular pod is left to terminate: the shutdown manager
// waits for a group's pods, or its budget, before the next group, and
// skips an empty one (nodeshutdown_manager.go killPods).
func (e *engine) maybeShutdownCritical(k int) {
	n := &e.nodes[k]
	if !n.shuttingDown || n.critStarted || !n.kubeletUp {
		return
	}
	for _, slot := range n.pods {
		if p := e.pod(slot); !p.spec.Critical && !p.kdone {
			return
		}
	}
	e.shutdownPods(k, true)
}

func (e *engine) onShutdownCritical(k int, ev *event) {
	n := &e.nodes[k]
	if ev.gen != n.ngen || !n.shuttingDown {
		return
	}
	if n.kubeletUp {
		e.shutdownPods(k, true)
	}
}

func (e *engine) onShutdownEnd(k int, ev *event) {
	n := &e.nodes[k]
	if ev.gen != n.ngen || !n.shuttingDown {
		return
	}
	fi, id := int(n.nFaultIdx), n.nFault
	total, graceful := len(n.pods), 0
	for _, slot := range n.pods {
		if e.pod(slot).kdone {
			graceful++
		}
	}
	killed, lost := e.powerDown(k)
	e.faultNodeEffect(fi, id, k, strconv.Itoa(graceful)+" of "+strconv.Itoa(total)+" pods terminated gracefully; "+
		strconv.Itoa(killed)+" containers killed and "+strconv.Itoa(lost)+" sandboxes lost at power-off")
	e.afterDown(fi, id, k)
}

func (e *engine) applyPoweroff(fi int, id uint32, k int) {
	n := &e.nodes[k]
	if !n.up {
		e.notApplied(fi, id, k, nil, -1, "node already down")
		return
	}
	e.faultBegin(fi, id, k, nil, -1)
	if n.shuttingDown && n.nFault != 0 {
		e.faultEv(history.FaultEnd, int(n.nFaultIdx), n.nFault, k, nil, -1, "superseded by a power-off")
		n.nFault = 0
	}
	killed, lost := e.powerDown(k)
	e.faultNodeEffect(fi, id, k, strconv.Itoa(killed)+" containers killed and "+strconv.Itoa(lost)+" sandboxes lost")
	e.afterDown(fi, id, k)
}

// afterDown arms the node's return, or gives its pods up.
func (e *engine) afterDown(fi int, id uint32, k int) {
	n := &e.nodes[k]
	s := e.faults[fi].spec
	if s.Return {
		n.nFault, n.nFaultIdx = id, uint16(fi)
		e.push(event{t: e.now + int64(s.Downtime), evWho: evWho{slot: int32(k)}, evWhat: evWhat{kind: evNodeUp, gen: n.ngen}})
		return
	}
	n.nFault = 0
	e.nodeLost(k)
	e.faultEv(history.FaultEnd, fi, id, k, nil, -1, "node stays down")
}

// powerDown kills everything on node k at once: no preStop, no grace, the
// kubelet and the runtime gone, every sandbox lost. It returns the
// containers killed and the sandboxes lost.
func (e *engine) powerDown(k int) (killed, lost int) {
	n := &e.nodes[k]
	// Faults holding a component down end with the node.
	if n.kFault != 0 {
		e.faultEv(history.FaultEnd, int(n.kFaultIdx), n.kFault, k, nil, -1, "node went down")
		n.kFault = 0
	}
	if n.rFault != 0 {
		e.faultEv(history.FaultEnd, int(n.rFaultIdx), n.rFault, k, nil, -1, "node went down")
		n.rFault = 0
	}
	if n.nFault != 0 && !n.shuttingDown {
		e.faultEv(history.FaultEnd, int(n.nFaultIdx), n.nFault, k, nil, -1, "node went down")
	}
	if n.kubeletUp {
		e.nodeEv(history.KubeletDown, k)
	}
	if n.runtimeUp {
		e.nodeEv(history.RuntimeDown, k)
	}
	n.up, n.kubeletUp, n.runtimeUp, n.shuttingDown = false, false, false, false
	n.recrashLeft = false
	n.sbUnseen = n.sbUnseen[:0] // the kubelet that comes up relists everything
	n.kgen++
	n.rgen++
	n.ngen++
	e.nodeEv(history.NodeDown, k)
	for _, slot := range n.pods {
		p := e.pod(slot)
		e.dropMachine(p)
		p.sbBusy = false
		p.sbGen++
		for c := range p.cs {
			cs := &p.cs[c]
			switch {
			case p.cs[c].rec.State == api.StateRunning:
				killed++
				e.exitContainer(p, c, 137, api.ReasonError)
			case cs.starting:
				cs.starting = false
				cs.gen++
			}
		}
		if p.sandbox.State == api.SandboxReady {
			lost++
			p.sandbox.State = api.SandboxLost
			e.emitP(history.SandboxLost, p)
			e.ev.Attempt = p.sandbox.Attempt
			e.write()
		}
	}
	return killed, lost
}

func (e *engine) onNodeUp(k int, ev *event) {
	n := &e.nodes[k]
	if ev.gen != n.ngen || n.up {
		return
	}
	n.up, n.runtimeUp, n.kubeletUp = true, true, true
	n.kgen++
	n.rgen++
	e.nodeEv(history.NodeUp, k)
	e.nodeEv(history.RuntimeUp, k)
	e.nodeEv(history.KubeletUp, k)
	if n.nFault != 0 {
		e.faultEv(history.FaultEnd, int(n.nFaultIdx), n.nFault, k, nil, -1, "")
		n.nFault = 0
	}
	e.restartKubelet(k)
	e.drainPending(k)
}

// nodeLost: the node never comes back; the control plane force-deletes
// its pods (the out-of-service path).
func (e *engine) nodeLost(k int) {
	n := &e.nodes[k]
	for len(n.pods) > 0 && e.err == nil {
		p := e.pod(n.pods[len(n.pods)-1])
		if !p.deleted {
			p.deleted = true
			e.ev = history.Event{T: e.now, Kind: history.PodDeleted, Pod: p.name, Slot: p.slot + 1, Node: n.name, Msg: "node lost"}
			e.write()
		}
		e.removePod(p, true)
	}
	e.lostNodes++
	if e.lostNodes == len(e.nodes) {
		// No node will ever run the waiting pods.
		for ; e.pendHd < len(e.pending); e.pendHd++ {
			pp := e.pending[e.pendHd]
			if p := e.pod(pp.slot); p.id == pp.id && p.node < 0 {
				e.removePod(p, true)
			}
		}
	}
}

// --- container GC ---------------------------------------------------------

func (e *engine) applyGC(fi int, id uint32, k int) {
	n := &e.nodes[k]
	s := e.faults[fi].spec
	if !n.up {
		e.notApplied(fi, id, k, nil, -1, "node down")
		return
	}
	if !n.runtimeUp {
		// The runtime removes records; while it restarts it removes none.
		e.notApplied(fi, id, k, nil, -1, "runtime down")
		return
	}
	begun := false
	removed := 0
	for i := 0; i < len(n.pods) && e.err == nil; i++ {
		p := e.pod(n.pods[i])
		if !e.faults[fi].match[p.wl] {
			continue
		}
		w := &e.wls[p.wl].world
		for c := range p.cs {
			rec := &p.cs[c].rec
			if rec.State != api.StateExited {
				continue
			}
			wc := &w.Containers[c]
			if !s.AllExited && wc.Role != api.RoleInit {
				continue
			}
			if (s.Where.Container != "" && wc.Name != s.Where.Container) || (s.Where.Role != 0 && wc.Role != s.Where.Role) {
				continue
			}
			if !begun {
				begun = true
				e.faultBegin(fi, id, k, nil, -1)
			}
			removed++
			e.emitC(history.ContainerRemoved, p, c)
			e.write()
			*rec = api.ContainerRecord{}
			e.tellRecord(p, c)
		}
	}
	if !begun {
		e.notApplied(fi, id, k, nil, -1, "no exited container record to remove")
		return
	}
	e.faultNodeEffect(fi, id, k, strconv.Itoa(removed)+" exited container records removed")
	e.faultEv(history.FaultEnd, fi, id, k, nil, -1, "")
}

// --- container faults -----------------------------------------------------

func (e *engine) applyOOM(fi int, id uint32, p *pod, c int) {
	if p.cs[c].rec.State != api.StateRunning || p.cs[c].starting {
		e.notApplied(fi, id, -1, p, c, "container not running")
		return
	}
	e.faultBegin(fi, id, -1, p, c)
	attempt := p.cs[c].rec.Attempt
	// The kernel kills the process: no preStop hook, no grace.
	e.exitContainer(p, c, 137, api.ReasonOOMKilled)
	if p.id != 0 {
		e.faultEffect(fi, id, p, c, "container exited 137 OOMKilled (attempt "+strconv.Itoa(int(attempt))+")")
		e.faultEnd(fi, id, p, c)
	}
}

func (e *engine) applyProbeFailure(fi int, id uint32, p *pod, c int) {
	s := e.faults[fi].spec
	k := s.Probe
	if !e.probeActive(p, c, k) {
		why := "container not running"
		switch {
		case !p.hasM && p.cs[c].rec.State == api.StateRunning:
			why = "kubelet down: no prober"
		case p.cs[c].rec.State != api.StateRunning:
		case k == api.ProbeStartup:
			why = "startup probe already succeeded"
		case !p.cs[c].startupOK:
			why = k.String() + " probe waits for the startup probe"
		case e.probeStopped(p, c, k):
			why = k.String() + " probes of main containers stopped: pod terminating"
		}
		e.notApplied(fi, id, -1, p, c, why)
		return
	}
	e.faultBegin(fi, id, -1, p, c)
	cs := e.podFaults(p, c)
	cs.forcedUntil[k] = e.now + int64(s.Window)
	if cs.forcedFaultID[k] != 0 {
		// A window already open on this probe ends now, replaced.
		ofi, oid := int(cs.forcedIdx[k]), cs.forcedFaultID[k]-1
		if cs.forcedFault[k] != 0 {
			e.notApplied(ofi, oid, -1, p, c, "superseded by a later probe failure")
		}
		e.faultEnd(ofi, oid, p, c)
	}
	cs.forcedFault[k] = id + 1
	cs.forcedFaultID[k] = id + 1
	cs.forcedIdx[k] = uint16(fi)
	e.rearmProbes(p, c)
	e.push(event{t: e.now + int64(s.Window), evWho: evWho{slot: p.slot, id: p.id}, evWhat: evWhat{kind: evProbeFaultEnd, gen: id, c: uint8(c), aux: uint16(fi)}})
}

func (e *engine) onProbeFaultEnd(p *pod, c int, ev *event) {
	fi := int(ev.aux)
	k := e.faults[fi].spec.Probe
	cs := e.podFaults(p, c)
	if cs.forcedFaultID[k] != ev.gen+1 {
		return // superseded
	}
	if cs.forcedFault[k] == ev.gen+1 {
		e.notApplied(fi, ev.gen, -1, p, c, k.String()+" probe did not reach its failure threshold within the window")
	}
	cs.forcedFault[k], cs.forcedFaultID[k] = 0, 0
	e.rearmProbes(p, c)
	e.faultEnd(fi, ev.gen, p, c)
}

func (e *engine) applyImage(fi int, id uint32, p *pod, c int) {
	s := e.faults[fi].spec
	switch {
	case !p.hasM:
		e.notApplied(fi, id, -1, p, c, "kubelet down or pod finished on its node")
		return
	case p.spec.At(c).Image == s.Image:
		e.notApplied(fi, id, -1, p, c, "image unchanged")
		return
	}
	e.faultBegin(fi, id, -1, p, c)
	if p.spec == e.wls[p.wl].spec {
		p.spec = copySpec(p.spec) // the pod's own spec from now on
	}
	p.spec.At(c).Image = s.Image
	e.emitC(history.ContainerImageChanged, p, c)
	e.ev.Msg = s.Image
	e.write()
	switch {
	case p.m.Terminating() && p.termReason != api.KillSandboxLost:
		// The API server takes spec updates of a terminating pod and the
		// kubelet sees them, but it only kills a terminating pod
		// (SyncTerminatingPod): nothing restarts for the change (INV-U1,
		// T10; issue 16 A10).
		e.faultEffect(fi, id, p, c, "spec image changed during pod termination; the kubelet restarts nothing")
		e.faultEnd(fi, id, p, c)
	case p.cs[c].rec.State == api.StateRunning:
		cs := e.podFaults(p, c)
		cs.imageFault, cs.imageFaultIdx = id+1, uint16(fi)
	default:
		e.faultEffect(fi, id, p, c, "spec image changed; container not running, nothing to restart")
		e.faultEnd(fi, id, p, c)
	}
	e.step(p, &api.Input{Kind: api.InImage, Container: c, Image: s.Image})
}

// closePodFaults ends the faults still open on a pod being removed.
func (e *engine) closePodFaults(p *pod) {
	for c := range p.fx {
		cs := &p.fx[c]
		for k := range cs.forcedUntil {
			if cs.forcedUntil[k] > e.now && cs.forcedFaultID[k] != 0 {
				fi, id := int(cs.forcedIdx[k]), cs.forcedFaultID[k]-1
				if cs.forcedFault[k] != 0 {
					e.notApplied(fi, id, -1, p, c, "pod removed before the probe failed")
				}
				e.faultEnd(fi, id, p, c)
				cs.forcedFault[k], cs.forcedFaultID[k] = 0, 0
			}
		}
		if cs.imageFault != 0 {
			fi, id := int(cs.imageFaultIdx), cs.imageFault-1
			e.notApplied(fi, id, -1, p, c, "pod removed before the container ran the new image")
			e.faultEnd(fi, id, p, c)
			cs.imageFault = 0
		}
		if cs.pullFault != 0 {
			e.endPullFault(p, c, "pod removed")
		}
	}
}

// podFaults returns the fault state of container c of p, allocating the
// pod's fault state on first use.
func (e *engine) podFaults(p *pod, c int) *ctrFault {
	if p.fx == nil {
		p.fx = make([]ctrFault, len(p.cs))
	}
	return &p.fx[c]
}

// eligible reports whether p can be hit by container-level fault fi.
func (e *engine) eligible(fi int, p *pod) bool {
	return p.id != 0 && p.node >= 0 && !p.removing && e.faults[fi].match[p.wl]
}

// pickPods fills e.candidate with the slots of the pods a timed
// container-level fault hits, in increasing slot order. A few pods
// (PodCount, or the default one) are found by rejection sampling over the
// slots, which is uniform over the eligible pods and does not scan; a
// fraction, or a sparse population, falls back to a scan.
func (e *engine) pickPods(fi int) {
	f := &e.faults[fi]
	t := &f.spec.Where
	e.candidate = e.candidate[:0]
	if t.PodFraction == 0 && e.slots.n > 0 {
		want := max(t.PodCount, 1)
		for tries := 0; tries < 32*want && len(e.candidate) < want; tries++ {
			slot := int32(f.pick.IntN(int(e.slots.n)))
			if !e.eligible(fi, e.pod(slot)) || slices.Contains(e.candidate, slot) {
				continue
			}
			e.candidate = append(e.candidate, slot)
		}
		if len(e.candidate) == want {
			slices.Sort(e.candidate)
			return
		}
		e.candidate = e.candidate[:0]
	}
	all := e.candidate
	for i := range e.slots.n {
		if e.eligible(fi, e.pod(i)) {
			all = append(all, int32(i))
		}
	}
	picked := faults.Sample(len(all), t.PickCount(len(all)), f.pick)
	for i, j := range picked {
		all[i] = all[j]
	}
	e.candidate = all[:len(picked)]
}
