// Package runner runs scenarios: it turns them into trials, filters the
// policies the backend cannot run (one filter), drives each trial through
// a backend (harness/backend), checks and measures every pod as it
// finishes, commits each trial to the run directory (harness/rundir), and
// judges the result (Judge): one pipeline for `run`, `soak` and the
// differential run, so they cannot disagree.
//
// The runner imports no backend: the CLI's composition root passes one in.
package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sidebench/sidebench/harness/backend"
	"github.com/sidebench/sidebench/harness/check"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/metrics"
	"github.com/sidebench/sidebench/harness/rundir"
	"github.com/sidebench/sidebench/harness/scenario"
	"github.com/sidebench/sidebench/harness/trial"
	"github.com/sidebench/sidebench/internal/version"
	"github.com/sidebench/sidebench/reports/render"
)

// Progress receives the run's progress (harness/progress implements it).
type Progress interface {
	AddScenario(label string, trials, pods int) ScenarioProgress
}

// ScenarioProgress is one scenario's progress: PodsDone as pods finish
// within a trial (from the checking goroutine), TrialDone as trials
// commit, Done at the end.
type ScenarioProgress interface {
	PodsDone(n int)
	TrialDone(pods, violations int)
	Done()
}

// Options configure a run.
type Options struct {
	Backend     backend.Backend
	BackendName string
	// Parallel is the number of trials run at once (default 1).
	Parallel int
	Progress Progress
	// Log receives what a user must know beside the result: skipped
	// policies, faults the backend could not apply. Nil discards.
	Log   io.Writer
	Build version.Info
	// Strict: INSUFFICIENT DATA and partial runs fail.
	Strict bool
	// Invocation is recorded in every run directory's run.json
	// (rundir.Info.Invocation): the CLI sets one for a run of several
	// scenarios.
	Invocation string
	// Seed and Trials are the command line's overrides (0: the
	// scenario's), recorded in run.json for a resume.
	Seed   uint64
	Trials int
	// BackendOptions are recorded in run.json (nodes, feature gates...).
	BackendOptions map[string]string
	// Extra are backend facts for the report header.
	Extra map[string]string
	// Keep is what is kept of the pods' histories and records (every
	// pod is checked and measured whatever it is).
	Keep rundir.Retention
	// MaxDisk bounds the run directory's size (0: no bound): the run stops
	// before a commit would exceed it, as partial (Result.Stopped).
	MaxDisk int64
	// Shard, if set, runs only one slice of the trials (Shard.Owns).
	Shard Shard
	// DirOptions configure the run directory (tests inject failures).
	DirOptions []rundir.Option

	// onCommit runs after each commit on the committing goroutine (the
	// soak's checkpoints: the aggregate only changes there).
	onCommit func()
	// admit is asked when a worker is about to start a trial (the soak's
	// deadline): false ends the run there. Asking at the start, not when
	// the trial is taken from the source, makes a soak's length a
	// function of its clock alone.
	admit func() bool
	// serialTrials runs every trial on one goroutine even when there are
	// cores to spare (BenchmarkRunParallelTrials: how trials alone scale).
	serialTrials bool
	// onTrialMode, if set, is told how each trial runs as it starts
	// (tests: trialMode's per-trial decision).
	onTrialMode func(pipelined bool)
}

func (o *Options) logf(format string, args ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, "sidebench: "+format+"\n", args...)
	}
}

// Job is one scenario and the run directory it goes to.
type Job struct {
	Scenario *scenario.Scenario
	Dir      string
}

// Result is what a run gave.
type Result struct {
	Dirs []string
	// State is the judged result over every scenario of the run (rows in
	// order, overall verdict).
	State Outcome
	// Partial: interrupted, stopped by --max-disk, or a trial cut short.
	Partial bool
	// Stopped says why the run stopped before its end other than an
	// interruption (--max-disk), "" otherwise.
	Stopped string
	// NotRun names the scenarios the run never started (it was
	// interrupted or stopped first): they have no directory and no row.
	NotRun []string
}

// Pass reports whether the run passes: complete, no FAIL, and under
// Strict no INSUFFICIENT DATA.
func (r *Result) Pass() bool { return r.State.State.Pass }

// ReportError is a failure to write the reports (a full disk): the run's
// data is committed, but its results could not be written.
type ReportError struct{ Err error }

