// Package stats holds the statistics sidebench reports are built from:
// percentiles with a declared estimator, distribution-free confidence
// intervals for quantiles, a seeded bootstrap, rare-event rate bounds
// (Wilson, Clopper–Pearson, rule of three) and the number of trials needed
// to certify a rate, the paired Wilcoxon signed-rank and sign tests, the
// two-sample Kolmogorov–Smirnov test, Holm–Bonferroni correction, and
// benchstat-style Summary values that carry their warnings with them. The
// unpaired Mann–Whitney U test is golang.org/x/perf/benchmath's, called by
// reports/compare.
//
// Style follows golang.org/x/perf/benchmath: every estimator states its
// assumptions, results carry a confidence interval and a list of warnings
// (problems with the data, never failures), and nothing here does I/O or
// reads global randomness. Only the standard library and gonum are
// imported.
//
// Estimators, in one place (docs/stats.md has the long form):
//
//   - Percentile: nearest rank, the ClusterLoader2 definition
//     sorted[ceil(n·p/100)−1]. Never interpolates; the result is always an
//     observed value.
//   - Quantile CI: order statistics X_(lo) ≤ ξ_q ≤ X_(hi) with ranks chosen
//     from Binomial(n, q) tails, α/2 each side. Distribution-free; assumes
//     independent, identically distributed samples from a continuous
//     distribution (with ties the coverage is still at least the nominal
//     level). An unattainable bound is ±Inf plus a warning.
//   - Bootstrap: percentile bootstrap, math/rand/v2 PCG seeded by the
//     caller, so the same seed gives the same interval.
//   - Rates: Wilson score and Clopper–Pearson (exact, via Beta quantiles).
//   - Wilcoxon signed-rank: zeros dropped, ties averaged; exact below 50
//     non-zero differences without ties or zeros, normal approximation
//     with tie and continuity correction otherwise (R's wilcox.test).
//   - Paired bootstrap of quantile changes: pods resampled with their
//     partners, O(n) per resample through counts.
//   - Kolmogorov–Smirnov: D from gonum, asymptotic p-value (Stephens'
//     effective-n correction).
package stats
