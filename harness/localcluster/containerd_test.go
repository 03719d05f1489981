package localcluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// ourProcesses lists live processes whose command line mentions dir:
// everything a cluster runs has its run dir in its arguments (shims via
// -address).
func ourProcesses(dir string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	self := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || !bytes.Contains(b, []byte(dir)) {
			continue
		}
		if _, err := procStartTicks(pid); err != nil {
			continue // zombie
		}
		out = append(out, fmt.Sprintf("%d %s", pid, strings.ReplaceAll(string(bytes.TrimRight(b, "\x00")), "\x00", " ")))
	}
	return out
}

func TestContainerdConfig(t *testing.T) {
	r := containerdNode("/tmp/sb-run", "a1b2c3", 2)
	if r.Node != "127.0.0.4" || r.Bridge != "sba1b2c3-2" || r.Network != "sidebench-a1b2c3-2" || r.Subnet != "10.244.102.0/24" {
		t.Errorf("node %+v", r)
	}
	if len(r.Bridge) > 15 || len(fmt.Sprintf("sb%s-%d", "a1b2c3", maxContainerdNodes-1)) > 15 {
		t.Errorf("bridge name %q longer than a link name may be", r.Bridge)
	}
	c := containerdConfig(r, "example.local/p:v1")
	for _, want := range []string{
		`root = "/tmp/sb-run/nodes/127.0.0.4/containerd/root"`,
		`state = "/tmp/sb-run/nodes/127.0.0.4/containerd/state"`,
		`address = "/tmp/sb-run/nodes/127.0.0.4/containerd/containerd.sock"`,
		`address = "/tmp/sb-run/nodes/127.0.0.4/containerd/containerd.sock.ttrpc"`,
		`sandbox_image = "example.local/p:v1"`,
		`stream_server_address = "127.0.0.1"`,
		`stream_server_port = "0"`,
		`restrict_oom_score_adj = true`,
		`netns_mounts_under_state_dir = true`,
		`SystemdCgroup = false`,
		`Root = "/tmp/sb-run/nodes/127.0.0.4/containerd/runc"`,
		`snapshotter = "overlayfs"`,
		`runtime_type = "io.containerd.runc.v2"`,
		`bin_dir = "/usr/lib/cni"`,
		`conf_dir = "/tmp/sb-run/nodes/127.0.0.4/containerd/cni-conf"`,
		`path = "/tmp/sb-run/nodes/127.0.0.4/containerd/opt"`,
		`tcp_address = ""`,
	} {
		if !strings.Contains(c, want) {
			t.Errorf("containerd config lacks %s:\n%s", want, c)
		}
	}
	b, err := cniConflist(r)
	if err != nil {
		t.Fatal(err)
	}
	var conf struct {
		Name    string `json:"name"`
		Plugins []struct {
			Type      string `json:"type"`
			Bridge    string `json:"bridge"`
			IsGateway *bool  `json:"isGateway"`
			IPMasq    *bool  `json:"ipMasq"`
			IPAM      struct {
				Type    string                `json:"type"`
				Ranges  [][]map[string]string `json:"ranges"`
				DataDir string                `json:"dataDir"`
			} `json:"ipam"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(b, &conf); err != nil {
		t.Fatal(err)
	}
	br := conf.Plugins[0]
	if conf.Name != r.Network || len(conf.Plugins) != 2 || br.Type != "bridge" || br.Bridge != r.Bridge ||
		br.IsGateway == nil || *br.IsGateway || br.IPMasq == nil || *br.IPMasq || conf.Plugins[1].Type != "loopback" {
		t.Errorf("conflist:\n%s", b)
	}
	if br.IPAM.Type != "host-local" || br.IPAM.Ranges[0][0]["subnet"] != r.Subnet || !strings.HasPrefix(br.IPAM.DataDir, r.Dir) {
		t.Errorf("ipam: %+v", br.IPAM)
	}
}

func TestKubeletConfigContainerd(t *testing.T) {
	n := &Node{Name: "127.0.0.2", KubeletPort: 1, HealthzPort: 2, CRISocket: "/r/containerd.sock", RootDir: "/r/root"}
	c := kubeletConfigContainerd(n, "/r/logs", 250, "/r/pki/ca.crt")
	for _, want := range []string{
		"address: 127.0.0.2\n", "healthzBindAddress: 127.0.0.1", "anonymous: {enabled: false}",
		"  x509: {clientCAFile: /r/pki/ca.crt}\n", "containerRuntimeEndpoint: unix:///r/containerd.sock",
		"imageGCHighThresholdPercent: 100", "failCgroupV1: false",
		// Disk pressure on the shared host evicted every trial pod.
		`nodefs.available: "1Gi"`, `imagefs.available: "1Gi"`,
	} {
		if !strings.Contains(c, want) {
			t.Errorf("kubelet config lacks %q:\n%s", want, c)
		}
	}
	// The sidebench runtime's configuration is unchanged: no client CA,
	// bound to 127.0.0.1.
	f := kubeletConfig(n, "/r/logs", 250, "")
	if strings.Contains(f, "x509") || !strings.Contains(f, "address: 127.0.0.1\n") || strings.Contains(f, "imageGC") {
		t.Errorf("sidebench runtime's kubelet config changed:\n%s", f)
	}
}

func TestCheckRuntimeConfig(t *testing.T) {
	if err := checkRuntimeConfig(&Config{Runtime: "docker"}); err == nil || !strings.Contains(err.Error(), `unknown runtime "docker"`) {
		t.Errorf("unknown runtime: %v", err)
	}
	if err := checkRuntimeConfig(&Config{ImageArchives: []string{"x.tar"}}); err == nil {
		t.Error("image archives accepted with the sidebench runtime")
	}
	for _, rt := range []string{"", RuntimeSidebench} {
		if err := checkRuntimeConfig(&Config{Runtime: rt}); err != nil {
			t.Errorf("runtime %q: %v", rt, err)
		}
	}
	if checkContainerdDeps() != nil {
		t.Logf("containerd tier not installed here: %v", checkContainerdDeps())
		return
	}
	cfg := &Config{Runtime: RuntimeContainerd, ImageArchives: []string{filepath.Join(t.TempDir(), "none.tar")}}
	if err := checkRuntimeConfig(cfg); err == nil || !strings.Contains(err.Error(), "none.tar") {
		t.Errorf("missing archive: %v", err)
	}
	a := filepath.Join(t.TempDir(), "img.tar")
	if err := os.WriteFile(a, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg = &Config{Runtime: RuntimeContainerd, ImageArchives: []string{a}}
	if err := checkRuntimeConfig(cfg); err != nil || cfg.SandboxImage != DefaultSandboxImage {
		t.Errorf("err %v, sandbox image %q", err, cfg.SandboxImage)
	}
}

func TestShimAddress(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"/usr/bin/containerd-shim-runc-v2", "-namespace", "k8s.io", "-id", "abc", "-address", "/r/c.sock"}, "/r/c.sock"},
		{[]string{"containerd-shim-runc-v2", "-address=/r/c.sock"}, "/r/c.sock"},
		{[]string{"/usr/bin/containerd", "-address", "/r/c.sock"}, ""},
		{[]string{"/usr/bin/containerd-shim-runc-v2", "-id", "abc"}, ""},
		{nil, ""},
	} {
		if got := shimAddress(tc.args); got != tc.want {
			t.Errorf("shimAddress(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
	// containerd 1.6's runtime/v2/shim.SocketAddress for a known input.
	if got := shimSocket("/run/containerd/containerd.sock", "abc"); !strings.HasPrefix(got, "/run/containerd/s/") || len(filepath.Base(got)) != 64 {
		t.Errorf("shim socket %q", got)
	}
}

func TestContainerIDs(t *testing.T) {
	r := containerdNode(t.TempDir(), "000000", 0)
	a, b := strings.Repeat("a", 64), strings.Repeat("b", 64)
	for _, d := range []string{
		filepath.Join(r.state(), "io.containerd.runtime.v2.task", "k8s.io", a),
		filepath.Join(r.runcRoot(), "k8s.io", a),
		filepath.Join(r.root(), "io.containerd.grpc.v1.cri", "sandboxes", b),
		filepath.Join(r.root(), "io.containerd.grpc.v1.cri", "containers", "not-an-id"),
	} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if got := containerIDs(r); len(got) != 2 || got[0] != a || got[1] != b {
		t.Errorf("containerIDs = %v", got)
	}
}

func TestOurCNICacheEntry(t *testing.T) {
	id := strings.Repeat("c", 64)
	for name, want := range map[string]bool{
		"sidebench-a1b2c3-0-" + strings.Repeat("d", 64) + "-eth0": true,
		"cni-loopback-" + id + "-lo":                              true,
		"cni-loopback-" + strings.Repeat("d", 64) + "-lo":         false,
		"sidebench-a1b2c3-1-" + id + "x-eth0":                     false,
	} {
		if got := ourCNICacheEntry(name, "sidebench-a1b2c3-0", []string{id}); got != want {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
}

func TestCgroupHierarchies(t *testing.T) {
	hs, err := cgroupHierarchies()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cgroup hierarchies: %v", hs)
	for _, h := range hs {
		if !strings.HasPrefix(h, "/sys/fs/cgroup") {
			t.Errorf("unexpected cgroup mount %s", h)
		}
	}
}
