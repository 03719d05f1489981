package api

import (
	"fmt"
	"sort"
	"strings"
)

// Policy selects which sidecar design the reference implementation plays.
type Policy uint8

const (
	// PolicyKEP753 is the final design (restartable init containers), GA
	// 1.33 behaviour with reverse-order termination. The default.
	PolicyKEP753 Policy = iota
	// PolicyKEP753v2019 is the 2019 proposal (lifecycle.type: Sidecar):
	// sidecars start in parallel after init containers, gate mains on
	// readiness, obey the pod restart policy and are signalled together
	// after the mains exit (SEMANTICS.md §3–4).
	PolicyKEP753v2019
	// PolicyNone has no sidecar support: sidecars run as ordinary main
	// containers, with no ordering at all. The baseline.
	PolicyNone
)

var policyNames = [...]string{"kep753", "kep753-2019", "none"}

func (p Policy) String() string {
	if int(p) < len(policyNames) {
		return policyNames[p]
	}
	return fmt.Sprintf("Policy(%d)", uint8(p))
}

// Bug selects a deliberately wrong variant that replays a real upstream
// regression. Bugs exist to prove the checker catches them; never a default.
type Bug uint8

const (
	BugNone Bug = iota
	// BugReinitMainsFirst: after sandbox recreation, main containers start
	// before the sidecars are re-initialized (kubernetes#120247, fixed by
	// PR #120269).
	BugReinitMainsFirst
	// BugRerunInitAfterGC: after a kubelet restart with exited init records
	// garbage-collected, completed init containers are re-run (the pre-1.20
	// behaviour fixed by PR #96572).
	BugRerunInitAfterGC
	// BugSidecarsWithMains: sidecars are signalled together with the main
	// containers instead of after them (the 1.28 alpha behaviour).
	BugSidecarsWithMains
	// BugNoSidecarRestart: an exited sidecar is not restarted when the pod
	// restartPolicy is Never (the pre-KEP workaround's failure mode).
	BugNoSidecarRestart
	// BugResetTriggerFirst: on RestartAllContainers the triggering main
	// container is restarted at once, before the other containers were
	// reset and the sidecars re-initialized (violates INV-RA4/RA5).
	BugResetTriggerFirst
	// BugProbeGraceIgnored: a container killed for a failed liveness or
	// startup probe gets the pod's grace, not the probe-level
	// terminationGracePeriodSeconds (before KEP-2238; violates INV-P5).
	BugProbeGraceIgnored
	// BugOwnOOMScore: a sidecar's oom_score_adj comes from its own memory
	// request only, so a small sidecar is a preferred OOM victim (before
	// PR #128029; violates INV-Q3).
	BugOwnOOMScore
	// BugSidecarCPUsReused: the static CPU manager gives a sidecar's
	// exclusive CPUs to the containers after it, as if it were a regular
	// init container (the 1.28 alpha known issue; violates INV-Q5).
	BugSidecarCPUsReused
)

var bugNames = [...]string{"", "reinit-mains-first", "rerun-init-after-gc", "sidecars-with-mains", "no-sidecar-restart", "reset-trigger-first", "probe-grace-ignored", "own-oom-score", "sidecar-cpus-reused"}

// BugDescriptions documents each bug replica for --help and reports.
var BugDescriptions = map[Bug]string{
	BugReinitMainsFirst:  "after sandbox recreation, mains start before sidecars are re-initialized (kubernetes#120247)",
	BugRerunInitAfterGC:  "after a kubelet restart with init records garbage-collected, completed init containers re-run (pre-PR #96572)",
	BugSidecarsWithMains: "sidecars are signalled together with main containers instead of after them (1.28 alpha)",
	BugNoSidecarRestart:  "an exited sidecar is not restarted under restartPolicy Never",
	BugResetTriggerFirst: "on RestartAllContainers the triggering main restarts before the pod was reset and sidecars re-initialized",
	BugProbeGraceIgnored: "a liveness or startup probe kill uses the pod's grace, not the probe-level terminationGracePeriodSeconds (before KEP-2238)",
	BugOwnOOMScore:       "a sidecar's oom_score_adj comes from its own memory request, above the mains' (before PR #128029)",
	BugSidecarCPUsReused: "the static CPU manager reuses a sidecar's exclusive CPUs for later containers (1.28 alpha)",
}

func (b Bug) String() string {
	if int(b) < len(bugNames) {
		return bugNames[b]
	}
	return fmt.Sprintf("Bug(%d)", uint8(b))
}

