package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sidebench/sidebench/harness/backend/local"
	"github.com/sidebench/sidebench/harness/check"
	"github.com/sidebench/sidebench/harness/progress"
	"github.com/sidebench/sidebench/harness/scenario"
	"github.com/sidebench/sidebench/reference-impl/api"
)

func newTabWriter(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0) }

func parseGatesString(s string) (string, error) {
	g, err := api.ParseGates(s)
	if err != nil {
		return "", err
	}
	return g.String(), nil
}

// runFlags is the flagpole of `sidebench run`.
type runFlags struct {
	backend          string
	seed             uint64
	trials           int
	parallel         int
	out              string
	quiet            bool
	includeLarge     bool
	progress         string
	progressInterval time.Duration
	nodes            int
	keep             bool
	horizon          time.Duration
	kube             kubeOptions
	nodesSet         bool // --nodes given (the kube provider's default is 1)
}

func (f *runFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.backend, "backend", "", "backend: sim (default), local or kube (default: the scenario's backend.name)")
	fl.Uint64Var(&f.seed, "seed", 0, "master seed (default: the scenario's seed)")
	fl.IntVar(&f.trials, "trials", 0, "trials per policy (default: the scenario's trials)")
	fl.IntVar(&f.parallel, "parallel", 1, "trials run at once")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print only the result")
	fl.StringVar(&f.progress, "progress", "auto", "progress display: auto (bars on a terminal, plain lines otherwise or when CI is set), bars, plain")
	fl.DurationVar(&f.progressInterval, "progress-interval", 10*time.Second, "period of plain progress lines")
	_ = fl.MarkHidden("progress-interval")
}

func (f *runFlags) reporter(w io.Writer) (*progress.Reporter, error) {
	mode := progress.Auto
	switch {
	case f.quiet:
		mode = progress.Quiet
	case f.progress == "bars":
		mode = progress.Bars
	case f.progress == "plain":
		mode = progress.Plain
	case f.progress != "auto":
		return nil, usageErr("--progress %q: allowed: auto, bars, plain", f.progress)
	}
	return progress.New(w, progress.Options{Mode: mode, Interval: f.progressInterval}), nil
}

const runLong = `Run every scenario × policy × trial on a backend and write, per scenario, a
run directory with:

  history.jsonl   the history of every trial (run.meta ... run.end)
  pods.jsonl      per-pod latencies (harness/metrics)
  findings.jsonl  the checker's findings (violations, degradations, bounds)
  summary.json    every number of the run (docs/reports.md), plus a
                  "sidebench" section: per scenario × policy trials, pods,
                  violations, degradations, pod_startup percentiles and
                  the criteria verdict; partial: true if interrupted
  report.md, report.html, junit.xml, PodStartupLatency_*.json
                  the reports (reports/render)
  journal.jsonl   the committed trials; run.json the invocation

and print a result table. Scenarios tagged "large" (the scale envelope,
soak profiles) are skipped unless --include-large is given. Ctrl-C stops
cleanly: what was recorded stays on disk, marked partial.

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

Criteria (a scenario's criteria:) apply to its first policy, or to
criteria.policies; baselines such as none are measured, not judged.

Exit codes:
  0  every criterion met
  1  a violation or a criterion failed (or the run was interrupted)
  2  usage or validation error
  3  internal error`

func newRunCommand(streams IOStreams) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run [flags] FILE...",
		Short: "Run scenarios and check and measure every trial",
		Long:  runLong,
		Args:  atLeastOne("scenario file"),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.nodesSet = cmd.Flags().Changed("nodes")
			return runRun(cmd.Context(), streams, f, args)
		},
	}
	f.register(cmd)
	cmd.Flags().Lookup("backend").Usage += "; a list such as sim,local is a differential run"
	cmd.Flags().StringVar(&f.out, "out", "", "run directory (default reports/runs/<UTC timestamp>-<scenario>; with several scenarios, DIR/<scenario>)")
	cmd.Flags().BoolVar(&f.includeLarge, "include-large", false, "also run scenarios tagged large")
	cmd.Flags().IntVar(&f.nodes, "nodes", 3, "local backend (and kube --provider local): number of kubelets")
	cmd.Flags().BoolVar(&f.keep, "keep", false, "local backend: leave the cluster up at the end ('sidebench cluster down' removes it)")
	cmd.Flags().DurationVar(&f.horizon, "horizon", 0, "local and kube backends: cap every trial at this wall-clock duration (default: the scenario's horizon, at most 10m)")
	f.kube.register(cmd)
	return cmd
}

