package history

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"sync"
	"unsafe"

	"github.com/sidebench/sidebench/internal/prefetch"
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
// A pod's events are buffered from its first event until it is finished,
// then handed to the PodFunc and dropped. A pod is finished by its
// pod.removed event, or by the end of its run (run.end, the next run.meta,
// or Close). When a run ends, the remaining pods are delivered in order of
// their first event, and on run.end that event is appended to each of
// them, so a checker can tell a pod cut short by a complete run (run.end
// present, msg "complete") from one cut short by a crash (no run.end at
// all).
//
// Events without a pod belong to the pods they may affect:
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
//
// Memory. Shared events (a node's, the cluster's) are stored once, in a log
// per node and one for the cluster; a pod refers to the part of each log
// written while it was live, and its history is assembled only when it is
// delivered. (Copying them into every live pod made memory grow with live
// pods × shared events: 20k pods and 200k cluster-wide faults needed over
// 10 GB.) A log keeps only what a live pod can still see. A pod's own
// events are buffered in memory up to a budget (SpillAfter, default
// DefaultSpillAfter bytes over all pods); beyond it every pod's buffered
// events are written to a temporary file, removed when the Partitioner is
// closed, and read back when the pod is delivered, so pods that are never
// removed (2M of them needed 9.3 GB) cost a few hundred bytes each until
// the end of their run. What remains in memory is a small record per live
// pod, the shared logs, and one pod history at a time during delivery.
type Partitioner struct {
	fn PodFunc
	// deferred, if set instead of fn, takes each pod's history to
	// assemble later, elsewhere (NewDeferredPartitioner)
	deferred func(*PodHistory) error
	hist     PodHistory // fn's, reused
	returned returned   // buffers deferred histories gave back
	run      int
	meta     *Meta
	pods     map[string]*podBuf
	nodes    map[string]*sharedLog
	cluster  sharedLog
	seq      uint64
	order    []*podBuf // scratch for end-of-run delivery
	out      []Event   // scratch for the delivered history
	err      error
	peak     int
	// last is the pod of the previous pod event: a backend emits a pod's
	// events in bursts, so this skips most map lookups.
	last *podBuf
	// bySlot finds a live pod by its producer's slot hint (Event.Slot - 1)
	// without hashing its name; tails[s] is where that pod's next own
	// record will be written. Both are dense, so Prefetch reads them
	// without a cache miss of its own.
	bySlot []*podBuf
	tails  []uintptr

	// want, if set, says which pods to keep (OnlyPods); skip holds the
	// refused ones of the current run.
	want func(string) bool
	skip map[string]struct{}

	// Recycled own-event buffers of delivered pods.
	free      [][]byte
	freeBytes int64
	freeLogs  []*sharedLog // node logs of nodes without live pods

	// Spilling of pods' own events.
	spillAfter int64
	spillDir   string
	buffered   int64 // bytes of own events held in memory, over all pods
	spill      *spillFile
	spills     int

	// syms numbers the vocabulary of pods' own events (compact.go);
	// scratch holds a pod's own events expanded for a spill or a merge.
	syms    symtab
	scratch []seqEvent
}

// seqEvent is an event with its position in the stream, by which a pod's
// own events and the shared ones are merged back into history order.
type seqEvent struct {
	seq uint64
	ev  Event
}

// eventSize is the memory a buffered own event kept whole takes.
const eventSize = int64(unsafe.Sizeof(Event{}))

// sharedLog holds the node-level or cluster-wide events live pods may see.
// Entry i has the absolute index base+i; a pod remembers the absolute
// index at which it started seeing the log. Sequence numbers and events
// are kept apart so that a run of entries is copied into a pod's history
// in one move.
type sharedLog struct {
	base uint64
	seq  []uint64
	ev   []Event
	// members are the pods bound to the node (node logs only), in no
	// particular order: a pod knows its index (podBuf.member), so it
	// leaves by a swap with the last (a map cost a hash per binding and
	// per delivery).
	members []*podBuf
	// compactAt is the length at which the log next drops the entries no
	// live pod can see.
	compactAt int
}

