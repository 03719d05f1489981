package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/sidebench/sidebench/harness/rundir"
	"github.com/sidebench/sidebench/harness/runner"
	"github.com/sidebench/sidebench/reference-impl/api"
	"github.com/sidebench/sidebench/reports/graduation"
	"github.com/sidebench/sidebench/reports/render"
)

type graduateFlags struct {
	criteria   string
	policies   []string
	format     string
	allowMixed bool
	strict     bool
}

const graduateLong = `Judge the policies of one or more run directories against graduation
criteria: a built-in stage (alpha, beta, ga; reports/graduation) or a
criteria file (PATH.yaml, same schema). A directory of runs, as 'run
--out DIR a.yaml b.yaml' writes (DIR/a, DIR/b), stands for its runs.

Run directories are pooled through the same aggregation as 'run' (so a
single directory judged at its scenario's criteria.graduation stage gives
exactly the verdicts its own report shows for the policies the report
judges; graduate judges the report's baselines too, all but none). Trials
are keyed by (scenario content hash, policy, seed, trial number): a trial
found twice (a directory given twice, a copy, two soaks with the same
seeds) is counted once, with a warning naming the directory. Directories
whose scenario of the same name has different content are refused (exit
2) unless --allow-mixed, which labels the result "mixed". For each
scenario × policy the inputs are:

  violations   pods with at least one hard-invariant violation (journal.jsonl)
  lifecycles   pods (the trials of the violation rate)
  pod startup  every pod's pod_startup (the latency distributions in
               trials.jsonl.zst, kept whatever --keep-history kept),
               faulted pods excluded
  sidecar Jobs Job pods with sidecars, and how many reached Succeeded
  baseline     the pod_startup samples of policy none of the same scenario
               (for the sidecar-overhead criterion)

Every policy except the none baseline is judged (--policy chooses).

Each criterion is PASS (holds at the required confidence), FAIL (the
observation itself breaks it: more trials of the same behaviour cannot fix
it) or INSUFFICIENT DATA (within the limit, but the data cannot support the
claim yet; NEEDED estimates how many more trials, pods or Jobs would;
? where no count is known or more trials of the same runs cannot help,
for example Jobs of a scenario that has none: its note says what would).
A criterion that cannot be asked of the policy judged is NOT APPLICABLE and
counts for nothing in the overall line (only NOT APPLICABLE verdicts:
INSUFFICIENT DATA, nothing was judged): the sidecar overhead of the none
baseline (--policy none), which would be its ratio to itself. Over several
scenarios, sidecar-jobs-complete is judged in those with Jobs with
sidecars and sidecar-overhead in those with the none baseline: in a
scenario without, it is NOT APPLICABLE (naming where it is judged) when
another scenario of the same policy has them, and INSUFFICIENT DATA when
none has.

A run that did not complete (Ctrl-C, a crash, a soak still running) is
labelled partial in every verdict; with --strict its PASS verdicts become
INSUFFICIENT DATA and INSUFFICIENT DATA fails.

Exit codes:
  0  no criterion failed (PASS or INSUFFICIENT DATA; the overall line says
     which)
  1  a criterion failed (or, with --strict, INSUFFICIENT DATA)
  2  usage error or unreadable input (the message names the path)`

func newGraduateCommand(streams IOStreams) *cobra.Command {
	f := &graduateFlags{}
	cmd := &cobra.Command{
		Use:   "graduate [flags] --criteria alpha|beta|ga|PATH.yaml RUNDIR...",
		Short: "Judge runs against graduation criteria (PASS, FAIL, INSUFFICIENT DATA, NOT APPLICABLE)",
		Long:  graduateLong,
		Args:  atLeastOne("run directory"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGraduate(streams, f, args)
		},
	}
	cmd.Flags().StringVar(&f.criteria, "criteria", "", "criteria: alpha, beta, ga or a criteria file (required)")
	cmd.Flags().StringSliceVar(&f.policies, "policy", nil, "policies to judge (default: every policy but none)")
	cmd.Flags().StringVar(&f.format, "format", "text", "output: text or json (the pooled verdict, for dashboards)")
	cmd.Flags().BoolVar(&f.allowMixed, "allow-mixed", false, "pool run directories whose scenarios differ in content (labelled mixed)")
	cmd.Flags().BoolVar(&f.strict, "strict", false, "a partial run is INSUFFICIENT DATA, and INSUFFICIENT DATA fails (exit 1)")
	return cmd
}

