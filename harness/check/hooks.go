package check

import "github.com/sidebench/sidebench/harness/history"

// Hooks, SEMANTICS.md §2.6.
var hookInvs = []*inv{
	// Vacuous without a postStart hook in the spec (a main Started before
	// it), a failed postStart, an OOM kill, or a container with a preStop
	// hook in the spec stopped without running it first (the probe kill
	// and pod kill hits: a.PreStop none or after a.Stop, the first stop).
	{id: "INV-H1", level: Hard, ex: exDefault, fn: checkH1, needs: fSpecPostStart | fPostStartFailed | fOOM | fHookSkipped,
		rule: "sidecars and mains run hooks alike: Started only after postStart returned, never after it failed; preStop runs on pod termination and on a liveness, startup or failed-postStart kill, never for an OOM-killed container"},
	// Vacuous without a preStop outside a pod kill (termAt nil: the first
	// hit) or a container's second preStop (the second hit needs the one
	// before, prev).
	{id: "INV-H2", level: Hard, ex: exDefault, fn: checkH2, needs: fPreStopAlone | fPreStopAgain,
		rule: "a sidecar's preStop is not a separate phase before the pod kill, and runs once per kill (concurrently with the mains')"},
}

// wholePodReason reports whether a kill reason is a whole-pod kill's.
func wholePodReason(r string) bool {
	switch r {
	case "PodDeleted", "PodCompleted", "InitFailed", "SandboxLost", "NodeShutdown":
		return true
	}
	return false
}

func checkH1(p *Pod, hits []Hit) []Hit {
	for c := range p.Ctrs {
		ct := &p.Ctrs[c]
		for k := range ct.Att {
			a := &ct.Att[k]
			// startContainer runs the postStart hook before it returns, so
			// a main is Started only after it (INV-S3 judges sidecars).
			if ct.Role == RoleMain && ct.Spec.PostStart && a.Started != none && (a.PostStart == none || a.PostStart > a.Started) && !p.hookCut(a, a.Started) {
				hits = append(hits, p.at(a.Started, a.PostStart, "main %q published Started=true before its postStart hook returned", ct.Name))
			}
			if ct.Role == RoleMain && a.Started != none && a.PostStartFailed && a.PostStart < a.Started {
				h := p.at(a.Started, a.PostStart, "main %q published Started=true although its postStart hook failed", ct.Name)
				h.Excuse = p.failedHookForgotten(a)
				hits = append(hits, h)
			}
			// killContainer runs preStop for a liveness or startup kill as
			// for any kill (INV-S2 judges a sidecar's startup kill), when
			// its grace leaves time for it (gracePeriod > 0).
			if ct.Spec.PreStop && a.Stop != none && p.termAt(a.Stop) == nil && a.Running != none && a.Running < a.Stop &&
				(a.KillReason == "LivenessProbe" || a.KillReason == "FailedPostStartHook" || a.KillReason == "StartupProbe" && ct.Role != RoleSidecar) &&
				(a.PreStop == none || a.PreStop > a.Stop) && p.killGrace(ct, a) != 0 {
				hits = append(hits, p.at(a.Stop, none, "%s %q killed for its %s without running preStop", what(ct.Role), ct.Name, a.KillReason))
			}
			// The kernel kills an OOM victim: the kubelet runs no preStop
			// for it, before or after.
			if a.ExitReason == "OOMKilled" && a.PreStop != none && a.PreStop > a.Exited {
				hits = append(hits, p.at(a.PreStop, a.Exited, "preStop of %q ran after it was OOM-killed", ct.Name))
			}
		}
	}
	// A whole-pod kill runs the preStop of every running container that
	// has one before stopping it (killContainer; the grace is > 0).
	for t := range p.Terms {
		w := &p.Terms[t]
		if w.Grace <= 0 || w.Reason == "RestartAllContainers" {
			continue
		}
		for c := range p.Ctrs {
			ct := &p.Ctrs[c]
			if !ct.Spec.PreStop || !w.ran(c) {
				continue
			}
			a := p.attAt(c, w.Idx)
			if a == nil || a.Stop == none || a.Stop < w.Idx || a.Stop > w.End {
				continue // already being killed on its own, or not stopped in this kill
			}
			if a.PreStop == none || a.PreStop > a.Stop {
				hits = append(hits, p.at(a.Stop, w.Idx, "%s %q stopped in a pod kill without running preStop", what(ct.Role), ct.Name))
			}
		}
	}
	return hits
}

