package cli

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sidebench/sidebench/harness/rundir"
	"github.com/sidebench/sidebench/reference-impl/api"
	"github.com/sidebench/sidebench/reports/explain"
)

type explainFlags struct {
	scenario string
	pod      string
	trial    int
	policy   string
	all      bool
}

func newExplainCommand(streams IOStreams) *cobra.Command {
	f := &explainFlags{}
	cmd := &cobra.Command{
		Use:   "explain RUNDIR [--pod NAME]",
		Short: "List a run's pods with findings, or print one pod's timeline",
		Long: `Without --pod: list the pods of a run directory that have findings, one line
per pod of a trial and policy, with their invariants and classes, violations
first (at most 50; --all lists every one); --policy and --trial list only
that policy's or trial's pods. A directory of runs ('run --out DIR a.yaml
b.yaml' writes DIR/a, DIR/b) lists each run's.

With --pod: print the timeline of that pod from a run directory (or a
history file): its containers' starts, probes, exits and signals, the node
and fault events that touched it, and the checker's findings about it, each
also marked in the timeline at the instant the checker decided it. A run
holds one pod of that name per trial and policy (and scenario, in a run
directory of several, such as a soak's): --trial, --policy and --scenario
pick one (default: the first; --all prints every one).

Timeline markers:
  !!  a fault event (fault.begin, fault.effect, fault.end, fault.not-applied)
  **  a node-level event (kubelet, runtime or node down/up, node shutdown)
  =>  a finding, at the instant the checker decided it`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErr("exactly one RUNDIR is required")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.pod == "" {
				return runExplainList(streams, f, args[0])
			}
			return runExplain(streams, f, args[0])
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.pod, "pod", "", "pod name (NAME or NAMESPACE/NAME); without it, list the pods with findings")
	fl.IntVar(&f.trial, "trial", -1, "trial number; -1 is the first trial with the pod (without --pod: every trial)")
	fl.StringVar(&f.scenario, "scenario", "", "scenario (a run directory of several, such as a soak's: default the first with the pod; without --pod: every scenario)")
	fl.StringVar(&f.policy, "policy", "", "policy (default: the first one with the pod; without --pod: every policy)")
	fl.BoolVar(&f.all, "all", false, "print the pod of every trial and policy (without --pod: list every pod with findings)")
	return cmd
}

func runExplain(streams IOStreams, f *explainFlags, target string) error {
	histPath, findDir, keep := target, "", ""
	if st, err := os.Stat(target); err == nil && st.IsDir() {
		runs, err := rundir.Runs(target)
		if err != nil {
			return usageErr("explain: %v", err)
		}
		if len(runs) > 1 {
			return usageErr("explain: %s holds the runs of %s: --pod needs one of them (such as %s)", target, rundir.RunNames(runs), runs[0])
		}
		target = runs[0]
		histPath, findDir = filepath.Join(target, rundir.FileHistory), target
		if info, err := rundir.ReadInfo(target); err == nil {
			keep = info.KeepHistory
		}
	}
	hf, err := rundir.OpenHistory(target)
	if err != nil {
		return usageErr("explain: %v", err)
	}
	defer hf.Close()
	q, err := f.selection(findDir, target)
	if err != nil {
		return err
	}
	q.Pod, q.All = f.pod, f.all
	hits, names, elsewhere, err := explain.Find(hf, q)
	if err != nil {
		// The history is unreadable or malformed: an input error, as for
		// `check` (exit 2), not an internal one.
		return usageErr("explain: %s: %v", histPath, err)
	}
	if len(hits) == 0 {
		if len(names) > 10 {
			names = append(names[:10], "...")
		}
		kept := ""
		if keep != "" && keep != rundir.RetainAll {
			kept = fmt.Sprintf(" (the run kept the histories of some pods only: --keep-history %s)", keep)
		}
		return usageErr("explain: no pod %q in %s (with the given --trial/--policy)%s; pods: %s", f.pod, histPath, kept, strings.Join(names, ", "))
	}
	findings := explain.Findings(findDir)
	w := bufio.NewWriter(streams.Out)
	defer w.Flush()
	for i, h := range hits {
		if i > 0 {
			fmt.Fprintln(w)
		}
		explain.WriteTimeline(w, h.Meta, h.Events, findings)
	}
	if len(elsewhere) > 0 {
		w.Flush()
		fmt.Fprintf(streams.ErrOut, "sidebench: explain: scenario %s has a pod %s too (this is %s's): --scenario picks one\n",
			strings.Join(elsewhere, ", "), f.pod, hits[0].Meta.Scenario)
	}
	return nil
}

