// Package compare compares two sidebench runs the way benchstat compares
// two sets of benchmark results: per latency metric, the medians of A and
// B, their relative change, and a two-sided Mann–Whitney U p-value with
// Holm correction across all compared metrics; "~" when the difference is
// not significant. Violation rates are shown side by side with their 95%
// upper bounds. A regression is a significant increase of a median beyond
// a threshold, or a violation rate whose confidence interval in B lies
// entirely above A's; the CLI exits 1 when Table.RegressionFound.
//
// The statistics are reports/stats; the inputs are render.RunData, the same
// plain data the report files are rendered from.
package compare

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/sidebench/sidebench/reports/render"
	"github.com/sidebench/sidebench/reports/stats"
)

// Options control a comparison. The zero value is benchstat's defaults and
// a 5% threshold.
type Options struct {
	// Alpha is the significance level (0: 0.05).
	Alpha float64
	// Threshold is the relative increase of a median, as a fraction (0.05
	// = 5%), beyond which a significant change counts as a regression.
	// 0 means 0.05; a negative value means any significant increase.
	Threshold float64
	// Confidence is the level of the rate bounds (0: 0.95).
	Confidence float64
	// Metrics restricts the latency metrics compared (empty: all).
	Metrics []string
	// PolicyA and PolicyB, if both set, compare policy PolicyA of run a
	// with policy PolicyB of run b (e.g. none vs kep753 in one run: the
	// sidecar overhead). Otherwise policies are matched by name.
	PolicyA, PolicyB string
}

func (o Options) withDefaults() Options {
	if o.Alpha <= 0 {
		o.Alpha = stats.DefaultAlpha
	}
	if o.Threshold == 0 {
		o.Threshold = 0.05
	}
	if o.Threshold < 0 {
		o.Threshold = 0
	}
	if o.Confidence <= 0 || o.Confidence >= 1 {
		o.Confidence = 0.95
	}
	return o
}

// RunLabel identifies one side of a comparison.
type RunLabel struct {
	Scenario string `json:"scenario"`
	Seed     uint64 `json:"seed"`
	Trials   int    `json:"trials"`
	Backend  string `json:"backend"`
	Version  string `json:"version"`
	Partial  bool   `json:"partial"`
}

// LatencyRow compares one policy × metric.
type LatencyRow struct {
	// Policy is the policy name (PolicyA→PolicyB when they differ).
	Policy string
	Metric string
	N1, N2 int
	// MedianA and MedianB are nearest-rank medians in ms; NaN without
	// samples.
	MedianA, MedianB float64
	// DeltaPct is (MedianB − MedianA)/MedianA·100.
	DeltaPct float64
	// P is the Holm-adjusted two-sided Mann–Whitney U p-value, PRaw the
	// unadjusted one.
	P, PRaw     float64
	Significant bool
	// Delta is the benchstat cell: "~" if not significant, else "+12.34%".
	Delta      string
	Regression bool
	Warnings   []string
}

// RateRow compares one policy × invariant's violation rate.
type RateRow struct {
	Policy string
	ID     string
	A, B   stats.RateSummary
	// Delta is "~" when the two 95% Wilson intervals overlap, "worse" when
	// B's lies entirely above A's, "better" when entirely below.
	Delta      string
	Regression bool
}

// Table is the outcome of Compare.
type Table struct {
	A, B       RunLabel
	Alpha      float64
	Threshold  float64
	Confidence float64
	Latencies  []LatencyRow
	Rates      []RateRow
	// RegressionFound is true if any row is a regression; Regressions
	// says which, one line each.
	RegressionFound bool
	Regressions     []string
	Warnings        []string
}

func label(d render.RunData) RunLabel {
	return RunLabel{Scenario: d.Scenario, Seed: d.Meta.Seed, Trials: d.Meta.Trials, Backend: d.Meta.Backend, Version: d.Meta.Version, Partial: d.Meta.Partial}
}

type key struct{ policy, metric string }

