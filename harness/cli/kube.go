package cli

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/sidebench/sidebench/harness/backend/kube"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/scenario"
)

// kubeOptions are the kube backend's command-line settings.
type kubeOptions struct {
	kubeconfig   string
	context      string
	provider     string
	image        string
	altImage     string
	imageArchive string
	machines     map[string]string
	nodes        int
	horizon      time.Duration
	log          io.Writer
}

var kubeOpts kubeOptions

func (o *kubeOptions) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&o.kubeconfig, "kubeconfig", "", "kube backend: kubeconfig of an existing cluster (default: $KUBECONFIG, then ~/.kube/config)")
	fl.StringVar(&o.context, "context", "", "kube backend: kubeconfig context (default: the current context)")
	fl.StringVar(&o.provider, "provider", "", "kube backend: create the cluster instead of using an existing one: kind (e2e-framework; needs kind and docker) or local (sidebench's local cluster with containerd; needs root)")
	fl.StringVar(&o.image, "image", kube.DefaultImage, "kube backend: the agent image every container runs")
	fl.StringVar(&o.altImage, "alt-image", kube.DefaultAltImage, "kube backend: the same agent under another name, which image-change faults switch a container to and back")
	fl.StringVar(&o.imageArchive, "image-archive", "bin/sidebench-agent.tar", "kube backend with --provider: the agent image tarball loaded into the nodes (make image)")
	fl.StringToStringVar(&o.machines, "physical-machine", nil, "kube backend with Chaos Mesh: NODE=NAMESPACE/NAME of the chaosd PhysicalMachine on each node, for kubelet-crash and runtime-restart (repeatable or comma-separated)")
}

// kubeBackend connects (or creates the cluster) at its first trial, so
// that a run that fails validation touches no cluster, and deletes
// everything the run created in Close.
type kubeBackend struct {
	opts kubeOptions
	mu   sync.Mutex
	b    *kube.Backend
	err  error
}

func newKubeBackend(o kubeOptions) *kubeBackend { return &kubeBackend{opts: o} }

// Supports reports whether the backend runs a policy (a real cluster runs
// kep753 only).
func (k *kubeBackend) Supports(policy string) bool { return kube.Supports(policy) }

func (k *kubeBackend) up(ctx context.Context) (*kube.Backend, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.b != nil || k.err != nil {
		return k.b, k.err
	}
	log := k.opts.log
	if log == nil {
		log = io.Discard
	}
	var cl *kube.Cluster
	if k.opts.provider != "" {
		fmt.Fprintf(log, "sidebench: creating a %s cluster for the kube backend ...\n", k.opts.provider)
		t0 := time.Now()
		c, err := kube.Provide(ctx, kube.ProvideOptions{Provider: k.opts.provider, ImageArchive: k.opts.imageArchive,
			Nodes: k.opts.nodes, Log: log})
		if err != nil {
			k.err = fmt.Errorf("kube backend: %w", err)
			return nil, k.err
		}
		fmt.Fprintf(log, "sidebench: %s cluster up in %s (kubeconfig %s)\n", k.opts.provider, time.Since(t0).Round(time.Millisecond), c.Kubeconfig)
		cl = c
	}
	b, err := kube.New(ctx, kube.Options{Kubeconfig: k.opts.kubeconfig, Context: k.opts.context, Cluster: cl,
		Image: k.opts.image, AltImage: k.opts.altImage, Horizon: k.opts.horizon, Log: log, PhysicalMachines: k.opts.machines})
	if err != nil {
		if cl != nil && cl.Down != nil {
			_ = cl.Down()
		}
		k.err = err
		return nil, err
	}
	faults := "no Chaos Mesh: faults use the fallbacks (oom-kill through the agent"
	if cl != nil && cl.Ops != nil {
		faults += "; kubelet-crash and runtime-restart on the nodes"
	}
	faults += ")"
	if b.ChaosMesh() {
		faults = "faults through Chaos Mesh"
	}
	fmt.Fprintf(log, "sidebench: kube backend run %s (namespaces sb-%s-t*, label %s=%s); %s\n", b.RunID(), b.RunID(), kube.LabelRun, b.RunID(), faults)
	k.b = b
	return b, nil
}

func (k *kubeBackend) RunTrial(ctx context.Context, t scenario.Trial, sink history.Sink) (TrialStats, error) {
	b, err := k.up(ctx)
	if err != nil {
		return TrialStats{}, err
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			if k.opts.log != nil {
				fmt.Fprintf(k.opts.log, "sidebench: interrupted: deleting what kube run %s created (its pods terminate gracefully, at most 90 s); Ctrl-C again abandons them: kubectl delete namespace -l %s=%s\n",
					b.RunID(), kube.LabelRun, b.RunID())
			}
		case <-done:
		}
	}()
	st, err := b.RunTrial(ctx, t, sink)
	if k.opts.log != nil {
		if st.LinesLost > 0 {
			fmt.Fprintf(k.opts.log, "sidebench: %s: the agent log of %d container attempt(s) never reached the backend: their events come from the pod status alone\n", t, st.LinesLost)
		}
		if st.LateStatus > 0 {
			fmt.Fprintf(k.opts.log, "sidebench: %s: %d pod status change(s) reached the API more than 2 s after the kubelet decided them (at most %s): the cluster is overloaded; they are placed at their lastTransitionTime (±1 s)\n",
				t, st.LateStatus, st.StatusLagMax.Round(time.Millisecond))
		}
	}
	return TrialStats{Partial: st.Partial}, err
}

// Close deletes everything the run created (also after Ctrl-C: the run's
// context is cancelled, the trial cleans up its namespace, then this) and
// takes down a cluster the backend created.
func (k *kubeBackend) Close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.b == nil {
		return nil
	}
	t0 := time.Now()
	err := k.b.Close()
	if k.opts.log != nil {
		fmt.Fprintf(k.opts.log, "sidebench: kube backend cleaned up in %s\n", time.Since(t0).Round(time.Millisecond))
	}
	k.b = nil
	return err
}
