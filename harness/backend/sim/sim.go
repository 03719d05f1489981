// Package sim is the sim backend: it adapts a compiled trial (harness/trial)
// to the discrete-event engine (harness/sim), which knows nothing of
// scenario files or Kubernetes types.
package sim

import (
	"context"
	"time"

	"github.com/sidebench/sidebench/harness/backend"
	"github.com/sidebench/sidebench/harness/history"
	engine "github.com/sidebench/sidebench/harness/sim"
	"github.com/sidebench/sidebench/harness/trial"
)

// Backend runs trials in the embedded simulator. The zero value is ready.
type Backend struct {
	// Version is written to run.meta (the sidebench build).
	Version string
}

// Config returns the engine's configuration of a plan.
func Config(p *trial.Plan, version string) *engine.Config {
	cfg := &engine.Config{
		Scenario:     p.Scenario,
		ScenarioHash: p.ScenarioHash,
		Version:      version,
		Cluster:      engine.Cluster{Nodes: p.Nodes, PodsPerNode: p.PodsPerNode},
		Gates:        p.Gates,
		Stop:         engine.Stop{MaxDuration: p.Horizon},
		Faults:       p.Faults,
	}
	for i := range p.Workloads {
		w := &p.Workloads[i]
		sw := engine.Workload{Name: w.Name, Namespace: w.Namespace, Labels: w.Labels, Spec: w.Spec, Count: w.Count,
			Arrival: w.Arrival, Lifetime: w.Lifetime}
		if w.DeleteGrace != nil {
			sw.DeleteGrace = *w.DeleteGrace
		}
		for _, b := range w.Behaviors {
			sw.Behavior = append(sw.Behavior, engine.ContainerBehavior{Container: b.Container, Behavior: b.Behavior, Wiring: b.Wiring})
		}
		cfg.Workloads = append(cfg.Workloads, sw)
	}
	return cfg
}

// RunTrial simulates the trial.
func (b Backend) RunTrial(ctx context.Context, p *trial.Plan, sink history.Sink) (backend.Stats, error) {
	t0 := time.Now()
	res, err := engine.RunTrial(ctx, Config(p, b.Version), p.Seed, p.Number, sink)
	return backend.Stats{Partial: res.Partial, Elapsed: time.Since(t0)}, err
}
