package sim

import (
	"math/rand/v2"
	"testing"

	"github.com/sidebench/sidebench/internal/perfstat"
)

// refHeap is the 4-ary min-heap the calendar queue replaced, kept as the
// reference order: the queue must pop exactly what it pops, so histories
// stay byte-identical.
type refHeap struct {
	h   []event
	seq uint64
}

func (q *refHeap) push(e event) {
	e.seq = q.seq
	q.seq++
	q.h = append(q.h, e)
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

func (q *refHeap) pop() event {
	h := q.h
	top := h[0]
	n := len(h) - 1
	if n > 0 {
		last := h[n]
		q.h = h[:n]
		h = q.h
		i := 0
		for {
			c := i<<2 + 1
			if c >= n {
				break
			}
			m := c
			for j := c + 1; j < min(c+4, n); j++ {
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

// delay draws a timer the way a sim trial arms them at time now: mostly
// within milliseconds to seconds, some exactly on fine bucket or segment
// edges or tied, a few beyond the calendar's year.
func delay(r *rand.Rand, now int64) int64 {
	switch r.IntN(11) {
	case 0:
		return 1 // the next nanosecond
	case 1:
		return int64(r.IntN(4)) << bucketShift // bucket edges (0: now, tied)
	case 2:
		return int64(r.IntN(1 << bucketShift))
	case 3, 4, 5:
		return int64(r.IntN(2e9))
	case 6, 7:
		return int64(r.IntN(60e9))
	case 8:
		return int64(yearBuckets)<<bucketShift + int64(r.IntN(3))<<bucketShift - 1 + int64(r.IntN(3)) // around the year's end
	case 9:
		// around the start of this segment's next or the one after
		return (now>>segShift+1+int64(r.IntN(2)))<<segShift - now - 1 + int64(r.IntN(3))
	default:
		return int64(r.IntN(2 * 3600e9)) // far beyond the year
	}
}

// TestQueueMatchesHeap drives the calendar queue and the reference heap
// with the same pushes and pops, as the engine does (a push is never
// before the last pop's time), and requires the same events in the same
// order.
func TestQueueMatchesHeap(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		r := rand.New(rand.NewPCG(seed, seed))
		var q queue
		var ref refHeap
		now := int64(0)
		id := uint32(0)
		pushes := 1 + r.IntN(5)
		for step := 0; step < 60_000; step++ {
			if step%5000 == 0 {
				pushes = 1 + r.IntN(5) // vary the pending population
			}
			for k := r.IntN(pushes + 1); k > 0; k-- {
				id++
				e := event{t: now + delay(r, now), evWho: evWho{id: id}}
				q.push(e)
				ref.push(e)
			}
			if q.len() != len(ref.h) {
				t.Fatalf("seed %d step %d: len %d, reference %d", seed, step, q.len(), len(ref.h))
			}
			if q.len() == 0 {
				continue
			}
			if r.IntN(3) == 0 {
				if p := q.peek(); *p != ref.h[0] {
					t.Fatalf("seed %d step %d: peek %+v, reference %+v", seed, step, *p, ref.h[0])
				}
			}
			got, want := q.pop(), ref.pop()
			if got != want {
				t.Fatalf("seed %d step %d: popped %+v, reference %+v", seed, step, got, want)
			}
			now = got.t
		}
		for q.len() > 0 {
			if got, want := q.pop(), ref.pop(); got != want {
				t.Fatalf("seed %d drain: popped %+v, reference %+v", seed, got, want)
			}
		}
		if len(ref.h) != 0 {
			t.Fatalf("seed %d: reference has %d more events", seed, len(ref.h))
		}
	}
}

// TestQueueOrder: arbitrary pushes (also before the last pop's time)
// still pop in (t, seq) order.
func TestQueueOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	var q queue
	for round := 0; round < 3; round++ {
		for i := 0; i < 5000; i++ {
			q.push(event{t: int64(r.IntN(100 << bucketShift)), evWho: evWho{slot: int32(i)}})
		}
		prev := event{t: -1}
		for n := 0; n < 2500; n++ {
			e := q.pop()
			if e.t < prev.t || (e.t == prev.t && e.seq < prev.seq) {
				t.Fatalf("popped %+v after %+v", e, prev)
			}
			prev = e
		}
	}
	for q.len() > 0 {
		q.pop()
	}
}

// benchHold is the classic hold model: n pending events, each pop pushes
// one event a random delay later.
func benchHold(b *testing.B, n int, push func(event), pop func() event) {
	r := rand.New(rand.NewPCG(1, 1))
	for i := 0; i < n; i++ {
		push(event{t: int64(r.IntN(30e9))})
	}
	b.ResetTimer()
	cpu0 := perfstat.CPUTime()
	for i := 0; i < b.N; i++ {
		e := pop()
		e.t += int64(r.IntN(30e9))
		push(e)
	}
	b.ReportMetric(float64(perfstat.CPUTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

// benchHoldMixed is the hold model with the sim's mix of delays (delay).
func benchHoldMixed(b *testing.B, n int, push func(event), pop func() event) {
	r := rand.New(rand.NewPCG(1, 1))
	for i := 0; i < n; i++ {
		push(event{t: delay(r, 0)})
	}
	b.ResetTimer()
	cpu0 := perfstat.CPUTime()
	for i := 0; i < b.N; i++ {
		e := pop()
		e.t += delay(r, e.t)
		push(e)
	}
	b.ReportMetric(float64(perfstat.CPUTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

func BenchmarkQueueHold(b *testing.B) {
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		b.Run("calendar/mixed/n="+itoa(n), func(b *testing.B) {
			var q queue
			benchHoldMixed(b, n, q.push, q.pop)
		})
		b.Run("heap4/mixed/n="+itoa(n), func(b *testing.B) {
			var q refHeap
			benchHoldMixed(b, n, q.push, q.pop)
		})
		b.Run("calendar/n="+itoa(n), func(b *testing.B) {
			var q queue
			benchHold(b, n, q.push, q.pop)
		})
		b.Run("heap4/n="+itoa(n), func(b *testing.B) {
			var q refHeap
			benchHold(b, n, q.push, q.pop)
		})
	}
}

func itoa(n int) string {
	s := ""
	for {
		s = string(rune('0'+n%10)) + s
		n /= 10
		if n == 0 {
			return s
		}
	}
}
