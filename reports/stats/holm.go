package stats

import (
	"math"
	"slices"
)

// Holm returns Holm–Bonferroni adjusted p-values, in the order given (R:
// p.adjust(p, "holm")). With the m p-values sorted ascending,
// p'_(i) = max_{j≤i} min(1, (m−j+1)·p_(j)). Rejecting every hypothesis with
// adjusted p < α controls the family-wise error rate at α without
// assumptions about dependence between the tests. NaNs are kept as NaN and
// do not count towards m.
func Holm(p []float64) []float64 {
	out := make([]float64, len(p))
	idx := make([]int, 0, len(p))
	for i, v := range p {
		if math.IsNaN(v) {
			out[i] = math.NaN()
			continue
		}
		idx = append(idx, i)
	}
	slices.SortStableFunc(idx, func(x, y int) int { return cmpFloat(p[x], p[y]) })
	m := len(idx)
	running := 0.0
	for j, i := range idx {
		running = max(running, min(1, float64(m-j)*p[i]))
		out[i] = running
	}
	return out
}
