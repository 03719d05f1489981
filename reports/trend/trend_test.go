package trend

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/sidebench/sidebench/reports/render"
	"github.com/sidebench/sidebench/reports/stats"
)

// night is a run of scenario s whose pod_startup samples are lognormal
// around median ms, with k of n pods violating INV-S5.
func night(dir string, start time.Time, median float64, k, n int, seed uint64) Night {
	r := rand.New(rand.NewPCG(seed, 1))
	h := &stats.Hist{}
	for range n {
		h.Add(median * (1 + 0.2*r.NormFloat64()))
	}
	l := render.Latency{Policy: "kep753", Metric: "pod_startup", Ms: h, N: h.N(),
		P50: stats.QuantileSummaryOf(h, 0.5, 0.95), P99: stats.QuantileSummaryOf(h, 0.99, 0.95)}
	d := render.RunData{Scenario: "s", Policies: []string{"kep753", "none"}, Roles: map[string]string{"none": render.RoleBaseline},
		Latencies:  []render.Latency{l},
		Invariants: []render.InvariantRow{{Policy: "kep753", ID: "INV-S5", Checked: n, Violations: k, ViolatingPods: k}},
		PolicyRuns: map[string]render.PolicyRun{"kep753": {Pods: n, ViolatingPods: k}}}
	return Night{Dir: dir, Start: start, Runs: []render.RunData{d}}
}

// TestBuildOrdersNightsAndFlagsTheNewest: nights given in any order are
// ordered by start time; a slower newest night is a regression, a slower
// night in the middle only a change, and the baseline is not judged.
func TestBuildOrdersNightsAndFlagsTheNewest(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 21, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	nights := []Night{
		night("c", t0.Add(2*day), 1000, 0, 3000, 3),
		night("a", t0, 1000, 0, 3000, 1),
		night("b", t0.Add(day), 1000, 0, 3000, 2),
	}
	tb := Build(nights, Options{})
	if tb.Nights[0].Dir != "a" || tb.Nights[2].Dir != "c" || len(tb.Series) != 1 || tb.Series[0].Policy != "kep753" {
		t.Fatalf("nights %+v series %+v", tb.Nights, tb.Series)
	}
	if tb.Flagged() || tb.Regressed {
		t.Errorf("same behaviour flagged: %+v", tb.Series[0].Points)
	}
	slow := append(nights, night("d", t0.Add(3*day), 1300, 40, 3000, 4))
	tb = Build(slow, Options{})
	last := tb.Series[0].Points[3]
	if !tb.Regressed || !last.Regression || len(tb.Regressions) == 0 || !strings.Contains(strings.Join(last.Changes, ";"), "pod_startup median") ||
		!strings.Contains(strings.Join(last.Changes, ";"), "INV-S5 violation rate 0/3000 → 40/3000 (worse)") {
		t.Errorf("slower, violating newest night: %+v", last)
	}
	middle := append(nights[1:], night("d", t0.Add(3*day), 1000, 0, 3000, 5), night("x", t0.Add(-day), 1300, 0, 3000, 6))
	tb = Build(middle, Options{})
	if tb.Regressed || !tb.Flagged() {
		t.Errorf("a slower first night: regressed=%v flagged=%v", tb.Regressed, tb.Flagged())
	}
}

// TestTrendRatesCountViolatingPods: a night whose invariant broke several
// times per pod (more violations than pods) is compared by pods with a
// violation, as compare and the report count; the violations used to be
// the numerator, and more of them than pods made the interval panic.
func TestTrendRatesCountViolatingPods(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 21, 0, 0, 0, time.UTC)
	a := night("a", t0, 1000, 10, 300, 1)
	b := night("b", t0.Add(24*time.Hour), 1000, 290, 300, 2)
	b.Runs[0].Invariants[0].Violations = 1800 // six a pod
	tb := Build([]Night{a, b}, Options{})
	last := tb.Series[0].Points[1]
	if !strings.Contains(strings.Join(last.Changes, ";"), "INV-S5 violation rate 10/300 → 290/300 (worse)") {
		t.Errorf("changes %q; want the rate of violating pods, 290/300", last.Changes)
	}
}
