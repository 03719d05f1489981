package check

import "github.com/sidebench/sidebench/harness/history"

// Probes and validation, SEMANTICS.md §2.4.
var probeInvs = []*inv{
	// Vacuous without a probe or hook on a regular init, in its spec or
	// in its events.
	{id: "INV-P4", level: Hard, ex: 0, fn: checkP4, needs: fInitHook,
		rule: "probes and lifecycle hooks exist on sidecars and mains only: a regular init container has none (API validation)"},
	// Vacuous without a probe result other than startup's before the
	// attempt's first startup success, in a container with a startup
	// probe (the first part: at that event the attempt is the latest, and
	// its StartupOK, set once, is still none), or an attempt killed for a
	// probe (the second part).
	{id: "INV-P5", level: Hard, ex: exDefault, fn: checkP5, needs: fEarlyProbe | fProbeKill,
		rule: "readiness and liveness probes run only after the startup probe succeeded; a liveness or startup kill uses the probe-level grace"},
	// Vacuous without a probe result inside a pod kill, or a stop or
	// preStop whose own reason is LivenessProbe or StartupProbe.
	{id: "INV-P6", level: Hard, ex: exDefault, fn: checkP6, needs: fProbeInKill | fProbeReason,
		rule: "during pod termination the mains' liveness and startup probes stop, no probe kills anything, readiness keeps being applied"},
}

// checkP4: the API server rejects probes and hooks on a regular init
// container (pkg/apis/core/validation validateInitContainers), so a pod
// that has them was accepted wrongly, and a kubelet that probes or hooks
// one acts on a spec it cannot have.
func checkP4(p *Pod, hits []Hit) []Hit {
	created := p.Created
	for _, c := range p.Inits {
		s := p.Ctrs[c].Spec
		if created != none && (s.Startup || s.Readiness || s.Liveness || s.PostStart || s.PreStop) {
			hits = append(hits, p.at(created, none, "regular init container %q has a probe or lifecycle hook", s.Name))
		}
		for _, i := range p.Ctrs[c].Ev {
			switch k := p.Ev[i].Kind; k {
			case history.ProbeResult, history.ContainerPostStartDone, history.ContainerPreStopBegin:
				hits = append(hits, p.at(i, created, "%s for regular init container %q", k, s.Name))
			}
		}
	}
	return hits
}

// probeGrace is the budget of a kill for a failed probe of kind reason:
// the probe-level terminationGracePeriodSeconds when set, else the pod's
// (kuberuntime_container.go setTerminationGracePeriod). ok is false when
// the history does not say whether the probe has its own.
func probeGrace(s *history.PodSpec, c *history.ContainerSpec, reason string) (int64, bool) {
	ps := c.LivenessSpec
	if reason == "StartupProbe" {
		ps = c.StartupSpec
	}
	if ps == nil {
		return 0, false
	}
	if ps.Grace > 0 {
		return ps.Grace, true
	}
	return s.Grace, true
}

func checkP5(p *Pod, hits []Hit) []Hit {
	for c := range p.Ctrs {
		ct := &p.Ctrs[c]
		for k := range ct.Att {
			a := &ct.Att[k]
			// The prober disables readiness and liveness until the
			// container is started (worker.go doProbe).
			// An attempt whose start failed (the runtime was down) never
			// ran: the probes that follow belong to the next attempt.
			if ct.Spec.Startup && a.Running != none {
				end := a.Exited
				if end == none {
					end = p.n()
				}
				if k+1 < len(ct.Att) {
					end = min(end, ct.Att[k+1].Start())
				}
				for _, i := range ct.Ev {
					e := &p.Ev[i]
					if i <= a.Start() || i > end || e.Kind != history.ProbeResult || e.Probe == "startup" {
						continue
					}
					if a.StartupOK == none || a.StartupOK > i {
						hits = append(hits, p.at(i, a.StartupOK, "%s probe of %q ran before its startup probe succeeded", e.Probe, ct.Name))
						break
					}
				}
			}
			if a.Stop == none || (a.KillReason != "LivenessProbe" && a.KillReason != "StartupProbe") || p.termAt(a.Stop) != nil {
				continue
			}
			g, ok := probeGrace(p.Spec, ct.Spec, a.KillReason)
			if !ok || a.StopGrace == 0 {
				continue
			}
			// preStop consumed part of the budget, counted by the kubelet
			// in whole seconds (executePreStopHook truncates).
			used := int64(0)
			if a.PreStop != none && a.PreStop < a.Stop {
				// The last hook before the stop: a probe kill retried by a
				// restarted kubelet (its prober fails the probe again) runs
				// the hook again and counts the budget from it; the attempt
				// records the first hook only (the sweep's harsh shape with
				// startup-kills: "19.500s grace, the probe budget gives
				// 17.487s").
				begin := a.PreStop
				for _, i := range ct.Ev {
					if i > begin && i < a.Stop && p.Ev[i].Kind == history.ContainerPreStopBegin {
						begin = i
					}
				}
				used = p.T(a.Stop) - p.T(begin)
			}
			lo, hi := max(g-used, 2e9)-p.Tol-1e6, max(g-used+1e9, 2e9)+p.Tol
			if a.StopGrace < lo || a.StopGrace > hi {
				hits = append(hits, p.at(a.Stop, a.PreStop, "%q killed for its %s with a %s grace, the probe budget gives %s", ct.Name, a.KillReason, ms(a.StopGrace), ms(max(g-used, 2e9))))
			}
		}
	}
	return hits
}

