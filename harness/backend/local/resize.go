package local

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/sidebench/sidebench/harness/faults"
	"github.com/sidebench/sidebench/harness/history"
)

// resizeConds are the pod conditions in which the kubelet publishes what
// it made of an in-place resize (pkg/kubelet/allocation
// handlePodResourcesResize, status_manager.go SetPodResize*Condition):
// PodResizePending while its allocation manager cannot admit the new
// resources — reason Deferred (it retries: the node's allocatable is
// full) or Infeasible (it never will: feature off, swap, static CPU or
// memory manager) — and PodResizeInProgress from the allocation until the
// runtime applied it (reason Error, with the message, if actuation
// failed). Absent means false. They are written as pod.condition with
// the kubelet's reason and message, so that a resize the kubelet did not
// act on says why; the checker's invariants ignore them (docs/history.md).
var resizeConds = [...]corev1.PodConditionType{corev1.PodResizePending, corev1.PodResizeInProgress}

// resizeCond is what the pod's status last said of one resize condition.
type resizeCond struct {
	on          bool
	reason, msg string
}

// observeResizeConds diffs the resize conditions of a published status
// against ps's (called with tr.mu held), returns their events, and
// updates the pending resize faults of the pod: the kubelet's Infeasible
// settles them as not applied; Deferred and a failed actuation are noted
// (the kubelet retries), for the outcome at the end.
func observeResizeConds(ps *podState, conds []corev1.PodCondition) []history.Event {
	var evs []history.Event
	for _, ct := range resizeConds {
		var now resizeCond
		for _, c := range conds {
			if c.Type == ct {
				now = resizeCond{on: c.Status == corev1.ConditionTrue, reason: c.Reason, msg: c.Message}
			}
		}
		if now == ps.resize[ct] {
			continue
		}
		if ps.resize == nil {
			ps.resize = map[corev1.PodConditionType]resizeCond{}
		}
		ps.resize[ct] = now
		evs = append(evs, history.Event{Kind: history.PodCondition, Cond: string(ct), Value: now.on, Reason: now.reason, Msg: now.msg})
		if !now.on || now.reason == "" {
			continue
		}
		why := string(ct) + " " + now.reason
		if now.msg != "" {
			why += ": " + now.msg
		}
		for _, w := range ps.resizes {
			switch {
			case ct == corev1.PodResizePending && now.reason == corev1.PodReasonInfeasible:
				w.settle(false, "the kubelet refused it: "+why)
			default:
				w.noted = why
			}
		}
	}
	return evs
}

// resizeWait is one resize fault instance waiting for the kubelet: its
// effect is verified (ARCHITECTURE.md rule 5) only once the kubelet
// resized the container in place (CRI UpdateContainerResources) or
// stopped it for its resizePolicy; the kubelet's refusal, or nothing
// until the trial or the pod ended, is fault.not-applied with why.
type resizeWait struct {
	container string
	done      chan struct{}
	decided   bool
	applied   bool
	msg       string
	// noted is the kubelet's last word short of a decision: a Deferred
	// PodResizePending, a PodResizeInProgress Error.
	noted string
}

func newResizeWait(container string) *resizeWait {
	return &resizeWait{container: container, done: make(chan struct{})}
}

// settle decides the outcome once (called with tr.mu held).
func (w *resizeWait) settle(applied bool, msg string) {
	if w.decided {
		return
	}
	w.decided, w.applied, w.msg = true, applied, msg
	close(w.done)
}

// outcome is the decision, or for an undecided wait what is known when
// it stopped waiting (why: the trial or the pod ended).
func (w *resizeWait) outcome(why string) (applied bool, msg string) {
	if w.decided {
		return w.applied, w.msg
	}
	msg = "the kubelet did not act on it before " + why
	if w.noted != "" {
		msg += "; last: " + w.noted
	}
	return false, msg
}

// onResizeCRI settles the pod's resize waits from a CRI event of
// container e.Container (called with tr.mu held): an in-place resize or a
// ResizeRestart stop is the kubelet acting on it; an exit first means it
// never did.
func onResizeCRI(ps *podState, e *history.Event) {
	for _, w := range ps.resizes {
		if w.container != e.Container {
			continue
		}
		switch {
		case e.Kind == history.ContainerResized:
			w.settle(true, "the kubelet resized it in place (CRI UpdateContainerResources"+appliedResources(e)+")")
		case e.Kind == history.ContainerStopRequested && e.Reason == "ResizeRestart":
			w.settle(true, "the kubelet restarts it for its resizePolicy (ResizeRestart)")
		case e.Kind == history.ContainerExited:
			msg := "the container exited before the kubelet acted on the resize"
			if w.noted != "" {
				msg += "; last: " + w.noted
			}
			w.settle(false, msg)
		}
	}
}

// awaitResize waits for the kubelet's answer to a resize fault (fid) of
// container c of pod ps, then writes its effect or why not, and its end.
func (tr *trial) awaitResize(ctx context.Context, sp *faults.Spec, fid uint32, ps *podState, c string, w *resizeWait) {
	target := ps.name + "/" + c
	why := "the trial ended"
	select {
	case <-w.done:
	case <-ps.done:
		why = "the pod was removed"
	case <-ctx.Done():
	}
	tr.mu.Lock()
	applied, msg := w.outcome(why)
	for i, x := range ps.resizes {
		if x == w {
			ps.resizes = append(ps.resizes[:i:i], ps.resizes[i+1:]...)
			break
		}
	}
	tr.mu.Unlock()
	if applied {
		tr.flog.Applied()
		tr.flog.Event(history.FaultEffect, sp, fid, ps.node, ps.name, c, target, msg)
	} else {
		tr.flog.Ended(sp, fid, ps.node, ps.name, c, target, msg)
	}
	tr.flog.Event(history.FaultEnd, sp, fid, ps.node, ps.name, c, target, "")
}

// appliedResources renders the resources a container.resized carries
// (those the runtime received; CRI carries limits, not memory requests).
func appliedResources(e *history.Event) string {
	var out string
	for _, f := range []struct {
		v    int64
		name string
	}{{e.CPU, "cpu %dm"}, {e.CPULimit, "cpu limit %dm"}, {e.Mem, "memory %d"}, {e.MemLimit, "memory limit %d"}} {
		if f.v > 0 {
			out += ", " + fmt.Sprintf(f.name, f.v)
		}
	}
	if out == "" {
		return ""
	}
	return ":" + out[1:]
}
