package render

import (
	"math"
	"testing"
)

// FuzzInvariantRowRate: every output's violation rate comes from
// InvariantRow.Rate, so it must take any counts a row can hold (more
// violations than pods: an invariant broken at every restart; rows from
// before ViolatingPods) and give 0 <= k <= n with ordered bounds in [0, 1].
// compare used to divide violations by pods and panicked in the
// Clopper–Pearson interval on 1079/180.
func FuzzInvariantRowRate(f *testing.F) {
	for _, c := range [][3]uint32{{180, 1079, 178}, {180, 1079, 0}, {0, 0, 0}, {1, 5, 1}, {300000, 0, 0}, {40, 40, 40}, {7, 0, 9}} {
		f.Add(c[0], c[1], c[2])
	}
	f.Fuzz(func(t *testing.T, checked, violations, violatingPods uint32) {
		r := InvariantRow{Checked: int(checked % 1e7), Violations: int(violations % 1e8), ViolatingPods: int(violatingPods % 1e7)}
		s := r.Rate(DefaultConfidence)
		if s.N != r.Checked || s.K < 0 || s.K > s.N {
			t.Fatalf("%+v: k=%d n=%d", r, s.K, s.N)
		}
		for _, b := range [][2]float64{{s.CPLo, s.CPHi}, {s.WilsonLo, s.WilsonHi}} {
			if math.IsNaN(b[0]) || math.IsNaN(b[1]) || b[0] < 0 || b[1] > 1 || b[0] > b[1] {
				t.Fatalf("%+v: bounds %v", r, b)
			}
		}
		if s.N > 0 && (s.Rate < s.CPLo-1e-12 || s.Rate > s.CPHi+1e-12) {
			t.Fatalf("%+v: rate %v outside [%v, %v]", r, s.Rate, s.CPLo, s.CPHi)
		}
	})
}
