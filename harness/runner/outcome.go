package runner

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/sidebench/sidebench/harness/check"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/metrics"
	"github.com/sidebench/sidebench/harness/rundir"
	"github.com/sidebench/sidebench/harness/scenario"
	"github.com/sidebench/sidebench/internal/version"
	"github.com/sidebench/sidebench/reference-impl/api"
	"github.com/sidebench/sidebench/reports/graduation"
	"github.com/sidebench/sidebench/reports/render"
)

// Run states (render.RunState.Status).
const (
	StatusComplete = "complete"
	StatusPartial  = "partial"
	StatusRunning  = "running"
)

// Meta describes the run being judged.
type Meta struct {
	Command, Backend string
	Status           string
	StartedAt        time.Time
	Elapsed          time.Duration
	Build            version.Info
	RSS              []render.RSSPoint
	// Progress is the soak's lifecycles at each checkpoint.
	Progress []render.ProgressPoint
	// Strict: a partial run and an INSUFFICIENT DATA verdict do not pass
	// (a partial run's PASS becomes INSUFFICIENT DATA).
	Strict bool
	// Extra are backend facts for the report header.
	Extra map[string]string
	// Stopped says why the run stopped early other than an interruption
	// (--max-disk); the run is then partial.
	Stopped string
}

// Outcome is the judged aggregate: the result table (State.Rows, with the
// overall verdict) and one report per scenario, all from the same numbers.
type Outcome struct {
	State render.RunState
	Runs  []render.RunData
}

// Judge computes every verdict and number the outputs show.
func Judge(a *Aggregate, m Meta) Outcome {
	lat := a.lat.Result()
	summaryOf := func(scen, pol string, metric metrics.Metric) (metrics.MetricSummary, bool) {
		for _, l := range lat.Latencies {
			if l.Scenario == scen && l.Policy == pol && l.Metric == metric {
				return l, true
			}
		}
		return metrics.MetricSummary{}, false
	}
	partial := m.Status != StatusComplete || a.Partial
	out := Outcome{State: render.RunState{
		Command: m.Command, Backend: m.Backend, Status: m.Status, Partial: partial,
		StartedAt: m.StartedAt.UTC().Format(time.RFC3339Nano), UpdatedAt: time.Now().UTC().Format(time.RFC3339Nano),
		TrialsCommitted: a.Trials, Resumes: a.Resumed, RSS: m.RSS, Progress: m.Progress, Stopped: m.Stopped,
		Build: render.Build{Version: m.Build.Version, Revision: m.Build.Revision, Modified: m.Build.Modified},
		Rows:  []render.StateRow{},
	}}
	if partial && out.State.Status == StatusComplete {
		out.State.Status = StatusPartial
	}
	verdicts := map[*Row][]graduation.Verdict{}
	staged := a.stageVerdicts()
	var all []graduation.Verdict
	for _, r := range a.rows {
		ps, _ := summaryOf(r.Scenario, r.Policy, metrics.PodStartup)
		vs := a.verdicts(r, ps, partial, m.Strict, staged)
		verdicts[r] = vs
		all = append(all, vs...)
		sr := render.StateRow{Scenario: r.Scenario, Policy: r.Policy, Role: string(r.Role), Trials: r.Trials,
			PartialTrials: r.PartialTrials, Pods: r.Pods, Violations: r.Violations, Degradations: r.Degradations,
			PodStartupMs: render.StartupRow{N: ps.N, FaultedExcluded: ps.FaultedExcluded, P50: finite(ps.P50.Center), P90: finite(ps.P90.Center), P99: finite(ps.P99.Center)},
			Status:       "-"}
		if r.Role != Baseline {
			sr.Status = string(graduation.Overall(vs))
		}
		for _, v := range vs {
			sr.Criteria = append(sr.Criteria, render.StateCriterion{Name: v.Criterion, Status: string(v.Status), Message: v.Message, MoreTrialsNeeded: v.MoreTrialsNeeded})
		}
		sr.Faults = r.faultTallies()
		out.State.Rows = append(out.State.Rows, sr)
	}
	out.State.Verdict = string(graduation.Overall(all))
	out.State.Pass = out.State.Verdict != string(graduation.Fail) && !partial &&
		!(m.Strict && out.State.Verdict == string(graduation.Insufficient))

	for _, s := range a.scens {
		out.Runs = append(out.Runs, a.runData(s, m, partial, lat, verdicts))
	}
	if len(out.Runs) == 1 {
		st := out.State
		out.Runs[0].State = &st
	}
	return out
}

