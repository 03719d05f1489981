package check

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/sidebench/sidebench/harness/history"
)

// podResult is one pod's outcome, folded by the aggregator.
type podResult struct {
	seq        uint64
	hookEvents *[]history.Event // the pod's events, kept for the OnPod hook
	hookWeight int              // their in-flight budget, released after it
	meta       *history.Meta
	name       string
	findings   []Finding
	unknown    uint64 // bit i: checker i failed on this pod
	errs       []PodError
	// events is a copy of the pod's events, made by the worker when the
	// pod has findings and KeepPods may keep it.
	events []history.Event
}

// worker holds the per-goroutine scratch space reused across pods, so a
// pod without findings costs no allocation beyond its result.
type worker struct {
	pod      Pod
	hits     []Hit
	checkers []Checker
	stored   []atomic.Int64 // shared with the aggregator: findings stored per checker
	cap      int

	// fns are the checkers' Check functions, resolved once (prepare): a
	// registered checker's own function, not two interface and method
	// calls per checker and pod.
	fns []func(p *Pod, hits []Hit) []Hit
	// needs are their preconditions (inv.needs), 0 for every checker when
	// ungated.
	needs   []feature
	ungated bool
	// plans caches the checkers to run by the pod's features: the pods
	// of a run share a few feature sets, and walking the 20-odd that run
	// costs less than testing the 54 preconditions.
	plans [4]plan
}

// plan lists the checkers (indices) to run on pods with features feat.
type plan struct {
	feat feature
	ok   bool
	run  []int
}

// planFor returns the checkers to run on a pod with features f.
func (w *worker) planFor(f feature) []int {
	pl := &w.plans[uint64(f)*0x9e3779b97f4a7c15>>62] // direct-mapped by a hash of f
	if !pl.ok || pl.feat != f {
		pl.feat, pl.ok, pl.run = f, true, pl.run[:0]
		for ci, m := range w.needs {
			if m == 0 || f&m != 0 {
				pl.run = append(pl.run, ci)
			}
		}
	}
	return pl.run
}

// prepare resolves the checkers' functions on first use (workers are
// built as literals).
func (w *worker) prepare() {
	w.fns = make([]func(*Pod, []Hit) []Hit, len(w.checkers))
	w.needs = make([]feature, len(w.checkers))
	for ci, ch := range w.checkers {
		if c, ok := ch.(*inv); ok {
			w.fns[ci] = c.fn
			if !w.ungated {
				w.needs[ci] = c.needs
			}
		} else {
			w.fns[ci] = ch.Check
		}
	}
}

// check runs on one pod every checker that can report on it (the others'
// preconditions rule them out: inv.needs). A checker that panics yields
// Unknown for this pod, with the panic attached (Jepsen's check-safe).
func (w *worker) check(meta *history.Meta, name string, events []history.Event, res *podResult) {
	res.meta = meta
	if err := w.pod.build(meta, name, events); err != nil {
		res.unknown = 1<<uint(len(w.checkers)) - 1
		res.errs = append(res.errs, PodError{Pod: name, Err: err.Error()})
		return
	}
	if w.fns == nil {
		w.prepare()
	}
	run := w.planFor(w.pod.feat) // the others cannot report anything on it
	for k := 0; k < len(run); {
		k = w.checkFrom(run, k, name, res)
	}
}

