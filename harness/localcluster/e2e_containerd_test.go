//go:build e2e

package localcluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
)

const (
	agentImage = "example.local/sidebench-agent:v1"
	pauseImage = DefaultSandboxImage
)

// buildAgentImage writes the agent + pause image tarball into dir, as
// `make image` does.
func buildAgentImage(t *testing.T, dir string) string {
	t.Helper()
	out := filepath.Join(dir, "sidebench-agent.tar")
	t0 := time.Now()
	cmd := exec.Command("go", "run", "./hack/image", "-o", out, "-name", agentImage, "-pause-name", pauseImage)
	cmd.Dir = filepath.Join("..", "..")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/image: %v\n%s", err, b)
	}
	t.Logf("image tarball built in %s", time.Since(t0).Round(time.Millisecond))
	return out
}

// hostSnapshot is the host state outside the run dir that the containerd
// tier may touch, taken before Up to compare after Down.
type hostSnapshot struct {
	netns   []string // /var/run/netns entries
	links   []string // /sys/class/net entries
	exists  map[string]bool
	sysctls map[string]string
	fwd     string
}

func dirNames(d string) []string {
	ents, _ := os.ReadDir(d)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func snapshotHost(t *testing.T) hostSnapshot {
	parents, err := cgroupParents()
	if err != nil {
		t.Fatal(err)
	}
	s := hostSnapshot{netns: dirNames("/var/run/netns"), links: dirNames("/sys/class/net"), exists: map[string]bool{}}
	// Besides the dirs teardown knows, the default places of containerd,
	// runc and CNI, which the configuration must keep it out of.
	defaults := []string{"/var/lib/containerd", "/opt/containerd", "/run/containerd/runc", "/var/run/netns", "/etc/cni", "/var/lib/cni/networks", "/run/containerd/containerd.sock"}
	for _, p := range append(runtimeSharedDirs(parents), defaults...) {
		_, err := os.Lstat(p)
		s.exists[p] = err == nil
	}
	s.sysctls, _ = readSysctls()
	b, _ := os.ReadFile("/proc/sys/net/ipv4/ip_forward")
	s.fwd = string(b)
	return s
}

// checkHostClean compares the host with before after a teardown of st.
func checkHostClean(t *testing.T, before hostSnapshot, st State, ids map[string][]string) {
	t.Helper()
	if ps := ourProcesses(st.RunDir); len(ps) > 0 {
		t.Errorf("processes of the cluster still alive:\n%s", strings.Join(ps, "\n"))
	}
	if m, _ := mountsUnder([]string{st.RunDir}); len(m) > 0 {
		t.Errorf("mounts remain under the run dir: %v", m)
	}
	// Another containerd on the host (another engineer's cluster) changes
	// the shared places meanwhile: then a difference there is only
	// reported, and what is ours is checked by name.
	foreign := foreignRuntimes()
	report := t.Errorf
	if len(foreign) > 0 {
		t.Logf("other container runtimes run on this host (%s): host-wide differences are only logged", strings.Join(foreign, "; "))
		report = t.Logf
	}
	// Another local cluster holds the shared host state: the shared dirs
	// and settings stay for it (hostshare.go), and are only logged.
	shared := report
	if hs, _ := Clusters(); len(hs) > 0 {
		t.Logf("%d other local cluster(s) hold the shared host state (first %s): shared dirs and settings stay", len(hs), hs[0].RunDir)
		shared = t.Logf
	}
	if got := dirNames("/var/run/netns"); !slices.Equal(got, before.netns) {
		report("/var/run/netns now %v, before %v", got, before.netns)
	}
	if got := dirNames("/sys/class/net"); !slices.Equal(got, before.links) {
		report("links now %v, before %v", got, before.links)
	}
	for _, r := range st.Containerd {
		if _, err := os.Lstat(filepath.Join("/sys/class/net", r.Bridge)); err == nil {
			t.Errorf("bridge %s left", r.Bridge)
		}
		for _, e := range dirNames(filepath.Join(cniCacheDir, "results")) {
			if ourCNICacheEntry(e, r.Network, ids[r.Node]) {
				t.Errorf("libcni cache entry %s left", e)
			}
		}
		for _, id := range ids[r.Node] {
			for _, p := range st.CgroupParents {
				if _, err := os.Stat(filepath.Join(p, id)); err == nil {
					t.Errorf("cgroup %s left", filepath.Join(p, id))
				}
			}
			if _, err := os.Stat(shimSocket(r.Socket, id)); err == nil {
				t.Errorf("shim socket %s left", shimSocket(r.Socket, id))
			}
		}
	}
	for p, existed := range before.exists {
		if _, err := os.Lstat(p); !existed && err == nil {
			shared("%s did not exist before Up and exists now (entries %v)", p, dirNames(p))
		}
	}
	if now, _ := readSysctls(); !mapsEqual(now, before.sysctls) {
		shared("sysctls %v, want %v", now, before.sysctls)
	}
	if b, _ := os.ReadFile("/proc/sys/net/ipv4/ip_forward"); string(b) != before.fwd {
		t.Errorf("net.ipv4.ip_forward %q, before %q", b, before.fwd)
	}
}

// foreignRuntimes lists running containerd and shim processes (called
// once ours are gone).
func foreignRuntimes() []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		args := cmdline(pid)
		if len(args) > 0 && (filepath.Base(args[0]) == "containerd" || filepath.Base(args[0]) == "containerd-shim-runc-v2") {
			if _, err := procStartTicks(pid); err == nil {
				out = append(out, strings.Join(args, " "))
			}
		}
	}
	return out
}

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
}

