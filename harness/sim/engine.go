// Package sim is sidebench's default backend: a deterministic
// discrete-event simulation of a Kubernetes cluster on a virtual clock.
// Every simulated node runs the reference kubelet (one
// reference-impl/kubelet.Machine per pod), a simulated CRI runtime and
// probers; a small control plane creates, schedules and deletes pods; faults
// from harness/faults are injected as inputs. The run is written to a
// history.Sink as it happens. See docs/sim.md.
package sim

import (
	"context"
	"fmt"
	"time"
	"unsafe"

	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/internal/prefetch"
)

// cancelCheckEvery is how many events run between ctx checks.
const cancelCheckEvery = 4096

// Run simulates one trial of cfg with the given seed, streaming the history
// to sink (run.meta first, run.end last). It is single-threaded and
// deterministic: the same cfg, seed and binary give a byte-identical
// history. When ctx is cancelled Run stops, writes run.end "partial" and
// returns what was done with Result.Partial set and a nil error. Errors
// are configuration errors, sink errors and machine errors. A nil sink
// discards the history.
func Run(ctx context.Context, cfg *Config, seed uint64, sink history.Sink) (Result, error) {
	return run(ctx, cfg, seed, 0, sink)
}

// RunTrial is Run with the trial index recorded in run.meta (for callers
// that schedule trials themselves).
func RunTrial(ctx context.Context, cfg *Config, seed uint64, trial int, sink history.Sink) (Result, error) {
	return run(ctx, cfg, seed, trial, sink)
}

func run(ctx context.Context, cfg *Config, seed uint64, trial int, sink history.Sink) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{Seed: seed}, err
	}
	if sink == nil {
		sink = history.Discard
	}
	e := newEngine(ctx, cfg, seed, sink)
	e.emitMeta(trial)
	e.start()
	e.loop()
	if e.err == nil {
		msg := "complete"
		if e.res.Partial {
			msg = "partial"
		}
		e.ev = history.Event{T: e.now, Kind: history.RunEnd, Msg: msg}
		e.write()
	}
	e.res.End = time.Duration(e.now)
	return e.res, e.err
}

// loop pops events until the stop condition, cancellation or an error.
func (e *engine) loop() {
	max := int64(e.cfg.Stop.MaxDuration)
	var n uint64
	for e.err == nil {
		var ev event
		if e.immHead < len(e.imm) {
			ev = e.imm[e.immHead]
			e.immHead++
			if e.immHead == len(e.imm) {
				e.imm = e.imm[:0]
				e.immHead = 0
			}
		} else {
			if e.done() {
				return
			}
			if e.q.len() == 0 {
				// Nothing will happen any more, but pods are alive (a Job
				// a sidecar keeps running): the trial lasts until its
				// horizon, so that deadlines after the last event are
				// judged (USER-JOB-COMPLETES, INV-C1).
				if max > 0 && e.live > 0 {
					if max > e.now {
						e.now = max
					}
				}
				return
			}
			if max > 0 && e.q.peek().t > max {
				e.now = max
				return
			}
			ev = e.q.pop()
			e.now = ev.t
			e.prefetchNext()
		}
		n++
		e.res.Events++
		if n%cancelCheckEvery == 0 && e.ctx.Err() != nil {
			e.res.Partial = true
			return
		}
		e.dispatch(&ev)
	}
}

