package render

import (
	"bufio"
	"fmt"
	"html/template"
	"io"
	"strings"
)

// WriteHTML writes report.html: one self-contained page (inline CSS, inline
// SVG figures drawn with gonum/plot, no scripts, fonts, images or links to
// anything outside the file).
func WriteHTML(w io.Writer, d RunData) error {
	d = normalize(d)
	v, err := htmlView(d)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	if err := htmlTmpl.Execute(bw, v); err != nil {
		return err
	}
	return bw.Flush()
}

type htmlLatencyTable struct {
	Policy  string
	Rows    []htmlLatencyRow
	Empty   string
	Faulted int
}

type htmlLatencyRow struct {
	Metric             string
	N, FaultedExcluded int
	P50, P90, P99      string
}

type htmlID struct {
	ID, Rule string
}

type htmlInvTable struct {
	Policy    string
	Rows      []htmlInvRow
	CleanLine string
	Clean     []htmlID
}

type htmlInvRow struct {
	Policy                                         string
	ID                                             htmlID
	Level                                          string
	Checked, Violations, Degradations, Bounds, Unk int
	Rate, Wilson, CP                               string
	Class                                          string
}

type htmlMatrix struct {
	Faults []string
	Rows   []htmlMatrixRow
}

type htmlMatrixRow struct {
	Policy string
	ID     htmlID
	Cells  []htmlMatrixCell
}

type htmlMatrixCell struct {
	Text, Class, Title string
}

type htmlVerdict struct {
	Policy, Criterion, Status, Class string
	Observed, Bound, Threshold       string
	More                             int
	Message                          string
}

type htmlFinding struct {
	Title, Trials, Class, Msg, Context string
	Explain                            string
	Excerpt                            string
}

type htmlFigure struct {
	ID      string
	Number  int
	Title   string
	SVG     template.HTML
	Caption string
	Key     []keyItem
	Gantt   bool
	Command string
}

type htmlPage struct {
	Scenario     string
	Banner       banner
	Header       [][2]string
	Figures      []htmlFigure
	Latencies    []htmlLatencyTable
	NoLatency    string
	LatencyWarns []string
	Invariants   []htmlInvTable
	Matrix       htmlMatrix
	Faults       []faultRow
	FaultsNote   string
	UserLevel    template.HTML // the user-level section (userlevel.go)
	Overall      string
	OverallCls   string
	Verdicts     []htmlVerdict
	VerdictWarns []string
	Findings     []htmlFinding
	MoreFinding  int
	EveryFinding string
	Warnings     []string
	Rules        []ruleNote
	HowToRead    []string
}

func statusClass(s string) string {
	switch s {
	case StatusPass:
		return "pass"
	case StatusFail:
		return "fail"
	case StatusInsufficient:
		return "insufficient"
	}
	return "none"
}

