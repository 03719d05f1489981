package history

import (
	"errors"
	"io"
	"slices"
)

// PodFunc receives one pod's history: its own events with the events of
// its node and the cluster-wide events interleaved, in history order.
// run is the Meta of the pod's run (nil if the run had no run.meta line).
//
// events is only valid during the call: the Partitioner reuses its backing
// array, so fn must copy what it keeps. A non-nil error stops the
// partitioning and is returned by Write/Close.
type PodFunc func(run *Meta, pod string, events []Event) error

// Partitioner splits an ordered event stream into per-pod histories, the
// unit every checker works on (porcupine's P-compositionality: pods are
// checked independently). It is a Sink, so a backend can feed it directly,
// or ForEachPod can feed it from a file.
//
// Memory is bounded by the live pods: a pod's events are buffered from its
// first event until it is finished, then handed to the PodFunc and dropped.
// A pod is finished by its pod.removed event, or by the end of its run
// (run.end, the next run.meta, or Close). When a run ends, the remaining
// pods are delivered in order of their first event, and on run.end that
// event is appended to each of them, so a checker can tell a pod cut short
// by a complete run (run.end present, msg "complete") from one cut short by
// a crash (no run.end at all).
//
// Events without a pod are copied into the pods they may affect:
//   - node-level events (Kind.IsNodeLevel) and fault.* events with Node set
//     and Pod empty go to every live pod bound to that node;
//   - events with neither Pod nor Node (a cluster-wide fault such as an
//     apiserver outage) go to every live pod of the run.
//
// A pod is bound to a node by pod.scheduled, or by its first event that
// names a node if the history has no pod.scheduled for it. Events of a
// node that happen before the pod is bound, or after it is finished, are
// not part of the pod's history.
//
// Pods are keyed by (run, pod name): a file may hold several runs, each
// starting with run.meta. The history contract makes pod.removed a pod's
// last event; if a backend emits more events for the pod afterwards, they
// form a second history for the same name, delivered when the run ends.
type Partitioner struct {
	fn    PodFunc
	run   int
	meta  *Meta
	pods  map[string]*podBuf
	nodes map[string]map[*podBuf]struct{}
	seq   uint64
	free  []*podBuf // recycled buffers
	order []*podBuf // scratch for end-of-run delivery
	err   error
	peak  int
	// last is the pod of the previous pod event: a backend emits a pod's
	// events in bursts, so this skips most map lookups.
	last *podBuf
	syms symtab
	out  []Event // the delivered history, expanded (reused)
}

// podBuf is a live pod's history so far, compact (compact.go).
type podBuf struct {
	name string
	node string
	seq  uint64 // order of first appearance, for deterministic delivery
	recs []rec
	ext  []Event // events kept whole
}

// add appends e to pb.
func (p *Partitioner) add(pb *podBuf, e *Event) {
	r, ok := p.syms.compact(e, pb)
	if !ok {
		r = rec{ext: int32(len(pb.ext))}
		pb.ext = append(pb.ext, *e)
	}
	pb.recs = append(pb.recs, r)
}

// NewPartitioner returns a Partitioner that calls fn once per pod history.
func NewPartitioner(fn PodFunc) *Partitioner {
	return &Partitioner{
		fn:    fn,
		run:   -1,
		pods:  make(map[string]*podBuf),
		nodes: make(map[string]map[*podBuf]struct{}),
		syms:  newSymtab(),
	}
}

// Run returns the 0-based index of the current run (-1 before the first
// run.meta; events before it belong to a run with a nil Meta).
func (p *Partitioner) Run() int { return p.run }

// Live returns the number of pods currently buffered.
func (p *Partitioner) Live() int { return len(p.pods) }

// PeakLive returns the largest number of pods buffered at once, the
// measure of the Partitioner's memory use.
func (p *Partitioner) PeakLive() int { return p.peak }

// Write adds the next event. Events must arrive in history order.
func (p *Partitioner) Write(e *Event) error {
	if p.err != nil {
		return p.err
	}
	switch {
	case e.Kind == RunMeta:
		// The previous run ended without run.end: it is partial, and its
		// pods are delivered without one.
		p.endRun(nil)
		p.run++
		p.meta = e.Meta
	case e.Kind == RunEnd:
		p.endRun(e)
	case e.Pod != "":
		pb := p.last
		if pb == nil || pb.name != e.Pod {
			pb = p.pods[e.Pod]
			if pb == nil {
				pb = p.newPod(e.Pod)
			}
			p.last = pb
		}
		if pb.node == "" && e.Node != "" {
			pb.node = e.Node
			set := p.nodes[e.Node]
			if set == nil {
				set = make(map[*podBuf]struct{})
				p.nodes[e.Node] = set
			}
			set[pb] = struct{}{}
		}
		p.add(pb, e)
		if e.Kind == PodRemoved {
			p.finish(pb)
		}
	case e.Node != "":
		// Map order does not matter: each pod's slice stays in history
		// order whatever order the pods are visited in.
		for pb := range p.nodes[e.Node] {
			p.add(pb, e)
		}
	default:
		for _, pb := range p.pods {
			p.add(pb, e)
		}
	}
	return p.err
}

