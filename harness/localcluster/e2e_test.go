//go:build e2e

package localcluster

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/sidebench/sidebench/harness/cri"
	"github.com/sidebench/sidebench/harness/history"
)

type recSink struct {
	mu sync.Mutex
	ev []history.Event
}

func (r *recSink) Write(e *history.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ev = append(r.ev, *e)
	return nil
}

func (r *recSink) events() []history.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ev)
}

func sidecarPod(node string) *corev1.Pod {
	always := corev1.ContainerRestartPolicyAlways
	no := false
	grace := int64(5)
	probe := func(kind string) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: cri.ProbeCommand(kind)}},
			PeriodSeconds: 1, FailureThreshold: 30,
		}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "sidecar-demo", Namespace: "default",
			Annotations: map[string]string{
				cri.AnnotationSeed:                     "7",
				cri.AnnotationBehaviorPrefix + "proxy": `{"startLatency":"50ms","startupAfter":"300ms","termHandling":"200ms","postStart":"100ms","preStop":"100ms"}`,
				cri.AnnotationBehaviorPrefix + "app":   `{"startLatency":"50ms","termHandling":"100ms"}`,
			},
		},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			AutomountServiceAccountToken:  &no,
			TerminationGracePeriodSeconds: &grace,
			InitContainers: []corev1.Container{{
				Name: "proxy", Image: "example.local/sidecar:v1", RestartPolicy: &always,
				StartupProbe: probe(cri.ProbeStartup),
				Lifecycle: &corev1.Lifecycle{
					PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: cri.HookCommand(cri.HookPostStart)}},
					PreStop:   &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: cri.HookCommand(cri.HookPreStop)}},
				},
			}},
			Containers: []corev1.Container{{Name: "app", Image: "example.local/app:v1"}},
		},
	}
}

