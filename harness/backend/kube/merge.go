package kube

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sidebench/sidebench/harness/agentlog"
	"github.com/sidebench/sidebench/harness/behavior"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/reference-impl/api"
)

// A pod's history on the kube backend comes from two sources with
// different precision, merged once the pod is gone:
//
//   - the watch (harness clock, stamped on receipt): pod.created (at the
//     create call), pod.scheduled, pod.phase, pod.condition,
//     container.ready, pod.deleted (at the delete call), pod.removed, and
//     container exits the agent could not log (a SIGKILL, the kernel's OOM
//     kill) from containerStatuses, timed by the peer-exit line of another
//     container of the pod when there is one;
//   - the agent log (node clock, nanoseconds): process starts, probe
//     results, hooks, SIGTERM and exits, which give the ordering
//     invariants their precision (API timestamps have one second).
//
// On the containerd tier both clocks are the machine's; on a remote
// cluster they are the node's and the harness's (docs/kube-backend.md).

// statusExit is a container exit seen in the pod status: state.terminated
// (attempt = restartCount) or lastState.terminated (restartCount-1).
type statusExit struct {
	Container string
	Attempt   uint32
	Code      int32
	Reason    string
	T         int64 // receive time
}

// podRecord is everything the backend learnt about one pod.
type podRecord struct {
	Name string // history pod name, "namespace/name" of the scenario
	Node string
	Spec *api.PodSpec
	// Observed holds the watch's events in receive order.
	Observed []history.Event
	Exits    []statusExit
	Lines    []agentlog.Line
}

// ctrInfo is what the merge needs of one container of the spec.
type ctrInfo struct {
	main, startup bool
}

func (r *podRecord) ctrs() map[string]ctrInfo {
	m := map[string]ctrInfo{}
	for i := 0; i < r.Spec.Len(); i++ {
		c := r.Spec.At(i)
		m[c.Name] = ctrInfo{main: c.Role == api.RoleMain, startup: c.StartupProbe != nil}
	}
	return m
}

type attemptKey struct {
	c string
	a uint32
}

