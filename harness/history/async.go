package history

import "sync/atomic"

// AsyncSink hands events to other Sinks, each on its own goroutine, in
// batches, so that expensive consumers (a JSONL encoder writing a file;
// the partitioner, checkers and metrics) run beside the producer (a
// simulation) and beside each other instead of inside it: a pipeline over
// the cores. Every consumer sees every event, in order. The queues are
// bounded: a consumer that falls behind by queueDepth batches blocks the
// producer rather than growing memory. Events are copied once, into the
// batch the consumers share, so the producer may reuse its Event. Close
// must be called to flush and to learn the consumers' errors.
type AsyncSink struct {
	size  int
	buf   *batch
	outs  []chan *batch
	free  chan *batch
	done  chan stageErr
	err   error
	close bool
}

// batch is a run of events shared by every consumer; the last consumer
// done with it returns it to the free list.
type batch struct {
	ev   []Event
	refs atomic.Int32
}

type stageErr struct {
	stage int
	err   error
}

// queueDepth is the number of batches a consumer may lag behind.
const queueDepth = 4

// NewAsyncSink starts one consumer goroutine for dst. batch is the number
// of events handed over at once (0: 4096).
func NewAsyncSink(dst Sink, batch int) *AsyncSink { return NewPipeline(batch, dst) }

// NewPipeline starts one consumer goroutine per stage; each stage sees
// every event. batch is the number of events handed over at once (0:
// 4096).
func NewPipeline(size int, stages ...Sink) *AsyncSink {
	if size <= 0 {
		size = 4096
	}
	s := &AsyncSink{size: size, free: make(chan *batch, queueDepth*len(stages)+2), done: make(chan stageErr, len(stages))}
	for i, dst := range stages {
		out := make(chan *batch, queueDepth)
		s.outs = append(s.outs, out)
		go s.consume(i, dst, out)
	}
	s.buf = s.newBatch()
	return s
}

func (s *AsyncSink) newBatch() *batch {
	select {
	case b := <-s.free:
		return b
	default:
		return &batch{ev: make([]Event, 0, s.size)}
	}
}

// prefetchAhead is how many events ahead of the one it writes a
// consumer prefetches for (a Prefetcher stage): far enough for the
// loads to arrive, near enough to stay in the cache until used.
const prefetchAhead = 8

func (s *AsyncSink) consume(stage int, dst Sink, in chan *batch) {
	var err error
	pf, _ := dst.(Prefetcher)
	for b := range in {
		for i := range b.ev {
			if pf != nil && i+prefetchAhead < len(b.ev) {
				pf.Prefetch(b.ev[i+prefetchAhead].Slot)
			}
			if err == nil {
				err = dst.Write(&b.ev[i])
			}
		}
		if b.refs.Add(-1) == 0 {
			// The events are overwritten when the batch is reused; their
			// Spec/Meta/strings stay reachable until then (bounded by the
			// batches in flight).
			b.ev = b.ev[:0]
			select {
			case s.free <- b:
			default:
			}
		}
	}
	s.done <- stageErr{stage, err}
}

// Write queues a copy of e.
func (s *AsyncSink) Write(e *Event) error {
	b := s.buf
	b.ev = append(b.ev, *e)
	if len(b.ev) == s.size {
		s.hand(b)
		s.buf = s.newBatch()
	}
	return nil
}

// hand gives b to every consumer.
func (s *AsyncSink) hand(b *batch) {
	b.refs.Store(int32(len(s.outs)))
	for _, out := range s.outs {
		out <- b
	}
}

// Close flushes what is queued, waits for the consumers and returns the
// first error of the first stage that failed (in stage order).
func (s *AsyncSink) Close() error {
	if s.close {
		return s.err
	}
	s.close = true
	if len(s.buf.ev) > 0 {
		s.hand(s.buf)
	}
	for _, out := range s.outs {
		close(out)
	}
	errs := make([]error, len(s.outs))
	for range s.outs {
		r := <-s.done
		errs[r.stage] = r.err
	}
	for _, err := range errs {
		if err != nil {
			s.err = err
			break
		}
	}
	return s.err
}