// faultTallies are r's fault firings by kind as summary.json's rows and
// the report's "Faults injected" section show them (nil for none).
func (r *Row) faultTallies() map[string]render.FaultTally {
	var out map[string]render.FaultTally
	for k, c := range r.Faults {
		if out == nil {
			out = map[string]render.FaultTally{}
		}
		out[k] = render.FaultTally{Applied: c.Applied, NotApplied: c.NotApplied, Reasons: slices.Clone(c.Reasons)}
	}
	return out
}

func finite(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return x
}

// verdicts judges one row: a judged policy against its scenario's
// criteria and graduation stage, a bug replica on whether it was caught.
func (a *Aggregate) verdicts(r *Row, ps metrics.MetricSummary, partial, strict bool, staged map[*Row][]graduation.Verdict) []graduation.Verdict {
	s := a.byName[r.Scenario]
	var vs []graduation.Verdict
	switch r.Role {
	case Baseline:
		return nil
	case BugReplica:
		vs = append(vs, graduation.EvaluateBugReplica(r.Violations+r.Bounds, r.Pods))
	default:
		if s == nil {
			return nil
		}
		c := &s.Criteria
		lim := graduation.ScenarioLimits{MaxDegradations: c.MaxDegradations}
		if c.MaxViolations != nil {
			lim.MaxViolations = *c.MaxViolations
		}
		if c.PodStartupP50 != nil {
			d := c.PodStartupP50.D()
			lim.PodStartupP50 = &d
		}
		if c.PodStartupP99 != nil {
			d := c.PodStartupP99.D()
			lim.PodStartupP99 = &d
		}
		vs = graduation.EvaluateScenario(lim, graduation.ScenarioInputs{Violations: r.Violations, Degradations: r.Degradations,
			StartupN: ps.N, StartupP50Ms: ps.P50.Center, StartupP99Ms: ps.P99.Center, StartupFaulted: ps.FaultedExcluded})
		vs = append(vs, staged[r]...)
	}
	if partial {
		for i := range vs {
			v := &vs[i]
			v.Warnings = append(v.Warnings, "partial run: the verdict covers only the trials committed")
			if strict && v.Status == graduation.Pass {
				v.Status = graduation.Insufficient
				v.Message = "partial run (--strict): " + v.Message
			}
		}
	}
	return vs
}

// stageVerdicts judges the judged rows whose scenario names a graduation
// stage (criteria.graduation) against it, as graduate judges them: over
// the run's scenarios of that stage, each criterion where its evidence is
// (graduation.PoolEvidence), so that graduate of the run directory gives
// the report's verdicts also for a soak of several scenarios. The
// verdicts are named "STAGE/criterion"; a stage that does not load is one
// INSUFFICIENT DATA verdict saying why.
func (a *Aggregate) stageVerdicts() map[*Row][]graduation.Verdict {
	out := map[*Row][]graduation.Verdict{}
	criteria := map[string]graduation.Criteria{}
	byStage := map[string][]graduation.Judged{}
	rowsOf := map[string][]*Row{}
	var stages []string
	for _, r := range a.rows {
		s := a.byName[r.Scenario]
		if r.Role == Baseline || r.Role == BugReplica || s == nil || s.Criteria.Graduation == "" {
			continue
		}
		stage := s.Criteria.Graduation
		crit, known := criteria[stage]
		if !known {
			var err error
			if crit, err = graduation.Load(stage); err != nil {
				out[r] = []graduation.Verdict{{Criterion: stage, Status: graduation.Insufficient, Observed: math.NaN(), Bound: math.NaN(),
					Message: "criteria: " + err.Error()}}
				continue
			}
			criteria[stage] = crit
			stages = append(stages, stage)
		}
		in := a.GraduationInputs(r)
		byStage[stage] = append(byStage[stage], graduation.Judged{Scenario: r.Scenario, Policy: r.Policy, In: in, Verdicts: graduation.Evaluate(crit, in)})
		rowsOf[stage] = append(rowsOf[stage], r)
	}
	for _, stage := range stages {
		graduation.PoolEvidence(criteria[stage], byStage[stage])
		for i, j := range byStage[stage] {
			for k := range j.Verdicts {
				j.Verdicts[k].Criterion = criteria[stage].Stage + "/" + j.Verdicts[k].Criterion
			}
			out[rowsOf[stage][i]] = j.Verdicts
		}
	}
	return out
}

