package kubelet

import (
	"testing"

	"github.com/sidebench/sidebench/reference-impl/api"
)

// BenchmarkPlanSteadyState is one planning step for a running pod with 1
// init container, 2 sidecars and 2 mains (the reference shape).
func BenchmarkPlanSteadyState(b *testing.B) {
	spec, obs := makeBasePodAndObs()
	kinds := kindsFor(spec, api.Gates{})
	var out api.Plan
	out.Actions = make([]api.Action, 0, 8)
	b.ReportAllocs()
	for b.Loop() {
		PlanInto(&out, spec, kinds, obs, api.Gates{}, 100)
	}
}

// BenchmarkMachineStep is one Machine.Step plus collecting its Ready for
// the same pod: a probe result that changes nothing, the common case.
func BenchmarkMachineStep(b *testing.B) {
	spec, obs := makeBasePodAndObs()
	m, err := NewMachine(spec, api.Gates{})
	if err != nil {
		b.Fatal(err)
	}
	m.obs = *obs
	in := api.Input{Kind: api.InProbe, Container: iLogs, Probe: api.ProbeReadiness, Result: api.ProbeSuccess}
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Step(100, in); err != nil {
			b.Fatal(err)
		}
		for m.HasReady() {
			m.Advance(m.Ready())
		}
	}
}

// BenchmarkTermination steps a pod through a whole ordered termination.
func BenchmarkTermination(b *testing.B) {
	spec, obs := makeBasePodAndObs()
	b.ReportAllocs()
	for b.Loop() {
		m, _ := NewMachine(spec, api.Gates{})
		m.obs.Sandbox = obs.Sandbox
		copy(m.obs.Containers, obs.Containers)
		_ = m.Step(0, api.Input{Kind: api.InDelete, Grace: -1})
		for i := len(m.obs.Containers) - 1; i >= 0; i-- {
			r := m.obs.Containers[i].Record
			if r.State == api.StateRunning {
				r.State, r.FinishedAt = api.StateExited, 1
				_ = m.Step(1, api.Input{Kind: api.InPreStopDone, Container: i})
				_ = m.Step(1, api.Input{Kind: api.InContainer, Container: i, Record: r})
			}
			for m.HasReady() {
				m.Advance(m.Ready())
			}
		}
	}
}
