package check

import "github.com/sidebench/sidebench/harness/history"

// Termination ordering and grace accounting, SEMANTICS.md §2.5. They are
// judged per whole-pod kill (Term): which containers were running when
// pod.terminating was recorded, and what each of them got afterwards.
var termInvs = []*inv{
	// Vacuous without a preStop hook in the spec: it skips the others.
	{id: "INV-T1", level: BestEffort, ex: exDefault | ExOOM, fn: checkT1, needs: fSpecPreStop,
		rule: "at pod termination the preStop hooks of all running containers begin together (1 s skew + tolerance)"},
	// T2-T5 and T9 judge each pod kill: vacuous without one.
	{id: "INV-T2", level: Hard, ex: exDefault, fn: checkT2, needs: fTerm,
		rule: "a main container's SIGTERM follows its own preStop promptly and waits for no other container"},
	{id: "INV-T3", level: BestEffort, ex: exDefault, fn: checkT3, needs: fTerm,
		rule: "a sidecar's SIGTERM comes after every main container running at kill time exited (until the grace expires)"},
	{id: "INV-T4", level: BestEffort, ex: exDefault, fn: checkT4, needs: fTerm,
		rule: "sidecars stop in reverse spec order: SIGTERM(Si) after EXIT(next sidecar) (until the grace expires)"},
	{id: "INV-T5", level: Hard, ex: exDefault, fn: checkT5, needs: fTerm,
		rule: "every container running at kill time has exited by grace + 2s (+ 1s of whole-second truncation, + tolerance); no stop grace below 2s"},
	// Vacuous without an attempt first stopped while its preStop ran: it
	// judges a.PreStop < a.Stop with no a.PreStopEnd before a.Stop.
	{id: "INV-T6", level: BestEffort, ex: exDefault | ExOOM, fn: checkT6, needs: fStopInHook,
		rule: "a container's SIGTERM is never sent before its own preStop finished, unless its budget expired"},
	// Vacuous without a container.stop-requested (Attempt.Stop).
	{id: "INV-T7", level: Hard, ex: exDefault | ExOOM, fn: checkT7, needs: fStop,
		rule: "after SIGKILL the exit is 137/Error; after SIGTERM alone exit 0 means Completed; no SIGKILL before the stop grace"},
	// Vacuous without pod.deleted.
	{id: "INV-T8", level: Hard, ex: exDefault | ExGC, fn: checkT8, needs: fDeleted,
		rule: "a deleted pod reaches a terminal phase before removal: Succeeded iff every main exited 0"},
	{id: "INV-T9", level: Hard, ex: exDefault, fn: checkT9, needs: fTerm,
		rule: "containers not running at kill time are ignored by ordering: a sidecar with nothing running to wait for is signalled promptly"},
	// Vacuous without an attempt begun after a pod.terminating.
	{id: "INV-T10", level: Hard, ex: exDefault, fn: checkT10, needs: fStartAfterKill,
		rule: "after pod.terminating no container is started or restarted until a new sandbox"},
}

// readyToStop is when attempt a of container c may be signalled at kill w
// regardless of ordering: at the kill, or when its preStop ended (budget
// expiry if it never did).
func (p *Pod) readyToStop(c int, a *Attempt, w *Term) int64 {
	begin, end := a.PreStop, a.PreStopEnd
	if begin != none && begin < w.Idx {
		// The hook began under an earlier kill (the attempt records the
		// first hook only). A kill retried after a kubelet restart runs it
		// again: the new kubelet's killContainer does not know it ran.
		if b := p.eventOf(c, history.ContainerPreStopBegin, w.Idx-1, w.End); b != none {
			begin, end = b, p.eventOf(c, history.ContainerPreStopEnd, b, w.End)
		} else if end != none && end < w.Idx {
			begin = none // it ended before this kill
		}
		// Otherwise it still runs (a probe kill's, cut short by the
		// deletion): this kill waits on it within its own budget, as the
		// kubelet waits on the hook it runs again.
	}
	switch {
	case begin == none:
		return w.T
	case end != none:
		return p.T(end)
	}
	return w.expiry()
}