// reportFigures renders every figure of the report in page order: the
// policy comparison, the latency tails, the run timeline, the pods'
// timelines, then the soak's progress and memory.
func reportFigures(d RunData) ([]htmlFigure, error) {
	var figs []htmlFigure
	add := func(title string, f figure, gantt bool) {
		figs = append(figs, htmlFigure{ID: f.ID, Number: len(figs) + 1, Title: title, SVG: template.HTML(f.SVG), Caption: f.Caption, Key: f.Key, Gantt: gantt})
	}
	if f, ok, err := forestFigure(d); err != nil {
		return nil, fmt.Errorf("policy comparison figure: %w", err)
	} else if ok {
		add("Violation rate per invariant group and policy", f, false)
	}
	for _, m := range latencyFigureMetrics {
		f, ok, err := latencyFigure(d, m)
		if err != nil {
			return nil, fmt.Errorf("latency figure %s: %w", m, err)
		}
		if ok {
			add("Latency: "+m, f, false)
		}
	}
	if f, ok, err := runTimelineFigure(d); err != nil {
		return nil, fmt.Errorf("run timeline: %w", err)
	} else if ok {
		add("Run timeline: faults and findings", f, false)
	}
	for _, t := range d.Timelines {
		g := BuildGantt(t.Events)
		if g.Pod == "" {
			g.Pod = t.Pod
		}
		g.Findings = t.Marks
		svg, err := GanttSVG(g, "")
		if err != nil {
			return nil, fmt.Errorf("timeline %s: %w", t.Pod, err)
		}
		if svg == "" {
			continue
		}
		title := "Pod " + t.Pod
		if t.Policy != "" {
			title += " · policy " + t.Policy
		}
		title += fmt.Sprintf(" · trial %d · seed %d", t.Trial, t.Seed)
		if t.Why != "" {
			title += " — " + t.Why
		}
		figs = append(figs, htmlFigure{ID: "gantt", Number: len(figs) + 1, Title: title, SVG: template.HTML(svg), Gantt: true, Command: explainCommand(d, t.Pod, t.Trial, t.Policy),
			Caption: "The same timeline as text, with every event:"})
	}
	if f, ok, err := lifecyclesFigure(d); err != nil {
		return nil, fmt.Errorf("soak lifecycles: %w", err)
	} else if ok {
		add("Soak: lifecycles against the target", f, false)
	}
	if f, ok, err := rssFigure(d); err != nil {
		return nil, fmt.Errorf("soak RSS: %w", err)
	} else if ok {
		add("Soak: memory", f, false)
	}
	return figs, nil
}

func htmlView(d RunData) (htmlPage, error) {
	rules := ruleNotes(d)
	id := func(x string) htmlID { return htmlID{ID: x, Rule: ruleOf(rules, x)} }
	pg := htmlPage{Scenario: d.Scenario, Banner: buildBanner(d), Header: headerRows(d), Warnings: d.Warnings, HowToRead: howToRead, Rules: rules}
	figs, err := reportFigures(d)
	if err != nil {
		return pg, err
	}
	pg.Figures = figs
	if pg.UserLevel, err = userLevelHTML(d); err != nil {
		return pg, fmt.Errorf("user-level guarantees: %w", err)
	}
	lvs := latencyViews(d)
	pg.NoLatency = noLatencySamples(lvs)
	for _, v := range lvs {
		if pg.NoLatency != "" {
			break
		}
		t := htmlLatencyTable{Policy: v.Policy, Faulted: v.Faulted}
		for _, l := range v.Rows {
			t.Rows = append(t.Rows, htmlLatencyRow{Metric: l.Metric, N: l.N, FaultedExcluded: l.FaultedExcluded,
				P50: fmtSummary(l.P50), P90: fmtSummary(l.P90), P99: fmtSummary(l.P99)})
		}
		if len(v.Empty) > 0 {
			t.Empty = strings.Join(v.Empty, ", ")
		}
		pg.Latencies = append(pg.Latencies, t)
	}
	for _, w := range latencyWarnings(d) {
		pg.LatencyWarns = append(pg.LatencyWarns, w.String())
	}
	for _, v := range invariantViews(d) {
		t := htmlInvTable{Policy: v.Policy, CleanLine: v.CleanLine()}
		for _, c := range v.Clean {
			t.Clean = append(t.Clean, id(c))
		}
		for _, r := range v.Rows {
			rs := rowRate(r)
			cls := "ok"
			switch {
			case r.Violations > 0:
				cls = "viol"
			case r.Degradations > 0:
				cls = "degr"
			case r.BoundsExceeded > 0 || r.Unknown > 0:
				cls = "bound"
			}
			t.Rows = append(t.Rows, htmlInvRow{Policy: r.Policy, ID: id(r.ID), Level: r.Level,
				Checked: r.Checked, Violations: r.Violations, Degradations: r.Degradations, Bounds: r.BoundsExceeded, Unk: r.Unknown,
				Rate: fmtPct(rs.Rate), Wilson: fmtPct(rs.WilsonHi), CP: fmtPct(rs.CPHi), Class: cls})
		}
		pg.Invariants = append(pg.Invariants, t)
	}
	pg.Faults, pg.FaultsNote = faultRows(d), faultsInjectedNote
	pg.Matrix.Faults = faultColumns(d.Matrix)
	for _, row := range matrixRows(d.Matrix) {
		hr := htmlMatrixRow{Policy: row.policy, ID: id(row.id)}
		for _, f := range pg.Matrix.Faults {
			c, ok := row.cells[f]
			cell := htmlMatrixCell{Text: "·", Class: "empty"}
			if ok {
				cell.Text = fmt.Sprintf("%d / %d / %d", c.Violations, c.Degradations, c.BoundsExceeded)
				cell.Title = fmt.Sprintf("%s under %s: %d violations, %d degradations, %d bounds exceeded", row.id, f, c.Violations, c.Degradations, c.BoundsExceeded)
				switch {
				case c.Violations > 0:
					cell.Class = "viol"
				case c.Degradations > 0:
					cell.Class = "degr"
				case c.BoundsExceeded > 0:
					cell.Class = "bound"
				default:
					cell.Class = "ok"
				}
			}
			hr.Cells = append(hr.Cells, cell)
		}
		pg.Matrix.Rows = append(pg.Matrix.Rows, hr)
	}
	pg.Overall = overall(d.Verdicts)
	pg.OverallCls = statusClass(pg.Overall)
	for _, v := range d.Verdicts {
		pg.Verdicts = append(pg.Verdicts, htmlVerdict{Policy: v.Policy, Criterion: v.Criterion, Status: v.Status, Class: statusClass(v.Status),
			Observed: fmtNum(v.Observed), Bound: fmtNum(v.Bound), Threshold: fmtNum(v.Threshold), More: v.MoreTrialsNeeded,
			Message: v.Message})
	}
	for _, w := range verdictWarnings(d) {
		pg.VerdictWarns = append(pg.VerdictWarns, w.String())
	}
	groups, more := notableFindings(d)
	pg.MoreFinding, pg.EveryFinding = more, everyFinding
	for _, g := range groups {
		f := &g.F
		cls := map[string]string{ClassViolation: "viol", ClassDegradation: "degr", ClassBound: "bound"}[f.Class]
		ex := explainCommand(d, f.Pod, f.Trial, f.Policy)
		pg.Findings = append(pg.Findings, htmlFinding{Title: findingTitle(f), Trials: g.trialsText(), Class: cls, Msg: f.Msg, Context: findingContext(f),
			Explain: ex, Excerpt: strings.Join(excerptLines(f), "\n")})
	}
	return pg, nil
}

