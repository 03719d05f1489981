package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/sidebench/sidebench/harness/backend"
	"github.com/sidebench/sidebench/harness/backend/local"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/localcluster"
	"github.com/sidebench/sidebench/harness/trial"
)

// localOptions are the local backend's command-line settings.
type localOptions struct {
	nodes   int
	keep    bool
	horizon time.Duration
	log     io.Writer
	// featureGates is --feature-gates for the apiserver and kubelets:
	// the Kubernetes gates the run's policies name (local.FeatureGates).
	featureGates string
}

// localBackend brings the cluster up at its first trial (so that a run
// that fails validation never starts one) and takes it down in Close.
type localBackend struct {
	opts localOptions
	mu   sync.Mutex
	b    *local.Backend
	err  error
	ptr  string
}

func newLocalBackend(o localOptions) *localBackend { return &localBackend{opts: o} }

// Supports reports whether the backend runs a policy (the real kubelet
// implements kep753 only).
func (l *localBackend) Supports(policy string) (bool, string) {
	if local.Supports(policy) {
		return true, ""
	}
	return false, "the local backend runs real kubelets, which implement kep753 and the Kubernetes gates (no alternative designs or bug replicas)"
}

func (l *localBackend) up(ctx context.Context) (*local.Backend, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b != nil || l.err != nil {
		return l.b, l.err
	}
	log := l.opts.log
	if log == nil {
		log = io.Discard
	}
	gates := ""
	if l.opts.featureGates != "" {
		gates = ", --feature-gates=" + l.opts.featureGates
	}
	fmt.Fprintf(log, "sidebench: starting a local cluster (%d kubelets, Kubernetes %s%s) ...\n", l.opts.nodes, localcluster.DefaultVersion, gates)
	t0 := time.Now()
	b, err := local.New(ctx, local.Options{Nodes: l.opts.nodes, Log: log, KeepOnExit: l.opts.keep, Horizon: l.opts.horizon,
		FeatureGates: l.opts.featureGates,
		OnUp:         func(c *localcluster.Cluster) { l.ptr = writeClusterPointer(c.RunDir) }})
	if err != nil {
		l.err = fmt.Errorf("local backend: %w", err)
		return nil, l.err
	}
	fmt.Fprintf(log, "sidebench: local cluster up in %s (run dir %s)\n", time.Since(t0).Round(time.Millisecond), b.Cluster().RunDir)
	l.b = b
	return b, nil
}

func (l *localBackend) RunTrial(ctx context.Context, t *trial.Plan, sink history.Sink) (backend.Stats, error) {
	b, err := l.up(ctx)
	if err != nil {
		return backend.Stats{}, err
	}
	st, err := b.RunTrial(ctx, t, sink)
	return backend.Stats{Partial: st.Partial, Elapsed: st.Elapsed}, err
}

// Close takes the cluster down unless --keep.
func (l *localBackend) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b == nil {
		return nil
	}
	log := l.opts.log
	if log == nil {
		log = io.Discard
	}
	if l.opts.keep {
		fmt.Fprintf(log, "sidebench: --keep: cluster left in %s (kubeconfig %s); 'sidebench cluster down %s' removes it\n",
			l.b.Cluster().RunDir, l.b.Cluster().Kubeconfig, l.b.Cluster().RunDir)
		return nil
	}
	t0 := time.Now()
	err := l.b.Close()
	if l.ptr != "" {
		os.Remove(l.ptr)
	}
	fmt.Fprintf(log, "sidebench: local cluster down in %s\n", time.Since(t0).Round(time.Millisecond))
	l.b = nil
	return err
}

// Cluster pointer files: ~/.cache/sidebench/clusters/<pid>.json name the
// run dir of every cluster a sidebench process started, so that `cluster
// down` finds them after that process was SIGKILLed.
type clusterPointer struct {
	PID    int    `json:"pid"`
	RunDir string `json:"runDir"`
}

func clustersDir() string {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "sidebench", "clusters")
}

func writeClusterPointer(runDir string) string {
	dir := clustersDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return ""
	}
	p := filepath.Join(dir, strconv.Itoa(os.Getpid())+".json")
	b, _ := json.Marshal(clusterPointer{PID: os.Getpid(), RunDir: runDir})
	if os.WriteFile(p, b, 0o644) != nil {
		return ""
	}
	return p
}

func readClusterPointers() (map[string]clusterPointer, error) {
	ents, err := os.ReadDir(clustersDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]clusterPointer{}
	for _, e := range ents {
		p := filepath.Join(clustersDir(), e.Name())
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var cp clusterPointer
		if json.Unmarshal(b, &cp) == nil {
			out[p] = cp
		}
	}
	return out, nil
}