func checkH2(p *Pod, hits []Hit) []Hit {
	for _, s := range p.Sidecars {
		ct := &p.Ctrs[s]
		var prev int32 = none
		for _, i := range ct.Ev {
			e := &p.Ev[i]
			if e.Kind != history.ContainerPreStopBegin {
				continue
			}
			w := p.termAt(i)
			if w == nil && wholePodReason(e.Reason) {
				// The 2019 design's "preStop hooks sent to sidecars before
				// containers are terminated".
				next := none
				if nw := p.termAfter(i); nw != nil {
					next = nw.Idx
				}
				hits = append(hits, p.at(i, next, "sidecar %q preStop (%s) ran before the pod kill began", ct.Name, e.Reason))
				continue
			}
			if w != nil && prev != none && prev > w.Idx && p.sameAttempt(s, prev, i) && !p.outageBetween(prev, i) {
				hits = append(hits, p.at(i, prev, "sidecar %q preStop ran twice in one pod kill", ct.Name))
			}
			prev = i
		}
	}
	return hits
}

// hookCut reports whether the kubelet went down between attempt a's
// process start and event until, before its postStart hook returned: the
// hook died with that kubelet, and the next one, which never ran it, sees
// a running container it counts as started.
func (p *Pod) hookCut(a *Attempt, until int32) bool {
	from := a.Start()
	for _, o := range p.Outages {
		if o.What != history.RuntimeDown && o.Down > from && o.Down < until && (a.PostStart == none || a.PostStart > o.Down) {
			return true
		}
	}
	return false
}

// failedHookForgotten says why attempt a, whose postStart hook failed, may
// have been reported Started, or "": the kill that follows the failure
// did not end the container (StopContainer failed: the runtime was
// down), and startContainer only logs that and returns ErrPostStartHook
// (kuberuntime_container.go step 4). Nothing remembers the hook: the next
// sync keeps the running container and reports it Started, and a
// restarted kubelet knows nothing of it either (never-sandbox-loss
// composed with harsh; poststart_kill_stop_failed.txt).
func (p *Pod) failedHookForgotten(a *Attempt) string {
	switch {
	case p.kubeletRestartedBetween(a.PostStart, a.Started):
		return "kubelet restarted after the hook failed"
	case p.killFailed(a):
		return "the kill after the failed hook failed (runtime down)"
	}
	return ""
}

// killFailed reports whether attempt a's first stop request reached a
// runtime that was down (the CRI call failed).
func (p *Pod) killFailed(a *Attempt) bool {
	return a.Stop != none && p.runtimeDownAt(a.Stop)
}

// runtimeDownAt reports whether the node's container runtime was down at
// event i, so that a CRI call made then failed.
func (p *Pod) runtimeDownAt(i int32) bool {
	for k := range p.Outages {
		if o := &p.Outages[k]; o.What == history.RuntimeDown && o.during(i, i) {
			return true
		}
	}
	return false
}

// runtimeRestartedBetween reports whether the node's container runtime
// went down after event i and before event j (a CRI call made at i and
// still in flight was cut).
func (p *Pod) runtimeRestartedBetween(i, j int32) bool {
	for k := range p.Outages {
		if o := &p.Outages[k]; o.What == history.RuntimeDown && o.beganIn(i, j) {
			return true
		}
	}
	return false
}

// sameAttempt reports whether events i < j of container c belong to the
// same attempt (no start in between).
func (p *Pod) sameAttempt(c int, i, j int32) bool {
	for k := range p.Ctrs[c].Att {
		if s := p.Ctrs[c].Att[k].Start(); s > i && s < j {
			return false
		}
	}
	return true
}

// outageBetween reports whether the kubelet or the runtime went down
// between events i and j: a retried termination runs preStop again
// (INV-F6).
func (p *Pod) outageBetween(i, j int32) bool {
	for _, o := range p.Outages {
		if o.Down > i && o.Down < j {
			return true
		}
	}
	return false
}

// killGrace is the budget of a single-container kill of attempt a
// (setTerminationGracePeriod): the deletion's grace once the pod was
// deleted, else a failed probe's own grace, else the pod's; -1 if the
// history has no spec.
func (p *Pod) killGrace(ct *Ctr, a *Attempt) int64 {
	if p.Spec == nil {
		return -1
	}
	if p.Deleted != none && p.Deleted < a.Stop {
		return p.Ev[p.Deleted].Grace
	}
	if a.KillReason == "LivenessProbe" || a.KillReason == "StartupProbe" {
		if g, ok := probeGrace(p.Spec, ct.Spec, a.KillReason); ok {
			return g
		}
	}
	return p.Spec.Grace
}
