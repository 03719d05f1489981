package stats

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// ExactSignedRankMax bounds the number of non-zero differences for which
// WilcoxonSignedRank uses the exact null distribution (R's wilcox.test uses
// it below 50).
const ExactSignedRankMax = 49

// SignedRankResult is the outcome of a two-sided Wilcoxon signed-rank test
// on paired samples, with the sign count beside it.
type SignedRankResult struct {
	// V is the sum of the ranks of |d| over the positive differences
	// d = b − a (R's statistic V).
	V float64 `json:"v"`
	// P is the two-sided p-value; 1 when no pair differs.
	P float64 `json:"p"`
	// Exact reports whether P came from the exact null distribution; if
	// not, from the normal approximation, and Z is its statistic.
	Exact bool    `json:"exact"`
	Z     float64 `json:"z,omitempty"`
	// Pairs is the number of pairs; Up, Down and Equal count those with
	// b > a, b < a and b = a. The test uses the Up + Down non-zero
	// differences (Wilcoxon's treatment of zeros, R's default).
	Pairs           int `json:"pairs"`
	Up, Down, Equal int
	// SignP is the two-sided exact sign test on Up against Down
	// (binomial, p = 1/2): the same question asked without magnitudes.
	SignP float64 `json:"signP"`
	// Degenerate is true when no pair differs: the test has nothing to
	// decide (every arrangement of signs gives the same statistic).
	Degenerate bool     `json:"degenerate,omitempty"`
	Warnings   []string `json:"warnings,omitempty"`
}

// WilcoxonSignedRank tests whether the paired differences d_i = b_i − a_i
// are symmetric about 0, against the two-sided alternative that b tends to
// be larger or smaller than a. a and b must have the same length; a[i] and
// b[i] are one pair (one pod under two runs sharing its random numbers).
//
// Method (R: wilcox.test(b, a, paired = TRUE)): zero differences are
// dropped; the n remaining |d| are ranked, ties averaged; V is the rank sum
// of the positive ones. With n ≤ ExactSignedRankMax, no ties and no zeros,
// p is exact: 2·min(P(V ≤ v), P(V ≥ v)) from the count of the 2^n sign
// assignments giving each V. Otherwise the normal approximation with tie
// and continuity correction,
//
//	σ² = n(n+1)(2n+1)/24 − Σ(t³−t)/48,  z = (V − n(n+1)/4 ∓ 0.5)/σ.
//
// Assumptions: pairs independent of each other; under the null each
// difference is symmetric about 0. Unlike Mann–Whitney it uses the pairing,
// so a shift common to every pod stands out of the pod-to-pod spread.
func WilcoxonSignedRank(a, b []float64) SignedRankResult {
	r := SignedRankResult{Pairs: len(a), P: math.NaN(), V: math.NaN(), SignP: math.NaN()}
	switch {
	case len(a) != len(b):
		r.Warnings = append(r.Warnings, "samples of different lengths cannot be paired")
		r.Pairs = 0
		return r
	case len(a) == 0:
		r.Warnings = append(r.Warnings, "no pairs")
		return r
	case hasNaN(a) || hasNaN(b):
		r.Warnings = append(r.Warnings, "sample contains NaN")
		return r
	}
	d := make([]float64, 0, len(a))
	for i := range a {
		switch x := b[i] - a[i]; {
		case b[i] > a[i]:
			r.Up++
			d = append(d, x)
		case b[i] < a[i]:
			r.Down++
			d = append(d, x)
		default:
			r.Equal++
		}
	}
	r.SignP = SignTest(r.Up, r.Down)
	n := len(d)
	if n == 0 {
		r.V, r.P, r.Degenerate = 0, 1, true
		r.Warnings = append(r.Warnings, "no pair differs")
		return r
	}
	slices.SortFunc(d, func(x, y float64) int { return cmpFloat(math.Abs(x), math.Abs(y)) })
	var v, tieSum float64
	ties := false
	for i := 0; i < n; {
		j := i + 1
		for j < n && math.Abs(d[j]) == math.Abs(d[i]) {
			j++
		}
		if t := float64(j - i); j-i > 1 {
			ties = true
			tieSum += t*t*t - t
		}
		rank := float64(i+j+1) / 2 // ranks i+1..j averaged
		for k := i; k < j; k++ {
			if d[k] > 0 {
				v += rank
			}
		}
		i = j
	}
	r.V = v
	if n <= ExactSignedRankMax && !ties && r.Equal == 0 {
		r.Exact = true
		r.P = signedRankExactP(n, v)
		return r
	}
	fn := float64(n)
	sigma := math.Sqrt(fn*(fn+1)*(2*fn+1)/24 - tieSum/48)
	if !(sigma > 0) {
		r.P = 1
		r.Warnings = append(r.Warnings, "all differences are equal in size: normal approximation undefined")
		return r
	}
	z := v - fn*(fn+1)/4
	z -= math.Copysign(0.5, z) * b2f(z != 0)
	r.Z = z / sigma
	r.P = min(1, 2*distuv.UnitNormal.Survival(math.Abs(r.Z)))
	return r
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// signedRankCounts returns c[v] = the number of the 2^n sign assignments
// of the ranks 1..n whose positive ranks sum to v, v = 0..n(n+1)/2: the
// subsets of {1..n} by their sum (c_k(v) = c_{k−1}(v) + c_{k−1}(v − k)).
// Exact in float64 for n ≤ 52.
func signedRankCounts(n int) []float64 {
	c := make([]float64, n*(n+1)/2+1)
	c[0] = 1
	top := 0
	for k := 1; k <= n; k++ {
		top += k
		for v := top; v >= k; v-- {
			c[v] += c[v-k]
		}
	}
	return c
}

// signedRankExactP is R's psignrank-based two-sided p-value:
// 2·P(V ≥ v) if v is above the mean n(n+1)/4, else 2·P(V ≤ v), capped at 1.
func signedRankExactP(n int, v float64) float64 {
	c := signedRankCounts(n)
	total := math.Ldexp(1, n)
	var tail float64
	if v > float64(n*(n+1))/4 {
		for i := int(math.Ceil(v)); i < len(c); i++ {
			tail += c[i]
		}
	} else {
		for i := 0; i <= int(math.Floor(v)); i++ {
			tail += c[i]
		}
	}
	return min(1, 2*tail/total)
}

// SignTest returns the two-sided exact sign-test p-value for up positive
// and down negative differences (ties already dropped): R's
// binom.test(up, up + down)$p.value, which for p = 1/2 is
// min(1, 2·P(X ≤ min(up, down))) with X ~ Binomial(up + down, 1/2).
// It is 1 when there is no difference at all.
func SignTest(up, down int) float64 {
	n := up + down
	if n == 0 {
		return 1
	}
	k := min(up, down)
	// The CDF as a sum in log space stays exact-enough far in the tail
	// (2·2^−67 for 67 against 0), where 1 − survival would round to 0.
	var p float64
	for i := 0; i <= k; i++ {
		p += math.Exp(lchoose(n, i) - float64(n)*math.Ln2)
	}
	return min(1, 2*p)
}

func lchoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}
