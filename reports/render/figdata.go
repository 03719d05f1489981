package render

import (
	"cmp"
	"slices"
)

// The inputs of report.html's figures beyond the tables' data. The runner
// (harness/runner) fills them while it runs; they are bounded (a few
// thousand points per scenario) and are not part of summary.json.

// GroupRate is one policy's violation count over one invariant group (the
// letters of the IDs: S start ordering, T termination, F faults...): the
// pods with at least one violation of an invariant of the group, out of
// every pod lifecycle of the policy. The forest plot draws its rate with a
// Clopper–Pearson interval.
type GroupRate struct {
	Policy, Group string
	Pods          int
	ViolatingPods int
}

// FaultWindow is one fault instance of a trial, for the run timeline.
// Times are nanoseconds since the trial's start.
type FaultWindow struct {
	Policy string
	Trial  int
	// Fault is the fault's kind (history.Event.Fault, e.g. kubelet-crash).
	Fault string
	ID    uint32
	// Node is the node it hit ("" for a fault not bound to one).
	Node string
	// Begin is fault.begin (or fault.not-applied); End is fault.end, or
	// Begin when none was recorded.
	Begin, End int64
	NotApplied bool
}

// FindingPoint is one finding placed on the run timeline. T is
// nanoseconds since its trial's start.
type FindingPoint struct {
	Policy string
	Trial  int
	ID     string
	Class  string
	Node   string
	// Fault is the fault it is attributed to ("" if unattributed).
	Fault string
	T     int64
}

// TimelineDropped counts what the runner left out of the run timeline to
// bound its memory.
type TimelineDropped struct {
	FaultWindows, FindingPoints int
}

// LatencyLimit is a criterion on a latency quantile, drawn on that
// metric's figure: "the q quantile of Metric must be ≤ Ms".
type LatencyLimit struct {
	Metric   string
	Quantile float64
	Ms       float64
	// Label names the criterion, e.g. "criteria.podStartupP99" or
	// "beta/pod-startup".
	Label string
}

// RateTarget is a violation-rate target a graduation stage sets, and the
// number of pod lifecycles a judged policy needs in total to certify it
// at its current violation count (-1: not reachable at the observed
// rate). The soak figure draws it against the lifecycles accumulated.
type RateTarget struct {
	Policy string
	// Name is the stage or criterion, e.g. "beta (1e-3)".
	Name   string
	Rate   float64
	Needed int
}

// ProgressPoint is where one scenario × policy of a soak stood at a
// checkpoint (RunState.Progress).
type ProgressPoint struct {
	ElapsedSeconds float64 `json:"elapsedSeconds"`
	Scenario       string  `json:"scenario"`
	Policy         string  `json:"policy"`
	Pods           int     `json:"pods"`
	ViolatingPods  int     `json:"violatingPods"`
}

// invariantGroups names the groups of SEMANTICS.md's invariant IDs.
var invariantGroups = map[string]string{
	"S":  "start ordering",
	"R":  "restarts",
	"C":  "completion",
	"P":  "phase and probes",
	"T":  "termination",
	"F":  "faults",
	"U":  "spec updates and resize",
	"H":  "hooks",
	"Q":  "resources, QoS, OOM",
	"RA": "restart all containers",
	"RR": "restart rules",
}

// groupLabel is "S start ordering" (the group's letters and its name).
func groupLabel(g string) string {
	if n, ok := invariantGroups[g]; ok {
		return g + " " + n
	}
	return g
}

func normalizeFigures(d *RunData, pidx func(string) int) {
	d.Groups = slices.Clone(d.Groups)
	slices.SortStableFunc(d.Groups, func(a, b GroupRate) int {
		allFirst := func(g string) int {
			if g == GroupAll {
				return 0
			}
			return 1
		}
		return cmp.Or(cmp.Compare(allFirst(a.Group), allFirst(b.Group)), naturalCompare(a.Group, b.Group), cmp.Compare(pidx(a.Policy), pidx(b.Policy)))
	})
	d.FaultWindows = slices.Clone(d.FaultWindows)
	slices.SortStableFunc(d.FaultWindows, func(a, b FaultWindow) int {
		return cmp.Or(cmp.Compare(pidx(a.Policy), pidx(b.Policy)), cmp.Compare(a.Trial, b.Trial), cmp.Compare(a.Begin, b.Begin), cmp.Compare(a.ID, b.ID))
	})
	d.FindingPoints = slices.Clone(d.FindingPoints)
	slices.SortStableFunc(d.FindingPoints, func(a, b FindingPoint) int {
		return cmp.Or(cmp.Compare(pidx(a.Policy), pidx(b.Policy)), cmp.Compare(a.Trial, b.Trial), cmp.Compare(a.T, b.T),
			naturalCompare(a.ID, b.ID), cmp.Compare(ClassRank(a.Class), ClassRank(b.Class)))
	})
	d.LatencyLimits = slices.Clone(d.LatencyLimits)
	slices.SortStableFunc(d.LatencyLimits, func(a, b LatencyLimit) int {
		return cmp.Or(cmp.Compare(a.Metric, b.Metric), cmp.Compare(a.Quantile, b.Quantile), cmp.Compare(a.Ms, b.Ms), cmp.Compare(a.Label, b.Label))
	})
	d.RateTargets = slices.Clone(d.RateTargets)
	slices.SortStableFunc(d.RateTargets, func(a, b RateTarget) int {
		return cmp.Or(cmp.Compare(pidx(a.Policy), pidx(b.Policy)), cmp.Compare(b.Rate, a.Rate), cmp.Compare(a.Name, b.Name))
	})
}
