package check

import (
	"strings"

	"github.com/sidebench/sidebench/harness/history"
)

// Restart rules and RestartAllContainers, docs/semantics-restart-rules.md.
// They apply only when the run's policy enables the gates
// (ContainerRestartRules, RestartAllContainersOnContainerExits).
var ruleInvs = []*inv{
	// Vacuous unless the policy enables ContainerRestartRules.
	{id: "INV-RR1", level: Hard, ex: exDefault, fn: checkRR1, needs: fRestartRules,
		rule: "a main container with a container-level restartPolicy restarts iff its first matching restartPolicyRules entry says so, else per its own policy"},
	// RA4, RA5 and RA7 judge each reset: vacuous without one.
	{id: "INV-RA4", level: Hard, ex: exDefault, fn: checkRA4, needs: fReset,
		rule: "a RestartAllContainers reset removes every other container before the triggering ones"},
	{id: "INV-RA5", level: Hard, ex: exDefault, fn: checkRA5, needs: fReset,
		rule: "reset kills use the 2 s minimum grace, run no preStop hook and carry no ordering"},
	{id: "INV-RA7", level: Hard, ex: exDefault, fn: checkRA7, needs: fReset,
		rule: "no container starts again before every container of the pod was reset (stopped and removed)"},
}

func (p *Pod) hasGate(name string) bool {
	return p.Meta != nil && strings.Contains(p.Meta.Policy, name)
}

// wantRestart is ContainerShouldRestart for container c (a main or a
// regular init) that exited with code: the first matching rule, else the
// container policy, else the pod policy.
func (p *Pod) wantRestart(c int, code int32) bool {
	spec := p.Ctrs[c].Spec
	if p.hasGate("ContainerRestartRules") && spec != nil && spec.RestartPolicy != "" {
		if r := spec.Match(code); r != nil {
			switch r.Action {
			case "Restart":
				return true
			case "RestartAllContainers":
				if p.hasGate("RestartAllContainersOnContainerExits") {
					return true
				}
			}
		}
	}
	switch p.restartPolicyOf(c) {
	case "Never":
		return false
	case "OnFailure":
		return code != 0
	}
	return true
}

// restartPolicyOf is container c's restart policy: its own under
// ContainerRestartRules when it has one, else the pod's.
func (p *Pod) restartPolicyOf(c int) string {
	if sp := p.Ctrs[c].Spec; p.hasGate("ContainerRestartRules") && sp != nil && sp.RestartPolicy != "" {
		return sp.RestartPolicy
	}
	return p.Spec.RestartPolicy
}

// checkRR1: a main's restart (outside termination and resets) must be
// wanted; a wanted restart must come (bounded like INV-R1).
func checkRR1(p *Pod, hits []Hit) []Hit {
	if !p.hasGate("ContainerRestartRules") {
		return hits
	}
	for _, m := range p.Mains {
		spec := p.Ctrs[m].Spec
		if spec == nil || spec.RestartPolicy == "" {
			continue
		}
		att := p.Ctrs[m].Att
		for k := range att {
			a := &att[k]
			if a.Exited == none || p.termAt(a.Exited) != nil || a.KillReason != "" {
				continue
			}
			var next *Attempt
			if k+1 < len(att) {
				next = &att[k+1]
			}
			want := p.wantRestart(m, a.Code)
			switch {
			case !want && next != nil && !p.Sandboxes[next.Sandbox].Reset && next.Sandbox == a.Sandbox:
				hits = append(hits, p.at(next.Start(), a.Exited, "main %q restarted after exit %d although %s", p.Ctrs[m].Name, a.Code, ruleWhy(spec, a.Code)))
			case want && next == nil && p.termAfter(a.Exited) == nil && p.Horizon > p.T(a.Exited)+300e9+p.Slack():
				hits = append(hits, p.late(a.Exited, none, p.T(a.Exited)+300e9+p.Slack(), "main %q not restarted after exit %d although %s", p.Ctrs[m].Name, a.Code, ruleWhy(spec, a.Code)))
			}
		}
	}
	return hits
}

func ruleWhy(spec *history.ContainerSpec, code int32) string {
	if r := spec.Match(code); r != nil {
		return "rule " + r.Action + " " + r.Operator + " matches"
	}
	return "no rule matches and its restartPolicy is " + spec.RestartPolicy
}

