package integration

import (
	"context"
	"testing"
	"unsafe"

	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/sim"
	"github.com/sidebench/sidebench/internal/perfstat"
	"github.com/sidebench/sidebench/internal/prefetch"
)

// BenchmarkCheckingFloor measures a floor under issue 19's checking-cost
// goal (at most +10% of the sim's CPU), for the one design the session-15
// measurements left: checkers as monitors that fold each event into a
// small per-pod state as the sim emits it, with no per-pod event buffer.
// floorSink is NOT a checker. It does the least such a monitor must do for
// every event: find the pod's state by the event's slot (prefetched with
// the sim's next event, as the partitioner's buffer is), find the
// container by name, record the step's time, and make three of the
// ordering comparisons the start and hook invariants make. Whatever the
// 54 invariants would do beyond that comes on top of what it reports.
func BenchmarkCheckingFloor(b *testing.B) {
	cfg, seed := benchConfig(b, mixedFaults)
	for _, st := range []struct {
		name string
		sink func() history.Sink
	}{
		{"sim", func() history.Sink { return history.Discard }},
		{"sim+fold", func() history.Sink { return &floorSink{} }},
	} {
		b.Run(st.name, func(b *testing.B) {
			cpu0 := perfstat.CPUTime()
			for b.Loop() {
				sink := st.sink()
				if _, err := sim.Run(context.Background(), cfg, seed, sink); err != nil {
					b.Fatal(err)
				}
				if f, ok := sink.(*floorSink); ok {
					b.ReportMetric(float64(f.out), "failed-comparisons")
				}
			}
			b.ReportMetric(float64((perfstat.CPUTime()-cpu0).Nanoseconds())/float64(b.N)/benchLifecycles, "cpu-ns/lifecycle")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// floorCtr is a container's current attempt, as a monitor would keep it.
type floorCtr struct {
	name                                 string
	req, running, started, ready, exited int64
	stop, preStop, preStopEnd, postStart int64
	attempts, code, out                  int32
}

type floorPod struct {
	name                 string
	created, sched, delT int64
	sandboxes, terms     int32
	phases, conds, nctr  int32
	ctr                  [4]floorCtr
}

// floorSink keeps one floorPod per sim slot (Event.Slot).
type floorSink struct {
	pods []floorPod
	out  int // comparisons that failed (none on this workload)
}

func (f *floorSink) Prefetch(slot int32) {
	if s := int(slot) - 1; s >= 0 && s < len(f.pods) {
		prefetch.Range(uintptr(unsafe.Pointer(&f.pods[s])), unsafe.Sizeof(floorPod{}))
	}
}

func (f *floorSink) Write(e *history.Event) error {
	s := int(e.Slot) - 1
	if s < 0 {
		return nil
	}
	if s >= len(f.pods) {
		f.pods = append(f.pods, make([]floorPod, s+1-len(f.pods)+1024)...)
	}
	p := &f.pods[s]
	if e.Kind == history.PodCreated {
		*p = floorPod{name: e.Pod, created: e.T}
		if e.Spec != nil {
			for _, part := range [2][]history.ContainerSpec{e.Spec.Init, e.Spec.Main} {
				for i := range part {
					if p.nctr < int32(len(p.ctr)) {
						p.ctr[p.nctr].name = part[i].Name
						p.nctr++
					}
				}
			}
		}
		return nil
	}
	c, ci := (*floorCtr)(nil), 0
	if e.Container != "" {
		for i := range p.ctr[:p.nctr] {
			if p.ctr[i].name == e.Container {
				c, ci = &p.ctr[i], i
				break
			}
		}
	}
	switch e.Kind {
	case history.PodScheduled:
		p.sched = e.T
	case history.PodDeleted:
		p.delT = e.T
	case history.PodTerminating:
		p.terms++
	case history.SandboxCreated:
		p.sandboxes++
	case history.PodPhase:
		p.phases++
	case history.PodCondition:
		p.conds++
	case history.PodRemoved:
		for i := range p.ctr[:p.nctr] {
			f.out += int(p.ctr[i].out)
		}
	}
	if c == nil {
		return nil
	}
	switch e.Kind {
	case history.ContainerStartRequested:
		c.attempts++
		c.req, c.running, c.started, c.exited = e.T, 0, 0, 0
		if ci > 0 && p.ctr[ci-1].started == 0 && p.ctr[ci-1].exited == 0 {
			c.out++ // started before the container before it was done
		}
	case history.ContainerRunning:
		c.running = e.T
	case history.ContainerStarted:
		if e.Value {
			c.started = e.T
			if c.running == 0 || c.running > e.T {
				c.out++ // Started before running
			}
		}
	case history.ContainerReady:
		c.ready = e.T
	case history.ContainerExited:
		c.exited, c.code = e.T, e.Code
	case history.ContainerStopRequested:
		c.stop = e.T
	case history.ContainerPreStopBegin:
		c.preStop = e.T
	case history.ContainerPreStopEnd:
		c.preStopEnd = e.T
		if c.preStopEnd < c.preStop {
			c.out++ // a hook that ended before it began
		}
	case history.ContainerPostStartDone:
		c.postStart = e.T
	}
	return nil
}
