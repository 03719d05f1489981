package sim

import (
	"cmp"
	"math/bits"
	"slices"
	"sort"
)

// event is one scheduled happening. It is a small value (32 bytes) so the
// queue holds flat slices with no per-event allocation and no pointers for
// the garbage collector to scan (ANCHORS.md §4).
//
// Four fields of 8 bytes, not eight flat ones: the compiler keeps a struct
// of at most four fields and 32 bytes in registers (ssagen.TypeOK) and
// moves it as 8-byte words. With eight fields an event passed by value
// (push, place, pop) was spilled to the stack field by field, 4, 2 and 1
// byte stores, and then copied with 16-byte loads that the store buffer
// cannot forward from narrower stores: each such load waited for the
// buffer to drain, the previous event's cache-missing stores included
// (push, place and pop were 27% of the CPU at 10k pods, most of it on
// those loads; docs/performance.md, session 15, "The event in registers").
// TestEventInRegisters guards the shape.
type event struct {
	t   int64  // virtual time, ns since trial start
	seq uint64 // push order: deterministic tie-break for equal t
	evWho
	evWhat
}

// evWho is what an event is about.
type evWho struct {
	// slot indexes the pod (pod events), the node (node events), the
	// workload (arrivals) or the fault (fault events).
	slot int32
	// id is the pod's unique id (stale-slot check) or a fault instance.
	id uint32
}

// evWhat is what happens.
type evWhat struct {
	gen  uint32 // generation the event belongs to (meaning depends on kind)
	kind evKind
	c    uint8 // container index (pod events) or probe kind
	aux  uint16
}

func (a *event) less(b *event) bool {
	return a.t < b.t || (a.t == b.t && a.seq < b.seq)
}

// Calendar geometry: fine buckets of 2^bucketShift ns (about 2 ms),
// segments of 2^segBits fine buckets (about 268 ms) and a year of
// 2^yearSegs segments (about 34 s). Almost every timer of a pod lifecycle
// (API delays, start latencies, probe periods, grace periods, most
// lifetimes) falls within the year; the few beyond it wait in a heap. The
// fine width was chosen by measurement: narrower buckets scan more empty
// ones, wider ones make the current bucket deeper to order (a heap's
// sift-down was the sim's largest instruction count with 16-ms buckets at
// 100k pods).
const (
	bucketShift = 21
	segBits     = 7
	segShift    = bucketShift + segBits
	segBuckets  = 1 << segBits
	yearSegs    = 128
	// yearBuckets is the year in fine buckets.
	yearBuckets = yearSegs << segBits
)

// The bitmaps are whole words, and the rings' indexes masks.
var (
	_ = [1]int{}[segBuckets%64+yearSegs%64]
	_ = [1]int{}[yearSegs&(yearSegs-1)]
)

// queue orders events by (t, seq), exactly as one min-heap would, but
// shaped for a discrete-event simulation with many near-future timers: a
// calendar queue (Brown 1988) with two-millisecond buckets. A push is an
// append to its bucket; a pop takes the next event of the current
// bucket's events, sorted when the bucket becomes current, so the hot data
// is the few dozen events of the next milliseconds rather than a heap of
// every pending event (the 4-ary heap's sift-down over 10^5-10^6 events
// was the sim's largest cache-miss cost at 100k pods). Sorted rather than
// a heap (as it was) so that the engine knows the next events exactly:
// it prefetches their state (engine.prefetchNext).
//
// The calendar has two levels, as a ladder queue does (Tang, Goh and
// Thng 2005): fine buckets only for the current segment (128 buckets,
// about 268 ms), and one coarse bucket per later segment of the year. A
// timer seconds away (a probe period, a lifetime) is appended to one of
// 128 coarse buckets, not to one of 16,384 fine ones: a one-level
// calendar's push there missed the cache twice (the bucket's header, then
// its tail) and the bucket's events were cold again when it became
// current. Here the 256 tails a push may write stay cached, and a coarse
// bucket is spread over the fine ones, in one sequential pass, when its
// segment becomes current.
//
// Invariant: near[head:] holds exactly the events with t < nearEnd = next <<
// bucketShift; fine bucket b (absolute fine number, next <= b < seg <<
// segBits, all in segment seg-1) holds the events whose t>>bucketShift is
// b; coarse bucket s of the year [seg, seg+yearSegs) holds the events
// whose t>>segShift is s; far holds the rest (a heap). Every event outside
// near[head:] is later than every event in it, so near[head] is the
// queue's minimum. The zero value is an empty queue.
type queue struct {
	seq uint64
	n   int
	// near[head:] is the current bucket's events sorted by (t, seq);
	// near[:head] were popped.
	near    []event
	head    int
	nearEnd int64
	next    int64 // absolute number of the next fine bucket
	seg     int64 // absolute number of the year's first segment
	nfine   int   // events in fine buckets
	ncoarse int   // events in coarse buckets
	fine    [segBuckets][]event
	coarse  [yearSegs][]event
	fineBit [segBuckets / 64]uint64 // bit set: fine bucket non-empty
	segBit  [yearSegs / 64]uint64   // bit set: coarse bucket non-empty
	far     evHeap
}

func (q *queue) len() int { return q.n }

// push schedules e, assigning its sequence number.
func (q *queue) push(e event) {
	e.seq = q.seq
	q.seq++
	q.n++
	q.place(e)
}

