package render

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// MaxFindings is how many findings report.md and report.html show (the
// others carried into the report data are in summary.json).
const MaxFindings = 10

// everyFinding says where every finding is: summary.json carries a bounded
// number per policy, the run directory's findings.jsonl.zst all of them
// (these sentences used to name a findings.jsonl no run directory has).
const everyFinding = "every finding of the run is in findings.jsonl.zst in the run directory (zstdcat prints it; 'sidebench explain RUNDIR' lists its pods)."

// WriteMarkdown writes report.md.
func WriteMarkdown(w io.Writer, d RunData) error {
	d = normalize(d)
	bw := bufio.NewWriter(w)
	writeMarkdown(bw, d)
	return bw.Flush()
}

// mdCell escapes a table cell.
func mdCell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

func writeMarkdown(w *bufio.Writer, d RunData) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("# sidebench report: %s\n\n", d.Scenario)
	if d.Meta.Partial {
		p("> **PARTIAL RUN**: the run did not complete; every number below covers only what was recorded.\n\n")
	}
	writeHeadline(p, d)
	p("| run | |\n|---|---|\n")
	for _, kv := range headerRows(d) {
		p("| %s | %s |\n", kv[0], mdCell(kv[1]))
	}
	p("\n")
	p("Figures (policy comparison, latency tails, run timeline, pod timelines) are in report.html.\n\n")
	writeForestTable(p, d)

	p("## Latency\n\n")
	if len(d.Latencies) == 0 {
		p("No latency samples.\n\n")
	}
	lvs := latencyViews(d)
	if line := noLatencySamples(lvs); line != "" {
		p("%s\n\n", line)
		lvs = nil
	}
	for _, v := range lvs {
		p("### Policy `%s`\n\n", v.Policy)
		if len(v.Rows) > 0 {
			p("| metric | n | p50 ms [95%% CI] | p90 ms [95%% CI] | p99 ms [95%% CI] | faulted excluded |\n")
			p("|---|---:|---:|---:|---:|---:|\n")
			for _, l := range v.Rows {
				p("| %s | %d | %s | %s | %s | %d |\n", l.Metric, l.N, fmtSummary(l.P50), fmtSummary(l.P90), fmtSummary(l.P99), l.FaultedExcluded)
			}
			p("\n")
		}
		if len(v.Empty) > 0 {
			p("No samples (every pod touched by a fault: up to %d excluded): %s.\n\n", v.Faulted, strings.Join(v.Empty, ", "))
		}
	}
	if ws := latencyWarnings(d); len(ws) > 0 {
		for _, x := range ws {
			p("- ⚠ %s\n", mdCell(x.String()))
		}
		p("\n")
	}

	p("## Invariants\n\n")
	if len(d.Invariants) == 0 {
		p("No checker results.\n\n")
	} else {
		p("| policy | invariant | level | pods checked | violations | degradations | bounds exceeded | unknown | violation rate | Wilson 95%% upper | Clopper–Pearson 95%% upper |\n")
		p("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, v := range invariantViews(d) {
			for _, r := range v.Rows {
				rs := rowRate(r)
				viol := strconv.Itoa(r.Violations)
				if r.Violations > 0 {
					viol = "**" + viol + "**"
				}
				p("| %s | %s | %s | %d | %s | %d | %d | %d | %s | %s | %s |\n", r.Policy, r.ID, r.Level, r.Checked, viol,
					r.Degradations, r.BoundsExceeded, r.Unknown, fmtPct(rs.Rate), fmtPct(rs.WilsonHi), fmtPct(rs.CPHi))
			}
			if line := v.CleanLine(); line != "" {
				p("| %s | %s: %s | | | | | | | | | |\n", v.Policy, line, strings.Join(v.Clean, ", "))
			}
		}
		p("\nThe rules of the IDs are listed under \"Invariant rules\" below.\n\n")
	}

	if rows := faultRows(d); len(rows) > 0 {
		p("## Faults injected\n\n%s\n\n", faultsInjectedNote)
		p("| fault | policy | applied | NOT applied | why not |\n|---|---|---:|---:|---|\n")
		for _, r := range rows {
			notApplied := strconv.Itoa(r.NotApplied)
			if r.NotApplied > 0 {
				notApplied = "**" + notApplied + "**"
			}
			p("| %s | %s | %d | %s | %s |\n", r.Fault, r.Policy, r.Applied, notApplied, mdCell(r.Why()))
		}
		p("\n")
	}

	if cols := faultColumns(d.Matrix); len(cols) > 0 {
		p("## Findings by fault\n\n")
		p("Cells are violations/degradations/bounds exceeded of each invariant attributed to the fault. A finding is attributed to a fault only when that fault can have caused it (it touched the pod or its node, and its window contains the offending event); otherwise it is \"unattributed\". Only invariants with findings are listed.\n\n")
		p("| policy | invariant | %s |\n|---|---|%s\n", strings.Join(cols, " | "), strings.Repeat("---:|", len(cols)))
		for _, row := range matrixRows(d.Matrix) {
			cells := make([]string, len(cols))
			for i, f := range cols {
				cells[i] = "·"
				if c, ok := row.cells[f]; ok {
					cells[i] = fmt.Sprintf("%d/%d/%d", c.Violations, c.Degradations, c.BoundsExceeded)
				}
			}
			p("| %s | %s | %s |\n", row.policy, row.id, strings.Join(cells, " | "))
		}
		p("\n")
	}

	writeUserLevelMarkdown(p, d)

	p("## Criteria\n\n")
	if len(d.Verdicts) == 0 {
		p("No criteria were evaluated.\n\n")
	} else {
		p("Overall: **%s**\n\n", overall(d.Verdicts))
		p("| policy | criterion | status | observed | bound | threshold | more trials needed | message |\n")
		p("|---|---|---|---:|---:|---:|---:|---|\n")
		for _, v := range d.Verdicts {
			more := ""
			if v.MoreTrialsNeeded > 0 {
				more = strconv.Itoa(v.MoreTrialsNeeded)
			}
			p("| %s | %s | **%s** | %s | %s | %s | %s | %s |\n", v.Policy, v.Criterion, v.Status, fmtNum(v.Observed),
				fmtNum(v.Bound), fmtNum(v.Threshold), more, mdCell(v.Message))
		}
		p("\n")
		if ws := verdictWarnings(d); len(ws) > 0 {
			for _, x := range ws {
				p("- ⚠ %s\n", mdCell(x.String()))
			}
			p("\n")
		}
	}

	p("## Notable findings\n\n")
	groups, more := notableFindings(d)
	if len(groups) == 0 {
		p("None.\n\n")
	}
	for _, g := range groups {
		f := &g.F
		p("### %s\n\n", findingTitle(f))
		p("_%s_ · `%s`\n\n", g.trialsText(), explainCommand(d, f.Pod, f.Trial, f.Policy))
		p("%s\n\n", f.Msg)
		if c := findingContext(f); c != "" {
			p("_%s_\n\n", c)
		}
		if lines := excerptLines(f); len(lines) > 0 {
			p("```text\n%s\n```\n\n", strings.Join(lines, "\n"))
		}
	}
	if more > 0 {
		p("… %d more findings in summary.json; %s\n\n", more, everyFinding)
	}

	if len(d.Warnings) > 0 {
		p("## Warnings\n\n")
		for _, x := range d.Warnings {
			p("- %s\n", mdCell(x))
		}
		p("\n")
	}

	if rules := ruleNotes(d); len(rules) > 0 {
		p("## Invariant rules\n\n")
		for _, r := range rules {
			p("- **%s** (%s): %s\n", r.ID, r.Level, mdCell(r.Rule))
		}
		p("\n")
	}

	p("## How to read this\n\n")
	for _, line := range howToRead {
		p("- %s\n", line)
	}
}

