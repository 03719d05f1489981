// Package hspec gives the history's form of a pod spec (the spec carried
// by pod.created), from the reference implementation's spec. It is the one
// conversion every backend uses, so that the checker judges the same spec
// whichever backend ran the pod. (It sits beside harness/history, which is
// standard library only, because it reads reference-impl/api.)
package hspec

import (
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/reference-impl/api"
)

// Of returns the history spec of a workload's pods.
func Of(workload string, labels map[string]string, s *api.PodSpec) *history.PodSpec {
	hs := &history.PodSpec{
		RestartPolicy: s.RestartPolicy.String(),
		Grace:         int64(s.TerminationGracePeriod),
		Critical:      s.Critical,
		Labels:        labels,
		Workload:      workload,
	}
	for i := range s.Init {
		hs.Init = append(hs.Init, container(&s.Init[i]))
	}
	for i := range s.Main {
		hs.Main = append(hs.Main, container(&s.Main[i]))
	}
	return hs
}

func container(c *api.Container) history.ContainerSpec {
	hc := history.ContainerSpec{Name: c.Name, Role: c.Role.String(), Image: c.Image,
		Startup: c.StartupProbe != nil, Readiness: c.ReadinessProbe != nil, Liveness: c.LivenessProbe != nil,
		PostStart: c.PostStart, PreStop: c.PreStop}
	// Container-level restartPolicy and restartPolicyRules
	// (ContainerRestartRules): the checker judges every restart decision
	// against them (INV-RR*, INV-RA*).
	if c.RestartPolicy != nil {
		hc.RestartPolicy = c.RestartPolicy.String()
	}
	for _, r := range c.RestartRules {
		hc.Rules = append(hc.Rules, history.RestartRule{Action: r.Action.String(), Operator: r.Operator.String(), Values: append([]int32(nil), r.Values...)})
	}
	return hc
}