func (l *sharedLog) end() uint64 { return l.base + uint64(len(l.ev)) }

// leave removes pb from the node's members.
func (l *sharedLog) leave(pb *podBuf) {
	last := len(l.members) - 1
	if i := int(pb.member); i >= 0 && i <= last && l.members[i] == pb {
		l.members[i] = l.members[last]
		l.members[i].member = int32(i)
		l.members[last] = nil
		l.members = l.members[:last]
	}
}

func (l *sharedLog) add(seq uint64, e *Event) {
	l.seq = append(l.seq, seq)
	l.ev = append(l.ev, *e)
	l.ev[len(l.ev)-1].Slot = 0 // a hint, not part of the history
}

// since returns the entries from absolute index from on.
func (l *sharedLog) since(from uint64) ([]uint64, []Event) {
	if from < l.base {
		from = l.base // cannot happen: compaction keeps what pods see
	}
	return l.seq[from-l.base:], l.ev[from-l.base:]
}

// compact drops the entries before absolute index keep.
func (l *sharedLog) compact(keep uint64) {
	if keep > l.base {
		n := int(keep - l.base)
		rest := copy(l.ev, l.ev[n:])
		copy(l.seq, l.seq[n:])
		clear(l.ev[rest:])
		l.ev, l.seq = l.ev[:rest], l.seq[:rest]
		l.base = keep
		if cap(l.ev) > 4*max(rest, 1024) { // give back a big array
			l.ev = slices.Clip(slices.Clone(l.ev))
			l.seq = slices.Clip(slices.Clone(l.seq))
		}
	}
	l.compactAt = max(2*len(l.ev), len(l.ev)+1024)
}

// recOwner is what expanding a pod's compact records takes besides the
// symbols: the pod's name and node (records only flag them), its spec and
// its events kept whole.
type recOwner struct {
	name string
	node string
	ext  []Event  // own events kept whole (compact.go), indexed by their records
	spec *PodSpec // the Spec of the compact records with recSpec
}

type podBuf struct {
	recOwner
	seq  uint64 // order of first appearance, for deterministic delivery
	slot int32  // the producer's slot hint + 1 it is registered under, 0 none
	// member is pb's index in its node log's members
	member int32
	// own holds the pod's own events in memory, nown encoded records
	// (compact.go: appendRec) written against ownBase.
	own     []byte
	nown    int
	ownBase recBase
	// bytes is what own costs in memory: its capacity, the events kept
	// whole, plus Msg texts (other strings are interned by the Reader or
	// numbered, specs shared).
	bytes int64
	// spilled are the pod's earlier own events in the spill file, oldest
	// first.
	spilled []spillChunk
	// nodeFrom and clusterFrom are the absolute log indexes at which the
	// pod started seeing its node's log (once bound) and the cluster's.
	nodeFrom, clusterFrom uint64
}

// DefaultSpillAfter is the default budget of pods' own events held in
// memory before they are spilled to a temporary file.
const DefaultSpillAfter = 256 << 20

// PartitionOption configures a Partitioner.
type PartitionOption func(*Partitioner)

// SpillAfter sets the memory budget of buffered pod events (bytes); <= 0
// never spills.
func SpillAfter(bytes int64) PartitionOption { return func(p *Partitioner) { p.spillAfter = bytes } }

// OnlyPods restricts the Partitioner to the pods want accepts: want is
// called once per pod history, at its first event, and the events of a pod
// it refuses are dropped, not buffered (explain needs one pod of a
// history, not all of them assembled).
func OnlyPods(want func(pod string) bool) PartitionOption {
	return func(p *Partitioner) { p.want = want }
}

// SpillDir sets the directory of the spill file (default os.TempDir()).
func SpillDir(dir string) PartitionOption { return func(p *Partitioner) { p.spillDir = dir } }

