package render

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/sidebench/sidebench/reports/stats"
)

// The summary.json schema, version 1 (docs/reports.md). Field order is
// fixed by these structs; rows are sorted (see normalize). Non-finite
// numbers (unbounded CI ends, unknown values) are null.

// Summary is the top-level object of summary.json.
type Summary struct {
	SchemaVersion int                `json:"schemaVersion"`
	Scenario      string             `json:"scenario"`
	Run           SummaryRun         `json:"run"`
	Latencies     []SummaryLatency   `json:"latencies"`
	Invariants    []SummaryInvariant `json:"invariants"`
	Matrix        []SummaryCell      `json:"matrix"`
	Graduation    SummaryGraduation  `json:"graduation"`
	Findings      []SummaryFinding   `json:"findings"`
	// Groups are the violation counts per invariant group and policy
	// (the policy comparison figure); "all" is every invariant.
	Groups []SummaryGroup `json:"groups,omitempty"`
	// Faults are the report's "Faults injected" rows: each policy's fault
	// firings by kind, applied and not.
	Faults []SummaryFault `json:"faults,omitempty"`
	// UserLevel is the user-level guarantees section of the report (what
	// a sidecar's user wanted; never part of a verdict), if it has one.
	UserLevel *SummaryUserLevel `json:"userLevel,omitempty"`
	Warnings  []string          `json:"warnings"`
	// Sidebench is the run's state and result table (RunData.State).
	Sidebench *RunState `json:"sidebench,omitempty"`
}

// SummaryRun is the run's metadata.
type SummaryRun struct {
	Seed         uint64   `json:"seed"`
	Trials       int      `json:"trials"`
	Backend      string   `json:"backend"`
	Version      string   `json:"version"`
	Revision     string   `json:"revision,omitempty"`
	Modified     bool     `json:"modified,omitempty"`
	ScenarioHash string   `json:"scenarioHash,omitempty"`
	Partial      bool     `json:"partial"`
	Start        string   `json:"start,omitempty"` // RFC 3339, UTC
	Pods         int      `json:"pods"`
	Policies     []string `json:"policies"`
	// Roles says how each policy was treated: judged, baseline or
	// bug-replica.
	Roles map[string]string `json:"roles,omitempty"`
	Extra map[string]string `json:"extra,omitempty"`
}

// SummaryQuantile is a nearest-rank percentile with its CI and the
// statistics' warnings about it (e.g. too few samples to bound it).
type SummaryQuantile struct {
	Value    *float64 `json:"value"`
	Lo       *float64 `json:"lo"`
	Hi       *float64 `json:"hi"`
	Warnings []string `json:"warnings,omitempty"`
}

// SummaryLatency is one policy × metric.
type SummaryLatency struct {
	Policy          string          `json:"policy"`
	Metric          string          `json:"metric"`
	Unit            string          `json:"unit"`
	N               int             `json:"n"`
	FaultedExcluded int             `json:"faultedExcluded"`
	Confidence      float64         `json:"confidence"`
	P50             SummaryQuantile `json:"p50"`
	P90             SummaryQuantile `json:"p90"`
	P99             SummaryQuantile `json:"p99"`
}

// SummaryInvariant is one policy × invariant with its violation rate.
type SummaryInvariant struct {
	Policy         string  `json:"policy"`
	ID             string  `json:"id"`
	Rule           string  `json:"rule"`
	Level          string  `json:"level"`
	Checked        int     `json:"checked"`
	Violations     int     `json:"violations"`
	Degradations   int     `json:"degradations"`
	BoundsExceeded int     `json:"boundsExceeded"`
	Unknown        int     `json:"unknown"`
	Rate           float64 `json:"rate"`
	WilsonUpper    float64 `json:"wilsonUpper"`
	CPUpper        float64 `json:"clopperPearsonUpper"`
	Confidence     float64 `json:"confidence"`
}

// SummaryCell is one cell of the invariant × fault matrix.
type SummaryCell struct {
	Policy         string `json:"policy"`
	ID             string `json:"id"`
	Fault          string `json:"fault"`
	Violations     int    `json:"violations"`
	Degradations   int    `json:"degradations"`
	BoundsExceeded int    `json:"boundsExceeded"`
}

