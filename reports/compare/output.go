package compare

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/sidebench/sidebench/reports/render"
	"github.com/sidebench/sidebench/reports/stats"
)

func fmtMs(v float64) string {
	switch {
	case math.IsNaN(v):
		return "n/a"
	case math.IsInf(v, 0):
		return "∞"
	}
	a := math.Abs(v)
	switch {
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func fmtPct(x float64) string {
	if math.IsNaN(x) {
		return "n/a"
	}
	if x == 0 {
		return "0%"
	}
	s := strconv.FormatFloat(x*100, 'g', 3, 64)
	if strings.Contains(s, "e") {
		s = strings.TrimRight(strings.TrimRight(strconv.FormatFloat(x*100, 'f', 6, 64), "0"), ".")
	}
	return s + "%"
}

// fmtChange renders a relative change (a fraction) as "+7.44%".
func fmtChange(x float64) string { return signedPct(x, 2) }

// fmtCI renders an interval of a relative change as "[+5.1%, +9.0%]".
func fmtCI(lo, hi float64) string { return "[" + signedPct(lo, 1) + ", " + signedPct(hi, 1) + "]" }

// signedPct renders a fraction as a signed percentage with prec decimals.
func signedPct(x float64, prec int) string {
	switch {
	case math.IsNaN(x):
		return "?"
	case math.IsInf(x, 0):
		return fmt.Sprintf("%+.0f%%", x) // +Inf%, -Inf%
	}
	return fmt.Sprintf("%+.*f%%", prec, 100*x)
}

// pCmp renders a p-value after "p": "<0.001" or "=0.012".
func pCmp(p float64) string {
	switch {
	case math.IsNaN(p):
		return "=n/a"
	case p < 0.001:
		return "<0.001"
	}
	return "=" + strconv.FormatFloat(p, 'f', 3, 64)
}

func fmtP(p float64) string { return strings.TrimPrefix(pCmp(p), "=") }

func (l RunLabel) String() string {
	s := fmt.Sprintf("scenario=%s seed=%d backend=%s version=%s trials=%d", l.Scenario, l.Seed, l.Backend, l.Version, l.Trials)
	if l.Partial {
		s += " PARTIAL"
	}
	return s
}

// rateCell is "k/n rate [≤upper]" with the two-sided Wilson upper bound.
func rateCell(r *stats.RateSummary) string {
	switch {
	case r == nil:
		return "—"
	case r.N == 0:
		return "no pods"
	}
	return fmt.Sprintf("%d/%d %s [≤%s]", r.K, r.N, fmtPct(r.Rate), fmtPct(r.WilsonHi))
}

// testCell is the test column: "paired +67 -0 =133" or "n=200+200".
func testCell(v *Versus) string {
	if v.Paired {
		return fmt.Sprintf("paired +%d -%d =%d", v.Slower, v.Faster, v.Equal)
	}
	return fmt.Sprintf("n=%d+%d", v.N1, v.N2)
}

// distinct counts the comparisons with run j that Holm corrected over.
func (t *Table) distinct(j int) int {
	n := 0
	for i := range t.Latencies {
		if v := t.Latencies[i].Vs[j-1]; v != nil && v.SameAs == "" && v.Tested {
			n++
		}
	}
	return n
}

func (t *Table) footer() []string {
	var fam []string
	for j := 1; j < len(t.Runs); j++ {
		fam = append(fam, fmt.Sprintf("%d for %s", t.distinct(j), t.Runs[j].Name))
	}
	base := t.Runs[0].Name
	return []string{
		fmt.Sprintf("values: nearest-rank quantiles in ms. vs %s: the quantile's relative change; ~ when p >= α=%v or the %v%% CI contains 0.", base, t.Alpha, 100*t.Confidence),
		fmt.Sprintf("CI: percentile bootstrap of the change (%d resamples, seeded); paired runs resample pods with their partners.", t.Resamples),
		"test: paired = pods matched by scenario, policy, trial, seed and pod name (same scenario and seeds): Wilcoxon signed-rank on the per-pod differences, +slower -faster =equal pods; otherwise Mann–Whitney U on the two samples (n = sizes).",
		fmt.Sprintf("p: Holm-corrected over the distinct samples that can differ (%s); identical samples are one test.", strings.Join(fam, ", ")),
		fmt.Sprintf("rates: pods with a violation/pods checked [two-sided %v%% Wilson upper bound]; ~: the intervals overlap.", 100*t.Confidence),
		fmt.Sprintf("regression: a significant quantile increase above %.4g%% whose CI lies above 0, or a violation rate whose interval lies entirely above %s's.", 100*t.Threshold, base),
	}
}

// regressionMark ends a text row: "REGRESSION" with two runs, else the
// candidates that regressed ("REGRESSION: B, D").
func (t *Table) regressionMark(runs []string) string {
	switch {
	case len(runs) == 0:
		return ""
	case len(t.Runs) == 2:
		return "REGRESSION"
	}
	return "REGRESSION: " + strings.Join(runs, ", ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// hidden reports whether the text and Markdown tables leave r out: its
// samples equal those of an earlier metric of the same policy in every run
// (create_to_ready ≡ pod_startup). Identical rows of other policies stay
// in the table, where a reader looks for them; the footnote names both.
func (r *LatencyRow) hidden() bool {
	return r.SameAs != "" && strings.HasPrefix(r.SameAs, r.Policy+" ")
}

// trimLines drops the trailing blanks tabwriter pads empty last cells with.
func trimLines(b []byte) []byte {
	lines := bytes.Split(b, []byte("\n"))
	for i, l := range lines {
		lines[i] = bytes.TrimRight(l, " ")
	}
	return bytes.Join(lines, []byte("\n"))
}

// folded lists the groups of rows with identical samples in every run,
// "X ≡ Y ≡ Z", in table order.
func (t *Table) folded() []string {
	var out []string
	for i := range t.Latencies {
		r := &t.Latencies[i]
		if r.SameAs != "" {
			continue
		}
		g := []string{r.Name()}
		for k := i + 1; k < len(t.Latencies); k++ {
			if t.Latencies[k].SameAs == r.Name() {
				g = append(g, t.Latencies[k].Name())
			}
		}
		if len(g) > 1 {
			out = append(out, strings.Join(g, " ≡ "))
		}
	}
	return out
}

// rateGroups splits the rate rows into those with a violation in some run
// and, per policy, the number of rows with none anywhere (shown as one
// line, not dozens of zeros).
func (t *Table) rateGroups() (shown []RateRow, zeros []string, zeroCount map[string]int) {
	zeroCount = map[string]int{}
	for _, r := range t.Rates {
		any := false
		for _, x := range r.Runs {
			if x == nil || x.K > 0 || x.N == 0 {
				any = true
			}
		}
		if any {
			shown = append(shown, r)
			continue
		}
		if zeroCount[r.Policy] == 0 {
			zeros = append(zeros, r.Policy)
		}
		zeroCount[r.Policy]++
	}
	return shown, zeros, zeroCount
}

// WriteText writes the comparison as aligned plain text, benchstat style.
func (t *Table) WriteText(w io.Writer) error {
	var b bytes.Buffer
	for _, l := range t.Runs {
		path := ""
		if l.Path != "" {
			path = l.Path + "  "
		}
		line := fmt.Sprintf("%s: %s%s", l.Name, path, l)
		if utf8.RuneCountInString(line) > render.TableWidth {
			// Wrapped like the rest: a long path made the line as wide.
			line = render.Wrap(line, render.TableWidth, "   ")
		}
		b.WriteString(line + "\n")
	}
	b.WriteString("\n")
	base := t.Runs[0].Name
	if len(t.Latencies) > 0 {
		var rows [][]string
		hdr := []string{"policy", "metric", "q", base}
		for _, l := range t.Runs[1:] {
			hdr = append(hdr, l.Name, "vs "+base, "CI", "p", "test")
		}
		rows = append(rows, hdr)
		for i := range t.Latencies {
			r := &t.Latencies[i]
			if r.hidden() {
				continue
			}
			for qi, q := range Quantiles {
				pol, met := r.Policy, r.Metric
				if qi > 0 {
					pol, met = "", ""
				}
				cells := []string{pol, met, fmt.Sprintf("p%g", 100*q), fmtMs(r.Base[qi])}
				var regressed []string
				for _, v := range r.Vs {
					if v == nil {
						cells = append(cells, "—", "", "", "", "")
						continue
					}
					c := v.Quantiles[qi]
					p, test := "", ""
					if qi == 0 {
						p, test = fmtP(v.P), testCell(v)
					}
					cells = append(cells, fmtMs(c.B), c.Delta, fmtCI(c.Lo, c.Hi), p, test)
					if c.Regression {
						regressed = append(regressed, t.Runs[v.Run].Name)
					}
				}
				rows = append(rows, append(cells, t.regressionMark(regressed)))
			}
		}
		for _, g := range t.Geomean {
			label := ""
			if g.Q == Quantiles[0] {
				label = "geomean"
			}
			cells := []string{label, fmt.Sprintf("(%d distinct)", g.Rows), fmt.Sprintf("p%g", 100*g.Q), fmtMs(g.Values[0])}
			for k := range g.Changes {
				cells = append(cells, fmtMs(g.Values[k+1]), fmtChange(g.Changes[k]), "", "", "")
			}
			rows = append(rows, cells)
		}
		writeGrouped(&b, rows)
		if f := t.folded(); len(f) > 0 {
			b.WriteString("\nidentical samples, tested once:\n")
			for _, g := range f {
				b.WriteString("  " + render.Wrap(g, render.TableWidth-2, "      ") + "\n")
			}
		}
		b.WriteString("\n")
	}
	if len(t.Rates) > 0 {
		shown, zeros, zc := t.rateGroups()
		var rows [][]string
		hdr := []string{"policy", "invariant", base}
		for _, l := range t.Runs[1:] {
			hdr = append(hdr, l.Name, "vs "+base)
		}
		rows = append(rows, hdr)
		for _, r := range shown {
			cells := []string{r.Policy, r.ID, rateCell(r.Runs[0])}
			for k, d := range r.Deltas {
				cells = append(cells, rateCell(r.Runs[k+1]), d)
			}
			var regressed []string
			for k, d := range r.Deltas {
				if d == "worse" {
					regressed = append(regressed, t.Runs[k+1].Name)
				}
			}
			rows = append(rows, append(cells, t.regressionMark(regressed)))
		}
		for _, p := range zeros {
			rows = append(rows, []string{p, plural(zc[p], "invariant") + ": 0 violations in every run"})
		}
		writeGrouped(&b, rows)
		b.WriteString("\n")
	}
	for _, l := range t.footer() {
		b.WriteString(render.Wrap(l, render.TableWidth, "  ") + "\n")
	}
	writeVerdict(&b, t, "")
	_, err := w.Write(trimLines(b.Bytes()))
	return err
}

func writeVerdict(b *bytes.Buffer, t *Table, bullet string) {
	// Text (no bullet) is wrapped at the table's width; Markdown's lines
	// are the renderer's to wrap.
	line := func(format string, args ...any) {
		s := fmt.Sprintf(format, args...)
		if bullet == "" {
			s = render.Wrap(s, render.TableWidth, "  ")
		}
		b.WriteString(s + "\n")
	}
	b.WriteString("\n")
	for _, x := range t.Warnings {
		line("%swarning: %s", bullet, x)
	}
	for i := range t.Latencies {
		r := &t.Latencies[i]
		for _, v := range r.Vs {
			if v == nil || v.SameAs != "" {
				continue
			}
			who := r.Name()
			if len(t.Runs) > 2 {
				who = t.Runs[v.Run].Name + " vs " + t.Runs[0].Name + ": " + who
			}
			for _, x := range v.Warnings {
				line("%swarning: %s: %s", bullet, who, x)
			}
		}
	}
	if !t.RegressionFound {
		line("%sno regression", bullet)
		return
	}
	for _, x := range t.Regressions {
		line("%sREGRESSION: %s", bullet, x)
	}
}

func mdCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// WriteMarkdown writes the comparison as Markdown tables.
func (t *Table) WriteMarkdown(w io.Writer) error {
	var b bytes.Buffer
	b.WriteString("| run | path | |\n|---|---|---|\n")
	for _, l := range t.Runs {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", l.Name, mdCell(l.Path), mdCell(l.String()))
	}
	b.WriteString("\n")
	base := t.Runs[0].Name
	if len(t.Latencies) > 0 {
		hdr := "| policy | metric | q | " + base + " (ms) |"
		sep := "|---|---|---|---:|"
		for _, l := range t.Runs[1:] {
			hdr += fmt.Sprintf(" %s (ms) | vs %s | CI | p | test |", l.Name, base)
			sep += "---:|---:|---:|---:|---|"
		}
		b.WriteString(hdr + "\n" + sep + "\n")
		for i := range t.Latencies {
			r := &t.Latencies[i]
			if r.hidden() {
				continue
			}
			for qi, q := range Quantiles {
				fmt.Fprintf(&b, "| %s | %s | p%g | %s |", mdCell(r.Policy), r.Metric, 100*q, fmtMs(r.Base[qi]))
				for _, v := range r.Vs {
					if v == nil {
						b.WriteString(" — | | | | |")
						continue
					}
					c := v.Quantiles[qi]
					d := c.Delta
					if c.Regression {
						d = "**" + d + "** ⚠"
					}
					fmt.Fprintf(&b, " %s | %s | %s | %s | %s |", fmtMs(c.B), d, fmtCI(c.Lo, c.Hi), fmtP(v.P), testCell(v))
				}
				b.WriteString("\n")
			}
		}
		for _, g := range t.Geomean {
			fmt.Fprintf(&b, "| geomean | (%d distinct) | p%g | %s |", g.Rows, 100*g.Q, fmtMs(g.Values[0]))
			for k := range g.Changes {
				fmt.Fprintf(&b, " %s | %s | | | |", fmtMs(g.Values[k+1]), fmtChange(g.Changes[k]))
			}
			b.WriteString("\n")
		}
		if f := t.folded(); len(f) > 0 {
			b.WriteString("\nIdentical samples, tested once:\n\n")
			for _, g := range f {
				b.WriteString("- " + mdCell(g) + "\n")
			}
		}
		b.WriteString("\n")
	}
	if len(t.Rates) > 0 {
		shown, zeros, zc := t.rateGroups()
		hdr := "| policy | invariant | " + base + " |"
		sep := "|---|---|---:|"
		for _, l := range t.Runs[1:] {
			hdr += fmt.Sprintf(" %s | vs %s |", l.Name, base)
			sep += "---:|---:|"
		}
		b.WriteString(hdr + "\n" + sep + "\n")
		for _, r := range shown {
			fmt.Fprintf(&b, "| %s | %s | %s |", mdCell(r.Policy), r.ID, rateCell(r.Runs[0]))
			for k, d := range r.Deltas {
				if r.Runs[k+1] != nil && d == "worse" {
					d = "**worse** ⚠"
				}
				fmt.Fprintf(&b, " %s | %s |", rateCell(r.Runs[k+1]), d)
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
		for _, p := range zeros {
			fmt.Fprintf(&b, "%s: %s with 0 violations in every run.\n", mdCell(p), plural(zc[p], "invariant"))
		}
		if len(zeros) > 0 {
			b.WriteString("\n")
		}
	}
	footer := t.footer()
	for i := 0; i < len(footer); i++ {
		l := footer[i]
		for i+1 < len(footer) && strings.HasPrefix(footer[i+1], "  ") {
			i++
			l += " " + strings.TrimSpace(footer[i]) // continuation lines make one bullet
		}
		b.WriteString("- " + l + "\n")
	}
	writeVerdict(&b, t, "- ")
	_, err := w.Write(b.Bytes())
	return err
}

type jsonQuantile struct {
	Q          float64  `json:"q"`
	A          *float64 `json:"a"`
	B          *float64 `json:"b"`
	Change     *float64 `json:"change"`
	Lo         *float64 `json:"lo"`
	Hi         *float64 `json:"hi"`
	Delta      string   `json:"delta"`
	Regression bool     `json:"regression"`
}

type jsonVersus struct {
	Run         string         `json:"run"`
	Paired      bool           `json:"paired"`
	N1          int            `json:"n1"`
	N2          int            `json:"n2"`
	Unmatched   int            `json:"unmatched,omitempty"`
	Slower      int            `json:"slower,omitempty"`
	Faster      int            `json:"faster,omitempty"`
	Equal       int            `json:"equal,omitempty"`
	SignP       *float64       `json:"signP,omitempty"`
	Test        string         `json:"test"`
	P           *float64       `json:"p"`
	PRaw        *float64       `json:"pRaw"`
	Tested      bool           `json:"tested"`
	Significant bool           `json:"significant"`
	SameAs      string         `json:"sameAs,omitempty"`
	Quantiles   []jsonQuantile `json:"quantiles"`
	Warnings    []string       `json:"warnings,omitempty"`
}

type jsonLatency struct {
	Policy string        `json:"policy"`
	Metric string        `json:"metric"`
	N      int           `json:"n"`
	SameAs string        `json:"sameAs,omitempty"`
	Vs     []*jsonVersus `json:"vs"`
}

type jsonGeomean struct {
	Q       float64    `json:"q"`
	Rows    int        `json:"rows"`
	Values  []*float64 `json:"values"`
	Changes []*float64 `json:"changes"`
}

type jsonRate struct {
	Policy     string               `json:"policy"`
	ID         string               `json:"id"`
	Runs       []*stats.RateSummary `json:"runs"`
	Deltas     []string             `json:"deltas"`
	Regression bool                 `json:"regression"`
}

type jsonTable struct {
	SchemaVersion   int           `json:"schemaVersion"`
	Runs            []RunLabel    `json:"runs"`
	Alpha           float64       `json:"alpha"`
	Threshold       float64       `json:"threshold"`
	Confidence      float64       `json:"confidence"`
	Resamples       int           `json:"resamples"`
	Latencies       []jsonLatency `json:"latencies"`
	Geomean         []jsonGeomean `json:"geomean"`
	Rates           []jsonRate    `json:"rates"`
	RegressionFound bool          `json:"regressionFound"`
	Regressions     []string      `json:"regressions"`
	Warnings        []string      `json:"warnings"`
}

// JSONSchemaVersion is the version of WriteJSON's output. 2: N runs, p50,
// p90 and p99 per row with bootstrap intervals, paired tests.
const JSONSchemaVersion = 2

// round6 rounds x to 6 significant digits so that JSON output is the same
// on every platform (fused multiply-adds may change the last bits).
func round6(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) || x == 0 {
		return x
	}
	y, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 6, 64), 64)
	return y
}

func roundRate(r *stats.RateSummary) *stats.RateSummary {
	if r == nil {
		return nil
	}
	c := *r
	c.Rate, c.WilsonLo, c.WilsonHi = round6(c.Rate), round6(c.WilsonLo), round6(c.WilsonHi)
	c.CPLo, c.CPHi, c.UpperOneSided = round6(c.CPLo), round6(c.CPHi), round6(c.UpperOneSided)
	return &c
}

// fpr is fp of a computed value, rounded; NaN and ±Inf are null.
func fpr(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	y := round6(x)
	return &y
}

// WriteJSON writes the comparison as JSON (JSONSchemaVersion; NaN and
// infinite values are null).
func (t *Table) WriteJSON(w io.Writer) error {
	j := jsonTable{SchemaVersion: JSONSchemaVersion, Runs: t.Runs, Alpha: t.Alpha, Threshold: t.Threshold, Confidence: t.Confidence,
		Resamples: t.Resamples, Latencies: []jsonLatency{}, Geomean: []jsonGeomean{}, Rates: []jsonRate{}, RegressionFound: t.RegressionFound,
		Regressions: append([]string{}, t.Regressions...), Warnings: append([]string{}, t.Warnings...)}
	for i := range t.Latencies {
		r := &t.Latencies[i]
		jl := jsonLatency{Policy: r.Policy, Metric: r.Metric, N: r.N, SameAs: r.SameAs, Vs: []*jsonVersus{}}
		for _, v := range r.Vs {
			if v == nil {
				jl.Vs = append(jl.Vs, nil)
				continue
			}
			jv := &jsonVersus{Run: t.Runs[v.Run].Name, Paired: v.Paired, N1: v.N1, N2: v.N2, Unmatched: v.Unmatched,
				Slower: v.Slower, Faster: v.Faster, Equal: v.Equal, Test: v.Test, P: fpr(v.P), PRaw: fpr(v.PRaw),
				Tested: v.Tested, Significant: v.Significant, SameAs: v.SameAs, Warnings: v.Warnings}
			if v.Paired {
				jv.SignP = fpr(v.SignP)
			}
			for qi, c := range v.Quantiles {
				jv.Quantiles = append(jv.Quantiles, jsonQuantile{Q: c.Q, A: fpr(r.Base[qi]), B: fpr(c.B), Change: fpr(c.Change),
					Lo: fpr(c.Lo), Hi: fpr(c.Hi), Delta: c.Delta, Regression: c.Regression})
			}
			jl.Vs = append(jl.Vs, jv)
		}
		j.Latencies = append(j.Latencies, jl)
	}
	for _, g := range t.Geomean {
		jg := jsonGeomean{Q: g.Q, Rows: g.Rows}
		for _, v := range g.Values {
			jg.Values = append(jg.Values, fpr(v))
		}
		for _, c := range g.Changes {
			jg.Changes = append(jg.Changes, fpr(c))
		}
		j.Geomean = append(j.Geomean, jg)
	}
	for _, r := range t.Rates {
		jr := jsonRate{Policy: r.Policy, ID: r.ID, Deltas: r.Deltas, Regression: r.Regression}
		for _, x := range r.Runs {
			jr.Runs = append(jr.Runs, roundRate(x))
		}
		j.Rates = append(j.Rates, jr)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(j); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}

// writeGrouped writes a text table whose first column is the policy
// (rows[0] is the header; "" continues the row above's policy). A table
// that fits render.TableWidth is written as it is; a wider one (policy
// names such as
// kep753+ContainerRestartRules+RestartAllContainersOnContainerExits made
// every line over 200 columns) names each policy on a line of its own
// with its rows indented under it, as run's and graduate's tables do.
func writeGrouped(b *bytes.Buffer, rows [][]string) {
	format := func(rows [][]string) []string {
		var out bytes.Buffer
		tw := tabwriter.NewWriter(&out, 0, 0, 2, ' ', 0)
		for _, r := range rows {
			fmt.Fprintln(tw, strings.Join(r, "\t"))
		}
		tw.Flush()
		return strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	}
	lines := format(rows)
	widest := 0
	for _, l := range lines {
		widest = max(widest, utf8.RuneCountInString(strings.TrimRight(l, " ")))
	}
	if widest > render.TableWidth && len(rows) > 0 {
		inner := [][]string{rows[0][1:]}
		group := map[int]string{}
		last := ""
		for _, r := range rows[1:] {
			if r[0] != "" && r[0] != last {
				group[len(inner)], last = r[0], r[0]
			}
			c := slices.Clone(r[1:])
			c[0] = "  " + c[0]
			inner = append(inner, c)
		}
		lines = format(inner)
		for i, l := range lines {
			if g, ok := group[i]; ok {
				b.WriteString(g + "\n")
			}
			b.WriteString(l + "\n")
		}
		return
	}
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
}