// place files e where the invariant wants it.
func (q *queue) place(e event) {
	if e.t < q.nearEnd {
		q.insertNear(e)
		return
	}
	s := e.t >> segShift
	if s < q.seg {
		i := e.t >> bucketShift & (segBuckets - 1)
		q.fine[i] = append(q.fine[i], e)
		q.fineBit[i>>6] |= 1 << (i & 63)
		q.nfine++
		return
	}
	if s-q.seg >= yearSegs {
		q.far.push(e)
		return
	}
	i := s & (yearSegs - 1)
	q.coarse[i] = append(q.coarse[i], e)
	q.segBit[i>>6] |= 1 << (i & 63)
	q.ncoarse++
}

// insertNear files e in the current bucket's sorted run: after every
// event with t <= e.t (e's seq is the largest yet).
func (q *queue) insertNear(e event) {
	run := q.near[q.head:]
	i := sort.Search(len(run), func(i int) bool { return run[i].t > e.t })
	q.near = append(q.near, event{})
	run = q.near[q.head:]
	copy(run[i+1:], run[i:])
	run[i] = e
}

// upcoming returns the next events in the order pop returns them, as far
// as the current bucket goes (the prefetch reads them).
func (q *queue) upcoming() []event { return q.near[q.head:] }

// peek returns the earliest event; the queue must not be empty.
func (q *queue) peek() *event {
	if q.head == len(q.near) {
		q.advance()
	}
	return &q.near[q.head]
}

// pop removes and returns the earliest event; the queue must not be empty.
func (q *queue) pop() event {
	if q.head == len(q.near) {
		q.advance()
	}
	q.n--
	e := q.near[q.head]
	q.head++
	return e
}

// advance moves the calendar to the next non-empty fine bucket and makes
// its events the sorted run. The run is empty; the queue is not.
func (q *queue) advance() {
	for q.nfine == 0 {
		if q.ncoarse == 0 {
			// The year is empty: jump to the far heap's first segment.
			q.seg = q.far[0].t >> segShift
			q.next = q.seg << segBits
			q.nearEnd = q.next << bucketShift
			q.migrate()
			continue
		}
		// Spread the next non-empty segment over the fine buckets.
		s := q.nextSeg()
		i := s & (yearSegs - 1)
		q.seg = s + 1
		q.next = s << segBits
		q.nearEnd = q.next << bucketShift
		evs := q.coarse[i]
		q.coarse[i] = evs[:0]
		q.segBit[i>>6] &^= 1 << (i & 63)
		q.ncoarse -= len(evs)
		for k := range evs {
			q.place(evs[k])
		}
		q.migrate()
	}
	b := q.nextFine()
	i := b & (segBuckets - 1)
	q.next = b + 1
	q.nearEnd = q.next << bucketShift
	// The bucket's slice becomes the run and the empty run's storage
	// the bucket's: no copy.
	evs := q.fine[i]
	q.nfine -= len(evs)
	q.fineBit[i>>6] &^= 1 << (i & 63)
	q.fine[i], q.near, q.head = q.near[:0], evs, 0
	slices.SortFunc(evs, func(a, b event) int {
		if a.t != b.t {
			return cmp.Compare(a.t, b.t)
		}
		return cmp.Compare(a.seq, b.seq)
	})
}

// migrate moves the far events that the year now covers into it.
func (q *queue) migrate() {
	for len(q.far) > 0 && q.far[0].t>>segShift-q.seg < yearSegs {
		q.place(q.far.pop())
	}
}

// nextFine returns the absolute number of the first non-empty fine
// bucket; some is non-empty. The fine buckets from next on are the rest of
// one segment: no wrap.
func (q *queue) nextFine() int64 {
	base := q.next &^ (segBuckets - 1)
	for w := (q.next & (segBuckets - 1)) >> 6; w < int64(len(q.fineBit)); w++ {
		m := q.fineBit[w]
		if w == (q.next&(segBuckets-1))>>6 {
			m &^= 1<<(q.next&63) - 1
		}
		if m != 0 {
			return base + w<<6 + int64(bits.TrailingZeros64(m))
		}
	}
	panic("sim: queue: no full fine bucket")
}

// nextSeg returns the absolute number of the first non-empty segment of
// the year; some coarse bucket is non-empty.
func (q *queue) nextSeg() int64 {
	start := q.seg & (yearSegs - 1)
	w := start >> 6
	if m := q.segBit[w] &^ (1<<(start&63) - 1); m != 0 {
		return q.absSeg(w<<6 + int64(bits.TrailingZeros64(m)))
	}
	// The following words around the circle (the last one is start's
	// again, for the segments before start).
	for k := int64(1); k <= int64(len(q.segBit)); k++ {
		ww := (w + k) & int64(len(q.segBit)-1)
		if m := q.segBit[ww]; m != 0 {
			return q.absSeg(ww<<6 + int64(bits.TrailingZeros64(m)))
		}
	}
	panic("sim: queue: no full coarse bucket")
}

// absSeg maps a coarse bucket index to its absolute segment number in the
// year.
func (q *queue) absSeg(i int64) int64 {
	return q.seg + (i-q.seg)&(yearSegs-1)
}

// evHeap is a binary min-heap of events by (t, seq).
type evHeap []event

func (h *evHeap) push(e event) {
	*h = append(*h, e)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) >> 1
		if !s[i].less(&s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *evHeap) pop() event {
	s := *h
	top := s[0]
	n := len(s) - 1
	last := s[n]
	*h = s[:n]
	if n > 0 {
		s.down(0, last, n)
	}
	return top
}

// down sifts x into the hole at i of s[:n].
func (s evHeap) down(i int, x event, n int) {
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && s[c+1].less(&s[c]) {
			c++
		}
		if !s[c].less(&x) {
			break
		}
		s[i] = s[c]
		i = c
	}
	s[i] = x
}