// checkFrom runs the checkers run[k:]. It returns len(run), or, when
// checker run[j] panics, records the panic (Unknown for that checker on
// this pod, the panic and its stack in the errors) and returns j+1 for
// check to resume there. One deferred recover per pod rather than one per
// checker: the guard was a tenth of the cost of a typical pod.
func (w *worker) checkFrom(run []int, k int, name string, res *podResult) (next int) {
	p := &w.pod
	inCheck := false
	ci := 0
	defer func() {
		if !inCheck {
			// Not a checker's panic (classification, excerpt): it was
			// never recovered, and is not now.
			return
		}
		if r := recover(); r != nil {
			id := w.checkers[ci].ID()
			res.unknown |= 1 << uint(ci)
			res.errs = append(res.errs, PodError{ID: id, Pod: name, Err: fmt.Sprintf("%s panicked: %v\n%s", id, r, debug.Stack())})
			next = k + 1
		}
	}()
	for ; k < len(run); k++ {
		ci = run[k]
		inCheck = true
		hits := w.fns[ci](p, w.hits[:0])
		inCheck = false
		w.hits = hits
		if len(hits) == 0 {
			continue
		}
		ch := w.checkers[ci]
		for k := range hits {
			f := p.classify(ch, &hits[k])
			f.chk = ci
			// Findings of pods before this one are folded already; if they
			// filled the cap, this one will not be stored: skip the copy.
			if w.stored == nil || w.stored[ci].Load() < int64(w.cap) {
				p.excerpt(&f, hits[k].A, hits[k].B)
			}
			res.findings = append(res.findings, f)
		}
	}
	return k
}

// Option configures a Runner.
type Option func(*Runner)

// Workers sets the number of checking goroutines; 1 checks synchronously
// inside Add. The default is GOMAXPROCS.
func Workers(n int) Option { return func(r *Runner) { r.workers = max(n, 1) } }

// FindingsCap sets how many findings per invariant the report keeps
// (all are counted). The default is 100.
func FindingsCap(n int) Option { return func(r *Runner) { r.cap = max(n, 0) } }

// PodHook receives each checked pod, in the order the pods were added,
// with its history (valid only during the call) and the checker's verdict
// on it: what a run needs to decide which histories to keep and to count
// the user-level guarantees per pod.
type PodHook func(meta *history.Meta, pod string, events []history.Event, v PodVerdict)

// PodVerdict is what the checker found on one pod.
type PodVerdict struct {
	// Notable: a finding of any class, or a checker that failed.
	Notable bool
	// Unmet lists the user-level guarantees the pod did not get (class
	// Unmet), in checker order, each once.
	Unmet []string
}

// OnPod sets a hook called for every pod once it is checked and folded.
func OnPod(fn PodHook) Option { return func(r *Runner) { r.onPod = fn } }

// Ungated runs every checker on every pod, even where the pod's history
// rules its precondition out (inv.needs): the same report, at a higher
// cost. It is the reference the gating is tested against.
func Ungated() Option { return func(r *Runner) { r.ungated = true } }

// WithCheckers replaces the registered checkers (tests, or a subset).
func WithCheckers(cs ...Checker) Option { return func(r *Runner) { r.checkers = cs } }

// Runner checks pods as they finish, in parallel, and folds the results in
// the order the pods were added, so the same input gives the same Report
// whatever the scheduling. Memory is bounded by the pods in flight
// (a few per worker), not by the history.
type Runner struct {
	workers  int
	cap      int
	keepV    int
	keepO    int
	keepView atomic.Pointer[keepView] // what the keeper still takes (KeepPods)
	checkers []Checker
	ungated  bool
	seq      uint64
	agg      *aggregator
	onPod    PodHook

	// Synchronous mode (workers == 1): results are folded at once, so one
	// result buffer is reused.
	sync *worker
	res  podResult

	// Parallel mode.
	big     *worker // checks long histories in Add's goroutine
	stored  []atomic.Int64
	jobs    chan job
	results chan *podResult
	slots   chan struct{} // bounds pods in flight, including folded-late ones
	// inflight bounds the events copied for the workers.
	inflight *budget
	wg       sync.WaitGroup
	done     chan struct{}
	pool     sync.Pool
}

type job struct {
	seq    uint64
	meta   *history.Meta
	name   string
	events *[]history.Event
	weight int // events counted against the in-flight budget
}