// agentContainer is a container running the agent with behaviour b, the
// shared log on the emptyDir "sidebench-log".
func agentContainer(name, b string) corev1.Container {
	return corev1.Container{
		Name: name, Image: agentImage, ImagePullPolicy: corev1.PullIfNotPresent,
		Env: []corev1.EnvVar{
			{Name: "SIDEBENCH_LOG", Value: "/sidebench/log.jsonl"},
			{Name: "SIDEBENCH_CONTAINER", Value: name},
			{Name: "SIDEBENCH_STDOUT", Value: "1"},
			{Name: "SIDEBENCH_SEED", Value: "7"},
			{Name: "SIDEBENCH_BEHAVIOR", Value: b},
			fieldEnv("SIDEBENCH_POD", "metadata.name"),
			fieldEnv("SIDEBENCH_NAMESPACE", "metadata.namespace"),
			fieldEnv("SIDEBENCH_POD_UID", "metadata.uid"),
		},
		VolumeMounts: []corev1.VolumeMount{{Name: "sidebench-log", MountPath: "/sidebench"}},
	}
}

func agentPod(name string, init []corev1.Container, main ...corev1.Container) *corev1.Pod {
	no := false
	grace := int64(5)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken:  &no,
			TerminationGracePeriodSeconds: &grace,
			InitContainers:                init,
			Containers:                    main,
			Volumes:                       []corev1.Volume{{Name: "sidebench-log", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
}

// sidecarAgentPod: a native sidecar "proxy" with an exec startup probe
// through the agent, and a main container "app"; both run until stopped.
func sidecarAgentPod(name string) *corev1.Pod {
	always := corev1.ContainerRestartPolicyAlways
	proxy := agentContainer("proxy", `{"startLatency":"0s","startupAfter":"200ms","runTime":"never"}`)
	proxy.RestartPolicy = &always
	proxy.StartupProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/sidebench-agent", "probe", "startup"}}},
		PeriodSeconds: 1, FailureThreshold: 30,
	}
	return agentPod(name, []corev1.Container{proxy}, agentContainer("app", `{"startLatency":"0s","runTime":"never"}`))
}

// allRunning: every sidecar and main container of p is running.
func allRunning(p *corev1.Pod) bool {
	n := 0
	for _, s := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
		if s.State.Running == nil {
			return false
		}
		n++
	}
	return p.Status.Phase == corev1.PodRunning && n == len(p.Spec.InitContainers)+len(p.Spec.Containers)
}