// merge returns the pod's history events in time order. Ties keep
// emission order, which is causal within each source.
func (r *podRecord) merge() []history.Event {
	ctrs := r.ctrs()
	out := make([]history.Event, 0, len(r.Observed)+2*len(r.Lines)+len(r.Exits))
	out = append(out, r.Observed...)
	delT := int64(-1)
	imageAt := map[string][]int64{} // spec image changes per container
	for _, e := range r.Observed {
		if e.Kind == history.PodDeleted && delT < 0 {
			delT = e.T
		}
		if e.Kind == history.ContainerImageChanged {
			imageAt[e.Container] = append(imageAt[e.Container], e.T)
		}
	}
	lines := slices.Clone(r.Lines)
	slices.SortStableFunc(lines, func(a, b agentlog.Line) int { return cmp.Compare(a.T, b.T) })

	// Per attempt: its last line and whether the agent logged its exit.
	last := map[attemptKey]int64{}
	execAt := map[attemptKey]int64{}
	exited := map[attemptKey]bool{}
	sigterm := map[attemptKey]bool{}
	peerExit := map[attemptKey]int64{} // earliest witness of each attempt's death
	for _, l := range lines {
		if l.Event == agentlog.PeerExit {
			c, a, ok := strings.Cut(l.Detail, " ")
			if n, err := strconv.ParseUint(a, 10, 32); ok && err == nil {
				k := attemptKey{c, uint32(n)}
				if t, seen := peerExit[k]; !seen || l.T < t {
					peerExit[k] = l.T
				}
			}
			continue // about another container: not a line of the witness's own attempt
		}
		k := attemptKey{l.Container, l.Attempt}
		last[k] = l.T
		switch l.Event {
		case agentlog.Exec:
			if _, ok := execAt[k]; !ok {
				execAt[k] = l.T
			}
		case agentlog.Exit:
			exited[k] = true
		}
	}
	started := map[attemptKey]bool{}
	stopped := map[attemptKey]bool{}
	ev := func(l *agentlog.Line, e history.Event) {
		e.T, e.Pod, e.Node, e.Container, e.Attempt = l.T, r.Name, r.Node, l.Container, l.Attempt
		out = append(out, e)
	}
	for i := range lines {
		l := &lines[i]
		ci, known := ctrs[l.Container]
		if !known {
			continue
		}
		k := attemptKey{l.Container, l.Attempt}
		switch l.Event {
		case agentlog.PeerExit:
			continue
		case agentlog.Exec:
			ev(l, history.Event{Kind: history.ContainerRunning})
			if !ci.startup && !started[k] {
				started[k] = true
				ev(l, history.Event{Kind: history.ContainerStarted, Value: true})
			}
		case agentlog.Probe:
			// "<probe> <result>[ forced]": a forced failure (the
			// probe-failure fault) is a failure to the kubelet.
			f := strings.Fields(l.Detail)
			if len(f) < 2 {
				continue
			}
			probe, res := f[0], f[1]
			switch probe {
			case "ready":
				probe = "readiness"
			case "live":
				probe = "liveness"
			}
			ev(l, history.Event{Kind: history.ProbeResult, Probe: probe, Result: res})
			if probe == "startup" && res == "success" && ci.startup && !started[k] {
				started[k] = true
				ev(l, history.Event{Kind: history.ContainerStarted, Value: true})
			}
		case agentlog.PostStartEnd:
			ev(l, history.Event{Kind: history.ContainerPostStartDone, Value: true})
		case agentlog.PreStopBegin:
			ev(l, history.Event{Kind: history.ContainerPreStopBegin})
		case agentlog.PreStopEnd:
			ev(l, history.Event{Kind: history.ContainerPreStopEnd})
		case agentlog.Sigterm:
			if !stopped[k] {
				stopped[k] = true
				sigterm[k] = true
				// The agent sees the SIGTERM, not the CRI StopContainer
				// timeout: what remains of the grace after preStop and
				// the ordering wait, in whole seconds, at least 2 s. The
				// deletion or spec grace is only its upper bound, and
				// recorded as the stop grace it made INV-T7 call a
				// SIGKILL at the real one early: record it unknown (0).
				reason := ""
				if (delT < 0 || l.T < delT) && changedDuring(imageAt[l.Container], execAt[k], l.T) {
					// The kubelet stops a container whose spec image
					// changed (INV-U1); nothing else but a probe kill
					// stops a running container of a live pod, and a
					// probe kill shows as the probe's failure lines.
					reason = "SpecChanged"
				}
				ev(l, history.Event{Kind: history.ContainerStopRequested, Reason: reason})
			}
		case agentlog.Exit:
			code := int32(0)
			if l.Code != nil {
				code = *l.Code
			}
			reason := behavior.ReasonCompleted
			if code != 0 {
				reason = behavior.ReasonError
			}
			ev(l, history.Event{Kind: history.ContainerExited, Code: code, Reason: reason, Msg: l.Detail})
			if started[k] {
				started[k] = false
				ev(l, history.Event{Kind: history.ContainerStarted, Value: false})
			}
		}
	}

	// Exits only the status knows (the process could not log them).
	seen := map[attemptKey]bool{}
	for _, x := range r.Exits {
		k := attemptKey{x.Container, x.Attempt}
		if _, known := ctrs[x.Container]; !known || exited[k] || seen[k] {
			continue
		}
		seen[k] = true
		// The receive time is an upper bound of the exit; a witness's
		// peer-exit line (another container of the pod saw the lock of
		// this attempt released) is a tighter one.
		t, msg := x.T, "from the pod status"
		if pt, ok := peerExit[k]; ok && pt < t {
			t, msg = pt, "from the pod status, timed by a witness"
		}
		// The exit came after the attempt's last line and before the
		// next attempt began.
		if next, ok := execAt[attemptKey{x.Container, x.Attempt + 1}]; ok && t >= next {
			t = next - 1
		}
		if lt, ok := last[k]; ok && t <= lt {
			t = lt + 1
		}
		base := history.Event{T: t, Pod: r.Name, Node: r.Node, Container: x.Container, Attempt: x.Attempt}
		if sigterm[k] && x.Code == 137 && x.Reason != behavior.ReasonOOMKilled {
			e := base
			e.Kind = history.ContainerKilled
			out = append(out, e)
		}
		e := base
		e.Kind, e.Code, e.Reason, e.Msg = history.ContainerExited, x.Code, x.Reason, msg
		out = append(out, e)
		if started[k] {
			started[k] = false
			e := base
			e.Kind = history.ContainerStarted
			out = append(out, e)
		}
	}
	slices.SortStableFunc(out, func(a, b history.Event) int { return cmp.Compare(a.T, b.T) })
	out = r.causal(out)
	out = r.inferTermination(out, ctrs)
	// pod.removed is a pod's last event (the history contract).
	for i, e := range out {
		if e.Kind == history.PodRemoved && i != len(out)-1 {
			e.T = out[len(out)-1].T
			out = append(slices.Delete(out, i, i+1), e)
			break
		}
	}
	return out
}