// Compare compares run b (candidate) against run a (baseline).
//
// Latency rows pair a's and b's samples of the same policy and metric
// (policies in a's order, metrics in harness/metrics order); a pair missing
// on one side is a warning. The Holm correction runs over every latency row
// compared. Rates pair invariant rows the same way.
func Compare(a, b render.RunData, opts Options) Table {
	o := opts.withDefaults()
	t := Table{A: label(a), B: label(b), Alpha: o.Alpha, Threshold: o.Threshold, Confidence: o.Confidence}
	if a.Meta.Partial {
		t.Warnings = append(t.Warnings, "run A is partial")
	}
	if b.Meta.Partial {
		t.Warnings = append(t.Warnings, "run B is partial")
	}
	if a.Scenario != b.Scenario {
		t.Warnings = append(t.Warnings, fmt.Sprintf("different scenarios: %q vs %q", a.Scenario, b.Scenario))
	}
	pair := func(pa string) (pb string, ok bool) {
		if o.PolicyA != "" && o.PolicyB != "" {
			return o.PolicyB, pa == o.PolicyA
		}
		return pa, true
	}
	rowPolicy := func(pa, pb string) string {
		if pa == pb {
			return pa
		}
		return pa + "→" + pb
	}
	order := policyOrder(a)
	wantMetric := func(m string) bool { return len(o.Metrics) == 0 || slices.Contains(o.Metrics, m) }

	// Latencies.
	bl := map[key]*stats.Hist{}
	bHas := map[key]bool{}
	for _, l := range b.Latencies {
		bl[key{l.Policy, l.Metric}] = l.Ms
		bHas[key{l.Policy, l.Metric}] = true
	}
	aLat := slices.Clone(a.Latencies)
	slices.SortStableFunc(aLat, func(x, y render.Latency) int {
		return cmp.Or(cmp.Compare(order(x.Policy), order(y.Policy)), cmp.Compare(metricIndex(x.Metric), metricIndex(y.Metric)), cmp.Compare(x.Metric, y.Metric))
	})
	var cs []stats.Comparison
	usedB := map[key]bool{}
	for _, la := range aLat {
		pb, ok := pair(la.Policy)
		if !ok || !wantMetric(la.Metric) {
			continue
		}
		k := key{pb, la.Metric}
		if !bHas[k] {
			t.Warnings = append(t.Warnings, fmt.Sprintf("%s %s: only in A", la.Policy, la.Metric))
			continue
		}
		usedB[k] = true
		c := stats.CompareHist(la.Ms, bl[k], o.Alpha)
		cs = append(cs, c)
		t.Latencies = append(t.Latencies, LatencyRow{Policy: rowPolicy(la.Policy, pb), Metric: la.Metric})
	}
	for _, lb := range b.Latencies {
		k := key{lb.Policy, lb.Metric}
		if !usedB[k] && wantMetric(lb.Metric) && (o.PolicyB == "" || o.PolicyA == "" || lb.Policy == o.PolicyB) {
			t.Warnings = append(t.Warnings, fmt.Sprintf("%s %s: only in B", lb.Policy, lb.Metric))
		}
	}
	cs = stats.HolmAdjust(cs)
	for i, c := range cs {
		r := &t.Latencies[i]
		r.N1, r.N2 = c.N1, c.N2
		r.MedianA, r.MedianB, r.DeltaPct = c.CenterA, c.CenterB, c.DeltaPct
		r.P, r.PRaw, r.Significant, r.Delta = c.P, c.PRaw, c.Significant, c.Delta()
		r.Warnings = c.Warnings
		if c.Significant && !math.IsNaN(c.DeltaPct) && c.DeltaPct > 100*o.Threshold {
			r.Regression = true
			t.Regressions = append(t.Regressions, fmt.Sprintf("%s %s: median %s → %s ms (%+.2f%%, p=%.3f) exceeds the %.4g%% threshold",
				r.Policy, r.Metric, fmtMs(r.MedianA), fmtMs(r.MedianB), r.DeltaPct, r.P, 100*o.Threshold))
		}
	}

	// Violation rates.
	type inv struct{ policy, id string }
	bRows := map[inv]render.InvariantRow{}
	for _, r := range b.Invariants {
		bRows[inv{r.Policy, r.ID}] = r
	}
	aInv := slices.Clone(a.Invariants)
	slices.SortStableFunc(aInv, func(x, y render.InvariantRow) int {
		return cmp.Or(cmp.Compare(order(x.Policy), order(y.Policy)), naturalCompare(x.ID, y.ID))
	})
	for _, ra := range aInv {
		pb, ok := pair(ra.Policy)
		if !ok {
			continue
		}
		rb, ok := bRows[inv{pb, ra.ID}]
		if !ok {
			t.Warnings = append(t.Warnings, fmt.Sprintf("%s %s: only in A", ra.Policy, ra.ID))
			continue
		}
		row := RateRow{Policy: rowPolicy(ra.Policy, pb), ID: ra.ID,
			A: stats.Rate(ra.Violations, ra.Checked, o.Confidence), B: stats.Rate(rb.Violations, rb.Checked, o.Confidence), Delta: "~"}
		switch {
		case row.A.N == 0 || row.B.N == 0:
		case row.B.WilsonLo > row.A.WilsonHi:
			row.Delta, row.Regression = "worse", true
			t.Regressions = append(t.Regressions, fmt.Sprintf("%s %s: violation rate %s → %s (%d/%d → %d/%d), 95%% intervals do not overlap",
				row.Policy, row.ID, fmtPct(row.A.Rate), fmtPct(row.B.Rate), row.A.K, row.A.N, row.B.K, row.B.N))
		case row.B.WilsonHi < row.A.WilsonLo:
			row.Delta = "better"
		}
		t.Rates = append(t.Rates, row)
	}
	t.RegressionFound = len(t.Regressions) > 0
	return t
}

// policyOrder returns a ranking function: d's policy order, unknown last.
func policyOrder(d render.RunData) func(string) int {
	ps := slices.Clone(d.Policies)
	if len(ps) == 0 {
		for _, l := range d.Latencies {
			if !slices.Contains(ps, l.Policy) {
				ps = append(ps, l.Policy)
			}
		}
		for _, r := range d.Invariants {
			if !slices.Contains(ps, r.Policy) {
				ps = append(ps, r.Policy)
			}
		}
		slices.Sort(ps)
	}
	return func(p string) int {
		if i := slices.Index(ps, p); i >= 0 {
			return i
		}
		return len(ps)
	}
}

var knownMetrics = []string{"pod_startup", "create_to_initialized", "create_to_ready", "sidecar_gate", "deletion_to_exited", "job_completion"}

func metricIndex(m string) int {
	if i := slices.Index(knownMetrics, m); i >= 0 {
		return i
	}
	return len(knownMetrics)
}

// naturalCompare orders IDs with embedded numbers numerically (S2 < S10).
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		if isDigit(a[0]) && isDigit(b[0]) {
			i, j := digits(a), digits(b)
			na, nb := trimZeros(a[:i]), trimZeros(b[:j])
			if c := cmp.Or(cmp.Compare(len(na), len(nb)), cmp.Compare(na, nb), cmp.Compare(i, j)); c != 0 {
				return c
			}
			a, b = a[i:], b[j:]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func digits(s string) int {
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}

func trimZeros(s string) string {
	for len(s) > 1 && s[0] == '0' {
		s = s[1:]
	}
	return s
}
