package cli

import (
	"github.com/spf13/cobra"

	"github.com/sidebench/sidebench/harness/runner"
	"github.com/sidebench/sidebench/reports/trend"
)

type trendFlags struct {
	out              string
	threshold, alpha float64
}

const trendLong = `Follow nightly runs. Each argument is a run directory (a night) or a
directory of nights (a CronJob's results), whose subdirectories are runs
or directories of one night's runs ('run --out NIGHTS/<night> a.yaml
b.yaml' writes NIGHTS/<night>/a, NIGHTS/<night>/b). The runs of one 'run'
of several scenarios (the invocation in their run.json) are one night, so
the directory such a run wrote is a night too. The nights are ordered by
start time and, per judged scenario × policy and night, trend.md and trend.html show
the violation rate with its Clopper–Pearson upper bound, pod_startup p50
and p99 with their confidence intervals, the lifecycles behind them, and
the version and VCS revision that ran. Adjacent nights are compared with
'sidebench compare's tests (Mann–Whitney U on pod_startup and a median
change above --threshold; disjoint p99 intervals; disjoint Wilson
intervals on violation rates): a night that differs is flagged, and the
scenario's content changing between nights is noted.

Exit codes:
  0  the newest night did not regress against the one before
  1  the newest night regressed (a nightly gate)
  2  usage error or unreadable input (the message names the path)
  3  internal error (trend.md or trend.html could not be written)`

func newTrendCommand(streams IOStreams) *cobra.Command {
	f := &trendFlags{}
	cmd := &cobra.Command{
		Use:   "trend [--out DIR] RUNDIR...|NIGHTS_DIR",
		Short: "Show nightly runs' numbers over time and flag changes (exit 1 on a regression)",
		Long:  trendLong,
		Args:  atLeastOne("run directory"),
		RunE: func(cmd *cobra.Command, args []string) error {
			// Checked as compare checks them: trend took --alpha 0 for
			// 0.05, --threshold 0 for 5% and a negative one as given.
			if err := checkTestFlags(f.alpha, f.threshold); err != nil {
				return err
			}
			t, md, err := runner.Trend(args, f.out, trend.Options{Alpha: f.alpha, Threshold: thresholdOption(f.threshold)})
			if err != nil {
				return runError(err)
			}
			streams.Out.Write(md)
			if t.Regressed {
				return silent(ExitFailed)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&f.out, "out", "", "directory for trend.md and trend.html (default: the directory of nights if one was given, else .)")
	cmd.Flags().Float64Var(&f.threshold, "threshold", 0.05, "relative change of the pod_startup median or p99 flagged when significant (fraction)")
	cmd.Flags().Float64Var(&f.alpha, "alpha", 0.05, "significance level of the Mann–Whitney U test")
	return cmd
}
