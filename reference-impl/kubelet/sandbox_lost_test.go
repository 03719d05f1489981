package kubelet

import (
	"strings"
	"testing"

	"github.com/sidebench/sidebench/reference-impl/api"
)

// TestSandboxLostAfterEveryMainSucceeded: a kubelet that comes back after
// a node reboot finds the sandbox gone and the OnFailure pod's only main
// exited 0. computePodActions (kuberuntime_manager.go) has no container to
// start and a regular container was created, so it creates no sandbox and
// the pod ends Succeeded; the init containers are not re-run. The
// reference did so only for pods without init containers until session 8.
func TestSandboxLostAfterEveryMainSucceeded(t *testing.T) {
	for _, tc := range []struct {
		name        string
		pod         string
		wantSandbox bool
	}{
		{name: "OnFailure, every main succeeded", pod: "pod restart=OnFailure"},
		{name: "Always restarts the mains", pod: "pod restart=Always", wantSandbox: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &scriptEnv{}
			e.createPod(kv(strings.Fields(tc.pod)[1:]), []string{"init setup", "sidecar proxy", "main app"})
			for _, c := range []string{"sandbox ready", "running setup", "exit setup code=0", "running proxy", "running app", "advance 1m"} {
				e.run(c, nil)
			}
			last := e.m.Status()
			// While the kubelet is down the node shuts down: app and proxy
			// exit 0 on SIGTERM, and the sandbox is gone after the reboot.
			for _, n := range []string{"proxy", "app"} {
				i, _ := e.idx(n)
				r := &e.records[i]
				r.State, r.ExitCode, r.FinishedAt, r.Reason = api.StateExited, 0, e.now, api.ReasonCompleted
			}
			e.sandbox.State = api.SandboxLost
			m, err := NewMachine(e.spec, e.gates)
			if err != nil {
				t.Fatal(err)
			}
			e.m = m
			out := e.step(api.Input{Kind: api.InRelist, Sandbox: e.sandbox, Records: append([]api.ContainerRecord(nil), e.records...), Status: last})
			if got := strings.Contains(out, "> create-sandbox"); got != tc.wantSandbox {
				t.Errorf("create-sandbox after the relist: %v, want %v\n%s", got, tc.wantSandbox, out)
			}
			if !tc.wantSandbox && (e.m.Status().Phase != api.PhaseSucceeded || strings.Contains(out, "> start")) {
				t.Errorf("phase %v, want Succeeded with nothing started\n%s", e.m.Status().Phase, out)
			}
		})
	}
}

// TestSandboxLostWithUnstartedSidecarIsPending: the sandbox dies while a
// restarted sidecar's startup probe is pending. HasAnyActiveRegularContainerStarted
// sees only the containers of a READY latest sandbox (GetPodStatus sets
// activePodSandboxID only then), so getPhase's podHasInitialized is false
// and the running, unstarted sidecar makes the pod Pending
// (kubelet_pods.go). The reference counted the lost sandbox's mains and
// stayed Running until session 8.
func TestSandboxLostWithUnstartedSidecarIsPending(t *testing.T) {
	e := &scriptEnv{}
	e.createPod(kv([]string{"restart=Always"}), []string{"sidecar proxy startup", "main app"})
	for _, c := range []string{"sandbox ready", "running proxy", "probe proxy startup success", "running app", "advance 1m", "exit proxy code=1", "running proxy"} {
		e.run(c, nil)
	}
	if st := e.m.Status(); st.Phase != api.PhaseRunning {
		t.Fatalf("before the loss: phase %v, want Running (the sidecar restarting does not make an initialized pod Pending)", st.Phase)
	}
	e.sandbox.State = api.SandboxLost
	out := e.step(api.Input{Kind: api.InSandbox, Sandbox: e.sandbox})
	if st := e.m.Status(); st.Phase != api.PhasePending {
		t.Errorf("after the sandbox loss: phase %v, want Pending\n%s", st.Phase, out)
	}
}
