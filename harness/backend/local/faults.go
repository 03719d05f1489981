package local

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sidebench/sidebench/harness/backend/drive"
	"github.com/sidebench/sidebench/harness/cri"
	"github.com/sidebench/sidebench/harness/faults"
	"github.com/sidebench/sidebench/harness/history"
	trialplan "github.com/sidebench/sidebench/harness/trial"
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

// scheduleFaults starts one goroutine per timed fault of the scenario;
// on-container faults fire from the events the trial records (trigger).
func (tr *trial) scheduleFaults(ctx context.Context) {
	drive.ScheduleFaults(ctx, tr.b.clock(), &tr.faulWG, tr.start, tr.p, "local", &tr.flog, tr.allDone, true,
		func(f drive.Firing) { tr.fire(ctx, f) })
}

// trigger hands a recorded event to the on-container faults and runs each
// firing it triggers at its time (the event's time plus the delay) on the
// backend's clock: exact timing relative to what the kubelet and the CRI
// server actually did.
func (tr *trial) trigger(ctx context.Context, e history.Event) {
	tr.mu.Lock()
	ps := tr.pods[e.Pod]
	tr.mu.Unlock()
	if ps == nil {
		return
	}
	for _, d := range tr.trig.Observe(&e, time.Duration(e.T-tr.start.UnixNano()), &ps.wl.world) {
		tr.faulWG.Add(1)
		go func() {
			defer tr.faulWG.Done()
			if drive.SleepUntil(ctx, tr.b.clock(), tr.start.Add(d.At)) {
				tr.fire(ctx, d.Firing)
			}
		}()
	}
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
func (tr *trial) fire(ctx context.Context, f drive.Firing) {
	sp, label, rng := f.Spec, f.Label, f.Rand
	nodes := len(tr.b.cl.Nodes)
	switch sp.Kind {
	case faults.KubeletCrash, faults.RuntimeRestart, faults.NodePoweroff, faults.ContainerGC, faults.NodeShutdown:
		picked := sp.Where.PickNodes(nodes, rng)
		if f.Pod != "" {
			// On-container: the node of the pod whose event fired it.
			tr.mu.Lock()
			ps := tr.pods[f.Pod]
			tr.mu.Unlock()
			if ps == nil || tr.nodeIndex(ps.node) < 0 {
				tr.flog.NotApplied(sp, label, "", f.Pod, "", "pod not bound to a node")
				return
			}
			picked = []int{tr.nodeIndex(ps.node)}
		}
		for _, k := range picked {
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
				case faults.NodeShutdown:
					tr.nodeShutdown(sp, label, k)
				}
			}()
		}
	case faults.OOMKill, faults.ContainerKill, faults.ContainerUnknown, faults.ImagePullFailure, faults.Resize:
		tr.containerFault(ctx, sp, label, rng, f.Pod)
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
			tr.flog.Ended(sp, fid, node, "", "", target, "SIGKILL failed: "+err.Error())
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
		tr.flog.Ended(sp, fid, n.Name, "", "", target, "CRI socket still accepts connections")
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
		tr.flog.Ended(sp, fid, n.Name, "", "", n.Name, fmt.Sprintf("power-off incomplete: kubelet kill: %v", kerr))
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
		tr.flog.Ended(sp, fid, n.Name, "", "", target, "no exited container record to remove")
	} else {
		tr.flog.Applied()
		tr.flog.Event(history.FaultEffect, sp, fid, n.Name, "", "", target, strconv.Itoa(removed)+" exited container records removed")
	}
	tr.flog.Event(history.FaultEnd, sp, fid, n.Name, "", "", target, "")
}

