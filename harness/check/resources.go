package check

import (
	"slices"

	"github.com/sidebench/sidebench/harness/history"
)

// Resources, QoS and OOM, SEMANTICS.md §2.7. The formulas are written here
// again from their sources, not imported from the reference
// implementation that the sim runs: the checker is an independent oracle.
var resourceInvs = []*inv{
	// Vacuous without a pod.scheduled that reports requests.
	{id: "INV-Q1", level: Hard, ex: 0, fn: checkQ1, needs: fSchedReq,
		rule: "a pod's effective requests are max(max over init containers of (sidecars before it + its request), sidecars + mains) + overhead"},
	{id: "INV-Q2", level: Hard, ex: 0, fn: checkQ2,
		rule: "the pod's QoS class is computed over init containers, sidecars and mains alike"},
	// Vacuous without a recorded oom_score_adj: it skips the starts
	// without one (qosClass and mainMemResizes, computed first, cannot
	// panic).
	{id: "INV-Q3", level: Hard, ex: 0, fn: checkQ3, needs: fOOMScore,
		rule: "oom_score_adj follows the QoS class, and a Burstable sidecar's is at most that of the main with the smallest memory request"},
	// Vacuous without an OOM kill.
	{id: "INV-Q4", level: BestEffort, ex: exDefault, fn: checkQ4, needs: fOOM,
		rule: "an OOM kill is an ordinary exit: a sidecar or (Always/OnFailure) a main is restarted, and no other container is stopped for it"},
	// Vacuous without a start request with exclusive CPUs.
	{id: "INV-Q5", level: Hard, ex: 0, fn: checkQ5, needs: fCPUs,
		rule: "exclusive CPUs are shared only with a finished regular init container: a sidecar's are never given to the containers after it"},
}

// effectiveRequests is INV-Q1's formula (KEP-753 §"Resources calculation
// for scheduling and pod admission"; component-helpers PodRequests).
func effectiveRequests(s *history.PodSpec) (cpu, mem int64) {
	var sideCPU, sideMem, initCPU, initMem int64
	for i := range s.Init {
		c := &s.Init[i]
		useCPU, useMem := sideCPU+c.CPURequest, sideMem+c.MemRequest
		if c.Role == "sidecar" {
			sideCPU, sideMem = useCPU, useMem
		}
		initCPU, initMem = max(initCPU, useCPU), max(initMem, useMem)
	}
	cpu, mem = sideCPU, sideMem
	for i := range s.Main {
		cpu += s.Main[i].CPURequest
		mem += s.Main[i].MemRequest
	}
	return max(cpu, initCPU) + s.OverheadCPU, max(mem, initMem) + s.OverheadMem
}

func checkQ1(p *Pod, hits []Hit) []Hit {
	if len(p.Scheduled) == 0 {
		return hits
	}
	cpu, mem := effectiveRequests(p.Spec)
	for _, i := range p.Scheduled {
		e := &p.Ev[i]
		if e.CPU == 0 && e.Mem == 0 {
			continue // not reported
		}
		if e.CPU != cpu || e.Mem != mem {
			hits = append(hits, p.at(i, none, "pod scheduled with effective requests %dm/%d, the spec gives %dm/%d", e.CPU, e.Mem, cpu, mem))
		}
	}
	return hits
}

// qosClass is ComputePodQOS (pkg/apis/core/v1/helper/qos) over every
// init container and main container.
func qosClass(s *history.PodSpec) string {
	pod := ""
	for _, cs := range [2][]history.ContainerSpec{s.Init, s.Main} {
		for i := range cs {
			c := &cs[i]
			q := resQOS(c.CPURequest, c.CPULimit)
			if m := resQOS(c.MemRequest, c.MemLimit); m != q {
				q = "Burstable"
			}
			switch {
			case q == "Burstable":
				return q
			case pod == "":
				pod = q
			case pod != q:
				return "Burstable"
			}
		}
	}
	if pod == "" {
		return "BestEffort"
	}
	return pod
}

func resQOS(req, lim int64) string {
	switch {
	case req != lim:
		return "Burstable"
	case req == 0:
		return "BestEffort"
	}
	return "Guaranteed"
}

