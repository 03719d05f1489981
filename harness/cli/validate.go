package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sidebench/sidebench/harness/check"
	"github.com/sidebench/sidebench/harness/scenario"
)

func newValidateCommand(streams IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check scenario files without running them",
		Long: `Decode and validate scenario files strictly. Every problem is reported as
FILE:LINE:COL: FIELD.PATH: message, with the allowed values and, for a typo,
the closest valid name. Exit code 2 if any file is invalid. A Kubernetes
manifest (Pod, Deployment, Job...) is refused with the 'sidebench init'
command that wraps it. Warnings (exit 0) name what a valid scenario
likely leaves out, such as a probe-gated sidecar without a behaviour.`,
		Args: atLeastOne("scenario file"),
		RunE: func(cmd *cobra.Command, args []string) error {
			bad := 0
			for _, f := range args {
				s, err := scenario.Load(f)
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
}

func newCheckCommand(streams IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "check HISTORY...",
		Short: "Re-check ordering invariants over recorded histories",
		Long: `Check the ordering invariants (SEMANTICS.md) over history files
(history.jsonl), offline. Exit code 1 if any violation, 2 if a file cannot
be read.`,
		Args: atLeastOne("history file"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := check.RunCheckCommand(streams.Out, streams.ErrOut, args); code != 0 {
				return silent(code)
			}
			return nil
		},
	}
}
