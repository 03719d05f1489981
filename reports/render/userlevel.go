package render

import (
	"bytes"
	"fmt"
	"html/template"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/sidebench/sidebench/reports/stats"
)

// UserLevel is the user-level section of a report: how often each
// policy — the native design, the workarounds people ran before it, no
// sidecar support — gave the user what a sidecar is for
// (harness/check's Level USER guarantees), per fault kind. It is filled
// by the runner from pods.jsonl (each pod's unmet guarantees and the
// fault kinds that touched it), once; report.md and report.html render it.
type UserLevel struct {
	// Guarantees in report order.
	Guarantees []UserGuarantee
	// Policies in report order; Strata are "no fault", each fault kind
	// that alone touched a pod, "several faults", then "all".
	Policies []string
	Strata   []string
	Cells    []UserCell
	// Startup is the startup cost per policy and workload (pods no fault
	// touched), when the scenario compares workarounds; otherwise the
	// section shows the Latency section's per-policy numbers.
	Startup []UserStartup
}

// UserStartup is one workload's startup latency under one policy.
type UserStartup struct {
	Policy, Workload, Metric string
	N                        int
	P50, P90                 stats.Summary
}

// UserGuarantee is one user-level guarantee.
type UserGuarantee struct{ ID, Rule string }

// UserCell counts, for one policy and stratum, the pods (N) and those
// that did not get a guarantee (K).
type UserCell struct {
	Policy, Stratum, ID string
	K, N                int
}

// Strata names.
const (
	StratumNoFault = "no fault"
	StratumSeveral = "several faults"
	StratumAll     = "all"
)

// Cell returns the cell of a policy, stratum and guarantee (zero if none).
func (u *UserLevel) Cell(policy, stratum, id string) UserCell {
	for _, c := range u.Cells {
		if c.Policy == policy && c.Stratum == stratum && c.ID == id {
			return c
		}
	}
	return UserCell{Policy: policy, Stratum: stratum, ID: id}
}

// userRate formats k/n with its rate and Clopper–Pearson 95% interval.
// Rate is the cell's rate of unmet guarantees with its Clopper–Pearson
// interval (report.md, report.html and summary.json show this one).
func (c UserCell) Rate() stats.RateSummary {
	return stats.Rate(c.K, c.N, DefaultConfidence)
}

func userRate(c UserCell) string {
	if c.N == 0 {
		return "·"
	}
	r := c.Rate()
	return fmt.Sprintf("%d/%d %s [%s, %s]", c.K, c.N, fmtPct(r.Rate), fmtPct(r.CPLo), fmtPct(r.CPHi))
}

// UserStartupMetrics are the startup cost the section compares.
var UserStartupMetrics = []string{"pod_startup", "sidecar_gate"}

// startupRows returns the startup table: rows of label cells, then n,
// p50, p90 per metric.
func (u *UserLevel) startupRows(d RunData) (head []string, rows [][]string) {
	if len(u.Startup) == 0 {
		head = []string{"policy"}
		for _, pol := range u.Policies {
			row := []string{pol}
			for _, m := range UserStartupMetrics {
				if l, ok := latencyOf(d, pol, m); ok {
					row = append(row, fmt.Sprint(l.N), fmtSummary(l.P50), fmtSummary(l.P90))
				} else {
					row = append(row, "0", "·", "·")
				}
			}
			rows = append(rows, row)
		}
		return head, rows
	}
	head = []string{"workload", "policy"}
	var wls []string
	for _, s := range u.Startup {
		if !slices.Contains(wls, s.Workload) {
			wls = append(wls, s.Workload)
		}
	}
	slices.Sort(wls)
	for _, wl := range wls {
		for _, pol := range u.Policies {
			row := []string{wl, pol}
			for _, m := range UserStartupMetrics {
				found := false
				for _, s := range u.Startup {
					if s.Policy == pol && s.Workload == wl && s.Metric == m {
						row = append(row, fmt.Sprint(s.N), fmtSummary(s.P50), fmtSummary(s.P90))
						found = true
					}
				}
				if !found {
					row = append(row, "0", "·", "·")
				}
			}
			rows = append(rows, row)
		}
	}
	return head, rows
}

// nativeStillFails lists, for each policy that is not a workaround and
// not none, the strata and guarantees where it did not give the user what
// it wanted: where native sidecars still fail.
func (u *UserLevel) nativeStillFails() []string {
	var out []string
	for _, pol := range u.Policies {
		if strings.HasPrefix(pol, "workaround:") || pol == "none" {
			continue
		}
		for _, s := range u.Strata {
			if s == StratumAll {
				continue
			}
			for _, g := range u.Guarantees {
				if c := u.Cell(pol, s, g.ID); c.K > 0 {
					out = append(out, fmt.Sprintf("`%s` under %s: %s %s", pol, s, g.ID, userRate(c)))
				}
			}
		}
	}
	return out
}

