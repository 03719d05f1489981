// Package render writes the files of a sidebench run directory from plain
// data: summary.json (versioned schema), ClusterLoader2 PerfData JSON,
// report.md, a self-contained report.html with SVG figures drawn by
// gonum/plot, and junit.xml. docs/reports.md documents every file.
//
// render does no checking and no measuring: the caller (the CLI) runs the
// checker, the metrics aggregation and the graduation criteria and fills a
// RunData. Everything rendered is a function of RunData alone: no clock
// reads, no map-order dependence, so the same input gives the same bytes.
//
// This is the only package allowed to import gonum.org/v1/plot.
package render

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/reports/stats"
)

// SchemaVersion is the version of the summary.json schema. It changes only
// when a field is removed or changes meaning; adding a field keeps it.
const SchemaVersion = 1

// DefaultConfidence is the level of every interval and bound in a report.
const DefaultConfidence = 0.95

// RunData is everything a report shows about one run of one scenario
// (possibly several policies and trials). It is plain data: the CLI fills it
// from the checker's report, the metrics aggregate and the graduation
// verdicts.
type RunData struct {
	Scenario string
	// Policies in report order. If empty, the policies named by the other
	// fields are used, sorted.
	Policies []string
	Meta     Meta

	Latencies  []Latency
	Invariants []InvariantRow
	Matrix     []MatrixCell
	Findings   []Finding
	Verdicts   []Verdict
	// Timelines are the pods drawn as Gantt charts in report.html (the
	// worst or violating pods), with their histories.
	Timelines []Timeline
	// Warnings are shown verbatim (checker, metrics, decoding warnings).
	Warnings []string
	// Roles maps each policy to how it is treated: RoleJudged (the
	// scenario's criteria apply), RoleBaseline (measured, not judged) or
	// RoleBugReplica (passes when the checker catches it). A policy
	// missing from the map is judged.
	Roles map[string]string
	// PolicyRuns holds each policy's trial count, pods and wall time.
	PolicyRuns map[string]PolicyRun
	// State, if set, is written as summary.json's "sidebench" section:
	// the run's progress and the result table's rows.
	State *RunState
	// UserLevel, if set, is the user-level guarantees section
	// (userlevel.go).
	UserLevel *UserLevel

	// Figure inputs (report.html only; not in summary.json): see
	// figdata.go.
	Groups        []GroupRate
	FaultWindows  []FaultWindow
	FindingPoints []FindingPoint
	// Dropped counts the fault windows and finding points left out of the
	// run timeline to bound memory (the figure says so).
	Dropped       TimelineDropped
	LatencyLimits []LatencyLimit
	RateTargets   []RateTarget
}

// PolicyRun is what ran of one policy.
type PolicyRun struct {
	Trials, Pods   int
	ElapsedSeconds float64
	// ViolatingPods counts the pods with at least one violation: the
	// numerator of the policy's violation rate (graduation, trend).
	ViolatingPods int
	// Faults are the policy's fault firings by kind, applied and not
	// (the same tallies as summary.json's rows).
	Faults map[string]FaultTally
}

// Policy roles (RunData.Roles).
const (
	RoleJudged     = "judged"
	RoleBaseline   = "baseline"
	RoleBugReplica = "bug-replica"
)

// RoleOf returns a policy's role (judged when not listed).
func (d *RunData) RoleOf(policy string) string {
	if r, ok := d.Roles[policy]; ok {
		return r
	}
	return RoleJudged
}

// RunState is the "sidebench" section of summary.json: where the run
// stands and the rows of the result table, computed once by the runner
// (harness/runner) from the same aggregation as every other number here.
type RunState struct {
	Command string `json:"command"`
	Backend string `json:"backend"`
	// Status is complete, partial (interrupted, crashed) or running (a
	// checkpoint of a soak in progress); Partial is Status != complete.
	Status  string `json:"status"`
	Partial bool   `json:"partial"`
	// Stopped says why the run stopped before its end other than an
	// interruption, e.g. "stopped before exceeding --max-disk 5.0 GiB: ...".
	Stopped         string     `json:"stopped,omitempty"`
	StartedAt       string     `json:"startedAt"`
	UpdatedAt       string     `json:"updatedAt"`
	TrialsCommitted int        `json:"trialsCommitted"`
	Resumes         int        `json:"resumedFromTrials,omitempty"`
	Build           Build      `json:"build"`
	Rows            []StateRow `json:"rows"`
	RSS             []RSSPoint `json:"rss,omitempty"`
	// Progress is where each judged scenario × policy stood at each soak
	// checkpoint: the lifecycles accumulated against the target.
	Progress []ProgressPoint `json:"progress,omitempty"`
	// Verdict is the run's overall verdict over its judged policies and
	// bug replicas: PASS, FAIL or INSUFFICIENT DATA; Pass is Verdict !=
	// FAIL and the run complete.
	Verdict string `json:"verdict"`
	Pass    bool   `json:"pass"`
}