// writeForestTable writes the policy comparison figure's numbers: the
// violation rate per invariant group and policy.
func writeForestTable(p func(string, ...any), d RunData) {
	rows, clean := forestRows(d)
	if len(rows) == 0 {
		return
	}
	p("## Policy comparison\n\n")
	p("| invariant group | policy | pods with a violation | rate | Clopper–Pearson 95%% |\n|---|---|---:|---:|---|\n")
	for _, r := range rows {
		g := "all invariants"
		if r.group != GroupAll {
			g = groupLabel(r.group)
		}
		p("| %s | %s | %d/%d | %s | [%s, %s] |\n", g, r.policy, r.rate.K, r.rate.N, fmtPct(r.rate.Rate), fmtPct(r.rate.CPLo), fmtPct(r.rate.CPHi))
	}
	p("\n")
	if len(clean) > 0 {
		var gs []string
		for _, g := range clean {
			gs = append(gs, groupLabel(g))
		}
		p("No violation in any policy: %s.\n\n", strings.Join(gs, ", "))
	}
}

// writeHeadline writes the verdict first: the run's status, then per
// policy its role and every criterion with its outcome, one line each.
func writeHeadline(p func(string, ...any), d RunData) {
	b := buildBanner(d)
	v := b.Overall
	if v == "" {
		v = "NOT JUDGED"
	}
	p("**Verdict: %s** (run %s; %s)\n\n", v, b.Status, b.Facts)
	for _, r := range b.Rows {
		role := "judged"
		if r.Role == RoleBugReplica {
			role = "bug replica, passes when the checker catches it"
		}
		more := ""
		if r.More > 0 {
			more = fmt.Sprintf("; ≈%d more lifecycles needed", r.More)
		}
		p("- `%s`: %s: **%s**%s\n", r.Policy, role, r.Overall, more)
		for _, v := range d.Verdicts {
			if v.Policy != r.Policy {
				continue
			}
			more := ""
			if v.MoreTrialsNeeded > 0 {
				more = fmt.Sprintf(" (≈%d more trials needed)", v.MoreTrialsNeeded)
			}
			p("  - **%s** %s: %s%s\n", v.Status, v.Criterion, mdCell(v.Message), more)
		}
	}
	if len(b.Baselines) > 0 {
		p("- baselines, measured and not judged: `%s`\n", strings.Join(b.Baselines, "`, `"))
	}
	p("\n")
}

