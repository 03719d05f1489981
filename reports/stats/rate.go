package stats

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Rate bounds for rare events: k events (violations, failures) in n
// independent trials (pod lifecycles). Independence is the assumption that
// matters: count a trial once per pod lifecycle under a fault only if faults
// are not correlated across pods, otherwise count per scenario seed.

// Wilson returns the Wilson score interval for the proportion k/n at the
// two-sided level confidence (z = Φ⁻¹(1 − α/2)). For n == 0 it returns
// [0, 1].
func Wilson(k, n int, confidence float64) (lo, hi float64) {
	if n <= 0 {
		return 0, 1
	}
	z := distuv.UnitNormal.Quantile(1 - (1-confidence)/2)
	nf := float64(n)
	p := float64(k) / nf
	z2 := z * z
	den := 1 + z2/nf
	center := (p + z2/(2*nf)) / den
	half := z / den * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf))
	lo, hi = max(0, center-half), min(1, center+half)
	if k == 0 {
		lo = 0
	}
	if k == n {
		hi = 1
	}
	return lo, hi
}

// ClopperPearson returns the exact (Clopper–Pearson) two-sided interval for
// k/n at level confidence, from Beta quantiles:
//
//	lo = Beta(k, n−k+1).Quantile(α/2)   (0 when k = 0)
//	hi = Beta(k+1, n−k).Quantile(1−α/2) (1 when k = n)
//
// It is R's binom.test(k, n)$conf.int. Checked: 0/100 → [0, 0.0362],
// 3/100 → [0.0062, 0.0852]. For n == 0 it returns [0, 1].
func ClopperPearson(k, n int, confidence float64) (lo, hi float64) {
	if n <= 0 {
		return 0, 1
	}
	alpha := 1 - confidence
	if k > 0 {
		lo = distuv.Beta{Alpha: float64(k), Beta: float64(n - k + 1)}.Quantile(alpha / 2)
	}
	return lo, ClopperPearsonUpper(k, n, 1-alpha/2)
}

// ClopperPearsonUpper returns the exact one-sided upper bound at level
// confidence: the p for which P(Binomial(n, p) ≤ k) = 1 − confidence. The
// upper end of the two-sided interval at level c is ClopperPearsonUpper at
// (1+c)/2. For k == 0 it equals ZeroFailureUpper(n, confidence).
func ClopperPearsonUpper(k, n int, confidence float64) float64 {
	return cpUpper(float64(k), float64(n), confidence)
}

// cpUpper allows a fractional k (for projections in MoreTrialsNeeded).
func cpUpper(k, n, confidence float64) float64 {
	if n <= 0 || k >= n {
		return 1
	}
	if k <= 0 { // closed form, exact: 1 − (1−c)^(1/n)
		return -math.Expm1(math.Log1p(-confidence) / n)
	}
	return distuv.Beta{Alpha: k + 1, Beta: n - k}.Quantile(confidence)
}

// RuleOfThree returns 3/n, the approximate one-sided 95% upper bound on a
// rate after n trials with zero events (Eypasch et al., BMJ 1995).
func RuleOfThree(n int) float64 {
	if n <= 0 {
		return 1
	}
	return min(1, 3/float64(n))
}

// ZeroFailureUpper returns the exact one-sided upper bound 1 − α^(1/n) on a
// rate after n trials with zero events, α = 1 − confidence.
func ZeroFailureUpper(n int, confidence float64) float64 {
	return cpUpper(0, float64(n), confidence)
}

// TrialsNeeded returns how many consecutive trials with zero events certify
// rate ≤ p at the one-sided level confidence: the smallest n with
// (1−p)^n ≤ 1 − confidence, i.e. ceil(ln(1−c) / ln(1−p)). Example: p = 1e-4
// at 95% needs 29,956 trials. It returns -1 for p outside (0, 1).
func TrialsNeeded(p, confidence float64) int {
	if !(p > 0 && p < 1) || !(confidence > 0 && confidence < 1) {
		return -1
	}
	n := int(math.Ceil(math.Log1p(-confidence) / math.Log1p(-p)))
	// The ratio of logs can land an ulp above an integer: step back while the
	// smaller n already suffices.
	for n > 1 && ZeroFailureUpper(n-1, confidence) <= p {
		n--
	}
	for ZeroFailureUpper(n, confidence) > p {
		n++
	}
	return n
}

// ErrRateTooHigh is returned by MoreTrialsNeeded when the observed rate is
// at or above the target, so no number of further trials at that rate can
// bring the upper bound below it.
var ErrRateTooHigh = errors.New("observed rate is not below the target; more trials at this rate cannot certify it")