// containerFault applies a container-level fault to the picked pods (pod,
// if set: the pod whose event fired an on-container fault), each in one
// container the target selects.
func (tr *trial) containerFault(ctx context.Context, sp *faults.Spec, label string, rng faults.Rand, pod string) {
	// Live pods matching the target: created, not being deleted.
	tr.mu.Lock()
	var cand []*podState
	for _, p := range tr.order {
		if p.created && !p.deleting && !p.removed && sp.Where.MatchPod(&p.wl.world) && (pod == "" || p.name == pod) {
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
		rt := tr.b.cl.Nodes[k].Runtime
		var effect string
		var err error
		switch sp.Kind {
		case faults.OOMKill:
			_, err = rt.OOMKill(p.name, c)
			effect = "exited 137 OOMKilled"
		case faults.ContainerKill:
			code, now := sp.KillExit()
			effect, err = rt.Kill(p.name, c, code, !now)
		case faults.ContainerUnknown:
			var attempt uint32
			attempt, err = rt.ReportUnknown(p.name, c)
			effect = fmt.Sprintf("the runtime reports the container Unknown (attempt %d)", attempt)
		case faults.Resize:
			var w *resizeWait
			if w, err = tr.resize(ctx, p, ci, c, sp); err == nil {
				tr.faulWG.Add(1)
				go func() {
					defer tr.faulWG.Done()
					tr.awaitResize(ctx, sp, fid, p, c, w)
				}()
				continue // ends with the kubelet's answer
			}
		case faults.ImagePullFailure:
			tr.faulWG.Add(1)
			go func() {
				defer tr.faulWG.Done()
				tr.pullFailure(ctx, sp, fid, p, ci, c, target, rt)
			}()
			continue // ends on its own
		}
		if err != nil {
			tr.flog.Ended(sp, fid, p.node, p.name, c, target, err.Error())
		} else {
			tr.flog.Applied()
			tr.flog.Event(history.FaultEffect, sp, fid, p.node, p.name, c, target, effect)
		}
		tr.flog.Event(history.FaultEnd, sp, fid, p.node, p.name, c, target, "")
	}
}

// pullFailure makes the CRI server fail the pulls of container c's image
// for the pod until the window ends (for good: until the trial ends), then
// records whether a pull failed (effect) or none was tried (not applied).
func (tr *trial) pullFailure(ctx context.Context, sp *faults.Spec, fid uint32, p *podState, ci int, c, target string, rt *cri.Server) {
	image := p.wl.tmplImage(ci)
	var until time.Time
	if sp.Window > 0 {
		until = tr.b.clock().Now().Add(sp.Window)
	}
	pulled := rt.FailPulls(p.name, c, image, until)
	if sp.Window > 0 {
		drive.SleepUntil(ctx, tr.b.clock(), until)
	} else {
		<-ctx.Done()
	}
	if pulled() {
		tr.flog.Applied()
		tr.flog.Event(history.FaultEffect, sp, fid, p.node, p.name, c, target, "pull of "+image+" failed: ErrImagePull, then image pull back-off")
	} else {
		tr.flog.Ended(sp, fid, p.node, p.name, c, target, "no pull of the image while its pulls failed")
	}
	tr.flog.Event(history.FaultEnd, sp, fid, p.node, p.name, c, target, "")
}

// resize patches the pod's resize subresource with container c's new
// resources (an in-place resize through the API, INV-U2) and records
// container.resize; the kubelet applies it through CRI
// UpdateContainerResources (container.resized) or restarts the container
// per its resizePolicy, which the returned wait learns (awaitResize).
// Not applied to a finished pod (among them the pods the kubelet's
// admission rejected: OutOfcpu), nor while the kubelet is down, nor when
// nothing changes (docs/faults.md).
func (tr *trial) resize(ctx context.Context, p *podState, ci int, c string, sp *faults.Spec) (*resizeWait, error) {
	tr.mu.Lock()
	cur, ok := tr.resources[p.name+"/"+c]
	phase, reason := p.phase, p.phaseReason
	tr.mu.Unlock()
	if phase == corev1.PodSucceeded || phase == corev1.PodFailed {
		why := "the pod is finished (phase " + string(phase)
		if reason != "" {
			why += ", reason " + reason
		}
		return nil, fmt.Errorf("%s)", why)
	}
	if k := tr.nodeIndex(p.node); k >= 0 && k < len(tr.b.node) {
		ns := tr.b.node[k]
		ns.mu.Lock()
		down := ns.kubeletDown
		ns.mu.Unlock()
		if down {
			return nil, fmt.Errorf("the kubelet is down")
		}
	}
	if !ok {
		cur = p.wl.spec.At(ci).Resources
	}
	next := sp.Resources.Apply(cur)
	if next == cur {
		return nil, fmt.Errorf("resources unchanged")
	}
	req := corev1.ResourceList{}
	lim := corev1.ResourceList{}
	if next.CPURequest > 0 {
		req[corev1.ResourceCPU] = *resource.NewMilliQuantity(next.CPURequest, resource.DecimalSI)
	}
	if next.MemRequest > 0 {
		req[corev1.ResourceMemory] = *resource.NewQuantity(next.MemRequest, resource.BinarySI)
	}
	if next.CPULimit > 0 {
		lim[corev1.ResourceCPU] = *resource.NewMilliQuantity(next.CPULimit, resource.DecimalSI)
	}
	if next.MemLimit > 0 {
		lim[corev1.ResourceMemory] = *resource.NewQuantity(next.MemLimit, resource.BinarySI)
	}
	list := "containers"
	if ci < len(p.wl.spec.Init) {
		list = "initContainers"
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{list: []map[string]any{{
		"name": c, "resources": map[string]any{"requests": req, "limits": lim}}}}})
	if err != nil {
		return nil, err
	}
	ns, name, _ := strings.Cut(p.name, "/")
	key := p.name + "/" + c
	w := newResizeWait(c)
	tr.mu.Lock()
	tr.resizing[key] = true // before the patch: the kubelet may act at once
	for _, old := range p.resizes {
		if old.container == c {
			old.settle(false, "superseded by the next resize of the container before the kubelet acted")
		}
	}
	p.resizes = append(p.resizes, w)
	tr.mu.Unlock()
	if _, err := tr.b.cs.CoreV1().Pods(ns).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "resize"); err != nil {
		tr.mu.Lock()
		delete(tr.resizing, key)
		p.resizes = slices.DeleteFunc(p.resizes, func(x *resizeWait) bool { return x == w })
		tr.mu.Unlock()
		return nil, fmt.Errorf("resize refused: %w", err)
	}
	tr.mu.Lock()
	tr.resources[key] = next
	tr.mu.Unlock()
	tr.emit(history.Event{Kind: history.ContainerResize, Pod: p.name, Node: p.node, Container: c,
		CPU: next.CPURequest, Mem: next.MemRequest, CPULimit: next.CPULimit, MemLimit: next.MemLimit})
	return w, nil
}

