package cri

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/sidebench/sidebench/harness/behavior"
	"github.com/sidebench/sidebench/harness/history"
)

type memSink struct {
	mu sync.Mutex
	ev []history.Event
}

func (m *memSink) Write(e *history.Event) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ev = append(m.ev, *e)
	return nil
}

func (m *memSink) events() []history.Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.ev)
}

// kinds returns "kind container" strings of container-level and sandbox events.
func (m *memSink) find(k history.Kind, c string) *history.Event {
	for _, e := range m.events() {
		if e.Kind == k && e.Container == c {
			return &e
		}
	}
	return nil
}

type env struct {
	rt   runtimeapi.RuntimeServiceClient
	img  runtimeapi.ImageServiceClient
	sink *memSink
	srv  *Server
	clk  *testingclock.FakeClock
	t0   time.Time
}

// start serves a CRI server on a fake clock: simulated time moves only
// when the test steps it, so no assertion depends on the machine's speed.
func start(t *testing.T) *env {
	t.Helper()
	sink := &memSink{}
	t0 := time.Unix(1_700_000_000, 0)
	clk := testingclock.NewFakeClock(t0)
	srv := New(Config{Node: "node-1", Sink: sink, Clock: clk})
	sock := filepath.Join(t.TempDir(), "cri.sock")
	if err := srv.ListenAndServe(sock); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &env{rt: runtimeapi.NewRuntimeServiceClient(conn), img: runtimeapi.NewImageServiceClient(conn), sink: sink, srv: srv, clk: clk, t0: t0}
}

// at is the Unix-nanosecond stamp of d after the fake clock's start.
func (e *env) at(d time.Duration) int64 { return e.t0.Add(d).UnixNano() }

// step advances the fake clock by d and waits until every timer callback
// it fired (exits, SIGKILLs) has run.
func (e *env) step(d time.Duration) {
	e.clk.Step(d)
	e.srv.timers.Wait()
}

