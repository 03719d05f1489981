package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sidebench/sidebench/harness/agentlog"
	"github.com/sidebench/sidebench/harness/backend/drive"
	"github.com/sidebench/sidebench/harness/behavior"
	"github.com/sidebench/sidebench/harness/chaos"
	"github.com/sidebench/sidebench/harness/faults"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/reference-impl/api"
)

// Faults on the kube backend, in order of preference:
//
//  1. Chaos Mesh, when the cluster serves its CRDs: the objects of
//     harness/chaos, labelled with the run, deleted at the end;
//     process kills (kubelet-crash, runtime-restart) need chaosd's
//     PhysicalMachine objects, given per node (--physical-machine), and
//     count once Chaos Mesh reports them injected; on a cluster sidebench
//     runs, node operations are used instead (they honour the downtime);
//  2. a fallback that needs no Chaos Mesh: oom-kill through the agent
//     (`sidebench-agent oom` exec'd in the target container makes it grow
//     its memory until the kernel OOM-kills it under its real limit), and
//     kubelet-crash / runtime-restart (keep containers) through node-level
//     operations when sidebench runs the cluster itself (local containerd
//     tier);
//  3. otherwise fault.not-applied with the reason, never counted as
//     applied.
//
// A firing counts as applied only once its effect is seen: the container
// exited OOMKilled, the kubelet or runtime process was killed.

// effectWait bounds how long a firing waits for its effect.
var effectWait = 30 * time.Second // a var: tests shorten it

func (tr *trial) event(e history.Event) {
	if e.T == 0 {
		e.T = now()
	}
	tr.mu.Lock()
	tr.global = append(tr.global, e)
	tr.mu.Unlock()
}

// scheduleFaults starts one goroutine per timed fault of the scenario.
func (tr *trial) scheduleFaults(ctx context.Context) {
	drive.ScheduleFaults(ctx, tr.b.clock(), &tr.faultWG, tr.start, tr.p, "kube", &tr.flog, tr.allDone, false,
		func(f drive.Firing) { tr.fire(ctx, f.Spec, f.Index, f.Label, f.N, f.Rand) })
}

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

// fire applies one firing of a fault.
func (tr *trial) fire(ctx context.Context, sp *faults.Spec, index int, label string, firing int, rng faults.Rand) {
	switch sp.Kind {
	case faults.OOMKill:
		tr.oomKill(ctx, sp, index, label, firing, rng)
	case faults.ProbeFailure:
		tr.probeFailure(ctx, sp, label, rng)
	case faults.ImageChange:
		tr.imageChange(ctx, sp, label, rng)
	case faults.KubeletCrash, faults.RuntimeRestart:
		if sp.Kind == faults.RuntimeRestart && sp.Mode == faults.KillContainers {
			tr.flog.NotApplied(sp, label, "", "", "", "runtime-restart kill-containers: containerd's shims keep the containers; losing them is not injected on the kube backend")
			return
		}
		if sp.Kind == faults.KubeletCrash && sp.RecoveryCrash {
			tr.flog.NotApplied(sp, label, "", "", "", "kubelet-crash recoveryCrash is not supported on the kube backend")
			return
		}
		if tr.b.cl.Ops != nil {
			// Node operations of a cluster sidebench runs: exact downtime.
			for _, k := range sp.Where.PickNodes(len(tr.b.cl.Nodes), rng) {
				if k >= len(tr.b.cl.Nodes) {
					tr.flog.NotApplied(sp, label, "", "", "", fmt.Sprintf("node index %d: the cluster has %d nodes", k, len(tr.b.cl.Nodes)))
					continue
				}
				tr.faultWG.Add(1)
				go func() {
					defer tr.faultWG.Done()
					tr.nodeProcess(sp, label, k)
				}()
			}
			return
		}
		if tr.b.chaos == nil {
			tr.flog.NotApplied(sp, label, "", "", "", "no node access (the cluster is not run by sidebench) and no Chaos Mesh on the cluster")
			return
		}
		tr.processChaos(ctx, sp, index, label, firing, rng)
	default:
		why := sp.Kind.String() + ": no fallback without Chaos Mesh on the kube backend"
		if reason, bad := chaos.Unsupported(*sp); bad {
			why = reason
		}
		tr.flog.NotApplied(sp, label, "", "", "", why)
	}
}