// Build identifies the sidebench binary that produced a run.
type Build struct {
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	Modified bool   `json:"modified,omitempty"`
}

// StateRow is one scenario × policy of the result table.
type StateRow struct {
	Scenario      string `json:"scenario"`
	Policy        string `json:"policy"`
	Role          string `json:"role"`
	Trials        int    `json:"trials"`
	PartialTrials int    `json:"partialTrials,omitempty"`
	Pods          int    `json:"pods"`
	Violations    int    `json:"violations"`
	Degradations  int    `json:"degradations"`
	// PodStartupMs is the pod_startup population every output uses
	// (faulted pods excluded and counted).
	PodStartupMs StartupRow `json:"podStartupMs"`
	// Status is the row's verdict: PASS, FAIL, INSUFFICIENT DATA, or "-"
	// for a baseline (measured, not judged).
	Status string `json:"status"`
	// Criteria are the row's verdicts (the same as the report's).
	Criteria []StateCriterion      `json:"criteria,omitempty"`
	Faults   map[string]FaultTally `json:"faults,omitempty"`
}

// StateCriterion is one criterion's outcome for a row.
type StateCriterion struct {
	Name             string `json:"name"`
	Status           string `json:"status"`
	Message          string `json:"message"`
	MoreTrialsNeeded int    `json:"moreTrialsNeeded,omitempty"`
}

// StartupRow is the pod_startup percentiles of a row.
type StartupRow struct {
	N               int     `json:"n"`
	FaultedExcluded int     `json:"faultedExcluded"`
	P50             float64 `json:"p50"`
	P90             float64 `json:"p90"`
	P99             float64 `json:"p99"`
}

// FaultTally is how many firings of a fault kind took effect.
type FaultTally struct {
	Applied    int      `json:"applied"`
	NotApplied int      `json:"notApplied,omitempty"`
	Reasons    []string `json:"reasons,omitempty"`
}

// RSSPoint is the resident set size at a time into the run.
type RSSPoint struct {
	ElapsedSeconds float64 `json:"elapsedSeconds"`
	Bytes          int64   `json:"bytes"`
}

// Meta describes the run.
type Meta struct {
	Seed         uint64
	Trials       int
	Backend      string
	Version      string
	ScenarioHash string
	// Partial is true if the run did not complete (interrupted, crashed):
	// the numbers cover only what was recorded.
	Partial bool
	// StartUnixNano is the run's start time (history.Meta.StartUnixNano);
	// 0 if unknown. It is the only timestamp rendered.
	StartUnixNano int64
	// Pods is the number of pod lifecycles in the run.
	Pods int
	// Extra holds backend facts (kubelet version, node count...).
	Extra map[string]string
	// Revision and Modified identify the build (VCS commit, local
	// changes); ElapsedSeconds is the run's wall time.
	Revision       string
	Modified       bool
	ElapsedSeconds float64
}

// Latency is one latency metric of one policy: its distribution (optional;
// the latency figures and comparisons need it) and its nearest-rank
// percentiles with confidence intervals. If N is 0 and Ms is not empty,
// the percentiles are computed from it (stats.QuantileSummaryOf).
type Latency struct {
	Policy string
	// Metric is a harness/metrics name, e.g. "pod_startup".
	Metric string
	// Ms is the distribution at 1 ms resolution (harness/metrics).
	Ms *stats.Hist
	N  int
	// FaultedExcluded counts faulted pods left out of the samples.
	FaultedExcluded int
	P50, P90, P99   stats.Summary
}

// InvariantRow is one invariant's counts for one policy (check.Row).
type InvariantRow struct {
	Policy string
	ID     string
	Rule   string
	Level  string // HARD, BEST-EFFORT
	// Checked is the number of pods the invariant was decided on: the
	// trials of the violation rate.
	Checked    int
	Violations int
	// ViolatingPods counts pods with at least one violation; the rate's
	// numerator (a pod can hold several violations of one invariant).
	ViolatingPods  int
	Degradations   int
	BoundsExceeded int
	Unknown        int
}

// MatrixCell counts one invariant's findings attributed to one fault
// ("unattributed" if no fault can have caused them) for one policy
// (check.Cell).
type MatrixCell struct {
	Policy         string
	ID             string
	Fault          string
	Violations     int
	Degradations   int
	BoundsExceeded int
}

