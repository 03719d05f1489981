package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// Statistic reduces a sample to one number. It may reorder its argument.
type Statistic func(x []float64) float64

// Mean is the arithmetic mean as a Statistic.
func Mean(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	var s float64
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// Median is the nearest-rank median (Percentile 50) as a Statistic. It
// sorts x in place.
func Median(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	slices.Sort(x)
	return PercentileSorted(x, 50)
}

// DefaultResamples is the bootstrap resample count used when the caller
// passes 0.
const DefaultResamples = 10000

// bootstrapStream derives the PCG stream from the seed; the constant only
// separates bootstrap streams from other users of the same seed.
const bootstrapStream = 0x5eedb007c0ffee

func newRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, bootstrapStream))
}

// Bootstrap returns the percentile-bootstrap confidence interval for
// stat(x): Center is stat(x) on the original sample, [Lo, Hi] are the
// nearest-rank α/2 and 1−α/2 percentiles of stat over `resamples`
// resamples drawn with replacement. The random source is math/rand/v2 PCG
// seeded with seed, so the result is a pure function of its arguments.
//
// Assumptions: i.i.d. samples, and a statistic that is smooth in the data
// (means are fine). For extreme quantiles the percentile bootstrap cannot
// exceed the sample maximum and undercovers; use QuantileSummary instead
// (Efron & Tibshirani 1993). Summary.Quantile is 0 (not a quantile).
func Bootstrap(x []float64, stat Statistic, confidence float64, resamples int, seed uint64) Summary {
	s := Summary{Center: math.NaN(), Lo: math.Inf(-1), Hi: math.Inf(1), Confidence: confidence, N: len(x)}
	if w := bootstrapChecks(confidence, x); w != "" {
		s.Warnings = append(s.Warnings, w)
		return s
	}
	if resamples <= 0 {
		resamples = DefaultResamples
	}
	s.Warnings = append(s.Warnings, bootstrapWarnings(resamples, len(x))...)
	s.Center = stat(slices.Clone(x))
	r := newRand(seed)
	buf := make([]float64, len(x))
	vals := make([]float64, resamples)
	for i := range vals {
		resample(r, x, buf)
		vals[i] = stat(buf)
	}
	s.Lo, s.Hi = bootstrapBounds(vals, confidence)
	return s
}

// BootstrapMean is Bootstrap(x, Mean, ...).
func BootstrapMean(x []float64, confidence float64, resamples int, seed uint64) Summary {
	return Bootstrap(x, Mean, confidence, resamples, seed)
}

// BootstrapDiff returns a percentile-bootstrap confidence interval for
// stat(b) − stat(a), resampling a and b independently (two independent
// samples; not paired). Center is stat(b) − stat(a) on the original data.
// With stat = Median this is the difference of medians, with Mean the
// difference of means. Deterministic in seed.
func BootstrapDiff(a, b []float64, stat Statistic, confidence float64, resamples int, seed uint64) Summary {
	s := Summary{Center: math.NaN(), Lo: math.Inf(-1), Hi: math.Inf(1), Confidence: confidence, N: len(a) + len(b)}
	for _, x := range [][]float64{a, b} {
		if w := bootstrapChecks(confidence, x); w != "" {
			s.Warnings = append(s.Warnings, w)
			return s
		}
	}
	if resamples <= 0 {
		resamples = DefaultResamples
	}
	s.Warnings = append(s.Warnings, bootstrapWarnings(resamples, min(len(a), len(b)))...)
	s.Center = stat(slices.Clone(b)) - stat(slices.Clone(a))
	r := newRand(seed)
	ba, bb := make([]float64, len(a)), make([]float64, len(b))
	vals := make([]float64, resamples)
	for i := range vals {
		resample(r, a, ba)
		resample(r, b, bb)
		vals[i] = stat(bb) - stat(ba)
	}
	s.Lo, s.Hi = bootstrapBounds(vals, confidence)
	return s
}

func bootstrapChecks(confidence float64, x []float64) string {
	switch {
	case !(confidence > 0 && confidence < 1):
		return fmt.Sprintf("confidence %v outside (0, 1)", confidence)
	case len(x) == 0:
		return "no samples"
	case hasNaN(x):
		return "sample contains NaN"
	}
	return ""
}

// countChecks is bootstrapChecks for an ordered sample of n values (a
// Hist holds no NaN).
func countChecks(confidence float64, n int) string {
	switch {
	case !(confidence > 0 && confidence < 1):
		return fmt.Sprintf("confidence %v outside (0, 1)", confidence)
	case n == 0:
		return "no samples"
	}
	return ""
}

func bootstrapWarnings(resamples, n int) []string {
	var w []string
	if resamples < 1000 {
		w = append(w, fmt.Sprintf("only %d bootstrap resamples; use >= 1000 for a stable interval", resamples))
	}
	if n < 10 {
		w = append(w, fmt.Sprintf("bootstrap interval unreliable with %d samples; need >= 10", n))
	}
	return w
}

