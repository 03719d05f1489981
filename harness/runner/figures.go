package runner

import (
	"container/heap"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"

	"github.com/sidebench/sidebench/harness/check"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/rundir"
	"github.com/sidebench/sidebench/harness/scenario"
	"github.com/sidebench/sidebench/reports/graduation"
	"github.com/sidebench/sidebench/reports/render"
)

// The data of report.html's figures beyond the tables: fault windows and
// findings for the run timeline, the events of a few violating or
// degraded pods for the Gantt timelines, and the soak's progress. Every
// part is bounded, so that a soak's memory stays flat: a trial keeps at
// most a few pods' events (check.KeepPods), a scenario × policy at most
// maxTimelinesPerPolicy of them, a scenario at most maxWindows fault
// windows and maxPoints findings; what is left out is counted.
const (
	keepViolationPods     = 2 // per trial (check.KeepPods)
	keepOtherPods         = 1
	maxTimelinesPerPolicy = 3
	// MaxReportTimelines is how many pod timelines a report draws.
	MaxReportTimelines = 8
	maxWindowsPerTrial = 200
	maxPointsPerTrial  = 200
	maxWindows         = 3000
	maxPoints          = 3000
)

// trialFigures is one trial's share of the figures.
type trialFigures struct {
	windows   []render.FaultWindow
	points    []render.FindingPoint
	droppedW  int
	droppedP  int
	timelines []render.Timeline
}

// scenarioFigures is what a scenario keeps for its report.
type scenarioFigures struct {
	windows   bottomK[render.FaultWindow]
	points    bottomK[render.FindingPoint]
	dropped   render.TimelineDropped       // dropped by the trials' caps
	timelines map[string][]render.Timeline // by policy
}

// bottomK keeps a uniform sample of at most k items: those with the k
// smallest hashes of their identity. The sample depends on the set of
// items alone, not on their order, and spreads over the whole run (a
// long soak's run timeline samples every part of it, not its first
// minutes).
type bottomK[T any] struct {
	k    int
	seen int
	h    hashHeap[T]
}

type hashed[T any] struct {
	hash uint64
	v    T
}

// hashHeap is a max-heap on hash.
type hashHeap[T any] []hashed[T]

func (h hashHeap[T]) Len() int           { return len(h) }
func (h hashHeap[T]) Less(i, j int) bool { return h[i].hash > h[j].hash }
func (h hashHeap[T]) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *hashHeap[T]) Push(x any)        { *h = append(*h, x.(hashed[T])) }
func (h *hashHeap[T]) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (b *bottomK[T]) add(hash uint64, v T) {
	b.seen++
	switch {
	case len(b.h) < b.k:
		heap.Push(&b.h, hashed[T]{hash, v})
	case hash < b.h[0].hash:
		b.h[0] = hashed[T]{hash, v}
		heap.Fix(&b.h, 0)
	}
}

// items returns the sample (in no particular order: render sorts).
func (b *bottomK[T]) items() []T {
	out := make([]T, len(b.h))
	for i, x := range b.h {
		out[i] = x.v
	}
	return out
}

func (b *bottomK[T]) dropped() int { return b.seen - len(b.h) }