// Finding is one notable finding with its explanation (check.Finding).
type Finding struct {
	Policy string
	// Trial and Seed name the trial the finding comes from (`sidebench
	// explain RUNDIR --pod POD --trial N` prints it).
	Trial int
	Seed  uint64
	ID    string
	// Class is violation, degradation or bound-exceeded.
	Class  string
	Pod    string
	Node   string
	T      int64 // ns on the run's clock
	Msg    string
	Excuse string
	// Fault is the fault that can have caused it ("" if unattributed),
	// FaultID its instance and FaultT its time (ns).
	Fault   string
	FaultID uint32
	FaultT  int64
	// Excerpt is the pod's history between the conflicting events; Elided
	// counts events left out of its middle.
	Excerpt []history.Event
	Elided  int
	// ExcerptLines is a pre-rendered excerpt (one event per line), used
	// when Excerpt is empty, e.g. for a finding read back from
	// summary.json.
	ExcerptLines []string
}

// Verdict is one graduation criterion's outcome (graduation.Verdict).
type Verdict struct {
	Policy    string
	Criterion string
	// Status is PASS, FAIL or INSUFFICIENT DATA.
	Status string
	// Observed and Bound are NaN/±Inf when unknown.
	Observed, Bound, Threshold float64
	Message                    string
	MoreTrialsNeeded           int
	Warnings                   []string
}

// Verdict statuses.
const (
	StatusPass         = "PASS"
	StatusFail         = "FAIL"
	StatusInsufficient = "INSUFFICIENT DATA"
	// StatusNotApplicable is a criterion the scenario cannot be asked
	// (graduation.NotApplicable): shown, skipped in junit.xml, and neither
	// a pass nor a failure of the overall verdict.
	StatusNotApplicable = "NOT APPLICABLE"
)

// Timeline is one pod's history, drawn as a Gantt chart.
type Timeline struct {
	Policy string
	Pod    string
	// Why the pod is shown, e.g. "S3 violation" or "slowest pod_startup".
	Why   string
	Trial int
	Seed  uint64
	// Marks are the pod's findings, drawn at their instants.
	Marks  []TimelineMark
	Events []history.Event
}

// TimelineMark is a finding drawn on a pod's timeline: the instant the
// checker decided the invariant broke.
type TimelineMark struct {
	T         int64
	ID, Class string
}

// Class names of findings.
const (
	ClassViolation   = "violation"
	ClassDegradation = "degradation"
	ClassBound       = "bound-exceeded"
	ClassUnmet       = "unmet"
)

// normalize returns a copy of d with derived fields filled and every list
// in its canonical order, so that rendering is independent of input order.
func normalize(d RunData) RunData {
	out := d
	out.Policies = policies(d)
	pidx := func(p string) int {
		if i := slices.Index(out.Policies, p); i >= 0 {
			return i
		}
		return len(out.Policies)
	}
	out.Latencies = slices.Clone(d.Latencies)
	for i := range out.Latencies {
		l := &out.Latencies[i]
		if l.N == 0 && l.Ms.N() > 0 {
			l.N = l.Ms.N()
			l.P50 = stats.QuantileSummaryOf(l.Ms, 0.50, DefaultConfidence)
			l.P90 = stats.QuantileSummaryOf(l.Ms, 0.90, DefaultConfidence)
			l.P99 = stats.QuantileSummaryOf(l.Ms, 0.99, DefaultConfidence)
		}
	}
	slices.SortStableFunc(out.Latencies, func(a, b Latency) int {
		return cmp.Or(cmp.Compare(pidx(a.Policy), pidx(b.Policy)), cmp.Compare(metricIndex(a.Metric), metricIndex(b.Metric)), cmp.Compare(a.Metric, b.Metric))
	})
	out.Invariants = slices.Clone(d.Invariants)
	slices.SortStableFunc(out.Invariants, func(a, b InvariantRow) int {
		return cmp.Or(cmp.Compare(pidx(a.Policy), pidx(b.Policy)), naturalCompare(a.ID, b.ID))
	})
	out.Matrix = slices.Clone(d.Matrix)
	slices.SortStableFunc(out.Matrix, func(a, b MatrixCell) int {
		return cmp.Or(cmp.Compare(pidx(a.Policy), pidx(b.Policy)), naturalCompare(a.ID, b.ID), compareFault(a.Fault, b.Fault))
	})
	out.Findings = slices.Clone(d.Findings)
	slices.SortStableFunc(out.Findings, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(ClassRank(a.Class), ClassRank(b.Class)), cmp.Compare(pidx(a.Policy), pidx(b.Policy)),
			naturalCompare(a.ID, b.ID), cmp.Compare(a.Pod, b.Pod), cmp.Compare(a.Trial, b.Trial), cmp.Compare(a.T, b.T))
	})
	out.Verdicts = slices.Clone(d.Verdicts)
	slices.SortStableFunc(out.Verdicts, func(a, b Verdict) int {
		return cmp.Compare(pidx(a.Policy), pidx(b.Policy))
	})
	out.Timelines = slices.Clone(d.Timelines)
	slices.SortStableFunc(out.Timelines, func(a, b Timeline) int {
		return cmp.Or(cmp.Compare(pidx(a.Policy), pidx(b.Policy)), cmp.Compare(a.Trial, b.Trial), cmp.Compare(a.Pod, b.Pod))
	})
	normalizeFigures(&out, pidx)
	return out
}

