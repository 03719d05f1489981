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

func (s *AsyncSink) consume(stage int, dst Sink, in chan *batch) {
	var err error
	for b := range in {
		for i := range b.ev {
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

// PodWorker runs a PodFunc on a goroutine of its own for the histories a
// deferred Partitioner (NewDeferredPartitioner) hands it, in the order it
// takes them: the producer files events, the worker assembles, checks and
// measures pods beside it. Pods cross in batches (a goroutine woken per
// pod cost more CPU than the checking), through a bounded queue that holds
// the producer back when the worker falls behind. After fn's first error
// the worker drops the pods it takes, and Take returns the error (which
// stops the Partitioner); Close returns it too.
type PodWorker struct {
	batch []*PodHistory
	queue chan []*PodHistory
	free  chan []*PodHistory
	done  chan struct{}
	err   atomic.Pointer[error]
}

// podBatch is how many pods cross to a PodWorker at once, and
// podBatches how many batches may wait for it.
const (
	podBatch   = 64
	podBatches = 4
)

// NewPodWorker starts a worker that calls fn for each pod.
func NewPodWorker(fn PodFunc) *PodWorker {
	w := &PodWorker{
		batch: make([]*PodHistory, 0, podBatch),
		queue: make(chan []*PodHistory, podBatches),
		free:  make(chan []*PodHistory, podBatches+1),
		done:  make(chan struct{}),
	}
	go func() {
		defer close(w.done)
		var evs []Event
		for b := range w.queue {
			for i, h := range b {
				if w.err.Load() == nil {
					evs = h.Events(evs[:0])
					if err := fn(h.Run, h.Pod(), evs); err != nil {
						w.err.Store(&err)
					}
					if cap(evs) > 1<<16 {
						evs = nil // do not pin one huge history
					}
				}
				h.Release()
				b[i] = nil
			}
			select {
			case w.free <- b[:0]:
			default:
			}
		}
	}()
	return w
}

// Take queues h for the worker: NewDeferredPartitioner's function.
func (w *PodWorker) Take(h *PodHistory) error {
	if err := w.err.Load(); err != nil {
		h.Release()
		return *err
	}
	w.batch = append(w.batch, h)
	if len(w.batch) == podBatch {
		w.queue <- w.batch
		select {
		case w.batch = <-w.free:
		default:
			w.batch = make([]*PodHistory, 0, podBatch)
		}
	}
	return nil
}

// Close hands the last pods over, waits for them and returns fn's first
// error. Take must not be called afterwards.
func (w *PodWorker) Close() error {
	if len(w.batch) > 0 {
		w.queue <- w.batch
		w.batch = nil
	}
	close(w.queue)
	<-w.done
	if err := w.err.Load(); err != nil {
		return *err
	}
	return nil
}
