package check

import "github.com/sidebench/sidebench/harness/history"

// Start ordering, SEMANTICS.md §2.1. Each is checked per sandbox on the
// first start of each container in that sandbox ("first initialization");
// later restarts are the restart invariants' business.
var startInvs = []*inv{
	{id: "INV-S1", level: Hard, ex: exDefault, fn: checkS1,
		rule: "init container i+1 starts only after init i exited 0 (regular) or is started (sidecar)"},
	// Vacuous without a sidecar with a startup probe: it skips the others.
	{id: "INV-S2", level: Hard, ex: exDefault, fn: checkS2, needs: fSpecStartupSidecar,
		rule: "a sidecar with a startupProbe is Started only after the probe succeeded; a startup-probe kill runs preStop and restarts it"},
	// Vacuous without a postStart hook in the spec: both parts skip the
	// sidecars and mains without one.
	{id: "INV-S3", level: Hard, ex: exDefault, fn: checkS3, needs: fSpecPostStart,
		rule: "a sidecar is Started only after its postStart returned; main containers start one after another behind postStart"},
	{id: "INV-S4", level: Hard, ex: exDefault, fn: checkS4,
		rule: "readiness does not gate the next container: it starts promptly once the sidecar is started"},
	{id: "INV-S5", level: Hard, ex: exDefault, fn: checkS5,
		rule: "no main container starts before every regular init exited 0 and every sidecar is started"},
	// GC excuses S6: a failed init's record removed before a restarted
	// kubelet saw it (it exited while the kubelet was down) leaves nothing
	// that says it failed, and computeInitContainerActions starts the init
	// sequence again.
	// Vacuous without a regular init's exit with a code other than 0
	// outside a pod kill: it looks at those failures only.
	{id: "INV-S6", level: Hard, ex: exDefault | ExGC, fn: checkS6, needs: fInitFailAlone,
		rule: "a failed regular init blocks every later container until it succeeds; under Never it is not retried and the pod fails"},
}

// gate returns the event that must precede the first start of container
// c in sandbox sb, and the container it belongs to: for init container i
// its predecessor's done event; for a main, the latest done event of all
// init containers. It returns none if some predecessor is not done.
func (p *Pod) gate(c int, sb int32) (int32, int) {
	if c == 0 || p.NInit == 0 {
		return none, -1
	}
	if c < p.NInit {
		return p.doneIn(c-1, sb), c - 1
	}
	g, who := none, -1
	for k := range p.NInit {
		d := p.doneIn(k, sb)
		if d == none {
			return none, k
		}
		if d > g {
			g, who = d, k
		}
	}
	return g, who
}

// prevMainStarted is the event after which the kubelet could start main
// c in sandbox sb: the main before it in spec order, first started in sb
// before index before, running and past its postStart hook (or exited).
// none if c is not a main or is the first.
func (p *Pod) prevMainStarted(c int, sb, before int32) int32 {
	if c <= p.NInit {
		return none
	}
	a := p.firstIn(c-1, sb)
	if a == nil || a.Start() > before {
		return none
	}
	done := a.Running
	if a.PostStart != none && a.PostStart > done {
		done = a.PostStart
	}
	if a.Exited != none && (done == none || a.Exited < done) {
		done = a.Exited
	}
	if done == none || done > before {
		return none
	}
	return done
}

// exitedBefore reports whether container c had an attempt exit before
// event index i.
func (p *Pod) exitedBefore(c int, i int32) bool {
	for k := range p.Ctrs[c].Att {
		if e := p.Ctrs[c].Att[k].Exited; e != none && e < i {
			return true
		}
	}
	return false
}

func what(r Role) string {
	switch r {
	case RoleSidecar:
		return "sidecar"
	case RoleMain:
		return "main"
	}
	return "init"
}

func checkS1(p *Pod, hits []Hit) []Hit {
	for sb := range int32(len(p.Sandboxes)) {
		for c := 1; c < p.NInit; c++ {
			a := p.firstIn(c, sb)
			if a == nil {
				continue
			}
			prev := &p.Ctrs[c-1]
			if d := p.doneIn(c-1, sb); d == none || d > a.Start() {
				verb := "exited 0"
				if prev.Role == RoleSidecar {
					verb = "was started"
				}
				hits = append(hits, p.at(a.Start(), d, "%s %q started before %s %q %s", what(p.Ctrs[c].Role), p.Ctrs[c].Name, what(prev.Role), prev.Name, verb))
			}
		}
	}
	return hits
}