// Gates is the policy and feature-gate set the planner runs under. It is
// an explicit argument, never a global (the kubelet's utilfeature wart).
type Gates struct {
	Policy Policy
	// SidecarsRestartableDuringPodTermination is the KEP-4438 gate (a
	// proposal, not in Kubernetes 1.37): exited sidecars are restarted while
	// the pod terminates, until their turn to be stopped.
	SidecarsRestartableDuringPodTermination bool
	// ContainerRestartRules (beta 1.35, KEP-5307): container-level
	// restartPolicy and restartPolicyRules on exit codes.
	ContainerRestartRules bool
	// RestartAllContainersOnContainerExits (beta 1.36, KEP-5532): the
	// RestartAllContainers rule action.
	RestartAllContainersOnContainerExits bool
	Bug                                  Bug
	// Workarounds, when set, make this a workaround policy
	// ("workaround:..."): the pod is transformed into what people ran
	// before native sidecars (harness/workaround) and the kubelet runs it
	// under Policy (always PolicyKEP753: the transformed pod has no native
	// sidecars). See workaround.go.
	Workarounds WorkaroundSet
}

// IsWorkaround reports whether g is a workaround policy.
func (g Gates) IsWorkaround() bool { return len(g.Workarounds) > 0 }

// GateNames lists the feature gates Gates understands, as Kubernetes names
// them.
var GateNames = []string{"ContainerRestartRules", "RestartAllContainersOnContainerExits", "SidecarsRestartableDuringPodTermination"}

// String renders the gates in the form ParseGates accepts, e.g.
// "kep753", "kep753+SidecarsRestartableDuringPodTermination",
// "kep753+bug:reinit-mains-first".
func (g Gates) String() string {
	if g.IsWorkaround() {
		return g.Workarounds.String()
	}
	var b strings.Builder
	b.WriteString(g.Policy.String())
	if g.ContainerRestartRules {
		b.WriteString("+ContainerRestartRules")
	}
	if g.RestartAllContainersOnContainerExits {
		b.WriteString("+RestartAllContainersOnContainerExits")
	}
	if g.SidecarsRestartableDuringPodTermination {
		b.WriteString("+SidecarsRestartableDuringPodTermination")
	}
	if g.Bug != BugNone {
		b.WriteString("+bug:")
		b.WriteString(g.Bug.String())
	}
	return b.String()
}

// PolicyNames returns the valid policy names.
func PolicyNames() []string { return append([]string(nil), policyNames[:]...) }

// BugNames returns the valid bug replica names.
func BugNames() []string {
	out := append([]string(nil), bugNames[1:]...)
	sort.Strings(out)
	return out
}

// ParseGates parses "POLICY[+GATE][+bug:NAME]", or a workaround policy
// "workaround:NAME[(K=V,...)][+NAME...]" (workaround.go).
func ParseGates(s string) (Gates, error) {
	var g Gates
	if rest, ok := strings.CutPrefix(s, WorkaroundPrefix); ok {
		ws, err := parseWorkarounds(rest)
		if err != nil {
			return g, err
		}
		return Gates{Policy: PolicyKEP753, Workarounds: ws}, nil
	}
	parts := strings.Split(s, "+")
	found := false
	for i, n := range policyNames {
		if n == parts[0] {
			g.Policy, found = Policy(i), true
		}
	}
	if !found {
		return g, fmt.Errorf("unknown policy %q (allowed: %s, %sNAME with NAME one of %s)", parts[0], strings.Join(policyNames[:], ", "), WorkaroundPrefix, strings.Join(WorkaroundNames(), ", "))
	}
	for _, p := range parts[1:] {
		switch {
		case p == "SidecarsRestartableDuringPodTermination":
			g.SidecarsRestartableDuringPodTermination = true
		case p == "ContainerRestartRules":
			g.ContainerRestartRules = true
		case p == "RestartAllContainersOnContainerExits":
			g.RestartAllContainersOnContainerExits = true
		case strings.HasPrefix(p, "bug:"):
			name := strings.TrimPrefix(p, "bug:")
			ok := false
			for i, n := range bugNames {
				if i > 0 && n == name {
					g.Bug, ok = Bug(i), true
				}
			}
			if !ok {
				return g, fmt.Errorf("unknown bug replica %q (allowed: %s)", name, strings.Join(BugNames(), ", "))
			}
		default:
			return g, fmt.Errorf("unknown gate %q in %q (allowed: %s, bug:NAME)", p, s, strings.Join(GateNames, ", "))
		}
	}
	return g, nil
}