// createAndWait creates pod and polls until cond holds.
func createAndWait(ctx context.Context, t *testing.T, cs kubernetes.Interface, pod *corev1.Pod, within time.Duration, cond func(*corev1.Pod) bool) (*corev1.Pod, time.Duration) {
	t.Helper()
	t0 := time.Now()
	if _, err := cs.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return waitPod(ctx, t, cs, pod.Namespace, pod.Name, t0, within, cond)
}

func waitPod(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string, t0 time.Time, within time.Duration, cond func(*corev1.Pod) bool) (*corev1.Pod, time.Duration) {
	t.Helper()
	var last *corev1.Pod
	for time.Since(t0) < within {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			last = p
			if cond(p) {
				return p, time.Since(t0)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	b, _ := json.MarshalIndent(last.Status, "", "  ")
	t.Fatalf("pod %s/%s: condition not reached after %s; status:\n%s", ns, name, within, b)
	return nil, 0
}

// deletePod deletes pod default/name and waits until the object is gone.
func deletePod(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string) time.Duration {
	t.Helper()
	t0 := time.Now()
	if err := cs.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for time.Since(t0) < time.Minute {
		if _, err := cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return time.Since(t0)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("pod %s not gone 1m after delete", name)
	return 0
}

// agentLine is the part of an agent log line the test reads.
type agentLine struct {
	Container string `json:"container"`
	Event     string `json:"event"`
	Attempt   uint32 `json:"attempt"`
}

// agentLines parses the JSON lines of b, failing on any other line.
func agentLines(t *testing.T, b []byte) []agentLine {
	t.Helper()
	var out []agentLine
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var l agentLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil || l.Event == "" {
			t.Errorf("not an agent line: %q (%v)", sc.Text(), err)
			continue
		}
		out = append(out, l)
	}
	return out
}

func countEvent(lines []agentLine, container, event string) int {
	n := 0
	for _, l := range lines {
		if l.Container == container && l.Event == event {
			n++
		}
	}
	return n
}

// execIn runs command in a container through the apiserver, first over
// WebSocket (kubectl's default since 1.30), else over SPDY; it says which
// protocol worked.
func execIn(ctx context.Context, cl *Cluster, cs kubernetes.Interface, ns, pod, container string, command ...string) (stdout, stderr []byte, proto string, err error) {
	req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: command, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	run := func(e remotecommand.Executor) ([]byte, []byte, error) {
		var o, se bytes.Buffer
		err := e.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &o, Stderr: &se})
		return o.Bytes(), se.Bytes(), err
	}
	ws, err := remotecommand.NewWebSocketExecutor(cl.RESTConfig(), "GET", req.URL().String())
	if err != nil {
		return nil, nil, "", err
	}
	o, se, werr := run(ws)
	if werr == nil {
		return o, se, "websocket", nil
	}
	if !httpstream.IsUpgradeFailure(werr) && !errors.Is(werr, context.DeadlineExceeded) {
		return o, se, "websocket", werr
	}
	spdy, err := remotecommand.NewSPDYExecutor(cl.RESTConfig(), "POST", req.URL())
	if err != nil {
		return nil, nil, "", err
	}
	o, se, err = run(spdy)
	return o, se, "spdy (websocket failed: " + werr.Error() + ")", err
}

// rssKB is VmRSS of pid in KiB (0 if gone).
func rssKB(pid int) int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			f := strings.Fields(l)
			if len(f) >= 2 {
				v, _ := strconv.Atoi(f[1])
				return v
			}
		}
	}
	return 0
}