// loadScenarios loads and validates every file; any error is a usage error
// (exit 2) after all files were reported.
func loadScenarios(streams IOStreams, files []string, seed uint64, trials int) ([]*scenario.Scenario, error) {
	var out []*scenario.Scenario
	bad := false
	for _, f := range files {
		s, err := scenario.Load(f)
		if err != nil {
			fmt.Fprintln(streams.ErrOut, err)
			bad = true
			continue
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

func runRun(ctx context.Context, streams IOStreams, f *runFlags, files []string) error {
	if f.parallel < 1 {
		return usageErr("--parallel must be >= 1")
	}
	if f.trials < 0 {
		return usageErr("--trials must be >= 0")
	}
	scens, err := loadScenarios(streams, files, f.seed, f.trials)
	if err != nil {
		return err
	}
	var todo []*scenario.Scenario
	for _, s := range scens {
		if s.HasTag("large") && !f.includeLarge {
			fmt.Fprintf(streams.ErrOut, "sidebench: skipping %s (%s): tagged large; use --include-large\n", s.Metadata.Name, s.File)
			continue
		}
		todo = append(todo, s)
	}
	if len(todo) == 0 {
		return usageErr("no scenario to run")
	}
	if f.nodes < 1 {
		return usageErr("--nodes must be >= 1")
	}
	localOpts = localOptions{nodes: f.nodes, keep: f.keep, horizon: f.horizon, log: streams.ErrOut}
	kubeOpts = f.kube
	kubeOpts.nodes, kubeOpts.horizon, kubeOpts.log = f.nodes, f.horizon, streams.ErrOut
	if kubeOpts.kubeconfig == "" {
		kubeOpts.kubeconfig = scenarioKubeconfig(todo)
	}
	if !f.nodesSet {
		kubeOpts.nodes = 1
	}
	if f.quiet {
		localOpts.log = nil
		kubeOpts.log = nil
	}
	var policies []string
	for _, s := range todo {
		for _, g := range s.PolicyGates() {
			policies = append(policies, g.String())
		}
	}
	localOpts.featureGates = local.FeatureGates(policies...)
	names, err := splitBackends(f.backend)
	if err != nil {
		return err
	}
	backends := map[string]Backend{}
	// Backends that hold resources (the local backend's cluster) are
	// closed on every way out: normal end, error, Ctrl-C (the context) and
	// panic (deferred calls run while a panic unwinds).
	defer func() {
		for name, be := range backends {
			if c, ok := be.(interface{ Close() error }); ok {
				if err := c.Close(); err != nil {
					fmt.Fprintf(streams.ErrOut, "sidebench: closing backend %s: %v\n", name, err)
				}
			}
		}
	}()
	want := names
	if len(want) == 0 {
		for _, s := range todo {
			want = append(want, backendName("", s))
		}
	}
	for _, name := range want {
		if _, ok := backends[name]; ok {
			continue
		}
		be, err := newBackend(name)
		if err != nil {
			return err
		}
		backends[name] = be
	}
	rep, err := f.reporter(streams.ErrOut)
	if err != nil {
		return err
	}
	stamp := time.Now().UTC().Format("20060102T150405Z")
	if len(names) > 1 {
		return runDifferential(ctx, streams, f, todo, names, backends, rep, stamp)
	}
	res, err := runOnBackend(ctx, streams, f, todo, f.backend, backends, rep, func(s *scenario.Scenario) string {
		dir := f.out
		switch {
		case dir == "":
			dir = filepath.Join("reports", "runs", stamp+"-"+s.Metadata.Name)
		case len(todo) > 1:
			dir = filepath.Join(dir, s.Metadata.Name)
		}
		return dir
	})
	rep.Close()
	if err != nil {
		return err
	}
	writeTable(streams.Out, res.rows)
	if !f.quiet {
		for _, d := range res.dirs {
			fmt.Fprintf(streams.ErrOut, "sidebench: wrote %s\n", d)
		}
	}
	return res.exit(ctx, streams)
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

// backendResult is what running a list of scenarios on one backend gave.
type backendResult struct {
	rows    []row
	pass    bool
	partial bool
	dirs    []string
	// inv holds, per scenario × policy (rowKey), the checker counts per
	// invariant, in the order the invariants were first seen.
	inv map[string][]check.Row
}

// exit applies the usual exit-code rules to a result.
func (r *backendResult) exit(ctx context.Context, streams IOStreams) error {
	switch {
	case ctx.Err() != nil || r.partial:
		fmt.Fprintln(streams.ErrOut, "sidebench: interrupted: results are partial (summary.json partial: true)")
		return silent(ExitFailed)
	case !r.pass:
		return silent(ExitFailed)
	}
	return nil
}

// runOnBackend runs every scenario of todo on one backend (backendFlag, or
// each scenario's own when empty), one run directory per scenario (dirOf).
func runOnBackend(ctx context.Context, streams IOStreams, f *runFlags, todo []*scenario.Scenario, backendFlag string,
	backends map[string]Backend, rep *progress.Reporter, dirOf func(*scenario.Scenario) string) (*backendResult, error) {
	res := &backendResult{pass: true, inv: map[string][]check.Row{}}
	for _, s := range todo {
		if ctx.Err() != nil {
			break
		}
		dir := dirOf(s)
		name := backendName(backendFlag, s)
		info := runInfo{Command: "run", Backend: name, Seed: f.seed, Trials: f.trials, StartedAt: time.Now().UTC(), Version: version()}
		rd, err := createRunDir(dir, info, []*scenario.Scenario{s})
		if err != nil {
			return res, asInternal(err)
		}
		res.dirs = append(res.dirs, dir)
		trials := scenario.Expand(s)
		if sp, ok := backends[name].(interface{ Supports(string) bool }); ok {
			var keep []scenario.Trial
			skipped := map[string]bool{}
			for _, t := range trials {
				if sp.Supports(t.Policy) {
					keep = append(keep, t)
				} else if !skipped[t.Policy] {
					skipped[t.Policy] = true
					fmt.Fprintf(streams.ErrOut, "sidebench: %s: policy %s skipped: --backend %s runs real kubelets, which do not implement it\n", s.Metadata.Name, t.Policy, name)
				}
			}
			trials = keep
		}
		label := s.Metadata.Name
		if backendFlag != f.backend {
			label = name + "/" + label
		}
		ps := rep.AddScenario(label, len(trials), len(trials)*s.TotalPods())
		i := 0
		next := func() (scenario.Trial, bool) {
			if i >= len(trials) {
				return scenario.Trial{}, false
			}
			i++
			return trials[i-1], true
		}
		err = rd.execute(ctx, backends[name], next, execOptions{parallel: f.parallel, onCommit: func(o *trialOut) {
			ps.TrialDone(o.podCount, o.violations)
		}})
		ps.Done()
		sum, serr := rd.writeSummary()
		rd.mu.Lock()
		for _, r := range rd.rows {
			var rows []check.Row
			for _, id := range r.invOrder {
				rows = append(rows, *r.inv[id])
			}
			res.inv[rowKey(r.Scenario, r.Policy)] = rows
		}
		rd.mu.Unlock()
		rd.close()
		if err != nil {
			return res, asInternal(err)
		}
		var rw *reportWarning
		if errors.As(serr, &rw) {
			fmt.Fprintf(streams.ErrOut, "sidebench: warning: %s: %v\n", dir, rw)
		} else if serr != nil {
			return res, asInternal(serr)
		}
		reportUnappliedFaults(streams.ErrOut, name, sum.Rows)
		res.rows = append(res.rows, sum.Rows...)
		res.pass = res.pass && sum.Pass
		res.partial = res.partial || sum.Partial
	}
	return res, nil
}

// asInternal marks an unexpected error as internal (exit 3) unless it
// already carries an exit code.
func asInternal(err error) error {
	if _, ok := err.(*exitError); ok {
		return err
	}
	return &exitError{code: ExitInternal, err: err}
}

// reportUnappliedFaults says, per scenario × policy, which fault firings
// the backend could not inject and why: they are never counted as applied,
// and a reader of the result table must know the faults it claims to
// cover did not all happen.
func reportUnappliedFaults(w io.Writer, backend string, rows []row) {
	for _, r := range rows {
		kinds := make([]string, 0, len(r.Faults))
		for k := range r.Faults {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		for _, k := range kinds {
			c := r.Faults[k]
			if c.NotApplied == 0 {
				continue
			}
			fmt.Fprintf(w, "sidebench: %s/%s on %s: fault %s: %d applied, %d NOT applied: %s\n",
				r.Scenario, r.Policy, backend, k, c.Applied, c.NotApplied, strings.Join(c.Reasons, "; "))
		}
	}
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