// NewPartitioner returns a Partitioner that calls fn once per pod history.
func NewPartitioner(fn PodFunc, opts ...PartitionOption) *Partitioner {
	p := &Partitioner{
		fn:         fn,
		run:        -1,
		pods:       make(map[string]*podBuf),
		nodes:      make(map[string]*sharedLog),
		spillAfter: DefaultSpillAfter,
		syms:       newSymtab(),
	}
	p.cluster.compactAt = 1024
	for _, o := range opts {
		o(p)
	}
	return p
}

// NewDeferredPartitioner returns a Partitioner that hands each pod's
// history to fn unassembled, as soon as the pod is finished: fn may pass
// it to another goroutine, which assembles it (PodHistory.Events) and
// releases it. Partitioning then costs the producer only the buffering
// of each event (a sim trial's own goroutine, beside its cache-hot
// state); assembling, checking and measuring run elsewhere. fn is called
// in the order NewPartitioner's would be.
func NewDeferredPartitioner(fn func(*PodHistory) error, opts ...PartitionOption) *Partitioner {
	p := NewPartitioner(nil, opts...)
	p.deferred = fn
	return p
}

// Run returns the 0-based index of the current run (-1 before the first
// run.meta; events before it belong to a run with a nil Meta).
func (p *Partitioner) Run() int { return p.run }

// Live returns the number of pods currently buffered.
func (p *Partitioner) Live() int { return len(p.pods) }

// PeakLive returns the largest number of pods buffered at once.
func (p *Partitioner) PeakLive() int { return p.peak }

// Spills returns how many times buffered pod events were spilled to disk.
func (p *Partitioner) Spills() int { return p.spills }

// Write adds the next event. Events must arrive in history order.
func (p *Partitioner) Write(e *Event) error {
	if p.err != nil {
		return p.err
	}
	p.seq++
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
			pb = p.lookup(e)
			if pb == nil {
				if p.want != nil && !p.wanted(e) {
					break
				}
				pb = p.newPod(e.Pod)
				p.register(pb, e.Slot)
			}
			p.last = pb
		}
		if pb.node == "" && e.Node != "" {
			p.bind(pb, e.Node)
		}
		p.addOwn(pb, e)
		if e.Kind == PodRemoved {
			p.finish(pb, nil)
		} else if p.spillAfter > 0 && p.buffered > p.spillAfter {
			p.spillAll()
		}
	case e.Node != "":
		if l := p.nodes[e.Node]; l != nil {
			l.add(p.seq, e)
			if len(l.ev) >= l.compactAt {
				keep := l.end()
				for _, pb := range l.members {
					keep = min(keep, pb.nodeFrom)
				}
				l.compact(keep)
			}
		}
	default:
		if len(p.pods) > 0 {
			l := &p.cluster
			l.add(p.seq, e)
			if len(l.ev) >= l.compactAt {
				keep := l.end()
				for _, pb := range p.pods {
					keep = min(keep, pb.clusterFrom)
				}
				l.compact(keep)
			}
		}
	}
	return p.err
}

// Prefetcher is a Sink that can start loading the state its next event
// will touch, given the event's slot hint (Event.Slot): a producer that
// knows its next event's pod ahead (the sim's event queue) calls it so
// that the cache misses overlap its own work.
type Prefetcher interface {
	Prefetch(slot int32)
}

// Prefetch starts loading the buffer of the pod in slot (Event.Slot) and
// the place its next record goes.
func (p *Partitioner) Prefetch(slot int32) {
	s := int(slot) - 1
	if s < 0 || s >= len(p.bySlot) {
		return
	}
	if pb := p.bySlot[s]; pb != nil {
		prefetch.Range(uintptr(unsafe.Pointer(pb)), unsafe.Sizeof(*pb))
		prefetch.Line(p.tails[s])
	}
}

// lookup finds e's live pod: by its slot hint when the hint names it,
// else by name.
func (p *Partitioner) lookup(e *Event) *podBuf {
	if s := int(e.Slot) - 1; s >= 0 && s < len(p.bySlot) {
		if pb := p.bySlot[s]; pb != nil && pb.name == e.Pod {
			return pb
		}
	}
	return p.pods[e.Pod]
}

