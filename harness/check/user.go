package check

import (
	"fmt"

	"github.com/sidebench/sidebench/harness/history"
)

// User-level guarantees (Level User): what the user of a sidecar wanted,
// stated without kubelet terms, so that they judge every policy the same
// way — the native design, its 2019 proposal, no sidecar support, and the
// workarounds people ran before 1.28 (harness/workaround). Their roles
// are the user's: a sidecar is a container the template declares as one
// (history.ContainerSpec.UserSidecar), whatever the workaround runs it as;
// a main is any other main container, and its application starts at
// container.app-started when its entrypoint waits for the sidecars
// (WaitsForSidecars), at container.running otherwise.
//
// A sidecar serves from its container.serving (the runtime's truth; a
// history without serving events falls back on the kubelet's evidence: a
// startup or readiness probe success, or the Ready flag) until its exit,
// and not between a readiness probe failure and the next success.
//
// Kubernetes promises none of this, so a failure is never a violation: it
// is Unmet, attributed to the fault that can have caused it, and changes
// no verdict. Each checker reports at most one finding per pod (its
// earliest), so Row.Unmet counts pods. The startup cost the group also
// compares (pod_startup, sidecar_gate) is a measurement: harness/metrics.
var userInvs = []*inv{
	{id: "USER-APP-PROXY", level: User, fn: checkAppProxy,
		rule: "app-never-without-proxy: from its start until the pod terminates, no main's application runs while a sidecar does not serve (a start before the sidecar served, a sidecar crash, OOM kill or readiness failure)"},
	// Vacuous without a pod kill or a node outage.
	{id: "USER-PROXY-OUTLIVES", level: User, fn: checkProxyOutlives, needs: fTerm | fNodeDown,
		rule: "proxy-outlives-app: when the pod is killed (deletion, completion, node shutdown) or its node goes down, every sidecar running then is still running when the last main exits"},
	{id: "USER-JOB-COMPLETES", level: User, fn: checkJobCompletes,
		rule: "job-completes: a Job pod (restartPolicy not Always) reaches a terminal phase within grace + 2 s of its mains finishing, Succeeded if they all exited 0, and no main waits forever for a sidecar that will not restart"},
}

// userCut is where the pod's termination begins (deletion, a whole-pod
// kill, a node shutdown): app-never-without-proxy judges the time before
// it, proxy-outlives-app what follows. p.n() if never.
func (p *Pod) userCut() int32 {
	cut := p.n()
	if p.Deleted != none {
		cut = min(cut, p.Deleted)
	}
	if len(p.Terms) > 0 {
		cut = min(cut, p.Terms[0].Idx)
	}
	if len(p.Shutdowns) > 0 {
		cut = min(cut, p.Shutdowns[0])
	}
	return cut
}

// appStart is where attempt a of main m started its application: its
// container.app-started when its entrypoint waits, its process start
// otherwise; none if the application never started.
func (p *Pod) appStart(m int, a *Attempt) int32 {
	if p.Ctrs[m].Spec.WaitsForSidecars {
		return a.App
	}
	return a.Running
}

// span is a stretch of the history [from, to) by event index; cause is
// the event that opened it (none: nothing has happened yet).
type span struct{ from, to, cause int32 }

