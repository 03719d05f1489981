package check

import "github.com/sidebench/sidebench/harness/history"

// Restarts, SEMANTICS.md §2.2.
var restartInvs = []*inv{
	// Vacuous without a sidecar's exit outside a pod kill: it skips the
	// exits where termAt holds (completion, computed first, cannot panic).
	{id: "INV-R1", level: BestEffort, ex: exDefault, fn: checkR1, needs: fSidecarExitAlone,
		rule: "an exited sidecar is restarted (any exit code, any pod restartPolicy) while the pod is not terminating or complete"},
	// Vacuous without a container with two attempts: it judges pairs.
	{id: "INV-R2", level: Hard, ex: exDefault, fn: checkR2, needs: fRestart,
		rule: "sidecar restarts follow crash-loop backoff: not before the announced delay, not much after it, never above 300s"},
	// Vacuous without a sidecar's exit outside a pod kill: it skips the
	// exits where termAt holds.
	{id: "INV-R3", level: Hard, ex: exDefault, fn: checkR3, needs: fSidecarExitAlone,
		rule: "a sidecar restart after initialization neither stops main containers nor re-runs regular init containers"},
	// Vacuous without a container with two attempts: it judges pairs of
	// a main's attempts, and re-runs only after one of them.
	{id: "INV-R4", level: Hard, ex: exDefault, fn: checkR4, needs: fRestart,
		rule: "main containers restart per pod restartPolicy only; a main restart re-runs no regular init container"},
	// Vacuous without an attempt begun after a pod.terminating (a start
	// inside a kill) or a stop or preStop with reason LivenessProbe.
	{id: "INV-R5", level: Hard, ex: exDefault, fn: checkR5, needs: fStartAfterKill | fProbeReason,
		rule: "after pod.terminating no sidecar is restarted, and its liveness probe kills nothing"},
	// Vacuous without a main's exit outside a pod kill: completion needs
	// one (every main's last exit, where termAt is nil).
	{id: "INV-R6", level: Hard, ex: exDefault, fn: checkR6, needs: fMainExitAlone,
		rule: "once no main is running or restartable, the pod is killed promptly and no sidecar is restarted"},
}

// backoffAfter returns the first container.backoff of c in (from, to).
func (p *Pod) backoffAfter(c int, from, to int32) int32 {
	return p.eventOf(c, history.ContainerBackoff, from, to)
}

// restartDeadline is when a restart of c, ended at index ex, is overdue:
// the announced backoff (if the kubelet announced one) plus slack; else,
// for the container's first exit, Slack (the kubelet keeps no backoff
// entry before a first failure, so it restarts at once); else the cap.
func (p *Pod) restartDeadline(c int, ex int32) int64 {
	if b := p.backoffAfter(c, ex, p.n()); b != none {
		return p.T(b) + p.Ev[b].Grace + p.Slack()
	}
	first := p.Ev[ex].Kind == history.ContainerExited
	for k := range p.Ctrs[c].Att {
		if a := &p.Ctrs[c].Att[k]; a.Exited != none && a.Exited < ex {
			first = false
		}
	}
	if first {
		return p.T(ex) + p.Slack()
	}
	return p.T(ex) + maxBackoff + p.Slack()
}

// expectRestart reports a Timing hit if container c, whose attempt a ended
// at index ex, was not started again although the pod carried on past the
// restart deadline. The expectation ends at a whole-pod kill, the end of
// the sandbox, pod removal, or the horizon.
func (p *Pod) expectRestart(hits []Hit, c int, a *Attempt, ex int32, why string) []Hit {
	if p.nextStartAfter(c, ex, a.Sandbox) != nil {
		return hits
	}
	end := p.Horizon
	if w := p.termAfter(ex); w != nil {
		end = min(end, w.T)
	}
	if sbEnd := p.Sandboxes[a.Sandbox].End; sbEnd != none {
		end = min(end, p.T(sbEnd))
	}
	if p.Removed != none {
		end = min(end, p.T(p.Removed))
	}
	if dl := p.restartDeadline(c, ex); end > dl {
		hits = append(hits, p.late(ex, none, dl, "%s %q not restarted within %s after %s", what(p.Ctrs[c].Role), p.Ctrs[c].Name, ms(dl-p.T(ex)), why))
	}
	return hits
}