// checkS2 checks what the startup probe adds to INV-S1: Started=true is
// published only after the probe succeeded (INV-S1 then orders the next
// container behind Started, so the gate itself is S1's to report), and a
// sidecar killed for a failed startup probe runs its preStop and is
// restarted.
func checkS2(p *Pod, hits []Hit) []Hit {
	for _, s := range p.Sidecars {
		c := &p.Ctrs[s]
		if !c.Spec.Startup {
			continue
		}
		for k := range c.Att {
			a := &c.Att[k]
			if a.Started != none && (a.StartupOK == none || a.StartupOK > a.Started) {
				hits = append(hits, p.at(a.Started, a.StartupOK, "sidecar %q published Started=true before its startup probe succeeded", c.Name))
			}
			if a.KillReason != "StartupProbe" || a.Stop == none || p.termAt(a.Stop) != nil {
				continue
			}
			if c.Spec.PreStop && (a.PreStop == none || a.PreStop > a.Stop) && p.killGrace(c, a) != 0 {
				hits = append(hits, p.at(a.Stop, none, "sidecar %q killed for its startup probe without running preStop", c.Name))
			}
			hits = p.expectRestart(hits, s, a, a.Stop, "its startup probe failed")
		}
	}
	return hits
}

// checkS3 checks what postStart adds to INV-S1 for sidecars (Started=true
// only after the hook returned; S1 orders the next container behind
// Started) and, for main containers, that they start one after another
// behind a blocking postStart hook.
func checkS3(p *Pod, hits []Hit) []Hit {
	for _, s := range p.Sidecars {
		if !p.Ctrs[s].Spec.PostStart {
			continue
		}
		for k := range p.Ctrs[s].Att {
			a := &p.Ctrs[s].Att[k]
			if a.Started != none && (a.PostStart == none || a.PostStart > a.Started) && !p.hookCut(a, a.Started) {
				hits = append(hits, p.at(a.Started, a.PostStart, "sidecar %q published Started=true before its postStart hook returned", p.Ctrs[s].Name))
			}
			if a.Started != none && a.PostStartFailed && a.PostStart < a.Started {
				h := p.at(a.Started, a.PostStart, "sidecar %q published Started=true although its postStart hook failed", p.Ctrs[s].Name)
				h.Excuse = p.failedHookForgotten(a)
				hits = append(hits, h)
			}
		}
	}
	// Main containers are started one after another and postStart blocks.
	for sb := range int32(len(p.Sandboxes)) {
		for k := 0; k+1 < len(p.Mains); k++ {
			m, n := p.Mains[k], p.Mains[k+1]
			if !p.Ctrs[m].Spec.PostStart {
				continue
			}
			a, b := p.firstIn(m, sb), p.firstIn(n, sb)
			if a == nil || b == nil || a.Start() > b.Start() {
				continue
			}
			if a.Running == none && a.Exited == none {
				// Its StartContainer failed (a runtime restart): SyncPod
				// ignores the error and goes on to the next main; no hook
				// ran to wait for.
				continue
			}
			done := a.PostStart
			if done == none || (a.Exited != none && a.Exited < done) || a.PostStartFailed {
				// A failed hook kills the container inside the same
				// startContainer call: the next start waits for the exit,
				// or for the stop request if the runtime refused it.
				done = a.Exited
				if a.PostStartFailed && p.killFailed(a) && (done == none || a.Stop < done) {
					done = a.Stop
				}
			}
			if (done == none || done > b.Start()) && !p.hookCut(a, b.Start()) {
				hits = append(hits, p.at(b.Start(), done, "main %q started before main %q's postStart hook returned", p.Ctrs[n].Name, p.Ctrs[m].Name))
			}
		}
	}
	return hits
}

// checkS4 decides "readiness does not gate" the only way a history can:
// the container after a sidecar must start promptly (Slack) once the
// sidecar is started. A start that waited and came right after the
// Ready=true of a sidecar with a readiness probe is an Order hit
// (readiness was the gate, as in the 2019 design); any other wait is a
// Timing hit.
func checkS4(p *Pod, hits []Hit) []Hit {
	if len(p.Sidecars) == 0 {
		return hits
	}
	slack := p.Slack()
	for sb := range int32(len(p.Sandboxes)) {
		for c := 1; c < len(p.Ctrs); c++ {
			a := p.firstIn(c, sb)
			if a == nil {
				continue
			}
			g, who := p.gate(c, sb)
			if g == none || g > a.Start() || p.Ctrs[who].Role != RoleSidecar {
				continue
			}
			// The gate is the sidecar's latest Started before the start: an
			// earlier started attempt that was killed or exited meanwhile
			// (a probe kill, a crash) withdrew the gate, and the wait for
			// its successor is the restart, not readiness.
			if l := p.lastStartedBefore(who, sb, a.Start()); l != nil {
				if (l.Stop != none && l.Stop < a.Start()) || (l.Exited != none && l.Exited < a.Start()) {
					continue
				}
				g = l.Started
			}
			// The kubelet starts mains one by one, each after the previous
			// one runs and its postStart returned (SyncPod): a main waits
			// from then, not from the gate.
			from := g
			if prev := p.prevMainStarted(c, sb, a.Start()); prev > from {
				from = prev
			}
			wait := p.T(a.Start()) - p.T(from)
			if wait <= slack {
				continue
			}
			// A main that ran before (in a lost sandbox) restarts through
			// crash-loop backoff: doBackOff measures from its last exit,
			// which the kubelet did not purge (only init containers are).
			if p.Ctrs[c].Role == RoleMain && p.exitedBefore(c, a.Start()) && wait <= maxBackoff+slack {
				continue
			}
			s := &p.Ctrs[who]
			// Only a sidecar with a readiness probe has a readiness result
			// that could gate: without one, its Ready=true is the status
			// publication of a started container, and a start right after
			// it says how late the kubelet synced (a real kubelet waits up
			// to its PLEG relist period, 1 s), not what it waited for.
			// A start the runtime refused after the gate (it was down)
			// shows the kubelet did not wait for readiness, and a kubelet
			// that went down during the wait republishes Ready when it
			// relists, just before the start it resumes: either way the
			// wait is the outage's (a timing finding, which the outage
			// excuses), not readiness's (hook-kill-refused with harsh and
			// critical; sidecar-probes with image-churn and two-mains).
			outage := p.eventOf(c, history.ContainerStartFailed, g, a.Start()) != none || p.kubeletDownDuring(from, a.Start())
			if r := p.readyTrue(who, g, a.Start()); r != none && !outage && p.T(a.Start())-p.T(r) <= slack && (s.Spec == nil || s.Spec.Readiness) {
				hits = append(hits, p.at(a.Start(), g, "%q waited %s after sidecar %q was started, until it became ready: readiness gated the start", p.Ctrs[c].Name, ms(wait), s.Name))
				continue
			}
			h := p.at(a.Start(), from, "%q started %s after sidecar %q was started", p.Ctrs[c].Name, ms(wait), s.Name)
			h.Kind = Timing
			hits = append(hits, h)
		}
	}
	return hits
}

