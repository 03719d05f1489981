package localcluster

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sidebench/sidebench/harness/cri"
	"github.com/sidebench/sidebench/harness/history"
)

// Config configures Up.
type Config struct {
	// Nodes is the number of kubelets (default 1).
	Nodes int
	// Version of the Kubernetes binaries (default DefaultVersion).
	Version string
	// CacheDir holds the built binaries (default DefaultCacheDir(Version)).
	CacheDir string
	// Binaries, if set, are used as they are (no Build).
	Binaries *Binaries
	// RunDir holds every file of the cluster: PKI, kubeconfigs, etcd data,
	// kubelet root dirs, logs, the state file. Default: a new temporary
	// directory, removed by Down. A given RunDir is kept by Down.
	RunDir string
	// Log receives one line per step (default: discarded).
	Log io.Writer
	// Sink receives the CRI servers' history events (default: discarded).
	// Several nodes write to it; Up wraps it in cri.SerialSink.
	Sink history.Sink
	// Scheduler also starts kube-scheduler (default: pods must set
	// spec.nodeName).
	Scheduler bool
	// KubeletVerbosity is the kubelet's --v (default 2).
	KubeletVerbosity int
	// MaxPods per kubelet (default 250).
	MaxPods int
	// KeepOnExit: child processes survive the death of this process (no
	// parent-death signal). Down/DownDir still tear them down.
	KeepOnExit bool
	// FeatureGates, if not empty, is passed as --feature-gates to
	// kube-apiserver and every kubelet (e.g.
	// "ContainerRestartRules=true,RestartAllContainersOnContainerExits=true").
	FeatureGates string
	// Runtime is the container runtime of every node: "" or
	// RuntimeSidebench (sidebench's in-process CRI server, simulated
	// containers) or RuntimeContainerd (a real containerd + runc per node
	// from the host's packages; see docs/local-backend.md, "containerd
	// tier").
	Runtime string
	// ImageArchives are OCI layout tarballs (hack/image) imported into
	// every node's containerd before its kubelet starts (containerd only).
	ImageArchives []string
	// SandboxImage is the pod sandbox image of the containerd runtime; it
	// must be in ImageArchives (default DefaultSandboxImage).
	SandboxImage string
}

// Node is one kubelet and its CRI server.
type Node struct {
	// Name is the node name: a loopback address (127.0.0.2, 127.0.0.3,
	// ...), so the kubelet's node address is loopback and it resolves no
	// host name.
	Name    string
	RootDir string
	// CRISocket is the socket the kubelet talks CRI to: the in-process
	// server's, or containerd's (then equal to RuntimeSocket).
	CRISocket string
	// RuntimeSocket is the node's containerd socket (for ctr -a, crictl
	// -r); empty with sidebench's CRI server.
	RuntimeSocket string
	// KubeletPort is on 127.0.0.1 (sidebench's CRI server) or on the
	// node's own address, Name (containerd, so that the apiserver reaches
	// it for logs and exec); HealthzPort is on 127.0.0.1.
	KubeletPort int
	HealthzPort int
	// Runtime is the node's in-process CRI server (nil with containerd).
	Runtime *cri.Server
	Log     string

	// kubeletCmd is the kubelet's command line (binary first), the same
	// for every start of node i; kubeletEnv is added to its environment.
	kubeletCmd []string
	kubeletEnv []string
	// kubeletConf is the kubelet configuration file and baseConf its
	// content without graceful node shutdown.
	kubeletConf, baseConf string
	// Graceful node shutdown (EnableGracefulShutdown): the node's fake
	// logind and the kubelet's settings.
	logind                          *fakeLogind
	shutdownGrace, shutdownCritical time.Duration
}

// Timings are the durations of Up's phases, each from the start of Up.
type Timings struct {
	Build          time.Duration
	EtcdReady      time.Duration
	APIServerReady time.Duration
	// RuntimesReady: every node's containerd serves CRI with the images
	// imported (containerd runtime only; 0 otherwise).
	RuntimesReady time.Duration
	NodesReady    time.Duration
}

// Cluster is a running local cluster.
type Cluster struct {
	RunDir string
	Server string // https://127.0.0.1:PORT
	// EtcdURL is etcd's client URL (https://127.0.0.1:PORT; it accepts
	// only clients with a certificate of the cluster's etcd CA).
	EtcdURL    string
	Kubeconfig string // admin kubeconfig
	AdminToken string
	Nodes      []*Node
	Timings    Timings
	Binaries   Binaries

	log    io.Writer
	cfg    Config
	state  *State
	mu     sync.Mutex
	exited map[int]<-chan struct{}
	downed bool
	// upStart is when Up began (Timings are measured from it).
	upStart time.Time
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func freePorts(n int) ([]int, error) {
	// Hold all listeners until every port is chosen, so they are distinct.
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	out := make([]int, n)
	for i := range out {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out[i] = l.Addr().(*net.TCPAddr).Port
	}
	return out, nil
}

// serverPorts returns n distinct free ports for servers that bind them
// later (the kubelets': all drawn in one call, so that no two of a
// cluster are the same), below the kernel's ephemeral port range: a port
// of that range, free when probed, was often the source port of one of
// the other kubelets' connections to the apiserver by the time its
// kubelet bound it ("listen tcp 127.0.0.1:39131: bind: address already
// in use", a kubelet exit at 40 nodes). Outgoing connections never take
// a port below the range. Ports are drawn at random from the lower half
// below it and probed, so concurrent clusters rarely draw the same.
func serverPorts(n int) ([]int, error) {
	lo, hi := 16384, 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if l, err := strconv.Atoi(f[0]); err == nil && l > 2048 {
				lo, hi = l/2, l
			}
		}
	}
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	out := make([]int, 0, n)
	for tries := 0; len(out) < n; tries++ {
		if tries > 1000 {
			return nil, fmt.Errorf("localcluster: no free port in %d-%d", lo, hi-1)
		}
		b := make([]byte, 2)
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
		port := lo + int(binary.BigEndian.Uint16(b))%(hi-lo)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		ls = append(ls, l)
		out = append(out, port)
	}
	return out, nil
}

