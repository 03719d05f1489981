// Package hspec gives the history's form of a pod spec (the spec carried
// by pod.created), from the reference implementation's spec. It is the one
// conversion every backend uses, so that the checker judges the same spec
// whichever backend ran the pod. (It sits beside harness/history, which is
// standard library only, because it reads reference-impl/api.)
package hspec

import (
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/reference-impl/api"
	"github.com/sidebench/sidebench/reference-impl/kubelet"
)

// Of returns the history spec of a workload's pods.
func Of(workload string, labels map[string]string, s *api.PodSpec) *history.PodSpec {
	hs := &history.PodSpec{
		RestartPolicy: s.RestartPolicy.String(),
		Grace:         int64(s.TerminationGracePeriod),
		Critical:      s.Critical,
		QOSClass:      kubelet.PodQOS(s).String(),
		OverheadCPU:   s.OverheadCPU,
		OverheadMem:   s.OverheadMem,
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

func probe(p *api.Probe) *history.ProbeSpec {
	if p == nil {
		return nil
	}
	return &history.ProbeSpec{InitialDelay: int64(p.InitialDelay), Period: int64(p.Period),
		Success: p.SuccessThreshold, Failure: p.FailureThreshold, Grace: int64(p.TerminationGracePeriod)}
}

func container(c *api.Container) history.ContainerSpec {
	r := &c.Resources
	hc := history.ContainerSpec{Name: c.Name, Role: c.Role.String(), Image: c.Image,
		Startup: c.StartupProbe != nil, Readiness: c.ReadinessProbe != nil, Liveness: c.LivenessProbe != nil,
		PostStart: c.PostStart, PreStop: c.PreStop,
		CPURequest: r.CPURequest, CPULimit: r.CPULimit, MemRequest: r.MemRequest, MemLimit: r.MemLimit,
		CPUResizeRestart: c.ResizePolicy.CPURestart, MemResizeRestart: c.ResizePolicy.MemRestart,
		StartupSpec: probe(c.StartupProbe), ReadinessSpec: probe(c.ReadinessProbe), LivenessSpec: probe(c.LivenessProbe)}
	if c.Intent != 0 && c.Intent != c.Role {
		hc.Intent = c.Intent.String()
	}
	hc.WaitsForSidecars = c.WaitsForSidecars
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
