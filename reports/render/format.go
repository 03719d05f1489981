package render

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/reports/stats"
)

// fmtMs renders a latency in milliseconds with a precision that suits its
// size; ±Inf is "−∞"/"+∞" and NaN "n/a".
func fmtMs(v float64) string {
	switch {
	case math.IsNaN(v):
		return "n/a"
	case math.IsInf(v, 1):
		return "+∞"
	case math.IsInf(v, -1):
		return "−∞"
	}
	a := math.Abs(v)
	switch {
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// fmtSummary renders "p [lo, hi]".
func fmtSummary(s stats.Summary) string {
	if s.N == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%s [%s, %s]", fmtMs(s.Center), fmtMs(s.Lo), fmtMs(s.Hi))
}

// fmtPct renders a fraction as a percentage with three significant digits.
func fmtPct(x float64) string {
	if math.IsNaN(x) {
		return "n/a"
	}
	if x == 0 {
		return "0%"
	}
	s := strconv.FormatFloat(x*100, 'g', 3, 64)
	if strings.ContainsAny(s, "e") {
		s = strconv.FormatFloat(x*100, 'f', 6, 64)
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s + "%"
}

// fmtNum renders an observed value, bound or threshold of a verdict.
func fmtNum(x float64) string {
	switch {
	case math.IsNaN(x):
		return "n/a"
	case math.IsInf(x, 1):
		return "+∞"
	case math.IsInf(x, -1):
		return "−∞"
	}
	return strconv.FormatFloat(x, 'g', 4, 64)
}

// fmtSec renders a run-clock time in nanoseconds as seconds.
func fmtSec(ns int64) string { return fmt.Sprintf("%.3fs", float64(ns)/1e9) }

// startTime renders the run's start as RFC 3339 UTC, or "" if unknown.
func startTime(m Meta) string {
	if m.StartUnixNano == 0 {
		return ""
	}
	return time.Unix(0, m.StartUnixNano).UTC().Format(time.RFC3339Nano)
}

// describe renders one history event compactly (history.Describe).
func describe(e *history.Event) string { return history.Describe(e) }

// excerptLines renders a finding's excerpt, marking the elided middle.
func excerptLines(f *Finding) []string {
	if len(f.Excerpt) == 0 {
		return slices.Clone(f.ExcerptLines)
	}
	var out []string
	half := len(f.Excerpt) / 2
	for i := range f.Excerpt {
		if f.Elided > 0 && i == half {
			out = append(out, fmt.Sprintf("      ... %d events elided ...", f.Elided))
		}
		out = append(out, describe(&f.Excerpt[i]))
	}
	return out
}

// findingTitle is the one-line summary of a finding.
func findingTitle(f *Finding) string {
	s := fmt.Sprintf("%s %s: pod %s", f.ID, f.Class, f.Pod)
	if f.Node != "" {
		s += " on " + f.Node
	}
	s += " at " + fmtSec(f.T)
	if f.Policy != "" {
		s += fmt.Sprintf(" (policy %s, trial %d)", f.Policy, f.Trial)
	}
	return s
}

// findingContext is the excuse and fault line of a finding ("" if none).
func findingContext(f *Finding) string {
	var parts []string
	if f.Fault != "" {
		parts = append(parts, fmt.Sprintf("attributed to fault %s#%d at %s (it touched the pod or its node, and its window contains the offending event)", f.Fault, f.FaultID, fmtSec(f.FaultT)))

	}
	if f.Excuse != "" {
		parts = append(parts, "excused by: "+f.Excuse)
	}
	return strings.Join(parts, "; ")
}

// safeName maps a label to a file-name-safe string.
func safeName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	if b.Len() == 0 {
		return "unnamed"
	}
	return b.String()
}

// explainCommand is the command that prints a pod's timeline from the run
// directory, for the reports (one place: report.md and report.html's
// findings and timelines). It names the scenario: a run directory may
// hold several (a soak's), whose pods can share names, and explain then
// shows the first scenario's pod.
func explainCommand(d RunData, pod string, trial int, policy string) string {
	cmd := fmt.Sprintf("sidebench explain RUNDIR --pod %s --trial %d", pod, trial)
	if policy != "" {
		cmd += " --policy " + policy
	}
	if d.Scenario != "" {
		cmd += " --scenario " + d.Scenario
	}
	return cmd
}
