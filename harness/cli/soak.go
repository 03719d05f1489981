package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/sidebench/sidebench/harness/scenario"
)

type soakFlags struct {
	runFlags
	duration   time.Duration
	checkpoint time.Duration
	resume     string
}

const soakLong = `Repeat trials of the given scenarios with fresh seeds (trial n uses a seed
derived from the master seed and n) until --duration has passed, and keep
the run directory consistent at all times:

  - a trial is committed only once its history, pods and findings are
    appended and fsynced; then its line is appended to journal.jsonl;
  - every --checkpoint, summary.json is rewritten atomically (temporary file
    and rename) with the resident set size over time (rss);
  - after a crash or SIGKILL, 'soak --resume DIR' truncates whatever was
    written after the last committed trial and continues with the next
    trial numbers: nothing committed is lost and no trial is counted twice.
    --duration then bounds the resumed part (default: the original value).

Ctrl-C stops cleanly; trials in flight are committed, marked partial.

Exit codes:
  0  every criterion met
  1  a violation or a criterion failed (or the soak was interrupted)
  2  usage or validation error
  3  internal error`

func newSoakCommand(streams IOStreams) *cobra.Command {
	f := &soakFlags{}
	cmd := &cobra.Command{
		Use:   "soak --duration D [flags] FILE...  |  soak --resume DIR",
		Short: "Run trials with fresh seeds for a long time, crash-safely",
		Long:  soakLong,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSoak(cmd.Context(), streams, f, args)
		},
	}
	f.register(cmd)
	fl := cmd.Flags()
	_ = fl.MarkHidden("trials") // a soak runs trials until --duration
	fl.DurationVar(&f.duration, "duration", 0, "how long to keep starting trials (e.g. 8h)")
	fl.DurationVar(&f.checkpoint, "checkpoint", 5*time.Minute, "how often to rewrite summary.json and sample RSS")
	fl.StringVar(&f.out, "out", "", "run directory (default reports/runs/<UTC timestamp>-soak-<first scenario>)")
	fl.StringVar(&f.resume, "resume", "", "continue the soak in this run directory")
	return cmd
}

func runSoak(ctx context.Context, streams IOStreams, f *soakFlags, files []string) error {
	if f.parallel < 1 {
		return usageErr("--parallel must be >= 1")
	}
	if f.checkpoint <= 0 {
		return usageErr("--checkpoint must be > 0")
	}
	var (
		rd    *runDir
		scens []*scenario.Scenario
		err   error
	)
	if f.resume != "" {
		if len(files) > 0 {
			return usageErr("soak --resume takes no scenario files (the run directory has them)")
		}
		rd, scens, err = openRunDir(f.resume)
		if err != nil {
			return asInternal(err)
		}
		if f.duration == 0 {
			d, perr := time.ParseDuration(rd.info.Duration)
			if perr != nil {
				return usageErr("--resume: no --duration given and run.json has none")
			}
			f.duration = d
		}
		fmt.Fprintf(streams.ErrOut, "sidebench: resuming %s after %d committed trials\n", f.resume, rd.resumed)
	} else {
		if len(files) == 0 {
			return usageErr("soak: at least one scenario file is required (or --resume DIR)")
		}
		if f.duration <= 0 {
			return usageErr("soak: --duration is required (e.g. --duration 8h)")
		}
		scens, err = loadScenarios(streams, files, f.seed, 0)
		if err != nil {
			return err
		}
		dir := f.out
		if dir == "" {
			dir = filepath.Join("reports", "runs", time.Now().UTC().Format("20060102T150405Z")+"-soak-"+scens[0].Metadata.Name)
		}
		info := runInfo{Command: "soak", Backend: backendName(f.backend, scens[0]), Seed: f.seed, Duration: f.duration.String(),
			StartedAt: time.Now().UTC(), Version: version()}
		rd, err = createRunDir(dir, info, scens)
		if err != nil {
			return asInternal(err)
		}
	}
	localOpts = localOptions{nodes: 3, log: streams.ErrOut}
	be, err := newBackend(rd.info.Backend)
	if err != nil {
		rd.close()
		return err
	}
	if c, ok := be.(interface{ Close() error }); ok {
		defer c.Close() // the local backend's cluster, on every way out
	}
	rep, err := f.reporter(streams.ErrOut)
	if err != nil {
		rd.close()
		return err
	}
	prog := map[string]interface{ TrialDone(int, int) }{}
	for _, s := range scens {
		prog[s.Metadata.Name] = rep.AddScenario(s.Metadata.Name, 0, 0)
	}

	start := time.Now()
	deadline := start.Add(f.duration)
	// Trials in order: number n, then scenario, then policy.
	var per [][]scenario.Trial
	n, k := 0, 0
	next := func() (scenario.Trial, bool) {
		if time.Now().After(deadline) {
			return scenario.Trial{}, false
		}
		if k == 0 {
			per = per[:0]
			for _, s := range scens {
				per = append(per, scenario.ExpandRange(s, n, n+1))
			}
		}
		var flat []scenario.Trial
		for _, ts := range per {
			flat = append(flat, ts...)
		}
		t := flat[k]
		k++
		if k == len(flat) {
			k, n = 0, n+1
		}
		return t, true
	}

	rd.sampleRSS()
	var rw *reportWarning
	if _, err := rd.writeSummary(); err != nil && !errors.As(err, &rw) {
		rd.close()
		rep.Close()
		return asInternal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var ckErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(f.checkpoint)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				rd.sampleRSS()
				var rw *reportWarning
				if _, err := rd.writeSummary(); err != nil && !errors.As(err, &rw) && ckErr == nil {
					ckErr = err
				}
			}
		}
	}()
	err = rd.execute(ctx, be, next, execOptions{parallel: f.parallel, onCommit: func(o *trialOut) {
		prog[o.t.Scenario.Metadata.Name].TrialDone(o.podCount, o.violations)
	}})
	close(stop)
	wg.Wait()
	rep.Close()
	rd.sampleRSS()
	sum, serr := rd.writeSummary()
	rd.close()
	if errors.As(serr, &rw) {
		fmt.Fprintf(streams.ErrOut, "sidebench: warning: %s: %v\n", rd.dir, rw)
	} else if err == nil {
		err = serr
	}
	if err == nil {
		err = ckErr
	}
	if err != nil {
		return asInternal(err)
	}
	writeTable(streams.Out, sum.Rows)
	if !f.quiet {
		fmt.Fprintf(streams.ErrOut, "sidebench: wrote %s (%d trials committed)\n", rd.dir, sum.TrialsCommitted)
	}
	switch {
	case ctx.Err() != nil || sum.Partial:
		fmt.Fprintln(streams.ErrOut, "sidebench: interrupted: results are partial (summary.json partial: true); continue with soak --resume")
		return silent(ExitFailed)
	case !sum.Pass:
		return silent(ExitFailed)
	}
	return nil
}