// served appends the stretches during which sidecar s served, in order,
// to out.
func (p *Pod) served(s int, out []span) []span {
	runtimeTruth := p.Ctrs[s].serving // a container.serving among its events
	for k := range p.Ctrs[s].Att {
		a := &p.Ctrs[s].Att[k]
		if a.Running == none {
			continue
		}
		end := p.attemptEnd(a)
		if end == none {
			end = p.n()
		}
		on := none
		if runtimeTruth {
			on = a.Serving
		}
		for _, i := range p.Ctrs[s].Ev {
			if i <= a.Running || i >= end {
				continue
			}
			e := &p.Ev[i]
			evidence := !runtimeTruth && (e.Kind == history.ContainerReady && e.Value ||
				e.Kind == history.ProbeResult && e.Result == "success" && (e.Probe == "readiness" || e.Probe == "startup"))
			switch {
			case on == none && (evidence || i == a.Serving):
				on = i
			case runtimeTruth && on == none && i > a.Serving && a.Serving != none && e.Kind == history.ProbeResult && e.Probe == "readiness" && e.Result == "success":
				on = i // serving again after a readiness failure
			case on != none && e.Kind == history.ProbeResult && e.Probe == "readiness" && e.Result == "failure":
				out = append(out, span{from: on, to: i, cause: i})
				on = none
			}
		}
		if !runtimeTruth && on == none && !p.Ctrs[s].Spec.Startup && !p.Ctrs[s].Spec.Readiness {
			on = a.Running // no probe: the kubelet's only evidence is the process
		}
		if on != none && on < end {
			out = append(out, span{from: on, to: end, cause: end})
		}
	}
	return out
}

// unserved returns the stretches during which sidecar s did not serve:
// the complement of served, each with the event that opened it (the
// previous stretch's end: an exit, a readiness failure; none before the
// first). It reuses the pod's scratch space: valid until the next call.
func (p *Pod) unserved(s int) []span {
	p.spans = p.served(s, p.spans[:0])
	out := p.gaps[:0]
	from, cause := int32(0), none
	for _, sp := range p.spans {
		if sp.from > from {
			out = append(out, span{from: from, to: sp.from, cause: cause})
		}
		from, cause = sp.to, sp.to
	}
	if from < p.n() {
		out = append(out, span{from: from, to: p.n(), cause: cause})
	}
	p.gaps = out
	return out
}

// tAt is the time of index i, the horizon for p.n().
func (p *Pod) tAt(i int32) int64 {
	if i >= p.n() {
		return p.Horizon
	}
	return p.T(i)
}

func checkAppProxy(p *Pod, hits []Hit) []Hit {
	if len(p.USidecars) == 0 || len(p.UMains) == 0 {
		return hits
	}
	cut := p.userCut()
	best := Hit{T: -1}
	for _, s := range p.USidecars {
		gaps := p.unserved(s)
		for _, m := range p.UMains {
			for j := range p.Ctrs[m].Att {
				a := &p.Ctrs[m].Att[j]
				start := p.appStart(m, a)
				if start == none || start >= cut {
					continue
				}
				end := p.attemptEnd(a)
				if end == none || end > cut {
					end = cut
				}
				for _, g := range gaps {
					from, to := max(start, g.from), min(end, g.to)
					// A gap of no duration is no exposure: the app and the
					// sidecar died, or came up, at the same instant.
					if from >= to || p.tAt(to) <= p.tAt(from) {
						continue
					}
					if best.T >= 0 && p.tAt(from) >= best.T {
						break
					}
					best = p.proxyGapHit(m, s, start, from, to, g)
					break
				}
			}
		}
	}
	if best.T >= 0 {
		hits = append(hits, best)
	}
	return hits
}

// proxyGapHit describes main m's application running without sidecar s
// during [from, to) (gap g; the application started at start).
func (p *Pod) proxyGapHit(m, s int, start, from, to int32, g span) Hit {
	mn, sn := p.Ctrs[m].Name, p.Ctrs[s].Name
	d := ms(p.tAt(to) - p.tAt(from))
	var h Hit
	switch {
	case g.cause == none || g.cause < start:
		cause := "had not served yet"
		if g.cause != none {
			cause = "was not serving (" + p.describe(g.cause) + ")"
		}
		// A gap open to the end of the history has no closing event
		// (g.to is past the last one): the hit is the start alone. at()
		// read the time of g.to and panicked on such a gap (FuzzCheck).
		other := g.to
		if other >= p.n() {
			other = start
		}
		h = p.at(start, other, "%q's application started while %q %s: %s without it", mn, sn, cause, d)
	default:
		h = p.at(g.cause, start, "%q stopped serving (%s) while %q's application ran: %s without it", sn, p.describe(g.cause), mn, d)
	}
	if g.to >= p.n() {
		h.B = start
	}
	h.T = p.tAt(from)
	h.From = h.T
	return h
}