func (e *ReportError) Error() string { return "writing the reports: " + e.Err.Error() }
func (e *ReportError) Unwrap() error { return e.Err }

// Filter returns the trials of s the backend runs, and says (through Log)
// which policies it skips and why: the one policy filter of run, soak and
// the differential run.
func (o *Options) Filter(s *scenario.Scenario) func(s *scenario.Scenario, policy string) bool {
	said := map[string]bool{}
	return func(s *scenario.Scenario, policy string) bool {
		ok, why := backend.Supports(o.Backend, policy)
		if !ok && !said[policy] {
			said[policy] = true
			o.logf("%s: policy %s skipped on --backend %s: %s", s.Metadata.Name, policy, o.BackendName, why)
		}
		return ok
	}
}

// Run runs each job's scenario (every policy × trial the backend runs)
// into its run directory, writes its reports, and judges everything.
func Run(ctx context.Context, o Options, jobs []Job) (*Result, error) {
	res := &Result{}
	var all []*Aggregate
	var metas []Meta
	for n, j := range jobs {
		if ctx.Err() != nil || res.Stopped != "" {
			res.Partial = true
			for _, rest := range jobs[n:] {
				res.NotRun = append(res.NotRun, rest.Scenario.Metadata.Name)
			}
			break
		}
		s := j.Scenario
		keep := o.Filter(s)
		var trials []scenario.Trial
		for i, t := range scenario.Expand(s) {
			if keep(s, t.Policy) && o.Shard.Owns(i) {
				trials = append(trials, t)
			}
		}
		agg := NewAggregate([]*scenario.Scenario{s}, func(s *scenario.Scenario, p string) bool { ok, _ := backend.Supports(o.Backend, p); return ok })
		started := time.Now()
		d, err := rundir.Create(j.Dir, o.info("run", started, ""), []*scenario.Scenario{s}, o.DirOptions...)
		if err != nil {
			return res, err
		}
		res.Dirs = append(res.Dirs, j.Dir)
		var prog ScenarioProgress = nopProgress{}
		if o.Progress != nil {
			prog = o.Progress.AddScenario(s.Metadata.Name, len(trials), len(trials)*s.TotalPods())
		}
		i := 0
		next := func() (scenario.Trial, bool) {
			if i >= len(trials) {
				return scenario.Trial{}, false
			}
			i++
			return trials[i-1], true
		}
		stopped, err := o.execute(ctx, d, agg, next, func(string) ScenarioProgress { return prog })
		prog.Done()
		status := StatusComplete
		if ctx.Err() != nil || agg.Partial || stopped != "" {
			status = StatusPartial
		}
		m := Meta{Command: "run", Backend: o.BackendName, Status: status, StartedAt: started, Elapsed: time.Since(started),
			Build: o.Build, Strict: o.Strict, Extra: o.Extra, Stopped: stopped}
		out := Judge(agg, m)
		werr := WriteReports(j.Dir, out)
		cerr := d.Close()
		if err != nil {
			return res, err
		}
		if werr != nil {
			return res, &ReportError{werr}
		}
		if cerr != nil {
			return res, cerr
		}
		o.reportUnapplied(out)
		all = append(all, agg)
		metas = append(metas, m)
		res.Partial = res.Partial || status != StatusComplete
		if stopped != "" {
			res.Stopped = stopped
		}
	}
	res.State = JudgeAll(all, metas, o.Strict)
	if res.Partial {
		res.State.State.Pass = false
	}
	return res, nil
}

// JudgeAll merges the judged rows of several run directories (one per
// scenario) into one result table and overall verdict.
func JudgeAll(aggs []*Aggregate, metas []Meta, strict bool) Outcome {
	var out Outcome
	out.State.Pass = true
	verdict := ""
	for i, a := range aggs {
		o := Judge(a, metas[i])
		out.State.Rows = append(out.State.Rows, o.State.Rows...)
		out.Runs = append(out.Runs, o.Runs...)
		out.State.TrialsCommitted += o.State.TrialsCommitted
		out.State.Pass = out.State.Pass && o.State.Pass
		verdict = worse(verdict, o.State.Verdict)
		out.State.Partial = out.State.Partial || o.State.Partial
	}
	if verdict == "" {
		verdict = "PASS"
	}
	out.State.Verdict = verdict
	return out
}

