package sim

import (
	"context"
	"sync"

	"github.com/sidebench/sidebench/harness/history"
)

// RunTrials runs one trial per seed (trial i uses seeds[i] and writes
// run.meta Trial i) on up to workers goroutines. Each trial is
// single-threaded and deterministic, so its history does not depend on
// workers.
//
// Histories are delivered in trial order, one whole trial after another:
// sinkFor(i) is called (from the calling goroutine) when trial i becomes
// the lowest unfinished trial, receives everything trial i buffered so far
// and then trial i's events live. Trials ahead of it buffer in memory
// until their turn. So sinkFor may return the same sink for every trial
// (a single merged stream), or one sink per trial.
//
// The results are in trial order. The error is the first (in trial order)
// configuration, sink or machine error; cancelled trials return partial
// results, not errors.
func RunTrials(ctx context.Context, cfg *Config, seeds []uint64, workers int, sinkFor func(trial int) history.Sink) ([]Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n := len(seeds)
	results := make([]Result, n)
	errs := make([]error, n)
	if workers < 1 {
		workers = 1
	}
	if workers > n {
		workers = n
	}
	relays := make([]*relay, n)
	for i := range relays {
		relays[i] = &relay{}
	}
	jobs := make(chan int)
	done := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				results[i], errs[i] = run(ctx, cfg, seeds[i], i, relays[i])
				done <- i
			}
		}()
	}
	go func() {
		for i := 0; i < n; i++ {
			jobs <- i
		}
		close(jobs)
	}()
	finished := make([]bool, n)
	head := 0
	if n > 0 {
		if err := relays[0].promote(sinkFor(0)); err != nil && errs[0] == nil {
			errs[0] = err
		}
	}
	for k := 0; k < n; k++ {
		i := <-done
		finished[i] = true
		for head < n && finished[head] {
			head++
			if head < n {
				if err := relays[head].promote(sinkFor(head)); err != nil && errs[head] == nil {
					errs[head] = err
				}
			}
		}
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return results, err
		}
	}
	return results, nil
}

// relay is a trial's sink: it buffers events until the trial's turn, then
// hands the buffer and every later event to the real sink.
type relay struct {
	mu   sync.Mutex
	live bool
	sink history.Sink
	buf  []history.Event
	err  error
}

func (r *relay) Write(e *history.Event) error {
	r.mu.Lock()
	if r.live {
		r.mu.Unlock()
		return r.sink.Write(e)
	}
	r.buf = append(r.buf, *e)
	r.mu.Unlock()
	return nil
}

func (r *relay) promote(s history.Sink) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sink = s
	for i := range r.buf {
		if err := s.Write(&r.buf[i]); err != nil {
			r.buf = nil
			r.live = true
			return err
		}
	}
	r.buf = nil
	r.live = true
	return nil
}