// versionString is the version with the VCS revision, if known.
func versionString(m Meta) string {
	if m.Revision == "" {
		return m.Version
	}
	r := m.Revision
	if len(r) > 12 {
		r = r[:12]
	}
	if m.Modified {
		r += ", modified"
	}
	return m.Version + " (" + r + ")"
}

// howToRead is the footnote of report.md and report.html.
var howToRead = []string{
	"Latencies are in milliseconds. Percentiles are by nearest rank, as ClusterLoader2 computes them: p = sorted[ceil(n·p/100)−1], always an observed value, never interpolated.",
	"[lo, hi] is a distribution-free 95% confidence interval for the population percentile from order statistics (binomial ranks, as benchstat's median CI). ±∞ means the sample is too small to bound it: the p99 needs n ≥ 368 for a finite two-sided interval, the median n ≥ 6.",
	"pod_startup is the SIG Scalability SLI: pod creation → every sidecar and main container started, as observed. Faulted pods are excluded from latency samples unless stated.",
	"A violation is a HARD guarantee broken without an excusing fault; a degradation is a guarantee broken under a fault that voids it; a bound exceeded is a missed timing budget. A judged policy's violations fail the run (criteria.maxViolations, 0 unless set), its degradations only under criteria.maxDegradations, bounds exceeded never; latency criteria can fail it too, and a baseline's findings never do.",
	"The violation rate is violations / pods checked. The Wilson and Clopper–Pearson columns are two-sided 95% upper bounds on the true rate; with 0 violations in n pods the rate is below ≈3/n (rule of three).",
	"A finding is attributed to a fault only when that fault can have caused it: it touched the pod or its node and its window contains the offending event. Otherwise it is unattributed, and a violation.",
	"Figures: each policy keeps one colour, dash pattern and marker in every figure. The latency figures are survival curves (fraction of pods at least as slow as x) on log–log axes, with p50/p90/p99 and their confidence intervals marked and a 95% DKW band; the policy comparison is a forest plot of violation rates with Clopper–Pearson intervals.",
	"Graduation: PASS holds at the required confidence; FAIL means the observation itself breaks the criterion; INSUFFICIENT DATA means the observation is within the limit but more trials are needed to claim it.",
}

// headerRows are the key/value lines of the report header.
func headerRows(d RunData) [][2]string {
	rows := [][2]string{
		{"scenario", d.Scenario},
		{"policies", strings.Join(d.Policies, ", ")},
		{"seed", strconv.FormatUint(d.Meta.Seed, 10)},
		{"backend", d.Meta.Backend},
		{"version", versionString(d.Meta)},
		{"trials", strconv.Itoa(d.Meta.Trials)},
		{"pods", strconv.Itoa(totalPods(d))},
	}
	if s := startTime(d.Meta); s != "" {
		rows = append(rows, [2]string{"started", s})
	}
	if d.Meta.ScenarioHash != "" {
		rows = append(rows, [2]string{"scenario hash", d.Meta.ScenarioHash})
	}
	status := "complete"
	if d.Meta.Partial {
		status = "PARTIAL"
	}
	rows = append(rows, [2]string{"status", status})
	for _, k := range sortedKeys(d.Meta.Extra) {
		rows = append(rows, [2]string{k, d.Meta.Extra[k]})
	}
	return rows
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// matrixRow is one policy × invariant row of the fault matrix.
type matrixRow struct {
	policy, id string
	cells      map[string]MatrixCell
}

// faultColumns lists the faults of the matrix: "unattributed" first, then
// sorted.
func faultColumns(m []MatrixCell) []string {
	var cols []string
	for _, c := range m {
		if !slices.Contains(cols, c.Fault) {
			cols = append(cols, c.Fault)
		}
	}
	slices.SortFunc(cols, compareFault)
	return cols
}

// matrixRows groups normalized (sorted) cells into rows.
func matrixRows(m []MatrixCell) []matrixRow {
	var rows []matrixRow
	for _, c := range m {
		if n := len(rows); n == 0 || rows[n-1].policy != c.Policy || rows[n-1].id != c.ID {
			rows = append(rows, matrixRow{policy: c.Policy, id: c.ID, cells: map[string]MatrixCell{}})
		}
		rows[len(rows)-1].cells[c.Fault] = c
	}
	return rows
}