func (tr *trial) nodeIndex(name string) int {
	for i, n := range tr.b.cl.Nodes {
		if n.Name == name {
			return i
		}
	}
	return -1
}

// prepareNodeShutdown enables graceful node shutdown on every kubelet
// before a trial whose scenario has node-shutdown faults, with their
// shutdownGracePeriod and shutdownGracePeriodCriticalPods (one kubelet
// configuration: the faults of a scenario must agree). The kubelets are
// restarted with the new configuration before the trial's first event,
// and keep it for later trials. If it fails (no dbus-daemon, or a
// kubelet that takes no inhibitor lock from the fake logind), the
// scenario's node-shutdown faults are not applied, with the reason.
func (b *Backend) prepareNodeShutdown(ctx context.Context, p *trialplan.Plan) {
	var grace, critical time.Duration
	found := false
	for i := range p.Faults {
		sp := &p.Faults[i]
		if sp.Kind != faults.NodeShutdown {
			continue
		}
		if found && (sp.ShutdownGracePeriod != grace || sp.ShutdownGracePeriodCriticalPods != critical) {
			b.shutdownErr = fmt.Errorf("the node-shutdown faults of %s differ in shutdownGracePeriod/shutdownGracePeriodCriticalPods; the local backend configures every kubelet once", p.Scenario)
			return
		}
		grace, critical, found = sp.ShutdownGracePeriod, sp.ShutdownGracePeriodCriticalPods, true
	}
	if !found {
		return
	}
	if g, c, ok := b.cl.GracefulShutdown(0); ok && g == grace && c == critical {
		return
	}
	fmt.Fprintf(b.opts.Log, "sidebench: enabling graceful node shutdown on the kubelets (shutdownGracePeriod %s, shutdownGracePeriodCriticalPods %s; fake logind on a private D-Bus per node; kubelets restarted)\n", grace, critical)
	b.shutdownErr = b.cl.EnableGracefulShutdown(ctx, grace, critical)
	if b.shutdownErr != nil {
		fmt.Fprintf(b.opts.Log, "sidebench: graceful node shutdown not available: %v\n", b.shutdownErr)
	}
}

