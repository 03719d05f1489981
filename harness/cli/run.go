package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sidebench/sidebench/harness/backend"
	"github.com/sidebench/sidebench/harness/backend/kube"
	"github.com/sidebench/sidebench/harness/backend/local"
	simbackend "github.com/sidebench/sidebench/harness/backend/sim"
	"github.com/sidebench/sidebench/harness/progress"
	"github.com/sidebench/sidebench/harness/rundir"
	"github.com/sidebench/sidebench/harness/runner"
	"github.com/sidebench/sidebench/harness/scenario"
	"github.com/sidebench/sidebench/internal/version"
	"github.com/sidebench/sidebench/reports/render"
)

func newTabWriter(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0) }

// backendFlags pick and configure a backend (run and soak share them).
type backendFlags struct {
	backend  string
	nodes    int
	nodesSet bool // --nodes given (the kube provider's default is 1)
	keep     bool
	horizon  time.Duration
	kube     kubeOptions
	// featureGates is --feature-gates for the local cluster: the
	// Kubernetes gates the run's policies name.
	featureGates string
}

func (f *backendFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.backend, "backend", "", "backend: sim (default), local or kube (default: the scenario's backend.name)")
	fl.IntVar(&f.nodes, "nodes", 3, "local backend (and kube --provider local): number of kubelets")
	fl.BoolVar(&f.keep, "keep", false, "local backend: leave the cluster up at the end ('sidebench cluster down DIR' or 'cluster down --all' removes it; a bare 'cluster down' leaves it)")
	fl.DurationVar(&f.horizon, "horizon", 0, "local and kube backends: cap every trial at this wall-clock duration (default: the scenario's horizon, at most 10m)")
	f.kube.register(cmd)
}

// prepare finishes the flags once the scenarios are known.
func (f *backendFlags) prepare(cmd *cobra.Command, scens []*scenario.Scenario) error {
	f.nodesSet = cmd.Flags().Changed("nodes")
	if f.nodes < 1 {
		return usageErr("--nodes must be >= 1")
	}
	if cmd.Flags().Changed("horizon") && f.horizon <= 0 {
		// A cap of no time at all; it was taken as "no --horizon".
		return usageErr("--horizon %v: must be > 0 (without --horizon, the scenario's horizon, at most 10m)", f.horizon)
	}
	var policies []string
	for _, s := range scens {
		for _, g := range s.PolicyGates() {
			policies = append(policies, g.String())
		}
	}
	f.featureGates = local.FeatureGates(policies...)
	if f.kube.kubeconfig == "" {
		f.kube.kubeconfig = scenarioKubeconfig(scens)
	}
	return nil
}

// options are the backend settings recorded in run.json.
func (f *backendFlags) options(name string) map[string]string {
	switch name {
	case "local":
		return map[string]string{"nodes": strconv.Itoa(f.nodes), "featureGates": f.featureGates}
	case "kube":
		return map[string]string{"provider": f.kube.provider, "image": f.kube.image}
	}
	return nil
}

// newBackend is the composition root: a backend name and its flags give
// a Backend. Backends that hold resources (a cluster) start them at their
// first trial, so a run that fails validation starts nothing, and release
// them in Close.
func newBackend(name string, f *backendFlags, log io.Writer) (backend.Backend, error) {
	switch name {
	case "sim":
		return simbackend.Backend{Version: version.Get().Short()}, nil
	case "local":
		return newLocalBackend(f, log), nil
	case "kube":
		o := f.kube
		o.nodes, o.horizon, o.log = f.nodes, f.horizon, log
		if !f.nodesSet {
			o.nodes = 1
		}
		if o.provider == "" {
			if err := kube.CheckConfig(o.kubeconfig, o.context); err != nil {
				return nil, usageErr("--backend kube: %v", err)
			}
		}
		return newKubeBackend(o), nil
	}
	return nil, usageErr("--backend %q: unknown backend (allowed: sim, local, kube)", name)
}

// runFlags is the flagpole of `sidebench run` (and, with soakFlags, of
// `soak`).
type runFlags struct {
	backendFlags
	seed             uint64
	trials           int
	parallel         int
	out              string
	quiet            bool
	strict           bool
	includeLarge     bool
	progress         string
	progressInterval time.Duration
	maxMemory        string
	keepHistory      string
	maxDisk          string
	shard            string
	shards           int
	// given reports whether a flag was on the command line: 0 is the
	// default of --seed and --trials ("the scenario's"), so a 0 the user
	// typed must be told apart from no flag.
	given func(name string) bool
}