// NodeName is the name of node i (0-based): 127.0.0.(i+2), continuing into
// 127.0.1.x and so on.
func NodeName(i int) string {
	n := i + 2
	return fmt.Sprintf("127.0.%d.%d", n/256, n%256)
}

// Up starts etcd and kube-apiserver on 127.0.0.1 (free ports), then
// cfg.Nodes kubelets each on its own in-process sidebench CRI server, and
// waits until the apiserver is ready and every node is Ready. On error
// everything started so far is torn down.
func Up(ctx context.Context, cfg Config) (_ *Cluster, err error) {
	t0 := time.Now()
	if cfg.Nodes <= 0 {
		cfg.Nodes = 1
	}
	if cfg.Version == "" {
		cfg.Version = DefaultVersion
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.Sink == nil {
		cfg.Sink = history.Discard
	}
	if cfg.KubeletVerbosity == 0 {
		cfg.KubeletVerbosity = 2
	}
	if cfg.MaxPods == 0 {
		cfg.MaxPods = 250
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("localcluster: the kubelet needs root")
	}
	if err := checkRuntimeConfig(&cfg); err != nil {
		return nil, err
	}
	if avail, err := memAvailable(); err == nil {
		if err := checkFits(cfg.Nodes, cfg.Runtime, avail); err != nil {
			return nil, err
		}
	}
	var bins Binaries
	if cfg.Binaries != nil {
		bins = *cfg.Binaries
	} else if bins, err = Build(ctx, cfg.Version, cfg.CacheDir, cfg.Log); err != nil {
		return nil, err
	}
	clusterID, err := randomHex(3)
	if err != nil {
		return nil, err
	}
	st := &State{RunDir: cfg.RunDir, ID: clusterID}
	if st.RunDir == "" {
		if st.RunDir, err = os.MkdirTemp("", "sidebench-local-"); err != nil {
			return nil, err
		}
		st.RemoveRunDir = true
	} else if st.RunDir, err = filepath.Abs(st.RunDir); err != nil {
		return nil, err
	}
	c := &Cluster{RunDir: st.RunDir, Binaries: bins, log: cfg.Log, cfg: cfg, state: st, exited: map[int]<-chan struct{}{}, upStart: t0}
	c.Timings.Build = time.Since(t0)
	defer func() {
		if err != nil {
			// The error names a log in the run dir, which Down removes
			// when Up created it: keep the logs.
			if st.RemoveRunDir {
				if kept, kerr := keepLogs(st.RunDir); kerr == nil {
					err = fmt.Errorf("%w (the run dir's logs/ is kept as %s)", err, kept)
				}
			}
			if derr := c.Down(); derr != nil {
				err = errors.Join(err, derr)
			}
		}
	}()
	// The run dir holds keys and tokens: owner only.
	if err := os.MkdirAll(st.RunDir, 0o700); err != nil {
		return nil, err
	}
	if err := os.Chmod(st.RunDir, 0o700); err != nil {
		return nil, err
	}
	for _, d := range []string{"pki", "logs", "etcd", "apiserver-certs", "nodes"} {
		if err := os.MkdirAll(filepath.Join(st.RunDir, d), 0o700); err != nil {
			return nil, err
		}
	}
	if err := st.save(); err != nil {
		return nil, err
	}
	// Register with the shared host state before anything starts: the
	// kernel settings the kubelets rewrite and the host paths they and
	// the runtimes create are recorded host-wide (restored by the last
	// cluster to go), the host limits are raised for every cluster's
	// kubelets together (hostshare.go).
	wants, err := hostWantsFor(cfg)
	if err != nil {
		return nil, err
	}
	ownerStart, _ := procStartTicks(os.Getpid())
	if err := acquireHost(Holder{RunDir: st.RunDir, ID: st.ID, Nodes: cfg.Nodes, OwnerPID: os.Getpid(), OwnerStart: ownerStart,
		Keep: cfg.KeepOnExit, Started: time.Now()}, wants, cfg.Log); err != nil {
		return nil, err
	}
	st.HostHeld = true
	if err := st.save(); err != nil {
		return nil, err
	}

	// PKI and tokens.
	pki := filepath.Join(st.RunDir, "pki")
	if err := writeServiceAccountKeys(filepath.Join(pki, "sa.key"), filepath.Join(pki, "sa.pub")); err != nil {
		return nil, err
	}
	users := []tokenUser{}
	if c.AdminToken, err = randomToken(); err != nil {
		return nil, err
	}
	users = append(users, tokenUser{c.AdminToken, "sidebench-admin", "admin-uid", []string{"system:masters"}})
	nodeTokens := make([]string, cfg.Nodes)
	for i := range nodeTokens {
		if nodeTokens[i], err = randomToken(); err != nil {
			return nil, err
		}
		users = append(users, tokenUser{nodeTokens[i], "system:node:" + NodeName(i), "node-uid-" + strconv.Itoa(i), []string{"system:nodes"}})
	}
	if err := writeTokenFile(filepath.Join(pki, "tokens.csv"), users); err != nil {
		return nil, err
	}
	// The apiserver's client certificate for the kubelets' API (logs,
	// exec, port-forward); only the containerd runtime's kubelets trust it.
	if err := writeKubeletClientPKI(filepath.Join(pki, kubeletClientCA), filepath.Join(pki, "apiserver-kubelet-client.crt"), filepath.Join(pki, "apiserver-kubelet-client.key")); err != nil {
		return nil, err
	}

	// etcd, with TLS and client-certificate authentication on its client
	// and peer URLs from its own CA, as kubeadm sets it up: no local
	// process without a certificate of that CA can read or write a key
	// (issue 15 item 8). No separate metrics listener: /metrics and
	// /health are on the client URL, behind the same authentication.
	etcdTLS := etcdPKIIn(pki)
	if err := writeEtcdPKI(etcdTLS); err != nil {
		return nil, err
	}
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	etcdClient, etcdPeer, apiPort := ports[0], ports[1], ports[2]
	etcdURL := fmt.Sprintf("https://127.0.0.1:%d", etcdClient)
	peerURL := fmt.Sprintf("https://127.0.0.1:%d", etcdPeer)
	if err := c.start(cfg, "etcd", nil, bins.Etcd,
		"--name=sidebench", "--data-dir="+filepath.Join(st.RunDir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=sidebench="+peerURL,
		"--cert-file="+etcdTLS.ServerCert, "--key-file="+etcdTLS.ServerKey,
		"--client-cert-auth=true", "--trusted-ca-file="+etcdTLS.CA,
		"--peer-cert-file="+etcdTLS.PeerCert, "--peer-key-file="+etcdTLS.PeerKey,
		"--peer-client-cert-auth=true", "--peer-trusted-ca-file="+etcdTLS.CA,
		"--unsafe-no-fsync", "--log-level=warn",
	); err != nil {
		return nil, err
	}
	etcdHealth, err := etcdTLS.tlsConfig(etcdTLS.HealthCert, etcdTLS.HealthKey)
	if err != nil {
		return nil, err
	}
	if err := waitHTTP(ctx, httpClient(etcdHealth), etcdURL+"/health", "", 60*time.Second); err != nil {
		return nil, fmt.Errorf("localcluster: etcd not healthy: %w (log %s)", err, c.logPath("etcd"))
	}
	c.EtcdURL = etcdURL
	c.Timings.EtcdReady = time.Since(t0)
	fmt.Fprintf(cfg.Log, "localcluster: etcd healthy at %s after %s\n", etcdURL, c.Timings.EtcdReady.Round(time.Millisecond))

	// kube-apiserver.
	c.Server = fmt.Sprintf("https://127.0.0.1:%d", apiPort)
	apiArgs := []string{
		"--etcd-servers=" + etcdURL,
		"--etcd-cafile=" + etcdTLS.CA,
		"--etcd-certfile=" + etcdTLS.APIServerCert,
		"--etcd-keyfile=" + etcdTLS.APIServerKey,
		// No anonymous requests (issue 15 item 9): kubeadm keeps them on
		// so that the kubelet's liveness probes of the static-pod
		// apiserver can read /livez, /readyz and /healthz (RBAC's
		// system:public-info-viewer, with /version); sidebench runs no
		// static pods and waits for /readyz with the admin token, so
		// nothing needs them, and every request must authenticate.
		"--anonymous-auth=false",
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", apiPort),
		"--cert-dir=" + filepath.Join(st.RunDir, "apiserver-certs"),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + filepath.Join(pki, "sa.pub"),
		"--service-account-signing-key-file=" + filepath.Join(pki, "sa.key"),
		"--token-auth-file=" + filepath.Join(pki, "tokens.csv"),
		"--authorization-mode=Node,RBAC",
		"--service-cluster-ip-range=10.96.0.0/24",
		"--endpoint-reconciler-type=none",
		"--profiling=false",
		"--kubelet-client-certificate=" + filepath.Join(pki, "apiserver-kubelet-client.crt"),
		"--kubelet-client-key=" + filepath.Join(pki, "apiserver-kubelet-client.key"),
	}
	apiArgs = append(apiArgs, featureGateArgs(cfg.FeatureGates)...)
	if err := c.start(cfg, "kube-apiserver", nil, bins.APIServer, apiArgs...); err != nil {
		return nil, err
	}
	c.Kubeconfig = filepath.Join(st.RunDir, "admin.kubeconfig")
	if err := writeKubeconfig(c.Kubeconfig, c.Server, "sidebench-admin", c.AdminToken); err != nil {
		return nil, err
	}
	if err := waitHTTP(ctx, httpClient(insecureLoopbackTLS()), c.Server+"/readyz", c.AdminToken, 120*time.Second); err != nil {
		return nil, fmt.Errorf("localcluster: kube-apiserver not ready: %w (log %s)", err, c.logPath("kube-apiserver"))
	}
	c.Timings.APIServerReady = time.Since(t0)
	fmt.Fprintf(cfg.Log, "localcluster: kube-apiserver ready at %s after %s\n", c.Server, c.Timings.APIServerReady.Round(time.Millisecond))
	cs, err := c.Client()
	if err != nil {
		return nil, err
	}
	if err := EnsureServiceAccount(ctx, cs, "default"); err != nil {
		return nil, err
	}

	if cfg.Scheduler {
		sp, err := freePort()
		if err != nil {
			return nil, err
		}
		if err := c.start(cfg, "kube-scheduler", nil, bins.Scheduler,
			"--kubeconfig="+c.Kubeconfig, "--authentication-kubeconfig="+c.Kubeconfig, "--authorization-kubeconfig="+c.Kubeconfig,
			"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", sp), "--leader-elect=false",
		); err != nil {
			return nil, err
		}
	}

	// Kubelets (their host state is recorded: see acquireHost above).
	if cfg.Runtime == RuntimeContainerd {
		if err := c.recordContainerdHostState(); err != nil {
			return nil, err
		}
	}
	if err := st.save(); err != nil {
		return nil, err
	}
	sink := cri.SerialSink(cfg.Sink)
	// Every kubelet's ports at once, so that no two kubelets draw the same.
	if ports, err = serverPorts(2 * cfg.Nodes); err != nil {
		return nil, err
	}
	for i := 0; i < cfg.Nodes; i++ {
		if _, err := c.startNode(ctx, cfg, i, nodeTokens[i], sink, ports[2*i:2*i+2]); err != nil {
			return nil, err
		}
	}
	if err := c.waitNodesReady(ctx, cs, 120*time.Second); err != nil {
		return nil, err
	}
	c.Timings.NodesReady = time.Since(t0)
	fmt.Fprintf(cfg.Log, "localcluster: %d node(s) Ready after %s (run dir %s)\n", len(c.Nodes), c.Timings.NodesReady.Round(time.Millisecond), st.RunDir)
	return c, nil
}

// keepLogs moves runDir/logs to a new temporary directory (the processes
// still writing keep their open files) and returns its path.
func keepLogs(runDir string) (string, error) {
	dst, err := os.MkdirTemp(filepath.Dir(runDir), "sidebench-failed-logs-")
	if err != nil {
		return "", err
	}
	if err := os.Rename(filepath.Join(runDir, "logs"), filepath.Join(dst, "logs")); err != nil {
		os.Remove(dst)
		return "", err
	}
	return filepath.Join(dst, "logs"), nil
}

func (c *Cluster) logPath(name string) string { return filepath.Join(c.RunDir, "logs", name+".log") }

// start runs a child process logging to logs/<name>.log, with env added
// to this process's environment, and records it in the state file.
func (c *Cluster) start(cfg Config, name string, env []string, bin string, args ...string) error {
	logf, err := os.OpenFile(c.logPath(name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(bin, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = c.RunDir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if !cfg.KeepOnExit {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("localcluster: start %s: %w", name, err)
	}
	ticks, _ := procStartTicks(cmd.Process.Pid)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	c.mu.Lock()
	c.exited[cmd.Process.Pid] = done
	c.state.Procs = append(c.state.Procs, Proc{Name: name, PID: cmd.Process.Pid, StartTicks: ticks})
	err = c.state.save()
	c.mu.Unlock()
	return err
}

// startNode starts node i: its runtime (in-process CRI server, or
// containerd with the images imported), then its kubelet.
// ports are its kubelet's port and healthz port.
func (c *Cluster) startNode(ctx context.Context, cfg Config, i int, token string, sink history.Sink, ports []int) (*Node, error) {
	name := NodeName(i)
	dir := filepath.Join(c.RunDir, "nodes", name)
	n := &Node{Name: name, RootDir: filepath.Join(dir, "root"), CRISocket: filepath.Join(dir, "cri.sock")}
	if cfg.Runtime == RuntimeContainerd {
		n.RuntimeSocket = containerdNode(c.RunDir, c.state.ID, i).Socket
		n.CRISocket = n.RuntimeSocket
	}
	if len(n.CRISocket) > 100 {
		return nil, fmt.Errorf("localcluster: socket path %s is too long for a unix socket; use a shorter RunDir", n.CRISocket)
	}
	for _, d := range []string{n.RootDir, filepath.Join(dir, "pki"), filepath.Join(dir, "pod-logs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	c.mu.Lock()
	c.state.MountRoots = append(c.state.MountRoots, n.RootDir)
	err := c.state.save()
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	n.KubeletPort, n.HealthzPort = ports[0], ports[1]
	var kcfg string
	if cfg.Runtime == RuntimeContainerd {
		c.Nodes = append(c.Nodes, n) // its containerd is a recorded process: Down stops it
		r, err := c.containerdNodeOf(i)
		if err != nil {
			return nil, err
		}
		if err := c.setUpContainerd(ctx, r); err != nil {
			return nil, err
		}
		c.Timings.RuntimesReady = time.Since(c.upStart)
		kcfg = kubeletConfigContainerd(n, filepath.Join(dir, "pod-logs"), cfg.MaxPods, filepath.Join(c.RunDir, "pki", kubeletClientCA))
	} else {
		root := kubeletCgroupRoot(c.state.ID, name)
		dirs, err := kubeletCgroupDirs(root)
		if err != nil {
			// The kubelet runs, but dies at the first in-place resize it
			// actuates (cgroups.go).
			fmt.Fprintf(c.log, "localcluster: kubelet %s without cgroupsPerQOS (%v): an in-place resize will crash it\n", name, err)
			root = ""
		} else {
			c.mu.Lock()
			c.state.KubeletCgroups = append(c.state.KubeletCgroups, dirs...)
			err = c.state.save()
			c.mu.Unlock()
			if err == nil {
				err = makeCgroupDirs(dirs)
			}
			if err != nil {
				return nil, err
			}
		}
		kcfg = kubeletConfig(n, filepath.Join(dir, "pod-logs"), cfg.MaxPods, root)
		n.Runtime = cri.New(cri.Config{
			Node: name, Sink: sink, FsMountpoint: n.RootDir,
			// Loopback pod IPs, a /24 per node: 127.100.0.0/24, 127.100.1.0/24, ...
			PodCIDR: fmt.Sprintf("127.%d.%d.0/24", 100+i/256, i%256),
		})
		if err := n.Runtime.ListenAndServe(n.CRISocket); err != nil {
			return nil, err
		}
		c.Nodes = append(c.Nodes, n) // from here on, Down closes its runtime
	}
	kc := filepath.Join(dir, "kubelet.kubeconfig")
	if err := writeKubeconfig(kc, c.Server, "system:node:"+name, token); err != nil {
		return nil, err
	}
	conf := filepath.Join(dir, "kubelet-config.yaml")
	if err := os.WriteFile(conf, []byte(kcfg), 0o644); err != nil {
		return nil, err
	}
	n.kubeletConf, n.baseConf = conf, kcfg
	n.Log = c.logPath("kubelet-" + name)
	n.kubeletCmd = []string{c.Binaries.Kubelet,
		"--config=" + conf, "--kubeconfig=" + kc,
		"--root-dir=" + n.RootDir, "--cert-dir=" + filepath.Join(dir, "pki"),
		"--hostname-override=" + name,
		"--v=" + strconv.Itoa(cfg.KubeletVerbosity),
	}
	if cfg.Runtime == RuntimeContainerd {
		n.kubeletCmd = append(n.kubeletCmd, featureGateArgs(cfg.FeatureGates)...)
	} else {
		gates := kubeletDensityGate
		if cfg.FeatureGates != "" {
			gates = cfg.FeatureGates + "," + gates
		}
		n.kubeletCmd = append(append(n.kubeletCmd, featureGateArgs(gates)...), kubeletDensityArgs...)
		if n.kubeletCmd, err = privateHostPaths(dir, kubeletHostPaths, n.kubeletCmd); err != nil {
			return nil, err
		}
	}
	if err := c.start(cfg, "kubelet-"+name, nil, n.kubeletCmd[0], n.kubeletCmd[1:]...); err != nil {
		return nil, err
	}
	return n, nil
}

func (c *Cluster) proc(name string) (Proc, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.state.Procs {
		if p.Name == name {
			return p, true
		}
	}
	return Proc{}, false
}

// KillKubelet SIGKILLs node i's kubelet and waits until it is gone. Its
// runtime (CRI server or containerd) keeps running with every container,
// as a container runtime outlives a crashed kubelet.
func (c *Cluster) KillKubelet(i int) error {
	if i < 0 || i >= len(c.Nodes) {
		return fmt.Errorf("localcluster: no node %d (%d nodes)", i, len(c.Nodes))
	}
	n := c.Nodes[i]
	return c.killProc("kubelet-"+n.Name, "kubelet of "+n.Name)
}

// StopKubelet stops node i's kubelet as systemd stops a service at
// shutdown: SIGTERM, then SIGKILL if it still runs after grace.
func (c *Cluster) StopKubelet(i int, grace time.Duration) error {
	if i < 0 || i >= len(c.Nodes) {
		return fmt.Errorf("localcluster: no node %d (%d nodes)", i, len(c.Nodes))
	}
	n := c.Nodes[i]
	p, ok := c.proc("kubelet-" + n.Name)
	if !ok || !p.Alive() {
		return fmt.Errorf("localcluster: kubelet of %s is not running", n.Name)
	}
	c.mu.Lock()
	exited := c.exited[p.PID]
	c.mu.Unlock()
	return stopProc(p, grace, exited)
}

// killProc SIGKILLs the recorded process name (what describes it in
// errors) and waits until it is gone.
func (c *Cluster) killProc(name, what string) error {
	p, ok := c.proc(name)
	if !ok || !p.Alive() {
		return fmt.Errorf("localcluster: %s is not running", what)
	}
	if err := syscall.Kill(p.PID, syscall.SIGKILL); err != nil {
		return fmt.Errorf("localcluster: kill %s (pid %d): %w", what, p.PID, err)
	}
	c.mu.Lock()
	exited := c.exited[p.PID]
	c.mu.Unlock()
	if !waitGone(p, 10*time.Second, exited) {
		return fmt.Errorf("localcluster: %s (pid %d) survived SIGKILL", what, p.PID)
	}
	return nil
}

// forgetDead drops the record of the process name before it is started
// again; it fails if that process still runs.
func (c *Cluster) forgetDead(name, what string) error {
	if p, ok := c.proc(name); ok && p.Alive() {
		return fmt.Errorf("localcluster: %s is already running (pid %d)", what, p.PID)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	procs := c.state.Procs[:0]
	for _, p := range c.state.Procs {
		if p.Name != name {
			procs = append(procs, p)
		}
	}
	c.state.Procs = procs
	return nil
}

// StartKubelet starts node i's kubelet again (after KillKubelet) with the
// same flags, root dir and CRI socket, and waits until its /healthz answers.
func (c *Cluster) StartKubelet(ctx context.Context, i int) error {
	if i < 0 || i >= len(c.Nodes) {
		return fmt.Errorf("localcluster: no node %d (%d nodes)", i, len(c.Nodes))
	}
	n := c.Nodes[i]
	name := "kubelet-" + n.Name
	if err := c.forgetDead(name, "kubelet of "+n.Name); err != nil {
		return err
	}
	if err := c.start(c.cfg, name, n.kubeletEnv, n.kubeletCmd[0], n.kubeletCmd[1:]...); err != nil {
		return err
	}
	if err := waitHTTP(ctx, httpClient(nil), fmt.Sprintf("http://127.0.0.1:%d/healthz", n.HealthzPort), "", 60*time.Second); err != nil {
		return fmt.Errorf("localcluster: kubelet of %s not healthy: %w (log %s)", n.Name, err, n.Log)
	}
	return nil
}

// WaitNodesReady waits until every node reports Ready.
func (c *Cluster) WaitNodesReady(ctx context.Context, within time.Duration) error {
	cs, err := c.Client()
	if err != nil {
		return err
	}
	return c.waitNodesReady(ctx, cs, within)
}

// kubeletHostPaths are used by a kubelet whatever its flags: the device
// manager's socket dir is hard-coded under /var/lib/kubelet, the
// container log symlinks go to /var/log/containers, and the mount helper
// writes /run/mount (utab). On sidebench's CRI server every kubelet gets
// its own copy of each (privateHostPaths); the host directories are only
// mount points, created if missing and removed by the last cluster
// (hostshare.go). On containerd the kubelets share them.
var kubeletHostPaths = []string{"/var/lib/kubelet", "/var/log/containers", "/run/mount"}

// privateHostPaths wraps the kubelet command line cmd so that the kubelet
// runs in a mount namespace of its own where each of paths (the
// kubeletHostPaths) is a directory of nodeDir (host/<path with / as _>),
// bound over a mount point created on the host if missing: kubelets of one
// cluster, or of two clusters, no longer share a device-plugin socket.
// They did: every kubelet's device manager deletes the sockets in
// /var/lib/kubelet/device-plugins and binds kubelet.sock there, so two
// kubelets starting together failed with "listen unix
// /var/lib/kubelet/device-plugins/kubelet.sock: bind: address already in
// use" (kubelet exit; seen at 20 nodes). The namespace is private: the
// kubelet's own mounts (its root dir) stay in it and go with it. The
// wrapper is util-linux's unshare and /bin/sh, which exec the kubelet:
// the process (PID, start time, parent-death signal) is the kubelet's.
// Only for sidebench's CRI server: containerd, in the host's namespace,
// must see the volumes a kubelet mounts.
func privateHostPaths(nodeDir string, paths, cmd []string) ([]string, error) {
	script := ""
	args := []string{}
	for i, p := range paths {
		own := filepath.Join(nodeDir, "host", strings.ReplaceAll(strings.TrimPrefix(p, "/"), "/", "_"))
		if err := os.MkdirAll(own, 0o755); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(p, 0o755); err != nil {
			return nil, fmt.Errorf("localcluster: mount point %s: %w", p, err)
		}
		script += fmt.Sprintf(`mount --bind "$%d" %q && `, i+1, p)
		args = append(args, own)
	}
	script += fmt.Sprintf(`shift %d && exec "$@"`, len(paths))
	out := []string{"unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", script, "sidebench-kubelet"}
	return append(append(out, args...), cmd...), nil
}

// kubeletConfig is REAL-KUBELET.md's verified configuration, with
// anonymous access off: nothing reaches the kubelet's API with sidebench's
// CRI server (no logs/exec), and it binds 127.0.0.1 only.
//
// On the CRI server, containers are simulated: they have no cgroups, no
// files and zero stats. Four kubelet loops then cost CPU per node without
// serving the measurement, and are turned down (measured at 20 idle
// kubelets: 0.88% of a core per kubelet before, 0.39% after; see
// docs/local-backend.md, "Density"). None of them shapes what sidebench
// measures: pod workers, PLEG relist (1 s), probes, status manager and
// the sync loop are untouched.
//   - localStorageCapacityIsolation: false and evictionHard
//     memory.available 0%: the eviction manager would compute a stats
//     summary every 10 s (disk usage of every pod, image fs) to evict on
//     pressure the simulated containers cannot create;
//   - nodeStatusUpdateFrequency 1m, nodeLeaseDurationSeconds 240 (lease
//     renewed every 60 s): node status and lease writes every 10 s, which
//     nothing reads (there is no node lifecycle controller); a kubelet
//     still reports at once when it becomes Ready and on node shutdown;
//   - kubeletDensityArgs: stats from the CRI (PodAndContainerStatsFromCRI,
//     beta, off by default in v1.37.2), which disables cAdvisor's
//     container discovery (an inotify watch of every cgroup of every
//     hierarchy), and cAdvisor housekeeping every minute instead of
//     10-15 s (it only has the machine's own cgroups to look at).
func kubeletConfig(n *Node, podLogs string, maxPods int, cgroupRoot string) string {
	return kubeletConfigWith(n, podLogs, maxPods, "127.0.0.1", "", cgroupRoot) + `localStorageCapacityIsolation: false
evictionHard: {memory.available: "0%"}
nodeStatusUpdateFrequency: 1m
nodeLeaseDurationSeconds: 240
`
}

// kubeletDensityGate and kubeletDensityArgs: see kubeletConfig.
const kubeletDensityGate = "PodAndContainerStatsFromCRI=true"

var kubeletDensityArgs = []string{"--housekeeping-interval=1m"}

// kubeletConfigContainerd is kubeletConfig for a node on containerd,
// where `kubectl logs/exec` must work: the apiserver dials the node's
// address, which is its name (127.0.0.x, REAL-KUBELET.md item 4), so the
// kubelet API binds that loopback address; it authenticates the
// apiserver's client certificate against clientCA (anonymous access
// stays off). Image garbage collection is off: the imported images cannot
// be pulled again, and containerd 1.6 does not pin them. Disk-pressure
// eviction waits for the last GiB: the default thresholds (imagefs 15%,
// nodefs 10% free) are about the host's disk, which the cluster shares
// with whatever else runs there; at 85% used (38 of 252 GB free, a
// developer machine after a day of runs) the kubelet evicted every pod of
// the kube e2e trials, and the trials measured evictions, not sidecars.
// The memory threshold stays the default.
func kubeletConfigContainerd(n *Node, podLogs string, maxPods int, clientCA string) string {
	return kubeletConfigWith(n, podLogs, maxPods, n.Name, clientCA, "") + `imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "100Mi", nodefs.available: "1Gi", imagefs.available: "1Gi", nodefs.inodesFree: "1%", imagefs.inodesFree: "1%"}
`
}

// Settings beyond REAL-KUBELET.md's, each with its reason:
//   - makeIPTablesUtilChains: false: otherwise every kubelet creates the
//     KUBE-IPTABLES-HINT and KUBE-FIREWALL chains and jumps from INPUT
//     and OUTPUT to a DROP rule in the host's network namespace
//     (kubelet_network_linux.go), which outlive it; they serve
//     kube-proxy's route_localnet, and there is no kube-proxy here
//     (issue 15 item 10).
//   - cgroupsPerQOS only with a cgroupRoot of the kubelet's own
//     (cgroups.go): the sidebench runtime's kubelets, so that they can
//     actuate in-place resizes. On containerd it stays off: the kubelet
//     then gives no cgroup parent and containerd puts each container in
//     <hierarchy>/k8s.io/<id>, which its teardown relies on.
func kubeletConfigWith(n *Node, podLogs string, maxPods int, address, clientCA, cgroupRoot string) string {
	x509 := ""
	if clientCA != "" {
		x509 = "\n  x509: {clientCAFile: " + clientCA + "}"
	}
	qos := "cgroupsPerQOS: false"
	if cgroupRoot != "" {
		qos = "cgroupsPerQOS: true\ncgroupRoot: " + cgroupRoot
	}
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %s
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %d
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}%s
authorization: {mode: AlwaysAllow}
cgroupDriver: cgroupfs
%s
enforceNodeAllocatable: []
failSwapOn: false
failCgroupV1: false
containerRuntimeEndpoint: unix://%s
podLogsDir: %s
registerNode: true
maxPods: %d
serializeImagePulls: false
makeIPTablesUtilChains: false
volumePluginDir: %s
`, address, n.KubeletPort, n.HealthzPort, x509, qos, n.CRISocket, podLogs, maxPods, filepath.Join(filepath.Dir(n.RootDir), "volume-plugins"))
}

// kubeletClientCA is the file name, in the run dir's pki/, of the CA the
// containerd runtime's kubelets trust for client certificates.
const kubeletClientCA = "kubelet-client-ca.crt"

// checkRuntimeConfig validates cfg's runtime fields and fills defaults:
// an unknown runtime or a missing host dependency fails before anything
// starts.
func checkRuntimeConfig(cfg *Config) error {
	switch cfg.Runtime {
	case "", RuntimeSidebench:
		if len(cfg.ImageArchives) > 0 {
			return fmt.Errorf("localcluster: ImageArchives need Runtime %q (sidebench's CRI server runs no images)", RuntimeContainerd)
		}
		return nil
	case RuntimeContainerd:
	default:
		return fmt.Errorf("localcluster: unknown runtime %q (want %q or %q)", cfg.Runtime, RuntimeSidebench, RuntimeContainerd)
	}
	if err := checkContainerdDeps(); err != nil {
		return err
	}
	if cfg.Nodes > maxContainerdNodes {
		return fmt.Errorf("localcluster: runtime %q supports at most %d nodes (pod subnets 10.244.100-255.0/24)", RuntimeContainerd, maxContainerdNodes)
	}
	if cfg.SandboxImage == "" {
		cfg.SandboxImage = DefaultSandboxImage
	}
	archives := make([]string, len(cfg.ImageArchives))
	for i, a := range cfg.ImageArchives {
		abs, err := filepath.Abs(a)
		if err != nil {
			return err
		}
		if st, err := os.Stat(abs); err != nil || !st.Mode().IsRegular() {
			return fmt.Errorf("localcluster: image archive %s: not a readable file (build one with `make image`): %v", a, err)
		}
		archives[i] = abs
	}
	cfg.ImageArchives = archives
	return nil
}

// recordContainerdHostState writes to the state file, before any
// containerd starts, everything the containerd runtime may create outside
// the run dir that is the cluster's own: each node's containerd (socket,
// bridge, CNI network) and the k8s.io cgroup dirs. (The shared host dirs
// are in the host record: hostWantsFor.)
func (c *Cluster) recordContainerdHostState() error {
	parents, err := cgroupParents()
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.state
	st.CgroupParents = parents
	for i := 0; i < c.cfg.Nodes; i++ {
		st.Containerd = append(st.Containerd, containerdNode(st.RunDir, st.ID, i))
	}
	return st.save()
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// insecureLoopbackTLS is the TLS configuration for the apiserver, whose
// serving certificate is self-signed (it listens on 127.0.0.1 only).
func insecureLoopbackTLS() *tls.Config {
	return &tls.Config{InsecureSkipVerify: true} //nolint:gosec // self-signed, 127.0.0.1 only
}

// httpClient is a short-timeout client with tlsCfg (nil: plain HTTP).
func httpClient(tlsCfg *tls.Config) *http.Client {
	return &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg}}
}

// waitHTTP polls url with client until it answers 200.
func waitHTTP(ctx context.Context, client *http.Client, url, token string, within time.Duration) error {
	deadline := time.Now().Add(within)
	var last error
	for time.Now().Before(deadline) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Errorf("%s: %s", url, resp.Status)
		} else {
			last = err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("timed out after %s: %v", within, last)
}

// RESTConfig returns an admin client configuration.
func (c *Cluster) RESTConfig() *rest.Config {
	return &rest.Config{
		Host:            c.Server,
		BearerToken:     c.AdminToken,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		QPS:             200,
		Burst:           400,
	}
}

// Client returns an admin clientset.
func (c *Cluster) Client() (kubernetes.Interface, error) {
	return kubernetes.NewForConfig(c.RESTConfig())
}

// EnsureServiceAccount creates the "default" ServiceAccount of ns (there
// is no kube-controller-manager to do it). Pods must also set
// automountServiceAccountToken: false (no kube-root-ca.crt ConfigMap).
func EnsureServiceAccount(ctx context.Context, cs kubernetes.Interface, ns string) error {
	if ns != "default" {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// waitNodesReady waits until every node is Ready, then removes the
// not-ready taint the node lifecycle controller would remove (there is no
// kube-controller-manager), so a scheduler can place pods.
func (c *Cluster) waitNodesReady(ctx context.Context, cs kubernetes.Interface, within time.Duration) error {
	deadline := time.Now().Add(within)
	pending := map[string]bool{}
	for _, n := range c.Nodes {
		pending[n.Name] = true
	}
	for len(pending) > 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("localcluster: nodes not Ready after %s: %v (logs in %s)", within, keys(pending), filepath.Join(c.RunDir, "logs"))
		}
		c.mu.Lock()
		procs := append([]Proc(nil), c.state.Procs...)
		c.mu.Unlock()
		for _, p := range procs {
			if !p.Alive() {
				return fmt.Errorf("localcluster: %s (pid %d) exited; see %s", p.Name, p.PID, c.logPath(p.Name))
			}
		}
		list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err == nil {
			for i := range list.Items {
				nd := &list.Items[i]
				if !pending[nd.Name] {
					continue
				}
				for _, cond := range nd.Status.Conditions {
					if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
						delete(pending, nd.Name)
						if err := untaint(ctx, cs, nd); err != nil {
							return err
						}
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

func untaint(ctx context.Context, cs kubernetes.Interface, nd *corev1.Node) error {
	var keep []corev1.Taint
	for _, t := range nd.Spec.Taints {
		if t.Key != corev1.TaintNodeNotReady {
			keep = append(keep, t)
		}
	}
	if len(keep) == len(nd.Spec.Taints) {
		return nil
	}
	nd = nd.DeepCopy()
	nd.Spec.Taints = keep
	_, err := cs.CoreV1().Nodes().Update(ctx, nd, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		return nil // the kubelet updated it; the next Up poll does not retry, harmless
	}
	return err
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Down stops every kubelet, the CRI servers, the scheduler, the apiserver
// and etcd (by PID), unmounts the kubelets' mounts, restores the sysctls
// and removes the run dir if Up created it. Safe to call twice.
func (c *Cluster) Down() error {
	c.mu.Lock()
	if c.downed {
		c.mu.Unlock()
		return nil
	}
	c.downed = true
	exited := c.exited
	c.mu.Unlock()
	// Kubelets first, while their runtimes still answer; then the runtimes.
	var errs []error
	var kubelets, rest []Proc
	c.mu.Lock()
	allProcs := append([]Proc(nil), c.state.Procs...)
	c.mu.Unlock()
	for _, p := range allProcs {
		if len(p.Name) > 7 && p.Name[:8] == "kubelet-" {
			kubelets = append(kubelets, p)
		} else {
			rest = append(rest, p)
		}
	}
	for _, p := range kubelets {
		if err := stopLogged(p, exited[p.PID], c.log); err != nil {
			errs = append(errs, err)
		}
	}
	for _, n := range c.Nodes {
		if n.Runtime != nil {
			n.Runtime.Close()
		}
		if n.logind != nil {
			n.logind.close()
		}
	}
	// teardown skips the kubelets already stopped, and keeps the host
	// state held if one survived.
	st := *c.state
	if err := st.teardown(exited, c.log); err != nil {
		errs = append(errs, err)
	}
	err := errors.Join(errs...)
	if err != nil {
		fmt.Fprintf(c.log, "localcluster: teardown of %s incomplete: %v\n", c.RunDir, err)
	}
	return err
}

// featureGateArgs is the --feature-gates flag for gates ("" gives none).
func featureGateArgs(gates string) []string {
	if gates == "" {
		return nil
	}
	return []string{"--feature-gates=" + gates}
}

// KubeletProcess returns the PID of node i's current kubelet process and
// a channel closed when it exits, for whatever reason (nil if none was
// started).
func (c *Cluster) KubeletProcess(i int) (int, <-chan struct{}) {
	if i < 0 || i >= len(c.Nodes) {
		return 0, nil
	}
	p, ok := c.proc("kubelet-" + c.Nodes[i].Name)
	if !ok {
		return 0, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return p.PID, c.exited[p.PID]
}

// KubeletPanic returns the panic a kubelet's log ends with ("runtime
// error: ... at kuberuntime_manager.go:1138"), or "" if it shows none: the
// last "panic: " line and the first frame of the Kubernetes source after
// it. Only the log's last 256 KiB are read.
func KubeletPanic(log string) string {
	f, err := os.Open(log)
	if err != nil {
		return ""
	}
	defer f.Close()
	const tail = 256 << 10
	if st, err := f.Stat(); err == nil && st.Size() > tail {
		_, _ = f.Seek(st.Size()-tail, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	lines := strings.Split(string(b), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		msg, ok := strings.CutPrefix(lines[i], "panic: ")
		if !ok {
			continue
		}
		msg = strings.TrimSuffix(msg, " [recovered, repanicked]")
		for _, l := range lines[i+1:] {
			l = strings.TrimSpace(l)
			if j := strings.Index(l, "/k8s.io/kubernetes@"); j >= 0 && strings.Contains(l, ".go:") && !strings.Contains(l, "/runtime/") {
				if k := strings.Index(l[j:], "/pkg/"); k >= 0 {
					l = l[j+k+1:]
				}
				if sp := strings.IndexByte(l, ' '); sp >= 0 {
					l = l[:sp]
				}
				return msg + " at " + l
			}
		}
		return msg
	}
	return ""
}