// changedDuring reports whether an image change came in (from, to).
func changedDuring(changes []int64, from, to int64) bool {
	for _, t := range changes {
		if t > from && t < to {
			return true
		}
	}
	return false
}

// agentSkew bounds how much later than the runtime's start an agent logs
// its exec line: the Go runtime's start-up before main, tens of
// milliseconds on a loaded node. The kubelet sees a container running
// (and, without probes, started and ready) from the runtime, so a status
// update can legitimately be received before the exec line.
const agentSkew = 250 * int64(time.Millisecond)

// causal moves status updates received before the node events they
// report to just after them, when the gap is within agentSkew: a
// container's Ready=true after its running line, the first
// Initialized=True after the last init container's exit or sidecar's
// Started. The whole update moves (its readiness flags, conditions and
// phase share its receive time), so that what it reported together stays
// together. A larger gap is left alone: the status then really claimed
// something the node had not done.
func (r *podRecord) causal(evs []history.Event) []history.Event {
	running := map[attemptKey]int64{}
	var initDone int64 // latest init exit or sidecar Started of the first initialization
	inits := map[string]bool{}
	for i := range r.Spec.Init {
		inits[r.Spec.Init[i].Name] = true
	}
	mainRan := false
	for _, e := range evs {
		switch {
		case e.Kind == history.ContainerRunning:
			if _, ok := running[attemptKey{e.Container, e.Attempt}]; !ok {
				running[attemptKey{e.Container, e.Attempt}] = e.T
			}
			mainRan = mainRan || !inits[e.Container]
		case mainRan: // the first initialization is over
		case inits[e.Container] && (e.Kind == history.ContainerExited || e.Kind == history.ContainerStarted && e.Value):
			initDone = max(initDone, e.T)
		}
	}
	statusKind := func(k history.Kind) bool {
		return k == history.ContainerReady || k == history.PodCondition || k == history.PodPhase
	}
	// Per update (receive time): the time it must follow.
	need := map[int64]int64{}
	initialized := false
	for _, e := range evs {
		var after int64 = -1
		switch {
		case e.Kind == history.ContainerReady && e.Value:
			if t, ok := running[attemptKey{e.Container, e.Attempt}]; ok {
				after = t
			}
		case e.Kind == history.PodCondition && e.Cond == "Initialized" && e.Value && !initialized:
			initialized = true
			after = initDone
		}
		if after > e.T && after-e.T <= agentSkew {
			need[e.T] = max(need[e.T], after)
		}
	}
	if len(need) == 0 {
		return evs
	}
	for i := range evs {
		if a, ok := need[evs[i].T]; ok && statusKind(evs[i].Kind) {
			evs[i].T = a + 1
		}
	}
	slices.SortStableFunc(evs, func(a, b history.Event) int { return cmp.Compare(a.T, b.T) })
	return evs
}

// inferTermination inserts pod.terminating, the start of a whole-pod kill,
// which the kubelet does not publish: before the first preStop or SIGTERM
// once the pod was deleted (reason PodDeleted, the deletion grace), or for
// a pod that does not restart its mains, once none runs (PodCompleted, the
// pod's grace). Ordered is true for pods with sidecars: the kubelet
// (>= 1.29) terminates them in reverse order.
func (r *podRecord) inferTermination(evs []history.Event, ctrs map[string]ctrInfo) []history.Event {
	job := r.Spec.RestartPolicy != api.RestartAlways
	deleted := false
	var delGrace int64
	running, ran := map[string]bool{}, map[string]bool{}
	for i, e := range evs {
		switch e.Kind {
		case history.PodDeleted:
			deleted, delGrace = true, e.Grace
		case history.ContainerRunning:
			running[e.Container], ran[e.Container] = true, true
		case history.ContainerExited:
			running[e.Container] = false
		case history.ContainerPreStopBegin, history.ContainerStopRequested:
			// Completion needs every main to have run and none to run
			// now: a SIGTERM during initialization (a sidecar's startup
			// probe, an image change) is that container's own kill.
			anyMain, allRan := false, true
			for c, info := range ctrs {
				if info.main {
					anyMain, allRan = anyMain || running[c], allRan && ran[c]
				}
			}
			t := history.Event{T: e.T, Kind: history.PodTerminating, Pod: r.Name, Node: r.Node, Value: r.Spec.HasSidecars()}
			switch {
			case deleted:
				t.Reason, t.Grace = "PodDeleted", delGrace
			case job && !anyMain && allRan:
				t.Reason, t.Grace = "PodCompleted", int64(r.Spec.TerminationGracePeriod)
			default:
				continue
			}
			return slices.Insert(evs, i, t)
		}
	}
	return evs
}