const userStartupIntro = "Pods no fault touched. pod_startup ends when every application started (a wrapper's exec, not its container's start); sidecar_gate is the last sidecar start (the kubelet's Started) → the first application start, absent where an application started before the kubelet saw every sidecar started. Per workload when the scenario compares workarounds, otherwise the Latency section's per-policy populations."

const userLevelIntro = "Each cell is pods that did not get the guarantee / pods in the stratum, the rate and its Clopper–Pearson 95% interval. A fault kind's stratum holds the pods that kind, and no other, took effect on; \"no fault\" the pods no fault touched, \"several faults\" those two kinds or more touched. These guarantees are what the user of a sidecar wanted, judged the same way for every policy; Kubernetes promises none of them, so they change no verdict (docs/checker.md)."

// writeUserLevelMarkdown renders the section into report.md.
func writeUserLevelMarkdown(p func(string, ...any), d RunData) {
	u := d.UserLevel
	if u == nil || len(u.Cells) == 0 {
		return
	}
	p("## User-level guarantees by fault kind\n\n%s\n\n", userLevelIntro)
	for _, g := range u.Guarantees {
		p("- **%s**: %s\n", g.ID, mdCell(g.Rule))
	}
	p("\n")
	cols := make([]string, len(u.Guarantees))
	for i, g := range u.Guarantees {
		cols[i] = g.ID
	}
	p("| fault kind | policy | %s |\n|---|---|%s\n", strings.Join(cols, " | "), strings.Repeat("---:|", len(cols)))
	for _, s := range u.Strata {
		for _, pol := range u.Policies {
			cells := make([]string, len(u.Guarantees))
			for i, g := range u.Guarantees {
				cells[i] = userRate(u.Cell(pol, s, g.ID))
			}
			p("| %s | %s | %s |\n", s, pol, strings.Join(cells, " | "))
		}
	}
	p("\n### Startup cost\n\n%s\n\n", userStartupIntro)
	head, rows := u.startupRows(d)
	p("| %s | pod_startup n | p50 ms [95%% CI] | p90 ms [95%% CI] | sidecar_gate n | p50 ms [95%% CI] | p90 ms [95%% CI] |\n|%s---:|---:|---:|---:|---:|---:|\n",
		strings.Join(head, " | "), strings.Repeat("---|", len(head)))
	for _, row := range rows {
		p("| %s |\n", strings.Join(row, " | "))
	}
	p("\n### Where the native design still fails\n\n")
	fails := u.nativeStillFails()
	if len(fails) == 0 {
		p("Nowhere in this run.\n\n")
	}
	for _, f := range fails {
		p("- %s\n", f)
	}
	if len(fails) > 0 {
		p("\n")
	}
}

func latencyOf(d RunData, pol, metric string) (Latency, bool) {
	for _, l := range d.Latencies {
		if l.Policy == pol && l.Metric == metric {
			return l, true
		}
	}
	return Latency{}, false
}