// nodeShutdown is a real graceful node shutdown (INV-F4): logind's
// PrepareForShutdown to node k's kubelet, which terminates its pods
// through the normal path within the shutdown budgets and releases its
// inhibitor lock; then, as the sim does at the end of the shutdown, the
// node powers off (kubelet and runtime gone, every sandbox lost) and,
// after downtime, comes back. Events as on sim: fault.begin, node.shutdown
// (grace = shutdownGracePeriod), the kills, kubelet.down, runtime.down,
// node.down, the lost sandboxes, fault.effect, node.up, runtime.up,
// kubelet.up, fault.end.
func (tr *trial) nodeShutdown(sp *faults.Spec, label string, k int) {
	ns := tr.b.node[k]
	n := tr.b.cl.Nodes[k]
	if !sp.Return {
		tr.flog.NotApplied(sp, label, n.Name, "", "", "a node that stays down needs a node lifecycle controller (none on the local backend); use return: true")
		return
	}
	if g, c, ok := tr.b.cl.GracefulShutdown(k); !ok || g != sp.ShutdownGracePeriod || c != sp.ShutdownGracePeriodCriticalPods {
		why := "graceful node shutdown is not enabled on the kubelets"
		if ok {
			why = fmt.Sprintf("the kubelets are configured with shutdownGracePeriod %s/%s, the fault wants %s/%s", g, c, sp.ShutdownGracePeriod, sp.ShutdownGracePeriodCriticalPods)
		}
		if tr.b.shutdownErr != nil {
			why += ": " + tr.b.shutdownErr.Error()
		}
		tr.flog.NotApplied(sp, label, n.Name, "", "", why)
		return
	}
	ns.mu.Lock()
	if ns.kubeletDown || ns.runtimeDown || ns.shutdown != nil {
		ns.mu.Unlock()
		tr.flog.NotApplied(sp, label, n.Name, "", "", "the node's kubelet or runtime is down, or it is already shutting down: graceful node shutdown needs a running kubelet")
		return
	}
	ns.shutdown = sp
	ns.mu.Unlock()
	defer func() {
		ns.mu.Lock()
		ns.shutdown = nil
		ns.kubeletDown, ns.runtimeDown = false, false
		ns.mu.Unlock()
	}()
	fid := tr.flog.NewID()
	tr.flog.Event(history.FaultBegin, sp, fid, n.Name, "", "", n.Name, label)
	tr.emit(history.Event{Kind: history.NodeShutdown, Node: n.Name, Grace: int64(sp.ShutdownGracePeriod)})
	// logind waits at most InhibitDelayMaxUSec (= shutdownGracePeriod): a
	// shutdown in progress completes even if the trial ends.
	res, err := tr.b.cl.ShutdownNode(context.Background(), k)
	if err != nil {
		tr.flog.Ended(sp, fid, n.Name, "", "", n.Name, err.Error())
		tr.flog.Event(history.FaultEnd, sp, fid, n.Name, "", "", n.Name, "")
		return
	}
	graceful, total := tr.podsStoppedOn(n.Name)
	ns.mu.Lock()
	ns.kubeletDown, ns.runtimeDown = true, true
	ns.mu.Unlock()
	// logind lets the shutdown proceed: systemd stops the services (the
	// kubelet gets SIGTERM, SIGKILL after systemd's stop timeout, here
	// shortened), then the machine is off.
	kerr := tr.b.cl.StopKubelet(k, shutdownStopTimeout)
	tr.emit(history.Event{Kind: history.KubeletDown, Node: n.Name})
	n.Runtime.Stop()
	tr.emit(history.Event{Kind: history.RuntimeDown, Node: n.Name})
	tr.emit(history.Event{Kind: history.NodeDown, Node: n.Name})
	lost := n.Runtime.LoseAll("node powered off after its shutdown")
	how := fmt.Sprintf("the kubelet released its inhibitor lock after %s", res.Waited.Round(time.Millisecond))
	if !res.Released {
		how = fmt.Sprintf("logind powered off at InhibitDelayMaxUSec (%s) with the lock still held (%s)", res.Waited.Round(time.Millisecond), strings.Join(res.Holders, "; "))
	}
	if kerr != nil || !socketRefuses(n.CRISocket) {
		tr.flog.Ended(sp, fid, n.Name, "", "", n.Name, fmt.Sprintf("power-off after the shutdown incomplete: kubelet kill: %v", kerr))
	} else {
		tr.flog.Applied()
		tr.flog.Event(history.FaultEffect, sp, fid, n.Name, "", "", n.Name, fmt.Sprintf("%s; %d of %d pods terminated gracefully; %d sandboxes lost at power-off", how, graceful, total, lost))
	}
	time.Sleep(sp.Downtime)
	if err := n.Runtime.ListenAndServe(n.CRISocket); err != nil {
		tr.flog.Event(history.FaultEnd, sp, fid, n.Name, "", "", n.Name, "runtime restart failed: "+err.Error())
		return
	}
	rctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	err = tr.b.cl.StartKubelet(rctx, k)
	tr.emit(history.Event{Kind: history.NodeUp, Node: n.Name})
	tr.emit(history.Event{Kind: history.RuntimeUp, Node: n.Name})
	if err != nil {
		tr.flog.Event(history.FaultEnd, sp, fid, n.Name, "", "", n.Name, "kubelet restart failed: "+err.Error())
		return
	}
	tr.emit(history.Event{Kind: history.KubeletUp, Node: n.Name})
	tr.flog.Event(history.FaultEnd, sp, fid, n.Name, "", "", n.Name, "")
}