// waitWaiters blocks until the fake clock has at least n pending timers:
// a blocking call (StartContainer, a hook, StopContainer) has armed its
// own. The deadline only guards against a hang; it is not a measurement.
func (e *env) waitWaiters(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for e.clk.Waiters() < n {
		if time.Now().After(deadline) {
			t.Fatalf("fake clock has %d timers, want %d: the call never armed its timer", e.clk.Waiters(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// call runs a blocking CRI call in the background.
type call[T any] struct {
	done chan struct{}
	v    T
	err  error
}

func async[T any](f func() (T, error)) *call[T] {
	c := &call[T]{done: make(chan struct{})}
	go func() {
		defer close(c.done)
		c.v, c.err = f()
	}()
	return c
}

// returned reports whether the call has returned, without waiting.
func (c *call[T]) returned() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// wait returns the call's result; the deadline only guards against a hang.
func (c *call[T]) wait(t *testing.T) T {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		t.Fatal("CRI call did not return")
	}
	if c.err != nil {
		t.Fatal(c.err)
	}
	return c.v
}

func ann(t *testing.T, behaviours map[string]string) map[string]string {
	t.Helper()
	a := map[string]string{AnnotationSeed: "42"}
	for name, js := range behaviours {
		a[AnnotationBehaviorPrefix+name] = js
	}
	return a
}

func (e *env) sandbox(t *testing.T, annotations map[string]string) (string, *runtimeapi.PodSandboxConfig) {
	t.Helper()
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata:    &runtimeapi.PodSandboxMetadata{Name: "web-0", Namespace: "default", Uid: "u1"},
		Annotations: annotations,
		Labels:      map[string]string{"io.kubernetes.pod.name": "web-0"},
	}
	r, err := e.rt.RunPodSandbox(context.Background(), &runtimeapi.RunPodSandboxRequest{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	return r.PodSandboxId, cfg
}

func (e *env) create(t *testing.T, sb string, sbCfg *runtimeapi.PodSandboxConfig, name string) string {
	t.Helper()
	r, err := e.rt.CreateContainer(context.Background(), &runtimeapi.CreateContainerRequest{
		PodSandboxId:  sb,
		SandboxConfig: sbCfg,
		Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: name},
			Image:    &runtimeapi.ImageSpec{Image: "example.local/app:v1"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return r.ContainerId
}

// startC starts a container whose start latency is 0.
func (e *env) startC(t *testing.T, id string) {
	t.Helper()
	if _, err := e.rt.StartContainer(context.Background(), &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
}

// startAfter starts a container whose start latency is latency (> 0),
// stepping the clock through it.
func (e *env) startAfter(t *testing.T, id string, latency time.Duration) {
	t.Helper()
	w0 := e.clk.Waiters()
	c := e.startAsync(id)
	e.waitWaiters(t, w0+1)
	e.step(latency)
	c.wait(t)
}

// stopAfter stops a running container that handles SIGTERM in handling
// (> 0, less than timeout seconds), stepping the clock through it.
func (e *env) stopAfter(t *testing.T, id string, timeout int64, handling time.Duration) {
	t.Helper()
	w0 := e.clk.Waiters()
	c := e.stopAsync(id, timeout)
	e.waitWaiters(t, w0+2) // SIGTERM handling and the SIGKILL deadline
	e.step(handling)
	c.wait(t)
}

func (e *env) startAsync(id string) *call[*runtimeapi.StartContainerResponse] {
	return async(func() (*runtimeapi.StartContainerResponse, error) {
		return e.rt.StartContainer(context.Background(), &runtimeapi.StartContainerRequest{ContainerId: id})
	})
}

func (e *env) execAsync(id string, cmd []string) *call[*runtimeapi.ExecSyncResponse] {
	return async(func() (*runtimeapi.ExecSyncResponse, error) {
		return e.rt.ExecSync(context.Background(), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd})
	})
}

func (e *env) stopAsync(id string, timeout int64) *call[*runtimeapi.StopContainerResponse] {
	return async(func() (*runtimeapi.StopContainerResponse, error) {
		return e.rt.StopContainer(context.Background(), &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: timeout})
	})
}

func (e *env) status(t *testing.T, id string) *runtimeapi.ContainerStatus {
	t.Helper()
	r, err := e.rt.ContainerStatus(context.Background(), &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		t.Fatal(err)
	}
	return r.Status
}

// exec runs a command that does not block on the clock (a probe, a
// foreign command).
func (e *env) exec(t *testing.T, id string, cmd []string) *runtimeapi.ExecSyncResponse {
	t.Helper()
	r, err := e.rt.ExecSync(context.Background(), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestVersionStatusConfig(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	v, err := e.rt.Version(ctx, &runtimeapi.VersionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Version != "0.1.0" || v.RuntimeName != RuntimeName || v.RuntimeApiVersion != "v1" {
		t.Errorf("Version = %+v", v)
	}
	st, err := e.rt.Status(ctx, &runtimeapi.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	ready := map[string]bool{}
	for _, c := range st.Status.Conditions {
		ready[c.Type] = c.Status
	}
	if !ready[runtimeapi.RuntimeReady] || !ready[runtimeapi.NetworkReady] {
		t.Errorf("Status conditions = %v", st.Status.Conditions)
	}
	rc, err := e.rt.RuntimeConfig(ctx, &runtimeapi.RuntimeConfigRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if rc.Linux.CgroupDriver != runtimeapi.CgroupDriver_CGROUPFS {
		t.Errorf("cgroup driver %v", rc.Linux.CgroupDriver)
	}
}

func TestImages(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	spec := &runtimeapi.ImageSpec{Image: "example.local/sidecar:v1"}
	st, err := e.img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: spec})
	if err != nil || st.Image != nil {
		t.Fatalf("before pull: %v %v", st, err)
	}
	p, err := e.img.PullImage(ctx, &runtimeapi.PullImageRequest{Image: spec})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{spec.Image, p.ImageRef} {
		st, err = e.img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: name}})
		if err != nil || st.Image == nil || st.Image.Size == 0 || st.Image.Id != p.ImageRef {
			t.Fatalf("ImageStatus(%s) = %v, %v", name, st, err)
		}
	}
	l, err := e.img.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil || len(l.Images) != 1 {
		t.Fatalf("ListImages = %v, %v", l, err)
	}
	fs, err := e.img.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
	if err != nil || len(fs.ImageFilesystems) != 1 || fs.ImageFilesystems[0].UsedBytes.Value == 0 {
		t.Fatalf("ImageFsInfo = %v, %v", fs, err)
	}
	if _, err := e.img.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: spec}); err != nil {
		t.Fatal(err)
	}
	if l, _ = e.img.ListImages(ctx, &runtimeapi.ListImagesRequest{}); len(l.Images) != 0 {
		t.Fatalf("after remove: %v", l.Images)
	}
}

// TestProbesAndHooks drives one container through start latency, its
// postStart hook, startup/readiness/liveness probes at the instants their
// results change, preStop and a SIGTERM it handles, on a fake clock: every
// "not yet" is checked just before its instant, every "now" exactly at it.
func TestProbesAndHooks(t *testing.T) {
	e := start(t)
	sb, cfg := e.sandbox(t, ann(t, map[string]string{
		"proxy": `{"startLatency":"20ms","startupAfter":"150ms","readyAfter":"150ms","postStart":"80ms","preStop":"60ms","termHandling":"30ms","termExitCode":143,"livenessFailAfter":"400ms"}`,
	}))
	id := e.create(t, sb, cfg, "proxy")
	w0 := e.clk.Waiters()

	// StartContainer blocks for the start latency (20ms of clock time).
	started := e.startAsync(id)
	e.waitWaiters(t, w0+1)
	e.step(19 * time.Millisecond)
	if st := e.status(t, id); st.State != runtimeapi.ContainerState_CONTAINER_CREATED || started.returned() {
		t.Fatalf("at 19ms of a 20ms start latency: state %v, returned %v; want CREATED, blocked", st.State, started.returned())
	}
	e.step(time.Millisecond)
	started.wait(t)
	if st := e.status(t, id); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING || st.StartedAt != e.at(20*time.Millisecond) {
		t.Fatalf("after start: state %v startedAt %d, want RUNNING at %d", st.State, st.StartedAt, e.at(20*time.Millisecond))
	}
	run := 20 * time.Millisecond // the process started here; probes count from it

	// postStart returns after 80ms.
	hook := e.execAsync(id, HookCommand(HookPostStart))
	e.waitWaiters(t, w0+1)
	e.step(79 * time.Millisecond)
	if hook.returned() {
		t.Fatal("postStart returned before its 80ms")
	}
	e.step(time.Millisecond)
	if r := hook.wait(t); r.ExitCode != 0 {
		t.Errorf("postStart: exit %d, want 0", r.ExitCode)
	}

	// Startup (and readiness) pass from 150ms after the process started.
	// Now 80ms.
	e.step(69 * time.Millisecond) // 149ms
	if r := e.exec(t, id, ProbeCommand(ProbeStartup)); r.ExitCode == 0 {
		t.Errorf("startup probe passed at 149ms, want failure before 150ms")
	}
	e.step(time.Millisecond) // 150ms
	for _, p := range []string{ProbeStartup, ProbeReadiness, ProbeLiveness} {
		if r := e.exec(t, id, ProbeCommand(p)); r.ExitCode != 0 {
			t.Errorf("%s probe at 150ms: exit %d, want 0", p, r.ExitCode)
		}
	}
	// Liveness fails from 400ms on.
	e.step(249 * time.Millisecond) // 399ms
	if r := e.exec(t, id, ProbeCommand(ProbeLiveness)); r.ExitCode != 0 {
		t.Errorf("liveness at 399ms failed, want success before 400ms")
	}
	e.step(time.Millisecond) // 400ms
	if r := e.exec(t, id, ProbeCommand(ProbeLiveness)); r.ExitCode == 0 {
		t.Errorf("liveness at 400ms passed, want failure from 400ms")
	}
	if r := e.exec(t, id, []string{"/bin/true"}); r.ExitCode != 0 {
		t.Errorf("foreign command: exit %d", r.ExitCode)
	}

	// preStop returns after 60ms.
	pre := e.execAsync(id, HookCommand(HookPreStop))
	e.waitWaiters(t, w0+1)
	e.step(59 * time.Millisecond)
	if pre.returned() {
		t.Fatal("preStop returned before its 60ms")
	}
	e.step(time.Millisecond)
	if r := pre.wait(t); r.ExitCode != 0 {
		t.Errorf("preStop: exit %d", r.ExitCode)
	}

	// SIGTERM handled in 30ms (exit 143), well within the 5s timeout.
	stopAt := run + 460*time.Millisecond
	stop := e.stopAsync(id, 5)
	e.waitWaiters(t, w0+2) // SIGTERM handling and the SIGKILL deadline
	e.step(29 * time.Millisecond)
	if stop.returned() || e.status(t, id).State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatal("container exited before its 30ms SIGTERM handling")
	}
	e.step(time.Millisecond)
	stop.wait(t)
	st := e.status(t, id)
	if st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 143 || st.Reason != "Error" || st.FinishedAt != e.at(stopAt+30*time.Millisecond) {
		t.Errorf("after stop: state %v code %d reason %q finished %d; want EXITED 143 Error at %d", st.State, st.ExitCode, st.Reason, st.FinishedAt, e.at(stopAt+30*time.Millisecond))
	}
	if e.sink.find(history.ContainerKilled, "proxy") != nil {
		t.Error("SIGKILLed although SIGTERM was handled in time")
	}
	if _, err := e.rt.RemoveContainer(context.Background(), &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
	// Every event, with its clock time relative to the start.
	var got []string
	for _, ev := range e.sink.events() {
		s := ev.Kind.String()
		if ev.Kind == history.ProbeResult {
			s += ":" + ev.Probe + "=" + ev.Result
		}
		got = append(got, fmt.Sprintf("%s@%s", s, time.Duration(ev.T-e.at(0))))
		if ev.Node != "node-1" || (ev.Kind != history.SandboxCreated && ev.Container != "proxy") || ev.Pod != "default/web-0" {
			t.Errorf("event %+v: wrong node/pod/container", ev)
		}
	}
	want := []string{
		"sandbox.created@0s", "container.start-requested@0s", "container.running@20ms", "container.poststart-done@100ms",
		"probe.result:startup=failure@169ms", "probe.result:startup=success@170ms", "probe.result:readiness=success@170ms",
		"probe.result:liveness=success@170ms", "probe.result:liveness=failure@420ms",
		"container.prestop-begin@420ms", "container.prestop-end@480ms", "container.stop-requested@480ms", "container.exited@510ms", "container.removed@510ms",
	}
	if !slices.Equal(got, want) {
		t.Errorf("events:\n got %v\nwant %v", got, want)
	}
	if ev := e.sink.find(history.ContainerStopRequested, "proxy"); ev == nil || ev.Grace != int64(5*time.Second) {
		t.Errorf("stop-requested = %+v, want grace 5s", ev)
	}
	if ev := e.sink.find(history.ContainerPostStartDone, "proxy"); ev == nil || !ev.Value {
		t.Errorf("poststart-done = %+v, want v=true", ev)
	}
}

// TestHookEndsWithItsContainer: a preStop that never returns ends (137)
// when the container exits meanwhile, here SIGKILLed at the end of the
// grace period.
func TestHookEndsWithItsContainer(t *testing.T) {
	e := start(t)
	sb, cfg := e.sandbox(t, ann(t, map[string]string{"stuck": `{"startLatency":"0s","preStop":"never","termHandling":"never"}`}))
	id := e.create(t, sb, cfg, "stuck")
	e.startC(t, id)
	w0 := e.clk.Waiters()
	pre := e.execAsync(id, HookCommand(HookPreStop))
	for deadline := time.Now().Add(30 * time.Second); e.sink.find(history.ContainerPreStopBegin, "stuck") == nil; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("preStop never began")
		}
	}
	stop := e.stopAsync(id, 2)
	e.waitWaiters(t, w0+1) // the SIGKILL deadline (the hook has no timer)
	e.step(2 * time.Second)
	stop.wait(t)
	if r := pre.wait(t); r.ExitCode != 137 {
		t.Errorf("preStop of a killed container: exit %d, want 137", r.ExitCode)
	}
	if ev := e.sink.find(history.ContainerPreStopEnd, "stuck"); ev == nil || ev.Msg != "container exited during the hook" || ev.T != e.at(2*time.Second) {
		t.Errorf("prestop-end = %+v, want at 2s with the exit as reason", ev)
	}
}

func TestStopIgnoredSIGTERMIsKilledAtTimeout(t *testing.T) {
	e := start(t)
	sb, cfg := e.sandbox(t, ann(t, map[string]string{"stubborn": `{"startLatency":"0s","termHandling":"never"}`}))
	id := e.create(t, sb, cfg, "stubborn")
	e.startC(t, id)
	w0 := e.clk.Waiters()
	stop := e.stopAsync(id, 1)
	e.waitWaiters(t, w0+1)
	e.step(time.Second - time.Nanosecond)
	if stop.returned() {
		t.Fatal("StopContainer returned before the 1s timeout")
	}
	e.step(time.Nanosecond)
	stop.wait(t)
	st := e.status(t, id)
	if st.ExitCode != 137 || st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.FinishedAt != e.at(time.Second) {
		t.Errorf("exit %d state %v at %d, want 137 EXITED at %d", st.ExitCode, st.State, st.FinishedAt, e.at(time.Second))
	}
	if e.sink.find(history.ContainerKilled, "stubborn") == nil {
		t.Error("no container.killed event")
	}
	// Idempotent on an exited container.
	if _, err := e.rt.StopContainer(context.Background(), &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 1}); err != nil {
		t.Fatal(err)
	}
}

func TestExitsCrashOOM(t *testing.T) {
	e := start(t)
	sb, cfg := e.sandbox(t, ann(t, map[string]string{
		"job":   `{"startLatency":"0s","runTime":"50ms","exitCode":0}`,
		"crash": `{"startLatency":"0s","runTime":"50ms","exitCode":3}`,
		"oom":   `{"startLatency":"0s","memoryGrowth":1000000,"memoryLimit":50000}`,
	}))
	want := map[string][2]any{"job": {int32(0), "Completed"}, "crash": {int32(3), "Error"}, "oom": {int32(137), "OOMKilled"}}
	ids := map[string]string{}
	for name := range want {
		ids[name] = e.create(t, sb, cfg, name)
		e.startC(t, ids[name])
	}
	// The job and the crash end after 50ms of run time; the OOM kill when
	// 1 MB/s of growth reaches 50 kB (50ms too).
	e.step(50 * time.Millisecond)
	for name, w := range want {
		st := e.status(t, ids[name])
		if st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.FinishedAt != e.at(50*time.Millisecond) {
			t.Errorf("%s: state %v finished %d, want EXITED at 50ms", name, st.State, st.FinishedAt)
		}
		if st.ExitCode != w[0].(int32) || st.Reason != w[1].(string) || st.FinishedAt < st.StartedAt {
			t.Errorf("%s: exit %d reason %q, want %v", name, st.ExitCode, st.Reason, w)
		}
		ev := e.sink.find(history.ContainerExited, name)
		if ev == nil || ev.Code != w[0].(int32) || ev.Reason != w[1].(string) {
			t.Errorf("%s: exited event %+v", name, ev)
		}
	}
	// Lists and filters.
	l, err := e.rt.ListContainers(context.Background(), &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		PodSandboxId: sb, State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_EXITED},
	}})
	if err != nil || len(l.Containers) != 3 {
		t.Fatalf("ListContainers = %v, %v", l, err)
	}
	if _, err := e.rt.StopPodSandbox(context.Background(), &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.rt.RemovePodSandbox(context.Background(), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb}); err != nil {
		t.Fatal(err)
	}
	ls, _ := e.rt.ListPodSandbox(context.Background(), &runtimeapi.ListPodSandboxRequest{})
	lc, _ := e.rt.ListContainers(context.Background(), &runtimeapi.ListContainersRequest{})
	if len(ls.Items) != 0 || len(lc.Containers) != 0 {
		t.Errorf("after remove: %d sandboxes, %d containers", len(ls.Items), len(lc.Containers))
	}
	n := 0
	for _, ev := range e.sink.events() {
		if ev.Kind == history.ContainerRemoved {
			n++
		}
	}
	if n != 3 || e.sink.find(history.SandboxStopped, "") == nil {
		t.Errorf("removed events %d, sandbox.stopped %v", n, e.sink.find(history.SandboxStopped, ""))
	}
}