// SummaryGraduation is the graduation outcome.
type SummaryGraduation struct {
	Overall  string           `json:"overall,omitempty"`
	Verdicts []SummaryVerdict `json:"verdicts"`
}

// SummaryVerdict is one criterion.
type SummaryVerdict struct {
	Policy           string   `json:"policy,omitempty"`
	Criterion        string   `json:"criterion"`
	Status           string   `json:"status"`
	Observed         *float64 `json:"observed"`
	Bound            *float64 `json:"bound"`
	Threshold        *float64 `json:"threshold"`
	Message          string   `json:"message"`
	MoreTrialsNeeded int      `json:"moreTrialsNeeded"`
	Warnings         []string `json:"warnings,omitempty"`
}

// SummaryGroup is one invariant group's violation count for a policy.
type SummaryGroup struct {
	Policy        string  `json:"policy"`
	Group         string  `json:"group"`
	Pods          int     `json:"pods"`
	ViolatingPods int     `json:"violatingPods"`
	Rate          float64 `json:"rate"`
	CPLower       float64 `json:"clopperPearsonLower"`
	CPUpper       float64 `json:"clopperPearsonUpper"`
}

// SummaryFault is one fault kind × policy of the "Faults injected" rows.
type SummaryFault struct {
	Fault      string   `json:"fault"`
	Policy     string   `json:"policy"`
	Applied    int      `json:"applied"`
	NotApplied int      `json:"notApplied"`
	Reasons    []string `json:"reasons,omitempty"` // why not applied
}

// SummaryUserLevel is the report's "User-level guarantees by fault kind"
// section: per guarantee, policy and stratum, the pods that did not get
// the guarantee out of the pods in the stratum, with the rate and its
// Clopper–Pearson interval; and the startup cost per policy (and
// workload, when the scenario compares workarounds).
type SummaryUserLevel struct {
	Guarantees []SummaryUserGuarantee `json:"guarantees"`
	Policies   []string               `json:"policies"`
	Strata     []string               `json:"strata"`
	Cells      []SummaryUserCell      `json:"cells"`
	Startup    []SummaryUserStartup   `json:"startup,omitempty"`
}

// SummaryUserGuarantee is one user-level guarantee.
type SummaryUserGuarantee struct {
	ID   string `json:"id"`
	Rule string `json:"rule"`
}

// SummaryUserCell is one guarantee × policy × stratum.
type SummaryUserCell struct {
	Policy     string  `json:"policy"`
	Stratum    string  `json:"stratum"`
	ID         string  `json:"id"`
	Unmet      int     `json:"unmet"`
	Pods       int     `json:"pods"`
	Rate       float64 `json:"rate"`
	CPLower    float64 `json:"clopperPearsonLower"`
	CPUpper    float64 `json:"clopperPearsonUpper"`
	Confidence float64 `json:"confidence"`
}

// SummaryUserStartup is one workload's startup latency under one policy.
type SummaryUserStartup struct {
	Policy     string          `json:"policy"`
	Workload   string          `json:"workload"`
	Metric     string          `json:"metric"`
	N          int             `json:"n"`
	Confidence float64         `json:"confidence"`
	P50        SummaryQuantile `json:"p50"`
	P90        SummaryQuantile `json:"p90"`
}

// SummaryFinding is one finding with its explanation excerpt.
type SummaryFinding struct {
	Policy  string   `json:"policy"`
	Trial   int      `json:"trial"`
	Seed    uint64   `json:"seed"`
	ID      string   `json:"id"`
	Class   string   `json:"class"`
	Pod     string   `json:"pod"`
	Node    string   `json:"node,omitempty"`
	T       int64    `json:"t"`
	Msg     string   `json:"msg"`
	Excuse  string   `json:"excuse,omitempty"`
	Fault   string   `json:"fault,omitempty"`
	FaultID uint32   `json:"faultId,omitempty"`
	FaultT  int64    `json:"faultT,omitempty"`
	Excerpt []string `json:"excerpt"`
	Elided  int      `json:"elided,omitempty"`
}

// round6 rounds x to 6 significant digits: computed bounds then print the
// same on every platform (the last bits of a float computation may differ
// where the compiler fuses multiply-adds).
func round6(x float64) float64 {
	if !finite(x) || x == 0 {
		return x
	}
	y, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 6, 64), 64)
	return y
}

