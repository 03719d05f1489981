package stats

import (
	"math"

	"gonum.org/v1/gonum/stat"
)

// KSResult is the outcome of a two-sample Kolmogorov–Smirnov test.
type KSResult struct {
	// D is the largest distance between the two empirical CDFs.
	D float64 `json:"d"`
	// P is the asymptotic two-sided p-value.
	P        float64  `json:"p"`
	N1       int      `json:"n1"`
	N2       int      `json:"n2"`
	Warnings []string `json:"warnings,omitempty"`
}

// KolmogorovSmirnov tests whether a and b come from the same continuous
// distribution (any difference in shape, not only location). D comes from
// gonum stat.KolmogorovSmirnov on sorted copies (gonum panics on unsorted
// input and returns D only). The p-value is asymptotic with Stephens'
// effective-n correction (Numerical Recipes probks):
//
//	n_e = n1·n2/(n1+n2),  λ = (√n_e + 0.12 + 0.11/√n_e)·D,
//	p = Q_KS(λ) = 2 Σ_{k≥1} (−1)^{k−1} e^{−2k²λ²}.
//
// Assumptions: independent i.i.d. samples from continuous distributions;
// with ties the test is conservative. A warning is added when n_e < 4,
// where the asymptotic p-value is rough.
func KolmogorovSmirnov(a, b []float64) KSResult {
	r := KSResult{N1: len(a), N2: len(b), D: math.NaN(), P: math.NaN()}
	if len(a) == 0 || len(b) == 0 {
		r.Warnings = append(r.Warnings, "no samples")
		return r
	}
	if hasNaN(a) || hasNaN(b) {
		r.Warnings = append(r.Warnings, "sample contains NaN")
		return r
	}
	// gonum accumulates 1/n steps, so D can exceed 1 by an ulp: clamp.
	r.D = min(1, stat.KolmogorovSmirnov(sortedCopy(a), nil, sortedCopy(b), nil))
	ne := float64(len(a)) * float64(len(b)) / float64(len(a)+len(b))
	sq := math.Sqrt(ne)
	r.P = KolmogorovQ((sq + 0.12 + 0.11/sq) * r.D)
	if ne < 4 {
		r.Warnings = append(r.Warnings, "samples too small for the asymptotic KS p-value (effective n < 4)")
	}
	return r
}

// KolmogorovQ returns the Kolmogorov survival function
// Q_KS(λ) = 2 Σ_{k≥1} (−1)^{k−1} e^{−2k²λ²}, the asymptotic probability
// that √n·D exceeds λ. Q_KS(1.358) ≈ 0.05.
func KolmogorovQ(lambda float64) float64 {
	if lambda < 0.2 { // 1 − Q < 1e-10 here, and the series converges slowly
		return 1
	}
	a2 := -2 * lambda * lambda
	fac, sum, prev := 2.0, 0.0, 0.0
	for k := 1; k <= 100; k++ {
		term := fac * math.Exp(a2*float64(k*k))
		sum += term
		if math.Abs(term) <= 1e-3*prev || math.Abs(term) <= 1e-12*sum {
			return min(1, max(0, sum))
		}
		fac = -fac
		prev = math.Abs(term)
	}
	return 1 // did not converge: only for tiny λ
}
