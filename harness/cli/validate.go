package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sidebench/sidebench/harness/check"
	"github.com/sidebench/sidebench/harness/rundir"
	"github.com/sidebench/sidebench/harness/scenario"
)

func newValidateCommand(streams IOStreams, d deps) *cobra.Command {
	var maxMemory string
	cmd := &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check scenario files without running them",
		Long: `Decode and validate scenario files strictly. Every problem is reported as
FILE:LINE:COL: FIELD.PATH: message, with the allowed values and, for a typo,
the closest valid name. A scenario whose estimated memory (live pods, nodes,
the longest pod history, what a run keeps per trial) exceeds the memory
budget is refused, naming the field that drives the estimate; the budget is
the machine's memory (or the cgroup's or address-space limit, if lower)
unless --max-memory sets another. Under a Go soft memory limit (run's
--max-memory, GOMEMLIMIT or the cgroup's limit) the estimate leaves out the
garbage collector's headroom. Exit code 2 if any file is invalid. A
Kubernetes manifest (Pod, Deployment, Job...) is refused with the 'sidebench
init' command that wraps it. Warnings (exit 0) name what a valid scenario
likely leaves out, such as a probe-gated sidecar without a behaviour.`,
		Args: atLeastOne("scenario file"),
		RunE: func(cmd *cobra.Command, args []string) error {
			budget, _, err := memoryBudget(maxMemory, 1, d.memory)
			if err != nil {
				return err
			}
			bad := 0
			for _, f := range args {
				s, err := scenario.Load(f)
				if err == nil {
					err = s.CheckBudget(budget)
				}
				if err != nil {
					bad++
					fmt.Fprintln(streams.ErrOut, err)
					continue
				}
				pols := make([]string, 0, len(s.Policies))
				for _, g := range s.PolicyGates() {
					pols = append(pols, g.String())
				}
				fmt.Fprintf(streams.Out, "%s: ok: scenario %s, %d workload(s), %d pods/trial, %d fault(s), policies %s, %d trial(s)\n",
					f, s.Metadata.Name, len(s.Workloads), s.TotalPods(), len(s.Faults), strings.Join(pols, ","), s.TrialCount())
				// A workaround policy runs another pod than the template:
				// say what it makes of it (docs/workarounds.md).
				for _, g := range s.PolicyGates() {
					for _, w := range g.Workarounds {
						fmt.Fprintf(streams.Out, "  %s: %s: %s\n", g, w.Kind, w.Explain())
					}
				}
				for _, w := range s.Warnings() {
					fmt.Fprintln(streams.ErrOut, w)
				}
			}
			if bad > 0 {
				return silent(ExitUsage)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&maxMemory, "max-memory", "", "memory budget, e.g. 1GiB, as run's --max-memory (default: the machine's memory)")
	return cmd
}

func newCheckCommand(streams IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "check HISTORY|RUNDIR...",
		Short: "Re-check ordering invariants over recorded histories",
		Long: `Check the ordering invariants (SEMANTICS.md) over histories, offline: a run
directory (its committed trials), a directory of runs ('run --out DIR
a.yaml b.yaml' writes DIR/a, DIR/b: each run), a compressed history
(history.jsonl.zst) or a plain JSONL history. A trial given twice (same
scenario content, policy, seed and trial number: a run and its merge) is
checked once, with a warning. A run that kept only some pods' histories
(--keep-history findings or sample:P) re-checks to the same findings for
every pod it kept. A file that ends inside a compressed frame or a line (a
crashed run) is checked up to there, with a warning. Exit code 1 if any
violation, or if no pod was checked (an empty or metadata-only history,
such as a killed run leaves: "no pods checked"); 2 if a file cannot be
read or is malformed (a broken line, an unknown kind, a line over 4 MiB,
t going backwards within a run).`,
		Args: atLeastOne("run directory or history file"),
		RunE: func(cmd *cobra.Command, args []string) error {
			paths, err := historyArgs(args)
			if err != nil {
				fmt.Fprintf(streams.ErrOut, "check: %v\n", err)
				return silent(ExitUsage)
			}
			if code := check.RunCheckCommand(streams.Out, streams.ErrOut, paths, rundir.OpenHistory); code != 0 {
				return silent(code)
			}
			return nil
		},
	}
}

// historyArgs expands the directories among paths into the run
// directories they name (rundir.Runs: a run directory, or a directory of
// them such as 'run --out DIR a.yaml b.yaml' writes); history files stay.
func historyArgs(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			out = append(out, p)
			continue
		}
		runs, err := rundir.Runs(p)
		if err != nil {
			return nil, err
		}
		out = append(out, runs...)
	}
	return out, nil
}
