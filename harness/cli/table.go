package cli

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/sidebench/sidebench/reports/render"
)

// writeTable prints the result table. Its numbers are the runner's
// (summary.json's "sidebench" rows): pod_startup percentiles over the
// population every output uses, with the faulted pods it excludes
// counted; VERDICT is the row's verdict ("-": a baseline, measured and
// not judged). Below it, every criterion that did not PASS, one line each.
func writeTable(w io.Writer, rows []render.StateRow) {
	tw := newTabWriter(w)
	fmt.Fprintln(tw, "SCENARIO\tPOLICY\tTRIALS\tPODS\tVIOLATIONS\tDEGRADATIONS\tP50 STARTUP\tP99 STARTUP\tN (FAULTED EXCL.)\tVERDICT")
	for _, r := range rows {
		trials := strconv.Itoa(r.Trials)
		if r.PartialTrials > 0 {
			trials += fmt.Sprintf(" (%d partial)", r.PartialTrials)
		}
		p50, p99 := "-", "-"
		if r.PodStartupMs.N > 0 {
			p50, p99 = fmtMs(r.PodStartupMs.P50), fmtMs(r.PodStartupMs.P99)
		}
		n := fmt.Sprintf("%d (%d)", r.PodStartupMs.N, r.PodStartupMs.FaultedExcluded)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\n", r.Scenario, r.Policy, trials, r.Pods, r.Violations, r.Degradations, p50, p99, n, r.Status)
	}
	tw.Flush()
	for _, r := range rows {
		for _, c := range r.Criteria {
			if c.Status == "PASS" {
				continue
			}
			line := fmt.Sprintf("%s %s/%s %s: %s", c.Status, r.Scenario, r.Policy, c.Name, c.Message)
			if c.MoreTrialsNeeded > 0 {
				line += fmt.Sprintf(" (≈%d more trials needed)", c.MoreTrialsNeeded)
			}
			fmt.Fprintln(w, line)
		}
	}
}

// fmtMs renders milliseconds as a rounded duration ("1.234s", "850ms").
func fmtMs(v float64) string {
	d := time.Duration(v * 1e6)
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.String()
}
