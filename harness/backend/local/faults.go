package local

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/sidebench/sidebench/harness/backend/drive"
	"github.com/sidebench/sidebench/harness/faults"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/reference-impl/api"
)

// Faults on the local backend are real: the kubelet process is SIGKILLed
// and restarted, the CRI socket stops being served, the CRI server exits a
// container 137 OOMKilled or removes exited records, a power-off kills the
// kubelet and drops every sandbox. Each firing writes fault.begin, then
// fault.effect once the effect is verified (the process is gone, the
// socket refuses connections, the exit happened), then fault.end; a fault
// that cannot take effect writes fault.not-applied and is not counted as
// applied.

// scheduleFaults starts one goroutine per timed fault of the scenario.
func (tr *trial) scheduleFaults(ctx context.Context) {
	drive.ScheduleFaults(ctx, tr.b.clock(), &tr.faulWG, tr.start, tr.p, "local", &tr.flog, tr.allDone,
		func(f drive.Firing) { tr.fire(ctx, f.Spec, f.Label, f.Rand) })
}

// allDone reports whether every pod of the trial has been removed.
func (tr *trial) allDone() bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, p := range tr.order {
		if !p.removed {
			return false
		}
	}
	return true
}

// fire applies one firing of a fault (in the background for faults with a
// downtime).
func (tr *trial) fire(ctx context.Context, sp *faults.Spec, label string, rng faults.Rand) {
	nodes := len(tr.b.cl.Nodes)
	switch sp.Kind {
	case faults.KubeletCrash, faults.RuntimeRestart, faults.NodePoweroff, faults.ContainerGC:
		for _, k := range sp.Where.PickNodes(nodes, rng) {
			if k >= nodes {
				tr.flog.NotApplied(sp, label, "", "", "", fmt.Sprintf("node index %d: the cluster has %d nodes", k, nodes))
				continue
			}
			tr.faulWG.Add(1)
			go func() {
				defer tr.faulWG.Done()
				switch sp.Kind {
				case faults.KubeletCrash:
					tr.kubeletCrash(ctx, sp, label, k)
				case faults.RuntimeRestart:
					tr.runtimeRestart(ctx, sp, label, k)
				case faults.NodePoweroff:
					tr.poweroff(ctx, sp, label, k)
				case faults.ContainerGC:
					tr.containerGC(sp, label, k)
				}
			}()
		}
	case faults.OOMKill:
		tr.oomKill(sp, label, rng)
	default:
		tr.flog.NotApplied(sp, label, "", "", "", sp.Kind.String()+" is not supported on the local backend yet")
	}
}

func (tr *trial) kubeletCrash(ctx context.Context, sp *faults.Spec, label string, k int) {
	ns := tr.b.node[k]
	node := tr.b.cl.Nodes[k].Name
	target := node + "/kubelet"
	crash := func() bool {
		ns.mu.Lock()
		if ns.kubeletDown {
			ns.mu.Unlock()
			tr.flog.NotApplied(sp, label, node, "", "", "the kubelet is already down")
			return false
		}
		ns.kubeletDown = true
		ns.mu.Unlock()
		fid := tr.flog.NewID()
		tr.flog.Event(history.FaultBegin, sp, fid, node, "", "", target, label)
		err := tr.b.cl.KillKubelet(k)
		if err != nil {
			tr.flog.Event(history.FaultNotApplied, sp, fid, node, "", "", target, "SIGKILL failed: "+err.Error())
			tr.flog.Event(history.FaultEnd, sp, fid, node, "", "", target, "")
			ns.mu.Lock()
			ns.kubeletDown = false
			ns.mu.Unlock()
			return false
		}
		tr.emit(history.Event{Kind: history.KubeletDown, Node: node})
		tr.flog.Applied()
		tr.flog.Event(history.FaultEffect, sp, fid, node, "", "", target, "kubelet process SIGKILLed and gone")
		time.Sleep(sp.Downtime) // the downtime is served even when the trial ends: the kubelet must come back
		rctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		if err := tr.b.cl.StartKubelet(rctx, k); err != nil {
			tr.flog.Event(history.FaultEnd, sp, fid, node, "", "", target, "kubelet restart failed: "+err.Error())
			return false
		}
		tr.emit(history.Event{Kind: history.KubeletUp, Node: node})
		ns.mu.Lock()
		ns.kubeletDown = false
		ns.mu.Unlock()
		tr.flog.Event(history.FaultEnd, sp, fid, node, "", "", target, "")
		return true
	}
	if crash() && sp.RecoveryCrash {
		d := sp.RecoveryCrashAfter
		if d <= 0 {
			d = faults.DefaultRecoveryCrashAfter
		}
		time.Sleep(d)
		crash()
	}
}