// resets returns the indexes of the reset (virtual) sandboxes.
func (p *Pod) resets() []int32 {
	var out []int32
	for sb := range p.Sandboxes {
		if p.Sandboxes[sb].Reset {
			out = append(out, int32(sb))
		}
	}
	return out
}

// firstStartIn is the earliest start of any container in sandbox sb.
func (p *Pod) firstStartIn(sb int32) int32 {
	first := none
	for c := range p.Ctrs {
		for k := range p.Ctrs[c].Att {
			if a := &p.Ctrs[c].Att[k]; a.Sandbox == sb && (first == none || a.Start() < first) {
				first = a.Start()
			}
		}
	}
	return first
}

// resetScope lists the containers a reset beginning at event b must
// reset: those with an attempt started before b that had not been
// removed by then; and, among them, the triggers (exited before b with a
// RestartAllContainers match).
func (p *Pod) resetScope(b int32) (scope, triggers uint64) {
	for c := range p.Ctrs {
		var last *Attempt
		for k := range p.Ctrs[c].Att {
			if a := &p.Ctrs[c].Att[k]; a.Start() < b {
				last = a
			}
		}
		if last == nil {
			continue
		}
		if r := p.eventOf(c, history.ContainerRemoved, last.Start(), b); r != none {
			continue
		}
		scope |= 1 << uint(c)
		if last.Exited != none && last.Exited < b && p.Ctrs[c].Spec != nil {
			if r := p.Ctrs[c].Spec.Match(last.Code); r != nil && r.Action == "RestartAllContainers" {
				triggers |= 1 << uint(c)
			}
		}
	}
	return scope, triggers
}

func checkRA4(p *Pod, hits []Hit) []Hit {
	for _, sb := range p.resets() {
		b := p.Sandboxes[sb].Idx
		scope, trig := p.resetScope(b)
		for s := range p.Ctrs {
			if trig&(1<<uint(s)) == 0 {
				continue
			}
			rs := p.eventOf(s, history.ContainerRemoved, b, p.n())
			if rs == none || p.removedByGC(rs) {
				// Container GC removed the trigger's exited record: no
				// order of the kubelet's to judge (the reset goes on under
				// the AllContainersRestarting condition).
				continue
			}
			for t := range p.Ctrs {
				if scope&(1<<uint(t)) == 0 || trig&(1<<uint(t)) != 0 {
					continue
				}
				rt := p.eventOf(t, history.ContainerRemoved, b, p.n())
				if rt == none || rt > rs {
					hits = append(hits, p.at(rs, b, "trigger %q removed before %q was reset", p.Ctrs[s].Name, p.Ctrs[t].Name))
				}
			}
		}
	}
	return hits
}

func checkRA5(p *Pod, hits []Hit) []Hit {
	for _, sb := range p.resets() {
		b, end := p.Sandboxes[sb].Idx, p.firstStartIn(sb)
		if end == none {
			end = p.n()
		}
		for i := b + 1; i < end; i++ {
			e := &p.Ev[i]
			if p.termAt(i) != nil {
				break // termination wins; INV-T* apply
			}
			switch {
			case e.Kind == history.ContainerStopRequested && e.Reason == "RestartAllContainers" && e.Grace != 2e9:
				hits = append(hits, p.at(i, b, "reset stopped %q with grace %s, want 2s", e.Container, ms(e.Grace)))
			case e.Kind == history.ContainerPreStopBegin:
				hits = append(hits, p.at(i, b, "preStop of %q ran during a reset", e.Container))
			}
		}
	}
	return hits
}

func checkRA7(p *Pod, hits []Hit) []Hit {
	for _, sb := range p.resets() {
		b := p.Sandboxes[sb].Idx
		scope, _ := p.resetScope(b)
		for c := range p.Ctrs {
			for k := range p.Ctrs[c].Att {
				a := &p.Ctrs[c].Att[k]
				if a.Sandbox != sb {
					continue
				}
				for d := range p.Ctrs {
					if scope&(1<<uint(d)) == 0 {
						continue
					}
					if r := p.eventOf(d, history.ContainerRemoved, b, a.Start()); r == none {
						hits = append(hits, p.at(a.Start(), b, "%s %q started during a reset before %q was removed", what(p.Ctrs[c].Role), p.Ctrs[c].Name, p.Ctrs[d].Name))
						break
					}
				}
				break // the first start of c in the reset sandbox decides
			}
		}
	}
	return hits
}