func checkT1(p *Pod, hits []Hit) []Hit {
	for t := range p.Terms {
		w := &p.Terms[t]
		dl := w.T + p.Slack()
		for c := range p.Ctrs {
			if !w.ran(c) || !p.Ctrs[c].Spec.PreStop {
				continue
			}
			a := p.attAt(c, w.Idx)
			switch {
			case a.PreStop != none && a.PreStop > w.Idx && p.T(a.PreStop) > dl:
				hits = append(hits, p.late(w.Idx, a.PreStop, dl, "preStop of %q began %s after pod termination", p.Ctrs[c].Name, ms(p.T(a.PreStop)-w.T)))
			case a.PreStop == none && (a.Exited == none || p.T(a.Exited) > dl) && p.Horizon > dl && (w.End == p.n() || p.T(w.End) > dl):
				hits = append(hits, p.late(w.Idx, a.Stop, dl, "preStop of %q never ran at pod termination", p.Ctrs[c].Name))
			}
		}
	}
	return hits
}

func checkT2(p *Pod, hits []Hit) []Hit {
	for t := range p.Terms {
		w := &p.Terms[t]
		for _, m := range p.Mains {
			if !w.ran(m) {
				continue
			}
			a := p.attAt(m, w.Idx)
			if a.Stop == none || a.Stop > w.End {
				continue
			}
			ready := p.readyToStop(m, a, w)
			if d := p.T(a.Stop) - ready; d > p.Slack() {
				hits = append(hits, p.late(w.Idx, a.Stop, ready+p.Slack(), "main %q signalled %s after it could have been", p.Ctrs[m].Name, ms(d)))
			}
		}
	}
	return hits
}

// orderHit builds a T3/T4 hit for sidecar attempt a signalled at a.Stop
// before event other; past the budget it is a degradation (INV-T5 rules).
func (p *Pod) orderHit(w *Term, a *Attempt, other int32, format string, args ...any) Hit {
	h := p.at(a.Stop, other, format, args...)
	if p.T(a.Stop) >= w.expiry()-p.Tol {
		h.Excuse = "grace expired"
	}
	return h
}

func checkT3(p *Pod, hits []Hit) []Hit {
	for t := range p.Terms {
		w := &p.Terms[t]
		for _, s := range p.Sidecars {
			if !w.ran(s) {
				continue
			}
			a := p.attAt(s, w.Idx)
			if a.Stop == none || a.Stop < w.Idx || a.Stop >= w.End {
				continue
			}
			for _, m := range p.Mains {
				if !w.ran(m) {
					continue
				}
				if ex := p.attAt(m, w.Idx).Exited; ex == none || ex > a.Stop {
					hits = append(hits, p.orderHit(w, a, ex, "sidecar %q signalled before main %q exited", p.Ctrs[s].Name, p.Ctrs[m].Name))
					break
				}
			}
		}
	}
	return hits
}

// checkT4 checks the relation the kubelet enforces (K-TO): each sidecar
// waits for the next sidecar in spec order. When that one was not running
// at kill time the kubelet does not order the pair around it, and neither
// do we; with every sidecar running this is exactly "reverse spec order".
func checkT4(p *Pod, hits []Hit) []Hit {
	for t := range p.Terms {
		w := &p.Terms[t]
		for k := 0; k+1 < len(p.Sidecars); k++ {
			s, n := p.Sidecars[k], p.Sidecars[k+1]
			if !w.ran(s) || !w.ran(n) {
				continue
			}
			a := p.attAt(s, w.Idx)
			if a.Stop == none || a.Stop < w.Idx || a.Stop >= w.End {
				continue
			}
			if ex := p.attAt(n, w.Idx).Exited; ex == none || ex > a.Stop {
				hits = append(hits, p.orderHit(w, a, ex, "sidecar %q signalled before the later sidecar %q exited", p.Ctrs[s].Name, p.Ctrs[n].Name))
			}
		}
	}
	return hits
}

