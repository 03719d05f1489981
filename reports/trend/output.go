package trend

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/sidebench/sidebench/reports/render"
	"github.com/sidebench/sidebench/reports/stats"
)

// Files written by `sidebench trend`.
const (
	MarkdownFile = "trend.md"
	HTMLFile     = "trend.html"
)

func fmtPct(x float64) string {
	if math.IsNaN(x) {
		return "n/a"
	}
	if x == 0 {
		return "0%"
	}
	return strconv.FormatFloat(100*x, 'g', 3, 64) + "%"
}

func fmtCI(s stats.Summary) string {
	if s.N == 0 || math.IsNaN(s.Center) {
		return "-"
	}
	end := func(v float64) string {
		if math.IsInf(v, 0) {
			if v > 0 {
				return "+∞"
			}
			return "−∞"
		}
		return fmtMs(v)
	}
	return fmt.Sprintf("%s [%s, %s]", fmtMs(s.Center), end(s.Lo), end(s.Hi))
}

func (p Point) change() string {
	var parts []string
	if p.ScenarioChanged {
		parts = append(parts, "scenario changed")
	}
	if len(p.Changes) > 0 {
		tag := "CHANGED"
		if p.Regression {
			tag = "REGRESSED"
		}
		parts = append(parts, tag+": "+strings.Join(p.Changes, "; "))
	}
	if len(parts) == 0 {
		return "~"
	}
	return strings.Join(parts, "; ")
}

func (t *Table) nightStatus(i int) string {
	if t.Nights[i].Partial {
		return "partial"
	}
	return "complete"
}