func worse(a, b string) string {
	rank := map[string]int{"": 0, "PASS": 1, "INSUFFICIENT DATA": 2, "FAIL": 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// info is the run.json of a new run directory.
func (o *Options) info(command string, started time.Time, duration string) rundir.Info {
	return rundir.Info{Command: command, Backend: o.BackendName, Seed: o.Seed, Trials: o.Trials, Duration: duration,
		StartedAt: started.UTC(), Version: o.Build.Version, Build: o.Build, Options: o.BackendOptions,
		KeepHistory: o.Keep.String(), Shard: o.Shard.String(), MaxDisk: o.MaxDisk, Invocation: o.Invocation}
}

// reportUnapplied says, per scenario, how many fault firings the backend
// could not inject: they are never counted as applied, and a reader of
// the result table must know the faults it claims to cover did not all
// happen. One wrapped line per scenario with the totals by fault kind;
// each policy's counts and the reasons are in the report's "Faults
// injected" section (a line per scenario × policy × kind with every
// reason was 63 lines of up to 250 columns for the shipped scenarios).
func (o *Options) reportUnapplied(out Outcome) {
	type counts struct{ applied, notApplied int }
	var scenarios []string
	byScenario := map[string]map[string]*counts{}
	for _, r := range out.State.Rows {
		for k, c := range r.Faults {
			if c.NotApplied == 0 {
				continue
			}
			kinds := byScenario[r.Scenario]
			if kinds == nil {
				kinds = map[string]*counts{}
				byScenario[r.Scenario] = kinds
				scenarios = append(scenarios, r.Scenario)
			}
			if kinds[k] == nil {
				kinds[k] = &counts{}
			}
			kinds[k].applied += c.Applied
			kinds[k].notApplied += c.NotApplied
		}
	}
	for _, name := range scenarios {
		var parts []string
		for _, k := range sortedKeys(byScenario[name]) {
			c := byScenario[name][k]
			parts = append(parts, fmt.Sprintf("%s %d (%d applied)", k, c.notApplied, c.applied))
		}
		line := fmt.Sprintf("%s on %s: fault firings NOT applied (nothing to act on): %s; per policy, and why, in its report's \"Faults injected\"",
			name, o.BackendName, strings.Join(parts, ", "))
		o.logf("%s", render.Wrap(line, render.TableWidth-len("sidebench: "), "  "))
	}
}

type nopProgress struct{}

func (nopProgress) PodsDone(int)       {}
func (nopProgress) TrialDone(int, int) {}
func (nopProgress) Done()              {}

// finished is a trial run but not yet committed.
type finished struct {
	*rundir.Finished
	t     scenario.Trial
	stats *rundir.TrialStats
	finds []rundir.FindingRecord
	figs  *trialFigures
}

// trialMode decides how a trial that starts with inFlight trials running
// (itself included) on procs cores runs. It runs as a pipeline when there
// are cores to spare for it at that moment: the backend, the history
// encoder, and the partitioning, checking and measuring on three
// goroutines; checkers get the cores left over beyond those (on two cores
// the checking is synchronous: handing pods to checker goroutines cost
// more CPU than the checking, BenchmarkConsume). A trial that starts while
// others fill the cores runs on one goroutine instead: the stages'
// hand-offs would only add work, and independent trials scale over the
// cores by themselves (BenchmarkRunParallel's small trials).
//
// The decision is per trial, not per run: with --parallel 2 on two cores a
// run of one large trial (a certification) is pipelined like --parallel 1
// instead of running on one core beside an idle worker (twice the wall
// time, when the decision was made once from --parallel), while many small
// trials still run two at a time, each on one goroutine.
func trialMode(procs, inFlight int, serial bool) (pipeline bool, checkWorkers int) {
	inFlight = max(inFlight, 1)
	return procs > inFlight && !serial, max(procs/inFlight-2, 1)
}

// execute runs trials from next on Parallel workers and commits them in
// source order, several at once when they finish faster than a commit (a
// group commit: one fsync per file). Cancelling ctx stops taking new
// trials; trials in flight finish as partial and are committed. The first
// error cancels the rest. A commit that would take the directory past
// MaxDisk is not made: the run stops there and stopped says why.
func (o *Options) execute(parent context.Context, d *rundir.Dir, agg *Aggregate, next func() (scenario.Trial, bool), progOf func(scenario string) ScenarioProgress) (stopped string, _ error) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	par := max(o.Parallel, 1)
	procs := runtime.GOMAXPROCS(0)
	var inFlight atomic.Int32 // trials running, for trialMode
	type job struct {
		seq int
		t   scenario.Trial
	}
	type result struct {
		seq     int
		out     *finished
		err     error
		skipped bool
	}
	committed := func(t scenario.Trial) bool {
		return agg.Seen(rundir.Key{ScenarioHash: t.Scenario.Hash, Policy: t.Policy, Seed: t.Seed, Trial: t.Number})
	}
	jobs := make(chan job)
	results := make(chan result, par)
	closed := make(chan struct{}) // no more trials: the admission said so
	var closeOnce sync.Once
	go func() {
		defer close(jobs)
		for seq := 0; ctx.Err() == nil; {
			t, ok := next()
			if !ok {
				return
			}
			if committed(t) {
				continue
			}
			select {
			case jobs <- job{seq, t}:
				seq++
			case <-ctx.Done():
				return
			case <-closed:
				return
			}
		}
	}()
	var wg sync.WaitGroup
	var mu sync.Mutex // admit is called from every worker
	for range par {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				admitted := ctx.Err() == nil
				if admitted && o.admit != nil {
					mu.Lock()
					admitted = o.admit()
					mu.Unlock()
					if !admitted {
						closeOnce.Do(func() { close(closed) })
					}
				}
				if !admitted {
					results <- result{seq: j.seq, skipped: true}
					continue
				}
				pipeline, checkWorkers := trialMode(procs, int(inFlight.Add(1)), o.serialTrials)
				if o.onTrialMode != nil {
					o.onTrialMode(pipeline)
				}
				out, err := o.runTrial(ctx, d, j.t, pipeline, checkWorkers, progOf(j.t.Scenario.Metadata.Name))
				inFlight.Add(-1)
				results <- result{seq: j.seq, out: out, err: err}
			}
		}()
	}
	go func() { wg.Wait(); close(results) }()
	pending := map[int]result{}
	nextSeq := 0
	var firstErr error
	drop := func(out *finished) {
		if out != nil && out.History != nil {
			out.History.Close()
		}
	}
	commit := func(batch []*finished) {
		if len(batch) == 0 {
			return
		}
		if firstErr != nil || stopped != "" {
			for _, f := range batch {
				drop(f)
			}
			return
		}
		var size int64
		parts := make([]*rundir.Finished, len(batch))
		for i, f := range batch {
			size += f.Size()
			parts[i] = f.Finished
		}
		if err := d.CheckBudget(size); err != nil {
			stopped = err.Error()
			o.logf("%s", stopped)
			for _, f := range batch {
				drop(f)
			}
			cancel()
			return
		}
		es, err := d.Commit(parts...)
		if err != nil {
			firstErr = fmt.Errorf("committing %s: %w", batch[0].t, err)
			for _, f := range batch {
				drop(f)
			}
			cancel()
			return
		}
		for i := range es {
			f := batch[i]
			if agg.AddTrial(&es[i], f.stats, f.finds) {
				agg.addFigures(es[i].Scenario, f.figs)
			}
			progOf(es[i].Scenario).TrialDone(es[i].Pods, es[i].Violations)
			if o.onCommit != nil {
				o.onCommit()
			}
		}
	}
	for r := range results {
		pending[r.seq] = r
		// Take every result that is next in order, including those that
		// arrived while the last commit ran: they commit together.
		var batch []*finished
	drain:
		for {
			r, ok := pending[nextSeq]
			if !ok {
				select {
				case more, open := <-results:
					if open {
						pending[more.seq] = more
						continue
					}
				default:
				}
				break drain
			}
			delete(pending, nextSeq)
			nextSeq++
			switch {
			case r.skipped:
			case r.err != nil:
				if firstErr == nil {
					commit(batch) // what finished before the error stays
					batch = nil
					firstErr = r.err
					cancel()
				}
			case firstErr != nil || stopped != "":
				drop(r.out)
			default:
				batch = append(batch, r.out)
			}
		}
		commit(batch)
	}
	if parent.Err() != nil {
		agg.Partial = true
	}
	return stopped, firstErr
}