func ptr(x float64) *float64 {
	if !finite(x) {
		return nil
	}
	return &x
}

func quantile(s stats.Summary) SummaryQuantile {
	if s.N == 0 {
		return SummaryQuantile{}
	}
	return SummaryQuantile{Value: ptr(s.Center), Lo: ptr(s.Lo), Hi: ptr(s.Hi), Warnings: s.Warnings}
}

// BuildSummary returns the summary.json document of d.
func BuildSummary(d RunData) Summary {
	d = normalize(d)
	return buildSummary(d)
}

func buildSummary(d RunData) Summary {
	s := Summary{
		SchemaVersion: SchemaVersion,
		Scenario:      d.Scenario,
		Run: SummaryRun{
			Seed: d.Meta.Seed, Trials: d.Meta.Trials, Backend: d.Meta.Backend, Version: d.Meta.Version,
			Revision: d.Meta.Revision, Modified: d.Meta.Modified,
			ScenarioHash: d.Meta.ScenarioHash, Partial: d.Meta.Partial, Start: startTime(d.Meta),
			Pods: totalPods(d), Policies: nonNil(d.Policies), Roles: d.Roles, Extra: d.Meta.Extra,
		},
		Latencies:  []SummaryLatency{},
		Invariants: []SummaryInvariant{},
		Matrix:     []SummaryCell{},
		Graduation: SummaryGraduation{Overall: overall(d.Verdicts), Verdicts: []SummaryVerdict{}},
		Findings:   []SummaryFinding{},
		Warnings:   nonNil(d.Warnings),
		Sidebench:  d.State,
	}
	for _, l := range d.Latencies {
		s.Latencies = append(s.Latencies, SummaryLatency{
			Policy: l.Policy, Metric: l.Metric, Unit: "ms", N: l.N, FaultedExcluded: l.FaultedExcluded,
			Confidence: confidenceOf(l.P50), P50: quantile(l.P50), P90: quantile(l.P90), P99: quantile(l.P99),
		})
	}
	for _, r := range d.Invariants {
		rs := rowRate(r)
		s.Invariants = append(s.Invariants, SummaryInvariant{
			Policy: r.Policy, ID: r.ID, Rule: r.Rule, Level: r.Level, Checked: r.Checked,
			Violations: r.Violations, Degradations: r.Degradations, BoundsExceeded: r.BoundsExceeded, Unknown: r.Unknown,
			Rate: round6(rs.Rate), WilsonUpper: round6(rs.WilsonHi), CPUpper: round6(rs.CPHi), Confidence: DefaultConfidence,
		})
	}
	for _, c := range d.Matrix {
		s.Matrix = append(s.Matrix, SummaryCell(c))
	}
	for _, v := range d.Verdicts {
		s.Graduation.Verdicts = append(s.Graduation.Verdicts, SummaryVerdict{
			Policy: v.Policy, Criterion: v.Criterion, Status: v.Status, Observed: ptr(v.Observed), Bound: ptr(v.Bound),
			Threshold: ptr(v.Threshold), Message: v.Message, MoreTrialsNeeded: v.MoreTrialsNeeded, Warnings: v.Warnings,
		})
	}
	s.Groups = summaryGroups(d)
	for _, r := range faultRows(d) {
		s.Faults = append(s.Faults, SummaryFault{Fault: r.Fault, Policy: r.Policy, Applied: r.Applied, NotApplied: r.NotApplied, Reasons: r.Reasons})
	}
	s.UserLevel = summaryUserLevel(d.UserLevel)
	for i := range d.Findings {
		f := &d.Findings[i]
		ex := excerptLines(f)
		if ex == nil {
			ex = []string{}
		}
		s.Findings = append(s.Findings, SummaryFinding{
			Policy: f.Policy, Trial: f.Trial, Seed: f.Seed, ID: f.ID, Class: f.Class, Pod: f.Pod, Node: f.Node, T: f.T, Msg: f.Msg, Excuse: f.Excuse,
			Fault: f.Fault, FaultID: f.FaultID, FaultT: f.FaultT, Excerpt: ex, Elided: f.Elided,
		})
	}
	return s
}

