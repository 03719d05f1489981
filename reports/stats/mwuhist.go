package stats

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Mann–Whitney U over histograms: how `sidebench trend` tests whether two
// nights' pod_startup distributions differ (the unpaired test `compare`
// uses through x/perf's benchmath), on the 1 ms histograms the runs keep
// for every pod, so that it needs no per-pod record.

// ExactMWUMax is the largest per-sample size for which MannWhitneyU uses the
// exact null distribution (when there are no ties).
const ExactMWUMax = 20

// MWUResult is the outcome of a two-sided Mann–Whitney U test.
type MWUResult struct {
	// U is the statistic of the first sample: the number of pairs (a_i, b_j)
	// with a_i > b_j, ties counting one half (R1 − n1(n1+1)/2).
	U float64 `json:"u"`
	// P is the two-sided p-value.
	P float64 `json:"p"`
	// Exact reports whether P came from the exact null distribution; if not,
	// from the normal approximation, and Z is its statistic.
	Exact    bool     `json:"exact"`
	Z        float64  `json:"z,omitempty"`
	N1       int      `json:"n1"`
	N2       int      `json:"n2"`
	Warnings []string `json:"warnings,omitempty"`
}

// MannWhitneyUHist tests whether the samples of two Hists come from the
// same distribution against the two-sided alternative that one is
// stochastically larger: ranks with ties averaged (equal buckets are
// ties); without ties and with both samples of at most ExactMWUMax values
// the p-value is exact, otherwise the normal approximation with tie and
// continuity correction (R: wilcox.test(a, b, exact=FALSE, correct=TRUE)).
func MannWhitneyUHist(a, b *Hist) MWUResult {
	if a.N() == 0 || b.N() == 0 {
		return MWUResult{N1: a.N(), N2: b.N(), P: math.NaN(), U: math.NaN(), Warnings: []string{"no samples"}}
	}
	var groups []tieGroup
	mergeBuckets(a, b, func(_ int64, ca, cb int) { groups = append(groups, tieGroup{ca, cb}) })
	return mwu(groups, a.N(), b.N())
}

// tieGroup is one distinct value of the pooled samples: how many of its
// copies come from each sample.
type tieGroup struct{ a, b int }

// mergeBuckets calls fn for every bucket of a or b in ascending order with
// both counts.
func mergeBuckets(a, b *Hist, fn func(ms int64, ca, cb int)) {
	a.view()
	b.view()
	i, j := 0, 0
	for i < len(a.keys) || j < len(b.keys) {
		switch {
		case j >= len(b.keys) || i < len(a.keys) && a.keys[i] < b.keys[j]:
			fn(a.keys[i], int(a.counts[a.keys[i]]), 0)
			i++
		case i >= len(a.keys) || b.keys[j] < a.keys[i]:
			fn(b.keys[j], 0, int(b.counts[b.keys[j]]))
			j++
		default:
			fn(a.keys[i], int(a.counts[a.keys[i]]), int(b.counts[b.keys[j]]))
			i++
			j++
		}
	}
}

// mwu is the test over the pooled samples' tie groups in ascending order.
func mwu(groups []tieGroup, n1, n2 int) MWUResult {
	r := MWUResult{N1: n1, N2: n2, P: math.NaN(), U: math.NaN()}
	var r1, tieSum float64
	ties := false
	i := 0 // values before this group
	for _, g := range groups {
		t := g.a + g.b
		if t > 1 {
			ties = true
			ft := float64(t)
			tieSum += ft*ft*ft - ft
		}
		avg := float64(2*i+t+1) / 2 // ranks i+1..i+t averaged
		r1 += float64(g.a) * avg
		i += t
	}
	f1 := float64(n1)
	r.U = r1 - f1*(f1+1)/2
	if !ties && n1 <= ExactMWUMax && n2 <= ExactMWUMax {
		r.Exact = true
		r.P = mwuExactP(n1, n2, r.U)
		return r
	}
	var ok bool
	r.Z, r.P, ok = mwuNormal(r.U, n1, n2, tieSum)
	if !ok {
		r.Warnings = append(r.Warnings, "all values are equal")
		return r
	}
	if ties && n1 <= ExactMWUMax && n2 <= ExactMWUMax {
		r.Warnings = append(r.Warnings, "ties present: normal approximation used for a small sample")
	}
	return r
}

// mwuNormal is the normal approximation with tie correction (tieSum is
// Σ(t³−t) over tie groups) and continuity correction. ok is false when the
// variance is 0 (all values equal); p is then 1.
func mwuNormal(u float64, n1, n2 int, tieSum float64) (z, p float64, ok bool) {
	f1, f2 := float64(n1), float64(n2)
	nf := f1 + f2
	sigma := math.Sqrt(f1 * f2 / 12 * ((nf + 1) - tieSum/(nf*(nf-1))))
	if !(sigma > 0) {
		return 0, 1, false
	}
	z = max(0, math.Abs(u-f1*f2/2)-0.5) / sigma
	return z, min(1, 2*distuv.UnitNormal.Survival(z)), true
}

// mwuCounts returns c[u] = the number of the C(m+n, m) arrangements of m
// values of one sample among n of the other (no ties) whose U equals u,
// for u = 0..m·n, by the recurrence f(m, n, u) = f(m−1, n, u−n) + f(m, n−1, u)
// (the largest value belongs to the first sample, contributing n to U, or to
// the second, contributing nothing). Counts are exact in float64 up to
// C(40, 20) ≈ 1.4e11.
func mwuCounts(m, n int) []float64 {
	// f[i][j] is the distribution for sizes (i, j); built row by row.
	prev := make([][]float64, n+1) // sizes (i−1, j)
	for j := 0; j <= n; j++ {
		prev[j] = []float64{1} // m = 0: U = 0 in exactly one way
	}
	for i := 1; i <= m; i++ {
		cur := make([][]float64, n+1)
		cur[0] = []float64{1} // n = 0: U = 0
		for j := 1; j <= n; j++ {
			d := make([]float64, i*j+1)
			for u, c := range prev[j] { // largest from the first sample: +j
				d[u+j] += c
			}
			for u, c := range cur[j-1] { // largest from the second sample
				d[u] += c
			}
			cur[j] = d
		}
		prev = cur
	}
	return prev[n]
}

// mwuExactP returns the exact two-sided p-value 2·P(U ≤ min(u, mn−u)),
// capped at 1 (the null distribution is symmetric).
func mwuExactP(m, n int, u float64) float64 {
	c := mwuCounts(m, n)
	var total, tail float64
	lim := min(u, float64(m*n)-u)
	for i, v := range c {
		total += v
		if float64(i) <= lim {
			tail += v
		}
	}
	return min(1, 2*tail/total)
}