// register files a new pod under its slot hint (when the slot is not
// held: a hint that collides with a live pod is ignored, and both are
// found by name).
func (p *Partitioner) register(pb *podBuf, slot int32) {
	s := int(slot) - 1
	if s < 0 || s > 1<<24 {
		return
	}
	if s >= len(p.bySlot) {
		n := max(s+1, 2*len(p.bySlot))
		p.bySlot = append(p.bySlot, make([]*podBuf, n-len(p.bySlot))...)
		p.tails = append(p.tails, make([]uintptr, n-len(p.tails))...)
	}
	if p.bySlot[s] == nil {
		p.bySlot[s], pb.slot = pb, slot
	}
}

// addOwn appends e, an event of pb's own, to its buffer.
func (p *Partitioner) addOwn(pb *podBuf, e *Event) {
	r, ok := p.syms.compact(e, pb)
	if !ok {
		r = rec{t: e.T, ext: int32(len(pb.ext))}
		pb.ext = append(pb.ext, *e)
		pb.ext[len(pb.ext)-1].Slot = 0 // a hint, not part of the history
		m := eventSize + int64(len(e.Msg))
		pb.bytes += m
		p.buffered += m
	}
	// Encoded in place when the longest record fits (a copy of a dozen
	// bytes through memmove cost more than the encoding); near the end of
	// the buffer, encoded aside and the buffer grown by what it needs.
	if cap(pb.own)-len(pb.own) >= maxRecBytes {
		pb.own = appendRec(pb.own, &pb.ownBase, p.seq, &r)
	} else {
		var enc [maxRecBytes]byte
		b := appendRec(enc[:0], &pb.ownBase, p.seq, &r)
		if cap(pb.own)-len(pb.own) < len(b) {
			p.grow(pb, len(b))
		}
		pb.own = append(pb.own, b...)
	}
	pb.nown++
	if pb.slot > 0 {
		p.tails[pb.slot-1] = uintptr(unsafe.Pointer(unsafe.SliceData(pb.own))) + uintptr(len(pb.own))
	}
}

// grow gives pb's buffer room for need more bytes, recycling a delivered
// pod's buffer when one is free. It grows by half (a pod's records take a
// few hundred bytes: doubling would leave a quarter of them unused on
// average), to the allocator's size class. Memory is accounted by
// capacity.
func (p *Partitioner) grow(pb *podBuf, need int) {
	if len(p.free) == 0 && p.deferred != nil {
		p.takeReturned()
	}
	var next []byte
	if n := len(p.free); n > 0 && cap(p.free[n-1])-len(pb.own) >= need {
		next, p.free = p.free[n-1], p.free[:n-1]
		p.freeBytes -= int64(cap(next))
	} else {
		next = slices.Grow([]byte(nil), max(len(pb.own)+need, cap(pb.own)*3/2, 64))
	}
	next = append(next, pb.own...)
	p.recycle(pb.own)
	delta := int64(cap(next) - cap(pb.own))
	pb.own = next
	pb.bytes += delta
	p.buffered += delta
}

// takeReturned moves the buffers deferred histories gave back to the
// free list.
func (p *Partitioner) takeReturned() {
	r := &p.returned
	r.mu.Lock()
	for _, b := range r.bufs {
		p.recycle(b)
	}
	clear(r.bufs)
	r.bufs, r.bytes = r.bufs[:0], 0
	r.mu.Unlock()
}

// recycle keeps a buffer for reuse, within maxFreeBytes.
func (p *Partitioner) recycle(b []byte) {
	if cap(b) == 0 {
		return
	}
	size := int64(cap(b)) // no pointers: nothing to clear
	if p.freeBytes+size <= maxFreeBytes {
		p.free = append(p.free, b[:0])
		p.freeBytes += size
	}
}

