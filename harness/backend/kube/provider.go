package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/envfuncs"
	"sigs.k8s.io/e2e-framework/third_party/kind"

	"github.com/sidebench/sidebench/harness/localcluster"
)

// Providers the backend can create a cluster with (--provider).
const (
	// ProviderKind creates a kind cluster through e2e-framework (needs the
	// kind binary and docker or podman) and loads the image archive.
	ProviderKind = "kind"
	// ProviderLocal is sidebench's local cluster with the containerd tier
	// (real containers; harness/localcluster): node-level fault fallbacks
	// are available.
	ProviderLocal = "local"
)

// ProvideOptions configure Provide.
type ProvideOptions struct {
	Provider string
	// ImageArchive is the agent image tarball (`make image`) loaded into
	// the nodes.
	ImageArchive string
	// Name of a kind cluster (default "sidebench").
	Name string
	// Nodes of a local cluster (default 1).
	Nodes int
	// KeepOnExit leaves a local cluster's processes running if this
	// process dies (Down still tears it down).
	KeepOnExit bool
	Log        io.Writer
	// OnUp is called with a local cluster's run dir once it is up (for a
	// pointer file that `sidebench cluster down` reads after a SIGKILL).
	OnUp func(runDir string)
}

// Provide creates a cluster for the backend. Its Down tears it down.
func Provide(ctx context.Context, o ProvideOptions) (*Cluster, error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.ImageArchive == "" {
		return nil, errors.New("kube backend: --provider needs the agent image archive (run `make image`, then --image-archive bin/sidebench-agent.tar)")
	}
	if _, err := os.Stat(o.ImageArchive); err != nil {
		return nil, fmt.Errorf("kube backend: image archive: %w (run `make image`)", err)
	}
	switch o.Provider {
	case ProviderLocal:
		if o.Nodes <= 0 {
			o.Nodes = 1
		}
		cl, err := localcluster.Up(ctx, localcluster.Config{Nodes: o.Nodes, Runtime: localcluster.RuntimeContainerd,
			ImageArchives: []string{o.ImageArchive}, Scheduler: true, Log: o.Log, KeepOnExit: o.KeepOnExit})
		if err != nil {
			return nil, err
		}
		if o.OnUp != nil {
			o.OnUp(cl.RunDir)
		}
		c := &Cluster{Kubeconfig: cl.Kubeconfig, Name: "local-containerd", Ops: cl, Down: cl.Down}
		for _, n := range cl.Nodes {
			c.Nodes = append(c.Nodes, n.Name)
		}
		return c, nil
	case ProviderKind:
		name := o.Name
		if name == "" {
			name = "sidebench"
		}
		// e2e-framework's envfuncs outside `go test` (ECOSYSTEM.md §1): the
		// provider shells out to the kind binary (installing it with `go
		// install` when missing) and needs docker or podman.
		cfg := envconf.New()
		var err error
		for _, step := range []func(context.Context, *envconf.Config) (context.Context, error){
			envfuncs.CreateCluster(kind.NewProvider(), name),
			envfuncs.LoadImageArchiveToCluster(name, o.ImageArchive),
		} {
			if ctx, err = step(ctx, cfg); err != nil {
				_, _ = envfuncs.DestroyCluster(name)(context.Background(), cfg)
				return nil, fmt.Errorf("kube backend: kind: %w", err)
			}
		}
		return &Cluster{Kubeconfig: cfg.KubeconfigFile(), Name: "kind", Down: func() error {
			_, err := envfuncs.DestroyCluster(name)(context.Background(), cfg)
			return err
		}}, nil
	}
	return nil, fmt.Errorf("kube backend: unknown provider %q (allowed: %s, %s)", o.Provider, ProviderKind, ProviderLocal)
}