func (f *runFlags) register(cmd *cobra.Command) {
	f.backendFlags.register(cmd)
	fl := cmd.Flags()
	f.given = fl.Changed
	fl.Uint64Var(&f.seed, "seed", 0, "master seed (default: the scenario's seed)")
	fl.IntVar(&f.trials, "trials", 0, "trials per policy (default: the scenario's trials)")
	fl.IntVar(&f.parallel, "parallel", 1, "trials run at once")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print only the result")
	fl.BoolVar(&f.strict, "strict", false, "fail (exit 1) on INSUFFICIENT DATA and on a partial run's verdicts")
	fl.StringVar(&f.maxMemory, "max-memory", "", maxMemoryUsage)
	fl.StringVar(&f.progress, "progress", "auto", "progress display: auto (bars on a terminal, plain lines otherwise or when CI is set), bars, plain")
	fl.DurationVar(&f.progressInterval, "progress-interval", 10*time.Second, "period of plain progress lines")
	_ = fl.MarkHidden("progress-interval")
	fl.StringVar(&f.keepHistory, "keep-history", "all", "which pods' histories and per-pod records to keep: all, findings (pods with a finding), or sample:P (findings plus P% of the other pods); every pod is checked and measured either way")
	fl.StringVar(&f.maxDisk, "max-disk", "", "stop cleanly before the run directory would exceed this size (e.g. 5GB): committed trials are kept and the run is marked partial (exit 1)")
	fl.StringVar(&f.shard, "shard", "", "run only shard I/N of the trials (e.g. 0/4); 'sidebench merge' pools the shards into the whole run")
	fl.IntVar(&f.shards, "shards", 0, "run the shard of N given by $JOB_COMPLETION_INDEX (a Kubernetes Indexed Job)")
}

func (f *runFlags) check() error {
	if f.parallel < 1 {
		return usageErr("--parallel must be >= 1")
	}
	// An explicit 0 used to be taken silently as "the scenario's": --seed
	// 0 ran the scenario's seed, --trials 0 its trials.
	if f.trials < 0 || f.trials == 0 && f.given != nil && f.given("trials") {
		return usageErr("--trials %d: must be >= 1 (without --trials, the scenario's trials)", f.trials)
	}
	if f.shards < 0 || f.shards == 0 && f.given != nil && f.given("shards") {
		// --shards 0 ran the whole run as if unsharded.
		return usageErr("--shards %d: must be >= 1 (the number of shards; the index comes from $JOB_COMPLETION_INDEX)", f.shards)
	}
	if f.seed == 0 && f.given != nil && f.given("seed") {
		return usageErr("--seed 0: 0 stands for the scenario's seed here and cannot be given as a flag; for a master seed of 0, set seed: 0 in the scenario file")
	}
	if f.out != "" {
		if fi, err := os.Stat(f.out); err == nil && !fi.IsDir() {
			return usageErr("--out %s: not a directory", f.out)
		}
	}
	return f.storage(&runner.Options{})
}

func (f *runFlags) reporter(w io.Writer) (*progress.Reporter, error) {
	mode := progress.Auto
	switch {
	case f.progress != "auto" && f.progress != "bars" && f.progress != "plain":
		// Checked with --quiet too: a misspelt value was accepted there.
		return nil, usageErr("--progress %q: allowed: auto, bars, plain", f.progress)
	case f.quiet:
		mode = progress.Quiet
	case f.progress == "bars":
		mode = progress.Bars
	case f.progress == "plain":
		mode = progress.Plain
	}
	return progress.New(w, progress.Options{Mode: mode, Interval: f.progressInterval}), nil
}

// storage parses the retention, the disk budget and the shard.
func (f *runFlags) storage(o *runner.Options) error {
	keep, err := rundir.ParseRetention(f.keepHistory)
	if err != nil {
		return usageErr("%v", err)
	}
	o.Keep = keep
	if f.maxDisk != "" {
		if o.MaxDisk, err = scenario.ParseBytes(f.maxDisk); err != nil {
			return usageErr("--max-disk %q: want a positive size with a unit, such as 5GB or 500MiB", f.maxDisk)
		}
	}
	if o.Shard, err = runner.ShardOf(f.shard, f.shards, os.Getenv); err != nil {
		return usageErr("%v", err)
	}
	return nil
}