// podMemory is the memory of the node's only pod: the RSS of its shim
// and of every process in its containers' cgroups, and the memory
// cgroups' usage (which also counts page cache).
func podMemory(st State, r ContainerdNode) (shimKB, procsKB int, cgroupBytes int64, nprocs int) {
	for _, p := range shimsOf(map[string]bool{r.Socket: true}) {
		shimKB += rssKB(p.PID)
	}
	ids := containerIDs(r)
	for _, parent := range st.CgroupParents {
		if filepath.Base(filepath.Dir(parent)) != "memory" {
			continue
		}
		for _, d := range containerCgroups([]string{parent}, ids) {
			for _, pid := range cgroupPIDs(d) {
				procsKB += rssKB(pid)
				nprocs++
			}
			b, _ := os.ReadFile(filepath.Join(d, "memory.usage_in_bytes"))
			v, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
			cgroupBytes += v
		}
	}
	return
}

func nodeReady(ctx context.Context, cs kubernetes.Interface, name string) bool {
	n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// skipWithoutContainerd skips unless root with the containerd tier's
// host packages.
func skipWithoutContainerd(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (the kubelet, containerd)")
	}
	if err := checkContainerdDeps(); err != nil {
		t.Skip(err)
	}
}

// TestE2EContainerd runs real containers of the agent image under a real
// kubelet on containerd: a sidecar pod with logs and exec through the
// apiserver, an OOM kill by a real memory limit, a containerd crash and
// restart under running containers, and a teardown that leaves nothing.
func TestE2EContainerd(t *testing.T) {
	skipWithoutContainerd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	archive := buildAgentImage(t, t.TempDir())
	before := snapshotHost(t)
	t0 := time.Now()
	cl, err := Up(ctx, Config{Nodes: 1, Runtime: RuntimeContainerd, ImageArchives: []string{archive}, Scheduler: true, Log: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	downed := false
	defer func() {
		if !downed {
			if err := cl.Down(); err != nil {
				t.Error(err)
			}
		}
	}()
	t.Logf("timings: build/reuse %s, etcd %s, apiserver %s, containerd ready + images %s, node Ready %s (total %s)",
		cl.Timings.Build.Round(time.Millisecond), cl.Timings.EtcdReady.Round(time.Millisecond), cl.Timings.APIServerReady.Round(time.Millisecond),
		cl.Timings.RuntimesReady.Round(time.Millisecond), cl.Timings.NodesReady.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))
	if cl.Runtime() != RuntimeContainerd || cl.Nodes[0].RuntimeSocket == "" || cl.Nodes[0].CRISocket != cl.Nodes[0].RuntimeSocket || cl.Nodes[0].Runtime != nil {
		t.Fatalf("runtime %q, node %+v", cl.Runtime(), cl.Nodes[0])
	}
	cs, err := cl.Client()
	if err != nil {
		t.Fatal(err)
	}
	node, err := cs.CoreV1().Nodes().Get(ctx, cl.Nodes[0].Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("node %s: runtime %s, kubelet %s, addresses %v", node.Name, node.Status.NodeInfo.ContainerRuntimeVersion, node.Status.NodeInfo.KubeletVersion, node.Status.Addresses)
	if !strings.HasPrefix(node.Status.NodeInfo.ContainerRuntimeVersion, "containerd://") {
		t.Errorf("container runtime %q", node.Status.NodeInfo.ContainerRuntimeVersion)
	}
	st := *cl.state
	r := st.Containerd[0]

	// A one-container pod with no probe: the runtime's own start latency.
	plain, running := createAndWait(ctx, t, cs, agentPod("plain", nil, agentContainer("app", `{"startLatency":"0s","runTime":"never"}`)), 2*time.Minute, allRunning)
	t.Logf("one-container pod Running %s after create (pod IP %s)", running.Round(time.Millisecond), plain.Status.PodIP)
	t.Logf("one-container pod deleted (object gone) %s after delete", deletePod(ctx, t, cs, plain.Name).Round(time.Millisecond))

	// (a) A sidecar pod reaches Running; logs and exec work through the
	// apiserver.
	pod, running := createAndWait(ctx, t, cs, sidecarAgentPod("agents"), 2*time.Minute, allRunning)
	t.Logf("(a) sidecar pod Running (both containers running) %s after create; pod IP %s", running.Round(time.Millisecond), pod.Status.PodIP)
	if !strings.HasPrefix(pod.Status.PodIP, "10.244.100.") {
		t.Errorf("pod IP %q, want one of the node's bridge subnet %s", pod.Status.PodIP, r.Subnet)
	}
	var logs []byte
	for t1 := time.Now(); time.Since(t1) < 20*time.Second; time.Sleep(200 * time.Millisecond) {
		logs, err = cs.CoreV1().Pods("default").GetLogs(pod.Name, &corev1.PodLogOptions{Container: "app"}).DoRaw(ctx)
		if err == nil && bytes.Contains(logs, []byte(`"event":"start"`)) {
			break
		}
	}
	if err != nil {
		t.Fatalf("GetLogs app: %v", err)
	}
	ll := agentLines(t, logs)
	if countEvent(ll, "app", "exec") != 1 || countEvent(ll, "app", "start") != 1 {
		t.Errorf("container log of app: %d lines, want exec and start of app:\n%s", len(ll), logs)
	}
	t.Logf("(a) GetLogs app: %d agent lines", len(ll))
	out, serr, proto, err := execIn(ctx, cl, cs, "default", pod.Name, "app", "/sidebench-agent", "cat")
	if err != nil {
		t.Fatalf("exec /sidebench-agent cat: %v (stderr %s)", err, serr)
	}
	shared := agentLines(t, out)
	t.Logf("(a) exec /sidebench-agent cat over %s: %d lines, stderr %q", proto, len(shared), serr)
	for _, c := range []string{"proxy", "app"} {
		if countEvent(shared, c, "exec") != 1 {
			t.Errorf("shared log has %d exec lines of %s, want 1:\n%s", countEvent(shared, c, "exec"), c, out)
		}
	}
	if countEvent(shared, "proxy", "started") != 1 {
		t.Errorf("no started line of the sidecar (startup probe file):\n%s", out)
	}
	shimKB, procsKB, cgBytes, nprocs := podMemory(st, r)
	t.Logf("(a) per-pod memory: shim RSS %d KiB, %d container processes (pause + 2 agents) RSS %d KiB, memory cgroups %.1f MiB",
		shimKB, nprocs, procsKB, float64(cgBytes)/(1<<20))
	for _, name := range []string{"containerd-" + r.Node, "kubelet-" + r.Node} {
		if p, ok := cl.proc(name); ok {
			t.Logf("(a) %s RSS %d KiB", name, rssKB(p.PID))
		}
	}

	// (b) A real memory limit OOM-kills a growing agent.
	hog := agentContainer("hog", `{"startLatency":"0s","memoryGrowth":16777216,"memoryLimit":33554432}`)
	hog.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Mi")}
	oomPod := agentPod("oom", nil, hog)
	oomPod.Spec.RestartPolicy = corev1.RestartPolicyNever
	isOOM := func(s *corev1.ContainerStateTerminated) bool {
		return s != nil && s.Reason == "OOMKilled" && s.ExitCode == 137
	}
	oomed, d := createAndWait(ctx, t, cs, oomPod, 2*time.Minute, func(p *corev1.Pod) bool {
		for _, s := range p.Status.ContainerStatuses {
			if isOOM(s.State.Terminated) || isOOM(s.LastTerminationState.Terminated) {
				return true
			}
		}
		return false
	})
	term := oomed.Status.ContainerStatuses[0].State.Terminated
	t.Logf("(b) hog: terminated %s exit %d %s after create (ran %s), pod phase %s", term.Reason, term.ExitCode, d.Round(time.Millisecond),
		term.FinishedAt.Sub(term.StartedAt.Time), oomed.Status.Phase)
	deletePod(ctx, t, cs, "oom")

	// (c) containerd SIGKILLed and started again: the containers keep
	// running and are adopted.
	beforeKill, err := cs.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	type cstat struct {
		id       string
		restarts int32
	}
	statuses := func(p *corev1.Pod) map[string]cstat {
		m := map[string]cstat{}
		for _, s := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
			m[s.Name] = cstat{s.ContainerID, s.RestartCount}
		}
		return m
	}
	want := statuses(beforeKill)
	tk := time.Now()
	if err := cl.KillRuntime(0); err != nil {
		t.Fatal(err)
	}
	if shims := shimsOf(map[string]bool{r.Socket: true}); len(shims) == 0 {
		t.Error("no shim left after containerd was killed")
	}
	time.Sleep(2 * time.Second)
	if err := cl.StartRuntime(ctx, 0); err != nil {
		t.Fatal(err)
	}
	t.Logf("(c) containerd killed, down 2 s, CRI ready again %s after the kill", time.Since(tk).Round(time.Millisecond))
	if err := cl.StartRuntime(ctx, 0); err == nil {
		t.Error("StartRuntime of a running containerd succeeded")
	}
	// Give the kubelet several relists (1 s each) to notice anything.
	time.Sleep(8 * time.Second)
	for t1 := time.Now(); !nodeReady(ctx, cs, node.Name); time.Sleep(200 * time.Millisecond) {
		if time.Since(t1) > time.Minute {
			t.Fatal("node not Ready within 1m of the containerd restart")
		}
	}
	after, err := cs.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := statuses(after); !mapsEqualStat(got, want) || !allRunning(after) {
		t.Errorf("after the containerd restart: %v running=%v, want %v", got, allRunning(after), want)
	}
	out, _, _, err = execIn(ctx, cl, cs, "default", pod.Name, "proxy", "/sidebench-agent", "cat")
	if err != nil {
		t.Fatalf("exec after the containerd restart: %v", err)
	}
	shared = agentLines(t, out)
	for _, c := range []string{"proxy", "app"} {
		if n := countEvent(shared, c, "exec"); n != 1 {
			t.Errorf("after the containerd restart %s has %d exec lines, want 1 (not restarted)", c, n)
		}
	}
	t.Logf("(c) node Ready, containers %v unchanged, exec works", want)

	// The kubelet crash of the fault fallback: the new kubelet adopts the
	// running containers.
	tk = time.Now()
	if err := cl.KillKubelet(0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if err := cl.StartKubelet(ctx, 0); err != nil {
		t.Fatal(err)
	}
	t.Logf("(c) kubelet killed, down 1 s, healthy again %s after the kill", time.Since(tk).Round(time.Millisecond))
	time.Sleep(5 * time.Second)
	after, err = cs.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := statuses(after); !mapsEqualStat(got, want) || !allRunning(after) || !nodeReady(ctx, cs, node.Name) {
		t.Errorf("after the kubelet restart: %v running=%v node Ready=%v, want %v", got, allRunning(after), nodeReady(ctx, cs, node.Name), want)
	}

	// (d) Down leaves nothing.
	ids := map[string][]string{r.Node: containerIDs(r)}
	t.Logf("(d) %d sandbox/container IDs on the node before Down", len(ids[r.Node]))
	td := time.Now()
	if err := cl.Down(); err != nil {
		t.Fatal(err)
	}
	downed = true
	t.Logf("(d) Down took %s", time.Since(td).Round(time.Millisecond))
	checkHostClean(t, before, st, ids)
	if _, err := os.Stat(st.RunDir); !os.IsNotExist(err) {
		t.Errorf("run dir %s still exists (%v)", st.RunDir, err)
	}
}

func mapsEqualStat[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestE2EContainerdDownDir SIGKILLs the process that brought up a
// containerd cluster with a running pod: its containerd dies with it
// (parent-death signal) but the shims and containers do not; DownDir
// must clean everything from the state file.
func TestE2EContainerdDownDir(t *testing.T) {
	if dir := os.Getenv("SIDEBENCH_E2E_CTRD_RUNDIR"); dir != "" {
		cl, err := Up(context.Background(), Config{Nodes: 1, RunDir: dir, Runtime: RuntimeContainerd, ImageArchives: []string{os.Getenv("SIDEBENCH_E2E_CTRD_IMAGE")}})
		if err != nil {
			fmt.Println("ERROR", err)
			os.Exit(1)
		}
		cs, err := cl.Client()
		if err == nil {
			pod := sidecarAgentPod("orphan")
			pod.Spec.NodeName = cl.Nodes[0].Name
			_, err = cs.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{})
		}
		if err != nil {
			fmt.Println("ERROR", err)
			os.Exit(1)
		}
		for t0 := time.Now(); time.Since(t0) < 2*time.Minute; time.Sleep(100 * time.Millisecond) {
			if p, err := cs.CoreV1().Pods("default").Get(context.Background(), "orphan", metav1.GetOptions{}); err == nil && allRunning(p) {
				fmt.Println("READY", cl.RunDir)
				select {}
			}
		}
		fmt.Println("ERROR pod not running after 2m")
		os.Exit(1)
	}
	skipWithoutContainerd(t)
	archive := buildAgentImage(t, t.TempDir())
	dir, err := os.MkdirTemp("", "sbc")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	before := snapshotHost(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestE2EContainerdDownDir$", "-test.v")
	cmd.Env = append(os.Environ(), "SIDEBENCH_E2E_CTRD_RUNDIR="+dir, "SIDEBENCH_E2E_CTRD_IMAGE="+archive)
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
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			_ = DownDir(dir, testWriter{t})
			t.Fatal(sc.Text())
		}
	}
	if !ready {
		_ = DownDir(dir, testWriter{t})
		t.Fatal("child did not become ready")
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	time.Sleep(500 * time.Millisecond)
	st, err := LoadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := st.Containerd[0]
	shims := shimsOf(map[string]bool{r.Socket: true})
	ids := map[string][]string{r.Node: containerIDs(r)}
	cgs := containerCgroups(st.CgroupParents, ids[r.Node])
	t.Logf("after SIGKILL of the owner: %d shim(s) alive, %d IDs, %d container cgroups, processes:\n%s", len(shims), len(ids[r.Node]), len(cgs), strings.Join(ourProcesses(dir), "\n"))
	if len(shims) == 0 || len(cgs) == 0 {
		t.Error("expected the pod's shim and containers to survive their owner")
	}
	t0 := time.Now()
	if err := DownDir(dir, testWriter{t}); err != nil {
		t.Fatal(err)
	}
	t.Logf("DownDir took %s", time.Since(t0).Round(time.Millisecond))
	checkHostClean(t, before, *st, ids)
}

// TestE2EContainerdMissingSandboxImage: an archive without the sandbox
// image fails Up with a message naming it, after containerd started; Up
// must tear down what it started.
func TestE2EContainerdMissingSandboxImage(t *testing.T) {
	skipWithoutContainerd(t)
	dir := t.TempDir()
	archive := filepath.Join(dir, "agent-only.tar")
	cmd := exec.Command("go", "run", "./hack/image", "-o", archive, "-name", agentImage)
	cmd.Dir = filepath.Join("..", "..")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/image: %v\n%s", err, b)
	}
	runDir, err := os.MkdirTemp("", "sbc")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(runDir)
	before := snapshotHost(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_, err = Up(ctx, Config{Nodes: 1, RunDir: runDir, Runtime: RuntimeContainerd, ImageArchives: []string{archive}, Log: testWriter{t}})
	if err == nil || !strings.Contains(err.Error(), "sandbox image "+pauseImage+" is not in any of the image archives") {
		t.Fatalf("Up: %v", err)
	}
	t.Logf("Up failed as expected: %v", err)
	st, err := LoadState(runDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range st.Procs {
		if p.Alive() {
			t.Errorf("%s (pid %d) alive after the failed Up", p.Name, p.PID)
		}
	}
	checkHostClean(t, before, *st, map[string][]string{})
}
