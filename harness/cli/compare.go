package cli

import (
	"bytes"
	"errors"
	"io"
	"math"
	"os"

	"github.com/spf13/cobra"

	"github.com/sidebench/sidebench/harness/runner"
	"github.com/sidebench/sidebench/reports/compare"
)

// compareFlags is the flagpole of `sidebench compare`.
type compareFlags struct {
	format           string
	threshold, alpha float64
	policyA, policyB string
	force            bool
}

const compareLong = `Compare run directories (written by 'sidebench run'), benchstat style: the
first is the baseline (A), every other one a candidate (B, C, ...) compared
with it. Latency samples come from each run's per-pod records
(pods.jsonl.zst; faulted pods left out, as in the reports), violation
counts from its committed trials. A run that kept only some pods' records
(soak's --keep-history sample:P, or findings) cannot be paired pod by pod:
follow such runs with 'sidebench trend', which compares distributions.

Each policy × latency metric gets three rows, p50, p90 and p99:

  A, B, ...   nearest-rank quantiles in ms
  vs A        the quantile's relative change, (B − A)/A, or "~" when the
              test is not significant at --alpha or the CI contains 0
  CI          the 95% percentile-bootstrap interval of that change
  p           the test's p-value, Holm-corrected per candidate over the
              distinct samples compared (identical samples, such as
              create_to_ready and pod_startup on most workloads, count once)
  test        "paired +slower -faster =equal" or "n=A+B" (unpaired)

Paired: when a candidate ran the same scenario with the same seeds, its pods
are A's pods (common random numbers), matched by scenario, policy, trial,
seed and pod name, and the test is a Wilcoxon signed-rank test on the
per-pod differences. Otherwise it is a Mann–Whitney U test. A geomean row
closes the table.

"~" means the data cannot tell the runs apart; it does not mean "equal".
Violation rates are shown as k/n rate [<= 95% Wilson upper bound]: "worse"
when the candidate's interval lies entirely above A's, "better" when
entirely below; invariants without a violation in any run are one line.

A regression is a significant quantile increase by more than --threshold (a
fraction: 0.05 = 5%; 0 = any significant increase) whose CI lies above 0,
or a violation rate marked "worse". Each regression is listed at the end.

Directories of runs, as 'run --out DIR a.yaml b.yaml' writes (DIR/a,
DIR/b), are compared scenario by scenario: A/a with B/a, A/b with B/b, a
table each (--format json: an array of them); every directory must hold
the same scenarios' runs.

Runs of different scenarios are refused unless --force. The same scenario
with different content (another scenarioHash) is a warning: the comparison
then measures that change.

--policy-a and --policy-b compare two different policies, e.g. none in RUN_A
against kep753 in RUN_B (RUN_A and RUN_B may be the same directory): the
sidecar overhead, paired by trial when the runs share their seeds.

Exit codes:
  0  no regression
  1  a regression was found
  2  usage error, unreadable input (the message names the path), or runs
     of different scenarios without --force`

func newCompareCommand(streams IOStreams) *cobra.Command {
	f := &compareFlags{}
	cmd := &cobra.Command{
		Use:   "compare [flags] RUN_A RUN_B [RUN_C...]",
		Short: "Compare runs' latencies and violation rates (A/B, benchstat style)",
		Long:  compareLong,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usageErr("%s: need at least two run directories (RUN_A RUN_B ...), got %d", cmd.CommandPath(), len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCompare(streams, f, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.format, "format", "text", "output format: text, md or json")
	fl.Float64Var(&f.threshold, "threshold", 0.05, "relative quantile increase counted as a regression (fraction; 0: any significant increase)")
	fl.Float64Var(&f.alpha, "alpha", 0.05, "significance level of the tests after Holm correction")
	fl.StringVar(&f.policyA, "policy-a", "", "policy of RUN_A to compare (with --policy-b)")
	fl.StringVar(&f.policyB, "policy-b", "", "policy of the other runs to compare (with --policy-a)")
	fl.BoolVar(&f.force, "force", false, "compare runs of different scenarios")
	return cmd
}

func runCompare(streams IOStreams, f *compareFlags, dirs []string) error {
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
	if err := checkTestFlags(f.alpha, f.threshold); err != nil {
		return err
	}
	if (f.policyA == "") != (f.policyB == "") {
		return usageErr("--policy-a and --policy-b go together")
	}
	thr := thresholdOption(f.threshold)
	// Directories of runs ('run --out DIR a.yaml b.yaml') give a table
	// per scenario, A/<name> against B/<name>.
	tables, err := runner.Compare(dirs, compare.Options{Alpha: f.alpha, Threshold: thr, PolicyA: f.policyA, PolicyB: f.policyB, Force: f.force})
	if err != nil {
		return runError(err)
	}
	regression := false
	for i := range tables {
		regression = regression || tables[i].RegressionFound
	}
	if err := writeTables(streams.Out, tables, write, f.format == "json"); err != nil {
		return asInternal(err)
	}
	if regression {
		return silent(ExitFailed)
	}
	return nil
}

// writeTables writes one comparison as it always has, several (a table
// per scenario) one after the other, or as a JSON array of them.
func writeTables(w io.Writer, tables []compare.Table, write func(*compare.Table, io.Writer) error, asJSON bool) error {
	if len(tables) == 1 {
		return write(&tables[0], w)
	}
	for i := range tables {
		var b bytes.Buffer
		if err := write(&tables[i], &b); err != nil {
			return err
		}
		sep := "\n"
		switch {
		case asJSON && i == 0:
			sep = "[\n"
		case asJSON:
			sep = ",\n"
		case i == 0:
			sep = ""
		}
		if _, err := io.WriteString(w, sep); err != nil {
			return err
		}
		if _, err := w.Write(bytes.TrimRight(b.Bytes(), "\n")); err != nil {
			return err
		}
		if _, err := io.WriteString(w, "\n"); err != nil {
			return err
		}
	}
	if asJSON {
		_, err := io.WriteString(w, "]\n")
		return err
	}
	return nil
}

// unwrapPathErr drops the path of an *os.PathError (the caller names it).
func unwrapPathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// checkTestFlags checks --alpha and --threshold, as compare and trend
// take them.
func checkTestFlags(alpha, threshold float64) error {
	if !(alpha > 0 && alpha < 1) {
		return usageErr("--alpha %v: must be in (0, 1)", alpha)
	}
	if math.IsNaN(threshold) || math.IsInf(threshold, 0) || threshold < 0 {
		return usageErr("--threshold %v: must be a finite fraction >= 0 (0: any significant increase)", threshold)
	}
	return nil
}

// thresholdOption is --threshold as compare.Options and trend.Options
// take it: their 0 is the default 5%, a negative value any increase.
func thresholdOption(t float64) float64 {
	if t == 0 {
		return -1
	}
	return t
}
