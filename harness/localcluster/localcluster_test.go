package localcluster

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestKubeToolsGoMod(t *testing.T) {
	in := []byte(`module k8s.io/kubernetes

go 1.26.0

require (
	k8s.io/api v0.0.0
)

replace (
	k8s.io/api => ./staging/src/k8s.io/api
	k8s.io/cri-api => ./staging/src/k8s.io/cri-api
	github.com/foo/bar => github.com/foo/bar v1.2.3
)
`)
	got, n, err := KubeToolsGoMod("v1.37.2", in)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("n = %d, want 2", n)
	}
	for _, want := range []string{
		"require k8s.io/kubernetes v1.37.2",
		"\tk8s.io/api => k8s.io/api v0.37.2\n",
		"\tk8s.io/cri-api => k8s.io/cri-api v0.37.2\n",
		"godebug default=go1.26",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("go.mod lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "foo/bar") {
		t.Errorf("non-staging replace copied:\n%s", got)
	}
	if _, _, err := KubeToolsGoMod("1.37", in); err == nil {
		t.Error("bad version accepted")
	}
	if _, _, err := KubeToolsGoMod("v1.37.2", []byte("module x\n")); err == nil {
		t.Error("go.mod without staging lines accepted")
	}
}

func TestBuildSkipsExisting(t *testing.T) {
	dir := t.TempDir()
	bins := binariesIn(filepath.Join(dir, "bin"))
	if err := os.MkdirAll(bins.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{bins.Etcd, bins.APIServer, bins.Kubelet, bins.Scheduler} {
		if err := os.WriteFile(p, []byte("#!/bin/true\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var log bytes.Buffer
	got, err := Build(context.Background(), "v1.37.2", dir, &log)
	if err != nil {
		t.Fatal(err)
	}
	if got != bins || log.Len() != 0 {
		t.Errorf("Build = %+v, log %q; want %+v and no output", got, log.String(), bins)
	}
}

func TestNodeName(t *testing.T) {
	for i, want := range map[int]string{0: "127.0.0.2", 1: "127.0.0.3", 253: "127.0.0.255", 254: "127.0.1.0"} {
		if got := NodeName(i); got != want {
			t.Errorf("NodeName(%d) = %s, want %s", i, got, want)
		}
	}
}

func TestStateRoundTripAndProc(t *testing.T) {
	dir := t.TempDir()
	ticks, err := procStartTicks(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	s := &State{RunDir: dir, ID: "abc123", HostHeld: true, Procs: []Proc{{Name: "self", PID: os.Getpid(), StartTicks: ticks}}}
	if err := s.save(); err != nil {
		t.Fatal(err)
	}
	got, err := LoadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Procs) != 1 || !got.Procs[0].Alive() || got.ID != "abc123" || !got.HostHeld {
		t.Errorf("loaded %+v", got)
	}
	stale := Proc{Name: "recycled", PID: os.Getpid(), StartTicks: ticks + 1}
	if stale.Alive() {
		t.Error("a PID with another start time counts as alive")
	}
}

func TestUnescapeMount(t *testing.T) {
	if got := unescapeMount(`/tmp/a\040b`); got != "/tmp/a b" {
		t.Errorf("got %q", got)
	}
}

func TestKubeletConfig(t *testing.T) {
	n := &Node{KubeletPort: 1, HealthzPort: 2, CRISocket: "/r/cri.sock"}
	c := kubeletConfig(n, "/r/logs", 250, "")
	for _, want := range []string{"failCgroupV1: false", "cgroupsPerQOS: false", "containerRuntimeEndpoint: unix:///r/cri.sock", "address: 127.0.0.1", "healthzBindAddress: 127.0.0.1",
		"readOnlyPort: 0", "anonymous: {enabled: false}", "makeIPTablesUtilChains: false"} {
		if !strings.Contains(c, want) {
			t.Errorf("kubelet config lacks %q", want)
		}
	}
}

func TestDownDirKillsRecordedProcesses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// A process that ignores SIGTERM must be SIGKILLed; a stale record
	// (same PID, other start time) must be left alone.
	cmd := exec.Command("sh", "-c", "trap '' TERM; echo trapped; exec sleep 60")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The trap is installed once the shell says so (order, not a sleep);
	// sleep inherits the ignored SIGTERM through exec.
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "trapped\n" {
		t.Fatalf("shell said %q, %v", line, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	ticks, err := procStartTicks(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	selfTicks, _ := procStartTicks(os.Getpid())
	s := &State{RunDir: dir, RemoveRunDir: true, Procs: []Proc{
		{Name: "stale", PID: os.Getpid(), StartTicks: selfTicks + 1},
		{Name: "stubborn", PID: cmd.Process.Pid, StartTicks: ticks},
	}}
	if err := s.save(); err != nil {
		t.Fatal(err)
	}
	old := stopGrace
	stopGrace = 200 * time.Millisecond
	defer func() { stopGrace = old }()
	var log bytes.Buffer
	if err := DownDir(dir, &log); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second): // a hang guard: DownDir waits for the kill itself
		t.Fatal("recorded process still running after DownDir")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("run dir not removed: %v", err)
	}
	if !strings.Contains(log.String(), "stopped stubborn") || strings.Contains(log.String(), "stale") {
		t.Errorf("log: %s", log.String())
	}
}

// TestPrivateHostPaths runs a command through the kubelet's wrapper: what
// it writes to a "host path" lands in its node's own directory, the host
// directory stays an empty mount point, and no mount is left on the host.
func TestPrivateHostPaths(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (mount namespaces)")
	}
	host := t.TempDir()
	paths := []string{filepath.Join(host, "var/lib/kubelet"), filepath.Join(host, "run/mount")}
	nodes := []string{filepath.Join(t.TempDir(), "n1"), filepath.Join(t.TempDir(), "n2")}
	for i, nd := range nodes {
		cmd, err := privateHostPaths(nd, paths, []string{"/bin/sh", "-c", `mkdir -p "$0/device-plugins" && echo "$1" > "$0/device-plugins/kubelet.sock"`, paths[0], strconv.Itoa(i)})
		if err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", cmd, err, out)
		}
	}
	for i, nd := range nodes {
		own := filepath.Join(nd, "host", strings.ReplaceAll(strings.TrimPrefix(paths[0], "/"), "/", "_"), "device-plugins", "kubelet.sock")
		if b, err := os.ReadFile(own); err != nil || string(b) != strconv.Itoa(i)+"\n" {
			t.Errorf("node %d's socket file: %q %v", i, b, err)
		}
	}
	for _, p := range paths {
		if ents, err := os.ReadDir(p); err != nil || len(ents) != 0 {
			t.Errorf("host mount point %s: %v %v, want it empty", p, ents, err)
		}
	}
	if m, _ := mountsUnder([]string{host}); len(m) != 0 {
		t.Errorf("mounts left on the host: %v", m)
	}
}

func TestServerPortsBelowEphemeralRange(t *testing.T) {
	lo := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		lo, _ = strconv.Atoi(strings.Fields(string(b))[0])
	}
	ports, err := serverPorts(200)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p >= lo || p < lo/2 || seen[p] {
			t.Errorf("port %d: want distinct ports in [%d, %d)", p, lo/2, lo)
		}
		seen[p] = true
	}
}