// MoreTrialsNeeded returns how many trials beyond the n already run would
// bring the one-sided Clopper–Pearson upper bound (level confidence) below
// the target rate p, after k events in n trials. 0 means it is already
// below. For a two-sided level c pass (1+c)/2.
//
// Assumption: future trials fail at the observed rate k/n, so after N trials
// the expected count is K = N·k/n, used as a fractional k in the Beta
// quantile (the bound is then smooth and decreasing in N, and the search a
// plain bisection). With k = 0 the rate is 0 and the answer is
// TrialsNeeded(p, confidence) − n. The answer is a planning estimate, not a
// guarantee: one more event moves it.
func MoreTrialsNeeded(k, n int, p, confidence float64) (int, error) {
	if !(p > 0 && p < 1) || !(confidence > 0 && confidence < 1) {
		return 0, fmt.Errorf("target rate %v and confidence %v must be in (0, 1)", p, confidence)
	}
	if k < 0 || n < 0 || k > n {
		return 0, fmt.Errorf("invalid counts k=%d n=%d", k, n)
	}
	if k == 0 {
		return max(0, TrialsNeeded(p, confidence)-n), nil
	}
	rate := float64(k) / float64(n)
	// The relative tolerance treats a rate equal to the target up to
	// floating-point representation (1 failure in 100 vs 1 − 0.99) as equal:
	// otherwise the search would run to astronomically large N.
	if rate >= p*(1-1e-9) {
		return 0, ErrRateTooHigh
	}
	bound := func(N int) float64 { return cpUpper(float64(N)*rate, float64(N), confidence) }
	if bound(n) < p {
		return 0, nil
	}
	hi := 2 * n
	for bound(hi) >= p {
		if hi > math.MaxInt/4 {
			return 0, ErrRateTooHigh
		}
		hi *= 2
	}
	N := searchFirst(n, hi, func(N int) bool { return bound(N) < p })
	return N - n, nil
}

// TrialsNeededAtRate returns the smallest number of trials N at which the
// Clopper–Pearson upper bound (at confidence) of events occurring at the
// given rate, N·rate of them, falls below the target p: the same
// projection as MoreTrialsNeeded, counted from zero, so for k events in n
// trials with a bound still above p, n + MoreTrialsNeeded(k, n, p, c) ==
// TrialsNeededAtRate(k/n, p, c); below p it says where the bound crossed.
// A rate of 0 gives TrialsNeeded(p, confidence). It is -1 when no N can
// (rate >= p) or the arguments are out of range.
func TrialsNeededAtRate(rate, p, confidence float64) int {
	if !(p > 0 && p < 1) || !(confidence > 0 && confidence < 1) || rate < 0 || rate >= p*(1-1e-9) {
		return -1
	}
	if rate == 0 {
		return TrialsNeeded(p, confidence)
	}
	bound := func(N int) float64 { return cpUpper(float64(N)*rate, float64(N), confidence) }
	hi := 1
	for bound(hi) >= p {
		if hi > math.MaxInt/4 {
			return -1
		}
		hi *= 2
	}
	return searchFirst(1, hi, func(N int) bool { return bound(N) < p })
}

// RateSummary describes k events in n trials. Bounds are two-sided at
// Confidence except UpperOneSided (one-sided at Confidence, the bound a
// "rate ≤ p" claim uses).
type RateSummary struct {
	K             int      `json:"k"`
	N             int      `json:"n"`
	Rate          float64  `json:"rate"`
	Confidence    float64  `json:"confidence"`
	WilsonLo      float64  `json:"wilsonLo"`
	WilsonHi      float64  `json:"wilsonHi"`
	CPLo          float64  `json:"clopperPearsonLo"`
	CPHi          float64  `json:"clopperPearsonHi"`
	UpperOneSided float64  `json:"upperOneSided"`
	Warnings      []string `json:"warnings,omitempty"`
}

// Rate summarises k events in n trials with Wilson and Clopper–Pearson
// bounds. For n == 0 the rate is 0 with bounds [0, 1] and a warning.
func Rate(k, n int, confidence float64) RateSummary {
	r := RateSummary{K: k, N: n, Confidence: confidence}
	if n <= 0 {
		r.WilsonHi, r.CPHi, r.UpperOneSided = 1, 1, 1
		r.Warnings = append(r.Warnings, "no trials")
		return r
	}
	r.Rate = float64(k) / float64(n)
	r.WilsonLo, r.WilsonHi = Wilson(k, n, confidence)
	r.CPLo, r.CPHi = ClopperPearson(k, n, confidence)
	r.UpperOneSided = ClopperPearsonUpper(k, n, confidence)
	return r
}