// prefetchNext starts loading the state the next events will touch,
// so that its cache misses overlap this event's work instead of stalling
// the next one: the pod of the event after next, and the machine,
// observed containers and container of the next event (whose pod was
// requested one event earlier). The calendar's current bucket is sorted,
// so these are exactly the next two events unless one is pushed before
// them. Every address is computed from the event's slot (slots.go):
// nothing is loaded to find it.
//
// At 100k pods and more the first touch of a slot is a TLB miss whose
// page walk (nested, in a VM) itself misses the caches, and a prefetch
// waits for its walk: one walk at a time was a quarter of the CPU. Every
// walkBatch events the first and last lines of the slots of the next
// walkBatch events after the next one are requested together, so that
// their walks overlap.
func (e *engine) prefetchNext() {
	near := e.q.upcoming()
	s := &e.slots
	if e.res.Events%walkBatch == 0 {
		for i := 1; i <= walkBatch && i < len(near); i++ {
			if n := &near[i]; n.kind >= evBind {
				a := uintptr(s.addr(n.slot))
				prefetch.Line(a)
				prefetch.Line(a + s.stride - 1)
			}
		}
	}
	if len(near) > 1 {
		if n := &near[1]; n.kind >= evBind {
			prefetch.Lines(uintptr(s.addr(n.slot)), 3)
		}
	}
	if len(near) == 0 {
		return
	}
	n := &near[0]
	if n.kind < evBind {
		return
	}
	base := uintptr(s.addr(n.slot))
	// the machine and the observed containers after it, one range
	m := base + unsafe.Offsetof(pod{}.m)
	prefetch.Range(m, base+s.csOff-m)
	if c := uintptr(n.c); c < uintptr(s.k) {
		prefetch.Lines(base+s.csOff+c*unsafe.Sizeof(ctr{}), 2)
	}
	if e.pf != nil {
		// The next event's history goes to the pod's buffer in the
		// partitioner (on this goroutine: harness/runner): start
		// loading it.
		e.pf.Prefetch(n.slot + 1)
	}
}

// walkBatch is how many events apart prefetchNext requests the TLB walks
// of the coming events' slots, all at once.
const walkBatch = 8

// done reports whether every pod was created and removed and no fault is
// still in progress (a node shutting down, a kubelet down).
func (e *engine) done() bool {
	return e.arrivalsLeft == 0 && e.live == 0 && e.activeFaults == 0
}

func (e *engine) dispatch(ev *event) {
	switch ev.kind {
	case evArrive:
		e.onArrive(int(ev.slot))
	case evFault:
		e.onFault(int(ev.slot), ev)
	case evKubeletUp:
		e.onKubeletUp(int(ev.slot), ev)
	case evKubeletCrash:
		e.onRecoveryCrash(int(ev.slot), ev)
	case evRuntimeUp:
		e.onRuntimeUp(int(ev.slot), ev)
	case evNodeUp:
		e.onNodeUp(int(ev.slot), ev)
	case evShutdownCritical:
		e.onShutdownCritical(int(ev.slot), ev)
	case evShutdownEnd:
		e.onShutdownEnd(int(ev.slot), ev)
	default:
		p := e.pod(ev.slot)
		if p.id != ev.id {
			return // the pod is gone
		}
		e.onPodEvent(p, ev)
	}
}

func (e *engine) push(ev event) {
	if ev.t <= e.now {
		ev.t = e.now
		e.imm = append(e.imm, ev)
		return
	}
	e.q.push(ev)
	if n := e.q.len(); n > e.res.PeakPending {
		e.res.PeakPending = n
	}
}

// pod returns the pod of slot.
func (e *engine) pod(slot int32) *pod { return e.slots.pod(slot) }

// write sends e.ev to the sink.
func (e *engine) write() {
	if e.err != nil {
		return
	}
	e.res.HistoryEvents++
	if err := e.sink.Write(&e.ev); err != nil {
		e.err = fmt.Errorf("sim: history sink: %w", err)
	}
	if p := e.evPod; p != nil {
		e.evPod = nil
		if e.ev.Pod == p.name && e.ev.Container == p.spec.At(e.evC).Name {
			e.onContainerEvent(p, e.evC)
		}
	}
}

func (e *engine) emitMeta(trial int) {
	extra := map[string]string{
		"nodes":       fmt.Sprint(e.cfg.Cluster.Nodes),
		"podsPerNode": fmt.Sprint(e.cfg.Cluster.PodsPerNode),
		"apiDelay":    e.cfg.Cluster.APIDelay.String(),
	}
	e.ev = history.Event{Kind: history.RunMeta, Meta: &history.Meta{
		Scenario:     e.cfg.Scenario,
		ScenarioHash: e.cfg.ScenarioHash,
		Seed:         e.seed,
		Trial:        trial,
		Policy:       e.cfg.Gates.String(),
		Backend:      "sim",
		Version:      e.cfg.Version,
		Extra:        extra,
	}}
	e.write()
}