// nodeProcess kills the kubelet or the runtime of node k (node-level
// operations of a cluster sidebench runs) and restarts it after the
// downtime.
func (tr *trial) nodeProcess(sp *faults.Spec, label string, k int) {
	ops := tr.b.cl.Ops
	node := tr.b.cl.Nodes[k]
	kill, start, down, up, what := ops.KillKubelet, ops.StartKubelet, history.KubeletDown, history.KubeletUp, "kubelet"
	if sp.Kind == faults.RuntimeRestart {
		kill, start, down, up, what = ops.KillRuntime, ops.StartRuntime, history.RuntimeDown, history.RuntimeUp, "runtime"
	}
	target := node + "/" + what
	fid := tr.flog.NewID()
	tr.flog.Event(history.FaultBegin, sp, fid, node, "", "", target, label)
	if err := kill(k); err != nil {
		tr.flog.Event(history.FaultNotApplied, sp, fid, node, "", "", target, "SIGKILL failed: "+err.Error())
		tr.flog.Event(history.FaultEnd, sp, fid, node, "", "", target, "")
		return
	}
	tr.event(history.Event{Kind: down, Node: node})
	tr.flog.Applied()
	tr.flog.Event(history.FaultEffect, sp, fid, node, "", "", target, what+" process SIGKILLed")
	time.Sleep(sp.Downtime) // served even when the trial ends: the process must come back
	rctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := start(rctx, k); err != nil {
		tr.flog.Event(history.FaultEnd, sp, fid, node, "", "", target, what+" restart failed: "+err.Error())
		return
	}
	tr.event(history.Event{Kind: up, Node: node})
	tr.flog.Event(history.FaultEnd, sp, fid, node, "", "", target, "")
}

// hit is one pod and container a container-level fault firing picked.
type hit struct {
	p  *podState
	ci int // index into p.wl.world.Containers
}

// pickHits picks a firing's targets as sim does: among the live,
// scheduled pods matching the target for which ok holds, the target's
// count of pods (faults.Sample), then one matching container in each
// (PickContainer with probe). Pods without a matching container are
// recorded not applied; no candidate at all is recorded with why.
func (tr *trial) pickHits(sp *faults.Spec, label string, probe api.ProbeKind, rng faults.Rand, why string, ok func(p *podState) bool) []hit {
	tr.mu.Lock()
	var cand []*podState
	for _, p := range tr.order {
		if p.created && !p.deleting && !p.removed && p.rec.Node != "" && sp.Where.MatchPod(&p.wl.world) && ok(p) {
			cand = append(cand, p)
		}
	}
	tr.mu.Unlock()
	if len(cand) == 0 {
		tr.flog.NotApplied(sp, label, "", "", "", why)
		return nil
	}
	var out []hit
	for _, j := range faults.Sample(len(cand), sp.Where.PickCount(len(cand)), rng) {
		p := cand[j]
		ci := sp.Where.PickContainer(&p.wl.world, sp.Kind, probe, rng)
		if ci < 0 {
			tr.flog.NotApplied(sp, label, p.rec.Node, p.rec.Name, "", "no container matches the target")
			continue
		}
		out = append(out, hit{p, ci})
	}
	return out
}

// oomKill OOM-kills the target container of live pods: through a Chaos
// Mesh StressChaos when available, else through the agent.
func (tr *trial) oomKill(ctx context.Context, sp *faults.Spec, index int, label string, firing int, rng faults.Rand) {
	hits := tr.pickHits(sp, label, 0, rng, "no running pod matches the target", func(p *podState) bool { return len(p.running) > 0 })
	for _, h := range hits {
		p, ci := h.p, h.ci
		c := p.wl.world.Containers[ci].Name
		limit := memoryLimit(p.wl.tmpl, c)
		if limit <= 0 {
			tr.flog.NotApplied(sp, label, p.rec.Node, p.rec.Name, c, "the container has no memory limit: an OOM kill would hit the node, not the container")
			continue
		}
		fid := tr.flog.NewID()
		target := p.rec.Name + "/" + c
		begin := now()
		tr.flog.Event(history.FaultBegin, sp, fid, p.rec.Node, p.rec.Name, c, target, label)
		var err error
		how := "agent memory growth"
		if tr.b.chaos != nil {
			how = "Chaos Mesh StressChaos"
			err = tr.createChaos(ctx, sp, index, chaos.Hit{Pods: chaos.Pods{Names: []string{p.name}}, Container: c, MemoryLimit: limit, Firing: firing})
		} else {
			var out, errb bytes.Buffer
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err = tr.b.exec(cctx, tr.ns, p.name, c, []string{agentBinary, "oom"}, &out, &errb)
			cancel()
			if err != nil && errb.Len() > 0 {
				err = fmt.Errorf("%w: %s", err, bytes.TrimSpace(errb.Bytes()))
			}
		}
		if err != nil {
			tr.flog.Event(history.FaultNotApplied, sp, fid, p.rec.Node, p.rec.Name, c, target, how+": "+err.Error())
			tr.flog.Event(history.FaultEnd, sp, fid, p.rec.Node, p.rec.Name, c, target, "")
			continue
		}
		if t, ok := tr.waitOOM(ctx, p, c, begin); ok {
			tr.flog.Applied()
			tr.event(history.Event{T: t, Kind: history.FaultEffect, Fault: sp.Kind.String(), FaultID: fid, Node: p.rec.Node, Pod: p.rec.Name, Container: c, Target: target, Msg: "exited 137 OOMKilled (" + how + ")"})
		} else {
			tr.flog.Event(history.FaultNotApplied, sp, fid, p.rec.Node, p.rec.Name, c, target, how+": no OOMKilled exit seen within "+effectWait.String())
		}
		tr.flog.Event(history.FaultEnd, sp, fid, p.rec.Node, p.rec.Name, c, target, "")
	}
}

