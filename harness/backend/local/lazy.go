package local

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/sidebench/sidebench/harness/backend"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/localcluster"
	trialplan "github.com/sidebench/sidebench/harness/trial"
)

// Lazy is the local backend as the runner sees it (harness/backend): it
// brings the cluster up at its first trial, so that a run that fails
// validation never starts one, and takes it down in Close (unless
// KeepOnExit).
type Lazy struct {
	opts Options
	// OnDown is called after the cluster went down (the CLI removes its
	// pointer file).
	OnDown func()
	mu     sync.Mutex
	b      *Backend
	err    error
}

// NewLazy returns a local backend that starts its cluster on first use.
func NewLazy(o Options) *Lazy {
	if o.Log == nil {
		o.Log = io.Discard
	}
	return &Lazy{opts: o}
}

// Supports reports whether the backend runs a policy.
func (l *Lazy) Supports(policy string) (bool, string) {
	if Supports(policy) {
		return true, ""
	}
	return false, "the local backend runs real kubelets, which implement kep753 and the Kubernetes gates (no alternative designs or bug replicas)"
}

func (l *Lazy) up(ctx context.Context) (*Backend, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b != nil || l.err != nil {
		return l.b, l.err
	}
	gates := ""
	if l.opts.FeatureGates != "" {
		gates = ", --feature-gates=" + l.opts.FeatureGates
	}
	nodes := l.opts.Nodes
	if nodes <= 0 {
		nodes = 3
	}
	if l.opts.ReapOrphans {
		// What a killed run left is not a reason to fail this one: the
		// error names the cluster and the command that retries it.
		if _, err := localcluster.ReapOrphans(l.opts.Log); err != nil {
			fmt.Fprintf(l.opts.Log, "sidebench: warning: %v\n", err)
		}
	}
	fmt.Fprintf(l.opts.Log, "sidebench: starting a local cluster (%d kubelets, Kubernetes %s%s) ...\n", nodes, localcluster.DefaultVersion, gates)
	t0 := time.Now()
	b, err := New(ctx, l.opts)
	if err != nil {
		l.err = fmt.Errorf("local backend: %w", err)
		return nil, l.err
	}
	fmt.Fprintf(l.opts.Log, "sidebench: local cluster up in %s (run dir %s)\n", time.Since(t0).Round(time.Millisecond), b.Cluster().RunDir)
	l.b = b
	return b, nil
}

// RunTrial runs one trial, starting the cluster first if needed.
func (l *Lazy) RunTrial(ctx context.Context, p *trialplan.Plan, sink history.Sink) (backend.Stats, error) {
	b, err := l.up(ctx)
	if err != nil {
		return backend.Stats{}, err
	}
	st, err := b.RunTrial(ctx, p, sink)
	return backend.Stats{Partial: st.Partial, Elapsed: st.Elapsed}, err
}

// Close takes the cluster down unless KeepOnExit.
func (l *Lazy) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b == nil {
		return nil
	}
	if l.opts.KeepOnExit {
		fmt.Fprintf(l.opts.Log, "sidebench: --keep: cluster left in %s (kubeconfig %s); 'sidebench cluster down %s' removes it\n",
			l.b.Cluster().RunDir, l.b.Cluster().Kubeconfig, l.b.Cluster().RunDir)
		return nil
	}
	t0 := time.Now()
	err := l.b.Close()
	if l.OnDown != nil {
		l.OnDown()
	}
	fmt.Fprintf(l.opts.Log, "sidebench: local cluster down in %s\n", time.Since(t0).Round(time.Millisecond))
	l.b = nil
	return err
}