func checkR1(p *Pod, hits []Hit) []Hit {
	done := p.completion()
	for _, s := range p.Sidecars {
		for k := range p.Ctrs[s].Att {
			a := &p.Ctrs[s].Att[k]
			if a.Exited == none || p.termAt(a.Exited) != nil || done != none && a.Exited > done {
				continue
			}
			hits = p.expectRestart(hits, s, a, a.Exited, "it exited")
		}
	}
	return hits
}

func checkR2(p *Pod, hits []Hit) []Hit {
	for _, s := range p.Sidecars {
		att := p.Ctrs[s].Att
		for k := 0; k+1 < len(att); k++ {
			a, b := &att[k], &att[k+1]
			if a.Exited == none || b.Sandbox != a.Sandbox || b.Start() < a.Exited {
				continue
			}
			name := p.Ctrs[s].Name
			st := p.T(b.Start())
			bo := p.backoffAfter(s, a.Exited, b.Start())
			if bo == none {
				if dl := p.T(a.Exited) + maxBackoff + p.Slack(); st > dl {
					hits = append(hits, p.late(a.Exited, b.Start(), dl, "sidecar %q restarted %s after its exit, beyond the %s backoff cap", name, ms(st-p.T(a.Exited)), ms(maxBackoff)))
				}
				continue
			}
			d := p.Ev[bo].Grace
			switch {
			case d > maxBackoff+p.Tol:
				hits = append(hits, p.late(a.Exited, bo, p.T(bo), "sidecar %q backoff %s exceeds the %s cap", name, ms(d), ms(maxBackoff)))
			case st < p.T(a.Exited)+d-p.Tol && !p.backoffKeyChanged(s, a.Exited, b.Start()):
				h := p.at(b.Start(), bo, "sidecar %q restarted %s after its exit, before its %s backoff", name, ms(st-p.T(a.Exited)), ms(d))
				h.Kind = Timing
				hits = append(hits, h)
			case st > p.T(bo)+d+p.Slack():
				hits = append(hits, p.late(bo, b.Start(), p.T(bo)+d+p.Slack(), "sidecar %q restarted %s after its %s backoff was announced", name, ms(st-p.T(bo)), ms(d)))
			}
		}
	}
	return hits
}

// backoffKeyChanged reports whether container c's image or resources
// changed between events from and to: the kubelet keys a crash-loop
// backoff by both (GetBackoffKey), so the backoff announced before the
// change no longer holds the restart back.
func (p *Pod) backoffKeyChanged(c int, from, to int32) bool {
	return p.eventOf(c, history.ContainerImageChanged, from, to) != none || p.eventOf(c, history.ContainerResize, from, to) != none
}