// waitOOM waits for an OOMKilled exit of container c seen after since.
func (tr *trial) waitOOM(ctx context.Context, p *podState, c string, since int64) (int64, bool) {
	deadline := time.Now().Add(effectWait)
	for time.Now().Before(deadline) {
		tr.mu.Lock()
		for _, x := range p.rec.Exits {
			if x.Container == c && x.T >= since && x.Reason == behavior.ReasonOOMKilled {
				tr.mu.Unlock()
				return x.T, true
			}
		}
		gone := p.removed
		tr.mu.Unlock()
		if gone || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return 0, false
}

// createChaos creates the Chaos Mesh objects of one firing in the trial's
// namespace (deleted with it, or by label at the end of the run).
func (tr *trial) createChaos(ctx context.Context, sp *faults.Spec, index int, hit chaos.Hit) error {
	objs, err := chaos.ForFault(chaos.Env{RunID: tr.b.runID, Namespace: tr.ns}, *sp, index, hit)
	if err != nil {
		return err
	}
	return tr.createObjects(ctx, objs)
}

// processChaos kills the kubelet or containerd of the picked nodes with a
// PhysicalMachineChaos (chaosd on each node, registered with
// --physical-machine). The kill counts once Chaos Mesh reports it
// injected; the downtime is whatever the node's service manager does, not
// the scenario's. The object is deleted after the scenario's downtime.
func (tr *trial) processChaos(ctx context.Context, sp *faults.Spec, index int, label string, firing int, rng faults.Rand) {
	var nodes []string
	for _, k := range sp.Where.PickNodes(len(tr.nodes), rng) {
		if k < len(tr.nodes) {
			nodes = append(nodes, tr.nodes[k])
		}
	}
	var missing []string
	for _, n := range nodes {
		if _, ok := tr.b.opts.PhysicalMachines[n]; !ok {
			missing = append(missing, n)
		}
	}
	if len(nodes) == 0 || len(missing) > 0 {
		tr.flog.NotApplied(sp, label, "", "", "", fmt.Sprintf("no chaosd PhysicalMachine registered for node(s) %v (--physical-machine NODE=NAMESPACE/NAME)", missing))
		return
	}
	target := fmt.Sprintf("%v/%s", nodes, map[faults.Kind]string{faults.KubeletCrash: "kubelet", faults.RuntimeRestart: "containerd"}[sp.Kind])
	fid := tr.flog.NewID()
	tr.flog.Event(history.FaultBegin, sp, fid, "", "", "", target, label)
	objs, err := chaos.ForFault(chaos.Env{RunID: tr.b.runID, Namespace: tr.ns, PhysicalMachines: tr.b.opts.PhysicalMachines}, *sp, index, chaos.Hit{Nodes: nodes, Firing: firing})
	if err == nil {
		err = tr.createObjects(ctx, objs)
	}
	if err != nil {
		tr.flog.Event(history.FaultNotApplied, sp, fid, "", "", "", target, "Chaos Mesh: "+err.Error())
		tr.flog.Event(history.FaultEnd, sp, fid, "", "", "", target, "")
		return
	}
	if n, ok := tr.waitInjected(ctx, objs); ok {
		tr.flog.Applied()
		tr.flog.Event(history.FaultEffect, sp, fid, "", "", "", target, fmt.Sprintf("Chaos Mesh reports %d target(s) injected (PhysicalMachineChaos)", n))
	} else {
		tr.flog.Event(history.FaultNotApplied, sp, fid, "", "", "", target, "Chaos Mesh did not report the injection within "+effectWait.String())
	}
	drive.SleepUntil(ctx, tr.b.clock(), tr.b.clock().Now().Add(sp.Downtime))
	for _, o := range objs {
		_ = tr.b.chaos.Delete(context.Background(), o)
	}
	tr.flog.Event(history.FaultEnd, sp, fid, "", "", "", target, "")
}

func (tr *trial) createObjects(ctx context.Context, objs []chaos.Object) error {
	var errs []error
	for _, o := range objs {
		errs = append(errs, tr.b.chaos.Create(ctx, o))
	}
	return errors.Join(errs...)
}

// waitInjected polls the objects until Chaos Mesh reports every one
// injected (effectWait at most); it returns the number of targets.
func (tr *trial) waitInjected(ctx context.Context, objs []chaos.Object) (int, bool) {
	deadline := time.Now().Add(effectWait)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		all, n := true, 0
		for _, o := range objs {
			cur := o.DeepCopyObject().(chaos.Object)
			if err := tr.b.chaos.Get(ctx, client.ObjectKeyFromObject(o), cur); err != nil {
				all = false
				break
			}
			done, k := chaos.Injected(cur)
			all, n = all && done, n+k
		}
		if all {
			return n, true
		}
		time.Sleep(200 * time.Millisecond)
	}
	return 0, false
}