func checkQ2(p *Pod, hits []Hit) []Hit {
	if p.Spec.QOSClass == "" {
		return hits
	}
	if want := qosClass(p.Spec); p.Spec.QOSClass != want {
		hits = append(hits, p.at(p.Created, none, "QoS class %s, its containers (init and sidecars included) make it %s", p.Spec.QOSClass, want))
	}
	return hits
}

// oomAdj returns the oom_score_adj recorded for an attempt of c, or 0.
func (p *Pod) oomAdj(a *Attempt) int32 {
	if a.Req == none {
		return 0
	}
	return p.Ev[a.Req].OOMScoreAdj
}

func checkQ3(p *Pod, hits []Hit) []Hit {
	qos := qosClass(p.Spec)
	windows := p.mainMemResizes()
	for c := range p.Ctrs {
		ct := &p.Ctrs[c]
		for k := range ct.Att {
			a := &ct.Att[k]
			v := p.oomAdj(a)
			if v == 0 {
				continue
			}
			switch {
			case p.Spec.Critical:
				// system-node-critical pods get -997 whatever their class;
				// the history does not tell node- from cluster-critical.
			case qos == "Guaranteed" && v != -997, qos == "BestEffort" && v != 1000, qos == "Burstable" && (v < 3 || v > 999):
				hits = append(hits, p.at(a.Req, none, "%s %q of a %s pod got oom_score_adj %d", what(ct.Role), ct.Name, qos, v))
				continue
			}
			if ct.Role != RoleSidecar {
				continue
			}
			if m, ref, refIdx := p.minMainScore(a.Req, windows); refIdx != none && v > ref {
				hits = append(hits, p.at(a.Req, refIdx, "sidecar %q got oom_score_adj %d, above the %d of main %q (the smallest memory request)", ct.Name, v, ref, p.Ctrs[m].Name))
			}
		}
	}
	return hits
}

// mainMemResizes are the spans (cause: the resize) in which a main
// container's memory request changed: from its container.resize up to the
// kubelet's first action on it (the container resized in place, stopped for
// ResizeRestart, or started again, which sees the new request), or to the
// end if none. The kubelet computes oom_score_adj from the allocated
// requests when a container starts (GetContainerOOMScoreAdjust: a
// sidecar's from the smallest main memory request), and a resize changes
// them for later starts only, somewhere in such a span.
func (p *Pod) mainMemResizes() []span {
	var out []span
	for _, i := range p.Resizes {
		c := p.ctr(p.Ev[i].Container)
		if c < 0 || p.Ctrs[c].Role != RoleMain || p.desiredBefore(c, i).mem == p.Ev[i].Mem {
			continue
		}
		end := p.resizeAction(c, i, p.n())
		if b := p.nextStartAfterIdx(c, i); b != none && (end == none || b < end) {
			end = b
		}
		if end == none {
			end = p.n()
		}
		out = append(out, span{from: i, to: end, cause: i})
	}
	return out
}

// nextStartAfterIdx is the start of container c's first attempt after
// event i, in any sandbox, or none.
func (p *Pod) nextStartAfterIdx(c int, i int32) int32 {
	for k := range p.Ctrs[c].Att {
		if s := p.Ctrs[c].Att[k].Start(); s > i {
			return s
		}
	}
	return none
}

// minMainScore is the bound of a sidecar started at event s: the score
// recorded for the main with the smallest memory request, from one of its
// starts that saw the same main requests as s (no main memory resize
// between the two); the main's index, the score and its event, or none
// when no such start was recorded.
func (p *Pod) minMainScore(s int32, windows []span) (int, int32, int32) {
	minMain, minReq := -1, int64(0)
	for _, m := range p.Mains {
		if r := p.desiredBefore(m, s).mem; minMain < 0 || r < minReq {
			minMain, minReq = m, r
		}
	}
	if minMain < 0 {
		return -1, 0, none
	}
	var ref int32
	refIdx := none
	for k := range p.Ctrs[minMain].Att {
		a := &p.Ctrs[minMain].Att[k]
		if p.oomAdj(a) == 0 {
			continue
		}
		lo, hi := min(s, a.Req), max(s, a.Req)
		if !slices.ContainsFunc(windows, func(w span) bool { return w.from <= hi && w.to > lo }) {
			ref, refIdx = p.oomAdj(a), a.Req
		}
	}
	return minMain, ref, refIdx
}

