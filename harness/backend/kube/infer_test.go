package kube

import (
	"testing"
	"time"

	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/reference-impl/api"
)

// TestInferCompletionNeedsTheMainsToHaveRun: a Never pod's sidecar
// SIGTERMed for a failed startup probe during initialization, while no
// main has run yet, is the sidecar's own kill (the kubelet restarts it); it
// was inferred as the Job's completion kill (pod.terminating PodCompleted),
// and INV-T10 and R5 then flagged the restart. Once the main has run and
// exited, the next SIGTERM is the completion kill.
func TestInferCompletionNeedsTheMainsToHaveRun(t *testing.T) {
	r := &podRecord{Name: "default/jp", Spec: &api.PodSpec{
		Init:          []api.Container{{Name: "proxy", Role: api.RoleSidecar, StartupProbe: &api.Probe{}}},
		Main:          []api.Container{{Name: "app", Role: api.RoleMain}},
		RestartPolicy: api.RestartNever, TerminationGracePeriod: 30 * time.Second,
	}}
	evs := []history.Event{
		{T: 1, Kind: history.ContainerRunning, Container: "proxy"},
		{T: 2, Kind: history.ContainerStopRequested, Container: "proxy"},
		{T: 3, Kind: history.ContainerExited, Container: "proxy"},
		{T: 4, Kind: history.ContainerRunning, Container: "proxy"},
		{T: 5, Kind: history.ContainerRunning, Container: "app"},
		{T: 6, Kind: history.ContainerExited, Container: "app"},
		{T: 7, Kind: history.ContainerStopRequested, Container: "proxy"},
	}
	var terms []history.Event
	for _, e := range r.inferTermination(evs, r.ctrs()) {
		if e.Kind == history.PodTerminating {
			terms = append(terms, e)
		}
	}
	if len(terms) != 1 || terms[0].T != 7 || terms[0].Reason != "PodCompleted" {
		t.Fatalf("inferred %+v, want one PodCompleted at t=7 (after app ran and exited)", terms)
	}
}
