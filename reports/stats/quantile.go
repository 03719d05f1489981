package stats

import (
	"encoding/json"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mathext"
)

// Summary is a point estimate with a confidence interval, in the style of
// golang.org/x/perf/benchmath.Summary.
//
// Center is the sample quantile Quantile (0.5: the median) by nearest rank.
// [Lo, Hi] is a distribution-free confidence interval for the population
// quantile at level Confidence; a bound the data cannot support is −Inf or
// +Inf (encoded as null in JSON) and a Warning says how many samples are
// needed. Warnings describe problems with the data; they are not errors and
// are meant to be shown to the reader verbatim.
type Summary struct {
	Center     float64
	Lo, Hi     float64
	Confidence float64
	Quantile   float64
	N          int
	Warnings   []string
}

// summaryJSON is Summary with JSON-safe bounds (JSON has no ±Inf or NaN).
type summaryJSON struct {
	Center     *float64 `json:"center"`
	Lo         *float64 `json:"lo"`
	Hi         *float64 `json:"hi"`
	Confidence float64  `json:"confidence"`
	Quantile   float64  `json:"quantile"`
	N          int      `json:"n"`
	Warnings   []string `json:"warnings,omitempty"`
}

// MarshalJSON encodes non-finite values (unbounded CI ends, the center of an
// empty sample) as null.
func (s Summary) MarshalJSON() ([]byte, error) {
	return json.Marshal(summaryJSON{
		Center: finitePtr(s.Center), Lo: finitePtr(s.Lo), Hi: finitePtr(s.Hi),
		Confidence: s.Confidence, Quantile: s.Quantile, N: s.N, Warnings: s.Warnings,
	})
}

// UnmarshalJSON is the inverse of MarshalJSON: a null Lo is −Inf, a null Hi
// +Inf, a null Center NaN.
func (s *Summary) UnmarshalJSON(b []byte) error {
	var j summaryJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*s = Summary{
		Center: fromPtr(j.Center, math.NaN()), Lo: fromPtr(j.Lo, math.Inf(-1)), Hi: fromPtr(j.Hi, math.Inf(1)),
		Confidence: j.Confidence, Quantile: j.Quantile, N: j.N, Warnings: j.Warnings,
	}
	return nil
}

