package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"

	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/metrics"
	"github.com/sidebench/sidebench/harness/scenario"
	"github.com/sidebench/sidebench/reference-impl/api"
	"github.com/sidebench/sidebench/reports/graduation"
	"github.com/sidebench/sidebench/reports/render"
)

// maxReportFindings bounds the findings per scenario × policy carried into
// the reports (findings.jsonl has all the checker kept).
const maxReportFindings = 50

// summaryKey is the key of sidebench's own section in summary.json (run
// state, criteria, RSS), added next to reports/render's schema.
const summaryKey = "sidebench"

// reportWarning is a non-fatal problem while rendering the reports.
type reportWarning struct{ err error }

func (w *reportWarning) Error() string { return "reports: " + w.err.Error() }

// writeSummary writes the reports (reports/render: summary.json, report.md,
// report.html, junit.xml, PerfData) and adds sidebench's section to
// summary.json: trials committed, partial, criteria per scenario × policy
// and RSS over time. With several scenarios in one run directory (a soak of
// several files) each scenario's reports go to reports/NAME/ and
// summary.json holds only sidebench's section. A rendering problem is
// returned as a *reportWarning after summary.json was still written.
func (rd *runDir) writeSummary() (s summary, err error) {
	s = rd.summary()
	cli, merr := json.MarshalIndent(s, "  ", "  ")
	if merr != nil {
		return s, merr
	}
	plain := func() error {
		return writeAtomic(filepath.Join(rd.dir, fileSummary), []byte("{\n  \""+summaryKey+"\": "+string(cli)+"\n}\n"))
	}
	var rerr error
	func() {
		defer func() {
			if p := recover(); p != nil {
				rerr = fmt.Errorf("render panicked: %v", p)
				if os.Getenv("SIDEBENCH_DEBUG") != "" {
					rerr = fmt.Errorf("%w\n%s", rerr, debug.Stack())
				}
			}
		}()
		if len(rd.scens) == 1 {
			rerr = rd.render(rd.scens[0], rd.dir, cli)
			return
		}
		for _, sc := range rd.scens {
			dir := filepath.Join(rd.dir, "reports", sc.Metadata.Name)
			if err := rd.render(sc, dir, nil); err != nil && rerr == nil {
				rerr = err
			}
		}
	}()
	if rerr != nil || len(rd.scens) != 1 {
		if err := plain(); err != nil {
			return s, err
		}
	}
	if rerr != nil {
		return s, &reportWarning{rerr}
	}
	return s, nil
}