func resample(r *rand.Rand, x, into []float64) {
	for i := range into {
		into[i] = x[r.IntN(len(x))]
	}
}

func bootstrapBounds(vals []float64, confidence float64) (lo, hi float64) {
	slices.Sort(vals)
	alpha := 1 - confidence
	return PercentileSorted(vals, 100*alpha/2), PercentileSorted(vals, 100*(1-alpha/2))
}

// BootstrapQuantileDiff is BootstrapDiff for the nearest-rank q-quantile
// (Percentile 100·q) computed without materialising resamples, so it costs
// O(resamples) after sorting instead of O(resamples · n log n) and suits
// samples of 10^5 values.
//
// It is exact, not an approximation of the resampling bootstrap: a
// resample with replacement is X*_i = sorted[ceil(U_i·n) − 1] for i.i.d.
// uniforms U_i, a nondecreasing function of U_i, so its r-th order
// statistic is sorted[ceil(U_(r)·n) − 1] with U_(r) ~ Beta(r, n − r + 1).
// Each replicate therefore needs one Beta draw per sample (gonum
// distuv.Beta on the seeded PCG source). Deterministic in seed; the
// stream differs from BootstrapDiff's, so the two agree in distribution,
// not draw by draw.
func BootstrapQuantileDiff(a, b []float64, q, confidence float64, resamples int, seed uint64) Summary {
	return quantileBootstrap(a, b, q, confidence, resamples, seed, func(qa, qb float64) float64 { return qb - qa })
}

// quantileBootstrap is combine(Q_q(a), Q_q(b)) on the data with its
// percentile-bootstrap interval, a and b resampled independently through
// their order statistics; bad input gives an unbounded summary and a
// warning.
func quantileBootstrap(a, b []float64, q, confidence float64, resamples int, seed uint64, combine func(qa, qb float64) float64) Summary {
	for _, x := range [][]float64{a, b} {
		if w := bootstrapChecks(confidence, x); w != "" {
			return Summary{Center: math.NaN(), Lo: math.Inf(-1), Hi: math.Inf(1), Confidence: confidence, Quantile: q, N: len(a) + len(b), Warnings: []string{w}}
		}
	}
	return quantileBootstrapOf(Sorted(sortedCopy(a)), Sorted(sortedCopy(b)), q, confidence, resamples, seed, combine)
}

// quantileBootstrapOf is quantileBootstrap over ordered samples (sorted
// slices or Hists): the same draws for the same order statistics.
func quantileBootstrapOf(sa, sb Ordered, q, confidence float64, resamples int, seed uint64, combine func(qa, qb float64) float64) Summary {
	s := Summary{Center: math.NaN(), Lo: math.Inf(-1), Hi: math.Inf(1), Confidence: confidence, Quantile: q, N: sa.Len() + sb.Len()}
	for _, n := range []int{sa.Len(), sb.Len()} {
		if w := countChecks(confidence, n); w != "" {
			s.Warnings = append(s.Warnings, w)
			return s
		}
	}
	if !(q > 0 && q < 1) {
		s.Warnings = append(s.Warnings, fmt.Sprintf("quantile %v outside (0, 1)", q))
		return s
	}
	if resamples <= 0 {
		resamples = DefaultResamples
	}
	s.Warnings = append(s.Warnings, bootstrapWarnings(resamples, min(sa.Len(), sb.Len()))...)
	s.Center = combine(PercentileOf(sa, 100*q), PercentileOf(sb, 100*q))
	src := rand.NewPCG(seed, bootstrapStream)
	ba := orderStatSampler(sa, q, src)
	bb := orderStatSampler(sb, q, src)
	vals := make([]float64, resamples)
	for i := range vals {
		va := ba()
		vals[i] = combine(va, bb())
	}
	s.Lo, s.Hi = bootstrapBounds(vals, s.Confidence)
	return s
}

// BootstrapQuantileDiffOf is BootstrapQuantileDiff over ordered samples
// (sorted slices or Hists).
func BootstrapQuantileDiffOf(sa, sb Ordered, q, confidence float64, resamples int, seed uint64) Summary {
	return quantileBootstrapOf(sa, sb, q, confidence, resamples, seed, func(qa, qb float64) float64 { return qb - qa })
}

// Log is an ordered sample's natural logarithm, itself ordered (log is
// monotone): the log-scale view a ratio of quantiles is bootstrapped on.
type Log struct{ Ordered }

// At is log of the (i+1)-th smallest value.
func (l Log) At(i int) float64 { return math.Log(l.Ordered.At(i)) }

// RelativeChange is qb/qa − 1, the change from qa to qb as a fraction of
// qa. Equal values are no change (also 0 → 0); any other change from 0 is
// ±Inf. It is never NaN for finite inputs, so bootstrap replicates sort.
func RelativeChange(qa, qb float64) float64 {
	switch {
	case qa == qb:
		return 0
	case qa == 0:
		return math.Inf(int(math.Copysign(1, qb)))
	}
	return qb/qa - 1
}