func checkR3(p *Pod, hits []Hit) []Hit {
	for _, s := range p.Sidecars {
		for k := range p.Ctrs[s].Att {
			a := &p.Ctrs[s].Att[k]
			fm := p.firstMainStart(a.Sandbox)
			if a.Exited == none || fm == none || a.Exited < fm || p.termAt(a.Exited) != nil {
				continue
			}
			// The window runs until the sidecar runs again.
			end := p.n()
			if b := p.nextStartAfter(s, a.Exited, a.Sandbox); b != nil {
				end = b.Start()
				if b.Running != none {
					end = b.Running
				}
			}
			if w := p.termAfter(a.Exited); w != nil {
				end = min(end, w.Idx)
			}
			if sbEnd := p.Sandboxes[a.Sandbox].End; sbEnd != none {
				end = min(end, sbEnd)
			}
			for _, m := range p.Mains {
				for j := range p.Ctrs[m].Att {
					b := &p.Ctrs[m].Att[j]
					if b.Stop > a.Exited && b.Stop <= end && !ownKill(b.KillReason) {
						hits = append(hits, p.at(b.Stop, a.Exited, "main %q stopped (%s) because sidecar %q exited", p.Ctrs[m].Name, b.KillReason, p.Ctrs[s].Name))
					}
				}
			}
			for _, c := range p.Inits {
				if b := p.nextStartAfter(c, a.Exited, a.Sandbox); b != nil && b.Start() <= end && !p.rerunAfterRemoval(c, b) {
					hits = append(hits, p.at(b.Start(), a.Exited, "init %q re-run after sidecar %q exited", p.Ctrs[c].Name, p.Ctrs[s].Name))
				}
			}
		}
	}
	return hits
}

func checkR4(p *Pod, hits []Hit) []Hit {
	rp := p.Spec.RestartPolicy
	firstMainExit := none
	for _, m := range p.Mains {
		att := p.Ctrs[m].Att
		for k := 0; k+1 < len(att); k++ {
			a, b := &att[k], &att[k+1]
			if a.Exited == none || b.Sandbox != a.Sandbox || b.Start() < a.Exited || p.termAt(a.Exited) != nil {
				continue
			}
			if firstMainExit == none || a.Exited < firstMainExit {
				firstMainExit = a.Exited
			}
			switch a.KillReason {
			case "UnknownState":
				continue // INV-F8: recreated whatever the policy
			case "SpecChanged", "ResizeRestart":
				// computePodActions: "Restart regardless of the restart
				// policy because the container spec changed"; and
				// computePodResizeAction kills and starts a container
				// whose resizePolicy says RestartContainer in the same
				// sync (INV-U2), whatever the policy (the sweep's
				// resize-restart with onfailure-job).
				continue
			case "LivenessProbe", "StartupProbe":
				// A probe kill restarts when shouldRestartOnFailure
				// (Always, OnFailure), whatever the exit code; under
				// ContainerRestartRules the container's own restartPolicy
				// decides when it has one (computePodActions: its rules are
				// not evaluated, the container was running).
				if p.restartPolicyOf(m) != "Never" {
					continue
				}
				hits = append(hits, p.at(b.Start(), a.Exited, "main %q killed for its %s restarted under restartPolicy Never", p.Ctrs[m].Name, a.KillReason))
				continue
			}
			if sp := p.Ctrs[m].Spec; p.hasGate("ContainerRestartRules") && sp != nil && sp.RestartPolicy != "" {
				continue // a container-level policy decides: INV-RR1
			}
			var h Hit
			switch {
			case rp == "Never":
				h = p.at(b.Start(), a.Exited, "main %q restarted under restartPolicy Never (exit %d)", p.Ctrs[m].Name, a.Code)
			case rp == "OnFailure" && a.Code == 0:
				h = p.at(b.Start(), a.Exited, "main %q restarted after exit 0 under restartPolicy OnFailure", p.Ctrs[m].Name)
			default:
				continue
			}
			if p.rerunAfterRemoval(m, b) {
				// Its record was removed after the exit (container GC):
				// ShouldContainerBeRestarted starts a container with no
				// status whatever the policy, once no kill of the pod is
				// under way (a restarted kubelet's, the sweep's gc-heavy
				// shape with Jobs): a degradation of the GC.
				h.Excuse = "record removed (container GC)"
			}
			hits = append(hits, h)
		}
	}
	if firstMainExit == none {
		return hits
	}
	for _, c := range p.Inits {
		if b := p.nextStartAfter(c, firstMainExit, p.sandboxAt(firstMainExit)); b != nil && !p.rerunAfterRemoval(c, b) {
			hits = append(hits, p.at(b.Start(), firstMainExit, "init %q re-run after a main container restarted", p.Ctrs[c].Name))
		}
	}
	return hits
}

