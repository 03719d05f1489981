package sim

import "math/bits"

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

// Calendar geometry: buckets of 2^bucketShift ns (about 2 ms) and a year
// of 2^yearBits buckets (about 34 s; yearBits >= 12 for the two-level
// bitmap). Almost every timer of a pod lifecycle (API delays, start
// latencies, probe periods, grace periods, most lifetimes) falls within
// the year; the few beyond it wait in a heap. Chosen by measurement:
// narrower buckets scan more empty ones, wider ones make the current
// bucket's heap deeper (the sift-down was the sim's largest instruction
// count with 16-ms buckets at 100k pods).
const (
	bucketShift = 21
	yearBits    = 14
	yearBuckets = 1 << yearBits
)

// queue orders events by (t, seq), exactly as one min-heap would, but
// shaped for a discrete-event simulation with many near-future timers: a
// calendar queue (Brown 1988) with two-millisecond buckets. A push is an
// append to its bucket; a pop takes the minimum of a small heap holding
// only the current bucket's events, so the hot data is the few dozen
// events of the next milliseconds rather than a heap of every pending
// event (the 4-ary heap's sift-down over 10^5-10^6 events was the sim's
// largest cache-miss cost at 100k pods).
//
// Invariant: near holds exactly the events with t < nearEnd = next <<
// bucketShift; bucket b of the year [next, next+yearBuckets) holds the
// events whose t>>bucketShift is b (unordered); far holds the rest (a
// heap). Every event outside near is later than every event in near, so
// near's minimum is the queue's. The zero value is an empty queue.
type queue struct {
	seq     uint64
	n       int
	near    evHeap
	nearEnd int64
	next    int64 // absolute number of the year's first bucket
	buckets [yearBuckets][]event
	full    [yearBuckets / 64]uint64      // bit set: bucket non-empty
	words   [yearBuckets / 64 / 64]uint64 // bit set: word of full non-zero
	nfull   int                           // events in buckets
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
		q.near.push(e)
		return
	}
	b := e.t >> bucketShift
	if b-q.next >= yearBuckets {
		q.far.push(e)
		return
	}
	i := b & (yearBuckets - 1)
	q.buckets[i] = append(q.buckets[i], e)
	q.full[i>>6] |= 1 << (i & 63)
	q.words[i>>12] |= 1 << ((i >> 6) & 63)
	q.nfull++
}

// peek returns the earliest event; the queue must not be empty.
func (q *queue) peek() *event {
	if len(q.near) == 0 {
		q.advance()
	}
	return &q.near[0]
}

// pop removes and returns the earliest event; the queue must not be empty.
func (q *queue) pop() event {
	if len(q.near) == 0 {
		q.advance()
	}
	q.n--
	return q.near.pop()
}

// advance moves the calendar to the next non-empty bucket and makes its
// events the near heap. near is empty; the queue is not.
func (q *queue) advance() {
	for len(q.near) == 0 {
		if q.nfull == 0 {
			// The year is empty: jump to the far heap's first bucket.
			q.next = q.far[0].t >> bucketShift
			q.nearEnd = q.next << bucketShift
			q.migrate()
			continue
		}
		b := q.nextFull()
		i := b & (yearBuckets - 1)
		q.next = b + 1
		q.nearEnd = q.next << bucketShift
		// The bucket's slice becomes the heap and the empty heap's
		// storage the bucket's: no copy.
		evs := q.buckets[i]
		q.nfull -= len(evs)
		if q.full[i>>6] &^= 1 << (i & 63); q.full[i>>6] == 0 {
			q.words[i>>12] &^= 1 << ((i >> 6) & 63)
		}
		q.buckets[i], q.near = q.near[:0], evHeap(evs)
		q.near.init()
		q.migrate()
	}
}

// migrate moves the far events that the year now covers into it.
func (q *queue) migrate() {
	for len(q.far) > 0 && q.far[0].t>>bucketShift-q.next < yearBuckets {
		q.place(q.far.pop())
	}
}

// nextFull returns the absolute number of the first non-empty bucket of
// the year; some bucket is non-empty. Two levels of bitmaps make the
// search a few word scans however sparse the year is.
func (q *queue) nextFull() int64 {
	start := q.next & (yearBuckets - 1)
	// The rest of start's word of buckets.
	w := start >> 6
	if m := q.full[w] &^ (1<<(start&63) - 1); m != 0 {
		return q.abs(w<<6 + int64(bits.TrailingZeros64(m)))
	}
	// The following words of start's summary word, then whole summary
	// words around the circle (the last one covers the buckets before
	// start).
	sw := w >> 6
	if m := q.words[sw] &^ (1<<((w&63)+1) - 1); m != 0 {
		ww := sw<<6 + int64(bits.TrailingZeros64(m))
		return q.abs(ww<<6 + int64(bits.TrailingZeros64(q.full[ww])))
	}
	for k := int64(1); k <= int64(len(q.words)); k++ {
		s := (sw + k) & int64(len(q.words)-1)
		if m := q.words[s]; m != 0 {
			ww := s<<6 + int64(bits.TrailingZeros64(m))
			return q.abs(ww<<6 + int64(bits.TrailingZeros64(q.full[ww])))
		}
	}
	panic("sim: queue: no full bucket")
}

// abs maps a bucket index to its absolute number in the year.
func (q *queue) abs(i int64) int64 {
	return q.next + (i-q.next)&(yearBuckets-1)
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

// init establishes the heap order over the whole slice.
func (h evHeap) init() {
	n := len(h)
	for i := n/2 - 1; i >= 0; i-- {
		h.down(i, h[i], n)
	}
}