func loadCriteria(name string) (graduation.Criteria, error) {
	if slices.Contains(graduation.Stages, name) {
		c, err := graduation.Load(name)
		if err != nil {
			return c, asInternal(err)
		}
		return c, nil
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return graduation.Criteria{}, usageErr("--criteria %s: not a stage (%v) and not readable: %v", name, graduation.Stages, unwrapPathErr(err))
	}
	c, err := graduation.Parse(b)
	if err != nil {
		return c, usageErr("--criteria %s: %v", name, err)
	}
	return c, nil
}

// gradVerdict is one row of graduate's output (and of --format json).
type gradVerdict struct {
	Scenario string `json:"scenario"`
	Policy   string `json:"policy"`
	graduation.Verdict
}

// MarshalJSON puts the scenario and the policy before the verdict's
// fields. Without it the embedded Verdict's MarshalJSON was promoted and
// every verdict of --format json came out without them.
func (g gradVerdict) MarshalJSON() ([]byte, error) {
	head, err := json.Marshal(struct {
		Scenario string `json:"scenario"`
		Policy   string `json:"policy"`
	}{g.Scenario, g.Policy})
	if err != nil {
		return nil, err
	}
	v, err := json.Marshal(g.Verdict)
	if err != nil {
		return nil, err
	}
	return append(append(head[:len(head)-1], ','), v[1:]...), nil
}

// gradResult is graduate --format json.
type gradResult struct {
	Stage    string        `json:"stage"`
	Overall  string        `json:"overall"`
	Partial  bool          `json:"partial"`
	Mixed    bool          `json:"mixed"`
	Dirs     []gradDir     `json:"runs"`
	Verdicts []gradVerdict `json:"verdicts"`
	Warnings []string      `json:"warnings"`
}

type gradDir struct {
	Dir      string `json:"dir"`
	Trials   int    `json:"trialsCounted"`
	Complete bool   `json:"complete"`
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
}

func runGraduate(streams IOStreams, f *graduateFlags, dirs []string) error {
	if f.criteria == "" {
		return usageErr("graduate: --criteria is required (alpha, beta, ga or a criteria file)")
	}
	if f.format != "text" && f.format != "json" {
		return usageErr("--format %q: allowed: text, json", f.format)
	}
	crit, err := loadCriteria(f.criteria)
	if err != nil {
		return err
	}
	agg := runner.NewAggregate(nil, nil)
	agg.AllowMixed = f.allowMixed
	agg.MixedRemedy = "pass --allow-mixed to pool them anyway (the result is labelled mixed)"
	res := gradResult{Stage: crit.Stage, Verdicts: []gradVerdict{}}
	if res.Stage == "" {
		res.Stage = f.criteria
	}
	dirs, err = rundir.ExpandRuns(dirs)
	if err != nil {
		return usageErr("%v", err)
	}
	for _, dir := range dirs {
		st, err := agg.Load(dir)
		if err != nil {
			return runError(err)
		}
		res.Dirs = append(res.Dirs, gradDir{Dir: dir, Trials: st.Trials, Complete: st.Complete, Version: st.Info.Build.Version, Revision: st.Info.Build.Revision})
		if !st.Complete {
			res.Partial = true
			agg.Warnings = append(agg.Warnings, fmt.Sprintf("%s: partial run (interrupted, crashed or still running): the verdicts cover only its %d committed trials", dir, st.Trials))
		}
	}
	res.Mixed = agg.Mixed
	res.Warnings = append([]string{}, agg.Warnings...)
	rows := agg.Rows()
	if len(rows) == 0 || agg.Trials == 0 {
		return usageErr("%v: no committed trials", dirs)
	}
	judge := func(r *runner.Row) bool {
		if len(f.policies) > 0 {
			return slices.Contains(f.policies, r.Policy)
		}
		return r.Policy != api.PolicyNone.String()
	}
	for _, p := range f.policies {
		if !slices.ContainsFunc(rows, func(r *runner.Row) bool { return r.Policy == p }) {
			var ran []string
			for _, r := range rows {
				if !slices.Contains(ran, r.Policy) {
					ran = append(ran, r.Policy)
				}
			}
			return usageErr("--policy %s: not in %v, which ran %s", p, dirs, strings.Join(ran, ", "))
		}
	}
	var judged []graduation.Judged
	for _, r := range rows {
		if !judge(r) || r.Trials == 0 {
			continue
		}
		in := agg.GraduationInputs(r)
		judged = append(judged, graduation.Judged{Scenario: r.Scenario, Policy: r.Policy, In: in, Verdicts: graduation.Evaluate(crit, in)})
	}
	graduation.PoolEvidence(crit, judged)
	var all []graduation.Verdict
	for _, j := range judged {
		for _, v := range j.Verdicts {
			if res.Partial {
				v.Warnings = append(v.Warnings, "partial run: the verdict covers only the trials committed")
				if f.strict && v.Status == graduation.Pass {
					v.Status = graduation.Insufficient
					v.Message = "partial run (--strict): " + v.Message
				}
			}
			if agg.Mixed {
				v.Warnings = append(v.Warnings, "mixed: pooled runs of different scenario content (--allow-mixed)")
			}
			all = append(all, v)
			res.Verdicts = append(res.Verdicts, gradVerdict{Scenario: j.Scenario, Policy: j.Policy, Verdict: v})
		}
	}
	if len(res.Verdicts) == 0 {
		return usageErr("%v: no policy to judge (only the none baseline; use --policy none)", dirs)
	}
	overall := graduation.Overall(all)
	res.Overall = string(overall)
	for _, w := range agg.Warnings {
		fmt.Fprintf(streams.ErrOut, "sidebench: warning: %s\n", w)
	}
	if f.format == "json" {
		b, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return asInternal(err)
		}
		fmt.Fprintln(streams.Out, string(b))
	} else {
		writeGraduation(streams, &res)
	}
	switch {
	case overall == graduation.Fail:
		return silent(ExitFailed)
	case overall == graduation.Insufficient && f.strict:
		return silent(ExitFailed)
	}
	return nil
}