var htmlTmpl = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>sidebench report: {{.Scenario}}</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Liberation Sans",Arial,sans-serif;margin:0 auto;max-width:1180px;padding:1rem 1.5rem 3rem;color:#1b1b1b;background:#fff;line-height:1.4}
h1{font-size:1.6rem;margin:.5rem 0 1rem}h2{font-size:1.25rem;border-bottom:1px solid #ddd;padding-bottom:.2rem;margin-top:2rem}h3{font-size:1.05rem}
table{border-collapse:collapse;margin:.5rem 0 1rem;font-size:.9rem}th,td{border:1px solid #d0d0d0;padding:.25rem .5rem;vertical-align:top}
th{background:#f3f3f3;text-align:left}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table.meta th{width:9rem}table.meta{font-size:.8rem}
.viol{background:#f8d0d0}.degr{background:#fde3bf}.bound{background:#fbf4c0}.ok{background:#e2f3e6}.empty{color:#999;text-align:center}
.pass{background:#cfeed6;font-weight:600}.fail{background:#f4c2c2;font-weight:600}.insufficient{background:#fbe9b7;font-weight:600}.none{background:#eee}
.partial{padding:.6rem .8rem;border:2px solid #c00;background:#fde8e8;font-weight:600;margin:1rem 0}
#verdict-banner{border:3px solid #888;border-radius:6px;padding:.7rem 1rem;margin:0 0 1.5rem}
#verdict-banner.pass{border-color:#2e7d32;background:#f1faf2;font-weight:normal}#verdict-banner.fail{border-color:#b71c1c;background:#fdf0f0;font-weight:normal}
#verdict-banner.insufficient{border-color:#b07d00;background:#fffaeb;font-weight:normal}#verdict-banner.none{border-color:#888;background:#fafafa}
#verdict-banner .headline{display:flex;gap:1rem;align-items:baseline;flex-wrap:wrap}
#verdict-banner .verdict{font-size:2rem;font-weight:700;letter-spacing:.02em}
#verdict-banner table{margin:.6rem 0 .2rem;background:#fff}
.chip{display:inline-block;border-radius:3px;padding:0 .35rem;margin:.1rem .15rem;font-size:.82rem;white-space:nowrap}
.warn{color:#8a5300}pre{background:#f7f7f7;border:1px solid #e0e0e0;padding:.5rem;overflow-x:auto;font-size:.8rem}
figure.fig{margin:1.2rem 0 1.8rem;border-top:1px solid #eee;padding-top:.6rem}figcaption{font-size:.85rem;color:#333;max-width:60rem}
figcaption b{color:#111}svg{max-width:100%;height:auto;display:block}svg.swatch{display:inline;vertical-align:middle}
svg text{font-family:"Liberation Sans",Arial,Helvetica,sans-serif !important}
.key span{margin-right:1rem;white-space:nowrap;font-size:.85rem}.finding{border-left:4px solid #ccc;padding-left:.8rem;margin:1rem 0}
.finding.viol{border-color:#c00;background:none}.finding.degr{border-color:#d98a00;background:none}.finding.bound{border-color:#c9b400;background:none}
abbr{text-decoration:underline dotted;cursor:help}.ids{font-size:.85rem;color:#333}
dl.rules dt{font-weight:600;float:left;clear:left;width:6rem}dl.rules dd{margin:0 0 .3rem 6.5rem;font-size:.88rem}
footer{font-size:.85rem;color:#333;margin-top:2rem}
</style>
</head>
<body>
<h1>sidebench report: {{.Scenario}}</h1>
{{with .Banner}}<section id="verdict-banner" class="{{.Class}}" data-verdict="{{if .Overall}}{{.Overall}}{{else}}none{{end}}" data-status="{{.Status}}">
<div class="headline"><span class="verdict">{{if .Overall}}{{.Overall}}{{else}}NOT JUDGED{{end}}</span>
<span>run <b>{{.Status}}</b>{{if .Partial}}: the run did not complete; every number covers only what was recorded{{end}} · {{.Facts}}</span></div>
{{if .Rows}}<table>
<tr><th>policy</th><th>role</th><th>verdict</th><th>criteria</th><th>lifecycles still needed</th></tr>
{{range .Rows}}<tr><td><code>{{.Policy}}</code></td><td>{{.Role}}</td><td class="{{.Class}}">{{.Overall}}</td><td>{{range .Levels}}<div><b>{{.Name}}</b> <span class="chip {{.Class}}">{{.Status}}</span>:{{range .Criteria}} <span class="chip {{.Class}}" title="{{.Message}}">{{.Name}} {{.Status}}{{if .More}} (+{{.More}}){{end}}</span>{{end}}</div>{{end}}</td><td class="num">{{if .More}}{{.More}}{{else}}—{{end}}</td></tr>
{{end}}</table>{{else}}<p>No policy of this scenario is judged.</p>{{end}}
{{if .Baselines}}<div>Baselines, measured and not judged: {{range $i, $b := .Baselines}}{{if $i}}, {{end}}<code>{{$b}}</code>{{end}}</div>{{end}}
</section>{{end}}
{{if .Banner.Partial}}<div class="partial">PARTIAL RUN: the run did not complete; every number below covers only what was recorded.</div>{{end}}

{{if .Figures}}<h2>Figures</h2>{{end}}
{{range .Figures}}<figure class="fig" id="fig-{{.Number}}" data-figure="{{.ID}}">
<figcaption><b>Figure {{.Number}}. {{.Title}}</b></figcaption>
{{.SVG}}
{{if .Gantt}}<p class="key"><span style="color:#999">▬ init</span><span style="color:#0072B2">▬ sidecar</span><span style="color:#009E73">▬ main</span> (bar: running → exit)
<span>○ started</span><span style="color:#009E73">● probe ok</span><span style="color:#D55E00">✕ probe failed</span><span style="color:#E69F00">▲ SIGTERM</span><span style="color:#C00000">■ SIGKILL</span>
<span style="color:#CC79A7">▒ fault window (begin → end), ╎ fault begin/effect/end</span><span>╎ pod deleted</span><span style="color:#808080">┆ node/kubelet/runtime</span><span style="color:#C00000">┃ finding (the instant the checker decided it)</span></p>{{end}}
{{if .Key}}<p class="key">{{range .Key}}<span style="color:{{.Color}}">{{if .Line}}<svg class="swatch" width="36" height="12" viewBox="0 0 36 12"><line x1="1" y1="6" x2="35" y2="6" stroke="{{.Color}}" stroke-width="{{.Width}}"{{if .Dash}} stroke-dasharray="{{.Dash}}"{{end}}/></svg> {{end}}{{.Symbol}} {{.Text}}</span>
{{end}}</p>{{end}}
<figcaption>{{.Caption}}{{if .Command}} <code>{{.Command}}</code>{{end}}</figcaption>
</figure>
{{end}}

<h2>Latency</h2>
{{if .NoLatency}}<p>{{.NoLatency}}</p>{{else if not .Latencies}}<p>No latency samples.</p>{{end}}
{{range .Latencies}}<h3>Policy <code>{{.Policy}}</code></h3>
{{if .Rows}}<table>
<tr><th>metric</th><th>n</th><th>p50 ms [95% CI]</th><th>p90 ms [95% CI]</th><th>p99 ms [95% CI]</th><th>faulted excluded</th></tr>
{{range .Rows}}<tr><td>{{.Metric}}</td><td class="num">{{.N}}</td><td class="num">{{.P50}}</td><td class="num">{{.P90}}</td><td class="num">{{.P99}}</td><td class="num">{{.FaultedExcluded}}</td></tr>
{{end}}</table>{{end}}
{{if .Empty}}<p>No samples (every pod touched by a fault: up to {{.Faulted}} excluded): {{.Empty}}.</p>{{end}}
{{end}}
{{range .LatencyWarns}}<p class="warn">⚠ {{.}}</p>{{end}}

<h2>Invariants</h2>
{{if not .Invariants}}<p>No checker results.</p>{{else}}
<table>
<tr><th>policy</th><th>invariant</th><th>level</th><th>pods checked</th><th>violations</th><th>degradations</th><th>bounds exceeded</th><th>unknown</th><th>violation rate</th><th>Wilson 95% upper</th><th>Clopper–Pearson 95% upper</th></tr>
{{range .Invariants}}{{range .Rows}}<tr class="{{.Class}}"><td>{{.Policy}}</td><td><b><abbr title="{{.ID.Rule}}">{{.ID.ID}}</abbr></b></td><td>{{.Level}}</td><td class="num">{{.Checked}}</td><td class="num">{{.Violations}}</td><td class="num">{{.Degradations}}</td><td class="num">{{.Bounds}}</td><td class="num">{{.Unk}}</td><td class="num">{{.Rate}}</td><td class="num">{{.Wilson}}</td><td class="num">{{.CP}}</td></tr>
{{end}}{{if .CleanLine}}<tr class="ok"><td>{{.Policy}}</td><td colspan="10">{{.CleanLine}}<div class="ids">{{range $i, $c := .Clean}}{{if $i}}, {{end}}<abbr title="{{$c.Rule}}">{{$c.ID}}</abbr>{{end}}</div></td></tr>
{{end}}{{end}}</table>
<p>Hover an ID for its rule; every rule is listed under “Invariant rules” below.</p>{{end}}

{{if .Faults}}<h2>Faults injected</h2>
<p>{{.FaultsNote}}</p>
<table>
<tr><th>fault</th><th>policy</th><th>applied</th><th>NOT applied</th><th>why not</th></tr>
{{range .Faults}}<tr><td>{{.Fault}}</td><td>{{.Policy}}</td><td class="num">{{.Applied}}</td><td class="num{{if .NotApplied}} insufficient{{end}}">{{.NotApplied}}</td><td>{{.Why}}</td></tr>
{{end}}</table>{{end}}

<h2>Violations and degradations by fault</h2>
{{if not .Matrix.Rows}}<p>No findings under any fault.</p>{{else}}
<p>Each cell: violations / degradations / bounds exceeded of the invariant attributed to the fault. A finding is attributed to a fault only when that fault can have caused it (it touched the pod or its node, and its window contains the offending event); otherwise it is <b>unattributed</b> and, if a violation, counts as one. Only invariants with findings are listed.</p>
<table>
<tr><th>policy</th><th>invariant</th>{{range .Matrix.Faults}}<th>{{.}}</th>{{end}}</tr>
{{range .Matrix.Rows}}<tr><td>{{.Policy}}</td><td><b><abbr title="{{.ID.Rule}}">{{.ID.ID}}</abbr></b></td>{{range .Cells}}<td class="num {{.Class}}"{{if .Title}} title="{{.Title}}"{{end}}>{{.Text}}</td>{{end}}</tr>
{{end}}</table>{{end}}
{{.UserLevel}}
<h2>Criteria</h2>
{{if not .Verdicts}}<p>No criteria were evaluated.</p>{{else}}
<p>Overall: <span class="{{.OverallCls}}">&nbsp;{{.Overall}}&nbsp;</span></p>
<table>
<tr><th>policy</th><th>criterion</th><th>status</th><th>observed</th><th>bound</th><th>threshold</th><th>more trials needed</th><th>message</th></tr>
{{range .Verdicts}}<tr><td>{{.Policy}}</td><td>{{.Criterion}}</td><td class="{{.Class}}">{{.Status}}</td><td class="num">{{.Observed}}</td><td class="num">{{.Bound}}</td><td class="num">{{.Threshold}}</td><td class="num">{{if .More}}{{.More}}{{end}}</td><td>{{.Message}}</td></tr>
{{end}}</table>
{{range .VerdictWarns}}<p class="warn">⚠ {{.}}</p>{{end}}{{end}}

<h2>Notable findings</h2>
{{if not .Findings}}<p>None.</p>{{end}}
{{range .Findings}}<div class="finding {{.Class}}">
<h3>{{.Title}}</h3>
<p><small>{{.Trials}} · <code>{{.Explain}}</code></small></p>
<p>{{.Msg}}</p>
{{if .Context}}<p><i>{{.Context}}</i></p>{{end}}
{{if .Excerpt}}<pre>{{.Excerpt}}</pre>{{end}}
</div>
{{end}}{{if .MoreFinding}}<p>… {{.MoreFinding}} more findings in summary.json; {{.EveryFinding}}</p>{{end}}

{{if .Warnings}}<h2>Warnings</h2>
<ul>{{range .Warnings}}<li>{{.}}</li>{{end}}</ul>{{end}}

<h2>Run</h2>
<table class="meta">
{{range .Header}}<tr><th>{{index . 0}}</th><td>{{index . 1}}</td></tr>
{{end}}</table>

{{if .Rules}}<h2>Invariant rules</h2>
<dl class="rules">{{range .Rules}}<dt id="rule-{{.ID}}">{{.ID}}</dt><dd>{{.Rule}} <small>({{.Level}})</small></dd>
{{end}}</dl>{{end}}

<footer>
<h2>How to read this</h2>
<ul>{{range .HowToRead}}<li>{{.}}</li>{{end}}</ul>
</footer>
</body>
</html>
`))
