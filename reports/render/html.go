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
	Policy string
	Rows   []htmlLatencyRow
}

type htmlLatencyRow struct {
	Metric             string
	N, FaultedExcluded int
	P50, P90, P99      string
	Warnings           []string
}

type htmlInvRow struct {
	Policy, ID, Rule, Level                        string
	Checked, Violations, Degradations, Bounds, Unk int
	Rate, Wilson, CP                               string
	Class                                          string
}

type htmlMatrix struct {
	Faults []string
	Rows   []htmlMatrixRow
}

type htmlMatrixRow struct {
	Policy, ID string
	Cells      []htmlMatrixCell
}

type htmlMatrixCell struct {
	Text, Class, Title string
}

type htmlVerdict struct {
	Policy, Criterion, Status, Class string
	Observed, Bound, Threshold       string
	More                             int
	Message                          string
	Warnings                         []string
}

type htmlFinding struct {
	Title, Class, Msg, Context string
	Excerpt                    string
}

type htmlTimeline struct {
	Title string
	SVG   template.HTML
}

type htmlPage struct {
	Scenario    string
	Partial     bool
	Header      [][2]string
	Latencies   []htmlLatencyTable
	ECDF        template.HTML
	ECDFMetric  string
	Invariants  []htmlInvRow
	Matrix      htmlMatrix
	UserLevel   template.HTML
	Overall     string
	OverallCls  string
	Verdicts    []htmlVerdict
	Timelines   []htmlTimeline
	Findings    []htmlFinding
	MoreFinding int
	Warnings    []string
	HowToRead   []string
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
	return ""
}

