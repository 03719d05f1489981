package history

// AsyncSink hands events to another Sink on its own goroutine, in batches,
// so that an expensive consumer (the partitioner and checkers, a JSONL
// encoder) runs beside the producer (a simulation) instead of inside it.
// Order is preserved. Events are copied, so the producer may reuse its
// Event. Close must be called to flush and to learn the consumer's error.
type AsyncSink struct {
	dst   Sink
	size  int
	buf   []Event
	full  chan []Event
	free  chan []Event
	done  chan error
	err   error
	close bool
}

// NewAsyncSink starts the consumer goroutine. batch is the number of
// events handed over at once (0: 4096).
func NewAsyncSink(dst Sink, batch int) *AsyncSink {
	if batch <= 0 {
		batch = 4096
	}
	s := &AsyncSink{dst: dst, size: batch, full: make(chan []Event, 4), free: make(chan []Event, 6), done: make(chan error, 1)}
	s.buf = make([]Event, 0, batch)
	go s.consume()
	return s
}

func (s *AsyncSink) consume() {
	var err error
	for b := range s.full {
		for i := range b {
			if err == nil {
				err = s.dst.Write(&b[i])
			}
		}
		clear(b) // drop Spec/Meta references
		select {
		case s.free <- b[:0]:
		default:
		}
	}
	s.done <- err
}

// Write queues a copy of e.
func (s *AsyncSink) Write(e *Event) error {
	s.buf = append(s.buf, *e)
	if len(s.buf) == s.size {
		s.full <- s.buf
		select {
		case s.buf = <-s.free:
		default:
			s.buf = make([]Event, 0, s.size)
		}
	}
	return nil
}

// Close flushes what is queued, waits for the consumer and returns the
// first error it met.
func (s *AsyncSink) Close() error {
	if s.close {
		return s.err
	}
	s.close = true
	if len(s.buf) > 0 {
		s.full <- s.buf
	}
	close(s.full)
	s.err = <-s.done
	return s.err
}