// rerunAfterRemoval reports whether regular init c's attempt b follows the
// removal of c's record since its previous attempt exited (container GC,
// a reset): computeInitContainerActions walks the init containers from the
// last one with a record, so a completed init whose record is gone can run
// again for that alone. That is INV-F2's business (a degradation of the
// GC), not an effect of what the calling checker looks at (the sweep's
// kitchen-sink shape: GC of every exited record while the kubelet was down
// re-ran an init after a sidecar's exit, a main's restart, an image
// change).
func (p *Pod) rerunAfterRemoval(c int, b *Attempt) bool {
	var prev *Attempt
	for k := range p.Ctrs[c].Att {
		if a := &p.Ctrs[c].Att[k]; a.Start() < b.Start() && a.Exited != none {
			prev = a
		}
	}
	return prev != nil && p.eventOf(c, history.ContainerRemoved, prev.Exited, b.Start()) != none
}

func checkR5(p *Pod, hits []Hit) []Hit {
	if p.restartableDuringTermination() {
		return hits // KEP-4438 changes the rule; not decided here
	}
	for t := range p.Terms {
		w := &p.Terms[t]
		for _, s := range p.Sidecars {
			for k := range p.Ctrs[s].Att {
				if a := &p.Ctrs[s].Att[k]; a.Start() > w.Idx && a.Start() < w.End {
					hits = append(hits, p.at(a.Start(), w.Idx, "sidecar %q restarted during pod termination", p.Ctrs[s].Name))
				}
			}
			// The kubelet keeps probing a sidecar's liveness while the pod
			// terminates (StopLivenessAndStartup stops the mains' only),
			// but a terminating pod is killed, never synced: a failure
			// restarts nothing.
			for _, i := range p.Ctrs[s].Ev {
				e := &p.Ev[i]
				if i > w.Idx && i < w.End && (e.Kind == history.ContainerStopRequested || e.Kind == history.ContainerPreStopBegin) &&
					e.Reason == "LivenessProbe" && p.firstKillEvent(s, i) {
					hits = append(hits, p.at(i, w.Idx, "sidecar %q killed for its liveness probe during pod termination", p.Ctrs[s].Name))
					break
				}
			}
		}
	}
	return hits
}

// restartableDuringTermination reports whether the run enables the
// KEP-4438 gate, under which sidecars are restarted while the pod
// terminates (INV-R5, T10 do not apply to them).
func (p *Pod) restartableDuringTermination() bool {
	return p.hasGate("SidecarsRestartableDuringPodTermination")
}

func checkR6(p *Pod, hits []Hit) []Hit {
	done := p.completion()
	if done == none {
		return hits
	}
	for _, s := range p.Sidecars {
		a := p.nextStartAfter(s, done, p.sandboxAt(done))
		if a == nil || p.restartableDuringTermination() && p.termAt(a.Start()) != nil {
			continue // KEP-4438: restarts during the kill are the gate's point
		}
		hits = append(hits, p.at(a.Start(), done, "sidecar %q restarted after the last main container finished", p.Ctrs[s].Name))
	}
	alive := false
	for _, s := range p.Sidecars {
		if a := p.attAt(s, done); a != nil {
			alive = true
		}
	}
	if !alive {
		return hits
	}
	dl := p.T(done) + p.Slack()
	if w := p.termAfter(done); w != nil {
		if w.T > dl {
			hits = append(hits, p.late(done, w.Idx, dl, "pod killed %s after its last main container finished", ms(w.T-p.T(done))))
		}
	} else if p.Horizon > dl {
		h := p.late(done, none, dl, "running sidecars kept the pod alive: no pod kill after the last main container finished")
		h.Kind = Order
		hits = append(hits, h)
	}
	return hits
}