func TestStopPodSandboxKillsRunning(t *testing.T) {
	e := start(t)
	sb, cfg := e.sandbox(t, nil)
	id := e.create(t, sb, cfg, "app")
	e.startAfter(t, id, behavior.Default().StartLatency.Mean())
	if _, err := e.rt.StopPodSandbox(context.Background(), &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb}); err != nil {
		t.Fatal(err)
	}
	if st := e.status(t, id); st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 137 {
		t.Errorf("after StopPodSandbox: %v %d", st.State, st.ExitCode)
	}
	r, err := e.rt.PodSandboxStatus(context.Background(), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sb})
	if err != nil || r.Status.State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
		t.Errorf("sandbox status %v %v", r, err)
	}
	if ip := r.GetStatus().GetNetwork().GetIp(); ip != "127.100.0.1" {
		t.Errorf("pod IP %q, want the first of 127.100.0.0/16", ip)
	}
	if _, err := e.rt.CreateContainer(context.Background(), &runtimeapi.CreateContainerRequest{PodSandboxId: sb, Config: &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "late"}}}); err == nil {
		t.Error("CreateContainer in a stopped sandbox succeeded")
	}
}

func TestBadBehaviorAnnotation(t *testing.T) {
	e := start(t)
	sb, _ := e.sandbox(t, ann(t, map[string]string{"app": `{"startLatency":"never"}`}))
	_, err := e.rt.CreateContainer(context.Background(), &runtimeapi.CreateContainerRequest{PodSandboxId: sb, Config: &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "app"}}})
	if err == nil {
		t.Fatal("CreateContainer with an invalid behaviour succeeded")
	}
	if e.sink.find(history.ContainerStartFailed, "app") == nil {
		t.Error("no container.start-failed event")
	}
}

