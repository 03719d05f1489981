package sim

// event is one scheduled happening. It is a small value (32 bytes) so the
// queue is a flat slice with no per-event allocation and no pointers for
// the garbage collector to scan (ANCHORS.md §4).
type event struct {
	t   int64  // virtual time, ns since trial start
	seq uint64 // push order: deterministic tie-break for equal t
	// slot indexes the pod (pod events), the node (node events), the
	// workload (arrivals) or the fault (fault events).
	slot int32
	// id is the pod's unique id (stale-slot check) or a fault instance.
	id   uint32
	gen  uint32 // generation the event belongs to (meaning depends on kind)
	kind evKind
	c    uint8 // container index (pod events) or probe kind
	aux  uint16
}

func (a *event) less(b *event) bool {
	return a.t < b.t || (a.t == b.t && a.seq < b.seq)
}

// queue is a 4-ary min-heap of events by (t, seq). A 4-ary heap halves the
// depth of a binary heap and keeps the children of a node in one or two
// cache lines.
type queue struct {
	h   []event
	seq uint64
}

func (q *queue) len() int { return len(q.h) }

// push schedules e, assigning its sequence number.
func (q *queue) push(e event) {
	e.seq = q.seq
	q.seq++
	q.h = append(q.h, e)
	// sift up
	h := q.h
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) >> 2
		if !h[i].less(&h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

// peek returns the earliest event; the queue must not be empty.
func (q *queue) peek() *event { return &q.h[0] }

// pop removes and returns the earliest event.
func (q *queue) pop() event {
	h := q.h
	top := h[0]
	n := len(h) - 1
	if n > 0 {
		last := h[n]
		q.h = h[:n]
		h = q.h
		// sift down the hole at 0 with last
		i := 0
		for {
			c := i<<2 + 1
			if c >= n {
				break
			}
			m := c
			end := c + 4
			if end > n {
				end = n
			}
			for j := c + 1; j < end; j++ {
				if h[j].less(&h[m]) {
					m = j
				}
			}
			if !h[m].less(&last) {
				break
			}
			h[i] = h[m]
			i = m
		}
		h[i] = last
	} else {
		q.h = h[:0]
	}
	return top
}