// agentProbe names a probe kind as the agent's probe command does.
var agentProbe = map[api.ProbeKind]string{api.ProbeStartup: "startup", api.ProbeReadiness: "ready", api.ProbeLiveness: "live"}

// probeFailure makes the target container's probe fail for the fault's
// window through the agent (`sidebench-agent fail PROBE WINDOW`, exec'd:
// the probe command fails while its force-fail file exists). It counts
// once the kubelet acted on it (probeActedOn), as on sim; the agent's
// "failure forced" lines show each failed probe.
func (tr *trial) probeFailure(ctx context.Context, sp *faults.Spec, label string, rng faults.Rand) {
	// Candidates: live pods in which a container the target names, with
	// that probe, runs now (a probe of a container that does not run is
	// not probed: nothing to fail, as on sim).
	hits := tr.pickHits(sp, label, sp.Probe, rng, "no pod of the target runs a container with that probe", func(p *podState) bool {
		for _, ci := range sp.Where.Containers(&p.wl.world, sp.Kind, sp.Probe) {
			if slices.Contains(p.running, p.wl.world.Containers[ci].Name) {
				return true
			}
		}
		return false
	})
	for _, h := range hits {
		p, ci := h.p, h.ci
		c := p.wl.world.Containers[ci].Name
		tr.mu.Lock()
		running := slices.Contains(p.running, c)
		tr.mu.Unlock()
		if !running {
			// As on sim: a probe of a container that does not run is not
			// probed, so there is nothing to fail.
			tr.flog.NotApplied(sp, label, p.rec.Node, p.rec.Name, c, "container "+c+" is not running")
			continue
		}
		fid := tr.flog.NewID()
		target := p.rec.Name + "/" + c + "/" + agentProbe[sp.Probe]
		begin := now()
		tr.flog.Event(history.FaultBegin, sp, fid, p.rec.Node, p.rec.Name, c, target, label)
		tr.faultWG.Add(1)
		go func() {
			defer tr.faultWG.Done()
			// The exec lasts the window: the agent removes the file when
			// it ends or when the session is cut.
			cctx, cancel := context.WithTimeout(context.Background(), sp.Window+10*time.Second)
			defer cancel()
			var out, errb bytes.Buffer
			var err error
			done := make(chan struct{})
			go func() {
				defer close(done)
				err = tr.b.exec(cctx, tr.ns, p.name, c, []string{agentBinary, "fail", agentProbe[sp.Probe], sp.Window.String()}, &out, &errb)
			}()
			at, ok := tr.probeActedOn(p, c, sp.Probe, begin, time.Now().Add(sp.Window+2*time.Second))
			<-done
			if ok {
				tr.flog.Applied()
				tr.event(history.Event{T: at, Kind: history.FaultEffect, Fault: sp.Kind.String(), FaultID: fid, Node: p.rec.Node, Pod: p.rec.Name, Container: c, Target: target,
					Msg: "the kubelet acted on the forced " + agentProbe[sp.Probe] + " probe failure"})
			} else {
				why := "the kubelet did not act on the failing probe within the window (failureThreshold not reached, the pod deleted, or the probe not run)"
				if err != nil {
					why = fmt.Sprintf("exec: %v %s", err, bytes.TrimSpace(errb.Bytes()))
				}
				tr.flog.Event(history.FaultNotApplied, sp, fid, p.rec.Node, p.rec.Name, c, target, why)
			}
			tr.flog.Event(history.FaultEnd, sp, fid, p.rec.Node, p.rec.Name, c, target, "")
		}()
	}
}