func finitePtr(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

func fromPtr(p *float64, def float64) float64 {
	if p == nil {
		return def
	}
	return *p
}

func (s Summary) String() string {
	return fmt.Sprintf("%.4g [%.4g, %.4g] (q=%v, %v CI, n=%d)", s.Center, s.Lo, s.Hi, s.Quantile, s.Confidence, s.N)
}

// Summarize returns the median of x with a distribution-free confidence
// interval at the given level (e.g. 0.95): QuantileSummary(x, 0.5, c).
func Summarize(x []float64, confidence float64) Summary {
	return QuantileSummary(x, 0.5, confidence)
}

// QuantileSummary estimates the q-quantile (0 < q < 1) of the population x
// was drawn from: Center is the nearest-rank percentile 100·q of x, and
// [Lo, Hi] are the order statistics X_(lo), X_(hi) from QuantileCIRanks.
//
// Assumptions: the samples are independent and identically distributed.
// No distributional shape is assumed. Samples containing NaN give NaN and a
// warning.
func QuantileSummary(x []float64, q, confidence float64) Summary {
	if len(x) > 0 && hasNaN(x) {
		s := Summary{Center: math.NaN(), Lo: math.Inf(-1), Hi: math.Inf(1), Confidence: confidence, Quantile: q, N: len(x)}
		s.Warnings = append(s.Warnings, "sample contains NaN")
		return s
	}
	return QuantileSummaryOf(Sorted(sortedCopy(x)), q, confidence)
}

// QuantileSummaryOf is QuantileSummary over an ordered sample (a sorted
// slice or a Hist): the same estimator, one implementation.
func QuantileSummaryOf(sorted Ordered, q, confidence float64) Summary {
	n := sorted.Len()
	s := Summary{Center: math.NaN(), Lo: math.Inf(-1), Hi: math.Inf(1), Confidence: confidence, Quantile: q, N: n}
	switch {
	case !(q > 0 && q < 1):
		s.Warnings = append(s.Warnings, fmt.Sprintf("quantile %v outside (0, 1)", q))
		return s
	case !(confidence > 0 && confidence < 1):
		s.Warnings = append(s.Warnings, fmt.Sprintf("confidence %v outside (0, 1)", confidence))
		return s
	case n == 0:
		s.Warnings = append(s.Warnings, "no samples")
		return s
	}
	s.Center = PercentileOf(sorted, 100*q)
	lo, hi := QuantileCIRanks(n, q, confidence)
	if lo >= 1 {
		s.Lo = sorted.At(lo - 1)
	}
	if hi <= n {
		s.Hi = sorted.At(hi - 1)
	}
	if lo < 1 || hi > n {
		s.Warnings = append(s.Warnings, fmt.Sprintf("need >= %d samples for confidence interval at level %v", MinSamplesForCI(q, confidence), confidence))
	}
	return s
}

// QuantileCIRanks returns 1-based ranks lo ≤ hi such that, for n i.i.d.
// samples from a continuous distribution with q-quantile ξ_q,
//
//	P(X_(lo) ≤ ξ_q ≤ X_(hi)) ≥ confidence.
//
// The number B of samples below ξ_q is Binomial(n, q), and
// P(X_(lo) ≤ ξ_q ≤ X_(hi)) = P(lo ≤ B ≤ hi−1). Each tail gets at most
// α/2 = (1−confidence)/2: lo is the largest rank with P(B ≤ lo−1) ≤ α/2, hi
// the smallest with P(B ≥ hi) ≤ α/2. This is the construction benchstat
// uses for its median CI (go-moremath stats.QuantileCI).
//
// lo == 0 means no finite lower bound exists (−∞); hi == n+1 means no finite
// upper bound (+∞). For the p99 at 95% this happens below n = 368 (0.99^n >
// 0.025), for the median below n = 6.
func QuantileCIRanks(n int, q, confidence float64) (lo, hi int) {
	if n <= 0 {
		return 0, n + 1
	}
	half := (1 - confidence) / 2
	// P(B ≤ r−1) is nondecreasing in r: largest r in [1, n] with it ≤ half.
	lo = searchLast(1, n, func(r int) bool { return binomCDF(r-1, n, q) <= half })
	// P(B ≥ s) is nonincreasing in s: smallest s in [1, n] with it ≤ half.
	hi = searchFirst(1, n, func(s int) bool { return binomSF(s, n, q) <= half })
	return lo, hi
}

// MinSamplesForCI is the smallest n for which QuantileCIRanks gives both a
// finite lower and a finite upper bound: (1−q)^n ≤ α/2 and q^n ≤ α/2.
func MinSamplesForCI(q, confidence float64) int {
	half := (1 - confidence) / 2
	m := max(q, 1-q)
	n := int(math.Ceil(math.Log(half) / math.Log(m)))
	n = max(n-2, 1)
	for math.Pow(m, float64(n)) > half { // guard against rounding in the log ratio
		n++
	}
	return n
}

// binomCDF returns P(B ≤ k) for B ~ Binomial(n, p), via the regularized
// incomplete beta function, accurate in both tails.
func binomCDF(k, n int, p float64) float64 {
	switch {
	case k < 0:
		return 0
	case k >= n:
		return 1
	case p <= 0:
		return 1
	case p >= 1:
		return 0
	}
	// P(B ≤ k) = I_{1−p}(n−k, k+1).
	return mathext.RegIncBeta(float64(n-k), float64(k+1), 1-p)
}

// binomSF returns P(B ≥ k) for B ~ Binomial(n, p).
func binomSF(k, n int, p float64) float64 {
	switch {
	case k <= 0:
		return 1
	case k > n:
		return 0
	case p <= 0:
		return 0
	case p >= 1:
		return 1
	}
	// P(B ≥ k) = I_p(k, n−k+1).
	return mathext.RegIncBeta(float64(k), float64(n-k+1), p)
}

// searchLast returns the largest i in [a, b] with ok(i) for ok true on a
// prefix of [a, b], or a−1 if ok(a) is false.
func searchLast(a, b int, ok func(int) bool) int {
	lo, hi := a, b+1 // invariant: ok on [a, lo), not ok on [hi, b]
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if ok(mid) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo - 1
}

// searchFirst returns the smallest i in [a, b] with ok(i) for ok true on a
// suffix of [a, b], or b+1 if ok(b) is false.
func searchFirst(a, b int, ok func(int) bool) int {
	lo, hi := a, b+1
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if ok(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}