// GraduationInputs gathers a row's inputs for graduation criteria, from
// the same aggregation as every other output.
func (a *Aggregate) GraduationInputs(r *Row) graduation.Inputs {
	in := graduation.Inputs{
		Violations: r.ViolatingPods, Lifecycles: r.Pods,
		PodStartupMs: a.lat.Hist(metrics.Key{Scenario: r.Scenario, Policy: r.Policy, Metric: metrics.PodStartup}),
		BaselineMs:   a.lat.Hist(metrics.Key{Scenario: r.Scenario, Policy: api.PolicyNone.String(), Metric: metrics.PodStartup}),
		IsBaseline:   r.Policy == api.PolicyNone.String(),
	}
	if s := a.byName[r.Scenario]; s != nil {
		in.Seed = s.MasterSeed()
	}
	for _, pc := range a.lat.Result().Pods {
		if pc.Scenario == r.Scenario && pc.Policy == r.Policy {
			in.SidecarJobs, in.SidecarJobsCompleted = pc.SidecarJobs, pc.SidecarJobsSucceeded
		}
	}
	return in
}

// runData fills one scenario's report input.
func (a *Aggregate) runData(s *scenario.Scenario, m Meta, partial bool, lat metrics.Result, verdicts map[*Row][]graduation.Verdict) render.RunData {
	name := s.Metadata.Name
	d := render.RunData{
		Scenario: name,
		Meta: render.Meta{
			Seed: s.MasterSeed(), Backend: m.Backend, Version: m.Build.Version, Revision: m.Build.Revision, Modified: m.Build.Modified,
			ScenarioHash: s.Hash, Partial: partial, StartUnixNano: m.StartedAt.UnixNano(), ElapsedSeconds: m.Elapsed.Seconds(),
			Extra: map[string]string{"nodes": strconv.Itoa(s.Cluster.Nodes), "podsPerNode": strconv.Itoa(s.Cluster.PodsPerNode), "command": m.Command},
		},
		Roles: map[string]string{}, PolicyRuns: map[string]render.PolicyRun{}, Warnings: slices.Clone(a.Warnings),
	}
	for k, v := range m.Extra {
		d.Meta.Extra[k] = v
	}
	var rows []*Row
	for _, r := range a.rows {
		if r.Scenario == name {
			rows = append(rows, r)
		}
	}
	d.Groups = groupRates(rows)
	d.LatencyLimits = latencyLimits(s)
	d.RateTargets = a.rateTargets(s, rows, m.Command == "soak")
	d.Timelines = a.reportTimelines(name, rows)
	if sf := a.figs[name]; sf != nil {
		d.FaultWindows, d.FindingPoints = sf.windows.items(), sf.points.items()
		d.Dropped = render.TimelineDropped{FaultWindows: sf.dropped.FaultWindows + sf.windows.dropped(), FindingPoints: sf.dropped.FindingPoints + sf.points.dropped()}
	}
	for _, r := range rows {
		d.Policies = append(d.Policies, r.Policy)
		d.Roles[r.Policy] = string(r.Role)
		d.PolicyRuns[r.Policy] = render.PolicyRun{Trials: r.Trials, Pods: r.Pods, ElapsedSeconds: r.Elapsed.Seconds(), ViolatingPods: r.ViolatingPods,
			Faults: r.faultTallies()}
		d.Meta.Trials = max(d.Meta.Trials, r.Trials)
		d.Meta.Pods += r.Pods
		for _, row := range r.Invariants() {
			if row.Level == check.User {
				continue // the user-level section (userlevel.go)
			}
			d.Invariants = append(d.Invariants, render.InvariantRow{Policy: r.Policy, ID: row.ID, Rule: row.Rule, Level: row.Level.String(),
				Checked: row.Checked, Violations: row.Violations, ViolatingPods: row.ViolatingPods, Degradations: row.Degradations, BoundsExceeded: row.Bounds, Unknown: row.Unknown})
		}
		for _, c := range r.Matrix() {
			if isUserLevel(c.ID) {
				continue
			}
			d.Matrix = append(d.Matrix, render.MatrixCell{Policy: r.Policy, ID: c.ID, Fault: c.Fault,
				Violations: c.Violations, Degradations: c.Degradations, BoundsExceeded: c.Bounds})
		}
		for i := range r.Findings {
			d.Findings = append(d.Findings, ReportFinding(&r.Findings[i]))
		}
		for _, v := range verdicts[r] {
			d.Verdicts = append(d.Verdicts, render.Verdict{Policy: r.Policy, Criterion: v.Criterion, Status: string(v.Status), Observed: v.Observed,
				Bound: v.Bound, Threshold: v.Threshold, Message: v.Message, MoreTrialsNeeded: v.MoreTrialsNeeded, Warnings: v.Warnings})
		}
	}
	d.UserLevel = a.userLevel(name)
	for _, l := range lat.Latencies {
		if l.Scenario != name {
			continue
		}
		d.Latencies = append(d.Latencies, render.Latency{Policy: l.Policy, Metric: string(l.Metric), N: l.N, FaultedExcluded: l.FaultedExcluded,
			Ms: a.lat.Hist(l.Key), P50: l.P50, P90: l.P90, P99: l.P99})
	}
	return d
}