func TestE2ESidecarPod(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (the kubelet)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	sink := &recSink{}
	before := snapshotShared(t)
	t0 := time.Now()
	cl, err := Up(ctx, Config{Nodes: 1, Log: testWriter{t}, Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	runDir := cl.RunDir
	st := *cl.state
	downed := false
	defer func() {
		if !downed {
			if err := cl.Down(); err != nil {
				t.Error(err)
			}
		}
	}()
	t.Logf("timings: build/reuse %s, etcd healthy %s, apiserver ready %s, node Ready %s (total %s)",
		cl.Timings.Build.Round(time.Millisecond), cl.Timings.EtcdReady.Round(time.Millisecond),
		cl.Timings.APIServerReady.Round(time.Millisecond), cl.Timings.NodesReady.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))

	cs, err := cl.Client()
	if err != nil {
		t.Fatal(err)
	}
	pod := sidecarPod(cl.Nodes[0].Name)
	w, err := cs.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", pod.Name).String()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	created := time.Now()
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var running time.Duration
	for ev := range w.ResultChan() {
		if ev.Type == watch.Error {
			t.Fatalf("watch error: %v", ev.Object)
		}
		p, ok := ev.Object.(*corev1.Pod)
		if !ok {
			continue
		}
		ready := 0
		for _, s := range p.Status.ContainerStatuses {
			if s.State.Running != nil {
				ready++
			}
		}
		if p.Status.Phase == corev1.PodRunning && ready == len(p.Spec.Containers) {
			running = time.Since(created)
			break
		}
		if time.Since(created) > 2*time.Minute {
			t.Fatalf("pod not Running after 2m: %+v", p.Status)
		}
	}
	t.Logf("pod Running %s after create", running.Round(time.Millisecond))

	delStart := time.Now()
	if err := cs.CoreV1().Pods("default").Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for ev := range w.ResultChan() {
		if ev.Type == watch.Deleted {
			break
		}
		if time.Since(delStart) > 2*time.Minute {
			t.Fatal("pod not gone after 2m")
		}
	}
	t.Logf("pod deleted (object gone) %s after delete", time.Since(delStart).Round(time.Millisecond))

	evs := sink.events()
	var lines []string
	idx := func(k history.Kind, c string) int {
		for i, e := range evs {
			if e.Kind == k && e.Container == c {
				return i
			}
		}
		return -1
	}
	for _, e := range evs {
		lines = append(lines, fmt.Sprintf("%s %s %s a=%d code=%d grace=%d %s%s %v", time.Unix(0, e.T).Format("15:04:05.000000"), e.Kind, e.Container, e.Attempt, e.Code, e.Grace, e.Probe, e.Result, e.Value))
	}
	t.Logf("history (%d events):\n%s", len(evs), strings.Join(lines, "\n"))
	sc, mc := idx(history.ContainerRunning, "proxy"), idx(history.ContainerRunning, "app")
	if sc < 0 || mc < 0 || sc > mc {
		t.Errorf("sidecar running at index %d, main at %d: want sidecar first", sc, mc)
	}
	if su, mc2 := idx(history.ProbeResult, "proxy"), idx(history.ContainerStartRequested, "app"); su > mc2 {
		t.Logf("note: first probe of the sidecar after main start requested")
	}
	for _, c := range []string{"proxy", "app"} {
		if idx(history.ContainerExited, c) < 0 {
			t.Errorf("%s: no container.exited", c)
		}
	}
	if me, se := idx(history.ContainerExited, "app"), idx(history.ContainerStopRequested, "proxy"); me < 0 || se < 0 || se < me {
		t.Errorf("sidecar stop requested at %d, main exited at %d: want sidecar stopped after main exit", se, me)
	}

	w.Stop()
	tDown := time.Now()
	if err := cl.Down(); err != nil {
		t.Fatal(err)
	}
	downed = true
	t.Logf("teardown %s", time.Since(tDown).Round(time.Millisecond))
	for _, p := range st.Procs {
		if p.Alive() {
			t.Errorf("%s (pid %d) still alive after Down", p.Name, p.PID)
		}
	}
	if m, _ := mountsUnder([]string{runDir}); len(m) > 0 {
		t.Errorf("mounts remain: %v", m)
	}
	checkSharedRestored(t, before)
	if _, err := os.Stat(runDir); !os.IsNotExist(err) {
		t.Errorf("run dir %s still exists (%v)", runDir, err)
	}
}

// sharedSnapshot is the shared host state (hostshare.go) before a test's
// clusters: the kubelets' kernel settings, the host limits, and which
// kubelet host paths exist.
type sharedSnapshot struct {
	sysctls map[string]string
	paths   map[string]bool
}

func snapshotShared(t *testing.T) sharedSnapshot {
	t.Helper()
	s := sharedSnapshot{sysctls: map[string]string{}, paths: map[string]bool{}}
	names := append([]string(nil), kubeletSysctls...)
	for _, l := range hostLimits {
		names = append(names, l.Sysctl)
	}
	for _, n := range names {
		v, err := readSysctl(n)
		if err != nil {
			t.Fatal(err)
		}
		s.sysctls[n] = v
	}
	for _, p := range kubeletHostPaths {
		_, err := os.Stat(p)
		s.paths[p] = err == nil
	}
	return s
}

// checkSharedRestored checks, once the test's clusters are down, that the
// shared host state is as before, unless another cluster (someone else's)
// still holds it: then it must not have been restored under it, and is
// only logged.
func checkSharedRestored(t *testing.T, before sharedSnapshot) {
	t.Helper()
	now := snapshotShared(t)
	if hs, err := Clusters(); err != nil {
		t.Error(err)
	} else if len(hs) > 0 {
		t.Logf("%d other local cluster(s) hold the shared host state (first %s): it stays as they need it", len(hs), hs[0].RunDir)
		return
	}
	if !mapsEqual(now.sysctls, before.sysctls) {
		t.Errorf("shared host settings %v, want restored %v", now.sysctls, before.sysctls)
	}
	for p, existed := range before.paths {
		if now.paths[p] != existed {
			t.Errorf("host path %s: existed %v before, %v now", p, existed, now.paths[p])
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// waitRunning creates pod and waits until all its main containers run.
func waitRunning(ctx context.Context, t *testing.T, cl *Cluster, pod *corev1.Pod) time.Duration {
	t.Helper()
	cs, err := cl.Client()
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if _, err := cs.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for time.Since(t0) < 2*time.Minute {
		p, err := cs.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err == nil && p.Status.Phase == corev1.PodRunning {
			return time.Since(t0)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("pod %s not Running after 2m", pod.Name)
	return 0
}

// upCluster brings up a cluster of n nodes for one test (skipped unless
// root) and tears it down when the test ends, before its context is
// cancelled; it returns the context, the cluster, the recorded history and
// a clientset.
func upCluster(t *testing.T, n int) (context.Context, *Cluster, *recSink, kubernetes.Interface) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (the kubelet)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	t.Cleanup(cancel) // cleanups run last-in first-out: Down first
	sink := &recSink{}
	cl, err := Up(ctx, Config{Nodes: n, Log: testWriter{t}, Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cl.Down(); err != nil {
			t.Error(err)
		}
	})
	cs, err := cl.Client()
	if err != nil {
		t.Fatal(err)
	}
	return ctx, cl, sink, cs
}

func TestE2EMultiNode(t *testing.T) {
	ctx, cl, sink, cs := upCluster(t, 3)
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		t.Logf("node %s addresses %v taints %v", n.Name, n.Status.Addresses, n.Spec.Taints)
		for _, a := range n.Status.Addresses {
			if !strings.HasPrefix(a.Address, "127.") {
				t.Errorf("node %s has a non-loopback address %v", n.Name, a)
			}
		}
	}
	if len(nodes.Items) != 3 {
		t.Fatalf("%d nodes, want 3", len(nodes.Items))
	}
	for i, n := range cl.Nodes {
		pod := sidecarPod(n.Name)
		pod.Name = fmt.Sprintf("demo-%d", i)
		d := waitRunning(ctx, t, cl, pod)
		p, _ := cs.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		t.Logf("pod %s on %s Running after %s, podIP %s", pod.Name, n.Name, d.Round(time.Millisecond), p.Status.PodIP)
	}
	seen := map[string]string{}
	for _, e := range sink.events() {
		if e.Kind == history.ContainerRunning && e.Container == "app" {
			seen[e.Pod] = e.Node
		}
	}
	for i, n := range cl.Nodes {
		if got := seen[fmt.Sprintf("default/demo-%d", i)]; got != n.Name {
			t.Errorf("demo-%d ran on %q per history, want %s", i, got, n.Name)
		}
	}
}

// TestE2EDownAfterSIGKILL starts a cluster in a child process that is then
// SIGKILLed; DownDir must clean up from the state file alone.
func TestE2EDownAfterSIGKILL(t *testing.T) {
	if dir := os.Getenv("SIDEBENCH_E2E_CHILD_RUNDIR"); dir != "" {
		cl, err := Up(context.Background(), Config{Nodes: 1, RunDir: dir, KeepOnExit: os.Getenv("SIDEBENCH_E2E_KEEP") == "1"})
		if err != nil {
			fmt.Println("ERROR", err)
			os.Exit(1)
		}
		fmt.Println("READY", cl.RunDir)
		select {}
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root (the kubelet)")
	}
	for _, keep := range []bool{true, false} {
		t.Run(fmt.Sprintf("keepOnExit=%v", keep), func(t *testing.T) {
			dir, err := os.MkdirTemp("", "sbk")
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(dir)
			before := snapshotShared(t)
			cmd := exec.Command(os.Args[0], "-test.run=^TestE2EDownAfterSIGKILL$", "-test.v")
			cmd.Env = append(os.Environ(), "SIDEBENCH_E2E_CHILD_RUNDIR="+dir)
			if keep {
				cmd.Env = append(cmd.Env, "SIDEBENCH_E2E_KEEP=1")
			}
			out, _ := cmd.StdoutPipe()
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(out)
			ready := false
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "READY") {
					ready = true
					break
				}
				if strings.HasPrefix(sc.Text(), "ERROR") {
					t.Fatal(sc.Text())
				}
			}
			if !ready {
				t.Fatal("child did not become ready")
			}
			_ = cmd.Process.Signal(syscall.SIGKILL)
			_ = cmd.Wait()
			time.Sleep(500 * time.Millisecond)
			st, err := LoadState(dir)
			if err != nil {
				t.Fatal(err)
			}
			alive := 0
			for _, p := range st.Procs {
				if p.Alive() {
					alive++
				}
			}
			m, _ := mountsUnder([]string{dir})
			now, _ := readSysctls()
			t.Logf("after SIGKILL of the owner: %d/%d processes alive, %d mounts, sysctls %v (before %v)", alive, len(st.Procs), len(m), now, before.sysctls)
			if keep && alive != len(st.Procs) {
				t.Errorf("KeepOnExit: %d of %d processes alive", alive, len(st.Procs))
			}
			if !keep && alive != 0 {
				t.Errorf("parent-death signal: %d processes still alive", alive)
			}
			t0 := time.Now()
			if err := DownDir(dir, testWriter{t}); err != nil {
				t.Fatal(err)
			}
			t.Logf("DownDir took %s", time.Since(t0).Round(time.Millisecond))
			for _, p := range st.Procs {
				if p.Alive() {
					t.Errorf("%s still alive", p.Name)
				}
			}
			if m, _ := mountsUnder([]string{dir}); len(m) > 0 {
				t.Errorf("mounts remain: %v", m)
			}
			checkSharedRestored(t, before)
		})
	}
}

// TestE2EBehaviours drives a real kubelet through liveness failure, OOM
// kill and a SIGTERM-ignoring container killed at the end of its grace.
func TestE2EBehaviours(t *testing.T) {
	ctx, cl, sink, cs := upCluster(t, 1)
	pod := sidecarPod(cl.Nodes[0].Name)
	pod.Name = "faulty"
	pod.Annotations[cri.AnnotationBehaviorPrefix+"proxy"] = `{"startLatency":"20ms","livenessFailAfter":"1500ms","termHandling":"50ms"}`
	pod.Annotations[cri.AnnotationBehaviorPrefix+"app"] = `{"startLatency":"20ms","memoryGrowth":1000000,"memoryLimit":1000000,"termHandling":"never"}`
	pod.Spec.InitContainers[0].StartupProbe = nil
	pod.Spec.InitContainers[0].Lifecycle = nil
	pod.Spec.InitContainers[0].LivenessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: cri.ProbeCommand(cri.ProbeLiveness)}},
		PeriodSeconds: 1, FailureThreshold: 1,
	}
	grace := int64(2)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	waitRunning(ctx, t, cl, pod)
	var oom, liveRestart bool
	for t0 := time.Now(); time.Since(t0) < 90*time.Second && !(oom && liveRestart); time.Sleep(200 * time.Millisecond) {
		p, err := cs.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range p.Status.ContainerStatuses {
			if c.Name == "app" && c.LastTerminationState.Terminated != nil && c.LastTerminationState.Terminated.Reason == "OOMKilled" {
				if !oom {
					t.Logf("app: lastState terminated %s exit %d, restarts %d", c.LastTerminationState.Terminated.Reason, c.LastTerminationState.Terminated.ExitCode, c.RestartCount)
				}
				oom = true
			}
		}
		for _, c := range p.Status.InitContainerStatuses {
			if c.Name == "proxy" && c.RestartCount >= 1 {
				if !liveRestart {
					t.Logf("proxy: restarted after liveness failure, restarts %d, last exit %+v", c.RestartCount, c.LastTerminationState.Terminated)
				}
				liveRestart = true
			}
		}
	}
	if !oom || !liveRestart {
		t.Fatalf("after 90s: OOMKilled seen %v, liveness restart seen %v", oom, liveRestart)
	}
	// A second pod whose app ignores SIGTERM: SIGKILLed at the 2s grace.
	stubborn := sidecarPod(cl.Nodes[0].Name)
	stubborn.Name = "stubborn"
	stubborn.Annotations[cri.AnnotationBehaviorPrefix+"app"] = `{"startLatency":"20ms","termHandling":"never"}`
	stubborn.Spec.TerminationGracePeriodSeconds = &grace
	waitRunning(ctx, t, cl, stubborn)
	for _, name := range []string{pod.Name, stubborn.Name} {
		if err := cs.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{pod.Name, stubborn.Name} {
		for t0 := time.Now(); ; time.Sleep(200 * time.Millisecond) {
			if _, err := cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{}); err != nil {
				break
			}
			if time.Since(t0) > time.Minute {
				t.Fatalf("pod %s not gone after 1m", name)
			}
		}
	}
	var lines []string
	var sawOOM, sawLiveFail, sawKill bool
	for _, e := range sink.events() {
		lines = append(lines, fmt.Sprintf("%s %s %s %s a=%d code=%d %s grace=%s %s%s", time.Unix(0, e.T).Format("05.000"), e.Pod, e.Kind, e.Container, e.Attempt, e.Code, e.Reason, time.Duration(e.Grace), e.Probe, e.Result))
		switch {
		case e.Kind == history.ContainerExited && e.Container == "app" && e.Reason == "OOMKilled" && e.Code == 137:
			sawOOM = true
		case e.Kind == history.ProbeResult && e.Container == "proxy" && e.Probe == "liveness" && e.Result == "failure":
			sawLiveFail = true
		case e.Kind == history.ContainerKilled && e.Container == "app" && e.Pod == "default/stubborn":
			sawKill = true
		}
	}
	t.Logf("history:\n%s", strings.Join(lines, "\n"))
	if !sawOOM || !sawLiveFail || !sawKill {
		t.Errorf("history: OOM exit %v, liveness failure %v, SIGKILL of app at grace %v", sawOOM, sawLiveFail, sawKill)
	}
}

