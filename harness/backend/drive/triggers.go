package drive

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/sidebench/sidebench/harness/faults"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/trial"
)

// Triggers fires a plan's on-container faults (exact timing relative to a
// container event, issue 16 D) from the events a live backend observes:
// there is no virtual clock to hook them into, so the backend hands every
// event it records to Observe and runs each returned firing at its due
// time on its clock. The schedule and target streams are the plan's
// (trial.Plan.FaultStreams), as on sim.
type Triggers struct {
	p     *trial.Plan
	mu    sync.Mutex
	idx   []int // plan indexes of the on-container faults
	fired []int
	sched []*rand.Rand
	pick  []*rand.Rand
}

// NewTriggers returns the on-container faults of p.
func NewTriggers(p *trial.Plan) *Triggers {
	t := &Triggers{p: p}
	for i := range p.Faults {
		if p.Faults[i].When.Kind != faults.OnContainer {
			continue
		}
		s, k := p.FaultStreams(i)
		t.idx = append(t.idx, i)
		t.fired = append(t.fired, 0)
		t.sched = append(t.sched, s)
		t.pick = append(t.pick, k)
	}
	return t
}

// Any reports whether the plan has on-container faults.
func (t *Triggers) Any() bool { return len(t.idx) > 0 }

// Due is a firing and when it is due (offset from the trial start).
type Due struct {
	Firing
	At time.Duration
}

// Observe returns the firings that event e, recorded at offset at of the
// trial, triggers: e must be a container event of a pod of workload w
// (nil: not one of the trial's pods). Each firing carries the pod it is
// for (Firing.Pod).
func (t *Triggers) Observe(e *history.Event, at time.Duration, w *faults.Workload) []Due {
	if len(t.idx) == 0 || w == nil || e.Pod == "" || e.Container == "" {
		return nil
	}
	ce := faults.EventOfKind(e.Kind.String(), e.Value)
	if ce == faults.EventNone {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Due
	for j, i := range t.idx {
		sp := &t.p.Faults[i]
		if !sp.Where.MatchPod(w) || !sp.When.TriggersOn(e.Container, ce, at, t.fired[j], t.sched[j]) {
			continue
		}
		out = append(out, Due{Firing: Firing{Spec: sp, Index: i, Label: sp.Label(i), N: t.fired[j], Rand: t.pick[j], Pod: e.Pod}, At: at + sp.When.Delay})
		t.fired[j]++
	}
	return out
}