// describe names what event i is, for messages.
func (p *Pod) describe(i int32) string {
	if i >= p.n() {
		return "end of history"
	}
	e := &p.Ev[i]
	switch e.Kind {
	case history.ContainerExited:
		return fmt.Sprintf("exited %d %s", e.Code, e.Reason)
	case history.ProbeResult:
		return e.Probe + " probe failed"
	case history.SandboxLost:
		return "sandbox lost"
	}
	return e.Kind.String()
}

func checkProxyOutlives(p *Pod, hits []Hit) []Hit {
	if len(p.USidecars) == 0 || len(p.UMains) == 0 {
		return hits
	}
	// Whole-pod kills, then node losses: each is a moment the sidecars
	// running then must outlive the mains running then.
	for t := range p.Terms {
		if h, ok := p.outlives(p.Terms[t].Idx); ok {
			h.Msg = fmt.Sprintf(h.Msg, "pod "+p.Terms[t].Reason)
			return append(hits, h)
		}
	}
	for _, o := range p.Outages {
		if o.What != history.NodeDown {
			continue
		}
		if h, ok := p.outlives(o.Down); ok {
			h.Msg = fmt.Sprintf(h.Msg, "node down")
			return append(hits, h)
		}
	}
	return hits
}

// outlives judges the kill at index at: a hit whose message has a %s for
// what the kill was, if a sidecar running then did not outlive the last
// main running then.
func (p *Pod) outlives(at int32) (Hit, bool) {
	lastMain, last := none, -1
	for _, m := range p.UMains {
		a := p.attAt(m, at)
		if a == nil || p.appStart(m, a) == none || p.appStart(m, a) > at {
			continue
		}
		end := p.attemptEnd(a)
		if end == none {
			end = p.n()
		}
		if end > lastMain {
			lastMain, last = end, m
		}
	}
	if lastMain == none {
		return Hit{}, false
	}
	for _, s := range p.USidecars {
		a := p.attAt(s, at)
		if a == nil {
			continue
		}
		end := p.attemptEnd(a)
		if end == none || lastMain < p.n() && p.T(end) > p.T(lastMain) {
			continue
		}
		// Exits at the same instant: the sidecar outlived the mains
		// unless it was killed with them (SIGKILL, its node gone),
		// whatever order the history lists the deaths in: no ordering
		// at all.
		if lastMain < p.n() && p.T(end) == p.T(lastMain) && !p.killedAt(s, a, end) {
			continue
		}
		sn, mn, why := p.Ctrs[s].Name, p.Ctrs[last].Name, p.describe(end)
		switch {
		case lastMain >= p.n():
			return p.at(end, at, "at %%s, sidecar %q (%s) did not outlive main %q (still running at the end of the history)", sn, why, mn), true
		case p.T(end) == p.T(lastMain):
			return p.at(end, lastMain, "at %%s, sidecar %q (%s) was killed with main %q at the same instant: no ordering", sn, why, mn), true
		}
		return p.at(end, lastMain, "at %%s, sidecar %q (%s) did not outlive main %q (exit %s later)", sn, why, mn, ms(p.tAt(lastMain)-p.T(end))), true
	}
	return Hit{}, false
}

// failedBySidecar returns the user sidecar whose failed exit decided a
// Job's Failed phase though its mains succeeded by index done, or -1:
// a sidecar that exited non-zero (its exit counted: a regular container,
// or a design that counts sidecars), with no pod termination or node
// shutdown before done (those fail a pod on their own: reason
// Terminated). Under kep753 the phase ignores sidecars (INV-C2): its pods
// do not get here.
func (p *Pod) failedBySidecar(done int32) int {
	if len(p.Terms) > 0 && p.Terms[0].Idx < done || len(p.Shutdowns) > 0 && p.Shutdowns[0] < done {
		return -1
	}
	for _, s := range p.USidecars {
		if a := p.last(s); a != nil && a.Exited != none && a.Code != 0 {
			return s
		}
	}
	return -1
}

