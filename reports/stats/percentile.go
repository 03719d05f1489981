package stats

import (
	"fmt"
	"math"
	"slices"
)

// Percentile returns the p-th percentile (0 ≤ p ≤ 100) of x by nearest rank,
// the ClusterLoader2 definition (perf-tests
// clusterloader2/pkg/measurement/util/latency_metric.go NewLatencyMetric):
//
//	sorted[ceil(n·p/100) − 1]
//
// with the rank clamped to [1, n] (so p = 0 gives the minimum). x need not be
// sorted; it is not modified. It returns NaN for an empty sample or p
// outside [0, 100].
//
// For integer p the rank is computed exactly, as CL2 does with integer
// arithmetic: float64(n)·p is an exact integer below 2^53 and the division by
// 100 cannot round across an integer.
func Percentile(x []float64, p float64) float64 {
	if len(x) == 0 || !(p >= 0 && p <= 100) {
		return math.NaN()
	}
	return PercentileSorted(sortedCopy(x), p)
}

// PercentileSorted is Percentile for an already sorted (ascending) sample.
func PercentileSorted(sorted []float64, p float64) float64 {
	return PercentileOf(Sorted(sorted), p)
}

// PercentileOf is Percentile for an ordered sample (a sorted slice or a
// Hist).
func PercentileOf(sorted Ordered, p float64) float64 {
	n := sorted.Len()
	if n == 0 || !(p >= 0 && p <= 100) {
		return math.NaN()
	}
	return sorted.At(NearestRank(n, p) - 1)
}

// NearestRank returns the 1-based nearest rank ceil(n·p/100), clamped to
// [1, n]. It returns 0 when n == 0.
func NearestRank(n int, p float64) int {
	if n <= 0 {
		return 0
	}
	r := int(math.Ceil(float64(n) * p / 100))
	return min(max(r, 1), n)
}

// ClampNegative returns a copy of x with negative values replaced by 0. CL2
// clamps negative latencies (clock skew between the observer and the
// timestamps it compares) to zero before taking percentiles; sidebench
// histories use one clock per run, so metrics only need this for merged
// data from several observers.
func ClampNegative(x []float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = max(v, 0)
	}
	return out
}

// Percentiles is the CL2 LatencyMetric triple plus the sample size. Values
// are in the unit of the input (sidebench uses milliseconds, as CL2's
// PerfData does).
type Percentiles struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	N   int     `json:"n"`
}

// PercentileSummary returns p50, p90 and p99 of x by nearest rank. For an
// empty sample all percentiles are 0 (as CL2 reports) and N is 0; check N.
func PercentileSummary(x []float64) Percentiles {
	if len(x) == 0 {
		return Percentiles{}
	}
	s := sortedCopy(x)
	return Percentiles{
		P50: PercentileSorted(s, 50),
		P90: PercentileSorted(s, 90),
		P99: PercentileSorted(s, 99),
		N:   len(s),
	}
}

func (p Percentiles) String() string {
	return fmt.Sprintf("p50=%.4g p90=%.4g p99=%.4g n=%d", p.P50, p.P90, p.P99, p.N)
}

// sortedCopy returns x sorted ascending, without modifying x. NaNs sort
// first (slices.Sort order); callers that care reject NaN earlier.
func sortedCopy(x []float64) []float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	return s
}

func hasNaN(x []float64) bool {
	return slices.ContainsFunc(x, math.IsNaN)
}

func cmpFloat(x, y float64) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}
