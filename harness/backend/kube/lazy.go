package kube

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/sidebench/sidebench/harness/backend"
	"github.com/sidebench/sidebench/harness/history"
	trialplan "github.com/sidebench/sidebench/harness/trial"
	"github.com/sidebench/sidebench/reference-impl/api"
)

// Lazy is the kube backend as the runner sees it (harness/backend): it
// connects (or creates the cluster, with Provide) at its first trial, so
// that a run that fails validation touches no cluster, and deletes
// everything the run created in Close.
type Lazy struct {
	opts Options
	// Provide, if its Provider is set, creates the cluster first.
	Provide ProvideOptions
	// OnDown is called once Close is done (the CLI removes its pointer
	// file).
	OnDown func()
	mu     sync.Mutex
	b      *Backend
	err    error
}

// NewLazy returns a kube backend that connects on first use.
func NewLazy(o Options, p ProvideOptions) *Lazy {
	if o.Log == nil {
		o.Log = io.Discard
	}
	if p.Log == nil {
		p.Log = o.Log
	}
	return &Lazy{opts: o, Provide: p}
}

// Supports reports whether the backend runs a policy.
func (k *Lazy) Supports(policy string) (bool, string) {
	if Supports(policy) {
		return true, ""
	}
	if g, err := api.ParseGates(policy); err == nil && g.IsWorkaround() {
		return false, "sidebench-agent does not execute the workarounds' wiring (a wrapper's wait, a quit signal, hooks that poll): run workaround policies on sim or local (docs/workarounds.md)"
	}
	return false, "the kube backend runs real kubelets, which implement kep753 (no alternative designs, bug replicas or gates)"
}

func (k *Lazy) up(ctx context.Context) (*Backend, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.b != nil || k.err != nil {
		return k.b, k.err
	}
	log := k.opts.Log
	o := k.opts
	if k.Provide.Provider != "" {
		fmt.Fprintf(log, "sidebench: creating a %s cluster for the kube backend ...\n", k.Provide.Provider)
		t0 := time.Now()
		c, err := Provide(ctx, k.Provide)
		if err != nil {
			k.err = fmt.Errorf("kube backend: %w", err)
			return nil, k.err
		}
		fmt.Fprintf(log, "sidebench: %s cluster up in %s (kubeconfig %s)\n", k.Provide.Provider, time.Since(t0).Round(time.Millisecond), c.Kubeconfig)
		o.Cluster = c
	}
	b, err := New(ctx, o)
	if err != nil {
		if o.Cluster != nil && o.Cluster.Down != nil {
			_ = o.Cluster.Down()
		}
		k.err = err
		return nil, err
	}
	faults := "no Chaos Mesh: faults use the fallbacks (oom-kill through the agent"
	if o.Cluster != nil && o.Cluster.Ops != nil {
		faults += "; kubelet-crash and runtime-restart on the nodes"
	}
	faults += ")"
	if b.ChaosMesh() {
		faults = "faults through Chaos Mesh"
	}
	fmt.Fprintf(log, "sidebench: kube backend run %s (namespaces sb-%s-t*, label %s=%s); %s\n", b.RunID(), b.RunID(), LabelRun, b.RunID(), faults)
	k.b = b
	return b, nil
}

// RunTrial runs one trial, connecting first if needed.
func (k *Lazy) RunTrial(ctx context.Context, p *trialplan.Plan, sink history.Sink) (backend.Stats, error) {
	b, err := k.up(ctx)
	if err != nil {
		return backend.Stats{}, err
	}
	log := k.opts.Log
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			fmt.Fprintf(log, "sidebench: interrupted: deleting what kube run %s created (its pods terminate gracefully, at most 90 s); Ctrl-C again abandons them: kubectl delete namespace -l %s=%s\n",
				b.RunID(), LabelRun, b.RunID())
		case <-done:
		}
	}()
	st, err := b.RunTrial(ctx, p, sink)
	if st.LinesLost > 0 {
		fmt.Fprintf(log, "sidebench: %s: the agent log of %d container attempt(s) never reached the backend: their events come from the pod status alone\n", p, st.LinesLost)
	}
	if st.LateStatus > 0 {
		fmt.Fprintf(log, "sidebench: %s: %d pod status change(s) reached the API more than 2 s after the kubelet decided them (at most %s): the cluster is overloaded; they are placed at their lastTransitionTime (±1 s)\n",
			p, st.LateStatus, st.StatusLagMax.Round(time.Millisecond))
	}
	return backend.Stats{Partial: st.Partial, Elapsed: st.Elapsed}, err
}

// Close deletes everything the run created (also after Ctrl-C: the run's
// context is cancelled, the trial cleans up its namespace, then this) and
// takes down a cluster the backend created.
func (k *Lazy) Close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.b == nil {
		return nil
	}
	t0 := time.Now()
	err := k.b.Close()
	if k.OnDown != nil {
		k.OnDown()
	}
	fmt.Fprintf(k.opts.Log, "sidebench: kube backend cleaned up in %s\n", time.Since(t0).Round(time.Millisecond))
	k.b = nil
	return err
}