// policies returns d.Policies, or the sorted set of policies d mentions.
func policies(d RunData) []string {
	if len(d.Policies) > 0 {
		return slices.Clone(d.Policies)
	}
	var ps []string
	add := func(p string) {
		if !slices.Contains(ps, p) {
			ps = append(ps, p)
		}
	}
	for _, l := range d.Latencies {
		add(l.Policy)
	}
	for _, r := range d.Invariants {
		add(r.Policy)
	}
	for _, c := range d.Matrix {
		add(c.Policy)
	}
	for _, v := range d.Verdicts {
		if v.Policy != "" {
			add(v.Policy)
		}
	}
	slices.Sort(ps)
	return ps
}

// knownMetrics is the harness/metrics report order.
var knownMetrics = []string{"pod_startup", "create_to_initialized", "create_to_ready", "sidecar_gate", "deletion_to_exited", "job_completion"}

func metricIndex(m string) int {
	if i := slices.Index(knownMetrics, m); i >= 0 {
		return i
	}
	return len(knownMetrics)
}

// ClassRank orders finding classes worst first: violation, degradation,
// bound-exceeded, unmet, then any other. It is the order of check.Class
// (a test in reports/explain holds the two together; render does not
// import the checker).
func ClassRank(c string) int {
	switch c {
	case ClassViolation:
		return 0
	case ClassDegradation:
		return 1
	case ClassBound:
		return 2
	case ClassUnmet:
		return 3
	}
	return 4
}

// compareFault orders the column of findings no fault explains first
// ("unattributed", check.Unattributed; "none" in runs written before it was
// named so), then the faults by name.
func compareFault(a, b string) int {
	if a == b {
		return 0
	}
	if noFault(a) != noFault(b) {
		if noFault(a) {
			return -1
		}
		return 1
	}
	return naturalCompare(a, b)
}

func noFault(f string) bool { return f == "unattributed" || f == "none" }

// naturalCompare orders strings with embedded numbers numerically: S2 < S10.
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := unicode.IsDigit(rune(a[0])), unicode.IsDigit(rune(b[0]))
		if da && db {
			na, ra := leadingDigits(a)
			nb, rb := leadingDigits(b)
			x, _ := strconv.ParseUint(na, 10, 64)
			y, _ := strconv.ParseUint(nb, 10, 64)
			if c := cmp.Compare(x, y); c != 0 {
				return c
			}
			if c := cmp.Compare(len(na), len(nb)); c != 0 {
				return c
			}
			a, b = ra, rb
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

func leadingDigits(s string) (digits, rest string) {
	i := strings.IndexFunc(s, func(r rune) bool { return !unicode.IsDigit(r) })
	if i < 0 {
		return s, ""
	}
	return s[:i], s[i:]
}

// rowRate is the violation-rate summary of a row at DefaultConfidence.
func rowRate(r InvariantRow) stats.RateSummary { return r.Rate(DefaultConfidence) }

// Rate is the row's violation rate: pods with a violation of the
// invariant among the pods it was decided on, the numerator every output
// uses (report, summary.json, junit, compare, trend). Violations counts
// findings, several per pod where an invariant breaks at each restart,
// and is no numerator: compare divided it by the pods and passed 1079
// violations in 180 pods to the Clopper–Pearson interval, which panicked.
func (r InvariantRow) Rate(confidence float64) stats.RateSummary {
	k := r.ViolatingPods
	if k == 0 {
		// Inputs that predate ViolatingPods: at most one violation per pod.
		k = r.Violations
	}
	return stats.Rate(min(k, r.Checked), r.Checked, confidence)
}

// overall is FAIL if any verdict failed, else INSUFFICIENT DATA if any is
// insufficient, else PASS ("" for no verdicts), as graduation.Overall:
// NOT APPLICABLE verdicts count for nothing, and only such verdicts are
// INSUFFICIENT DATA.
func overall(vs []Verdict) string {
	if len(vs) == 0 {
		return ""
	}
	st, judged := StatusPass, false
	for _, v := range vs {
		switch v.Status {
		case StatusFail:
			return StatusFail
		case StatusInsufficient:
			st = StatusInsufficient
		case StatusNotApplicable:
			continue
		}
		judged = true
	}
	if !judged {
		return StatusInsufficient
	}
	return st
}

// totalPods is Meta.Pods, or the largest Checked count when unset.
func totalPods(d RunData) int {
	if d.Meta.Pods > 0 {
		return d.Meta.Pods
	}
	n := 0
	for _, r := range d.Invariants {
		n = max(n, r.Checked+r.Unknown)
	}
	return n
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
