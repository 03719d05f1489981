package cli

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sidebench/sidebench/harness/rundir"
	"github.com/sidebench/sidebench/harness/runner"
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

  - a trial is committed only once its compressed frames (history, pods,
    findings, trials) are appended and fsynced; then its line is appended
    to journal.jsonl (trials that finish during a commit are committed
    together: one fsync per file);
  - by default (--keep-history sample:0.1) the histories and per-pod
    records of the pods with findings are kept, plus 0.1% of the others
    chosen by a hash of the trial seed and pod name; every pod is checked
    and measured, and the counts and latency distributions of all of them
    are kept: an 8-hour soak of scenarios/soak-profile.yaml fits in 5 GB
    (docs/performance.md);
  - --max-disk SIZE stops the soak cleanly before the directory exceeds
    SIZE (exit 1, summary.json status partial with the reason);
  - every --checkpoint (at the next commit), the reports and summary.json
    are rewritten atomically with the resident set size over time (rss)
    and status "running";
  - after a crash or SIGKILL, 'soak --resume DIR' cuts whatever was written
    after the last committed trial and continues with the trials not yet
    committed: nothing committed is lost and no trial is counted twice.
    --duration then bounds the resumed part (default: the original value);
    the seed, --keep-history and shard stay the soak's own.
    A journal line that is corrupt (other than a torn last line), a
    scenario copy edited since the run started, a directory another
    process holds, or one that is not a soak's (run, merge) is refused
    (exit 2) and nothing is changed.

Run and soak share one runner: the same flags (but --trials, as a soak
runs until --duration, and --include-large, as a soak runs every scenario
it is given), the same policy filter, the same verdicts. Soaks run on the
sim backend; --backend local and kube are refused (a real-kubelet soak
needs a cluster kept healthy across trials, which is not built yet).

Ctrl-C stops cleanly; trials in flight are committed, marked partial.
The report (report.html) plots the resident set size sampled at every
checkpoint, with its fitted slope.