// ReportFinding converts a findings.jsonl record for the reports.
func ReportFinding(f *rundir.FindingRecord) render.Finding {
	out := render.Finding{Policy: f.Policy, Trial: f.Trial, Seed: f.Seed, ID: f.ID, Class: f.Class, Pod: f.Pod, Node: f.Node, T: f.T, Msg: f.Msg,
		Excuse: f.Excuse, Elided: f.Elided}
	if f.Fault != nil {
		out.Fault, out.FaultID, out.FaultT = f.Fault.Name, f.Fault.ID, f.Fault.T
	}
	for _, raw := range f.Excerpt {
		var e history.Event
		if history.UnmarshalEvent(raw, &e) == nil {
			out.Excerpt = append(out.Excerpt, e)
		}
	}
	return out
}

// WriteReports renders the outcome into a run directory: a directory of
// one scenario gets the reports at its top (summary.json with the
// "sidebench" section); a directory of several (a soak of several files)
// gets each scenario's reports in reports/NAME/ and a summary.json with
// only the "sidebench" section. An error (disk full) is returned: the
// reports are all-or-nothing (render.Write), so none claims success.
func WriteReports(dir string, o Outcome) error {
	if len(o.Runs) == 1 {
		_, err := render.Write(dir, o.Runs[0])
		return err
	}
	for _, d := range o.Runs {
		if _, err := render.Write(filepath.Join(dir, "reports", d.Scenario), d); err != nil {
			return err
		}
	}
	b, err := render.StateJSON(&o.State)
	if err != nil {
		return err
	}
	return rundir.WriteFileAtomic(filepath.Join(dir, render.SummaryFile), b)
}

// complete reports whether dir's summary.json says the run finished and
// covers n committed trials.
func complete(dir string, n int) bool {
	f, err := os.Open(filepath.Join(dir, render.SummaryFile))
	if err != nil {
		return false
	}
	defer f.Close()
	st, err := render.ReadState(f)
	if err != nil || st == nil {
		return false
	}
	return st.Status == StatusComplete && st.TrialsCommitted == n
}

func dupWarning(dir string, dups, of int) string {
	return fmt.Sprintf("%s: %d of %d trials were already counted (same scenario content, policy, seed and trial number); each is counted once", dir, dups, of)
}
