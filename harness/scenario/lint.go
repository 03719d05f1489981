package scenario

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Warnings are problems of a valid scenario that make it measure less than
// its author likely meant, each "FILE:LINE: FIELD: message": `validate`
// and `run` print them, and they never fail a run.
//
// A sidecar gated by a startup probe or a postStart hook (the kubelet
// starts the next container only once it passed) with no behaviour of its
// own gets the behaviour model's default: the probe passes, or the hook
// returns, the instant the process runs, so the gate costs nothing and
// pod_startup is optimistic.
//
// A scenario with no native sidecar in any workload (a Pod or Deployment
// scaffolded as it was, before its sidecar was moved to initContainers)
// runs the same pods under every policy: the sidecar invariants have
// nothing to check.
func (s *Scenario) Warnings() []string {
	var out []string
	if len(s.Workloads) > 0 && !s.hasNativeSidecar() {
		out = append(out, fmt.Sprintf("%s: workloads: warning: no workload has a native sidecar (an initContainer with restartPolicy: Always): every policy runs the same pods and the sidecar ordering invariants have nothing to check; move the sidecar into initContainers with restartPolicy: Always",
			s.Pos("workloads")))
	}
	for wi := range s.Workloads {
		w := &s.Workloads[wi]
		def, hasDef := w.Behaviors["default"]
		for ci := range w.Template.Spec.InitContainers {
			c := &w.Template.Spec.InitContainers[ci]
			if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
				continue
			}
			own, hasOwn := w.Behaviors[c.Name]
			set := func(field string) bool { return hasOwn && own.Set(field) || hasDef && def.Set(field) }
			// The example sets the field of each gate: startupAfter alone
			// left a postStart-gated sidecar's warning standing.
			var gates, examples []string
			if c.StartupProbe != nil && !set("startupAfter") {
				gates = append(gates, "a startupProbe (startupAfter)")
				examples = append(examples, "startupAfter: lognormal(median=1s, p99=5s)")
			}
			if c.Lifecycle != nil && c.Lifecycle.PostStart != nil && !set("postStart") {
				gates = append(gates, "a postStart hook (postStart)")
				examples = append(examples, "postStart: lognormal(median=1s, p99=5s)")
			}
			if len(gates) == 0 {
				continue
			}
			path := fmt.Sprintf("workloads[%d].template.spec.initContainers[%d]", wi, ci)
			what := "no behaviour of its own"
			if hasOwn {
				what = "a behaviour that does not say how long it takes"
			}
			out = append(out, fmt.Sprintf("%s: %s: warning: sidecar %q is gated by %s but has %s: the gate passes the instant the process runs, so the next container starts at once and pod_startup is optimistic; measure it and set behaviors.%s (e.g. %s)",
				s.Pos(path), path, c.Name, strings.Join(gates, " and "), what, c.Name, strings.Join(examples, " and ")))
		}
	}
	return out
}

func (s *Scenario) hasNativeSidecar() bool {
	for wi := range s.Workloads {
		for _, c := range s.Workloads[wi].Template.Spec.InitContainers {
			if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				return true
			}
		}
	}
	return false
}
