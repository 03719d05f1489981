package cli

import (
	"errors"
	"io"
	"math"
	"os"

	"github.com/spf13/cobra"

	"github.com/sidebench/sidebench/harness/runner"
	"github.com/sidebench/sidebench/reports/compare"
	"github.com/sidebench/sidebench/reports/render"
)

// compareFlags is the flagpole of `sidebench compare`.
type compareFlags struct {
	format           string
	threshold, alpha float64
	policyA, policyB string
}

const compareLong = `Compare two run directories (written by 'sidebench run'): RUN_A is the
baseline, RUN_B the candidate. Each run's committed trials are judged
through the same aggregation as 'run' (its latency distributions at 1 ms
resolution, faulted pods left out, as in the reports); a directory holding
only a summary.json and a pods.jsonl is read from those.

One row per policy × latency metric both runs have, benchstat style:

  median A, median B  nearest-rank medians in ms
  vs A                the relative change of the medians, (B − A)/A, or "~"
                      when the difference is not statistically significant
  p                   the two-sided Mann–Whitney U p-value, Holm-corrected
                      across all compared metrics
  n                   the sample sizes

"~" means the data cannot tell A and B apart at --alpha (p >= alpha after the
Holm correction); it does not mean "equal". With fewer than 4 samples per
side nothing can be significant. Violation rates are shown as
k/n rate [<= 95% Wilson upper bound]: "worse" when B's interval lies entirely
above A's, "better" when entirely below, "~" when they overlap.

A regression is a significant increase of a median by more than --threshold
(a fraction: 0.05 = 5%; 0 = any significant increase), or a violation rate
marked "worse". Each regression is listed at the end.

--policy-a and --policy-b compare two different policies, e.g. none in RUN_A
against kep753 in RUN_B (RUN_A and RUN_B may be the same directory): the
sidecar overhead.

Exit codes:
  0  no regression
  1  a regression was found
  2  usage error or unreadable input (the message names the path)`

func newCompareCommand(streams IOStreams) *cobra.Command {
	f := &compareFlags{}
	cmd := &cobra.Command{
		Use:   "compare [flags] RUN_A RUN_B",
		Short: "Compare two runs' latencies and violation rates (A/B, benchstat style)",
		Long:  compareLong,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageErr("%s: need exactly two run directories (RUN_A RUN_B), got %d", cmd.CommandPath(), len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCompare(streams, f, args[0], args[1])
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.format, "format", "text", "output format: text, md or json")
	fl.Float64Var(&f.threshold, "threshold", 0.05, "relative median increase counted as a regression (fraction; 0: any significant increase)")
	fl.Float64Var(&f.alpha, "alpha", 0.05, "significance level of the Mann–Whitney U test after Holm correction")
	fl.StringVar(&f.policyA, "policy-a", "", "policy of RUN_A to compare (with --policy-b)")
	fl.StringVar(&f.policyB, "policy-b", "", "policy of RUN_B to compare (with --policy-a)")
	return cmd
}

func runCompare(streams IOStreams, f *compareFlags, dirA, dirB string) error {
	var write func(*compare.Table, io.Writer) error
	switch f.format {
	case "text", "txt":
		write = (*compare.Table).WriteText
	case "md", "markdown":
		write = (*compare.Table).WriteMarkdown
	case "json":
		write = (*compare.Table).WriteJSON
	default:
		return usageErr("--format %q: allowed: text, md, json", f.format)
	}
	if !(f.alpha > 0 && f.alpha < 1) {
		return usageErr("--alpha %v: must be in (0, 1)", f.alpha)
	}
	if math.IsNaN(f.threshold) || math.IsInf(f.threshold, 0) {
		return usageErr("--threshold %v: must be a finite fraction", f.threshold)
	}
	if (f.policyA == "") != (f.policyB == "") {
		return usageErr("--policy-a and --policy-b go together")
	}
	a, err := loadRunData(dirA)
	if err != nil {
		return err
	}
	b, err := loadRunData(dirB)
	if err != nil {
		return err
	}
	if f.policyA != "" {
		if !hasPolicy(a, f.policyA) {
			return usageErr("--policy-a %s: no such policy in %s (have %v)", f.policyA, dirA, a.Policies)
		}
		if !hasPolicy(b, f.policyB) {
			return usageErr("--policy-b %s: no such policy in %s (have %v)", f.policyB, dirB, b.Policies)
		}
	}
	thr := f.threshold
	if thr == 0 {
		thr = -1 // compare.Options: 0 is the default 5%, negative any increase
	}
	t := compare.Compare(a, b, compare.Options{Alpha: f.alpha, Threshold: thr, PolicyA: f.policyA, PolicyB: f.policyB})
	if err := write(&t, streams.Out); err != nil {
		return asInternal(err)
	}
	if t.RegressionFound {
		return silent(ExitFailed)
	}
	return nil
}

func hasPolicy(d render.RunData, p string) bool {
	for _, q := range d.Policies {
		if q == p {
			return true
		}
	}
	for _, l := range d.Latencies {
		if l.Policy == p {
			return true
		}
	}
	return false
}

// loadRunData reads one side of a comparison (runner.LoadRunData); bad
// input is a usage error.
func loadRunData(path string) (render.RunData, error) {
	d, err := runner.LoadRunData(path)
	if err != nil {
		return d, runError(err)
	}
	return d, nil
}

// unwrapPathErr drops the path of an *os.PathError (the caller names it).
func unwrapPathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