// runnerOptions are the runner's options for one backend.
func (f *runFlags) runnerOptions(name string, be backend.Backend, rep *progress.Reporter, log io.Writer) runner.Options {
	o := runner.Options{Backend: be, BackendName: name, Parallel: f.parallel, Log: log, Build: version.Get(), Strict: f.strict,
		Seed: f.seed, Trials: f.trials, BackendOptions: f.options(name)}
	f.storage(&o) // checked in check()
	if rep != nil {
		o.Progress = progressFeed{rep}
	}
	return o
}

// progressFeed adapts the progress display to the runner's feed.
type progressFeed struct{ r *progress.Reporter }

func (p progressFeed) AddScenario(label string, trials, pods int) runner.ScenarioProgress {
	return scenarioFeed{p.r.AddScenario(label, trials, pods)}
}

type scenarioFeed struct{ *progress.Scenario }

const runLong = `Run every scenario × policy × trial on a backend and write, per scenario, a
run directory with:

  history.jsonl.zst   the history of every trial (run.meta ... run.end)
  pods.jsonl.zst      per-pod latencies (harness/metrics)
  findings.jsonl.zst  the checker's findings (violations, degradations, bounds)
  trials.jsonl.zst    per trial: checker counts and latency distributions
                      of every pod
  summary.json    every number of the run (docs/reports.md), with a
                  "sidebench" section: per scenario × policy trials, pods,
                  violations, degradations, pod_startup percentiles, role
                  and verdict; status complete or partial
  report.md, report.html, junit.xml, PodStartupLatency_*.json
                  the reports (reports/render)
  journal.jsonl   the committed trials; run.json the invocation and build

and print a result table. Every number in every output comes from one
aggregation: the table, summary.json, the reports, PerfData and junit.xml
agree. Scenarios tagged "large" (the scale envelope, soak profiles) are
skipped unless --include-large is given. Ctrl-C stops cleanly: what was
recorded stays on disk, marked partial.

Policies and verdicts: a scenario's criteria (and criteria.graduation, a
graduation stage) judge its first policy, or criteria.policies; other
policies are baselines, measured and not judged; bug replicas
(kep753+bug:...) pass when the checker catches them and fail when it does
not. A criterion is PASS, FAIL or INSUFFICIENT DATA (within the limit, but
the data cannot support the claim yet: the lifecycles still needed are
printed).

Differential run: --backend sim,local runs the same scenarios with the same
seeds on each backend in turn (the local cluster is brought up and taken
down as with --backend local), writes each backend's run directories under
OUT/sim and OUT/local, and prints, per scenario, policy and invariant, the
violations/degradations on each backend with a "disagree" marker where one
backend has findings and another has none; the table is also written to
OUT/differential.md. The exit code follows the rules below over all
backends.

Kube backend: --backend kube runs on the cluster of --kubeconfig/--context
(every container runs sidebench-agent, --image; build it with make image),
or on one it creates with --provider local (sidebench's local cluster with
containerd; root) or --provider kind, loading --image-archive. Each trial
gets a namespace labelled sidebench.dev/run, deleted at the end, also after
Ctrl-C. Faults it cannot inject are listed after the table, never counted.

Storage: the data files are zstd-compressed, one frame per trial
(zstdcat reads them; check, explain, graduate, compare, merge and trend
read them directly). --keep-history findings or sample:P keeps the
histories and per-pod records of the pods with findings (and a
deterministic P% sample of the others) only; every pod is still checked
and measured, and its counts and latency distribution kept
(trials.jsonl.zst), so every number of every output is the same as with
all. --max-disk SIZE stops before a commit would take the directory past
SIZE: what was committed stays, the run is partial and says why.

Memory: a scenario whose estimated memory exceeds the budget (--max-memory,
default the machine's memory) is refused before anything runs. The Go
runtime's soft memory limit is set to 90% of --max-memory; without it and
without GOMEMLIMIT, to 90% of the cgroup's memory limit if there is one
(a container's), so that the garbage collector runs before the OOM killer.

Sharding: --shard I/N runs the trials whose index in the run (policy by
policy, trial by trial) is I modulo N; --shards N takes I from
$JOB_COMPLETION_INDEX (an Indexed Job's completion index). The N shards
together are exactly the unsharded run; 'sidebench merge' pools them and
judges the run. A shard exits 0 once its slice is committed, whatever
its slice's verdicts (1 if interrupted or stopped, 2 and 3 as below).

Exit codes:
  0  every criterion met (INSUFFICIENT DATA too, unless --strict)
  1  a violation or a criterion failed, a bug replica was not caught, the
     run was interrupted, or it stopped at --max-disk (partial)
  2  usage or validation error
  3  internal error (including: the run directory or the reports could
     not be written: disk full, unwritable --out, a failing fsync)`