// socketRefuses reports whether nothing accepts connections on path.
func socketRefuses(path string) bool {
	c, err := net.DialTimeout("unix", path, 500*time.Millisecond)
	if err != nil {
		return true
	}
	c.Close()
	return false
}

func (tr *trial) runtimeRestart(ctx context.Context, sp *faults.Spec, label string, k int) {
	ns := tr.b.node[k]
	n := tr.b.cl.Nodes[k]
	target := n.Name + "/runtime"
	ns.mu.Lock()
	if ns.runtimeDown {
		ns.mu.Unlock()
		tr.flog.NotApplied(sp, label, n.Name, "", "", "the runtime is already down")
		return
	}
	ns.runtimeDown = true
	ns.mu.Unlock()
	defer func() {
		ns.mu.Lock()
		ns.runtimeDown = false
		ns.mu.Unlock()
	}()
	fid := tr.flog.NewID()
	tr.flog.Event(history.FaultBegin, sp, fid, n.Name, "", "", target, label)
	n.Runtime.Stop()
	tr.emit(history.Event{Kind: history.RuntimeDown, Node: n.Name})
	if sp.Mode == faults.KillContainers {
		n.Runtime.LoseAll("runtime restarted")
	}
	if socketRefuses(n.CRISocket) {
		tr.flog.Applied()
		tr.flog.Event(history.FaultEffect, sp, fid, n.Name, "", "", target, "CRI socket refuses connections")
	} else {
		tr.flog.Event(history.FaultNotApplied, sp, fid, n.Name, "", "", target, "CRI socket still accepts connections")
	}
	time.Sleep(sp.Downtime)
	if err := n.Runtime.ListenAndServe(n.CRISocket); err != nil {
		tr.flog.Event(history.FaultEnd, sp, fid, n.Name, "", "", target, "runtime restart failed: "+err.Error())
		return
	}
	for i := 0; i < 50 && socketRefuses(n.CRISocket); i++ {
		time.Sleep(20 * time.Millisecond)
	}
	tr.emit(history.Event{Kind: history.RuntimeUp, Node: n.Name})
	tr.flog.Event(history.FaultEnd, sp, fid, n.Name, "", "", target, "")
}

func (tr *trial) poweroff(ctx context.Context, sp *faults.Spec, label string, k int) {
	ns := tr.b.node[k]
	n := tr.b.cl.Nodes[k]
	if !sp.Return {
		tr.flog.NotApplied(sp, label, n.Name, "", "", "a node that stays down needs a node lifecycle controller (none on the local backend); use return: true")
		return
	}
	ns.mu.Lock()
	if ns.kubeletDown || ns.runtimeDown {
		ns.mu.Unlock()
		tr.flog.NotApplied(sp, label, n.Name, "", "", "the node's kubelet or runtime is already down")
		return
	}
	ns.kubeletDown, ns.runtimeDown = true, true
	ns.mu.Unlock()
	defer func() {
		ns.mu.Lock()
		ns.kubeletDown, ns.runtimeDown = false, false
		ns.mu.Unlock()
	}()
	fid := tr.flog.NewID()
	tr.flog.Event(history.FaultBegin, sp, fid, n.Name, "", "", n.Name, label)
	kerr := tr.b.cl.KillKubelet(k)
	tr.emit(history.Event{Kind: history.KubeletDown, Node: n.Name})
	n.Runtime.Stop()
	tr.emit(history.Event{Kind: history.RuntimeDown, Node: n.Name})
	lost := n.Runtime.LoseAll("node powered off")
	tr.emit(history.Event{Kind: history.NodeDown, Node: n.Name})
	if kerr != nil || !socketRefuses(n.CRISocket) {
		tr.flog.Event(history.FaultNotApplied, sp, fid, n.Name, "", "", n.Name, fmt.Sprintf("power-off incomplete: kubelet kill: %v", kerr))
	} else {
		tr.flog.Applied()
		tr.flog.Event(history.FaultEffect, sp, fid, n.Name, "", "", n.Name, "kubelet SIGKILLed, CRI socket closed, "+strconv.Itoa(lost)+" sandboxes lost")
	}
	time.Sleep(sp.Downtime)
	if err := n.Runtime.ListenAndServe(n.CRISocket); err != nil {
		tr.flog.Event(history.FaultEnd, sp, fid, n.Name, "", "", n.Name, "runtime restart failed: "+err.Error())
		return
	}
	rctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	err := tr.b.cl.StartKubelet(rctx, k)
	tr.emit(history.Event{Kind: history.NodeUp, Node: n.Name})
	tr.emit(history.Event{Kind: history.RuntimeUp, Node: n.Name})
	if err != nil {
		tr.flog.Event(history.FaultEnd, sp, fid, n.Name, "", "", n.Name, "kubelet restart failed: "+err.Error())
		return
	}
	tr.emit(history.Event{Kind: history.KubeletUp, Node: n.Name})
	tr.flog.Event(history.FaultEnd, sp, fid, n.Name, "", "", n.Name, "")
}

