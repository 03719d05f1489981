// Package backend is the interface every backend implements (sim, local,
// kube) and nothing else: the runner (harness/runner) drives trials
// through it without knowing which backend runs them, and the CLI's
// composition root picks the implementation.
package backend

import (
	"context"
	"time"

	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/trial"
)

// Backend runs one compiled trial and streams its history to sink:
// run.meta first, run.end last ("complete", or "partial" when ctx was
// cancelled).
type Backend interface {
	RunTrial(ctx context.Context, p *trial.Plan, sink history.Sink) (Stats, error)
}

// Stats is what a backend reports about a trial beyond its history.
type Stats struct {
	// Partial: the trial was cut short (cancelled, horizon on a live
	// backend); its history ends with run.end "partial".
	Partial bool
	// Elapsed is the wall time the trial took.
	Elapsed time.Duration
}

// PolicyFilter is implemented by backends that run only some policies
// (real kubelets implement kep753 and the Kubernetes gates, not the
// reference's alternative designs or bug replicas).
type PolicyFilter interface {
	// Supports reports whether the backend runs the policy; why says why
	// not.
	Supports(policy string) (ok bool, why string)
}

// Supports is the one policy filter: true unless b is a PolicyFilter that
// refuses the policy.
func Supports(b Backend, policy string) (bool, string) {
	if f, ok := b.(PolicyFilter); ok {
		return f.Supports(policy)
	}
	return true, ""
}