// writeGraduation prints the verdicts as run's result table prints rows:
// a line per scenario and policy, the policy in full (policy names such
// as kep753+ContainerRestartRules+RestartAllContainersOnContainerExits
// made a column of every line wider than the terminal), then its
// criteria indented under it; below, a wrapped note per verdict that did
// not pass.
func writeGraduation(streams IOStreams, res *gradResult) {
	header := []string{"CRITERION", "STATUS", "OBSERVED", "BOUND", "THRESHOLD", "NEEDED"}
	rows := make([][]string, len(res.Verdicts))
	widths := make([]int, len(header))
	measure := func(row []string) {
		for j, c := range row {
			widths[j] = max(widths[j], utf8.RuneCountInString(c))
		}
	}
	measure(header)
	for i, v := range res.Verdicts {
		needed := "-"
		if v.Status == graduation.Insufficient {
			needed = "?"
			if v.MoreTrialsNeeded > 0 {
				needed = "+" + strconv.Itoa(v.MoreTrialsNeeded)
			}
		}
		rows[i] = []string{"  " + v.Criterion, string(v.Status), gradNum(v.Observed), gradNum(v.Bound), gradNum(v.Threshold), needed}
		measure(rows[i])
	}
	line := func(row []string) { fmt.Fprintln(streams.Out, render.AlignedLine(widths, row)) }
	line(header)
	var notes []string
	group := ""
	for i, v := range res.Verdicts {
		if g := v.Scenario + "  " + v.Policy; g != group {
			group = g
			if utf8.RuneCountInString(g) > render.TableWidth {
				g = render.Wrap(g, render.TableWidth, "    ")
			}
			fmt.Fprintln(streams.Out, g)
		}
		line(rows[i])
		if v.Status != graduation.Pass {
			notes = append(notes, fmt.Sprintf("%s %s %s: %s: %s", v.Scenario, v.Policy, v.Criterion, v.Status, v.Message))
		}
		for _, w := range v.Warnings {
			notes = append(notes, fmt.Sprintf("%s %s %s: warning: %s", v.Scenario, v.Policy, v.Criterion, w))
		}
	}
	for _, n := range notes {
		fmt.Fprintln(streams.Out, render.Wrap(n, render.TableWidth, "  "))
	}
	label := ""
	if res.Partial {
		label += " [partial]"
	}
	if res.Mixed {
		label += " [mixed]"
	}
	fmt.Fprintf(streams.Out, "overall (%s): %s%s\n", res.Stage, res.Overall, label)
	if res.Overall == string(graduation.Insufficient) {
		fmt.Fprintln(streams.Out, render.Wrap("INSUFFICIENT DATA: nothing failed, but the data does not support graduation yet; run more trials (NEEDED), or, where NEEDED is ?, what the verdict's note says.", render.TableWidth, "  "))
	}
}

func gradNum(x float64) string {
	switch {
	case math.IsNaN(x):
		return "-"
	case math.IsInf(x, 1):
		return "+inf"
	case math.IsInf(x, -1):
		return "-inf"
	}
	return strconv.FormatFloat(x, 'g', 6, 64)
}