// BootstrapQuantileChange is the relative change of the nearest-rank
// q-quantile from a to b, RelativeChange(Q_q(a), Q_q(b)), with a
// percentile-bootstrap interval, the samples resampled independently
// (BootstrapQuantileDiff's exact order-statistic shortcut: O(resamples)
// after sorting). Use it for unpaired samples; Center is the change on the
// data. Deterministic in seed.
func BootstrapQuantileChange(a, b []float64, q, confidence float64, resamples int, seed uint64) Summary {
	return quantileBootstrap(a, b, q, confidence, resamples, seed, RelativeChange)
}

// BootstrapPairedQuantileChange is BootstrapQuantileChange for paired
// samples: (a[i], b[i]) is one unit (a pod under two runs sharing its
// random numbers), and a resample draws n units with replacement, keeping
// each pair together. The pod-to-pod spread common to both sides then
// cancels out of the interval, which is what makes a paired comparison
// sharper. One summary per q in qs (each in (0, 1)), all from the same
// resamples.
//
// Cost: O(n) per resample, no sorting: a resample is a vector of counts
// per unit, and its nearest-rank quantile on each side is found by walking
// that side's sort order accumulating counts. The result equals sorting
// every materialised resample (a test checks it). Deterministic in seed.
func BootstrapPairedQuantileChange(a, b []float64, qs []float64, confidence float64, resamples int, seed uint64) []Summary {
	out := make([]Summary, len(qs))
	for i, q := range qs {
		out[i] = Summary{Center: math.NaN(), Lo: math.Inf(-1), Hi: math.Inf(1), Confidence: confidence, Quantile: q, N: len(a)}
	}
	fail := func(w string) []Summary {
		for i := range out {
			out[i].Warnings = append(out[i].Warnings, w)
		}
		return out
	}
	if len(a) != len(b) {
		return fail("samples of different lengths cannot be paired")
	}
	for _, x := range [][]float64{a, b} {
		if w := bootstrapChecks(confidence, x); w != "" {
			return fail(w)
		}
	}
	for i, q := range qs {
		if !(q > 0 && q < 1) {
			return fail(fmt.Sprintf("quantile %v outside (0, 1)", q))
		}
		if i > 0 && q <= qs[i-1] {
			return fail(fmt.Sprintf("quantiles %v not ascending", qs))
		}
	}
	if resamples <= 0 {
		resamples = DefaultResamples
	}
	n := len(a)
	ranks := make([]int, len(qs))
	for i, q := range qs {
		ranks[i] = NearestRank(n, 100*q)
		out[i].Warnings = append(out[i].Warnings, bootstrapWarnings(resamples, n)...)
		out[i].Center = RelativeChange(Percentile(a, 100*q), Percentile(b, 100*q))
	}
	orderA, orderB := sortOrder(a), sortOrder(b)
	r := newRand(seed)
	counts := make([]int, n)
	qa, qb := make([]float64, len(qs)), make([]float64, len(qs))
	vals := make([][]float64, len(qs))
	for i := range vals {
		vals[i] = make([]float64, resamples)
	}
	for k := 0; k < resamples; k++ {
		clear(counts)
		for range n {
			counts[r.IntN(n)]++
		}
		quantilesByCount(a, orderA, counts, ranks, qa)
		quantilesByCount(b, orderB, counts, ranks, qb)
		for i := range qs {
			vals[i][k] = RelativeChange(qa[i], qb[i])
		}
	}
	for i := range qs {
		out[i].Lo, out[i].Hi = bootstrapBounds(vals[i], confidence)
	}
	return out
}

// sortOrder returns the indices of x in ascending order of value (stable).
func sortOrder(x []float64) []int {
	idx := make([]int, len(x))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(i, j int) int { return cmpFloat(x[i], x[j]) })
	return idx
}

// quantilesByCount sets out[i] to the value of rank ranks[i] (1-based) in
// the multiset holding counts[u] copies of x[u], walking x in order.
func quantilesByCount(x []float64, order, counts, ranks []int, out []float64) {
	seen, i := 0, 0
	for _, u := range order {
		seen += counts[u]
		for i < len(ranks) && seen >= ranks[i] {
			out[i] = x[u]
			i++
		}
		if i == len(ranks) {
			return
		}
	}
}

// orderStatSampler returns a function drawing the nearest-rank q-quantile
// of a bootstrap resample of sorted.
func orderStatSampler(sorted Ordered, q float64, src rand.Source) func() float64 {
	n := sorted.Len()
	r := NearestRank(n, 100*q)
	beta := distuv.Beta{Alpha: float64(r), Beta: float64(n - r + 1), Src: src}
	return func() float64 {
		u := beta.Rand()
		i := int(math.Ceil(u*float64(n))) - 1
		return sorted.At(min(max(i, 0), n-1))
	}
}