// TestE2EKubeletRestart SIGKILLs the kubelet under a running sidecar pod
// and starts it again: the CRI server kept the containers, so the new
// kubelet adopts them without restarting anything.
func TestE2EKubeletRestart(t *testing.T) {
	ctx, cl, sink, cs := upCluster(t, 1)
	pod := sidecarPod(cl.Nodes[0].Name)
	waitRunning(ctx, t, cl, pod)
	before := len(sink.events())
	t0 := time.Now()
	if err := cl.KillKubelet(0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if err := cl.StartKubelet(ctx, 0); err != nil {
		t.Fatal(err)
	}
	t.Logf("kubelet killed and healthy again after %s", time.Since(t0).Round(time.Millisecond))
	time.Sleep(5 * time.Second)
	p, err := cs.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
		if c.RestartCount != 0 || c.State.Running == nil {
			t.Errorf("%s after kubelet restart: restarts %d state %+v", c.Name, c.RestartCount, c.State)
		}
	}
	for _, e := range sink.events()[before:] {
		t.Logf("event after the restart: %s %s a=%d", e.Kind, e.Container, e.Attempt)
		if e.Kind == history.ContainerStartRequested || e.Kind == history.ContainerExited || e.Kind == history.SandboxCreated {
			t.Errorf("kubelet restart disturbed the pod: %s %s", e.Kind, e.Container)
		}
	}
}