func htmlView(d RunData) (htmlPage, error) {
	pg := htmlPage{Scenario: d.Scenario, Partial: d.Meta.Partial, Header: headerRows(d), Warnings: d.Warnings, HowToRead: howToRead}
	for _, pol := range d.Policies {
		t := htmlLatencyTable{Policy: pol}
		for _, l := range d.Latencies {
			if l.Policy != pol {
				continue
			}
			r := htmlLatencyRow{Metric: l.Metric, N: l.N, FaultedExcluded: l.FaultedExcluded,
				P50: fmtSummary(l.P50), P90: fmtSummary(l.P90), P99: fmtSummary(l.P99)}
			for _, q := range []struct {
				name string
				ws   []string
			}{{"p50", l.P50.Warnings}, {"p90", l.P90.Warnings}, {"p99", l.P99.Warnings}} {
				for _, x := range q.ws {
					r.Warnings = append(r.Warnings, q.name+": "+x)
				}
			}
			t.Rows = append(t.Rows, r)
		}
		if len(t.Rows) > 0 {
			pg.Latencies = append(pg.Latencies, t)
		}
	}
	if m := ecdfMetric(d); m != "" {
		svg, err := ecdfSVG(d, m)
		if err != nil {
			return pg, fmt.Errorf("ecdf: %w", err)
		}
		pg.ECDF, pg.ECDFMetric = template.HTML(svg), m
	}
	ul, err := userLevelHTML(d)
	if err != nil {
		return pg, fmt.Errorf("user-level guarantees: %w", err)
	}
	pg.UserLevel = ul
	for _, r := range d.Invariants {
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
		pg.Invariants = append(pg.Invariants, htmlInvRow{Policy: r.Policy, ID: r.ID, Rule: r.Rule, Level: r.Level,
			Checked: r.Checked, Violations: r.Violations, Degradations: r.Degradations, Bounds: r.BoundsExceeded, Unk: r.Unknown,
			Rate: fmtPct(rs.Rate), Wilson: fmtPct(rs.WilsonHi), CP: fmtPct(rs.CPHi), Class: cls})
	}
	pg.Matrix.Faults = faultColumns(d.Matrix)
	for _, row := range matrixRows(d.Matrix) {
		hr := htmlMatrixRow{Policy: row.policy, ID: row.id}
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
			Message: v.Message, Warnings: v.Warnings})
	}
	for _, t := range d.Timelines {
		g := BuildGantt(t.Events)
		if g.Pod == "" {
			g.Pod = t.Pod
		}
		svg, err := GanttSVG(g, "")
		if err != nil {
			return pg, fmt.Errorf("timeline %s: %w", t.Pod, err)
		}
		if svg == "" {
			continue
		}
		h := t.Pod
		if t.Policy != "" {
			h += " — policy " + t.Policy
		}
		if t.Why != "" {
			h += " — " + t.Why
		}
		pg.Timelines = append(pg.Timelines, htmlTimeline{Title: h, SVG: template.HTML(svg)})
	}
	for i := range d.Findings {
		if i == MaxFindings {
			pg.MoreFinding = len(d.Findings) - MaxFindings
			break
		}
		f := &d.Findings[i]
		cls := map[string]string{ClassViolation: "viol", ClassDegradation: "degr", ClassBound: "bound"}[f.Class]
		pg.Findings = append(pg.Findings, htmlFinding{Title: findingTitle(f), Class: cls, Msg: f.Msg, Context: findingContext(f),
			Excerpt: strings.Join(excerptLines(f), "\n")})
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
table.meta th{width:9rem}
.viol{background:#f8d0d0}.degr{background:#fde3bf}.bound{background:#fbf4c0}.ok{background:#e2f3e6}.empty{color:#999;text-align:center}
.pass{background:#cfeed6;font-weight:600}.fail{background:#f4c2c2;font-weight:600}.insufficient{background:#fbe9b7;font-weight:600}
.banner{padding:.6rem .8rem;border:2px solid #c00;background:#fde8e8;font-weight:600;margin:1rem 0}
.warn{color:#8a5300}pre{background:#f7f7f7;border:1px solid #e0e0e0;padding:.5rem;overflow-x:auto;font-size:.8rem}
figure{margin:1rem 0}figcaption{font-size:.85rem;color:#444}svg{max-width:100%;height:auto}
svg text{font-family:"Liberation Sans",Arial,Helvetica,sans-serif !important}
.key span{margin-right:1rem;white-space:nowrap}.finding{border-left:4px solid #ccc;padding-left:.8rem;margin:1rem 0}
.finding.viol{border-color:#c00;background:none}.finding.degr{border-color:#d98a00;background:none}.finding.bound{border-color:#c9b400;background:none}
footer{font-size:.85rem;color:#333;margin-top:2rem}
</style>
</head>
<body>
<h1>sidebench report: {{.Scenario}}</h1>
{{if .Partial}}<div class="banner">PARTIAL RUN: the run did not complete; every number below covers only what was recorded.</div>{{end}}
<table class="meta">
{{range .Header}}<tr><th>{{index . 0}}</th><td>{{index . 1}}</td></tr>
{{end}}</table>

<h2>Latency</h2>
{{if not .Latencies}}<p>No latency samples.</p>{{end}}
{{range .Latencies}}<h3>Policy <code>{{.Policy}}</code></h3>
<table>
<tr><th>metric</th><th>n</th><th>p50 ms [95% CI]</th><th>p90 ms [95% CI]</th><th>p99 ms [95% CI]</th><th>faulted excluded</th></tr>
{{range .Rows}}<tr><td>{{.Metric}}{{range .Warnings}}<div class="warn">⚠ {{.}}</div>{{end}}</td><td class="num">{{.N}}</td><td class="num">{{.P50}}</td><td class="num">{{.P90}}</td><td class="num">{{.P99}}</td><td class="num">{{.FaultedExcluded}}</td></tr>
{{end}}</table>
{{end}}
{{if .ECDF}}<figure>
{{.ECDF}}
<figcaption>Empirical CDF of {{.ECDFMetric}} per policy (step plot): the height at x is the fraction of pods whose latency is ≤ x.</figcaption>
</figure>{{end}}

<h2>Invariants</h2>
{{if not .Invariants}}<p>No checker results.</p>{{else}}
<table>
<tr><th>policy</th><th>invariant</th><th>level</th><th>pods checked</th><th>violations</th><th>degradations</th><th>bounds exceeded</th><th>unknown</th><th>violation rate</th><th>Wilson 95% upper</th><th>Clopper–Pearson 95% upper</th></tr>
{{range .Invariants}}<tr class="{{.Class}}"><td>{{.Policy}}</td><td><b>{{.ID}}</b>{{if .Rule}}: {{.Rule}}{{end}}</td><td>{{.Level}}</td><td class="num">{{.Checked}}</td><td class="num">{{.Violations}}</td><td class="num">{{.Degradations}}</td><td class="num">{{.Bounds}}</td><td class="num">{{.Unk}}</td><td class="num">{{.Rate}}</td><td class="num">{{.Wilson}}</td><td class="num">{{.CP}}</td></tr>
{{end}}</table>{{end}}

<h2>Violations and degradations by fault</h2>
{{if not .Matrix.Rows}}<p>No findings under any fault.</p>{{else}}
<p>Each cell: violations / degradations / bounds exceeded of the invariant, attributed to the nearest preceding fault (“none”: no fault came before). Only invariants with findings are listed.</p>
<table>
<tr><th>policy</th><th>invariant</th>{{range .Matrix.Faults}}<th>{{.}}</th>{{end}}</tr>
{{range .Matrix.Rows}}<tr><td>{{.Policy}}</td><td><b>{{.ID}}</b></td>{{range .Cells}}<td class="num {{.Class}}"{{if .Title}} title="{{.Title}}"{{end}}>{{.Text}}</td>{{end}}</tr>
{{end}}</table>{{end}}
{{.UserLevel}}
<h2>Graduation</h2>
{{if not .Verdicts}}<p>No graduation criteria were evaluated.</p>{{else}}
<p>Overall: <span class="{{.OverallCls}}">&nbsp;{{.Overall}}&nbsp;</span></p>
<table>
<tr><th>policy</th><th>criterion</th><th>status</th><th>observed</th><th>bound</th><th>threshold</th><th>more trials needed</th><th>message</th></tr>
{{range .Verdicts}}<tr><td>{{.Policy}}</td><td>{{.Criterion}}</td><td class="{{.Class}}">{{.Status}}</td><td class="num">{{.Observed}}</td><td class="num">{{.Bound}}</td><td class="num">{{.Threshold}}</td><td class="num">{{if .More}}{{.More}}{{end}}</td><td>{{.Message}}{{range .Warnings}}<div class="warn">⚠ {{.}}</div>{{end}}</td></tr>
{{end}}</table>{{end}}

{{if .Timelines}}<h2>Timelines</h2>
<p class="key"><span style="color:#999">▬ init</span><span style="color:#0072B2">▬ sidecar</span><span style="color:#009E73">▬ main</span> (bar: running → exit)
<span>○ started</span><span style="color:#009E73">● probe ok</span><span style="color:#D55E00">✕ probe failed</span><span style="color:#E69F00">▲ SIGTERM</span><span style="color:#C00000">■ SIGKILL</span>
<span style="color:#CC79A7">╎ fault begin/effect/end</span><span>╎ pod deleted</span><span style="color:#808080">┆ node/kubelet/runtime</span></p>
{{range .Timelines}}<figure>
<figcaption><b>{{.Title}}</b></figcaption>
{{.SVG}}
</figure>
{{end}}{{end}}

<h2>Notable findings</h2>
{{if not .Findings}}<p>None.</p>{{end}}
{{range .Findings}}<div class="finding {{.Class}}">
<h3>{{.Title}}</h3>
<p>{{.Msg}}</p>
{{if .Context}}<p><i>{{.Context}}</i></p>{{end}}
{{if .Excerpt}}<pre>{{.Excerpt}}</pre>{{end}}
</div>
{{end}}{{if .MoreFinding}}<p>… {{.MoreFinding}} more findings in summary.json.</p>{{end}}

{{if .Warnings}}<h2>Warnings</h2>
<ul>{{range .Warnings}}<li>{{.}}</li>{{end}}</ul>{{end}}

<footer>
<h2>How to read this</h2>
<ul>{{range .HowToRead}}<li>{{.}}</li>{{end}}</ul>
</footer>
</body>
</html>
`))
