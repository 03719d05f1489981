package cli

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/sidebench/sidebench/harness/backend"
	"github.com/sidebench/sidebench/harness/backend/local"
	"github.com/sidebench/sidebench/harness/localcluster"
)

// newLocalBackend is the local backend with the flags' settings (its
// cluster registers itself in the host record that `cluster status` and
// `cluster down` read).
func newLocalBackend(f *backendFlags, log io.Writer) backend.Backend {
	return local.NewLazy(local.Options{Nodes: f.nodes, Log: log, KeepOnExit: f.keep, Horizon: f.horizon, FeatureGates: f.featureGates, ReapOrphans: true})
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
  cluster down [DIR...]  tear down clusters (default: those whose owner process
                         is gone, e.g. after a SIGKILL, and that were not
                         started with --keep; the others are listed; --all:
                         every one)

'cluster up' and 'run --backend local' first tear down, as a bare 'cluster
down' would, the clusters left by processes that are gone: what a killed
run left lasts until the next local run at most.`,
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
			if nodes < 1 {
				// As run refuses it (localcluster.Up would start one
				// kubelet after saying "0 kubelets").
				return usageErr("--nodes must be >= 1")
			}
			if _, err := localcluster.ReapOrphans(streams.ErrOut); err != nil {
				fmt.Fprintf(streams.ErrOut, "sidebench: warning: %v\n", err)
			}
			t0 := time.Now()
			fmt.Fprintf(streams.ErrOut, "sidebench: starting a local cluster (%d kubelets) ...\n", nodes)
			c, err := localcluster.Up(ctx, localcluster.Config{Nodes: nodes, Log: streams.ErrOut, Runtime: runtime,
				ImageArchives: archives, Scheduler: runtime == localcluster.RuntimeContainerd})
			if fe := (*localcluster.FitError)(nil); errors.As(err, &fe) {
				return &exitError{code: ExitUsage, err: err}
			}
			if err != nil {
				return asInternal(err)
			}
			defer func() {
				c.Down()
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
		Short: "List the local clusters on this machine",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			hs, err := localcluster.Clusters()
			if err != nil {
				return asInternal(err)
			}
			if len(hs) == 0 {
				fmt.Fprintln(streams.Out, "no local cluster")
				return nil
			}
			for _, h := range hs {
				fmt.Fprintf(streams.Out, "%s  %d node(s), %s\n", h.RunDir, h.Nodes, ownerText(h))
				st, err := localcluster.LoadState(h.RunDir)
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
			downDir := func(d string) {
				if err := localcluster.DownDir(d, streams.ErrOut); err != nil {
					fmt.Fprintf(streams.ErrOut, "sidebench: %s: %v\n", d, err)
					failed = true
					return
				}
				fmt.Fprintf(streams.Out, "down %s\n", d)
			}
			for _, d := range args {
				downDir(d)
			}
			if len(args) == 0 {
				hs, err := localcluster.Clusters()
				if err != nil {
					return asInternal(err)
				}
				n := 0
				for _, h := range hs {
					// A cluster someone still runs, or one started to be
					// kept, is not ours to remove: listed, not touched.
					if !all && !h.Orphaned() {
						fmt.Fprintf(streams.Out, "left %s (%d node(s), %s): 'sidebench cluster down %s' removes it\n", h.RunDir, h.Nodes, ownerText(h), h.RunDir)
						continue
					}
					downDir(h.RunDir)
					n++
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
	down.Flags().BoolVar(&all, "all", false, "also tear down clusters whose owner process still runs, and those started with --keep")
	cmd.AddCommand(down)
	return cmd
}

// ownerText says who owns a cluster: its process, running or gone, and
// whether it was started to be kept.
func ownerText(h localcluster.Holder) string {
	owner := fmt.Sprintf("owner pid %d running", h.OwnerPID)
	if !h.OwnerAlive() {
		owner = fmt.Sprintf("owner pid %d gone", h.OwnerPID)
	}
	if h.Keep {
		owner += ", kept (--keep)"
	}
	return owner + ", up since " + h.Started.Format(time.RFC3339)
}