func TestCheckFits(t *testing.T) {
	avail := int64(22 << 30) // this 24 GiB machine, idle
	if err := checkFits(80, RuntimeSidebench, avail); err != nil {
		t.Errorf("80 kubelets in 22 GiB: %v", err)
	}
	err := checkFits(200, RuntimeSidebench, avail)
	if err == nil || !strings.Contains(err.Error(), "200 kubelets need about 25.8 GiB") || !strings.Contains(err.Error(), "at most 170 fit") {
		t.Errorf("200 kubelets in 22 GiB: %v", err)
	}
	if err := checkFits(3, RuntimeContainerd, 1<<30); err == nil || !strings.Contains(err.Error(), "192 MiB each") {
		t.Errorf("3 containerd nodes in 1 GiB: %v", err)
	}
	if _, err := memAvailable(); err != nil {
		t.Error(err)
	}
}

// The sidebench runtime's kubelets run with cgroupsPerQOS under a root
// of their own (cgroups.go: without it kubelet v1.37.2 dies at the first
// in-place resize it actuates); without a root it stays off.
func TestKubeletConfigCgroupRoot(t *testing.T) {
	n := &Node{KubeletPort: 1, HealthzPort: 2, CRISocket: "/r/cri.sock"}
	c := kubeletConfig(n, "/r/logs", 250, kubeletCgroupRoot("abc123", "127.0.0.2"))
	if !strings.Contains(c, "cgroupsPerQOS: true\ncgroupRoot: /sidebench-abc123-127.0.0.2\n") || strings.Contains(c, "cgroupsPerQOS: false") {
		t.Errorf("kubelet config with a cgroup root:\n%s", c)
	}
	if c := kubeletConfig(n, "/r/logs", 250, ""); !strings.Contains(c, "cgroupsPerQOS: false\n") || strings.Contains(c, "cgroupRoot") {
		t.Errorf("kubelet config without a cgroup root:\n%s", c)
	}
}