func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func newClusterCommand(streams IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Build, start, inspect and tear down local clusters (the local backend)",
		Long: `The local backend runs real kubelets (Kubernetes ` + localcluster.DefaultVersion + `) against
sidebench's CRI server, with etcd and kube-apiserver on loopback (docs/local-backend.md).

  cluster build          build the binaries into the versioned cache (once)
  cluster up             start a cluster and keep it up until Ctrl-C
  cluster status         list the clusters sidebench started and their processes
  cluster down [DIR...]  tear down clusters (default: those whose sidebench
                         process is gone, e.g. after a SIGKILL; --all: every one)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "build",
		Short: "Build (or reuse) the Kubernetes binaries",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v := localcluster.DefaultVersion
			fmt.Fprintf(streams.ErrOut, "sidebench: binaries for Kubernetes %s in %s\n", v, localcluster.DefaultCacheDir(v))
			b, err := localcluster.Build(cmd.Context(), v, localcluster.DefaultCacheDir(v), streams.ErrOut)
			if err != nil {
				return asInternal(err)
			}
			fmt.Fprintln(streams.Out, b.Dir)
			return nil
		},
	})
	var (
		nodes    int
		runtime  string
		archives []string
	)
	up := &cobra.Command{
		Use:   "up",
		Short: "Start a local cluster in the foreground (Ctrl-C tears it down)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			t0 := time.Now()
			fmt.Fprintf(streams.ErrOut, "sidebench: starting a local cluster (%d kubelets) ...\n", nodes)
			c, err := localcluster.Up(ctx, localcluster.Config{Nodes: nodes, Log: streams.ErrOut, Runtime: runtime,
				ImageArchives: archives, Scheduler: runtime == localcluster.RuntimeContainerd})
			if err != nil {
				return asInternal(err)
			}
			ptr := writeClusterPointer(c.RunDir)
			defer func() {
				c.Down()
				if ptr != "" {
					os.Remove(ptr)
				}
				fmt.Fprintln(streams.ErrOut, "sidebench: cluster down")
			}()
			fmt.Fprintf(streams.Out, "up in %s\nserver     %s\nkubeconfig %s\nrun dir    %s\n", time.Since(t0).Round(time.Millisecond), c.Server, c.Kubeconfig, c.RunDir)
			for _, n := range c.Nodes {
				fmt.Fprintf(streams.Out, "node       %s (%s %s)\n", n.Name, c.Runtime(), n.CRISocket)
			}
			fmt.Fprintln(streams.ErrOut, "sidebench: Ctrl-C to tear it down")
			<-ctx.Done()
			return nil
		},
	}
	up.Flags().IntVar(&nodes, "nodes", 3, "number of kubelets")
	up.Flags().StringVar(&runtime, "runtime", localcluster.RuntimeSidebench, "container runtime: sidebench (the local backend's CRI server) or containerd (real containers, for --backend kube --kubeconfig; hack/containerd-deps.sh installs it)")
	up.Flags().StringArrayVar(&archives, "image-archive", nil, "with --runtime containerd: OCI image tarball imported into every node (repeatable; make image builds bin/sidebench-agent.tar)")
	cmd.AddCommand(up)
	cmd.AddCommand(&cobra.Command{
		Use:   "status",
		Short: "List the local clusters sidebench started",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ptrs, err := readClusterPointers()
			if err != nil {
				return asInternal(err)
			}
			if len(ptrs) == 0 {
				fmt.Fprintln(streams.Out, "no local cluster")
				return nil
			}
			for _, cp := range ptrs {
				owner := "running"
				if !pidAlive(cp.PID) {
					owner = "gone (run 'sidebench cluster down')"
				}
				fmt.Fprintf(streams.Out, "%s  owner pid %d %s\n", cp.RunDir, cp.PID, owner)
				st, err := localcluster.LoadState(cp.RunDir)
				if err != nil {
					fmt.Fprintf(streams.Out, "  no state: %v\n", err)
					continue
				}
				for _, p := range st.Procs {
					alive := "dead"
					if p.Alive() {
						alive = "alive"
					}
					fmt.Fprintf(streams.Out, "  %-28s pid %-8d %s\n", p.Name, p.PID, alive)
				}
			}
			return nil
		},
	})
	var all bool
	down := &cobra.Command{
		Use:   "down [DIR...]",
		Short: "Tear down local clusters from their state files",
		RunE: func(cmd *cobra.Command, args []string) error {
			var failed bool
			for _, d := range args {
				if err := localcluster.DownDir(d, streams.ErrOut); err != nil {
					fmt.Fprintf(streams.ErrOut, "sidebench: %s: %v\n", d, err)
					failed = true
					continue
				}
				fmt.Fprintf(streams.Out, "down %s\n", d)
				// Forget the pointer naming it, if any.
				if ptrs, err := readClusterPointers(); err == nil {
					for p, cp := range ptrs {
						if filepath.Clean(cp.RunDir) == filepath.Clean(d) {
							os.Remove(p)
						}
					}
				}
			}
			if len(args) == 0 {
				ptrs, err := readClusterPointers()
				if err != nil {
					return asInternal(err)
				}
				n := 0
				for p, cp := range ptrs {
					if pidAlive(cp.PID) && cp.PID != os.Getpid() && !all {
						fmt.Fprintf(streams.ErrOut, "sidebench: %s: owner pid %d is running; skipped (--all to force)\n", cp.RunDir, cp.PID)
						continue
					}
					if _, err := os.Stat(filepath.Join(cp.RunDir, localcluster.StateFile)); err == nil {
						if err := localcluster.DownDir(cp.RunDir, streams.ErrOut); err != nil {
							fmt.Fprintf(streams.ErrOut, "sidebench: %s: %v\n", cp.RunDir, err)
							failed = true
							continue
						}
					}
					os.Remove(p)
					n++
					fmt.Fprintf(streams.Out, "down %s\n", cp.RunDir)
				}
				if n == 0 {
					fmt.Fprintln(streams.Out, "nothing to tear down")
				}
			}
			if failed {
				return silent(ExitFailed)
			}
			return nil
		},
	}
	down.Flags().BoolVar(&all, "all", false, "also tear down clusters whose sidebench process still runs")
	cmd.AddCommand(down)
	return cmd
}