func checkT5(p *Pod, hits []Hit) []Hit {
	for t := range p.Terms {
		w := &p.Terms[t]
		// The kubelet counts grace in whole seconds: the preStop time and
		// the ordering wait are subtracted truncated (killContainer), so a
		// container's SIGKILL can come up to 1 s after grace + 2 s.
		dl := w.expiry() + 3e9 + p.Tol
		for c := range p.Ctrs {
			if !w.ran(c) {
				continue
			}
			a := p.attAt(c, w.Idx)
			if a.Stop != none && a.Stop > w.Idx && a.StopGrace > 0 && a.StopGrace < 2e9 {
				hits = append(hits, p.at(a.Stop, w.Idx, "%q stop grace %s is below the 2s minimum", p.Ctrs[c].Name, ms(a.StopGrace)))
			}
			switch {
			case a.Exited != none && a.Exited < w.End:
				if p.T(a.Exited) > dl {
					hits = append(hits, p.late(w.Idx, a.Exited, dl, "%q exited %s into a kill with %s grace", p.Ctrs[c].Name, ms(p.T(a.Exited)-w.T), ms(w.Grace)))
				}
			case w.End == p.n() && p.Horizon > dl || w.End < p.n() && p.T(w.End) > dl:
				hits = append(hits, p.late(w.Idx, none, dl, "%q still running %s into a kill with %s grace", p.Ctrs[c].Name, ms(dl-w.T), ms(w.Grace)))
			}
		}
	}
	return hits
}

func checkT6(p *Pod, hits []Hit) []Hit {
	for c := range p.Ctrs {
		for k := range p.Ctrs[c].Att {
			a := &p.Ctrs[c].Att[k]
			if a.PreStop == none || a.Stop == none || a.Stop < a.PreStop || a.PreStopEnd != none && a.PreStopEnd < a.Stop {
				continue
			}
			if p.Ev[a.Stop].Reason == "RestartAllContainers" || p.kubeletRestartedBetween(a.PreStop, a.Stop) {
				// A reset kill runs no preStop (INV-RA5); a restarted kubelet
				// does not know the hook its predecessor started (INV-F6).
				continue
			}
			base, grace := p.T(a.PreStop), p.Spec.Grace
			if w := p.termAt(a.PreStop); w != nil {
				base, grace = w.T, w.Grace
			}
			for t := range p.Terms {
				// A pod kill that began while the hook (a probe kill's) still
				// ran makes it its own: the kubelet runs it again within the
				// pod kill's budget and stops the container at its expiry
				// (readyToStop; hanging-hooks composed with startup-kills).
				if w := &p.Terms[t]; w.Idx > a.PreStop && w.Idx < a.Stop {
					base, grace = w.T, w.Grace
				}
			}
			if p.T(a.Stop) < base+grace-p.Tol {
				hits = append(hits, p.at(a.Stop, a.PreStop, "%q signalled before its preStop hook finished, %s before its budget expired", p.Ctrs[c].Name, ms(base+grace-p.T(a.Stop))))
			}
		}
	}
	return hits
}

func checkT7(p *Pod, hits []Hit) []Hit {
	for c := range p.Ctrs {
		for k := range p.Ctrs[c].Att {
			a := &p.Ctrs[c].Att[k]
			if a.Stop == none || a.Exited == none || a.Exited < a.Stop {
				continue
			}
			name := p.Ctrs[c].Name
			// The grace is the first stop request's the runtime took and
			// kept. A container whose every request was refused and that
			// was SIGKILLed all the same was killed by the sandbox stop
			// (killPodWithSyncResult stops the sandbox whatever the
			// containers' results), with no grace.
			sig, grace := a.Signal, int64(0)
			end := a.Exited
			if a.Kill != none && a.Kill < end {
				end = a.Kill
			}
			// A runtime restart after the request lost its SIGKILL timer
			// (the call in flight failed): no grace to judge by.
			if sig != none && sig < a.Exited && !p.runtimeRestartedBetween(sig, end) {
				grace = p.Ev[sig].Grace
			}
			if a.Kill != none && a.Kill < a.Exited {
				if grace > 0 && p.T(a.Kill) < p.T(sig)+grace-p.Tol {
					hits = append(hits, p.at(a.Kill, sig, "%q SIGKILLed %s after SIGTERM, before its %s stop grace", name, ms(p.T(a.Kill)-p.T(sig)), ms(grace)))
				}
				if a.Code != 137 || a.ExitReason != "Error" {
					hits = append(hits, p.at(a.Exited, a.Kill, "%q SIGKILLed but exited %d/%s, want 137/Error", name, a.Code, a.ExitReason))
				}
				continue
			}
			if (a.Code == 0) != (a.ExitReason == "Completed") && a.ExitReason != "OOMKilled" {
				hits = append(hits, p.at(a.Exited, a.Stop, "%q exited %d with reason %q after SIGTERM", name, a.Code, a.ExitReason))
			}
			if grace > 0 && p.T(a.Exited) > p.T(sig)+grace+p.Slack() {
				hits = append(hits, p.late(sig, a.Exited, p.T(sig)+grace+p.Slack(), "%q outlived its %s stop grace without SIGKILL", name, ms(grace)))
			}
		}
	}
	return hits
}