// maxFreeBytes bounds the recycled buffers kept for new pods.
const maxFreeBytes = 8 << 20

// wanted asks want about a pod seen for the first time in this run, and
// remembers a refusal until the pod's history would end.
func (p *Partitioner) wanted(e *Event) bool {
	if _, skipped := p.skip[e.Pod]; skipped {
		if e.Kind == PodRemoved {
			delete(p.skip, e.Pod) // a later event starts a new history
		}
		return false
	}
	if p.want(e.Pod) {
		return true
	}
	if e.Kind != PodRemoved {
		if p.skip == nil {
			p.skip = make(map[string]struct{})
		}
		p.skip[e.Pod] = struct{}{}
	}
	return false
}

// bind attaches pb to node's log from now on.
func (p *Partitioner) bind(pb *podBuf, node string) {
	pb.node = node
	l := p.nodes[node]
	if l == nil {
		if n := len(p.freeLogs); n > 0 {
			l, p.freeLogs = p.freeLogs[n-1], p.freeLogs[:n-1]
		} else {
			l = &sharedLog{}
		}
		l.compactAt = 1024
		p.nodes[node] = l
	}
	pb.member = int32(len(l.members))
	l.members = append(l.members, pb)
	pb.nodeFrom = l.end()
}

// Close delivers the pods still live (the last run had no run.end, or
// trailing events followed it), and removes the spill file. Call it at the
// end of the data.
func (p *Partitioner) Close() error {
	if p.err == nil {
		p.endRun(nil)
	}
	if p.spill != nil {
		if err := p.spill.close(); p.err == nil && err != nil {
			p.err = err
		}
		p.spill = nil
	}
	return p.err
}

func (p *Partitioner) newPod(name string) *podBuf {
	pb := &podBuf{recOwner: recOwner{name: name}, seq: p.seq, clusterFrom: p.cluster.end()}
	if len(p.pods) == 0 {
		// Nobody can see the cluster log's entries any more.
		p.cluster.compact(p.cluster.end())
		pb.clusterFrom = p.cluster.end()
	}
	p.pods[name] = pb
	p.peak = max(p.peak, len(p.pods))
	return pb
}

// finish delivers pb, with end (run.end) appended if non-nil, and forgets
// it.
func (p *Partitioner) finish(pb *podBuf, end *Event) {
	if p.last == pb {
		p.last = nil
	}
	if pb.slot > 0 {
		p.bySlot[pb.slot-1] = nil
	}
	delete(p.pods, pb.name)
	kept := false // the pod's buffers went with its history (deferred)
	if p.err == nil {
		h := &p.hist
		if p.deferred != nil {
			h = histories.Get().(*PodHistory)
		}
		err := p.view(h, pb, end)
		switch {
		case err != nil:
		case p.deferred != nil:
			// The history outlives this call, on another goroutine: it
			// takes the pod's buffers and a copy of the shared entries
			// (the logs go on changing), and gives the buffer back with
			// Release.
			h.nodeSeq, h.nodeEv = slices.Clone(h.nodeSeq), slices.Clone(h.nodeEv)
			h.clusterSeq, h.clusterEv = slices.Clone(h.clusterSeq), slices.Clone(h.clusterEv)
			h.back = &p.returned
			kept = true
			err = p.deferred(h)
		default:
			evs := h.Events(p.out[:0])
			err = p.fn(p.meta, pb.name, evs)
			// The buffer is reused as is: its stale Spec pointers pin at
			// most the specs of one pod, and clearing it cost as much as
			// filling it.
			if cap(evs) > 1<<16 {
				p.out = nil // do not pin one huge history
			} else {
				p.out = evs[:0]
			}
			*h = PodHistory{}
		}
		p.err = err
	}
	if pb.node != "" {
		if l := p.nodes[pb.node]; l != nil {
			l.leave(pb)
			if len(l.members) == 0 {
				delete(p.nodes, pb.node)
				if len(p.freeLogs) < 64 && cap(l.ev) <= 4096 {
					clear(l.ev)
					l.ev, l.seq, l.base = l.ev[:0], l.seq[:0], 0
					p.freeLogs = append(p.freeLogs, l)
				}
			}
		}
	}
	if len(pb.spilled) > 0 {
		p.spill.release(len(pb.spilled))
	}
	p.buffered -= pb.bytes
	if !kept {
		p.recycle(pb.own)
		clear(pb.ext) // drop Spec/Meta pointers
	}
	*pb = podBuf{}
}