// probeActedOn waits (until deadline) for the kubelet to act on a probe
// failing since since, as sim counts a probe-failure applied only once the
// prober's result flipped (failureThreshold failures): readiness, the
// container's Ready=false published; liveness and startup, the container
// stopped (its SIGTERM line or an exit in the status).
func (tr *trial) probeActedOn(p *podState, c string, probe api.ProbeKind, since int64, deadline time.Time) (int64, bool) {
	for {
		tr.mu.Lock()
		if probe == api.ProbeReadiness {
			for _, e := range p.rec.Observed {
				if e.Kind == history.ContainerReady && e.Container == c && !e.Value && e.T >= since {
					tr.mu.Unlock()
					return e.T, true
				}
			}
		} else {
			for _, l := range p.rec.Lines {
				if l.Container == c && l.Event == agentlog.Sigterm && l.T >= since {
					tr.mu.Unlock()
					return l.T, true
				}
			}
			for _, x := range p.rec.Exits {
				if x.Container == c && x.T >= since {
					tr.mu.Unlock()
					return x.T, true
				}
			}
		}
		gone := p.removed || p.deleting
		tr.mu.Unlock()
		if gone || time.Now().After(deadline) {
			return 0, false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// imageChange switches the target container of live pods between the
// agent's two names (Options.Image, Options.AltImage) with a patch of the
// pod spec, the only in-place change Kubernetes allows a container: the
// kubelet must restart that container alone (INV-U1). The scenario's own
// image name is recorded in the message; the pod runs the agent either
// way. container.image-changed is written at the patch call, as sim writes
// it when the spec changes.
func (tr *trial) imageChange(ctx context.Context, sp *faults.Spec, label string, rng faults.Rand) {
	for _, h := range tr.pickHits(sp, label, 0, rng, "no live pod matches the target", func(*podState) bool { return true }) {
		p, ci := h.p, h.ci
		c := p.wl.world.Containers[ci]
		field := "containers"
		if c.Role != api.RoleMain {
			field = "initContainers"
		}
		tr.mu.Lock()
		if p.images == nil {
			p.images = map[string]string{}
		}
		cur := p.images[c.Name]
		if cur == "" {
			cur = tr.b.opts.Image
		}
		next := tr.b.opts.AltImage
		if cur == next {
			next = tr.b.opts.Image
		}
		tr.mu.Unlock()
		// A terminating pod takes the patch too: the kubelet sees the new
		// spec and must restart nothing for it (INV-U1, T10; issue 16 A10).
		fid := tr.flog.NewID()
		target := p.rec.Name + "/" + c.Name
		tr.flog.Event(history.FaultBegin, sp, fid, p.rec.Node, p.rec.Name, c.Name, target, label)
		tr.mu.Lock()
		p.observed(history.Event{T: now(), Kind: history.ContainerImageChanged, Container: c.Name, Msg: next})
		tr.mu.Unlock()
		patch, _ := json.Marshal(map[string]any{"spec": map[string]any{field: []map[string]string{{"name": c.Name, "image": next}}}})
		_, err := tr.b.cs.CoreV1().Pods(tr.ns).Patch(ctx, p.name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		if err != nil {
			tr.flog.Event(history.FaultNotApplied, sp, fid, p.rec.Node, p.rec.Name, c.Name, target, "patch: "+err.Error())
		} else {
			tr.mu.Lock()
			p.images[c.Name] = next
			tr.mu.Unlock()
			tr.flog.Applied()
			tr.flog.Event(history.FaultEffect, sp, fid, p.rec.Node, p.rec.Name, c.Name, target, fmt.Sprintf("spec image %s (the scenario's %q; the pod runs the agent)", next, sp.Image))
		}
		tr.flog.Event(history.FaultEnd, sp, fid, p.rec.Node, p.rec.Name, c.Name, target, "")
	}
}
