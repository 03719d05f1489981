package cli

import (
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/sidebench/sidebench/harness/backend"
	"github.com/sidebench/sidebench/harness/backend/kube"
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

// newKubeBackend is the kube backend with the flags' settings (a local
// cluster it creates registers itself in the host record).
func newKubeBackend(o kubeOptions) backend.Backend {
	return kube.NewLazy(kube.Options{Kubeconfig: o.kubeconfig, Context: o.context, Image: o.image, AltImage: o.altImage,
		Horizon: o.horizon, Log: o.log, PhysicalMachines: o.machines},
		kube.ProvideOptions{Provider: o.provider, ImageArchive: o.imageArchive, Nodes: o.nodes, Log: o.log})
}
