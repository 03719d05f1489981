package history

import (
	"fmt"
	"strings"
)

// Describe renders one event compactly on one line for people: the time in
// seconds on the run's clock, the kind and the fields that kind uses. The
// checker's excerpts, reports and `sidebench explain` all use it.
func Describe(e *Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%12s  %s", seconds(e.T), e.Kind)
	if e.Pod == "" && e.Node != "" {
		fmt.Fprintf(&b, " node=%s", e.Node)
	}
	if e.Container != "" {
		fmt.Fprintf(&b, " %s", e.Container)
	}
	if e.Attempt != 0 {
		fmt.Fprintf(&b, " attempt=%d", e.Attempt)
	}
	switch e.Kind {
	case ContainerStarted, ContainerReady, ContainerPostStartDone, PodTerminating:
		fmt.Fprintf(&b, " value=%v", e.Value)
	case ContainerExited:
		fmt.Fprintf(&b, " code=%d", e.Code)
	case PodPhase:
		fmt.Fprintf(&b, " %s", e.Phase)
	case PodCondition:
		fmt.Fprintf(&b, " %s=%v", e.Cond, e.Value)
	case ProbeResult:
		fmt.Fprintf(&b, " %s=%s", e.Probe, e.Result)
	case FaultBegin, FaultEffect, FaultEnd, FaultNotApplied:
		fmt.Fprintf(&b, " %s#%d", e.Fault, e.FaultID)
		if e.Target != "" {
			fmt.Fprintf(&b, " target=%s", e.Target)
		}
	}
	if e.Reason != "" {
		fmt.Fprintf(&b, " reason=%s", e.Reason)
	}
	if e.Grace != 0 {
		fmt.Fprintf(&b, " grace=%s", seconds(e.Grace))
	}
	if e.CritGrace != 0 {
		fmt.Fprintf(&b, " critical=%s", seconds(e.CritGrace))
	}
	if e.CPU != 0 || e.Mem != 0 || e.CPULimit != 0 || e.MemLimit != 0 {
		fmt.Fprintf(&b, " cpu=%dm mem=%d", e.CPU, e.Mem)
		if e.CPULimit != 0 || e.MemLimit != 0 {
			fmt.Fprintf(&b, " limits=%dm/%d", e.CPULimit, e.MemLimit)
		}
	}
	if e.OOMScoreAdj != 0 {
		fmt.Fprintf(&b, " oomScoreAdj=%d", e.OOMScoreAdj)
	}
	if e.CPUs != "" {
		fmt.Fprintf(&b, " cpus=%s", e.CPUs)
	}
	if e.Msg != "" && e.Kind != RunEnd {
		fmt.Fprintf(&b, " msg=%q", e.Msg)
	}
	return b.String()
}

func seconds(ns int64) string { return fmt.Sprintf("%.3fs", float64(ns)/1e9) }