func summaryGroups(d RunData) []SummaryGroup {
	var out []SummaryGroup
	for _, g := range d.Groups {
		r := stats.Rate(min(g.ViolatingPods, g.Pods), g.Pods, DefaultConfidence)
		out = append(out, SummaryGroup{Policy: g.Policy, Group: g.Group, Pods: g.Pods, ViolatingPods: g.ViolatingPods,
			Rate: round6(r.Rate), CPLower: round6(r.CPLo), CPUpper: round6(r.CPHi)})
	}
	return out
}

func summaryUserLevel(u *UserLevel) *SummaryUserLevel {
	if u == nil || len(u.Cells) == 0 {
		return nil // the report has no section either
	}
	out := &SummaryUserLevel{Policies: nonNil(u.Policies), Strata: nonNil(u.Strata), Cells: []SummaryUserCell{}}
	for _, g := range u.Guarantees {
		out.Guarantees = append(out.Guarantees, SummaryUserGuarantee(g))
	}
	for _, c := range u.Cells {
		r := c.Rate()
		out.Cells = append(out.Cells, SummaryUserCell{Policy: c.Policy, Stratum: c.Stratum, ID: c.ID, Unmet: c.K, Pods: c.N,
			Rate: round6(r.Rate), CPLower: round6(r.CPLo), CPUpper: round6(r.CPHi), Confidence: DefaultConfidence})
	}
	for _, st := range u.Startup {
		out.Startup = append(out.Startup, SummaryUserStartup{Policy: st.Policy, Workload: st.Workload, Metric: st.Metric, N: st.N,
			Confidence: confidenceOf(st.P50), P50: quantile(st.P50), P90: quantile(st.P90)})
	}
	return out
}

// confidenceOf is a quantile estimate's confidence level (the default
// for an estimate without samples).
func confidenceOf(s stats.Summary) float64 {
	if s.Confidence > 0 {
		return s.Confidence
	}
	return DefaultConfidence
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return slices.Clone(s)
}

// WriteSummaryJSON writes summary.json: indented, keys in schema order,
// rows sorted, a final newline.
func WriteSummaryJSON(w io.Writer, d RunData) error {
	return writeJSON(w, BuildSummary(d))
}

func writeJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// PerfData is a ClusterLoader2 PerfData document (perf-tests
// clusterloader2/pkg/measurement/util/perftype.go), read by perfdash.
type PerfData struct {
	Version   string            `json:"version"`
	DataItems []DataItem        `json:"dataItems"`
	Labels    map[string]string `json:"labels,omitempty"`
}

// DataItem is one PerfData item: Perc50/Perc90/Perc99 in Unit.
type DataItem struct {
	Data   map[string]float64 `json:"data"`
	Unit   string             `json:"unit"`
	Labels map[string]string  `json:"labels,omitempty"`
}

// PerfDataFile is one PerfData file to write.
type PerfDataFile struct {
	Name string
	Data PerfData
}

// PerfDataFiles returns one PerfData document per policy, named like
// ClusterLoader2's summaries: PodStartupLatency_<scenario>_<policy>.json
// (labels sanitised to [A-Za-z0-9.-]). Each holds one data item per latency
// metric with its nearest-rank Perc50/Perc90/Perc99 in ms; metrics without
// samples are left out, as CL2 does.
func PerfDataFiles(d RunData) []PerfDataFile {
	d = normalize(d)
	var out []PerfDataFile
	for _, p := range d.Policies {
		pd := PerfData{Version: "1.0", DataItems: []DataItem{}}
		for _, l := range d.Latencies {
			if l.Policy != p || l.N == 0 {
				continue
			}
			pd.DataItems = append(pd.DataItems, DataItem{
				Data:   map[string]float64{"Perc50": cl2(l.P50.Center), "Perc90": cl2(l.P90.Center), "Perc99": cl2(l.P99.Center)},
				Unit:   "ms",
				Labels: map[string]string{"Metric": l.Metric, "Policy": p, "Scenario": d.Scenario},
			})
		}
		if len(pd.DataItems) == 0 {
			continue
		}
		out = append(out, PerfDataFile{Name: "PodStartupLatency_" + safeName(d.Scenario) + "_" + safeName(p) + ".json", Data: pd})
	}
	return out
}

// cl2 clamps as CL2 does (negative latencies are 0) and maps NaN to 0.
func cl2(x float64) float64 {
	if math.IsNaN(x) || x < 0 {
		return 0
	}
	return x
}