// runTrial compiles and runs one trial, checking and measuring its pods
// as they finish (the history is never held in memory): every pod is
// counted and measured into the trial's TrialStats, and the retention
// (Options.Keep) decides which pods' histories and records are kept. Under
// RetainAll the history is the backend's event stream; otherwise each kept
// pod is written as a run of its own (run.meta, the pod's history as the
// checker saw it, run.end), which `check` re-checks to the same findings.
// Pipelined, the history is encoded on one goroutine and partitioned,
// checked and measured on another, beside the backend; otherwise all of
// it runs on the backend's goroutine.
func (o *Options) runTrial(ctx context.Context, d *rundir.Dir, t scenario.Trial, pipeline bool, checkWorkers int, prog ScenarioProgress) (*finished, error) {
	plan, err := trial.Compile(t)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t, err)
	}
	seg := d.NewSegment(plan.Scenario, plan.Policy, plan.Number)
	ok := false
	defer func() {
		if !ok {
			seg.Close()
		}
	}()
	fw := rundir.NewFrameWriter(seg)
	defer fw.Close()
	hw := history.NewWriter(fw)
	keep := o.Keep
	lat := metrics.NewAggregator(metrics.Options{})
	var podsFrame bytes.Buffer
	pw := rundir.NewFrameWriter(&podsFrame)
	defer pw.Close()
	rw := metrics.NewRecordWriter(pw)
	pods, retained := 0, 0
	var hookErr error
	user := newUserCounts(comparesWorkarounds(t.Scenario))
	onPod := func(meta *history.Meta, pod string, evs []history.Event, v check.PodVerdict) {
		rec := metrics.FromEvents(meta, pod, evs)
		rec.Unmet = v.Unmet
		lat.Add(&rec)
		user.add(&rec)
		prog.PodsDone(1)
		if !keep.Keep(plan.Seed, pod, v.Notable) || hookErr != nil {
			return
		}
		retained++
		if err := rw.Write(&rec); err != nil {
			hookErr = err
			return
		}
		if !keep.All() {
			hookErr = writePodRun(hw, meta, evs)
		}
	}
	cr := check.NewRunner(check.Workers(checkWorkers), check.KeepPods(keepViolationPods, keepOtherPods), check.OnPod(onPod))
	checkPod := func(meta *history.Meta, pod string, evs []history.Event) error {
		pods++
		cr.Add(meta, pod, evs)
		return nil
	}
	tally := faultTally{}
	tap := newFaultTap(plan.Policy, plan.Number)
	var (
		sink   history.Sink
		part   *history.Partitioner
		async  *history.AsyncSink
		worker *history.PodWorker
	)
	switch {
	case !pipeline:
		// Everything on the backend's goroutine.
		part = history.NewPartitioner(checkPod)
		sinks := []history.Sink{part, tally, tap}
		if keep.All() {
			sinks = append(sinks, hw)
		}
		sink = newTee(sinks...)
	case keep.All():
		// The history encoder keeps another core busy, so the cores are
		// full and what counts is the work in all: the backend's
		// goroutine files each event in its pod's compact buffer (the sim
		// prefetches the buffer with the rest of the pod's state,
		// history.Prefetcher) and a finished pod crosses to the checker's
		// goroutine as that buffer (history.PodWorker: assembled,
		// checked and measured there), instead of a third goroutine
		// reading every event from the encoder's batches to file it
		// (BenchmarkRunCertify: -4.6% CPU, -3.8% wall).
		worker = history.NewPodWorker(checkPod)
		part = history.NewDeferredPartitioner(worker.Take)
		async = history.NewPipeline(0, hw)
		sink = newTee(part, tally, tap, async)
	default:
		// Checking only: a second core is free and the backend's goroutine
		// is what the trial waits for, so it hands its events over in
		// batches and the partitioning, checking and measuring run on
		// the other goroutine (filing on the backend's goroutine took
		// +23% wall for the same CPU: BenchmarkCheckingCost, session 15).
		part = history.NewPartitioner(checkPod)
		async = history.NewPipeline(0, newTee(part, tally, tap))
		sink = async
	}
	stats, runErr := o.Backend.RunTrial(ctx, plan, sink)
	var perr error
	first := func(err error) {
		if perr == nil {
			perr = err
		}
	}
	if async != nil {
		first(async.Close()) // the last events reach the stages
	}
	first(part.Close())
	if worker != nil {
		first(worker.Close())
	}
	rep := cr.Close()
	if runErr != nil {
		return nil, fmt.Errorf("%s: %w", t, runErr)
	}
	if perr == nil {
		perr = hookErr
	}
	if perr != nil {
		return nil, fmt.Errorf("%s: %w", t, perr)
	}
	if err := hw.Flush(); err != nil {
		return nil, err
	}
	if err := fw.Close(); err != nil {
		return nil, err
	}
	if err := rw.Flush(); err != nil {
		return nil, err
	}
	if err := pw.Close(); err != nil {
		return nil, err
	}
	e := rundir.Entry{Scenario: plan.Scenario, ScenarioHash: plan.ScenarioHash, Policy: plan.Policy, Trial: plan.Number, Seed: plan.Seed,
		Pods: pods, Violations: rep.Violations(), ViolatingPods: rep.ViolatingPods, Partial: stats.Partial, Retained: retained,
		ElapsedNanos: int64(stats.Elapsed)}
	st := &rundir.TrialStats{Rows: rep.Rows, Matrix: rep.Matrix, GroupViolatingPods: rep.GroupViolatingPods, Metrics: lat.Snapshot(), User: user.stats()}
	for _, row := range rep.Rows {
		e.Degradations += row.Degradations
	}
	if len(tally) > 0 {
		st.Faults = tally
	}
	out := &finished{t: t, stats: st}
	var fb bytes.Buffer
	for i := range rep.Findings {
		fr := rundir.NewFindingRecord(plan.Scenario, plan.Policy, plan.Number, plan.Seed, &rep.Findings[i])
		b, err := json.Marshal(fr)
		if err != nil {
			return nil, err
		}
		fb.Write(b)
		fb.WriteByte('\n')
		out.finds = append(out.finds, fr)
	}
	fin, err := rundir.NewFinished(e, seg, podsFrame.Bytes(), fb.Bytes(), st)
	if err != nil {
		return nil, err
	}
	out.Finished = fin
	out.figs = trialFiguresOf(tap, rep, plan.Policy, plan.Number, plan.Seed)
	ok = true
	return out, nil
}

