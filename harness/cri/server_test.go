package cri

import (
	"context"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

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
}

func start(t *testing.T) *env {
	t.Helper()
	sink := &memSink{}
	srv := New(Config{Node: "node-1", Sink: sink})
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
	return &env{rt: runtimeapi.NewRuntimeServiceClient(conn), img: runtimeapi.NewImageServiceClient(conn), sink: sink, srv: srv}
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

func (e *env) startC(t *testing.T, id string) {
	t.Helper()
	if _, err := e.rt.StartContainer(context.Background(), &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
}

func (e *env) status(t *testing.T, id string) *runtimeapi.ContainerStatus {
	t.Helper()
	r, err := e.rt.ContainerStatus(context.Background(), &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		t.Fatal(err)
	}
	return r.Status
}

func (e *env) exec(t *testing.T, id string, cmd []string) (*runtimeapi.ExecSyncResponse, time.Duration) {
	t.Helper()
	t0 := time.Now()
	r, err := e.rt.ExecSync(context.Background(), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd})
	if err != nil {
		t.Fatal(err)
	}
	return r, time.Since(t0)
}

func waitState(t *testing.T, e *env, id string, want runtimeapi.ContainerState, within time.Duration) *runtimeapi.ContainerStatus {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		st := e.status(t, id)
		if st.State == want {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("container %s: state %v, want %v within %v", id, st.State, want, within)
		}
		time.Sleep(5 * time.Millisecond)
	}
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

func TestProbesAndHooks(t *testing.T) {
	e := start(t)
	sb, cfg := e.sandbox(t, ann(t, map[string]string{
		"proxy": `{"startLatency":"20ms","startupAfter":"150ms","readyAfter":"150ms","postStart":"80ms","preStop":"60ms","termHandling":"30ms","termExitCode":143,"livenessFailAfter":"400ms"}`,
	}))
	id := e.create(t, sb, cfg, "proxy")
	t0 := time.Now()
	e.startC(t, id)
	if d := time.Since(t0); d < 20*time.Millisecond {
		t.Errorf("StartContainer took %v, want >= startLatency 20ms", d)
	}
	if st := e.status(t, id); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING || st.StartedAt == 0 {
		t.Fatalf("after start: %v", st)
	}
	r, d := e.exec(t, id, HookCommand(HookPostStart))
	if r.ExitCode != 0 || d < 80*time.Millisecond {
		t.Errorf("postStart: exit %d after %v, want 0 after >= 80ms", r.ExitCode, d)
	}
	// startup passes 150ms after running; postStart took 80ms of it.
	time.Sleep(20 * time.Millisecond)
	if r, _ := e.exec(t, id, ProbeCommand(ProbeStartup)); r.ExitCode == 0 {
		t.Errorf("startup probe passed at ~100ms, want failure before 150ms")
	}
	time.Sleep(80 * time.Millisecond)
	for _, p := range []string{ProbeStartup, ProbeReadiness, ProbeLiveness} {
		if r, _ := e.exec(t, id, ProbeCommand(p)); r.ExitCode != 0 {
			t.Errorf("%s probe at ~200ms: exit %d, want 0", p, r.ExitCode)
		}
	}
	time.Sleep(250 * time.Millisecond)
	if r, _ := e.exec(t, id, ProbeCommand(ProbeLiveness)); r.ExitCode == 0 {
		t.Errorf("liveness at ~450ms passed, want failure after 400ms")
	}
	if r, _ := e.exec(t, id, []string{"/bin/true"}); r.ExitCode != 0 {
		t.Errorf("foreign command: exit %d", r.ExitCode)
	}
	r, d = e.exec(t, id, HookCommand(HookPreStop))
	if r.ExitCode != 0 || d < 60*time.Millisecond {
		t.Errorf("preStop: exit %d after %v", r.ExitCode, d)
	}
	t0 = time.Now()
	if _, err := e.rt.StopContainer(context.Background(), &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 5}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d < 30*time.Millisecond || d > 2*time.Second {
		t.Errorf("StopContainer took %v, want ~30ms (termHandling)", d)
	}
	st := e.status(t, id)
	if st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 143 || st.Reason != "Error" {
		t.Errorf("after stop: state %v code %d reason %q", st.State, st.ExitCode, st.Reason)
	}
	if _, err := e.rt.RemoveContainer(context.Background(), &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range e.sink.events() {
		s := ev.Kind.String()
		if ev.Kind == history.ProbeResult {
			s += ":" + ev.Probe + "=" + ev.Result
		}
		got = append(got, s)
		if ev.Node != "node-1" || (ev.Kind != history.SandboxCreated && ev.Container != "proxy") || ev.Pod != "default/web-0" {
			t.Errorf("event %+v: wrong node/pod/container", ev)
		}
	}
	want := []string{
		"sandbox.created", "container.start-requested", "container.running", "container.poststart-done",
		"probe.result:startup=failure", "probe.result:startup=success", "probe.result:readiness=success",
		"probe.result:liveness=success", "probe.result:liveness=failure",
		"container.prestop-begin", "container.prestop-end", "container.stop-requested", "container.exited", "container.removed",
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

func TestStopIgnoredSIGTERMIsKilledAtTimeout(t *testing.T) {
	e := start(t)
	sb, cfg := e.sandbox(t, ann(t, map[string]string{"stubborn": `{"startLatency":"0s","termHandling":"never"}`}))
	id := e.create(t, sb, cfg, "stubborn")
	e.startC(t, id)
	t0 := time.Now()
	if _, err := e.rt.StopContainer(context.Background(), &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 1}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d < time.Second || d > 3*time.Second {
		t.Errorf("StopContainer took %v, want ~1s", d)
	}
	st := e.status(t, id)
	if st.ExitCode != 137 || st.State != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Errorf("exit %d state %v, want 137 EXITED", st.ExitCode, st.State)
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
	for name, w := range want {
		st := waitState(t, e, ids[name], runtimeapi.ContainerState_CONTAINER_EXITED, 2*time.Second)
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
	e.startC(t, id)
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
	e.startC(t, proxy)
	e.startC(t, app)
	for _, id := range []string{proxy, app} {
		if _, err := e.rt.StopContainer(context.Background(), &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 2}); err != nil {
			t.Fatal(err)
		}
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
	e.startC(t, proxy1)
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
