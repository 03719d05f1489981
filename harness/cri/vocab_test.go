package cri

import (
	"context"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sidebench/sidebench/harness/history"
)

// TestVocabularyControls covers the issue 16 D controls of the local
// backend: an external kill by exit code and by SIGTERM, a container
// reported Unknown (and still stoppable), failing hooks, per-attempt
// behaviour, failing image pulls and an in-place resize.
func TestVocabularyControls(t *testing.T) {
	e := start(t)
	sb, cfg := e.sandbox(t, ann(t, map[string]string{
		"killed": `{"startLatency":"0s"}`,
		"termed": `{"startLatency":"0s","termHandling":"300ms","termExitCode":4}`,
		"lost":   `{"startLatency":"0s"}`,
		"hooks":  `{"startLatency":"0s","postStart":"10ms","preStop":"10ms","postStartFails":true,"preStopFails":true}`,
		"twice":  `{"startLatency":"0s","runTime":"never","attempts":[{"runTime":"100ms","exitCode":9}]}`,
	}))
	ids := map[string]string{}
	for _, n := range []string{"killed", "termed", "lost", "hooks"} {
		ids[n] = e.create(t, sb, cfg, n)
		e.startC(t, ids[n])
	}

	// container-kill: exit code at once; SIGTERM handled in 300ms.
	if msg, err := e.srv.Kill("default/web-0", "killed", 137, false); err != nil || !strings.Contains(msg, "exited 137") {
		t.Fatalf("Kill: %q %v", msg, err)
	}
	if st := e.status(t, ids["killed"]); st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 137 {
		t.Errorf("killed: %v %d", st.State, st.ExitCode)
	}
	if _, err := e.srv.Kill("default/web-0", "killed", 0, false); err == nil {
		t.Error("Kill of an exited container succeeded")
	}
	if _, err := e.srv.Kill("default/web-0", "termed", 0, true); err != nil {
		t.Fatal(err)
	}
	e.step(300 * time.Millisecond)
	if st := e.status(t, ids["termed"]); st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 4 {
		t.Errorf("termed: %v %d, want exited 4 after its SIGTERM handling", st.State, st.ExitCode)
	}

	// container-unknown: reported Unknown, then killed by StopContainer.
	if _, err := e.srv.ReportUnknown("default/web-0", "lost"); err != nil {
		t.Fatal(err)
	}
	if st := e.status(t, ids["lost"]); st.State != runtimeapi.ContainerState_CONTAINER_UNKNOWN {
		t.Errorf("lost: %v, want UNKNOWN", st.State)
	}
	if e.sink.find(history.ContainerUnknown, "lost") == nil {
		t.Error("no container.unknown")
	}
	e.stopAfter(t, ids["lost"], 10, 100*time.Millisecond)
	if st := e.status(t, ids["lost"]); st.State != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Errorf("lost after stop: %v", st.State)
	}

	// Hooks that fail.
	for _, hook := range []string{HookPostStart, HookPreStop} {
		w0 := e.clk.Waiters()
		c := e.execAsync(ids["hooks"], HookCommand(hook))
		e.waitWaiters(t, w0+1)
		e.step(10 * time.Millisecond)
		if r := c.wait(t); r.ExitCode == 0 {
			t.Errorf("%s hook succeeded, want a failure", hook)
		}
	}
	if ev := e.sink.find(history.ContainerPostStartDone, "hooks"); ev == nil || ev.Value || ev.Msg != "FailedPostStartHook" {
		t.Errorf("poststart-done: %+v", ev)
	}
	if ev := e.sink.find(history.ContainerPreStopEnd, "hooks"); ev == nil || ev.Msg != "FailedPreStopHook" {
		t.Errorf("prestop-end: %+v", ev)
	}

	// Per-attempt behaviour: attempt 0 exits 9 after 100ms, attempt 1 runs.
	first := e.create(t, sb, cfg, "twice")
	e.startC(t, first)
	e.step(100 * time.Millisecond)
	if st := e.status(t, first); st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 9 {
		t.Errorf("attempt 0: %v %d", st.State, st.ExitCode)
	}
	r, err := e.rt.CreateContainer(context.Background(), &runtimeapi.CreateContainerRequest{PodSandboxId: sb, SandboxConfig: cfg,
		Config: &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "twice", Attempt: 1}, Image: &runtimeapi.ImageSpec{Image: "app:1"}}})
	if err != nil {
		t.Fatal(err)
	}
	e.startC(t, r.ContainerId)
	e.step(time.Second)
	if st := e.status(t, r.ContainerId); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("attempt 1: %v, want running", st.State)
	}

	// image-pull-failure: absent and failing for this pod during the
	// window, then pulled.
	pulled := e.srv.FailPulls("default/web-0", "app", "app:2", e.t0.Add(10*time.Second))
	st, _ := e.img.ImageStatus(context.Background(), &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: "app:2"}})
	if st.Image != nil {
		t.Error("image reported present while its pulls fail")
	}
	if _, err := e.img.PullImage(context.Background(), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "app:2"}, SandboxConfig: cfg}); err == nil || !pulled() {
		t.Errorf("pull during the window: %v (pulled=%v)", err, pulled())
	}
	if ev := e.sink.find(history.ContainerStartFailed, "app"); ev == nil || ev.Msg != "ErrImagePull: app:2" {
		t.Errorf("start-failed: %+v", ev)
	}
	e.step(10 * time.Second)
	if _, err := e.img.PullImage(context.Background(), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "app:2"}, SandboxConfig: cfg}); err != nil {
		t.Errorf("pull after the window: %v", err)
	}

	// In-place resize: recorded as container.resized.
	if _, err := e.rt.UpdateContainerResources(context.Background(), &runtimeapi.UpdateContainerResourcesRequest{ContainerId: r.ContainerId,
		Linux: &runtimeapi.LinuxContainerResources{CpuShares: 256, CpuQuota: 50000, CpuPeriod: 100000, MemoryLimitInBytes: 64 << 20}}); err != nil {
		t.Fatal(err)
	}
	if ev := e.sink.find(history.ContainerResized, "twice"); ev == nil || ev.CPU != 250 || ev.CPULimit != 500 || ev.MemLimit != 64<<20 {
		t.Errorf("resized: %+v", ev)
	}
}