func TestAttemptsDrawIndependently(t *testing.T) {
	// The same seed, pod, container and attempt give the same plan as the sim's key.
	b := behavior.Default()
	b.StartLatency = behavior.MustParse("uniform(1ms, 1s)")
	p0 := b.Draw(behavior.ContainerKey(42, "default/web-0", "app", 0).Rand())
	p1 := b.Draw(behavior.ContainerKey(42, "default/web-0", "app", 1).Rand())
	if p0 == p1 {
		t.Error("attempts 0 and 1 drew the same plan")
	}
	k, v, err := BehaviorAnnotation("app", b)
	if err != nil {
		t.Fatal(err)
	}
	got, err := behaviorFor(map[string]string{k: v}, "app")
	if err != nil || !reflect.DeepEqual(got, b) {
		t.Errorf("annotation round trip: %v %v", got, err)
	}
}

// TestRestartAllContainersReset: the kubelet's RestartAllContainers path
// in one sandbox: every container stopped and RemoveContainer-d
// (container.removed each, gone from ListContainers), then the init
// sequence created again with the next attempt in the same, still ready
// sandbox.
func TestRestartAllContainersReset(t *testing.T) {
	e := start(t)
	sb, cfg := e.sandbox(t, nil)
	createAt := func(name string, attempt uint32) string {
		r, err := e.rt.CreateContainer(context.Background(), &runtimeapi.CreateContainerRequest{PodSandboxId: sb, SandboxConfig: cfg,
			Config: &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: name, Attempt: attempt}, Image: &runtimeapi.ImageSpec{Image: "example.local/app:v1"}}})
		if err != nil {
			t.Fatal(err)
		}
		return r.ContainerId
	}
	proxy, app := createAt("proxy", 0), createAt("app", 0)
	def := behavior.Default()
	e.startAfter(t, proxy, def.StartLatency.Mean())
	e.startAfter(t, app, def.StartLatency.Mean())
	for _, id := range []string{proxy, app} {
		e.stopAfter(t, id, 2, def.TermHandling.Mean())
		if _, err := e.rt.RemoveContainer(context.Background(), &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
			t.Fatal(err)
		}
	}
	l, err := e.rt.ListContainers(context.Background(), &runtimeapi.ListContainersRequest{})
	if err != nil || len(l.Containers) != 0 {
		t.Fatalf("after the reset's removals: %v %v", l, err)
	}
	removed := 0
	for _, ev := range e.sink.events() {
		if ev.Kind == history.ContainerRemoved {
			removed++
		}
	}
	if removed != 2 {
		t.Errorf("%d container.removed, want 2", removed)
	}
	st, err := e.rt.PodSandboxStatus(context.Background(), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sb})
	if err != nil || st.Status.State != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Fatalf("sandbox not kept ready: %v %v", st, err)
	}
	proxy1 := createAt("proxy", 1)
	e.startAfter(t, proxy1, def.StartLatency.Mean())
	if s := e.status(t, proxy1); s.State != runtimeapi.ContainerState_CONTAINER_RUNNING || s.Metadata.Attempt != 1 {
		t.Errorf("re-initialized proxy: %v attempt %d", s.State, s.Metadata.Attempt)
	}
	var att []uint32
	for _, ev := range e.sink.events() {
		if ev.Kind == history.ContainerRunning && ev.Container == "proxy" {
			att = append(att, ev.Attempt)
		}
	}
	if len(att) != 2 || att[0] != 0 || att[1] != 1 {
		t.Errorf("proxy running attempts %v, want [0 1]", att)
	}
}
