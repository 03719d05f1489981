package localcluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Runtime names (Config.Runtime).
const (
	// RuntimeSidebench is sidebench's in-process CRI server (harness/cri):
	// simulated containers, no processes. The default ("" means it too).
	RuntimeSidebench = "sidebench"
	// RuntimeContainerd is one real containerd + runc per node, from the
	// host's packages (REAL-KUBELET.md tier iii): real containers of
	// images imported from Config.ImageArchives.
	RuntimeContainerd = "containerd"
)

// DefaultSandboxImage is the pod sandbox ("pause") image of the
// containerd runtime: hack/image -pause-name writes it next to the agent
// image, so nothing is ever pulled.
const DefaultSandboxImage = "example.local/sidebench-pause:v1"

// cniBinDir is where Debian's containernetworking-plugins installs the
// CNI plugins.
const cniBinDir = "/usr/lib/cni"

// k8sNamespace is the containerd namespace of the CRI plugin; it is also
// the parent cgroup of every container (cgroupsPerQOS is off, so the
// kubelet gives no cgroup parent and containerd uses /k8s.io/<id>).
const k8sNamespace = "k8s.io"

// containerdBinaries and cniPlugins are what the containerd runtime runs
// from the host; hack/containerd-deps.sh installs them.
var (
	containerdBinaries = []string{"containerd", "containerd-shim-runc-v2", "runc", "ctr"}
	cniPlugins         = []string{"bridge", "host-local", "loopback"}
)

// ContainerdNode is what one node's containerd puts on the host, recorded
// in the state file before containerd starts, so that teardown (also
// DownDir after a SIGKILL) can find and undo it.
type ContainerdNode struct {
	Node string `json:"node"`
	// Dir holds every file of this containerd: config, root, state (its
	// sandboxes' network namespaces included: netns_mounts_under_state_dir),
	// runc's state, CNI config and IPAM data.
	Dir string `json:"dir"`
	// Socket is containerd's gRPC socket. Its shims carry "-address
	// Socket" on their command line, which is how teardown tells them from
	// other containerds' shims.
	Socket string `json:"socket"`
	// Bridge is the node's CNI bridge link (deleted by teardown).
	Bridge string `json:"bridge"`
	// Network is the CNI network name; libcni's result cache entries are
	// /var/lib/cni/results/<Network>-<container ID>-<interface>.
	Network string `json:"network"`
	// Subnet is the host-local IPAM range of the bridge.
	Subnet string `json:"subnet"`
}

func (r ContainerdNode) config() string   { return filepath.Join(r.Dir, "config.toml") }
func (r ContainerdNode) root() string     { return filepath.Join(r.Dir, "root") }
func (r ContainerdNode) state() string    { return filepath.Join(r.Dir, "state") }
func (r ContainerdNode) runcRoot() string { return filepath.Join(r.Dir, "runc") }
func (r ContainerdNode) cniConf() string  { return filepath.Join(r.Dir, "cni-conf") }
func (r ContainerdNode) ipamDir() string  { return filepath.Join(r.Dir, "cni-ipam") }

// Host locations containerd, its shims and libcni write to whatever the
// configuration says. Teardown removes only our entries in them (by
// container ID or network name) and the directories themselves only if
// they did not exist before Up and are empty.
const (
	// shimSocketDir holds the shims' sockets, named
	// sha256(<containerd socket>/<namespace>/<id>) (containerd 1.6
	// runtime/v2/shim.SocketAddress); a SIGKILLed shim leaves its socket.
	shimSocketDir = "/run/containerd/s"
	// cniCacheDir is libcni's default cache dir (containerd 1.6 sets no
	// other); its results/ keep each attachment's result until CNI DEL.
	cniCacheDir = "/var/lib/cni"
)

