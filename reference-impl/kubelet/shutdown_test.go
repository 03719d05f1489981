package kubelet

import (
	"testing"
	"time"

	"github.com/sidebench/sidebench/reference-impl/api"
)

// TestShutdownDuringDeletion: a pod already being deleted when the node shutdown begins. The
// kubelet applies killPods' status function only at the start of a
// SyncTerminatingPod (acknowledgeTerminating); the one in progress returns
// and completeTerminating drops statusPostTerminating, so the pod ends
// Failed with no reason "Terminated" (and no DisruptionTarget). The
// reference gave it the reason until session 8.
func TestShutdownDuringDeletion(t *testing.T) {
	spec := &api.PodSpec{TerminationGracePeriod: 30 * time.Second,
		Init: []api.Container{{Name: "proxy", Role: api.RoleSidecar, Image: "p"}},
		Main: []api.Container{{Name: "app", Role: api.RoleMain, Image: "a"}}}
	g, _ := api.ParseGates("kep753")
	m, err := NewMachine(spec, g)
	if err != nil {
		t.Fatal(err)
	}
	step := func(now time.Duration, in api.Input) {
		if err := m.Step(api.Time(now), in); err != nil {
			t.Fatal(err)
		}
		for m.HasReady() {
			m.Advance(m.Ready())
		}
	}
	recs := make([]api.ContainerRecord, 2)
	step(0, api.Input{Kind: api.InRelist, Records: recs})
	step(0, api.Input{Kind: api.InSandbox, Sandbox: api.Sandbox{State: api.SandboxReady}})
	step(0, api.Input{Kind: api.InContainer, Container: 0, Record: api.ContainerRecord{State: api.StateRunning, StartedAt: 0}})
	step(0, api.Input{Kind: api.InContainer, Container: 1, Record: api.ContainerRecord{State: api.StateRunning, StartedAt: 0}})
	step(10*time.Second, api.Input{Kind: api.InDelete, Grace: 30 * time.Second})
	step(15*time.Second, api.Input{Kind: api.InNodeShutdown, Grace: 10 * time.Second})
	step(16*time.Second, api.Input{Kind: api.InContainer, Container: 1, Record: api.ContainerRecord{State: api.StateExited, ExitCode: 143, FinishedAt: api.Time(16 * time.Second)}})
	step(17*time.Second, api.Input{Kind: api.InContainer, Container: 0, Record: api.ContainerRecord{State: api.StateExited, ExitCode: 0, FinishedAt: api.Time(17 * time.Second)}})
	st := m.Status()
	if !m.Done() || st.Phase != api.PhaseFailed || st.Reason() != "" {
		t.Fatalf("done=%v phase=%v reason=%q, want Failed with no reason", m.Done(), st.Phase, st.Reason())
	}
}
