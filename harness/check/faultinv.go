package check

import "github.com/sidebench/sidebench/harness/history"

// Faults and spec updates, SEMANTICS.md §2.8–2.9. These invariants are
// about behaviour under the faults themselves, so the faults they are
// about do not excuse them.
var faultInvs = []*inv{
	// Vacuous without a container with two attempts (a re-run is a later
	// attempt than the one that completed), or a sidecar's Started=false
	// or stop outside a pod kill after a kubelet outage began (what the
	// outage part judges: events after o.Down where termAt is nil).
	{id: "INV-F1", level: Hard, ex: ExNode, fn: checkF1, needs: fRestart | fSidecarFlap,
		rule: "after initialization a completed regular init is never re-run in the same sandbox; a kubelet restart leaves running sidecars running and their Started status does not flap"},
	// §5: GC of exited init records preserves start order only once a main
	// container exists, so during initialization GC is an excuse.
	// Vacuous without a container with two attempts: as F1's re-runs.
	{id: "INV-F2", level: Hard, ex: ExNode | ExGC, fn: checkF2, needs: fRestart,
		rule: "during initialization a completed regular init is never re-run in the same sandbox (kubelet restart, GC)"},
	// Vacuous with one sandbox: it judges a sandbox after another.
	{id: "INV-F3", level: Hard, ex: ExKubelet, fn: checkF3, needs: fSandboxes,
		rule: "a new sandbox re-runs every init container before any main starts; under Never with containers created no new sandbox is made"},
	// A node shutdown is what INV-F4 is about: it excuses nothing here;
	// the node going down or the kubelet dying does.
	// Vacuous without a node.shutdown.
	{id: "INV-F4", level: BestEffort, ex: ExNode | ExKubelet, fn: checkF4, needs: fShutdown,
		rule: "a graceful node shutdown kills each pod promptly through the normal pod kill, within its group's budget (regular pods, then critical), and leaves it Failed/Terminated"},
	// Vacuous without a node outage.
	{id: "INV-F5", level: Hard, ex: 0, fn: checkF5, needs: fNodeDown,
		rule: "while the node is down nothing is started, hooked or signalled, and no container restarts in a sandbox that did not survive it"},
	// Vacuous without a kubelet or runtime outage that began inside a pod
	// kill: it skips the others (termAt(o.Down) nil).
	{id: "INV-F6", level: BestEffort, ex: ExNode, fn: checkF6, needs: fOutageInKill,
		rule: "a kubelet/runtime restart during termination retries it: containers still running exit within a full grace + 2s after the restart"},
	// Vacuous without a runtime outage or a container.start-failed.
	{id: "INV-F7", level: Hard, ex: ExNode | ExKubelet, fn: checkF7, needs: fRuntimeDown | fStartFailed,
		rule: "a runtime restart does not kill running containers; a container whose start failed is started again"},
	// Vacuous without a kill for UnknownState, a reason only a stop or
	// preStop event gives.
	{id: "INV-F8", level: Hard, ex: ExNode | ExKubelet, fn: checkF8, needs: fUnknownKill,
		rule: "a container killed for Unknown state is recreated (sidecar: always; regular init under Never: the pod is killed instead)"},
	// Vacuous without an image change.
	{id: "INV-U1", level: Hard, ex: exDefault, fn: checkU1, needs: fImage,
		rule: "an image change restarts only that container (a completed init: nothing), and takes no effect during termination"},
	// Vacuous without a resize.
	{id: "INV-U2", level: Hard, ex: exDefault, fn: checkU2, needs: fResize,
		rule: "an in-place resize applies in place, or restarts only that container when its resizePolicy says RestartContainer; sidecars like mains; nothing during termination"},
}

