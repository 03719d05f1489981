package compare

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

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

func fmtP(p float64) string {
	if math.IsNaN(p) {
		return "n/a"
	}
	return strconv.FormatFloat(p, 'f', 3, 64)
}

func (l RunLabel) String() string {
	s := fmt.Sprintf("scenario=%s seed=%d backend=%s version=%s trials=%d", l.Scenario, l.Seed, l.Backend, l.Version, l.Trials)
	if l.Partial {
		s += " PARTIAL"
	}
	return s
}

// rateCell is "k/n rate [upper]" with the two-sided Wilson upper bound.
func rateCell(r stats.RateSummary) string {
	if r.N == 0 {
		return "no pods"
	}
	return fmt.Sprintf("%d/%d %s [≤%s]", r.K, r.N, fmtPct(r.Rate), fmtPct(r.WilsonHi))
}

func (t *Table) footer() []string {
	lines := []string{
		fmt.Sprintf("median: nearest rank, ms. p: two-sided Mann–Whitney U, Holm-corrected across %d metric(s); ~: not significant at α=%v.", len(t.Latencies), t.Alpha),
		fmt.Sprintf("rates: violations/pods checked [two-sided %v%% Wilson upper bound]; ~: the intervals of A and B overlap.", 100*t.Confidence),
		fmt.Sprintf("regression: a significant median increase above %.4g%%, or a violation rate whose interval lies entirely above A's.", 100*t.Threshold),
	}
	return lines
}

// WriteText writes the comparison as aligned plain text, benchstat style.
func (t *Table) WriteText(w io.Writer) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "A: %s\nB: %s\n\n", t.A, t.B)
	if len(t.Latencies) > 0 {
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "policy\tmetric\tmedian A\tmedian B\tvs A\tp\tn")
		for _, r := range t.Latencies {
			mark := ""
			if r.Regression {
				mark = "  REGRESSION"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d+%d%s\n", r.Policy, r.Metric, fmtMs(r.MedianA), fmtMs(r.MedianB), r.Delta, fmtP(r.P), r.N1, r.N2, mark)
		}
		tw.Flush()
		b.WriteString("\n")
	}
	if len(t.Rates) > 0 {
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "policy\tinvariant\tviolations A\tviolations B\tvs A")
		for _, r := range t.Rates {
			mark := ""
			if r.Regression {
				mark = "  REGRESSION"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s%s\n", r.Policy, r.ID, rateCell(r.A), rateCell(r.B), r.Delta, mark)
		}
		tw.Flush()
		b.WriteString("\n")
	}
	for _, l := range t.footer() {
		b.WriteString(l + "\n")
	}
	writeVerdict(&b, t, "")
	_, err := w.Write(b.Bytes())
	return err
}

func writeVerdict(b *bytes.Buffer, t *Table, bullet string) {
	b.WriteString("\n")
	for _, x := range t.Warnings {
		fmt.Fprintf(b, "%swarning: %s\n", bullet, x)
	}
	for _, r := range t.Latencies {
		for _, x := range r.Warnings {
			fmt.Fprintf(b, "%swarning: %s %s: %s\n", bullet, r.Policy, r.Metric, x)
		}
	}
	if !t.RegressionFound {
		fmt.Fprintf(b, "%sno regression\n", bullet)
		return
	}
	for _, x := range t.Regressions {
		fmt.Fprintf(b, "%sREGRESSION: %s\n", bullet, x)
	}
}

func mdCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// WriteMarkdown writes the comparison as Markdown tables.
func (t *Table) WriteMarkdown(w io.Writer) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "| run | |\n|---|---|\n| A | %s |\n| B | %s |\n\n", mdCell(t.A.String()), mdCell(t.B.String()))
	if len(t.Latencies) > 0 {
		b.WriteString("| policy | metric | median A (ms) | median B (ms) | vs A | p | n |\n|---|---|---:|---:|---:|---:|---:|\n")
		for _, r := range t.Latencies {
			d := r.Delta
			if r.Regression {
				d = "**" + d + "** ⚠"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %d+%d |\n", mdCell(r.Policy), r.Metric, fmtMs(r.MedianA), fmtMs(r.MedianB), d, fmtP(r.P), r.N1, r.N2)
		}
		b.WriteString("\n")
	}
	if len(t.Rates) > 0 {
		b.WriteString("| policy | invariant | violations A | violations B | vs A |\n|---|---|---:|---:|---:|\n")
		for _, r := range t.Rates {
			d := r.Delta
			if r.Regression {
				d = "**" + d + "** ⚠"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", mdCell(r.Policy), r.ID, rateCell(r.A), rateCell(r.B), d)
		}
		b.WriteString("\n")
	}
	for _, l := range t.footer() {
		b.WriteString("- " + l + "\n")
	}
	writeVerdict(&b, t, "- ")
	_, err := w.Write(b.Bytes())
	return err
}

type jsonLatency struct {
	Policy      string   `json:"policy"`
	Metric      string   `json:"metric"`
	N1          int      `json:"n1"`
	N2          int      `json:"n2"`
	MedianA     *float64 `json:"medianA"`
	MedianB     *float64 `json:"medianB"`
	DeltaPct    *float64 `json:"deltaPct"`
	P           *float64 `json:"p"`
	PRaw        *float64 `json:"pRaw"`
	Significant bool     `json:"significant"`
	Delta       string   `json:"delta"`
	Regression  bool     `json:"regression"`
	Warnings    []string `json:"warnings,omitempty"`
}

type jsonRate struct {
	Policy     string            `json:"policy"`
	ID         string            `json:"id"`
	A          stats.RateSummary `json:"a"`
	B          stats.RateSummary `json:"b"`
	Delta      string            `json:"delta"`
	Regression bool              `json:"regression"`
}

type jsonTable struct {
	SchemaVersion   int           `json:"schemaVersion"`
	A               RunLabel      `json:"a"`
	B               RunLabel      `json:"b"`
	Alpha           float64       `json:"alpha"`
	Threshold       float64       `json:"threshold"`
	Confidence      float64       `json:"confidence"`
	Latencies       []jsonLatency `json:"latencies"`
	Rates           []jsonRate    `json:"rates"`
	RegressionFound bool          `json:"regressionFound"`
	Regressions     []string      `json:"regressions"`
	Warnings        []string      `json:"warnings"`
}

// round6 rounds x to 6 significant digits so that JSON output is the same
// on every platform (fused multiply-adds may change the last bits).
func round6(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) || x == 0 {
		return x
	}
	y, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 6, 64), 64)
	return y
}

func roundRate(r stats.RateSummary) stats.RateSummary {
	r.Rate, r.WilsonLo, r.WilsonHi = round6(r.Rate), round6(r.WilsonLo), round6(r.WilsonHi)
	r.CPLo, r.CPHi, r.UpperOneSided = round6(r.CPLo), round6(r.CPHi), round6(r.UpperOneSided)
	return r
}

// fpr is fp of a computed value (p-value, relative change), rounded.
func fpr(x float64) *float64 { return fp(round6(x)) }

func fp(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

// WriteJSON writes the comparison as JSON (schemaVersion 1; NaN is null).
func (t *Table) WriteJSON(w io.Writer) error {
	j := jsonTable{SchemaVersion: 1, A: t.A, B: t.B, Alpha: t.Alpha, Threshold: t.Threshold, Confidence: t.Confidence,
		Latencies: []jsonLatency{}, Rates: []jsonRate{}, RegressionFound: t.RegressionFound,
		Regressions: append([]string{}, t.Regressions...), Warnings: append([]string{}, t.Warnings...)}
	for _, r := range t.Latencies {
		j.Latencies = append(j.Latencies, jsonLatency{r.Policy, r.Metric, r.N1, r.N2, fp(r.MedianA), fp(r.MedianB), fpr(r.DeltaPct),
			fpr(r.P), fpr(r.PRaw), r.Significant, r.Delta, r.Regression, r.Warnings})
	}
	for _, r := range t.Rates {
		j.Rates = append(j.Rates, jsonRate{r.Policy, r.ID, roundRate(r.A), roundRate(r.B), r.Delta, r.Regression})
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