// checkContainerdDeps names every host binary or CNI plugin the
// containerd runtime needs that is missing.
func checkContainerdDeps() error {
	var missing []string
	for _, b := range containerdBinaries {
		if _, err := exec.LookPath(b); err != nil {
			missing = append(missing, b)
		}
	}
	for _, p := range cniPlugins {
		if !exists(filepath.Join(cniBinDir, p)) {
			missing = append(missing, filepath.Join(cniBinDir, p))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("localcluster: runtime %q needs %s, missing on this host; hack/containerd-deps.sh installs them (Debian packages containerd runc containernetworking-plugins)",
			RuntimeContainerd, strings.Join(missing, ", "))
	}
	return nil
}

// containerdNode is node i's containerd layout. Bridge and network names
// carry the cluster's random ID, so two clusters on one host never share
// a bridge or a cache entry (a Linux link name has at most 15 bytes:
// "sb" + 6 hex + "-" + index).
func containerdNode(runDir, clusterID string, i int) ContainerdNode {
	name := NodeName(i)
	dir := filepath.Join(runDir, "nodes", name, "containerd")
	return ContainerdNode{
		Node:    name,
		Dir:     dir,
		Socket:  filepath.Join(dir, "containerd.sock"),
		Bridge:  fmt.Sprintf("sb%s-%d", clusterID, i),
		Network: fmt.Sprintf("sidebench-%s-%d", clusterID, i),
		Subnet:  fmt.Sprintf("10.244.%d.0/24", 100+i),
	}
}

// maxContainerdNodes: node i's pods get 10.244.(100+i).0/24.
const maxContainerdNodes = 156

// containerdConfig is REAL-KUBELET.md's verified containerd 1.6
// configuration with every path under r.Dir: restrict_oom_score_adj
// because this VM's root lacks CAP_SYS_RESOURCE (runc cannot lower
// oom_score_adj), the stream server (exec, attach) on 127.0.0.1, no TCP,
// debug or metrics listener, netns mounts under the state dir instead of
// /var/run/netns, runc's state under r.Dir instead of /run/containerd/runc,
// and the opt plugin's dir under r.Dir instead of /opt/containerd. The
// snapshotters this host cannot use are disabled to keep the log clean.
func containerdConfig(r ContainerdNode, sandboxImage string) string {
	return fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
oom_score = 0
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]

[grpc]
  address = %[3]q
  tcp_address = ""

[ttrpc]
  address = %[4]q

[debug]
  address = ""
  level = "info"

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = %[5]q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[6]q
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  disable_apparmor = true
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = %[7]q
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[8]q
    conf_dir = %[9]q
    max_conf_num = 1
`, r.root(), r.state(), r.Socket, r.Socket+".ttrpc", filepath.Join(r.Dir, "opt"), sandboxImage, r.runcRoot(), cniBinDir, r.cniConf())
}

// cniConflist is the node's isolated pod network: a bridge with no host
// address (isGateway false), no masquerading and no route out, so pod
// traffic never leaves the bridge; host-local IPAM keeps its leases under
// r.Dir. containerd 1.6 needs an IP on eth0, so loopback alone would not do
// (REAL-KUBELET.md failure 7).
func cniConflist(r ContainerdNode) ([]byte, error) {
	type obj = map[string]any
	return json.MarshalIndent(obj{
		"cniVersion": "0.4.0",
		"name":       r.Network,
		"plugins": []obj{
			{
				"type": "bridge", "bridge": r.Bridge,
				"isGateway": false, "ipMasq": false, "hairpinMode": false,
				"ipam": obj{
					"type":    "host-local",
					"ranges":  [][]obj{{{"subnet": r.Subnet}}},
					"dataDir": r.ipamDir(),
				},
			},
			{"type": "loopback"},
		},
	}, "", "  ")
}

// writeContainerdFiles creates r's directories, config and CNI conflist.
func writeContainerdFiles(r ContainerdNode, sandboxImage string) error {
	for _, d := range []string{r.root(), r.state(), r.runcRoot(), r.cniConf(), r.ipamDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(r.config(), []byte(containerdConfig(r, sandboxImage)), 0o644); err != nil {
		return err
	}
	conf, err := cniConflist(r)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(r.cniConf(), "10-sidebench.conflist"), conf, 0o644)
}

// criClient dials a CRI socket. The connection is lazy: errors show on
// the first call.
func criClient(socket string) (*grpc.ClientConn, error) {
	return grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
}

// waitCRIReady polls socket's CRI Status until the runtime and the
// network are ready (containerd answers on its socket before its CRI
// plugin has loaded the CNI config), or within passes. exited, if it
// closes, means the process died: no point waiting.
func waitCRIReady(ctx context.Context, socket string, within time.Duration, exited <-chan struct{}) error {
	conn, err := criClient(socket)
	if err != nil {
		return err
	}
	defer conn.Close()
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	deadline := time.Now().Add(within)
	var last error
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		resp, err := rt.Status(cctx, &runtimeapi.StatusRequest{})
		cancel()
		if err == nil {
			var notReady []string
			for _, c := range resp.GetStatus().GetConditions() {
				if !c.Status {
					notReady = append(notReady, fmt.Sprintf("%s (%s: %s)", c.Type, c.Reason, c.Message))
				}
			}
			if len(notReady) == 0 {
				return nil
			}
			err = fmt.Errorf("not ready: %s", strings.Join(notReady, ", "))
		}
		last = err
		if time.Now().After(deadline) {
			return fmt.Errorf("CRI not ready after %s: %v", within, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-exited:
			return fmt.Errorf("the process exited (last CRI error: %v)", last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// importImages loads each OCI archive into the k8s.io namespace of the
// containerd at socket with ctr, then checks through CRI that the sandbox
// image is known: a missing pause image would otherwise show only as
// every pod failing to start with a pull error.
func importImages(ctx context.Context, socket string, archives []string, sandboxImage string) error {
	for _, a := range archives {
		cmd := exec.CommandContext(ctx, "ctr", "-a", socket, "-n", k8sNamespace, "images", "import", a)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("ctr images import %s: %w: %s", a, err, bytes.TrimSpace(out))
		}
	}
	conn, err := criClient(socket)
	if err != nil {
		return err
	}
	defer conn.Close()
	img := runtimeapi.NewImageServiceClient(conn)
	// The CRI plugin learns of imported images from containerd's events:
	// allow it a moment.
	for deadline := time.Now().Add(5 * time.Second); ; {
		resp, err := img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: sandboxImage}})
		if err == nil && resp.GetImage() != nil {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("CRI ImageStatus of the sandbox image %s: %w", sandboxImage, err)
			}
			return fmt.Errorf("sandbox image %s is not in any of the image archives %v; build it with `go run ./hack/image -pause-name %s ...` (make image does)",
				sandboxImage, archives, sandboxImage)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// startContainerd starts node r's containerd (recorded as process
// "containerd-<node>") and waits until its CRI service and pod network are
// ready.
func (c *Cluster) startContainerd(ctx context.Context, r ContainerdNode) error {
	name := "containerd-" + r.Node
	if err := c.start(c.cfg, name, nil, "containerd", "--config", r.config()); err != nil {
		return err
	}
	p, _ := c.proc(name)
	c.mu.Lock()
	exited := c.exited[p.PID]
	c.mu.Unlock()
	if err := waitCRIReady(ctx, r.Socket, 30*time.Second, exited); err != nil {
		return fmt.Errorf("localcluster: containerd of node %s: %w (log %s)", r.Node, err, c.logPath(name))
	}
	return nil
}

// setUpContainerd writes node r's containerd files, starts it and imports
// the cluster's image archives; the kubelet starts after.
func (c *Cluster) setUpContainerd(ctx context.Context, r ContainerdNode) error {
	if len(r.Socket+".ttrpc") >= 100 {
		return fmt.Errorf("localcluster: socket path %s is too long for a unix socket; use a shorter RunDir", r.Socket+".ttrpc")
	}
	if err := writeContainerdFiles(r, c.cfg.SandboxImage); err != nil {
		return err
	}
	if err := c.startContainerd(ctx, r); err != nil {
		return err
	}
	t0 := time.Now()
	if err := importImages(ctx, r.Socket, c.cfg.ImageArchives, c.cfg.SandboxImage); err != nil {
		return fmt.Errorf("localcluster: images for node %s: %w (containerd log %s)", r.Node, err, c.logPath("containerd-"+r.Node))
	}
	fmt.Fprintf(c.log, "localcluster: containerd of %s ready, %d image archive(s) imported in %s\n", r.Node, len(c.cfg.ImageArchives), time.Since(t0).Round(time.Millisecond))
	return nil
}

// containerdNodeOf returns node i's containerd record.
func (c *Cluster) containerdNodeOf(i int) (ContainerdNode, error) {
	if c.Runtime() != RuntimeContainerd {
		return ContainerdNode{}, fmt.Errorf("localcluster: node operations on the container runtime need Runtime %q (this cluster runs %q)", RuntimeContainerd, c.Runtime())
	}
	if i < 0 || i >= len(c.Nodes) {
		return ContainerdNode{}, fmt.Errorf("localcluster: no node %d (%d nodes)", i, len(c.Nodes))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.state.Containerd {
		if r.Node == c.Nodes[i].Name {
			return r, nil
		}
	}
	return ContainerdNode{}, fmt.Errorf("localcluster: node %s has no containerd record", c.Nodes[i].Name)
}

// KillRuntime SIGKILLs node i's containerd (containerd runtime only) and
// waits until it is gone. Its shims, and so every container, keep
// running, as when a real node's containerd crashes.
func (c *Cluster) KillRuntime(i int) error {
	r, err := c.containerdNodeOf(i)
	if err != nil {
		return err
	}
	return c.killProc("containerd-"+r.Node, "containerd of "+r.Node)
}

// StartRuntime starts node i's containerd again (after KillRuntime) with
// the same configuration, and waits until its CRI service is ready. It
// reconnects to the running shims, so the containers are adopted, not
// restarted. The images stay imported (they are in its root dir).
func (c *Cluster) StartRuntime(ctx context.Context, i int) error {
	r, err := c.containerdNodeOf(i)
	if err != nil {
		return err
	}
	name := "containerd-" + r.Node
	if err := c.forgetDead(name, "containerd of "+r.Node); err != nil {
		return err
	}
	return c.startContainerd(ctx, r)
}

// Runtime is the cluster's container runtime: RuntimeSidebench or
// RuntimeContainerd.
func (c *Cluster) Runtime() string {
	if c.cfg.Runtime == "" {
		return RuntimeSidebench
	}
	return c.cfg.Runtime
}
