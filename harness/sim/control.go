package sim

import (
	"time"

	"github.com/sidebench/sidebench/reference-impl/kubelet"

	"github.com/sidebench/sidebench/harness/behavior"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/reference-impl/api"
)

// --- arrival -------------------------------------------------------------

func (e *engine) onArrive(w int) {
	ws := &e.wls[w]
	_, n, ok := ws.arrivals.Next()
	if !ok {
		return
	}
	for i := 0; i < n && e.err == nil; i++ {
		e.createPod(w)
	}
	if next, ok := ws.arrivals.Peek(); ok {
		e.push(event{t: int64(next), evWho: evWho{slot: int32(w)}, evWhat: evWhat{kind: evArrive}})
	}
}

// createPod creates the next pod of workload w and tries to schedule it.
func (e *engine) createPod(w int) {
	ws := &e.wls[w]
	var slot int32
	if n := len(e.free); n > 0 {
		slot = e.free[n-1]
		e.free = e.free[:n-1]
	} else {
		slot = e.slots.add()
	}
	p := e.pod(slot)
	cs := p.cs // the slot's storage
	*p = pod{}
	e.nextID++
	p.id = e.nextID
	p.slot = slot
	p.wl = int32(w)
	p.node = -1
	e.nameBuf = history.AppendPodName(e.nameBuf[:0], ws.prefix, ws.created)
	p.name = string(e.nameBuf)
	p.key = behavior.PodKey(e.seed, p.name)
	ws.created++
	e.arrivalsLeft--
	p.spec = ws.spec // shared until a change (resize, image) copies it
	p.cs = cs[:ws.spec.Len()]
	clear(p.cs)
	p.createdAt = e.now
	e.live++
	if e.live > e.res.PeakLivePods {
		e.res.PeakLivePods = e.live
	}
	e.res.PodsCreated++
	e.podEvent(history.PodCreated, p)
	e.ev.Node, e.ev.Spec = "", ws.hspec
	e.write()
	if ws.lifetime {
		e.push(event{t: e.now + e.drawLifetime(p), evWho: evWho{slot: slot, id: p.id}, evWhat: evWhat{kind: evLifetime}})
	}
	e.schedule(p)
}

func copySpec(s *api.PodSpec) *api.PodSpec {
	c := *s
	c.Init = append([]api.Container(nil), s.Init...)
	c.Main = append([]api.Container(nil), s.Main...)
	return &c
}

// --- scheduling ----------------------------------------------------------

type pendingPod struct {
	slot int32
	id   uint32
}

// hasRoom reports whether node n can take a pod of workload w: it is up,
// below PodsPerNode, and the pod's effective requests (INV-Q1) fit in its
// allocatable resources next to those of the pods bound there (the
// scheduler's NodeResourcesFit and the kubelet's admission count the same
// requests).
func (e *engine) hasRoom(n *node, w int32) bool {
	c := &e.cfg.Cluster
	ws := &e.wls[w]
	return n.up && !n.shuttingDown && (c.PodsPerNode == 0 || len(n.pods) < c.PodsPerNode) &&
		(c.NodeCPU == 0 || n.usedCPU+ws.cpu <= c.NodeCPU) && (c.NodeMemory == 0 || n.usedMem+ws.mem <= c.NodeMemory)
}

// schedule binds p to the next node with room (round robin), or queues it.
func (e *engine) schedule(p *pod) {
	nn := len(e.nodes)
	if e.lostNodes == nn {
		e.removePod(p, true) // every node is gone for good
		return
	}
	for i := 0; i < nn; i++ {
		k := e.rr + i
		if k >= nn {
			k -= nn
		}
		if e.hasRoom(&e.nodes[k], p.wl) {
			e.rr = k + 1
			if e.rr == nn {
				e.rr = 0
			}
			e.bind(p, k)
			return
		}
	}
	e.pending = append(e.pending, pendingPod{p.slot, p.id})
}