func checkP6(p *Pod, hits []Hit) []Hit {
	for t := range p.Terms {
		w := &p.Terms[t]
		if w.Reason == "SandboxLost" || w.Reason == "RestartAllContainers" {
			continue // part of a sync, not a pod termination
		}
		for c := range p.Ctrs {
			ct := &p.Ctrs[c]
			for _, i := range ct.Ev {
				if i <= w.Idx || i >= w.End {
					continue
				}
				e := &p.Ev[i]
				switch e.Kind {
				case history.ProbeResult:
					// SyncTerminatingPod stops the liveness and startup
					// probes of spec.containers (StopLivenessAndStartup);
					// a sidecar's keep running, to no effect.
					if ct.Role == RoleMain && e.Probe != "readiness" && e.T > w.T+p.Slack() {
						hits = append(hits, p.at(i, w.Idx, "%s probe of main %q ran %s into pod termination", e.Probe, ct.Name, ms(e.T-w.T)))
					}
					if e.Probe == "readiness" && e.Result == "failure" {
						hits = p.readinessApplied(hits, c, i, w)
					}
				case history.ContainerPreStopBegin, history.ContainerStopRequested:
					// A terminating pod is killed, never synced: no probe
					// kill starts during it.
					if (e.Reason == "LivenessProbe" || e.Reason == "StartupProbe") && p.firstKillEvent(c, i) {
						hits = append(hits, p.at(i, w.Idx, "%q killed for its %s during pod termination", ct.Name, e.Reason))
					}
				}
			}
		}
	}
	return hits
}

// firstKillEvent reports whether event i (prestop-begin or stop-requested)
// begins its attempt's kill.
func (p *Pod) firstKillEvent(c int, i int32) bool {
	a := p.attAt(c, i)
	if a == nil {
		return false
	}
	first := a.PreStop
	if first == none || (a.Stop != none && a.Stop < first) {
		first = a.Stop
	}
	return first == i
}

// readinessApplied checks that a readiness failure of c during kill w
// reaches its Ready flag: readiness probes keep running while the pod
// terminates. Decided only when one failure flips the result
// (failureThreshold 1, known from the history): a backend may record
// every probe run rather than result changes.
func (p *Pod) readinessApplied(hits []Hit, c int, i int32, w *Term) []Hit {
	ct := &p.Ctrs[c]
	if ct.Spec.ReadinessSpec == nil || ct.Spec.ReadinessSpec.Failure != 1 {
		return hits
	}
	a := p.attAt(c, i)
	if a == nil {
		return hits
	}
	if !p.readyBefore(c, i) {
		return hits // not ready: nothing to take back
	}
	dl := p.T(i) + p.Slack()
	for _, j := range ct.Ev {
		if j <= i {
			continue
		}
		e := &p.Ev[j]
		if e.T > dl {
			break
		}
		if e.Kind == history.ContainerReady && !e.Value || e.Kind == history.ContainerExited {
			return hits
		}
	}
	if p.Horizon > dl {
		hits = append(hits, p.late(i, none, dl, "readiness failure of %q during pod termination not applied: still ready %s later", ct.Name, ms(p.Slack())))
	}
	return hits
}

// readyBefore reports whether container c's last Ready flag before event
// i was true (and it has not exited since).
func (p *Pod) readyBefore(c int, i int32) bool {
	ready := false
	for _, j := range p.Ctrs[c].Ev {
		if j >= i {
			break
		}
		switch p.Ev[j].Kind {
		case history.ContainerReady:
			ready = p.Ev[j].Value
		case history.ContainerExited:
			ready = false
		}
	}
	return ready
}