func checkQ4(p *Pod, hits []Hit) []Hit {
	done := p.completion()
	rp := p.Spec.RestartPolicy
	for c := range p.Ctrs {
		ct := &p.Ctrs[c]
		for k := range ct.Att {
			a := &ct.Att[k]
			if a.ExitReason != "OOMKilled" || p.termAt(a.Exited) != nil {
				continue
			}
			// Restarted like any exit: a sidecar always (not after
			// completion), a main per the pod policy (137 is a failure).
			switch {
			case ct.Role == RoleSidecar && (done == none || a.Exited < done),
				ct.Role == RoleMain && rp != "Never" && !(p.hasGate("ContainerRestartRules") && ct.Spec.RestartPolicy != ""):
				hits = p.expectRestart(hits, c, a, a.Exited, "it was OOM-killed")
			}
			// Nothing else is stopped because of it (outside a pod kill).
			end := p.n()
			if b := p.nextStartAfter(c, a.Exited, a.Sandbox); b != nil {
				end = b.Start()
			}
			if w := p.termAfter(a.Exited); w != nil {
				end = min(end, w.Idx)
			}
			for d := range p.Ctrs {
				if d == c {
					continue
				}
				if j := p.eventOf(d, history.ContainerStopRequested, a.Exited, end); j != none && !ownKill(p.Ev[j].Reason) {
					hits = append(hits, p.at(j, a.Exited, "%s %q stopped (%s) after %q was OOM-killed", what(p.Ctrs[d].Role), p.Ctrs[d].Name, p.Ev[j].Reason, ct.Name))
				}
			}
		}
	}
	return hits
}

// parseCPUs parses a Linux cpuset list ("0-1,4") of CPUs 0..63.
func parseCPUs(s string) (uint64, bool) {
	var set uint64
	for len(s) > 0 {
		part := s
		if i := indexByte(s, ','); i >= 0 {
			part, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		lo, hi := part, part
		if i := indexByte(part, '-'); i >= 0 {
			lo, hi = part[:i], part[i+1:]
		}
		a, ok1 := atoi(lo)
		b, ok2 := atoi(hi)
		if !ok1 || !ok2 || a > b || b > 63 {
			return 0, false
		}
		for c := a; c <= b; c++ {
			set |= 1 << uint(c)
		}
	}
	return set, true
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

func atoi(s string) (int, bool) {
	if s == "" || len(s) > 2 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}

// checkQ5 decides INV-Q5 from the exclusive cpusets recorded at container
// creation: the static CPU manager lets containers after a regular init
// container reuse its CPUs (it has finished by then), and nothing else:
// a sidecar keeps running next to the containers after it, and mains run
// together (cm/cpumanager policy_static.go updateCPUsToReuse). So two
// containers of the pod with overlapping exclusive CPUs are a regular
// init container and a container after it in spec order, or a violation.
// Which CPUs other pods hold is across pods: not decided here.
func checkQ5(p *Pod, hits []Hit) []Hit {
	for c := range p.Ctrs {
		for k := range p.Ctrs[c].Att {
			a := &p.Ctrs[c].Att[k]
			if a.Req == none || p.Ev[a.Req].CPUs == "" {
				continue
			}
			mine, ok := parseCPUs(p.Ev[a.Req].CPUs)
			if !ok {
				continue
			}
			// Against every container before it in spec order, as last
			// recorded before this start.
			for d := 0; d < c; d++ {
				if p.Ctrs[d].Role == RoleInit {
					continue // a finished regular init's CPUs are reusable
				}
				j := p.lastCPUs(d, a.Req)
				if j == none {
					continue
				}
				theirs, _ := parseCPUs(p.Ev[j].CPUs)
				if mine&theirs != 0 {
					hits = append(hits, p.at(a.Req, j, "%s %q got exclusive CPUs %s overlapping %s %q's %s", what(p.Ctrs[c].Role), p.Ctrs[c].Name, p.Ev[a.Req].CPUs, what(p.Ctrs[d].Role), p.Ctrs[d].Name, p.Ev[j].CPUs))
					break
				}
			}
		}
	}
	return hits
}

// lastCPUs returns container c's last start request with recorded
// exclusive CPUs before event i, or none.
func (p *Pod) lastCPUs(c int, i int32) int32 {
	j := none
	for k := range p.Ctrs[c].Att {
		if r := p.Ctrs[c].Att[k].Req; r != none && r < i && p.Ev[r].CPUs != "" {
			j = r
		}
	}
	return j
}