// WriteMarkdown writes trend.md.
func (t *Table) WriteMarkdown(w io.Writer) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# sidebench trend\n\n%s, oldest first. Per judged policy: lifecycles, pods with a violation, the violation rate with its one-sided %v Clopper–Pearson upper bound, and pod_startup p50 and p99 (ms, faulted pods excluded) with %v distribution-free intervals. ",
		nightsText(len(t.Nights)), t.Confidence, t.Confidence)
	fmt.Fprintf(&b, "A night is compared with the one before by `sidebench compare`'s tests: pod_startup by Mann–Whitney U (α=%v) and a median change above %.4g%%, the p99 by disjoint intervals and a change above %.4g%%, violation rates by disjoint Wilson intervals; `~`: no significant change.\n\n",
		t.Alpha, 100*t.Threshold, 100*t.Threshold)
	b.WriteString("## Nights\n\n| # | started (UTC) | run directory | version (revision) | status |\n|---|---|---|---|---|\n")
	for i, n := range t.Nights {
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s |\n", i+1, n.Start, n.Dir, n.build(), t.nightStatus(i))
	}
	for _, s := range t.Series {
		fmt.Fprintf(&b, "\n## %s / %s\n\n| # | started | lifecycles | violating | rate | CP upper | p50 ms [CI] | p99 ms [CI] | vs previous night |\n|---|---|---|---|---|---|---|---|---|\n", s.Scenario, s.Policy)
		for _, p := range s.Points {
			fmt.Fprintf(&b, "| %d | %s | %d | %d | %s | %s | %s | %s | %s |\n", p.Night+1, t.Nights[p.Night].Start, p.Lifecycles, p.Violating,
				fmtPct(p.Rate), fmtPct(p.CPUpper), fmtCI(p.P50), fmtCI(p.P99), strings.ReplaceAll(p.change(), "|", `\|`))
		}
	}
	b.WriteString("\n## Newest night\n\n")
	switch {
	case len(t.Nights) < 2:
		b.WriteString("Only one night: nothing to compare yet.\n")
	case t.Regressed:
		b.WriteString("**REGRESSED** against the night before:\n\n")
		for _, r := range t.Regressions {
			fmt.Fprintf(&b, "- %s\n", r)
		}
	default:
		b.WriteString("No regression against the night before.\n")
	}
	if len(t.Warnings) > 0 {
		b.WriteString("\n## Warnings\n\n")
		for _, x := range t.Warnings {
			fmt.Fprintf(&b, "- %s\n", x)
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

type htmlSeries struct {
	Title          string
	Startup, Rates template.HTML
	Rows           []htmlRow
}

type htmlRow struct {
	Night, Start, Lifecycles, Violating, Rate, CP, P50, P99, Change string
	Class                                                           string
}

// WriteHTML writes trend.html: the tables of trend.md with, per series,
// an inline SVG of pod_startup p50 and p99 with their intervals and one
// of the violation rate with its upper bound, changed nights ringed.
func (t *Table) WriteHTML(w io.Writer) error {
	labels := make([]string, len(t.Nights))
	for i := range t.Nights {
		labels[i] = fmt.Sprintf("%d", i+1)
	}
	type night struct {
		Label string
		NightLabel
	}
	var view struct {
		Nights                []night
		Series                []htmlSeries
		Regressed, Comparable bool
		Regressions, Warnings []string
		Intro                 string
	}
	for i, n := range t.Nights {
		view.Nights = append(view.Nights, night{labels[i], n})
	}
	view.Regressed, view.Regressions, view.Warnings = t.Regressed, t.Regressions, t.Warnings
	view.Comparable = len(t.Nights) >= 2
	view.Intro = fmt.Sprintf("%s, oldest first; nights are numbered as in the first table. Intervals are %v; a ringed point changed significantly from the night before (sidebench compare's tests).", nightsText(len(t.Nights)), t.Confidence)
	for _, s := range t.Series {
		nan := func() []float64 {
			x := make([]float64, len(t.Nights))
			for i := range x {
				x[i] = math.NaN()
			}
			return x
		}
		p50, p99, rate := render.TrendLine{Name: "p50", Y: nan(), Lo: nan(), Hi: nan(), Flag: make([]bool, len(t.Nights))},
			render.TrendLine{Name: "p99", Y: nan(), Lo: nan(), Hi: nan(), Flag: make([]bool, len(t.Nights))},
			render.TrendLine{Name: "violation rate (bar: CP upper bound)", Y: nan(), Lo: nan(), Hi: nan(), Flag: make([]bool, len(t.Nights))}
		hs := htmlSeries{Title: s.Scenario + " / " + s.Policy}
		for _, p := range s.Points {
			i := p.Night
			p50.Y[i], p50.Lo[i], p50.Hi[i], p50.Flag[i] = p.P50.Center, p.P50.Lo, p.P50.Hi, len(p.Changes) > 0
			p99.Y[i], p99.Lo[i], p99.Hi[i], p99.Flag[i] = p.P99.Center, p.P99.Lo, p.P99.Hi, len(p.Changes) > 0
			rate.Y[i], rate.Lo[i], rate.Hi[i], rate.Flag[i] = 100*p.Rate, 100*p.Rate, 100*p.CPUpper, len(p.Changes) > 0
			cls := ""
			if p.Regression {
				cls = "regressed"
			} else if len(p.Changes) > 0 {
				cls = "changed"
			}
			hs.Rows = append(hs.Rows, htmlRow{Night: labels[i], Start: t.Nights[i].Start, Lifecycles: strconv.Itoa(p.Lifecycles), Violating: strconv.Itoa(p.Violating),
				Rate: fmtPct(p.Rate), CP: fmtPct(p.CPUpper), P50: fmtCI(p.P50), P99: fmtCI(p.P99), Change: p.change(), Class: cls})
		}
		svg, err := render.TrendSVG("pod_startup "+hs.Title, "ms", labels, []render.TrendLine{p50, p99})
		if err != nil {
			return err
		}
		hs.Startup = template.HTML(svg)
		if svg, err = render.TrendSVG("violation rate "+hs.Title, "% of lifecycles", labels, []render.TrendLine{rate}); err != nil {
			return err
		}
		hs.Rates = template.HTML(svg)
		view.Series = append(view.Series, hs)
	}
	return trendPage.Execute(w, view)
}

var trendPage = template.Must(template.New("trend").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>sidebench trend</title>
<style>
body{font-family:"Liberation Sans",Arial,Helvetica,sans-serif;max-width:70rem;margin:1rem auto;padding:0 1rem;color:#111}
table{border-collapse:collapse;margin:.5rem 0}th,td{border:1px solid #bbb;padding:.2rem .5rem;text-align:left;font-size:.9rem}
tr.regressed td{background:#fbe3e3}tr.changed td{background:#fff4d6}
figure{margin:1rem 0}svg{max-width:100%;height:auto}svg text{font-family:"Liberation Sans",Arial,Helvetica,sans-serif !important}
.bad{color:#a00;font-weight:bold}.good{color:#060}
</style>
</head>
<body>
<h1>sidebench trend</h1>
<p>{{.Intro}}</p>
<table>
<tr><th>#</th><th>started (UTC)</th><th>run directory</th><th>version</th><th>revision</th><th>status</th></tr>
{{range .Nights}}<tr><td>{{.Label}}</td><td>{{.Start}}</td><td>{{.Dir}}</td><td>{{.Version}}</td><td><code>{{.Revision}}</code>{{if .Modified}} (modified){{end}}</td><td>{{if .Partial}}partial{{else}}complete{{end}}</td></tr>
{{end}}</table>
<h2>Newest night</h2>
{{if not .Comparable}}<p>Only one night: nothing to compare yet.</p>{{else if .Regressed}}<p class="bad">REGRESSED against the night before:</p>
<ul>{{range .Regressions}}<li>{{.}}</li>{{end}}</ul>{{else}}<p class="good">No regression against the night before.</p>{{end}}
{{range .Series}}<h2>{{.Title}}</h2>
<table>
<tr><th>night</th><th>started</th><th>lifecycles</th><th>violating</th><th>rate</th><th>CP upper</th><th>p50 ms [CI]</th><th>p99 ms [CI]</th><th>vs previous night</th></tr>
{{range .Rows}}<tr class="{{.Class}}"><td>{{.Night}}</td><td>{{.Start}}</td><td>{{.Lifecycles}}</td><td>{{.Violating}}</td><td>{{.Rate}}</td><td>{{.CP}}</td><td>{{.P50}}</td><td>{{.P99}}</td><td>{{.Change}}</td></tr>
{{end}}</table>
{{if .Startup}}<figure>{{.Startup}}</figure>{{end}}
{{if .Rates}}<figure>{{.Rates}}</figure>{{end}}
{{end}}
{{if .Warnings}}<h2>Warnings</h2><ul>{{range .Warnings}}<li>{{.}}</li>{{end}}</ul>{{end}}
</body>
</html>
`))

// nightsText is "1 night" or "N nights".
func nightsText(n int) string {
	if n == 1 {
		return "1 night"
	}
	return fmt.Sprintf("%d nights", n)
}
