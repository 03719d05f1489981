package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sidebench/sidebench/harness/runner"
	"github.com/sidebench/sidebench/internal/version"
	"github.com/sidebench/sidebench/reports/render"
)

type mergeFlags struct {
	out    string
	strict bool
	quiet  bool
}

const mergeLong = `Pool run directories into one: the shards of a sharded run ('run --shard
I/N' or an Indexed Job with '--shards N'), or any runs of the same
scenarios. Every committed trial is copied once, frame by frame, in the
order the unsharded run commits them; a trial found twice (same scenario
content, policy, seed and trial number) is counted once, with a warning.
Runs whose scenario of the same name has different content are refused.
summary.json, report.md, report.html, junit.xml and PerfData are
recomputed through the same aggregation as 'run', so the merge of N shards
is the unsharded run: the same data files byte for byte, the same counts,
findings and verdicts. --out is locked while it is written.

A directory of runs, as 'run --out DIR a.yaml b.yaml' writes (DIR/a,
DIR/b), stands for its runs: 'merge --out M shard-0 shard-1' pools
shard-0/a with shard-1/a into M/a, and so on for every scenario, the
layout of the unsharded run (every shard must hold the same scenarios).

Exit codes (the pooled run's, as for 'run'):
  0  every criterion met (INSUFFICIENT DATA too, unless --strict)
  1  a violation or a criterion failed, or an input run is partial
  2  usage error: no input, mixed scenario content, --out not empty or in use
  3  internal error (disk full, unwritable --out)`

func newMergeCommand(streams IOStreams) *cobra.Command {
	f := &mergeFlags{}
	cmd := &cobra.Command{
		Use:   "merge --out DIR RUNDIR...",
		Short: "Pool run directories (the shards of a run) into one and report it",
		Long:  mergeLong,
		Args:  atLeastOne("run directory"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.out == "" {
				return usageErr("merge: --out DIR is required")
			}
			log := streams.ErrOut
			if f.quiet {
				log = nil
			}
			results, err := runner.MergeAll(cmd.Context(), runner.MergeOptions{Dirs: args, Out: f.out, Build: version.Get(), Strict: f.strict, Log: log})
			var rows []render.StateRow
			for _, res := range results {
				rows = append(rows, res.State.State.Rows...)
				if !f.quiet {
					fmt.Fprintf(streams.ErrOut, "sidebench: wrote %s (%d trials from %d directories)\n", res.Dirs[0], res.State.State.TrialsCommitted, len(args))
				}
			}
			if err != nil {
				return runError(err)
			}
			writeTable(streams.Out, rows)
			return exitFor(cmd.Context(), streams, f.strict, results)
		},
	}
	cmd.Flags().StringVar(&f.out, "out", "", "the merged run directory (must not exist or be empty)")
	cmd.Flags().BoolVar(&f.strict, "strict", false, "fail (exit 1) on INSUFFICIENT DATA and on a partial run's verdicts")
	cmd.Flags().BoolVarP(&f.quiet, "quiet", "q", false, "print only the result")
	return cmd
}