// view fills h with pb's history: its own events (spilled ones read
// back), the entries of its node's and the cluster's logs since it was
// bound, and end. h refers to pb's buffers and to the logs.
func (p *Partitioner) view(h *PodHistory, pb *podBuf, end *Event) error {
	*h = PodHistory{Run: p.meta, recOwner: pb.recOwner, own: pb.own, nown: pb.nown, strs: p.syms.strs}
	if len(pb.spilled) > 0 {
		spilled, err := p.spill.read(pb.spilled, nil)
		if err != nil {
			return err
		}
		h.spilled = spilled
	}
	if pb.node != "" {
		if l := p.nodes[pb.node]; l != nil {
			h.nodeSeq, h.nodeEv = l.since(pb.nodeFrom)
		}
	}
	h.clusterSeq, h.clusterEv = p.cluster.since(pb.clusterFrom)
	if end != nil {
		h.end, h.hasEnd = *end, true
		h.end.Slot = 0 // a hint, not part of the history
	}
	return nil
}

// expandOwn returns pb's own events in memory, expanded (for a spill),
// in p.scratch.
func (p *Partitioner) expandOwn(pb *podBuf) []seqEvent {
	out := p.scratch[:0]
	if cap(out) < pb.nown {
		out = make([]seqEvent, 0, pb.nown)
	}
	out = out[:pb.nown]
	rd := recReader{b: pb.own}
	var r rec
	for i := range out {
		out[i].seq = rd.next(&r)
		expand(p.syms.strs, &r, &pb.recOwner, &out[i].ev)
	}
	if cap(out) <= 1<<16 {
		p.scratch = out[:0] // reused as is, like out
	}
	return out
}

// PodHistory is one pod's history as a Partitioner delivers it to a
// deferred consumer (NewDeferredPartitioner): the pod's own events in
// their compact form and the node's and cluster's events it saw, which
// Events assembles into the pod's events in history order, on any
// goroutine. It owns its buffers until Release.
type PodHistory struct {
	// Run is the Meta of the pod's run (nil if the run had no run.meta).
	Run *Meta
	recOwner
	own                 []byte
	nown                int
	spilled             []seqEvent
	nodeSeq, clusterSeq []uint64
	nodeEv, clusterEv   []Event
	end                 Event // run.end, appended when hasEnd
	hasEnd              bool
	// strs are the symbols as of the delivery: the table only grows, so
	// the entries a record names never change.
	strs []string
	back *returned // where Release gives the own-event buffer back
}

// Pod is the pod's name ("namespace/name").
func (h *PodHistory) Pod() string { return h.name }

// Len is the number of events Events returns.
func (h *PodHistory) Len() int {
	n := len(h.spilled) + h.nown + len(h.nodeEv) + len(h.clusterEv)
	if h.hasEnd {
		n++
	}
	return n
}

// Release gives the history's buffers back to its Partitioner; h must not
// be used afterwards.
func (h *PodHistory) Release() {
	if h.back != nil {
		h.back.put(h.own)
		clear(h.ext) // drop Spec/Meta pointers
		*h = PodHistory{}
		histories.Put(h)
		return
	}
	clear(h.ext)
	*h = PodHistory{}
}

// histories recycles deferred pods' PodHistory values (one a pod).
var histories = sync.Pool{New: func() any { return new(PodHistory) }}

// returned collects the own-event buffers deferred consumers release,
// from any goroutine, until the Partitioner takes them for new pods.
type returned struct {
	mu    sync.Mutex
	bufs  [][]byte
	bytes int64
}

