package drive

import (
	"context"
	"time"

	"k8s.io/utils/clock"

	"github.com/sidebench/sidebench/harness/trial"
)

// DeleteGrace is the workload's deleteGrace in whole seconds for a delete
// call (nil: the pod's own grace).
func DeleteGrace(w *trial.Workload) *int64 {
	if w.DeleteGrace == nil {
		return nil
	}
	g := int64(*w.DeleteGrace / time.Second)
	return &g
}

// AwaitEnd waits on clk until a created pod should be deleted: its
// lifetime from creation (trial.Plan.Lifetime, as on sim), or for a
// Job-style pod its terminal phase (terminal closed) if that comes first;
// a pod without a lifetime lives until the horizon. It also returns when
// the pod is gone (done) or ctx ends; the caller deletes the pod only if
// ctx is still live.
func AwaitEnd(ctx context.Context, clk clock.Clock, p *trial.Plan, w int, pod string, terminal, done <-chan struct{}) {
	var life <-chan time.Time
	if d, ok := p.Lifetime(w, pod); ok {
		t := clk.NewTimer(d)
		defer t.Stop()
		life = t.C()
	}
	if !p.Workloads[w].Job {
		// Deleted at its lifetime only. A Job-style pod is deleted once
		// terminal, or at its lifetime if it has one (as on sim): a pod
		// whose main is retried by a restart rule may never end.
		terminal = nil
	}
	select {
	case <-terminal:
	case <-life:
	case <-done:
	case <-ctx.Done():
	}
}