func checkT8(p *Pod, hits []Hit) []Hit {
	if p.Deleted == none || p.Ev[p.Deleted].Grace == 0 || p.Sandboxes[0].Idx == none {
		// A pod no kubelet ever ran (no sandbox) is removed by the API
		// server directly.
		// Force deletion (grace 0) removes the object without waiting.
		return hits
	}
	for _, i := range p.Phases {
		if terminal(p.Ev[i].Phase) {
			if i > p.Deleted {
				hits = p.phaseHit(hits, i)
			}
			return hits
		}
	}
	if p.Removed != none {
		hits = append(hits, p.at(p.Removed, p.Deleted, "deleted pod removed without a terminal phase"))
	}
	return hits
}

func checkT9(p *Pod, hits []Hit) []Hit {
	for t := range p.Terms {
		w := &p.Terms[t]
		for k, s := range p.Sidecars {
			if !w.ran(s) || k+1 < len(p.Sidecars) && w.inKill(p.Sidecars[k+1]) {
				continue
			}
			waits := false
			for _, m := range p.Mains {
				waits = waits || w.inKill(m)
			}
			if waits {
				continue
			}
			a := p.attAt(s, w.Idx)
			if a.Stop == none || a.Stop < w.Idx || a.Stop >= w.End {
				continue
			}
			ready := p.readyToStop(s, a, w)
			if d := p.T(a.Stop) - ready; d > p.Slack() {
				h := p.late(w.Idx, a.Stop, ready+p.Slack(), "sidecar %q had nothing running to wait for but was signalled %s late", p.Ctrs[s].Name, ms(d))
				if p.T(a.Stop) >= w.expiry()-p.Tol {
					h.Kind = Order // it waited out the whole budget for a container that never ran
				}
				hits = append(hits, h)
			}
		}
	}
	return hits
}

func checkT10(p *Pod, hits []Hit) []Hit {
	covered := none
	for t := range p.Terms {
		w := &p.Terms[t]
		if w.Idx < covered {
			continue // a retried kill (INV-F6) is the same termination
		}
		end := p.n()
		if w.Abandoned {
			end = w.End
		}
		for k := range p.Sandboxes {
			if sb := p.Sandboxes[k].Idx; sb > w.Idx {
				end = min(end, sb)
				break
			}
		}
		for c := range p.Ctrs {
			if p.Ctrs[c].Role == RoleSidecar && p.restartableDuringTermination() {
				continue
			}
			for k := range p.Ctrs[c].Att {
				if a := &p.Ctrs[c].Att[k]; a.Start() > w.Idx && a.Start() < end {
					hits = append(hits, p.at(a.Start(), w.Idx, "%s %q started during pod termination (%s)", what(p.Ctrs[c].Role), p.Ctrs[c].Name, w.Reason))
				}
			}
		}
		covered = end
	}
	return hits
}

// kubeletDownDuring reports whether the kubelet was down at some point of
// (i, j): it went down before j and was not back before i.
func (p *Pod) kubeletDownDuring(i, j int32) bool {
	for k := range p.Outages {
		if o := &p.Outages[k]; (o.What == history.KubeletDown || o.What == history.NodeDown) && o.during(i, j) {
			return true
		}
	}
	return false
}

// kubeletRestartedBetween reports whether the kubelet went down in (i, j).
func (p *Pod) kubeletRestartedBetween(i, j int32) bool {
	for _, o := range p.Outages {
		if (o.What == history.KubeletDown || o.What == history.NodeDown) && o.beganIn(i, j) {
			return true
		}
	}
	return false
}
