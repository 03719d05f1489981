package drive

import (
	"context"
	"time"

	"github.com/sidebench/sidebench/harness/behavior"
	"github.com/sidebench/sidebench/harness/scenario"
)

// DeleteGrace is the workload's deleteGrace in whole seconds for a delete
// call (nil: the pod's own grace).
func DeleteGrace(w *scenario.Workload) *int64 {
	if w.DeleteGrace == nil {
		return nil
	}
	g := int64(w.DeleteGrace.D() / time.Second)
	return &g
}

// AwaitEnd waits until a created pod should be deleted: its lifetime
// (drawn from the stream Seed(seed).Str(pod).Str("lifetime"), as on sim),
// or for a Job-style pod (job) its terminal phase (terminal closed) if
// that comes first; a pod without a lifetime lives until the horizon. It
// also returns when the pod is gone (done) or ctx ends; the caller
// deletes the pod only if ctx is still live.
func AwaitEnd(ctx context.Context, w *scenario.Workload, seed uint64, pod string, job bool, terminal, done <-chan struct{}) {
	var life <-chan time.Time
	if w.Lifetime != nil && !w.Lifetime.IsZero() && !w.Lifetime.IsNever() {
		t := time.NewTimer(w.Lifetime.Sample(behavior.Seed(seed).Str(pod).Str("lifetime").Rand()))
		defer t.Stop()
		life = t.C
	}
	if !job {
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