func (tr *trial) containerGC(sp *faults.Spec, label string, k int) {
	n := tr.b.cl.Nodes[k]
	target := n.Name + "/runtime"
	fid := tr.flog.NewID()
	tr.flog.Event(history.FaultBegin, sp, fid, n.Name, "", "", target, label)
	removed := n.Runtime.RemoveExited(func(pod, c string) bool {
		if sp.AllExited {
			return true
		}
		tr.mu.Lock()
		ps := tr.pods[pod]
		tr.mu.Unlock()
		if ps == nil {
			return false
		}
		for i := range ps.wl.spec.Init {
			if ps.wl.spec.Init[i].Name == c {
				return ps.wl.spec.Init[i].Role == api.RoleInit
			}
		}
		return false
	})
	if removed == 0 {
		tr.flog.Event(history.FaultNotApplied, sp, fid, n.Name, "", "", target, "no exited container record to remove")
	} else {
		tr.flog.Applied()
		tr.flog.Event(history.FaultEffect, sp, fid, n.Name, "", "", target, strconv.Itoa(removed)+" exited container records removed")
	}
	tr.flog.Event(history.FaultEnd, sp, fid, n.Name, "", "", target, "")
}

func (tr *trial) oomKill(sp *faults.Spec, label string, rng faults.Rand) {
	// Live pods matching the target: created, not being deleted.
	tr.mu.Lock()
	var cand []*podState
	for _, p := range tr.order {
		if p.created && !p.deleting && !p.removed && sp.Where.MatchPod(&p.wl.world) {
			cand = append(cand, p)
		}
	}
	tr.mu.Unlock()
	if len(cand) == 0 {
		tr.flog.NotApplied(sp, label, "", "", "", "no live pod matches the target")
		return
	}
	for _, j := range faults.Sample(len(cand), sp.Where.PickCount(len(cand)), rng) {
		p := cand[j]
		ci := sp.Where.PickContainer(&p.wl.world, sp.Kind, 0, rng)
		if ci < 0 {
			tr.flog.NotApplied(sp, label, p.node, p.name, "", "no container matches the target")
			continue
		}
		c := p.wl.world.Containers[ci].Name
		k := tr.nodeIndex(p.node)
		if k < 0 {
			tr.flog.NotApplied(sp, label, "", p.name, c, "pod not bound to a node")
			continue
		}
		fid := tr.flog.NewID()
		target := p.name + "/" + c
		tr.flog.Event(history.FaultBegin, sp, fid, p.node, p.name, c, target, label)
		if _, err := tr.b.cl.Nodes[k].Runtime.OOMKill(p.name, c); err != nil {
			tr.flog.Event(history.FaultNotApplied, sp, fid, p.node, p.name, c, target, err.Error())
		} else {
			tr.flog.Applied()
			tr.flog.Event(history.FaultEffect, sp, fid, p.node, p.name, c, target, "exited 137 OOMKilled")
		}
		tr.flog.Event(history.FaultEnd, sp, fid, p.node, p.name, c, target, "")
	}
}

func (tr *trial) nodeIndex(name string) int {
	for i, n := range tr.b.cl.Nodes {
		if n.Name == name {
			return i
		}
	}
	return -1
}