func (e *engine) bind(p *pod, k int) {
	n := &e.nodes[k]
	p.node = int32(k)
	p.nodeName = n.name
	p.nidx = int32(len(n.pods))
	n.pods = append(n.pods, p.slot)
	ws := &e.wls[p.wl]
	n.usedCPU += ws.cpu
	n.usedMem += ws.mem
	e.res.PodsScheduled++
	if e.cfg.Cluster.CPUManagerStatic {
		e.allocateCPUs(p, n)
	}
	e.podEvent(history.PodScheduled, p)
	e.ev.Node, e.ev.CPU, e.ev.Mem = n.name, ws.cpu, ws.mem
	e.write()
	e.push(event{t: e.now + int64(e.cfg.Cluster.APIDelay), evWho: evWho{slot: p.slot, id: p.id}, evWhat: evWhat{kind: evBind}})
}

// allocateCPUs gives p's containers their exclusive CPUs of node n at
// admission (kubelet.AllocateCPUs). A pod whose exclusive CPUs do not fit
// runs in the shared pool (the kubelet would reject it; the sim's
// scheduler already counted its effective requests).
func (e *engine) allocateCPUs(p *pod, n *node) {
	sets := make([]kubelet.CPUSet, p.spec.Len())
	taken, ok := kubelet.AllocateCPUs(p.spec, n.freeCPUs, e.cfg.Gates, sets)
	if !ok || taken == 0 && !anySet(sets) {
		return
	}
	n.freeCPUs &^= taken
	p.cpus, p.cpuSets = taken, sets
	p.cpuNames = make([]string, len(sets))
	for i, s := range sets {
		if s != 0 {
			p.cpuNames[i] = s.String()
		}
	}
}

func anySet(s []kubelet.CPUSet) bool {
	for _, x := range s {
		if x != 0 {
			return true
		}
	}
	return false
}

// drainPending binds waiting pods to node k while it has room.
func (e *engine) drainPending(k int) {
	n := &e.nodes[k]
	for e.pendHd < len(e.pending) {
		pp := e.pending[e.pendHd]
		p := e.pod(pp.slot)
		if p.id != pp.id || p.node >= 0 || p.deleted {
			e.pendHd++
			continue
		}
		if !e.hasRoom(n, p.wl) {
			break // FIFO: the head waits for room
		}
		e.pendHd++
		e.bind(p, k)
	}
	if e.pendHd == len(e.pending) {
		e.pending = e.pending[:0]
		e.pendHd = 0
	} else if e.pendHd > 1024 && e.pendHd*2 > len(e.pending) {
		e.pending = append(e.pending[:0], e.pending[e.pendHd:]...)
		e.pendHd = 0
	}
}

// onBind: the kubelet of the pod's node sees the binding.
func (e *engine) onBind(p *pod) {
	p.bindSeen = true
	n := &e.nodes[p.node]
	if n.up && n.kubeletUp && !n.kubeletIdle {
		e.startMachine(p)
	}
}

// startMachine gives p a fresh machine (a kubelet with no memory) and
// relists the runtime's records into it, then replays what the API server
// holds for the pod (deletion, node shutdown).
func (e *engine) startMachine(p *pod) {
	if p.kdone {
		return
	}
	if err := e.scratch.InitMachine(&p.m, p.spec, e.cfg.Gates, e.slots.obs(p, len(p.cs))); err != nil {
		e.err = e.podErr(p, "new machine", err)
		return
	}
	p.hasM = true
	p.mgen++
	p.wgen++
	p.wakeAt = int64(api.Never)
	e.relist = e.relist[:0]
	for c := range p.cs {
		e.relist = append(e.relist, p.cs[c].rec)
		p.cs[c].unseen = false // the relist carries every record
	}
	in := api.Input{Kind: api.InRelist, Sandbox: p.sandbox, Records: e.relist, Status: p.status,
		Deleted: p.deleteSeen, Grace: time.Duration(p.deleteGrace)}
	// The new kubelet's prober starts for running containers; a passed
	// startup probe is not re-run (the API server shows Started).
	for c := range p.cs {
		if p.cs[c].rec.State == api.StateRunning && !p.cs[c].starting {
			p.cs[c].pgen++
			e.startProbes(p, c, p.status.Started.Has(c))
		}
	}
	e.step(p, &in)
	n := &e.nodes[p.node]
	if n.shuttingDown && p.shutdown == 0 {
		// A pod the kubelet meets during a node shutdown is shut down too.
		p.shutdown = max(int64(e.faults[n.nFaultIdx].spec.BudgetFor(p.spec.Critical, p.spec.TerminationGracePeriod)), 1)
	}
	if p.shutdown > 0 && p.hasM && n.shuttingDown {
		in = api.Input{Kind: api.InNodeShutdown, Grace: time.Duration(p.shutdown)}
		e.step(p, &in)
	}
}

