package stats

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Slope fits y = a + b·x by least squares and returns b with its
// confidence interval: b ± t_{n−2, (1+c)/2} · SE(b), SE(b) =
// sqrt(Σr²/(n−2) / Σ(x−x̄)²). It answers "is this series flat?" (a
// soak's resident set size over time): flat within noise when the
// interval contains 0.
//
// Assumptions: independent errors of constant variance, roughly normal
// (or n large). Consecutive samples of a process's memory are not
// independent, so read the interval as a guide, not a test. Quantile is 0
// (not a quantile); N is the number of points.
func Slope(x, y []float64, confidence float64) Summary {
	s := Summary{Center: math.NaN(), Lo: math.Inf(-1), Hi: math.Inf(1), Confidence: confidence, N: len(x)}
	switch {
	case len(x) != len(y):
		s.Warnings = append(s.Warnings, fmt.Sprintf("%d x values and %d y values", len(x), len(y)))
		return s
	case len(x) < 3:
		s.Warnings = append(s.Warnings, "need >= 3 points for a slope and its interval")
		if len(x) == 2 && x[1] != x[0] {
			s.Center = (y[1] - y[0]) / (x[1] - x[0])
		}
		return s
	}
	_, b := stat.LinearRegression(x, y, nil, false)
	s.Center = b
	mx := stat.Mean(x, nil)
	var sxx, rss float64
	a := stat.Mean(y, nil) - b*mx
	for i := range x {
		sxx += (x[i] - mx) * (x[i] - mx)
		r := y[i] - a - b*x[i]
		rss += r * r
	}
	if sxx == 0 {
		s.Center = math.NaN()
		s.Warnings = append(s.Warnings, "all x values are equal")
		return s
	}
	se := math.Sqrt(rss / float64(len(x)-2) / sxx)
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(len(x) - 2)}.Quantile((1 + confidence) / 2)
	s.Lo, s.Hi = b-t*se, b+t*se
	return s
}