Exit codes:
  0  every criterion met (INSUFFICIENT DATA too, unless --strict)
  1  a violation or a criterion failed, or the soak was interrupted or
     stopped at --max-disk
  2  usage or validation error
  3  internal error (disk full, unwritable directory, failing fsync)`

func newSoakCommand(streams IOStreams, d deps) *cobra.Command {
	f := &soakFlags{}
	cmd := &cobra.Command{
		Use:   "soak --duration D [flags] FILE...  |  soak --resume DIR",
		Short: "Run trials with fresh seeds for a long time, crash-safely",
		Long:  soakLong,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSoak(cmd, streams, d, f, args)
		},
	}
	f.register(cmd)
	fl := cmd.Flags()
	_ = fl.MarkHidden("trials") // a soak runs trials until --duration
	// A soak's own default, shown as such (its help said "all", run's).
	keep := fl.Lookup("keep-history")
	keep.DefValue = rundir.DefaultSoakRetention.String()
	_ = keep.Value.Set(keep.DefValue)
	fl.DurationVar(&f.duration, "duration", 0, "how long to keep starting trials (e.g. 8h)")
	fl.DurationVar(&f.checkpoint, "checkpoint", 5*time.Minute, "how often to rewrite summary.json and the reports and sample RSS")
	fl.StringVar(&f.out, "out", "", "run directory (default reports/runs/<UTC timestamp>-soak-<first scenario>)")
	fl.StringVar(&f.resume, "resume", "", "continue the soak in this run directory")
	return cmd
}

func runSoak(cmd *cobra.Command, streams IOStreams, d deps, f *soakFlags, files []string) error {
	ctx := cmd.Context()
	if err := f.check(); err != nil {
		return err
	}
	if f.checkpoint <= 0 {
		return usageErr("--checkpoint must be > 0")
	}
	// --trials is run's, registered here with the shared flags and hidden;
	// a soak ignored it silently.
	if f.given("trials") {
		return usageErr("--trials does not apply to a soak: it starts trials until --duration has passed")
	}
	// The progress display exists before anything is printed: every line
	// for stderr goes through it (rep.Writer).
	rep, err := f.reporter(streams.ErrOut)
	if err != nil {
		return err
	}
	defer rep.Close()
	streams.ErrOut = rep.Writer()
	so := runner.SoakOptions{Checkpoint: f.checkpoint, RSS: readRSS, Duration: f.duration}
	var scens []*scenario.Scenario
	name := f.backend
	if f.resume != "" {
		if len(files) > 0 {
			return usageErr("soak --resume takes no scenario files (the run directory has them)")
		}
		info, err := rundir.ReadInfo(f.resume)
		if err != nil {
			return runError(err)
		}
		if name != "" && name != info.Backend {
			return usageErr("--backend %s: the soak in %s runs on %s", name, f.resume, info.Backend)
		}
		if info.Command != "soak" {
			// A run's or merge's directory holds a fixed set of trials:
			// resuming it appended soak trials to a finished result.
			return usageErr("%s was written by 'sidebench %s', not by a soak: only a soak is continued with --resume; run it again into another --out", f.resume, info.Command)
		}
		name = info.Backend
		if err := f.keptOnResume(info); err != nil {
			return err
		}
		if so.Duration == 0 {
			dur, perr := time.ParseDuration(info.Duration)
			if perr != nil {
				return usageErr("--resume: no --duration given and run.json has none")
			}
			so.Duration = dur
		}
		f.seed, f.trials = info.Seed, info.Trials
		so.Dir, so.Resume = f.resume, true
		if err := f.checkBudget(streams, d.memory, nil); err != nil {
			return err
		}
	} else {
		if len(files) == 0 {
			return usageErr("soak: at least one scenario file is required (or --resume DIR)")
		}
		if !f.given("duration") {
			return usageErr("soak: --duration is required (e.g. --duration 8h)")
		}
		if f.duration <= 0 {
			return usageErr("soak: --duration %v: must be > 0", f.duration)
		}
		var err error
		scens, err = loadScenarios(streams.ErrOut, files, f.seed, 0)
		if err != nil {
			return err
		}
		if name == "" {
			name = backendName("", scens[0])
		}
		if err := f.checkBudget(streams, d.memory, scens); err != nil {
			return err
		}
		so.Dir = f.out
		if so.Dir == "" {
			so.Dir = filepath.Join("reports", "runs", time.Now().UTC().Format("20060102T150405Z")+"-soak-"+scens[0].Metadata.Name)
		}
		so.Scenarios = scens
		if err := f.prepare(cmd, scens); err != nil {
			return err
		}
	}
	if name != "sim" {
		return usageErr("soak --backend %s: soaks run on the sim backend only (a real-kubelet soak needs one cluster kept healthy across trials, with its kubelets' memory sampled; not built yet); use 'run --backend %s --trials N'", name, name)
	}
	log := streams.ErrOut
	if f.quiet {
		log = nil
	}
	be, err := d.newBackend(name, &f.backendFlags, log)
	if err != nil {
		return err
	}
	defer closeBackend(streams, name, be)
	o := f.runnerOptions(name, be, rep, log)
	res, err := runner.Soak(ctx, o, so)
	rep.Close()
	if err != nil {
		return runError(err)
	}
	if so.Resume && !f.quiet {
		fmt.Fprintf(streams.ErrOut, "sidebench: resumed %s after %d committed trials\n", so.Dir, res.State.State.Resumes)
	}
	writeTable(streams.Out, res.State.State.Rows)
	if !f.quiet {
		fmt.Fprintf(streams.ErrOut, "sidebench: wrote %s (%d trials committed)\n", so.Dir, res.State.State.TrialsCommitted)
	}
	if res.Stopped != "" {
		fmt.Fprintf(streams.ErrOut, "sidebench: %s; results are partial (summary.json status: partial, stopped)\n", res.Stopped)
		return silent(ExitFailed)
	}
	if ctx.Err() != nil || res.Partial {
		fmt.Fprintf(streams.ErrOut, "sidebench: interrupted: results are partial (summary.json status: partial); continue with 'sidebench soak --resume %s'\n", so.Dir)
		return silent(ExitFailed)
	}
	return exitFor(ctx, streams, f.strict, []*runner.Result{res})
}

// keptOnResume refuses a --seed, --keep-history or shard given with
// --resume that differs from the soak's: a resume keeps what the soak
// started with (run.json; runner.Soak), and a different value was
// silently replaced. The same value given again is accepted.
func (f *soakFlags) keptOnResume(info rundir.Info) error {
	if f.given("seed") && f.seed != info.Seed {
		return usageErr("--seed %d: the soak in %s keeps the master seed it started with (run.json seed %d; 0: its scenarios' seeds); resume it without --seed", f.seed, f.resume, info.Seed)
	}
	if f.given("keep-history") {
		if keep, err := rundir.ParseRetention(f.keepHistory); err == nil && keep.String() != info.KeepHistory {
			return usageErr("--keep-history %s: the soak in %s keeps what it started with (%s); resume it without --keep-history", f.keepHistory, f.resume, info.KeepHistory)
		}
	}
	if f.given("shard") || f.given("shards") {
		if sh, err := runner.ShardOf(f.shard, f.shards, os.Getenv); err == nil && sh.String() != info.Shard {
			started := info.Shard
			if started == "" {
				started = "no shard"
			}
			return usageErr("--shard/--shards: the soak in %s runs the slice it started with (%s); resume it without them", f.resume, started)
		}
	}
	return nil
}

// readRSS returns the process's resident set size (VmRSS), or the Go
// runtime's obtained memory where /proc is not available.
func readRSS() int64 {
	if f, err := os.Open("/proc/self/status"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
				fs := strings.Fields(rest)
				if len(fs) > 0 {
					if kb, err := strconv.ParseInt(fs[0], 10, 64); err == nil {
						return kb * 1024
					}
				}
			}
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.Sys)
}