// rerunInits reports completed regular inits started again in the same
// sandbox: after a main container started (INV-F1) or before (INV-F2).
func rerunInits(p *Pod, hits []Hit, afterMain bool) []Hit {
	for _, c := range p.Inits {
		for sb := range int32(len(p.Sandboxes)) {
			d := p.doneIn(c, sb)
			if d == none {
				continue
			}
			b := p.nextStartAfter(c, d, sb)
			if b == nil {
				continue
			}
			fm := p.firstMainStart(sb)
			if afterMain && p.mainsRemovedBy(sb, b.Start()) {
				// The runtime holds no record of any main any more (all
				// exited ones removed): computeInitContainerActions then
				// finds the pod not initialized and re-runs the init after
				// the last started sidecar. SEMANTICS promises no re-run
				// only while a main container exists.
				continue
			}
			if (fm != none && fm < b.Start()) == afterMain {
				hits = append(hits, p.at(b.Start(), d, "init %q re-run in the same sandbox after it completed", p.Ctrs[c].Name))
			}
		}
	}
	return hits
}

// mainsRemovedBy reports whether, at event i, every main container's
// latest attempt in sandbox sb exited and was removed from the runtime.
func (p *Pod) mainsRemovedBy(sb, i int32) bool {
	for _, m := range p.Mains {
		// Sandboxes follow one another in time: the latest attempt
		// before i is in sb if any of sb's is.
		last := p.latestBefore(m, i)
		if last == nil || last.Sandbox != sb || last.Exited == none || p.eventOf(m, history.ContainerRemoved, last.Exited, i) == none {
			return false
		}
	}
	return len(p.Mains) > 0
}

func checkF1(p *Pod, hits []Hit) []Hit {
	hits = rerunInits(p, hits, true)
	for _, o := range p.Outages {
		if o.What != history.KubeletDown || o.Up == none {
			continue
		}
		until := p.T(o.Up) + p.settle()
		for _, s := range p.Sidecars {
			a := p.attAt(s, o.Down)
			if a == nil || a.Started == none || a.Started > o.Down {
				continue
			}
			for _, i := range p.Ctrs[s].Ev {
				e := &p.Ev[i]
				if i <= o.Down || e.T > until || (a.Stop != none && a.Stop < i) || p.termAt(i) != nil ||
					a.Exited != none && p.T(a.Exited) <= e.T || a.Unknown != none && a.Unknown < i {
					continue // signalled, being killed, dead or reported Unknown: Started=false is the truth
				}
				if e.Kind == history.ContainerStarted && !e.Value {
					hits = append(hits, p.at(i, o.Up, "sidecar %q Started flapped to false across a kubelet restart", p.Ctrs[s].Name))
					break
				}
				if e.Kind == history.ContainerStopRequested && !ownKill(e.Reason) && p.termAt(i) == nil {
					hits = append(hits, p.at(i, o.Up, "running sidecar %q stopped after a kubelet restart", p.Ctrs[s].Name))
					break
				}
			}
		}
	}
	return hits
}

func checkF2(p *Pod, hits []Hit) []Hit { return rerunInits(p, hits, false) }

func checkF3(p *Pod, hits []Hit) []Hit {
	for k := range p.Sandboxes {
		sb := &p.Sandboxes[k]
		// computePodActions keeps a Never pod from a new sandbox only
		// while the runtime holds a container record of it ("If
		// ContainerStatuses is empty, we assume that we've never
		// successfully created any containers"): with every record removed
		// (container GC after the loss) it re-creates the sandbox whatever
		// ran before (SEMANTICS says never; the kubelet decides).
		if sb.Lost && p.Spec.RestartPolicy == "Never" && k+1 < len(p.Sandboxes) && p.recordsLeftAt(p.Sandboxes[k+1].Idx) {
			for _, m := range p.Mains {
				// Created: its process ran. A start that failed (the
				// runtime going down) left no record the kubelet could
				// count, and with every record lost it makes a new sandbox.
				if a := p.firstIn(m, int32(k)); a != nil && (a.Running != none || a.Exited != none) {
					hits = append(hits, p.at(p.Sandboxes[k+1].Idx, sb.End, "new sandbox under restartPolicy Never after main %q had been created", p.Ctrs[m].Name))
					break
				}
			}
		}
		if k == 0 || sb.Reset {
			continue // a RestartAllContainers reset is INV-RA7/RA8's business
		}
		fm := p.firstMainStart(int32(k))
		if fm == none {
			continue
		}
		for c := range p.NInit {
			if a := p.firstIn(c, int32(k)); a == nil || a.Start() > fm {
				hits = append(hits, p.at(fm, sb.Idx, "main container started in a new sandbox before %s %q was re-run", what(p.Ctrs[c].Role), p.Ctrs[c].Name))
				break
			}
		}
	}
	return hits
}