// identity hashes a figure item's identity: FNV-1a, then splitmix64's
// finalizer, so that items differing in their last byte (trial 7 and 8)
// get unrelated hashes (FNV-1a alone orders short keys by length).
func identity(parts ...any) uint64 {
	h := fnv.New64a()
	fmt.Fprint(h, parts...)
	z := h.Sum64()
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// realClock is the smallest T taken for a wall clock (Unix ns) rather
// than a trial clock (ns since the trial's start): 10^15 ns is 11 days.
const realClock = int64(1e15)

// faultTap records a trial's fault windows as its history streams by
// (a history.Sink of the trial's tee).
type faultTap struct {
	policy  string
	trial   int
	base    int64
	based   bool
	open    map[uint32]int
	windows []render.FaultWindow
	dropped int
}

func newFaultTap(policy string, trial int) *faultTap {
	return &faultTap{policy: policy, trial: trial, open: map[uint32]int{}}
}

// rebase turns a history time into time since the trial's start: a trial
// clock is used as is, a wall clock counts from the first event.
func (t *faultTap) rebase(T int64) int64 { return T - t.base }

func (t *faultTap) Write(e *history.Event) error {
	if !t.based && e.Kind != history.RunMeta {
		t.based = true
		if e.T >= realClock {
			t.base = e.T
		}
	}
	switch e.Kind {
	case history.FaultBegin:
		if len(t.windows) >= maxWindowsPerTrial {
			t.dropped++
			return nil
		}
		t.open[e.FaultID] = len(t.windows)
		t.windows = append(t.windows, render.FaultWindow{Policy: t.policy, Trial: t.trial, Fault: e.Fault, ID: e.FaultID, Node: e.Node,
			Begin: t.rebase(e.T), End: t.rebase(e.T)})
	case history.FaultEnd:
		if j, ok := t.open[e.FaultID]; ok {
			t.windows[j].End = t.rebase(e.T)
			delete(t.open, e.FaultID)
		}
	case history.FaultNotApplied:
		if j, ok := t.open[e.FaultID]; ok {
			t.windows[j].NotApplied = true
			return nil
		}
		if len(t.windows) >= maxWindowsPerTrial {
			t.dropped++
			return nil
		}
		t.windows = append(t.windows, render.FaultWindow{Policy: t.policy, Trial: t.trial, Fault: e.Fault, ID: e.FaultID, Node: e.Node,
			Begin: t.rebase(e.T), End: t.rebase(e.T), NotApplied: true})
	}
	return nil
}

// trialFiguresOf gathers a checked trial's share of the figures.
func trialFiguresOf(tap *faultTap, rep *check.Report, policy string, trial int, seed uint64) *trialFigures {
	tf := &trialFigures{windows: tap.windows, droppedW: tap.dropped}
	for i := range rep.Findings {
		f := &rep.Findings[i]
		if len(tf.points) >= maxPointsPerTrial {
			tf.droppedP++
			continue
		}
		p := render.FindingPoint{Policy: policy, Trial: trial, ID: f.ID, Class: f.Class.String(), Node: f.Node, T: tap.rebase(f.T)}
		if f.Fault != nil {
			p.Fault = f.Fault.Name
		}
		tf.points = append(tf.points, p)
	}
	for _, k := range rep.Kept {
		tl := render.Timeline{Policy: policy, Pod: k.Pod, Trial: trial, Seed: seed, Events: k.Events}
		var why []string
		for i := range k.Findings {
			f := &k.Findings[i]
			tl.Marks = append(tl.Marks, render.TimelineMark{T: f.T, ID: f.ID, Class: f.Class.String()})
			if w := f.ID + " " + f.Class.String(); !slices.Contains(why, w) {
				why = append(why, w)
			}
		}
		tl.Why = strings.Join(why, ", ")
		tf.timelines = append(tf.timelines, tl)
	}
	return tf
}

// figuresOfRecords is the share of the figures a trial read back from a
// run directory gives (a resumed soak): its findings on a trial clock.
// Fault windows and pod events are not re-read from history.jsonl; the
// report says the timelines cover the trials run since the resume.
func figuresOfRecords(finds []rundir.FindingRecord) *trialFigures {
	tf := &trialFigures{}
	for i := range finds {
		f := &finds[i]
		if f.T >= realClock {
			continue
		}
		if len(tf.points) >= maxPointsPerTrial {
			tf.droppedP++
			continue
		}
		p := render.FindingPoint{Policy: f.Policy, Trial: f.Trial, ID: f.ID, Class: f.Class, Node: f.Node, T: f.T}
		if f.Fault != nil {
			p.Fault = f.Fault.Name
		}
		tf.points = append(tf.points, p)
	}
	return tf
}

// addFigures folds a committed trial's figures into its scenario's,
// deterministically (trials are committed in source order).
func (a *Aggregate) addFigures(scen string, tf *trialFigures) {
	if tf == nil {
		return
	}
	if a.figs == nil {
		a.figs = map[string]*scenarioFigures{}
	}
	sf := a.figs[scen]
	if sf == nil {
		sf = &scenarioFigures{timelines: map[string][]render.Timeline{},
			windows: bottomK[render.FaultWindow]{k: maxWindows}, points: bottomK[render.FindingPoint]{k: maxPoints}}
		a.figs[scen] = sf
	}
	sf.dropped.FaultWindows += tf.droppedW
	sf.dropped.FindingPoints += tf.droppedP
	for _, w := range tf.windows {
		sf.windows.add(identity(w.Policy, " ", w.Trial, " ", w.ID, " ", w.Fault), w)
	}
	for _, p := range tf.points {
		sf.points.add(identity(p.Policy, " ", p.Trial, " ", p.ID, " ", p.Class, " ", p.Node, " ", p.T), p)
	}
	for _, t := range tf.timelines {
		sf.timelines[t.Policy] = keepTimeline(sf.timelines[t.Policy], t)
	}
}

// keepTimeline adds t to a policy's kept timelines when it shows an
// invariant and class none of them shows; when they are full, a timeline
// with a violation replaces the last one without.
func keepTimeline(kept []render.Timeline, t render.Timeline) []render.Timeline {
	shows := func(tl render.Timeline, m render.TimelineMark) bool {
		return slices.ContainsFunc(tl.Marks, func(x render.TimelineMark) bool { return x.ID == m.ID && x.Class == m.Class })
	}
	brings := false
	for _, m := range t.Marks {
		if !slices.ContainsFunc(kept, func(k render.Timeline) bool { return shows(k, m) }) {
			brings = true
			break
		}
	}
	if !brings {
		return kept
	}
	if len(kept) < maxTimelinesPerPolicy {
		return append(kept, t)
	}
	if !hasViolation(t) {
		return kept
	}
	for i := len(kept) - 1; i >= 0; i-- {
		if !hasViolation(kept[i]) {
			out := slices.Delete(slices.Clone(kept), i, i+1)
			return append(out, t)
		}
	}
	return kept
}

func hasViolation(t render.Timeline) bool {
	return slices.ContainsFunc(t.Marks, func(m render.TimelineMark) bool { return m.Class == check.Violation.String() })
}

// reportTimelines picks the timelines a scenario's report draws: up to
// MaxReportTimelines, taken round-robin over its policies (judged and bug
// replicas first, then baselines), so that every policy with findings
// gets one before any gets a second.
func (a *Aggregate) reportTimelines(scen string, rows []*Row) []render.Timeline {
	sf := a.figs[scen]
	if sf == nil {
		return nil
	}
	var order []string
	for _, pass := range []bool{true, false} {
		for _, r := range rows {
			if (r.Role != Baseline) == pass {
				order = append(order, r.Policy)
			}
		}
	}
	var out []render.Timeline
	for round := 0; len(out) < MaxReportTimelines; round++ {
		took := false
		for _, pol := range order {
			if ts := sf.timelines[pol]; round < len(ts) && len(out) < MaxReportTimelines {
				out = append(out, ts[round])
				took = true
			}
		}
		if !took {
			break
		}
	}
	return out
}

// groupRates are a scenario's per-group violation counts for the policy
// comparison figure: every policy's overall count, then each group's
// (when every trial recorded them).
func groupRates(rows []*Row) []render.GroupRate {
	var out []render.GroupRate
	for _, r := range rows {
		out = append(out, render.GroupRate{Policy: r.Policy, Group: render.GroupAll, Pods: r.Pods, ViolatingPods: r.ViolatingPods})
		if r.groupsMissing {
			continue
		}
		var groups []string
		for _, id := range r.invOrder {
			if g := check.InvariantGroup(id); !slices.Contains(groups, g) {
				groups = append(groups, g)
			}
		}
		for _, g := range groups {
			out = append(out, render.GroupRate{Policy: r.Policy, Group: g, Pods: r.Pods, ViolatingPods: r.groups[g]})
		}
	}
	return out
}

// latencyLimits are the criteria on latency quantiles a scenario declares
// (criteria.podStartupP50/P99 and its graduation stage's podStartup).
func latencyLimits(s *scenario.Scenario) []render.LatencyLimit {
	var out []render.LatencyLimit
	c := &s.Criteria
	if c.PodStartupP50 != nil {
		out = append(out, render.LatencyLimit{Metric: "pod_startup", Quantile: 0.5, Ms: float64(c.PodStartupP50.D().Milliseconds()), Label: "criteria.podStartupP50"})
	}
	if c.PodStartupP99 != nil {
		out = append(out, render.LatencyLimit{Metric: "pod_startup", Quantile: 0.99, Ms: float64(c.PodStartupP99.D().Milliseconds()), Label: "criteria.podStartupP99"})
	}
	if c.Graduation != "" {
		if crit, err := graduation.Load(c.Graduation); err == nil && crit.PodStartup != nil {
			out = append(out, render.LatencyLimit{Metric: "pod_startup", Quantile: crit.PodStartup.Quantile, Ms: crit.PodStartup.MaxMs,
				Label: crit.Stage + "/" + graduation.CriterionPodStartup})
		}
	}
	return out
}

// rateTargets are the violation-rate targets drawn for a scenario's
// judged policies: its graduation stage's, or, for a soak without one,
// every stage's (how far the soak is from each). Needed is the number of
// lifecycles in total, from the graduation verdict's "more trials needed"
// (the number the tables print).
func (a *Aggregate) rateTargets(s *scenario.Scenario, rows []*Row, soak bool) []render.RateTarget {
	stages := []string{}
	switch {
	case s.Criteria.Graduation != "":
		stages = append(stages, s.Criteria.Graduation)
	case soak:
		stages = append(stages, "alpha", "beta", "ga")
	}
	var out []render.RateTarget
	for _, stage := range stages {
		crit, err := graduation.Load(stage)
		if err != nil || crit.ViolationRate == nil {
			continue
		}
		for _, r := range rows {
			if r.Role != Judged {
				continue
			}
			t := render.RateTarget{Policy: r.Policy, Name: fmt.Sprintf("%s %s", crit.Stage, pct(crit.ViolationRate.Max)), Rate: crit.ViolationRate.Max,
				Needed: graduation.LifecyclesNeeded(crit, r.ViolatingPods, r.Pods)}
			out = append(out, t)
		}
	}
	return out
}

// pct renders a rate target: "1e-3" → "0.1%".
func pct(x float64) string {
	s := fmt.Sprintf("%.4g%%", 100*x)
	if math.Abs(x) < 1e-6 {
		s = fmt.Sprintf("%.1e", x)
	}
	return s
}

// progress is where each judged scenario × policy stands (soak
// checkpoints).
func (a *Aggregate) progress(elapsedSeconds float64) []render.ProgressPoint {
	var out []render.ProgressPoint
	for _, r := range a.rows {
		if r.Role != Judged {
			continue
		}
		out = append(out, render.ProgressPoint{ElapsedSeconds: elapsedSeconds, Scenario: r.Scenario, Policy: r.Policy, Pods: r.Pods, ViolatingPods: r.ViolatingPods})
	}
	return out
}
