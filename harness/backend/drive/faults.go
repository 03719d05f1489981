package drive

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sidebench/sidebench/harness/faults"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/trial"
	"k8s.io/utils/clock"
)

// FaultLog numbers a trial's fault firings, writes their events through
// Emit and counts the firings that took effect and those that could not.
type FaultLog struct {
	Emit func(history.Event)

	mu                  sync.Mutex
	fid                 uint32
	applied, notApplied int
}

// NewID returns the next fault instance ID.
func (f *FaultLog) NewID() uint32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fid++
	return f.fid
}

// Event writes one fault.* event.
func (f *FaultLog) Event(k history.Kind, sp *faults.Spec, fid uint32, node, pod, c, target, msg string) {
	f.Emit(history.Event{Kind: k, Fault: sp.Kind.String(), FaultID: fid, Node: node, Pod: pod, Container: c, Target: target, Msg: msg})
}

// NotApplied writes a firing that could not take effect, with why.
func (f *FaultLog) NotApplied(sp *faults.Spec, label, node, pod, c, why string) {
	f.mu.Lock()
	f.notApplied++
	f.mu.Unlock()
	f.Event(history.FaultNotApplied, sp, f.NewID(), node, pod, c, "", label+": "+why)
}

// Ended writes that instance fid, which began, could not take effect
// (why), and counts it as NotApplied does.
func (f *FaultLog) Ended(sp *faults.Spec, fid uint32, node, pod, c, target, why string) {
	f.mu.Lock()
	f.notApplied++
	f.mu.Unlock()
	f.Event(history.FaultNotApplied, sp, fid, node, pod, c, target, why)
}

// Applied counts a firing whose effect was verified.
func (f *FaultLog) Applied() {
	f.mu.Lock()
	f.applied++
	f.mu.Unlock()
}

// Counts returns the firings applied and not applied so far.
func (f *FaultLog) Counts() (applied, notApplied int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.applied, f.notApplied
}

// Firing is one firing of a scenario fault.
type Firing struct {
	Spec  *faults.Spec
	Index int    // the fault's position in the scenario
	Label string // its name (Spec.Label)
	N     int    // 0 for the first firing of this fault, then 1, 2, ...
	// Rand is the fault's target stream (behavior.FaultTargetKey): its
	// picks never move the firing times.
	Rand faults.Rand
	// Pod is the pod an on-container firing is for (Triggers): the fault
	// hits that pod, or its node; "" for timed firings.
	Pod string
}

// ScheduleFaults starts one goroutine per timed fault of the plan (wg
// counts them): fire runs at each firing time on clk, from start, until
// ctx ends or over reports that every pod is gone. The times are the
// plan's (trial.Plan.FaultSchedule draws them the same way), so they are
// the sim's for the same seed. On-container schedules are the backend's
// to drive from the events it observes (Triggers) when onContainer is
// set; other schedules that are not timed are recorded not applied: a real
// cluster has no virtual clock to hook on-phase faults into.
func ScheduleFaults(ctx context.Context, clk clock.Clock, wg *sync.WaitGroup, start time.Time, p *trial.Plan, backend string,
	log *FaultLog, over func() bool, onContainer bool, fire func(f Firing)) {
	for i := range p.Faults {
		sp := &p.Faults[i]
		label := sp.Label(i)
		if sp.When.Kind == faults.OnContainer && onContainer {
			continue
		}
		if !sp.When.Timed() {
			log.NotApplied(sp, label, "", "", "", fmt.Sprintf("schedule %s is not supported on the %s backend (only timed schedules)", sp.When.Kind, backend))
			continue
		}
		sched, targets := p.FaultStreams(i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			at, ok := sp.When.First(sched)
			n := 0
			for ok {
				if !SleepUntil(ctx, clk, start.Add(at)) || over() {
					return
				}
				fire(Firing{Spec: sp, Index: i, Label: label, N: n, Rand: targets})
				n++
				at, ok = sp.When.Next(at, n, sched)
			}
		}()
	}
}