func newRunCommand(streams IOStreams, d deps) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run [flags] FILE...",
		Short: "Run scenarios and check and measure every trial",
		Long:  runLong,
		Args:  atLeastOne("scenario file"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRun(cmd, streams, d, f, args)
		},
	}
	f.register(cmd)
	cmd.Flags().Lookup("backend").Usage += "; a list such as sim,local is a differential run"
	cmd.Flags().StringVar(&f.out, "out", "", "run directory (default reports/runs/<UTC timestamp>-<scenario>; with several scenarios, DIR/<scenario>)")
	cmd.Flags().BoolVar(&f.includeLarge, "include-large", false, "also run scenarios tagged large")
	return cmd
}

// loadScenarios loads and validates every file, printing errors and
// warnings to log; any error is a usage error (exit 2) after all files
// were reported.
func loadScenarios(log io.Writer, files []string, seed uint64, trials int) ([]*scenario.Scenario, error) {
	var out []*scenario.Scenario
	bad := false
	for _, f := range files {
		s, err := scenario.Load(f)
		if err != nil {
			fmt.Fprintln(log, err)
			bad = true
			continue
		}
		for _, w := range s.Warnings() {
			fmt.Fprintln(log, w)
		}
		out = append(out, s.WithOverrides(seed, trials))
	}
	if bad {
		return nil, silent(ExitUsage)
	}
	seen := map[string]string{}
	for _, s := range out {
		if prev, dup := seen[s.Metadata.Name]; dup {
			return nil, usageErr("%s and %s both define scenario %q", prev, s.File, s.Metadata.Name)
		}
		seen[s.Metadata.Name] = s.File
	}
	return out, nil
}

func backendName(flag string, s *scenario.Scenario) string {
	if flag != "" {
		return flag
	}
	if s.Backend.Name != "" {
		return s.Backend.Name
	}
	return "sim"
}