// shutdownStopTimeout stands for systemd's TimeoutStopSec (90s by
// default) when the kubelet ignores SIGTERM after a node shutdown.
const shutdownStopTimeout = 10 * time.Second

// podsStoppedOn counts the trial's pods on node (created, not removed)
// and those of them with no container running (CRI view).
func (tr *trial) podsStoppedOn(node string) (stopped, total int) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, p := range tr.order {
		if p.node != node || !p.created || p.removed {
			continue
		}
		total++
		running := false
		for _, r := range p.running {
			running = running || r
		}
		if !running {
			stopped++
		}
	}
	return stopped, total
}

// shutdownKill returns the pod.terminating of a kill the kubelet starts
// because its node is shutting down (nil otherwise): reason NodeShutdown,
// grace the pod's budget (faults.Spec.BudgetFor: the regular or critical
// share of shutdownGracePeriod, or the pod's own grace if shorter).
func (tr *trial) shutdownKill(ps *podState, e *history.Event, ordered bool) *history.Event {
	k := tr.nodeIndex(ps.node)
	if k < 0 {
		return nil
	}
	ns := tr.b.node[k]
	ns.mu.Lock()
	sp := ns.shutdown
	ns.mu.Unlock()
	if sp == nil {
		return nil
	}
	return &history.Event{T: e.T, Kind: history.PodTerminating, Pod: e.Pod, Node: e.Node, Reason: "NodeShutdown",
		Grace: int64(sp.BudgetFor(ps.wl.spec.Critical, ps.wl.spec.TerminationGracePeriod)), Value: ordered}
}