// writePodRun writes one kept pod as a run of its own: its run's
// run.meta, its history as the partitioner delivered it (the pod's events
// with its node's and the cluster's), and run.end: partitioning it again
// gives the same pod history, so the checker re-derives the same findings.
func writePodRun(hw *history.Writer, meta *history.Meta, evs []history.Event) error {
	if err := hw.Write(&history.Event{Kind: history.RunMeta, Meta: meta}); err != nil {
		return err
	}
	for i := range evs {
		if err := hw.Write(&evs[i]); err != nil {
			return err
		}
	}
	if n := len(evs); n > 0 && evs[n-1].Kind == history.RunEnd {
		return nil // cut short by its run's end: the partition carries it
	}
	end := history.Event{Kind: history.RunEnd, Msg: "complete"}
	if n := len(evs); n > 0 {
		end.T = evs[n-1].T
	}
	return hw.Write(&end)
}

// teeSink writes every event to each of its sinks in turn, and passes
// a prefetch hint (history.Prefetcher) on to those that take one.
type teeSink struct {
	sinks []history.Sink
	pf    []history.Prefetcher
}

func newTee(sinks ...history.Sink) *teeSink {
	t := &teeSink{sinks: sinks}
	for _, s := range sinks {
		if pf, ok := s.(history.Prefetcher); ok {
			t.pf = append(t.pf, pf)
		}
	}
	return t
}

// Prefetch passes the hint on to the sinks that take one.
func (t *teeSink) Prefetch(slot int32) {
	for _, pf := range t.pf {
		pf.Prefetch(slot)
	}
}

func (t *teeSink) Write(e *history.Event) error {
	for _, s := range t.sinks {
		if err := s.Write(e); err != nil {
			return err
		}
	}
	return nil
}

// faultTally counts fault.effect and fault.not-applied events of a
// history as it streams by.
type faultTally map[string]*rundir.FaultCount

func (t faultTally) Write(e *history.Event) error {
	if e.Kind != history.FaultEffect && e.Kind != history.FaultNotApplied {
		return nil
	}
	c := t[e.Fault]
	if c == nil {
		c = &rundir.FaultCount{}
		t[e.Fault] = c
	}
	if e.Kind == history.FaultEffect {
		c.Applied++
	} else {
		c.NotApplied++
		c.Reason(e.Msg)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
