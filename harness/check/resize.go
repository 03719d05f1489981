package check

import "github.com/sidebench/sidebench/harness/history"

// checkU2 decides INV-U2 (in-place resize, kuberuntime_manager.go
// computePodResizeAction). After container.resize of c outside a pod
// kill, while c runs: if a changed resource's resizePolicy is
// RestartContainer (never on a regular init container: validation), c is
// stopped (ResizeRestart) and started again, whatever the restart policy;
// otherwise c is resized in place (container.resized) and not stopped.
// Either within 10 s + tolerance (the kubelet's next sync). No other
// container is stopped or resized for it; sidecars are resized like mains.
// During a pod kill nothing is resized or restarted. Which pod's pending
// resize goes first on a full node (no precedence for sidecars) is across
// pods: not decided here.
func checkU2(p *Pod, hits []Hit) []Hit {
	for _, i := range p.Resizes {
		e := &p.Ev[i]
		c := p.ctr(e.Container)
		if c < 0 {
			continue
		}
		ct := &p.Ctrs[c]
		old, now := p.desiredBefore(c, i), resources{e.CPU, e.Mem, e.CPULimit, e.MemLimit}
		// The window: until c's next resize, a pod kill, the sandbox's end.
		end := p.n()
		for _, j := range ct.Ev {
			if j > i && p.Ev[j].Kind == history.ContainerResize {
				end = j
				break
			}
		}
		if w := p.termAt(i); w != nil {
			if j := p.resizeAction(c, i, w.End); j != none {
				hits = append(hits, p.at(j, i, "resize of %q applied during pod termination", ct.Name))
			}
			continue
		}
		if w := p.termAfter(i); w != nil {
			end = min(end, w.Idx)
		}
		a := p.attAt(c, i)
		if a == nil {
			continue // applied at its next start
		}
		if sbEnd := p.Sandboxes[a.Sandbox].End; sbEnd != none {
			end = min(end, sbEnd)
		}
		cpu := old.cpu != now.cpu || old.cpuLim != now.cpuLim
		mem := old.mem != now.mem || old.memLim != now.memLim
		restart := ct.Role != RoleInit && (cpu && ct.Spec.CPUResizeRestart || mem && ct.Spec.MemResizeRestart)
		stop := p.eventOf(c, history.ContainerStopRequested, i, end)
		if stop != none && p.Ev[stop].Reason != "ResizeRestart" {
			stop = none // stopped for another reason: not this rule's
		}
		resized := p.eventOf(c, history.ContainerResized, i, end)
		dl := p.T(i) + 10e9 + p.Tol
		switch {
		case restart && resized != none:
			hits = append(hits, p.at(resized, i, "%s %q resized in place although its resizePolicy restarts it", what(ct.Role), ct.Name))
		case !restart && stop != none:
			hits = append(hits, p.at(stop, i, "%s %q restarted for a resize its resizePolicy applies in place", what(ct.Role), ct.Name))
		case restart:
			next := p.nextStartAfter(c, i, a.Sandbox)
			if next == nil && p.Horizon > dl && p.T(end-1) > dl || next != nil && p.T(next.Start()) > dl {
				h := p.late(i, stop, dl, "%s %q not restarted within %s of a resize that needs a restart", what(ct.Role), ct.Name, ms(dl-p.T(i)))
				hits = append(hits, h)
			}
		case resized == none && a.Exited == none && p.Horizon > dl && p.T(end-1) > dl:
			hits = append(hits, p.late(i, none, dl, "%s %q not resized in place within %s", what(ct.Role), ct.Name, ms(dl-p.T(i))))
		case resized != none && p.T(resized) > dl:
			hits = append(hits, p.late(i, resized, dl, "%s %q resized in place %s after the request", what(ct.Role), ct.Name, ms(p.T(resized)-p.T(i))))
		}
		for d := range p.Ctrs {
			if d == c {
				continue
			}
			j := p.eventOf(d, history.ContainerStopRequested, i, end)
			if j == none || p.Ev[j].Reason != "ResizeRestart" {
				continue
			}
			from := none
			if ad := p.attAt(d, j); ad != nil {
				from = ad.Start()
			}
			if !p.resizedBetween(d, from, j) {
				hits = append(hits, p.at(j, i, "resize of %q restarted %s %q too", ct.Name, what(p.Ctrs[d].Role), p.Ctrs[d].Name))
			}
		}
	}
	return hits
}

// resources are a container's CPU and memory requests and limits.
type resources struct{ cpu, mem, cpuLim, memLim int64 }

// desiredBefore is container c's desired resources before event i: its
// last container.resize, else its spec.
func (p *Pod) desiredBefore(c int, i int32) resources {
	ev := p.Ctrs[c].Ev
	for k := len(ev) - 1; k >= 0; k-- {
		if j := ev[k]; j < i && p.Ev[j].Kind == history.ContainerResize {
			e := &p.Ev[j]
			return resources{e.CPU, e.Mem, e.CPULimit, e.MemLimit}
		}
	}
	s := p.Ctrs[c].Spec
	return resources{s.CPURequest, s.MemRequest, s.CPULimit, s.MemLimit}
}

// resizeAction returns c's first ResizeRestart stop or in-place resize in
// (from, to), or none.
func (p *Pod) resizeAction(c int, from, to int32) int32 {
	for _, j := range p.Ctrs[c].Ev {
		if j <= from || j >= to {
			continue
		}
		if e := &p.Ev[j]; e.Kind == history.ContainerResized || e.Kind == history.ContainerStopRequested && e.Reason == "ResizeRestart" {
			return j
		}
	}
	return none
}

// resizedBetween reports whether container c's own resources changed in
// (from, to).
func (p *Pod) resizedBetween(c int, from, to int32) bool {
	for _, j := range p.Ctrs[c].Ev {
		if j > from && j < to && p.Ev[j].Kind == history.ContainerResize {
			return true
		}
	}
	return false
}
