package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/sidebench/sidebench/reports/stats"
)

// ReadSummaryJSON decodes a summary.json. Unknown fields are ignored (a
// newer writer may add fields); a schemaVersion other than SchemaVersion
// is an error.
func ReadSummaryJSON(r io.Reader) (Summary, error) {
	var s Summary
	if err := json.NewDecoder(r).Decode(&s); err != nil {
		return s, fmt.Errorf("summary.json: %w", err)
	}
	if s.SchemaVersion != SchemaVersion {
		return s, fmt.Errorf("summary.json: schemaVersion %d, this build reads %d", s.SchemaVersion, SchemaVersion)
	}
	return s, nil
}

func val(p *float64, def float64) float64 {
	if p == nil {
		return def
	}
	return *p
}

func unquantile(q SummaryQuantile, quant, conf float64, n int) stats.Summary {
	return stats.Summary{Center: val(q.Value, math.NaN()), Lo: val(q.Lo, math.Inf(-1)), Hi: val(q.Hi, math.Inf(1)),
		Confidence: conf, Quantile: quant, N: n, Warnings: q.Warnings}
}

// RunData converts a summary back into render input, e.g. for
// `sidebench compare` of two run directories. Latency samples and
// timelines are not in summary.json: the comparison's caller adds samples
// from the runs' per-pod records (pods.jsonl).
func (s Summary) RunData() RunData {
	d := RunData{
		Scenario: s.Scenario,
		Policies: s.Run.Policies,
		Meta: Meta{Seed: s.Run.Seed, Trials: s.Run.Trials, Backend: s.Run.Backend, Version: s.Run.Version,
			Revision: s.Run.Revision, Modified: s.Run.Modified,
			ScenarioHash: s.Run.ScenarioHash, Partial: s.Run.Partial, Pods: s.Run.Pods, Extra: s.Run.Extra},
		Roles:    s.Run.Roles,
		Warnings: s.Warnings,
		State:    s.Sidebench,
	}
	if s.Run.Start != "" {
		if t, err := time.Parse(time.RFC3339Nano, s.Run.Start); err == nil {
			d.Meta.StartUnixNano = t.UnixNano()
		}
	}
	for _, l := range s.Latencies {
		d.Latencies = append(d.Latencies, Latency{Policy: l.Policy, Metric: l.Metric, N: l.N, FaultedExcluded: l.FaultedExcluded,
			P50: unquantile(l.P50, 0.5, l.Confidence, l.N), P90: unquantile(l.P90, 0.9, l.Confidence, l.N), P99: unquantile(l.P99, 0.99, l.Confidence, l.N)})
	}
	for _, r := range s.Invariants {
		d.Invariants = append(d.Invariants, InvariantRow{Policy: r.Policy, ID: r.ID, Rule: r.Rule, Level: r.Level, Checked: r.Checked,
			Violations: r.Violations, Degradations: r.Degradations, BoundsExceeded: r.BoundsExceeded, Unknown: r.Unknown})
	}
	for _, c := range s.Matrix {
		d.Matrix = append(d.Matrix, MatrixCell(c))
	}
	for _, v := range s.Graduation.Verdicts {
		d.Verdicts = append(d.Verdicts, Verdict{Policy: v.Policy, Criterion: v.Criterion, Status: v.Status,
			Observed: val(v.Observed, math.NaN()), Bound: val(v.Bound, math.NaN()), Threshold: val(v.Threshold, math.NaN()),
			Message: v.Message, MoreTrialsNeeded: v.MoreTrialsNeeded, Warnings: v.Warnings})
	}
	for _, f := range s.Findings {
		d.Findings = append(d.Findings, Finding{Policy: f.Policy, Trial: f.Trial, Seed: f.Seed, ID: f.ID, Class: f.Class, Pod: f.Pod, Node: f.Node, T: f.T,
			Msg: f.Msg, Excuse: f.Excuse, Fault: f.Fault, FaultID: f.FaultID, FaultT: f.FaultT, ExcerptLines: f.Excerpt, Elided: f.Elided})
	}
	if u := s.UserLevel; u != nil {
		d.UserLevel = &UserLevel{Policies: u.Policies, Strata: u.Strata}
		for _, g := range u.Guarantees {
			d.UserLevel.Guarantees = append(d.UserLevel.Guarantees, UserGuarantee(g))
		}
		for _, c := range u.Cells {
			d.UserLevel.Cells = append(d.UserLevel.Cells, UserCell{Policy: c.Policy, Stratum: c.Stratum, ID: c.ID, K: c.Unmet, N: c.Pods})
		}
		for _, st := range u.Startup {
			d.UserLevel.Startup = append(d.UserLevel.Startup, UserStartup{Policy: st.Policy, Workload: st.Workload, Metric: st.Metric, N: st.N,
				P50: unquantile(st.P50, 0.5, st.Confidence, st.N), P90: unquantile(st.P90, 0.9, st.Confidence, st.N)})
		}
	}
	for _, g := range s.Groups {
		d.Groups = append(d.Groups, GroupRate{Policy: g.Policy, Group: g.Group, Pods: g.Pods, ViolatingPods: g.ViolatingPods})
	}
	for _, f := range s.Faults {
		if d.PolicyRuns == nil {
			d.PolicyRuns = map[string]PolicyRun{}
		}
		pr := d.PolicyRuns[f.Policy]
		if pr.Faults == nil {
			pr.Faults = map[string]FaultTally{}
		}
		pr.Faults[f.Fault] = FaultTally{Applied: f.Applied, NotApplied: f.NotApplied, Reasons: f.Reasons}
		d.PolicyRuns[f.Policy] = pr
	}
	return d
}

// StateJSON is the summary.json of a run directory that holds several
// scenarios: only the "sidebench" section (each scenario's full summary
// is in reports/NAME/).
func StateJSON(st *RunState) ([]byte, error) {
	var buf bytes.Buffer
	err := writeJSON(&buf, struct {
		Sidebench *RunState `json:"sidebench"`
	}{st})
	return buf.Bytes(), err
}

// ReadState reads the "sidebench" section of a summary.json (nil if it
// has none).
func ReadState(r io.Reader) (*RunState, error) {
	var top struct {
		Sidebench *RunState `json:"sidebench"`
	}
	if err := json.NewDecoder(r).Decode(&top); err != nil {
		return nil, err
	}
	return top.Sidebench, nil
}