// --- deletion and removal ------------------------------------------------

func (e *engine) deletePod(p *pod, grace int64) {
	if p.deleted {
		return
	}
	p.deleted = true
	p.deleteGrace = grace
	e.podEvent(history.PodDeleted, p)
	e.ev.Node, e.ev.Grace = "", grace
	if p.node >= 0 {
		e.ev.Node = e.nodes[p.node].name
	}
	e.write()
	switch {
	case p.node < 0:
		e.removePod(p, false) // never scheduled: nothing to stop
	case p.kdone:
		e.scheduleRemoval(p)
	default:
		e.push(event{t: e.now + int64(e.cfg.Cluster.APIDelay), evWho: evWho{slot: p.slot, id: p.id}, evWhat: evWhat{kind: evDeliverDelete}})
	}
}

func (e *engine) onDeliverDelete(p *pod) {
	p.deleteSeen = true
	if p.hasM {
		in := api.Input{Kind: api.InDelete, Grace: time.Duration(p.deleteGrace)}
		e.step(p, &in)
	}
}

func (e *engine) scheduleRemoval(p *pod) {
	if p.removing {
		return
	}
	p.removing = true
	e.push(event{t: e.now + int64(e.cfg.Cluster.APIDelay), evWho: evWho{slot: p.slot, id: p.id}, evWhat: evWhat{kind: evRemove}})
}

// removePod writes pod.removed and releases the pod's memory and node room.
func (e *engine) removePod(p *pod, lost bool) {
	e.closePodFaults(p)
	e.podEvent(history.PodRemoved, p)
	e.ev.Node = ""
	k := int(p.node)
	if k >= 0 {
		e.ev.Node = e.nodes[k].name
	}
	if lost {
		e.ev.Reason = "NodeLost"
	}
	e.write()
	e.res.PodsRemoved++
	if lost {
		e.res.PodsLost++
	} else {
		e.res.PodsCompleted++
	}
	if k >= 0 {
		n := &e.nodes[k]
		n.usedCPU -= e.wls[p.wl].cpu
		n.usedMem -= e.wls[p.wl].mem
		n.freeCPUs |= p.cpus // released when the pod is gone
		i := p.nidx
		last := int32(len(n.pods) - 1)
		if i != last {
			moved := n.pods[last]
			n.pods[i] = moved
			e.pod(moved).nidx = i
		}
		n.pods = n.pods[:last]
	}
	p.id = 0
	e.releaseMachine(p)
	p.name = ""
	p.spec = nil
	e.free = append(e.free, p.slot)
	e.live--
	if k >= 0 && !lost {
		e.drainPending(k)
	}
}

// afterDrive applies the control plane's reaction to what the kubelet
// published.
func (e *engine) afterDrive(p *pod) {
	if p.hasM && !p.kdone && p.m.Done() {
		p.kdone = true
		e.releaseMachine(p) // the kubelet forgets a finished pod
		p.mgen++
		p.wgen++
		if p.deleted {
			e.scheduleRemoval(p)
		}
		if p.node >= 0 && !p.spec.Critical {
			e.maybeShutdownCritical(int(p.node))
		}
	}
}

// releaseMachine drops p's kubelet (the machine's storage stays in the
// slot for the next one).
func (e *engine) releaseMachine(p *pod) {
	p.hasM = false
}