// Teardown removes the kubelets' cgroup roots with what the kubelets
// created below them, deepest first (plain directories stand in for the
// cgroup filesystem, where rmdir of a non-empty cgroup fails the same
// way).
func TestDownDirRemovesKubeletCgroups(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	cg := t.TempDir()
	var roots []string
	for _, h := range []string{"cpu", "memory"} {
		root := filepath.Join(cg, h, "sidebench-abc123-127.0.0.2")
		if err := os.MkdirAll(filepath.Join(root, "kubepods", "burstable", "pod1234"), 0o755); err != nil {
			t.Fatal(err)
		}
		roots = append(roots, root)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	st := &State{RunDir: dir, KubeletCgroups: roots}
	if err := st.save(); err != nil {
		t.Fatal(err)
	}
	if err := DownDir(dir, nil); err != nil {
		t.Fatal(err)
	}
	for _, r := range roots {
		if _, err := os.Stat(r); !os.IsNotExist(err) {
			t.Errorf("%s left behind (%v)", r, err)
		}
		if _, err := os.Stat(filepath.Dir(r)); err != nil {
			t.Errorf("the hierarchy %s itself went: %v", filepath.Dir(r), err)
		}
	}
}

// On a cgroup v2 host the kubelet needs cpu, cpuset, memory, hugetlb and
// pids (those the kernel has) delegated to its root; sidebench does not
// change the host's top-level subtree_control, so it says what is missing.
func TestMissingV2Controllers(t *testing.T) {
	d := t.TempDir()
	write := func(f, s string) {
		if err := os.WriteFile(filepath.Join(d, f), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("cgroup.controllers", "cpuset cpu io memory pids rdma misc\n")
	write("cgroup.subtree_control", "cpu io memory pids\n")
	if got := missingV2Controllers(d); !slices.Equal(got, []string{"cpuset"}) {
		t.Errorf("missing %v, want [cpuset]", got)
	}
	if got := missingV2Controllers(filepath.Join(d, "v1")); got != nil {
		t.Errorf("a v1 hierarchy reported missing %v", got)
	}
}

// The end of a kubelet log after the resize panic of cgroupsPerQOS: false
// (cgroups.go; captured from kubelet v1.37.2 on a fault-resize trial).
func TestKubeletPanic(t *testing.T) {
	got := KubeletPanic("testdata/kubelet-resize-panic.log")
	want := "runtime error: invalid memory address or nil pointer dereference at pkg/kubelet/kuberuntime/kuberuntime_manager.go:1138"
	if got != want {
		t.Errorf("KubeletPanic = %q, want %q", got, want)
	}
	if got := KubeletPanic("localcluster_test.go"); got != "" {
		t.Errorf("a file without a panic: %q", got)
	}
	if got := KubeletPanic("testdata/none"); got != "" {
		t.Errorf("a missing log: %q", got)
	}
}
