package stats

import (
	"encoding/json"
	"fmt"
	"math"
)

// DefaultAlpha is benchstat's significance level.
const DefaultAlpha = 0.05

// Comparison is a benchstat-style A/B comparison of two samples.
type Comparison struct {
	// CenterA and CenterB are the nearest-rank medians of a and b.
	CenterA, CenterB float64
	// DeltaPct is (CenterB − CenterA)/CenterA·100; NaN when CenterA is 0.
	DeltaPct float64
	// P is the two-sided Mann–Whitney U p-value (Holm-adjusted after
	// HolmAdjust; PRaw then keeps the unadjusted one).
	P, PRaw float64
	Alpha   float64
	// Significant is P < Alpha.
	Significant bool
	N1, N2      int
	// Test names the test and its mode: "mann-whitney-u exact" or
	// "mann-whitney-u normal".
	Test     string
	Warnings []string
}

// Compare compares sample b (candidate) against a (baseline) the way
// benchstat does: medians, relative change of the medians, and a two-sided
// Mann–Whitney U test at level alpha (0 means DefaultAlpha).
//
// Assumptions: independent samples, each i.i.d.; nothing about shape.
// Warnings carry benchstat's "need >= N samples to detect a difference"
// when the sample sizes make p ≤ alpha impossible.
func Compare(a, b []float64, alpha float64) Comparison {
	ca, cb := math.NaN(), math.NaN()
	if len(a) > 0 {
		ca = Percentile(a, 50)
	}
	if len(b) > 0 {
		cb = Percentile(b, 50)
	}
	return comparison(ca, cb, MannWhitneyU(a, b), alpha)
}

// CompareHist is Compare over two Hists (1 ms resolution).
func CompareHist(a, b *Hist, alpha float64) Comparison {
	return comparison(PercentileOf(a, 50), PercentileOf(b, 50), MannWhitneyUHist(a, b), alpha)
}

func comparison(centerA, centerB float64, u MWUResult, alpha float64) Comparison {
	if alpha <= 0 {
		alpha = DefaultAlpha
	}
	c := Comparison{Alpha: alpha, N1: u.N1, N2: u.N2, CenterA: centerA, CenterB: centerB, DeltaPct: math.NaN()}
	if c.CenterA != 0 && !math.IsNaN(c.CenterA) {
		c.DeltaPct = (c.CenterB - c.CenterA) / c.CenterA * 100
	} else if c.CenterA == 0 {
		c.Warnings = append(c.Warnings, "baseline median is 0: relative change undefined")
	}
	c.P, c.PRaw = u.P, u.P
	c.Test = "mann-whitney-u normal"
	if u.Exact {
		c.Test = "mann-whitney-u exact"
	}
	c.Warnings = append(c.Warnings, u.Warnings...)
	if u.N1 > 0 && u.N2 > 0 {
		if w := mwuDetectWarning(u.N1, u.N2, alpha); w != "" {
			c.Warnings = append(c.Warnings, w)
		}
	}
	c.Significant = c.P < alpha
	return c
}

// HolmAdjust returns copies of cs with P replaced by the Holm–Bonferroni
// adjusted p-value across the whole family (one comparison per metric),
// PRaw keeping the original, and Significant recomputed. Use it whenever
// more than one metric is compared, otherwise ~5% of them will be
// "significant" by chance.
func HolmAdjust(cs []Comparison) []Comparison {
	raw := make([]float64, len(cs))
	for i, c := range cs {
		raw[i] = c.PRaw
	}
	adj := Holm(raw)
	out := make([]Comparison, len(cs))
	for i, c := range cs {
		c.Warnings = append([]string(nil), c.Warnings...)
		c.P = adj[i]
		c.Significant = c.P < c.Alpha
		out[i] = c
	}
	return out
}

// Delta is the benchstat "vs base" cell: "~" when not significant,
// otherwise the signed percent change of the medians.
func (c Comparison) Delta() string {
	switch {
	case !c.Significant:
		return "~"
	case math.IsNaN(c.DeltaPct):
		return "?"
	}
	return fmt.Sprintf("%+.2f%%", c.DeltaPct)
}

// String renders the comparison like a benchstat cell, e.g.
// "+12.50% (p=0.008 n=5+5)" or "~ (p=0.310 n=10+10)".
func (c Comparison) String() string {
	return fmt.Sprintf("%s (p=%.3f n=%d+%d)", c.Delta(), c.P, c.N1, c.N2)
}

type comparisonJSON struct {
	CenterA     *float64 `json:"centerA"`
	CenterB     *float64 `json:"centerB"`
	DeltaPct    *float64 `json:"deltaPct"`
	Delta       string   `json:"delta"`
	P           *float64 `json:"p"`
	PRaw        *float64 `json:"pRaw"`
	Alpha       float64  `json:"alpha"`
	Significant bool     `json:"significant"`
	N1          int      `json:"n1"`
	N2          int      `json:"n2"`
	Test        string   `json:"test"`
	Warnings    []string `json:"warnings,omitempty"`
}

// MarshalJSON encodes NaN values as null and adds the rendered Delta.
func (c Comparison) MarshalJSON() ([]byte, error) {
	return json.Marshal(comparisonJSON{
		CenterA: finitePtr(c.CenterA), CenterB: finitePtr(c.CenterB), DeltaPct: finitePtr(c.DeltaPct),
		Delta: c.Delta(), P: finitePtr(c.P), PRaw: finitePtr(c.PRaw), Alpha: c.Alpha,
		Significant: c.Significant, N1: c.N1, N2: c.N2, Test: c.Test, Warnings: c.Warnings,
	})
}