func runRun(cmd *cobra.Command, streams IOStreams, d deps, f *runFlags, files []string) (err error) {
	ctx := cmd.Context()
	if err := f.check(); err != nil {
		return err
	}
	// The progress display exists before anything is printed: every line
	// for stderr goes through it (rep.Writer), so that no bar redraw
	// erases one.
	rep, err := f.reporter(streams.ErrOut)
	if err != nil {
		return err
	}
	defer rep.Close()
	stderr := rep.Writer()
	scens, err := loadScenarios(stderr, files, f.seed, f.trials)
	if err != nil {
		return err
	}
	var todo []*scenario.Scenario
	for _, s := range scens {
		if s.HasTag("large") && !f.includeLarge {
			fmt.Fprintf(stderr, "sidebench: skipping %s (%s): tagged large; use --include-large\n", s.Metadata.Name, s.File)
			continue
		}
		todo = append(todo, s)
	}
	if len(todo) == 0 {
		return usageErr("no scenario to run")
	}
	budgetStreams := streams
	budgetStreams.ErrOut = stderr // through the progress display
	if err := f.checkBudget(budgetStreams, d.memory, todo); err != nil {
		return err
	}
	if err := f.prepare(cmd, todo); err != nil {
		return err
	}
	names, err := splitBackends(f.backend)
	if err != nil {
		return err
	}
	var log io.Writer = stderr
	if f.quiet {
		log = nil
	}
	streams.ErrOut = stderr
	stamp := time.Now().UTC().Format("20060102T150405Z")
	if len(names) > 1 {
		return runDifferential(ctx, streams, d, f, todo, names, rep, log, stamp)
	}
	// Scenarios may name different backends (backend.name): each group
	// runs on its own, in order.
	var order []string
	groups := map[string][]runner.Job{}
	for _, s := range todo {
		name := backendName(f.backend, s)
		dir := f.out
		switch {
		case dir == "":
			dir = filepath.Join("reports", "runs", stamp+"-"+s.Metadata.Name)
		case len(todo) > 1:
			dir = filepath.Join(dir, s.Metadata.Name)
		}
		if groups[name] == nil {
			order = append(order, name)
		}
		groups[name] = append(groups[name], runner.Job{Scenario: s, Dir: dir})
	}
	invocation := ""
	if len(todo) > 1 {
		// Ties DIR/a and DIR/b together (trend reads them as one night).
		invocation = fmt.Sprintf("%s-%d", stamp, os.Getpid())
	}
	var results []*runner.Result
	var runErr error
	for _, name := range order {
		if ctx.Err() != nil {
			break
		}
		be, err := d.newBackend(name, &f.backendFlags, log)
		if err != nil {
			rep.Close()
			return err
		}
		o := f.runnerOptions(name, be, rep, log)
		o.Invocation = invocation
		res, err := runner.Run(ctx, o, groups[name])
		closeBackend(streams, name, be)
		if res != nil {
			results = append(results, res)
		}
		if err != nil {
			runErr = err
			break
		}
	}
	rep.Close()
	if runErr != nil {
		return runError(runErr)
	}
	var rows []render.StateRow
	var notRun []string
	for _, r := range results {
		rows = append(rows, r.State.State.Rows...)
		notRun = append(notRun, r.NotRun...)
	}
	for _, name := range order[len(results):] {
		// Backends the run did not reach (interrupted or stopped first).
		for _, j := range groups[name] {
			notRun = append(notRun, j.Scenario.Metadata.Name)
		}
	}
	writeTable(streams.Out, rows)
	if len(notRun) > 0 {
		// The table has no row for them: say so, or a partial run of two
		// scenarios reads as a run of one.
		fmt.Fprintf(streams.ErrOut, "sidebench: not run (the run stopped first): %s\n", strings.Join(notRun, ", "))
	}
	if !f.quiet {
		for _, r := range results {
			for _, dir := range r.Dirs {
				fmt.Fprintf(streams.ErrOut, "sidebench: wrote %s\n", dir)
			}
		}
	}
	if f.shard != "" || f.shards != 0 {
		// A shard's verdicts cover a slice of the trials: the merge judges
		// the run. The shard fails only when it did not finish its slice.
		if !f.quiet {
			fmt.Fprintln(streams.ErrOut, "sidebench: one shard of a run: its verdicts cover this slice only; 'sidebench merge' the shards to judge the run")
		}
		var done []*runner.Result // only whether the slice finished counts
		for _, r := range results {
			done = append(done, &runner.Result{Partial: r.Partial, Stopped: r.Stopped})
		}
		return exitFor(ctx, streams, false, done)
	}
	return exitFor(ctx, streams, f.strict, results)
}

// closeBackend releases a backend's resources (the local cluster, the kube
// backend's namespaces): on every way out, also after Ctrl-C.
func closeBackend(streams IOStreams, name string, be backend.Backend) {
	if c, ok := be.(io.Closer); ok {
		if err := c.Close(); err != nil {
			fmt.Fprintf(streams.ErrOut, "sidebench: closing backend %s: %v\n", name, err)
		}
	}
}

// runError maps a runner error to an exit code: bad input the user
// pointed at is a usage error, the rest internal.
func runError(err error) error {
	var ue *rundir.UsageError
	if errors.As(err, &ue) {
		return &exitError{code: ExitUsage, err: err}
	}
	return asInternal(err)
}

// exitFor applies the exit-code rules to the results of a run.
func exitFor(ctx context.Context, streams IOStreams, strict bool, results []*runner.Result) error {
	partial, fail, insufficient := ctx.Err() != nil, false, false
	stopped := ""
	for _, r := range results {
		partial = partial || r.Partial
		if r.Stopped != "" {
			stopped = r.Stopped
		}
		switch r.State.State.Verdict {
		case "FAIL":
			fail = true
		case "INSUFFICIENT DATA":
			insufficient = true
		}
	}
	switch {
	case stopped != "":
		fmt.Fprintf(streams.ErrOut, "sidebench: %s; results are partial (summary.json status: partial, stopped)\n", stopped)
		return silent(ExitFailed)
	case partial && ctx.Err() != nil:
		fmt.Fprintln(streams.ErrOut, "sidebench: interrupted: results are partial (summary.json status: partial)")
		return silent(ExitFailed)
	case partial:
		// Not interrupted here: a merge of a partial input, or a trial
		// that did not finish (this said "interrupted" for them too).
		fmt.Fprintln(streams.ErrOut, "sidebench: results are partial (summary.json status: partial): not every trial of the run was committed")
		return silent(ExitFailed)
	case fail:
		return silent(ExitFailed)
	case insufficient && strict:
		fmt.Fprintln(streams.ErrOut, "sidebench: --strict: INSUFFICIENT DATA fails the run")
		return silent(ExitFailed)
	}
	return nil
}