// Close delivers the pods still live (the last run had no run.end, or
// trailing events followed it). Call it at the end of the data.
func (p *Partitioner) Close() error {
	if p.err == nil {
		p.endRun(nil)
	}
	return p.err
}

func (p *Partitioner) newPod(name string) *podBuf {
	p.seq++
	var pb *podBuf
	if n := len(p.free); n > 0 {
		pb, p.free = p.free[n-1], p.free[:n-1]
		*pb = podBuf{recs: pb.recs[:0], ext: pb.ext[:0]}
	} else {
		// A typical sidecar pod has 20–60 events: start there rather than
		// regrow (and recopy) from 1.
		pb = &podBuf{recs: make([]rec, 0, 64)}
	}
	pb.name, pb.seq = name, p.seq
	p.pods[name] = pb
	p.peak = max(p.peak, len(p.pods))
	return pb
}

// finish delivers pb and forgets it.
func (p *Partitioner) finish(pb *podBuf) {
	if p.last == pb {
		p.last = nil
	}
	delete(p.pods, pb.name)
	if pb.node != "" {
		set := p.nodes[pb.node]
		delete(set, pb)
		if len(set) == 0 {
			delete(p.nodes, pb.node)
		}
	}
	if p.err == nil {
		out := p.out[:0]
		if cap(out) < len(pb.recs) {
			out = make([]Event, 0, len(pb.recs)+len(pb.recs)/4)
		}
		out = out[:len(pb.recs)]
		for i := range pb.recs {
			p.syms.expand(&pb.recs[i], pb, &out[i])
		}
		p.err = p.fn(p.meta, pb.name, out)
		// Not cleared: the next pod overwrites it, and what it still
		// references is one pod's worth.
		p.out = out[:0]
	}
	// Recycle the buffer (bounded, so one huge pod does not pin memory
	// forever); clear the whole events so their pointers can be collected.
	clear(pb.ext)
	if len(p.free) < 1<<12 && cap(pb.recs) <= 1<<12 && cap(pb.ext) <= 1<<10 {
		p.free = append(p.free, pb)
	}
}

// endRun delivers every live pod, appending end (run.end) if non-nil.
func (p *Partitioner) endRun(end *Event) {
	p.order = p.order[:0]
	for _, pb := range p.pods {
		p.order = append(p.order, pb)
	}
	slices.SortFunc(p.order, func(a, b *podBuf) int {
		if a.seq < b.seq {
			return -1
		}
		return 1
	})
	for _, pb := range p.order {
		if end != nil {
			p.add(pb, end)
		}
		p.finish(pb)
		if p.err != nil {
			break
		}
	}
	clear(p.order)
}

// ForEachPod reads r to the end and calls fn once per pod history, as a
// Partitioner does (see there for what a pod history contains and when it
// is delivered).
//
// If the input ends in a truncated line (a crashed run), every pod is
// still delivered and the returned error wraps ErrTruncated, so a caller
// that accepts crashed runs writes:
//
//	if err := history.ForEachPod(r, fn); err != nil && !errors.Is(err, history.ErrTruncated) {
//		return err
//	}
func ForEachPod(r *Reader, fn PodFunc) error {
	p := NewPartitioner(fn)
	var e Event
	for {
		err := r.Read(&e)
		switch {
		case err == io.EOF:
			return p.Close()
		case errors.Is(err, ErrTruncated):
			if cerr := p.Close(); cerr != nil {
				return cerr
			}
			return err
		case err != nil:
			return err
		}
		if err := p.Write(&e); err != nil {
			return err
		}
	}
}

// ReadAll reads every event of r (for tests and small histories; big ones
// should stream with Reader or ForEachPod). On a truncated last line it
// returns the complete events and an error wrapping ErrTruncated.
func ReadAll(r io.Reader) ([]Event, error) {
	rd := NewReader(r)
	var out []Event
	for {
		var e Event
		err := rd.Read(&e)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, e)
	}
}

// WriteAll encodes events to w and flushes.
func WriteAll(w io.Writer, events []Event) error {
	hw := NewWriter(w)
	for i := range events {
		if err := hw.Write(&events[i]); err != nil {
			return err
		}
	}
	return hw.Flush()
}