// render writes one scenario's reports into dir; cli, if set, is spliced
// into summary.json as the "sidebench" key.
func (rd *runDir) render(sc *scenario.Scenario, dir string, cli []byte) error {
	d := rd.runData(sc)
	if _, err := render.Write(dir, d); err != nil {
		return err
	}
	if cli == nil {
		return nil
	}
	path := filepath.Join(dir, render.SummaryFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	b = bytes.TrimRight(b, " \n")
	if len(b) == 0 || b[len(b)-1] != '}' {
		return fmt.Errorf("%s: unexpected content", path)
	}
	var out bytes.Buffer
	out.Write(b[:len(b)-1])
	out.WriteString(",\n  \"" + summaryKey + "\": ")
	out.Write(cli)
	out.WriteString("\n}\n")
	return writeAtomic(path, out.Bytes())
}

// runData fills reports/render's input for one scenario from the
// aggregates of the committed trials.
func (rd *runDir) runData(sc *scenario.Scenario) render.RunData {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	name := sc.Metadata.Name
	d := render.RunData{
		Scenario: name,
		Meta: render.Meta{
			Seed: sc.MasterSeed(), Backend: rd.info.Backend, Version: version(), ScenarioHash: sc.Hash,
			Partial: rd.partial, StartUnixNano: rd.info.StartedAt.UnixNano(),
			Extra: map[string]string{
				"nodes":       strconv.Itoa(sc.Cluster.Nodes),
				"podsPerNode": strconv.Itoa(sc.Cluster.PodsPerNode),
				"command":     rd.info.Command,
			},
		},
	}
	res := rd.agg.Result()
	var baseline []float64
	for _, r := range rd.rows {
		if r.Scenario == name && r.Policy == api.PolicyNone.String() {
			baseline = rd.agg.Samples(metrics.Key{Scenario: name, Policy: r.Policy, Metric: metrics.PodStartup})
		}
	}
	for _, r := range rd.rows {
		if r.Scenario != name {
			continue
		}
		d.Policies = append(d.Policies, r.Policy)
		d.Meta.Trials = max(d.Meta.Trials, r.Trials)
		d.Meta.Pods += r.Pods
		for _, id := range r.invOrder {
			row := r.inv[id]
			d.Invariants = append(d.Invariants, render.InvariantRow{Policy: r.Policy, ID: row.ID, Rule: row.Rule, Level: row.Level.String(),
				Checked: row.Checked, Violations: row.Violations, ViolatingPods: row.ViolatingPods, Degradations: row.Degradations, BoundsExceeded: row.Bounds, Unknown: row.Unknown})
		}
		for _, k := range r.matrixOrder {
			c := r.matrix[k]
			d.Matrix = append(d.Matrix, render.MatrixCell{Policy: r.Policy, ID: c.ID, Fault: c.Fault,
				Violations: c.Violations, Degradations: c.Degradations, BoundsExceeded: c.Bounds})
		}
		d.Findings = append(d.Findings, r.findings...)
		if r.applies && r.criteria.Graduation != "" {
			d.Verdicts = append(d.Verdicts, rd.verdicts(sc, r, res, baseline)...)
		}
	}
	for _, l := range res.Latencies {
		if l.Scenario != name {
			continue
		}
		d.Latencies = append(d.Latencies, render.Latency{Policy: l.Policy, Metric: l.Metric, N: l.N, FaultedExcluded: l.FaultedExcluded,
			SamplesMs: rd.agg.Samples(l.Key), P50: l.P50, P90: l.P90, P99: l.P99})
	}
	return d
}

func (rd *runDir) verdicts(sc *scenario.Scenario, r *rowState, res metrics.Result, baseline []float64) []render.Verdict {
	c, err := graduation.Load(r.criteria.Graduation)
	if err != nil {
		return []render.Verdict{{Policy: r.Policy, Criterion: "criteria", Status: render.StatusInsufficient, Message: err.Error()}}
	}
	in := graduation.Inputs{
		Violations: r.ViolatingPods, Lifecycles: r.Pods,
		PodStartupMs: rd.agg.Samples(metrics.Key{Scenario: r.Scenario, Policy: r.Policy, Metric: metrics.PodStartup}),
		BaselineMs:   baseline,
		Seed:         sc.MasterSeed(),
	}
	for _, pc := range res.Pods {
		if pc.Scenario == r.Scenario && pc.Policy == r.Policy {
			in.SidecarJobs, in.SidecarJobsCompleted = pc.SidecarJobs, pc.SidecarJobsSucceeded
		}
	}
	var out []render.Verdict
	for _, v := range graduation.Evaluate(c, in) {
		out = append(out, render.Verdict{Policy: r.Policy, Criterion: v.Criterion, Status: string(v.Status), Observed: v.Observed,
			Bound: v.Bound, Threshold: v.Threshold, Message: v.Message, MoreTrialsNeeded: v.MoreTrialsNeeded, Warnings: v.Warnings})
	}
	return out
}

// reportFinding converts a findings.jsonl record for the reports.
func reportFinding(f findingRecord) render.Finding {
	out := render.Finding{Policy: f.Policy, ID: f.ID, Class: f.Class, Pod: f.Pod, Node: f.Node, T: f.T, Msg: f.Msg,
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

// readFindings reloads the report findings from findings.jsonl (resume).
func (rd *runDir) readFindings() {
	f, err := os.Open(filepath.Join(rd.dir, fileFindings))
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	rd.mu.Lock()
	defer rd.mu.Unlock()
	for sc.Scan() {
		var fr findingRecord
		if json.Unmarshal(sc.Bytes(), &fr) != nil {
			continue
		}
		if r := rd.index[rowKey(fr.Scenario, fr.Policy)]; r != nil && len(r.findings) < maxReportFindings {
			r.findings = append(r.findings, reportFinding(fr))
		}
	}
}

// readSummary reads sidebench's section of a summary.json.
func readSummary(path string) (summary, error) {
	var s summary
	b, err := os.ReadFile(path)
	if err != nil {
		return s, err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return s, err
	}
	raw, ok := top[summaryKey]
	if !ok {
		return s, fmt.Errorf("%s: no %q section", path, summaryKey)
	}
	return s, json.Unmarshal(raw, &s)
}