func (r *returned) put(b []byte) {
	if cap(b) == 0 {
		return
	}
	r.mu.Lock()
	if r.bytes+int64(cap(b)) <= maxFreeBytes {
		r.bufs = append(r.bufs, b[:0])
		r.bytes += int64(cap(b))
	}
	r.mu.Unlock()
}

// Events appends the pod's events to dst, in history order: its own
// events (spilled ones first, then the compact ones in memory) merged
// with the entries of its node's and the cluster's logs by stream
// position, then run.end if its run ended while it lived.
func (h *PodHistory) Events(dst []Event) []Event {
	spilled := h.spilled
	nodeSeq, nodeEv := h.nodeSeq, h.nodeEv
	clusterSeq, clusterEv := h.clusterSeq, h.clusterEv
	nsp := len(spilled)
	// The compact own events are decoded one at a time: cur is the next
	// one, at position curSeq, and ownLeft counts it and those after it.
	rd := recReader{b: h.own}
	var cur rec
	var curSeq uint64
	ownLeft := h.nown
	if ownLeft > 0 {
		curSeq = rd.next(&cur)
	}
	out := dst
	if n := len(out) + h.Len(); cap(out) < n {
		out = slices.Grow(out, n-len(out))
	}
	const done = uint64(1<<64 - 1)
	next := func(seq []uint64, i int) uint64 {
		if i < len(seq) {
			return seq[i]
		}
		return done
	}
	// upTo is how many of seq[i:] come before limit.
	upTo := func(seq []uint64, i int, limit uint64) int {
		return sort.Search(len(seq)-i, func(k int) bool { return seq[i+k] >= limit })
	}
	i, j, k := 0, 0, 0 // i counts spilled events
	for {
		so, sn, sc := done, next(nodeSeq, j), next(clusterSeq, k)
		switch {
		case i < nsp:
			so = spilled[i].seq
		case ownLeft > 0:
			so = curSeq
		}
		switch {
		case so == done && sn == done && sc == done:
			if h.hasEnd {
				out = append(out, h.end)
			}
			return out
		case so < sn && so < sc:
			if i < nsp {
				out = append(out, spilled[i].ev)
				i++
			} else {
				out = out[:len(out)+1]
				expand(h.strs, &cur, &h.recOwner, &out[len(out)-1])
				if ownLeft--; ownLeft > 0 {
					curSeq = rd.next(&cur)
				}
			}
		case sn < sc:
			n := upTo(nodeSeq, j, min(so, sc))
			out = append(out, nodeEv[j:j+n]...)
			j += n
		default:
			n := upTo(clusterSeq, k, min(so, sn))
			out = append(out, clusterEv[k:k+n]...)
			k += n
		}
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
		p.finish(pb, end)
	}
	clear(p.order)
	p.cluster.compact(p.cluster.end())
	clear(p.nodes)
	clear(p.skip)
}

// spillAll moves every live pod's buffered events to the spill file.
func (p *Partitioner) spillAll() {
	if p.spill == nil {
		sf, err := newSpillFile(p.spillDir)
		if err != nil {
			p.err = fmt.Errorf("history: partition: %w", err)
			return
		}
		p.spill = sf
	}
	p.spills++
	for _, pb := range p.pods {
		if pb.nown == 0 {
			continue
		}
		c, err := p.spill.write(p.expandOwn(pb))
		if err != nil {
			p.err = fmt.Errorf("history: partition: %w", err)
			return
		}
		pb.spilled = append(pb.spilled, c)
		p.recycle(pb.own)
		pb.own, pb.nown, pb.ownBase = nil, 0, recBase{}
		clear(pb.ext)
		pb.ext = pb.ext[:0]
		p.buffered -= pb.bytes
		pb.bytes = 0
	}
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
func ForEachPod(r *Reader, fn PodFunc, opts ...PartitionOption) error {
	p := NewPartitioner(fn, opts...)
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