// maxInflightEvents bounds the events of the pods copied to workers and
// not yet checked (about 256 MB). Pods are few events each, but one that
// lived through many node or cluster events can hold millions: without a
// bound, 4 such pods per worker could be copied at once.
const maxInflightEvents = 1 << 20

// maxPooledEvents bounds the event buffers kept for reuse, so one huge
// pod does not pin its copy.
const maxPooledEvents = 1 << 16

// bigPod is the history length from which Add checks a pod itself.
const bigPod = 1 << 14

// budget is a counting semaphore over events.
type budget struct {
	mu      sync.Mutex
	cond    sync.Cond
	avail   int
	waiting int
}

func newBudget(n int) *budget {
	b := &budget{avail: n}
	b.cond.L = &b.mu
	return b
}

// acquire takes n units (at most the whole budget, so one pod bigger than
// the budget runs alone) and returns how many it took.
func (b *budget) acquire(n int) int {
	n = min(max(n, 1), maxInflightEvents)
	b.mu.Lock()
	for b.avail < n {
		b.waiting++
		b.cond.Wait()
		b.waiting--
	}
	b.avail -= n
	b.mu.Unlock()
	return n
}

func (b *budget) release(n int) {
	b.mu.Lock()
	b.avail += n
	wake := b.waiting > 0
	b.mu.Unlock()
	if wake {
		b.cond.Broadcast()
	}
}

// NewRunner returns a Runner over the registered checkers.
func NewRunner(opts ...Option) *Runner {
	r := &Runner{workers: runtime.GOMAXPROCS(0), cap: 100, checkers: registry}
	for _, o := range opts {
		o(r)
	}
	if len(r.checkers) > 64 {
		panic("check: at most 64 checkers")
	}
	r.agg = newAggregator(r.checkers, r.cap)
	r.agg.keep = keeper{wantV: r.keepV, wantO: r.keepO}
	r.keepView.Store(r.agg.keep.view())
	r.stored = make([]atomic.Int64, len(r.checkers))
	if r.workers == 1 {
		r.sync = &worker{checkers: r.checkers, stored: r.stored, cap: r.cap, ungated: r.ungated}
		return r
	}
	inflight := 4 * r.workers
	r.jobs = make(chan job, inflight)
	r.results = make(chan *podResult, inflight)
	r.slots = make(chan struct{}, inflight)
	r.inflight = newBudget(maxInflightEvents)
	r.done = make(chan struct{})
	for range r.workers {
		r.wg.Add(1)
		go r.work()
	}
	go r.collect()
	return r
}

// Add checks one pod's history (as history.PodFunc delivers it: the pod's
// events with its node's and the cluster's interleaved). events may be
// reused by the caller once Add returns. Add is not safe for concurrent
// use: the order of calls is the order of the report.
func (r *Runner) Add(meta *history.Meta, pod string, events []history.Event) {
	r.seq++
	if r.sync != nil {
		r.res = podResult{findings: r.res.findings[:0], errs: r.res.errs[:0]}
		r.sync.check(meta, pod, events, &r.res)
		r.agg.fold(&r.res)
		if r.agg.keep.enabled() {
			r.agg.keep.consider(&r.agg.rep, &r.res, pod, events)
		}
		if len(r.res.findings) > 0 {
			r.publishStored()
		}
		if r.onPod != nil {
			r.onPod(meta, pod, events, r.res.verdict())
		}
		return
	}
	r.slots <- struct{}{}
	if len(events) >= bigPod {
		// A long history is checked here rather than copied for a worker:
		// the copy would cost as much as the check.
		if r.big == nil {
			r.big = &worker{checkers: r.checkers, stored: r.stored, cap: r.cap, ungated: r.ungated}
		}
		res := &podResult{seq: r.seq, name: pod}
		r.big.check(meta, pod, events, res)
		if r.onPod != nil {
			// The hook runs at the fold, after Add returned: it needs a copy.
			buf := new([]history.Event)
			*buf = append(*buf, events...)
			res.hookEvents = buf
		}
		r.results <- res
		return
	}
	w := r.inflight.acquire(len(events))
	buf, _ := r.pool.Get().(*[]history.Event)
	if buf == nil {
		buf = new([]history.Event)
	}
	*buf = append((*buf)[:0], events...)
	r.jobs <- job{seq: r.seq, meta: meta, name: pod, events: buf, weight: w}
}