// recordsLeftAt reports whether the runtime held a record of any of the
// pod's containers at event i: one's latest attempt before i was created
// and no removal followed it (the runtime keeps one record per container).
func (p *Pod) recordsLeftAt(i int32) bool {
	for c := range p.Ctrs {
		if last := p.latestBefore(c, i); last != nil && p.eventOf(c, history.ContainerRemoved, last.Start(), i) == none {
			return true
		}
	}
	return false
}

func checkF5(p *Pod, hits []Hit) []Hit {
	for _, o := range p.Outages {
		if o.What != history.NodeDown {
			continue
		}
		up := p.n()
		if o.Up != none {
			up = o.Up
		}
		lost := p.sandboxAt(o.Down)
	scan:
		for i := o.Down + 1; i < p.n(); i++ {
			e := &p.Ev[i]
			switch e.Kind {
			case history.SandboxCreated:
				if i > up {
					break scan // a new sandbox: the old one is over
				}
			case history.ContainerStartRequested, history.ContainerRunning, history.ContainerPreStopBegin, history.ContainerStopRequested:
				if i < up {
					hits = append(hits, p.at(i, o.Down, "%s for %q while the node was down", e.Kind, e.Container))
					break scan
				}
				if (e.Kind == history.ContainerStartRequested || e.Kind == history.ContainerRunning) && p.sandboxAt(i) == lost && p.Sandboxes[lost].Idx < o.Down {
					hits = append(hits, p.at(i, o.Down, "%q restarted in a sandbox that did not survive the node going down", e.Container))
					break scan
				}
			}
		}
	}
	return hits
}

func checkF6(p *Pod, hits []Hit) []Hit {
	for _, o := range p.Outages {
		if o.What == history.NodeDown || o.Up == none {
			continue
		}
		w := p.termAt(o.Down)
		if w == nil {
			continue
		}
		dl := p.T(o.Up) + w.Grace + 2e9 + p.Tol
		for c := range p.Ctrs {
			a := p.attAt(c, o.Up)
			if a == nil {
				continue
			}
			switch {
			case a.Exited != none:
				if p.T(a.Exited) > dl {
					hits = append(hits, p.late(o.Up, a.Exited, dl, "%q exited %s after the %s came back during termination", p.Ctrs[c].Name, ms(p.T(a.Exited)-p.T(o.Up)), component(o.What)))
				}
			case p.Horizon > dl:
				hits = append(hits, p.late(o.Up, none, dl, "%q still running a full grace after the %s came back during termination", p.Ctrs[c].Name, component(o.What)))
			}
		}
	}
	return hits
}

// lostAfter reports whether sandbox sb ended lost after event i, or the
// real sandbox it is part of did: a RestartAllContainers reset continues
// it as a virtual sandbox (Sandbox.Reset) that the loss then ends (the
// sweep's kitchen-sink shape: a runtime restart that killed the containers
// of a pod reset and being deleted).
func (p *Pod) lostAfter(sb, i int32) bool {
	for k := sb; k >= 0 && int(k) < len(p.Sandboxes); k++ {
		s := &p.Sandboxes[k]
		if k > sb && !s.Reset {
			break
		}
		if s.Lost && s.End != none && s.End > i {
			return true
		}
	}
	return false
}