// selection checks --scenario, --policy and --trial against the run
// directory dir (when target is one: its journal says which scenarios,
// policies and trials it has): one it does not have is named as such,
// with what it has, rather than as a pod not found (or every policy
// sidebench knows). It returns them as a query (the policy's canonical
// name; "" and -1 for none given).
func (f *explainFlags) selection(dir, target string) (explain.Query, error) {
	var ran, scenarios []string
	trials := map[int]bool{}
	if dir != "" {
		_, _ = rundir.EachEntry(filepath.Join(dir, rundir.FileJournal), func(e *rundir.Entry) error {
			if !slices.Contains(ran, e.Policy) {
				ran = append(ran, e.Policy)
			}
			if !slices.Contains(scenarios, e.Scenario) {
				scenarios = append(scenarios, e.Scenario)
			}
			trials[e.Trial] = true
			return nil
		})
	}
	q := explain.Query{Scenario: f.scenario, Trial: f.trial}
	if f.scenario != "" && len(scenarios) > 0 && !slices.Contains(scenarios, f.scenario) {
		return q, usageErr("explain: --scenario %s: not in %s, which ran %s", f.scenario, target, strings.Join(scenarios, ", "))
	}
	policy := ""
	if f.policy != "" {
		g, err := api.ParseGates(f.policy)
		if err != nil && len(ran) > 0 {
			return q, usageErr("explain: --policy %q: not a policy; %s ran %s", f.policy, target, strings.Join(ran, ", "))
		}
		if err != nil {
			return q, usageErr("explain: --policy: %v", err)
		}
		policy = g.String()
		if len(ran) > 0 && !slices.Contains(ran, policy) {
			return q, usageErr("explain: --policy %s: not in %s, which ran %s", policy, target, strings.Join(ran, ", "))
		}
	}
	if f.trial >= 0 && len(trials) > 0 && !trials[f.trial] {
		return q, usageErr("explain: --trial %d: not in %s, which has trials %s", f.trial, target, trialRanges(trials))
	}
	q.Policy = policy
	return q, nil
}

// explainListMax is how many pods `explain RUNDIR` lists without --all.
const explainListMax = 50

// runExplainList lists the pods with findings of a run, or of each run
// in a directory of runs (`run --out DIR a.yaml b.yaml`).
func runExplainList(streams IOStreams, f *explainFlags, target string) error {
	if st, err := os.Stat(target); err == nil && !st.IsDir() {
		return usageErr("%s: not a run directory (without --pod, explain lists the pods with findings of a run directory)", target)
	}
	runs, err := rundir.Runs(target)
	if err != nil {
		return usageErr("explain: %v", err)
	}
	type listed struct {
		dir string
		l   *explain.Listing
	}
	var out []listed
	var skipped []error
	for _, dir := range runs {
		q, err := f.selection(dir, dir)
		if err != nil && len(runs) > 1 {
			// Several scenarios' runs: --policy or --trial may name one
			// that only some of them have.
			skipped = append(skipped, err)
			continue
		}
		if err != nil {
			return err
		}
		l, err := explain.List(dir, q)
		if err != nil {
			return runError(err)
		}
		out = append(out, listed{dir, l})
	}
	if len(out) == 0 {
		return skipped[0]
	}
	w := bufio.NewWriter(streams.Out)
	defer w.Flush()
	max := explainListMax
	if f.all {
		max = 0
	}
	for i, o := range out {
		if i > 0 {
			fmt.Fprintln(w)
		}
		explain.WriteListing(w, o.dir, o.l, max)
	}
	for _, err := range skipped {
		fmt.Fprintf(w, "\n%v\n", strings.TrimPrefix(err.Error(), "explain: "))
	}
	return nil
}

// trialRanges writes a set of trial numbers as ranges: "0-2, 5".
func trialRanges(set map[int]bool) string {
	ns := make([]int, 0, len(set))
	for n := range set {
		ns = append(ns, n)
	}
	slices.Sort(ns)
	var parts []string
	for i := 0; i < len(ns); {
		j := i
		for j+1 < len(ns) && ns[j+1] == ns[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", ns[i], ns[j]))
		} else {
			parts = append(parts, strconv.Itoa(ns[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}