func (r *Runner) work() {
	defer r.wg.Done()
	w := &worker{checkers: r.checkers, stored: r.stored, cap: r.cap, ungated: r.ungated}
	for j := range r.jobs {
		res := &podResult{seq: j.seq, name: j.name}
		w.check(j.meta, j.name, *j.events, res)
		if len(res.findings) > 0 && (r.keepV+r.keepO) > 0 && r.keepView.Load().mayKeep(res.findings) {
			res.events = append([]history.Event(nil), *j.events...)
		}
		if r.onPod != nil {
			// Recycled, and the budget released, after the hook.
			res.hookEvents, res.hookWeight = j.events, j.weight
		} else {
			r.recycle(j.events)
			r.inflight.release(j.weight)
		}
		r.results <- res
	}
}

func (r *Runner) recycle(events *[]history.Event) {
	clear(*events) // drop Spec/Meta pointers before pooling
	if cap(*events) <= maxPooledEvents {
		r.pool.Put(events)
	}
}

// verdict is the hook's summary of the pod's result.
func (res *podResult) verdict() PodVerdict {
	v := PodVerdict{Notable: len(res.findings) > 0 || len(res.errs) > 0}
	for i := range res.findings {
		if f := &res.findings[i]; f.Class == Unmet && !slices.Contains(v.Unmet, f.ID) {
			v.Unmet = append(v.Unmet, f.ID)
		}
	}
	return v
}

// collect folds results strictly in seq order; early arrivals wait in
// pending, which the slots semaphore keeps small.
func (r *Runner) collect() {
	defer close(r.done)
	pending := map[uint64]*podResult{}
	next := uint64(1)
	for res := range r.results {
		pending[res.seq] = res
		for {
			res, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			r.agg.fold(res)
			if r.agg.keep.enabled() && res.events != nil {
				before := len(r.agg.rep.Kept)
				r.agg.keep.consider(&r.agg.rep, res, res.name, res.events)
				if len(r.agg.rep.Kept) != before {
					r.keepView.Store(r.agg.keep.view())
				}
			}
			if len(res.findings) > 0 {
				r.publishStored()
			}
			if res.hookEvents != nil {
				r.onPod(res.meta, res.name, *res.hookEvents, res.verdict())
				r.recycle(res.hookEvents)
				r.inflight.release(res.hookWeight)
			}
			next++
			<-r.slots
		}
	}
}

// Close waits for the pods in flight and returns the Report. The Runner
// must not be used afterwards.
func (r *Runner) Close() *Report {
	if r.sync == nil {
		close(r.jobs)
		r.wg.Wait()
		close(r.results)
		<-r.done
	}
	return r.agg.finish()
}

// CheckEvents checks a whole in-memory history (one or more runs, in
// history order): it partitions it per pod and runs every checker.
func CheckEvents(events []history.Event, opts ...Option) *Report {
	r := NewRunner(opts...)
	part := history.NewPartitioner(func(meta *history.Meta, pod string, evs []history.Event) error {
		r.Add(meta, pod, evs)
		return nil
	})
	for i := range events {
		_ = part.Write(&events[i]) // the PodFunc never fails
	}
	_ = part.Close()
	return r.Close()
}

// publishStored tells the workers how many findings each invariant has
// stored, so they stop copying excerpts nobody will keep.
func (r *Runner) publishStored() {
	for ci := range r.stored {
		r.stored[ci].Store(int64(r.agg.stored[ci]))
	}
}