func checkF7(p *Pod, hits []Hit) []Hit {
	for _, o := range p.Outages {
		if o.What != history.RuntimeDown {
			continue
		}
		// A runtime restart keeps containers running. An exit within
		// tolerance of the restart itself, without a stop request, is the
		// restart killing it (a crash at that instant is not credible).
		for c := range p.Ctrs {
			a := p.attAt(c, o.Down)
			if a == nil || a.Exited == none || a.Stop != none || a.ExitReason == "OOMKilled" {
				continue
			}
			if a.Code != 137 && a.Code != 143 && a.Code != 255 {
				// A runtime that takes containers down kills them with a
				// signal (137, 143) or loses their shim (containerd reports
				// 255); an exit with the container's own code at that
				// instant is a coincidence (seen at 40k pods).
				continue
			}
			if p.lostAfter(a.Sandbox, o.Down) {
				continue // the restart took the sandbox with it: INV-F3's business
			}
			if p.killedByFault(c, a.Exited) {
				// An injected kill of this container at that instant
				// explains the exit (the sweep's prestop-runtime with harsh:
				// a kill timed on a preStop that began as the runtime came
				// back).
				continue
			}
			t := p.T(a.Exited)
			near := t-p.T(o.Down) <= p.Tol+1e6
			if o.Up != none {
				near = near || abs(t-p.T(o.Up)) <= p.Tol+1e6
			}
			if near {
				hits = append(hits, p.at(a.Exited, o.Down, "%q exited with the runtime restart", p.Ctrs[c].Name))
			}
		}
	}
	for c := range p.Ctrs {
		for _, i := range p.Ctrs[c].Ev {
			if p.Ev[i].Kind != history.ContainerStartFailed || p.termAt(i) != nil {
				continue
			}
			sb := p.sandboxAt(i)
			if p.nextStartAfter(c, i, sb) != nil || p.Ctrs[c].Role == RoleInit && p.doneIn(c, sb) != none && p.doneIn(c, sb) < i {
				continue
			}
			hits = p.expectRestart(hits, c, &Attempt{Sandbox: sb}, i, "its start failed")
		}
	}
	return hits
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

func checkF8(p *Pod, hits []Hit) []Hit {
	for c := range p.Ctrs {
		// Only the container's own policy under ContainerRestartRules
		// (no exit code for its rules), else the pod's.
		never := p.restartPolicyOf(c) == "Never"
		role := p.Ctrs[c].Role
		for k := range p.Ctrs[c].Att {
			a := &p.Ctrs[c].Att[k]
			if a.KillReason != "UnknownState" || p.termAt(max(a.Stop, a.PreStop)) != nil {
				continue
			}
			at := max(a.Stop, a.PreStop)
			switch {
			case role == RoleInit && never:
				if b := p.nextStartAfter(c, at, a.Sandbox); b != nil {
					hits = append(hits, p.at(b.Start(), at, "init %q in Unknown state recreated although its restart policy is Never", p.Ctrs[c].Name))
				} else if w := p.termAfter(at); (w == nil || w.T > p.T(at)+p.Slack()) && p.Horizon > p.T(at)+p.Slack() {
					hits = append(hits, p.late(at, none, p.T(at)+p.Slack(), "init %q in Unknown state with restart policy Never did not kill the pod", p.Ctrs[c].Name))
				}
			case role != RoleMain:
				hits = p.expectRestart(hits, c, a, at, "it was killed in Unknown state")
			}
		}
	}
	return hits
}

func checkU1(p *Pod, hits []Hit) []Hit {
	for _, i := range p.Images {
		c := p.ctr(p.Ev[i].Container)
		if c < 0 {
			continue
		}
		name := p.Ctrs[c].Name
		if w := p.termAt(i); w != nil {
			if j := p.specKill(c, i, w.End); j != none {
				hits = append(hits, p.at(j, i, "image change of %q took effect during termination", name))
			}
			continue
		}
		sb := p.sandboxAt(i)
		// The window in which the change is being applied: until c runs
		// again, or a bound after which it is overdue.
		dl := p.T(i) + 10e9 + p.Tol
		end := p.n()
		completedInit := p.Ctrs[c].Role == RoleInit && p.doneIn(c, sb) != none && p.doneIn(c, sb) < i
		runningInit := false
		if a := p.attAt(c, i); a != nil && p.Ctrs[c].Role == RoleInit && !completedInit {
			runningInit = true
			// computeInitContainerActions does not compare a running
			// regular init container with its spec: it is left to finish
			// (not restarted), and once it exited 0 it is done, so the
			// new image is never run.
			stop := p.n()
			if a.Exited != none {
				stop = a.Exited
			}
			if j := p.specKill(c, i, stop); j != none {
				hits = append(hits, p.at(j, i, "image change of running init %q stopped it", name))
			} else if a.Exited != none && a.Code == 0 {
				if b := p.nextStartAfter(c, a.Exited, sb); b != nil && !p.rerunAfterRemoval(c, b) {
					hits = append(hits, p.at(b.Start(), i, "image change of running init %q re-ran it after it completed", name))
				}
			}
			end = stop
		}
		b := p.nextStartAfter(c, i, sb)
		switch a := p.attAt(c, i); {
		case runningInit, completedInit:
			// Judged above and below: nothing restarts for the change.
		case b != nil:
			end = b.Start()
			if b.Running != none {
				end = b.Running
			}
		case a != nil:
			if (p.termAfter(i) == nil || p.termAfter(i).T > dl) && p.Horizon > dl {
				hits = append(hits, p.late(i, a.Stop, dl, "image change of running %s %q not applied within %s", what(p.Ctrs[c].Role), name, ms(dl-p.T(i))))
			}
		}
		if completedInit {
			if b := p.nextStartAfter(c, i, sb); b != nil && !p.rerunAfterRemoval(c, b) {
				hits = append(hits, p.at(b.Start(), i, "image change of completed init %q re-ran it", name))
			}
		}
		for d := range p.Ctrs {
			if d == c {
				continue
			}
			if j := p.specKill(d, i, end); j != none && !p.ownImageChange(d, j) {
				hits = append(hits, p.at(j, i, "image change of %q stopped %s %q too", name, what(p.Ctrs[d].Role), p.Ctrs[d].Name))
			}
			// Only a completed init container can be re-run: one that had
			// not run yet when the change arrived (the pod was still
			// initializing) starts for the first time.
			done := p.doneIn(d, sb)
			if done == none || done > i {
				continue
			}
			if b := p.nextStartAfter(d, i, sb); b != nil && b.Start() < end && p.Ctrs[d].Role == RoleInit &&
				p.eventOf(d, history.ContainerRemoved, done, b.Start()) == none {
				// (With its record removed, computeInitContainerActions
				// re-runs it for that alone: INV-F2's business.)
				hits = append(hits, p.at(b.Start(), i, "image change of %q re-ran init %q", name, p.Ctrs[d].Name))
			}
		}
	}
	return hits
}

// imageChanged reports whether container c's own image changed in
// (from, to): a SpecChanged stop of c is then c's own business.
func (p *Pod) imageChanged(c int, from, to int32) bool {
	for _, k := range p.Images {
		if k > from && k < to && p.ctr(p.Ev[k].Container) == c {
			return true
		}
	}
	return false
}

// ownImageChange reports whether the SpecChanged stop j of container c
// answers a change of c's own image since the attempt it stops began. A
// kubelet applies spec changes at its next sync (a real one up to a PLEG
// relist later), so c's change may precede another container's change
// whose window the stop falls in.
func (p *Pod) ownImageChange(c int, j int32) bool {
	from := none
	if a := p.attAt(c, j); a != nil {
		from = a.Start()
	}
	return p.imageChanged(c, from, j)
}

// specKill returns the first stop of c in (from, to) that is not the
// container's own business (probe failure) nor a whole-pod kill.
func (p *Pod) specKill(c int, from, to int32) int32 {
	for _, j := range p.Ctrs[c].Ev {
		if j > from && j < to && p.Ev[j].Kind == history.ContainerStopRequested && p.Ev[j].Reason == "SpecChanged" {
			return j
		}
	}
	return none
}

// component names the node component an outage is about.
func component(k history.Kind) string {
	switch k {
	case history.KubeletDown:
		return "kubelet"
	case history.RuntimeDown:
		return "runtime"
	}
	return "node"
}

// killedByFault reports whether a container-kill fault acted on container
// c at the instant of its exit i (within tolerance).
func (p *Pod) killedByFault(c int, i int32) bool {
	for k := range p.Faults {
		f := &p.Faults[k]
		if f.Name == "container-kill" && !f.NotApplied && p.Ev[f.Idx].Container == p.Ctrs[c].Name && abs(f.T-p.T(i)) <= p.Tol+1e6 {
			return true
		}
	}
	return false
}