// killedAt reports whether attempt a of c ended at index end by a kill:
// SIGKILL (the grace ran out), its node going down or its sandbox lost.
func (p *Pod) killedAt(c int, a *Attempt, end int32) bool {
	if a.Kill != none || a.Exited == none {
		return true
	}
	for _, o := range p.Outages {
		if o.What == history.NodeDown && o.Down < end && p.T(o.Down) == p.T(end) {
			return true
		}
	}
	return false
}

func checkJobCompletes(p *Pod, hits []Hit) []Hit {
	if p.Spec.RestartPolicy == "Always" || p.Spec.RestartPolicy == "" || len(p.UMains) == 0 {
		return hits
	}
	ended := func(after int32) int32 { // the first terminal phase or removal after index after
		for _, i := range p.Phases {
			if i > after && (p.Ev[i].Phase == "Succeeded" || p.Ev[i].Phase == "Failed") {
				return i
			}
		}
		if p.Removed != none && p.Removed > after {
			return p.Removed
		}
		return none
	}
	// (a) Every main finished for good at done: the pod must end soon,
	// Succeeded if they all exited 0.
	done, ok := int32(0), true
	for _, m := range p.UMains {
		a := p.last(m)
		if a == nil || a.Exited == none || p.wantRestart(m, a.Code) {
			done = none
			break
		}
		done = max(done, a.Exited)
		ok = ok && a.Code == 0
	}
	if done != none {
		deadline := p.T(done) + p.Spec.Grace + 2e9 + p.Slack()
		end := ended(done)
		switch {
		case end != none && ok && p.Ev[end].Kind == history.PodPhase && p.Ev[end].Phase == "Failed" && p.failedBySidecar(done) >= 0:
			// The mains succeeded; a sidecar failed the Job (what INV-C2
			// rules out for native ones).
			s := p.failedBySidecar(done)
			return append(hits, p.at(end, done, "the mains succeeded but the Job failed: sidecar %q (%s) decided the phase", p.Ctrs[s].Name, p.describe(p.last(s).Exited)))
		case end != none && p.T(end) <= deadline:
		case end == none && p.Horizon <= deadline:
			// The history stops before the deadline: nothing to judge.
		default:
			what := "no terminal phase by the end of the history"
			if end != none {
				what = fmt.Sprintf("terminal only %s later", ms(p.T(end)-p.T(done)))
			}
			h := p.at(done, end, "the mains finished at %s but the pod hangs: %s (deadline grace + 2s)", ms(p.T(done)), what)
			h.T, h.From = deadline, p.T(done)
			return append(hits, h)
		}
		return hits
	}
	// (b) A main's wrapper waits, at the end of the history, for a sidecar
	// that exited and will not restart: the Job never finishes.
	if ended(0) != none {
		return hits
	}
	for _, m := range p.UMains {
		a := p.last(m)
		if a == nil || !p.Ctrs[m].Spec.WaitsForSidecars || a.Running == none || a.App != none || p.attemptEnd(a) != none {
			continue
		}
		for _, s := range p.USidecars {
			sa := p.last(s)
			if sa == nil || sa.Exited == none || sa.Exited < a.Running || p.Ctrs[s].Role == RoleSidecar || p.wantRestart(s, sa.Code) {
				continue
			}
			h := p.at(sa.Exited, a.Running, "main %q waits for sidecar %q, which %s and will not restart: the Job hangs", p.Ctrs[m].Name, p.Ctrs[s].Name, p.describe(sa.Exited))
			h.T = p.Horizon
			return append(hits, h)
		}
	}
	return hits
}