// splitBackends parses --backend: empty (each scenario's own backend),
// one name, or a comma-separated list of distinct names (a differential
// run).
func splitBackends(flag string) ([]string, error) {
	if flag == "" {
		return nil, nil
	}
	var out []string
	seen := map[string]bool{}
	for _, n := range strings.Split(flag, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			return nil, usageErr("--backend %q: empty backend name", flag)
		}
		if seen[n] {
			return nil, usageErr("--backend %q: %s given twice", flag, n)
		}
		seen[n] = true
		out = append(out, n)
	}
	return out, nil
}

// runDifferential runs the scenarios on every backend of names and prints
// and writes the differential table.
func runDifferential(ctx context.Context, streams IOStreams, d deps, f *runFlags, todo []*scenario.Scenario, names []string,
	rep *progress.Reporter, log io.Writer, stamp string) error {
	base := f.out
	if base == "" {
		n := todo[0].Metadata.Name
		if len(todo) > 1 {
			n = "differential"
		}
		base = filepath.Join("reports", "runs", stamp+"-"+n)
	}
	var runs []runner.Options
	for _, name := range names {
		be, err := d.newBackend(name, &f.backendFlags, log)
		if err != nil {
			for _, o := range runs {
				closeBackend(streams, o.BackendName, o.Backend)
			}
			rep.Close()
			return err
		}
		runs = append(runs, f.runnerOptions(name, be, rep, log))
	}
	dr, err := runner.Differential(ctx, runs, todo, func(backend string, s *scenario.Scenario) string {
		if len(todo) > 1 {
			return filepath.Join(base, backend, s.Metadata.Name)
		}
		return filepath.Join(base, backend)
	})
	rep.Close()
	if err != nil {
		return runError(err)
	}
	var rows []render.StateRow
	var results []*runner.Result
	for i, res := range dr.Results {
		if res == nil {
			continue
		}
		results = append(results, res)
		for _, r := range res.State.State.Rows {
			r.Scenario = names[i] + "/" + r.Scenario
			rows = append(rows, r)
		}
	}
	writeTable(streams.Out, rows)
	fmt.Fprintln(streams.Out)
	runner.WriteDiffTable(streams.Out, names, dr.Rows)
	path := filepath.Join(base, "differential.md")
	if err := rundir.WriteFileAtomic(path, []byte(dr.Markdown)); err != nil {
		return asInternal(err)
	}
	if !f.quiet {
		for _, r := range results {
			for _, dir := range r.Dirs {
				fmt.Fprintf(streams.ErrOut, "sidebench: wrote %s\n", dir)
			}
		}
		fmt.Fprintf(streams.ErrOut, "sidebench: wrote %s\n", path)
	}
	if len(results) < len(names) {
		return exitFor(ctx, streams, f.strict, append(results, &runner.Result{Partial: true}))
	}
	return exitFor(ctx, streams, f.strict, results)
}

// asInternal marks an unexpected error as internal (exit 3) unless it
// already carries an exit code.
func asInternal(err error) error {
	if _, ok := err.(*exitError); ok {
		return err
	}
	return &exitError{code: ExitInternal, err: err}
}

// scenarioKubeconfig is the kubeconfig the scenarios name
// (backend.kube.kubeconfig) when they all name the same one, else "".
func scenarioKubeconfig(todo []*scenario.Scenario) string {
	kc := ""
	for _, s := range todo {
		k := ""
		if s.Backend.Kube != nil {
			k = s.Backend.Kube.Kubeconfig
		}
		if k == "" || (kc != "" && k != kc) {
			return ""
		}
		kc = k
	}
	return kc
}
