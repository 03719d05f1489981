package check

import "github.com/sidebench/sidebench/harness/history"

// firstIn returns container c's first attempt in sandbox sb, or nil.
func (p *Pod) firstIn(c int, sb int32) *Attempt {
	for k := range p.Ctrs[c].Att {
		if a := &p.Ctrs[c].Att[k]; a.Sandbox == sb && a.Start() != none {
			return a
		}
	}
	return nil
}

// doneIn is the event that lets the container after init container c
// start in sandbox sb (INV-S1): a regular init's first exit 0 that was not
// an OOM kill (isInitContainerFailed counts OOMKilled as failed whatever
// the code), a sidecar's first Started=true. none if it never happened.
func (p *Pod) doneIn(c int, sb int32) int32 {
	for k := range p.Ctrs[c].Att {
		a := &p.Ctrs[c].Att[k]
		if a.Sandbox != sb {
			continue
		}
		if p.Ctrs[c].Role == RoleSidecar {
			if a.Started != none {
				return a.Started
			}
		} else if a.Exited != none && a.Code == 0 && a.ExitReason != "OOMKilled" {
			return a.Exited
		}
	}
	return none
}

// latestBefore returns c's latest attempt whose start (request or
// process) came before event index i, or nil. (lastStartedBefore is about
// Started=true.)
func (p *Pod) latestBefore(c int, i int32) *Attempt {
	var last *Attempt
	for k := range p.Ctrs[c].Att {
		if a := &p.Ctrs[c].Att[k]; a.Start() != none && a.Start() < i {
			last = a
		}
	}
	return last
}

// attAt returns c's attempt whose process was running at event index i.
func (p *Pod) attAt(c int, i int32) *Attempt {
	for k := len(p.Ctrs[c].Att) - 1; k >= 0; k-- {
		if a := &p.Ctrs[c].Att[k]; a.runningAt(i) {
			return a
		}
	}
	return nil
}

// termAt returns the whole-pod kill in progress at event index i, or nil.
func (p *Pod) termAt(i int32) *Term {
	for k := range p.Terms {
		if w := &p.Terms[k]; w.Idx < i && i < w.End {
			return w
		}
	}
	return nil
}

// termAfter returns the first whole-pod kill that began after index i.
func (p *Pod) termAfter(i int32) *Term {
	for k := range p.Terms {
		if p.Terms[k].Idx > i {
			return &p.Terms[k]
		}
	}
	return nil
}

// sandboxAt returns the sandbox that event index i belongs to.
func (p *Pod) sandboxAt(i int32) int32 {
	sb := int32(0)
	for k := range p.Sandboxes {
		if p.Sandboxes[k].Idx != none && p.Sandboxes[k].Idx <= i {
			sb = int32(k)
		}
	}
	return sb
}

// firstMainStart is the first start of any main container in sandbox sb.
func (p *Pod) firstMainStart(sb int32) int32 {
	first := none
	for _, m := range p.Mains {
		if a := p.firstIn(m, sb); a != nil && (first == none || a.Start() < first) {
			first = a.Start()
		}
	}
	return first
}

// ownKill reports whether a kill reason targets the container alone
// (probe failure, spec change, unknown state) rather than the pod.
func ownKill(reason string) bool {
	switch reason {
	// A RestartAllContainers reset stops everything by design; INV-RA*
	// judge it.
	case "LivenessProbe", "StartupProbe", "SpecChanged", "FailedPostStartHook", "UnknownState", "RestartAllContainers", "ResizeRestart":
		return true
	}
	return false
}

// completion is the index of the exit after which no main container is
// running or will be restarted (INV-R6, C1), or none (restartPolicy
// Always, a main still running, or the pod was killed first).
func (p *Pod) completion() int32 {
	if len(p.Mains) == 0 {
		return none
	}
	done := none
	for _, m := range p.Mains {
		a := p.last(m)
		// A main that will be restarted (pod policy, or its own policy and
		// restart rules, INV-RR1) keeps the pod alive; so does a reset,
		// whether it killed the main or removed it after its exit.
		if a == nil || a.Exited == none || p.wantRestart(m, a.Code) || a.KillReason == "RestartAllContainers" ||
			p.eventOf(m, history.ContainerRemoved, a.Exited, p.n()) != none {
			// (Its record removed after the exit, by a reset or by
			// container GC, the kubelet starts it again: no status.)
			return none
		}
		if p.termAt(a.Exited) != nil {
			return none // the pod was being killed: termination, not completion
		}
		done = max(done, a.Exited)
	}
	return done
}

// nextStartAfter returns c's first attempt starting after index i in
// sandbox sb, or nil.
func (p *Pod) nextStartAfter(c int, i int32, sb int32) *Attempt {
	for k := range p.Ctrs[c].Att {
		if a := &p.Ctrs[c].Att[k]; a.Sandbox == sb && a.Start() > i {
			return a
		}
	}
	return nil
}

// eventOf returns the first event of kind k for container c in (from, to),
// or none.
func (p *Pod) eventOf(c int, k history.Kind, from, to int32) int32 {
	for _, i := range p.Ctrs[c].Ev {
		if i > from && i < to && p.Ev[i].Kind == k {
			return i
		}
	}
	return none
}

// n is the number of events, as an index bound.
func (p *Pod) n() int32 { return int32(len(p.Ev)) }

// expiry is when a whole-pod kill's budget runs out (INV-T5): preStop and
// waiting both consume the same budget measured from the kill's start.
func (w *Term) expiry() int64 { return w.T + w.Grace }

// maxBackoff is the crash-loop backoff cap (INV-R2).
const maxBackoff = 300e9