// userLevelHTML renders the section for report.html: the figure (one
// panel per guarantee: the rate per fault kind and policy with its
// Clopper–Pearson interval), the table and the startup cost.
func userLevelHTML(d RunData) (template.HTML, error) {
	u := d.UserLevel
	if u == nil || len(u.Cells) == 0 {
		return "", nil
	}
	var b bytes.Buffer
	e := template.HTMLEscapeString
	fmt.Fprintf(&b, "<h2>User-level guarantees by fault kind</h2>\n<p>%s</p>\n<ul>", e(userLevelIntro))
	for _, g := range u.Guarantees {
		fmt.Fprintf(&b, "<li><b>%s</b>: %s</li>", e(g.ID), e(g.Rule))
	}
	b.WriteString("</ul>\n")
	// One key for the three figures, under them (never over the data):
	// each policy keeps its colour and glyph of the report's figures.
	var key strings.Builder
	key.WriteString(`<p class="key">`)
	for i, pol := range u.Policies {
		k := policyKey(i, pol, false)
		fmt.Fprintf(&key, `<span style="color:%s">%s %s</span> `, e(k.Color), e(k.Symbol), e(pol))
	}
	key.WriteString("</p>\n")
	for _, g := range u.Guarantees {
		svg, err := userLevelPlot(u, g)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "<figure>\n%s\n%s<figcaption>%s: share of pods that did not get it, per fault kind and policy (glyph) with its Clopper–Pearson 95%% interval (bar).</figcaption>\n</figure>\n", svg, key.String(), e(g.ID))
	}
	b.WriteString("<table>\n<tr><th>fault kind</th><th>policy</th>")
	for _, g := range u.Guarantees {
		fmt.Fprintf(&b, "<th>%s</th>", e(g.ID))
	}
	b.WriteString("</tr>\n")
	for _, s := range u.Strata {
		for _, pol := range u.Policies {
			fmt.Fprintf(&b, "<tr><td>%s</td><td>%s</td>", e(s), e(pol))
			for _, g := range u.Guarantees {
				c := u.Cell(pol, s, g.ID)
				cls := ""
				if c.K > 0 {
					cls = ` class="num bound"`
				} else {
					cls = ` class="num"`
				}
				fmt.Fprintf(&b, "<td%s>%s</td>", cls, e(userRate(c)))
			}
			b.WriteString("</tr>\n")
		}
	}
	fmt.Fprintf(&b, "</table>\n<h3>Startup cost</h3>\n<p>%s</p>\n<table>\n<tr>", e(userStartupIntro))
	head, rows := u.startupRows(d)
	for _, h := range head {
		fmt.Fprintf(&b, "<th>%s</th>", e(h))
	}
	b.WriteString("<th>pod_startup n</th><th>p50 ms [95% CI]</th><th>p90 ms [95% CI]</th><th>sidecar_gate n</th><th>p50 ms [95% CI]</th><th>p90 ms [95% CI]</th></tr>\n")
	for _, row := range rows {
		b.WriteString("<tr>")
		for i, c := range row {
			if i < len(head) {
				fmt.Fprintf(&b, "<td>%s</td>", e(c))
			} else {
				fmt.Fprintf(&b, `<td class="num">%s</td>`, e(c))
			}
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table>\n<h3>Where the native design still fails</h3>\n")
	fails := u.nativeStillFails()
	if len(fails) == 0 {
		b.WriteString("<p>Nowhere in this run.</p>\n")
	} else {
		b.WriteString("<ul>")
		for _, f := range fails {
			fmt.Fprintf(&b, "<li>%s</li>", e(strings.ReplaceAll(f, "`", "")))
		}
		b.WriteString("</ul>\n")
	}
	return template.HTML(b.String()), nil
}

// userLevelPlot draws one guarantee: x is the fault stratum, each policy
// a dot (the rate) with a vertical bar (its Clopper–Pearson interval),
// offset within the stratum so that the policies sit side by side.
func userLevelPlot(u *UserLevel, g UserGuarantee) (string, error) {
	p := newPlot(g.ID, "fault kind", "pods without it")
	p.Y.Min, p.Y.Max = 0, 1
	n := len(u.Policies)
	width := 0.8
	for i, pol := range u.Policies {
		var pts plotter.XYs
		var errs plotter.YErrors
		for s, st := range u.Strata {
			c := u.Cell(pol, st, g.ID)
			if c.N == 0 {
				continue
			}
			rs := c.Rate()
			r := rs.Rate
			x := float64(s) - width/2 + width*(float64(i)+0.5)/float64(n)
			pts = append(pts, plotter.XY{X: x, Y: r})
			errs = append(errs, struct{ Low, High float64 }{r - rs.CPLo, rs.CPHi - r})
		}
		if len(pts) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return "", err
		}
		st := styleOf(i)
		col := st.color
		sc.GlyphStyle.Color, sc.GlyphStyle.Radius, sc.GlyphStyle.Shape = col, vg.Points(2.5), st.glyph
		eb, err := plotter.NewYErrorBars(struct {
			plotter.XYs
			plotter.YErrors
		}{pts, errs})
		if err != nil {
			return "", err
		}
		eb.LineStyle.Color, eb.LineStyle.Width, eb.CapWidth = col, vg.Points(1), vg.Points(3)
		p.Add(eb, sc)
	}
	p.X.Tick.Label.Rotation = math.Pi / 7
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	p.X.Min, p.X.Max = -0.5, float64(len(u.Strata))-0.5
	ticks := make([]plot.Tick, len(u.Strata))
	for s, st := range u.Strata {
		ticks[s] = plot.Tick{Value: float64(s), Label: st}
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Tick.Marker = plot.ConstantTicks([]plot.Tick{{Value: 0, Label: "0%"}, {Value: 0.25, Label: "25%"}, {Value: 0.5, Label: "50%"}, {Value: 0.75, Label: "75%"}, {Value: 1, Label: "100%"}})
	w := vg.Length(math.Max(720, float64(100*len(u.Strata)))) * vg.Inch / 96
	return svgOf(p, w, vg.Length(380)*vg.Inch/96)
}

// sortStrata orders strata: no fault first, fault kinds by name, all last.
func sortStrata(s []string) {
	slices.SortFunc(s, func(a, b string) int {
		rank := func(x string) int {
			switch x {
			case StratumNoFault:
				return 0
			case StratumSeveral:
				return 2
			case StratumAll:
				return 3
			}
			return 1
		}
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
}

// SortStrata orders strata for a report (no fault, the fault kinds by
// name, all).
func SortStrata(s []string) { sortStrata(s) }