// readyTrue returns the last container.ready=true of c in (from, to).
func (p *Pod) readyTrue(c int, from, to int32) int32 {
	r := none
	for _, i := range p.Ctrs[c].Ev {
		if i > from && i < to && p.Ev[i].Kind == history.ContainerReady && p.Ev[i].Value {
			r = i
		}
	}
	return r
}

func checkS5(p *Pod, hits []Hit) []Hit {
	for sb := range int32(len(p.Sandboxes)) {
		for _, m := range p.Mains {
			a := p.firstIn(m, sb)
			if a == nil {
				continue
			}
			for c := range p.NInit {
				if d := p.doneIn(c, sb); d == none || d > a.Start() {
					verb := "exited 0"
					if p.Ctrs[c].Role == RoleSidecar {
						verb = "was started"
					}
					hits = append(hits, p.at(a.Start(), d, "main %q started before %s %q %s", p.Ctrs[m].Name, what(p.Ctrs[c].Role), p.Ctrs[c].Name, verb))
					break
				}
			}
		}
	}
	return hits
}

func checkS6(p *Pod, hits []Hit) []Hit {
	for _, c := range p.Inits {
		for k := range p.Ctrs[c].Att {
			a := &p.Ctrs[c].Att[k]
			if a.Exited == none || a.Code == 0 || a.Stop != none || p.termAt(a.Exited) != nil {
				continue // not a failure of its own
			}
			f, sb := a.Exited, a.Sandbox
			// ContainerShouldRestart: under ContainerRestartRules the init's
			// rules and own restartPolicy decide, else the pod's policy.
			never := !p.wantRestart(c, a.Code)
			// The failure blocks until a later attempt of c succeeds.
			until := p.n()
			if end := p.Sandboxes[sb].End; end != none {
				until = end
			}
			for j := k + 1; j < len(p.Ctrs[c].Att); j++ {
				b := &p.Ctrs[c].Att[j]
				if b.Sandbox != a.Sandbox || b.Start() < f {
					continue
				}
				if never {
					hits = append(hits, p.at(b.Start(), f, "init %q retried after exit %d, which its restart policy does not retry", p.Ctrs[c].Name, a.Code))
				}
				if b.Exited != none && b.Code == 0 {
					until = min(until, b.Exited)
				}
			}
			for d := c + 1; d < len(p.Ctrs); d++ {
				if b := p.nextStartAfter(d, f, sb); b != nil && b.Start() < until {
					hits = append(hits, p.at(b.Start(), f, "%q started after init %q failed (exit %d) and before it succeeded", p.Ctrs[d].Name, p.Ctrs[c].Name, a.Code))
				}
			}
			if never {
				for _, i := range p.Phases {
					if ph := p.Ev[i].Phase; i > f && (ph == "Running" || ph == "Succeeded") {
						hits = append(hits, p.at(i, f, "pod phase %s after init %q failed (exit %d) for good", ph, p.Ctrs[c].Name, a.Code))
						break
					}
				}
			}
		}
	}
	return hits
}

// lastStartedBefore returns the latest attempt of c in sandbox sb that
// became Started before event index i, or nil.
func (p *Pod) lastStartedBefore(c int, sb, i int32) *Attempt {
	var out *Attempt
	for k := range p.Ctrs[c].Att {
		if a := &p.Ctrs[c].Att[k]; a.Sandbox == sb && a.Started != none && a.Started < i {
			out = a
		}
	}
	return out
}
