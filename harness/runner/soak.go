package runner

import (
	"context"
	"fmt"
	"math"
	"time"

	"k8s.io/utils/clock"

	"github.com/sidebench/sidebench/harness/backend"
	"github.com/sidebench/sidebench/harness/rundir"
	"github.com/sidebench/sidebench/harness/scenario"
	"github.com/sidebench/sidebench/reports/render"
)

// SoakOptions configure a soak: trials with fresh seeds (trial n of every
// scenario and policy, then n+1, ...) until Duration has passed.
type SoakOptions struct {
	// Dir is the run directory; Resume continues the soak in it
	// (Scenarios then come from the directory).
	Dir       string
	Resume    bool
	Scenarios []*scenario.Scenario
	// Duration bounds the time spent starting trials (on a resume, the
	// resumed part).
	Duration time.Duration
	// Checkpoint is how often summary.json and the reports are rewritten
	// (at the next commit) and RSS is sampled.
	Checkpoint time.Duration
	// Clock measures Duration and Checkpoint (default: real).
	Clock clock.Clock
	// RSS reads the process's resident set size (nil: not sampled).
	RSS func() int64
}

// Soak runs or resumes a soak. Everything committed survives a crash or
// SIGKILL; `Resume` continues with the trials not yet committed, counting
// none twice.
func Soak(ctx context.Context, o Options, so SoakOptions) (*Result, error) {
	clk := so.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	var (
		d     *rundir.Dir
		scens []*scenario.Scenario
		err   error
		agg   *Aggregate
	)
	keep := func(s *scenario.Scenario, p string) bool { ok, _ := backend.Supports(o.Backend, p); return ok }
	if so.Resume {
		d, scens, err = rundir.Open(so.Dir, o.DirOptions...)
		if err != nil {
			return nil, err
		}
		// A resume keeps what the soak was started with: the same
		// retention and slice (a --max-disk given again replaces the
		// budget).
		if o.Keep, err = rundir.ParseRetention(d.Info.KeepHistory); err == nil && d.Info.Shard != "" {
			o.Shard, err = ParseShard(d.Info.Shard)
		}
		if err != nil {
			d.Close()
			return nil, &rundir.UsageError{Err: fmt.Errorf("%s: run.json: %w", so.Dir, err)}
		}
		if o.MaxDisk > 0 {
			d.Info.MaxDisk = o.MaxDisk
		}
		agg = NewAggregate(scens, keep)
		if _, err := agg.loadCommitted(so.Dir, d.Info); err != nil {
			d.Close()
			return nil, err
		}
		agg.Resumed = d.Resumed
	} else {
		scens = so.Scenarios
		d, err = rundir.Create(so.Dir, o.info("soak", clk.Now(), so.Duration.String()), scens, o.DirOptions...)
		if err != nil {
			return nil, err
		}
		agg = NewAggregate(scens, keep)
	}
	started := d.Info.StartedAt
	res := &Result{Dirs: []string{so.Dir}}
	filters := map[*scenario.Scenario]func(*scenario.Scenario, string) bool{}
	prog := map[string]ScenarioProgress{}
	for _, s := range scens {
		filters[s] = o.Filter(s)
		prog[s.Metadata.Name] = nopProgress{}
		if o.Progress != nil {
			prog[s.Metadata.Name] = o.Progress.AddScenario(s.Metadata.Name, 0, 0)
		}
	}
	t0 := clk.Now()
	var rss []render.RSSPoint
	var progress []render.ProgressPoint
	sample := func() {
		at := math.Round(clk.Since(t0).Seconds()*1000) / 1000
		if so.RSS != nil {
			rss = append(rss, render.RSSPoint{ElapsedSeconds: at, Bytes: so.RSS()})
		}
		progress = append(progress, agg.progress(at)...)
	}
	var stopped string
	meta := func(status string) Meta {
		return Meta{Command: "soak", Backend: o.BackendName, Status: status, StartedAt: started, Elapsed: clk.Since(t0),
			Build: o.Build, RSS: rss, Progress: progress, Strict: o.Strict, Extra: o.Extra, Stopped: stopped}
	}
	sample()
	if err := WriteReports(so.Dir, Judge(agg, meta(StatusRunning))); err != nil {
		d.Close()
		return nil, &ReportError{err}
	}
	// The duration bounds the time spent running trials: it starts after
	// the setup (a resume re-reads every committed trial), and the first
	// trial always runs.
	deadline := clk.Now().Add(so.Duration)
	lastCk := clk.Now()
	var ckErr error
	oc := o
	oc.onCommit = func() {
		if clk.Since(lastCk) < so.Checkpoint || ckErr != nil {
			return
		}
		lastCk = clk.Now()
		sample()
		ckErr = WriteReports(so.Dir, Judge(agg, meta(StatusRunning)))
	}
	// Trials in order: number n, then scenario, then policy.
	var batch []scenario.Trial
	n := 0
	first := true
	oc.admit = func() bool {
		if first {
			first = false
			return true
		}
		return !clk.Now().After(deadline)
	}
	next := func() (scenario.Trial, bool) {
		for len(batch) == 0 {
			runnable := false
			for _, s := range scens {
				for _, t := range scenario.ExpandRange(s, n, n+1) {
					if filters[s](s, t.Policy) {
						runnable = true
						if oc.Shard.Owns(n) {
							batch = append(batch, t)
						}
					}
				}
			}
			n++
			if !runnable {
				return scenario.Trial{}, false // nothing the backend can run
			}
		}
		t := batch[0]
		batch = batch[1:]
		return t, true
	}
	stopped, err = oc.execute(ctx, d, agg, next, func(name string) ScenarioProgress {
		if p := prog[name]; p != nil {
			return p
		}
		return nopProgress{}
	})
	for _, p := range prog {
		p.Done()
	}
	sample()
	status := StatusComplete
	if ctx.Err() != nil || agg.Partial || stopped != "" {
		status = StatusPartial
	}
	res.Partial = status != StatusComplete
	res.Stopped = stopped
	out := Judge(agg, meta(status))
	werr := WriteReports(so.Dir, out)
	cerr := d.Close()
	res.State = out
	switch {
	case err != nil:
		return res, err
	case werr != nil:
		return res, &ReportError{werr}
	case ckErr != nil:
		return res, &ReportError{ckErr}
	case cerr != nil:
		return res, cerr
	}
	o.reportUnapplied(out)
	if res.Partial {
		res.State.State.Pass = false
	}
	return res, nil
}
