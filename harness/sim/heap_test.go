package sim

import (
	"math/rand/v2"
	"testing"
)

func TestQueueOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	var q queue
	for round := 0; round < 3; round++ {
		for i := 0; i < 5000; i++ {
			q.push(event{t: int64(r.IntN(100)), slot: int32(i)})
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

func BenchmarkQueueHold(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	var q queue
	for i := 0; i < 100_000; i++ {
		q.push(event{t: int64(r.IntN(1 << 30))})
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e := q.pop()
		e.t += int64(r.IntN(1 << 20))
		q.push(e)
	}
}
