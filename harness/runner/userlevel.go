package runner

import (
	"slices"
	"strings"

	"github.com/sidebench/sidebench/harness/check"
	"github.com/sidebench/sidebench/harness/metrics"
	"github.com/sidebench/sidebench/reports/render"
	"github.com/sidebench/sidebench/reports/stats"
)

// The user-level guarantees (harness/check, Level USER) are counted per
// pod and fault kind from pods.jsonl: each record carries the guarantees
// the pod did not get (Record.Unmet) and the fault kinds that took effect
// on it (Record.Faults). A pod is counted in the stratum of the one fault
// kind that touched it, in "no fault" if none did, in "several faults" if
// more than one kind did (so that each fault kind's rate is that kind's
// alone), and in "all".

// userGuarantees are the registered user-level checkers, in report order.
var userGuarantees = func() []render.UserGuarantee {
	var out []render.UserGuarantee
	for _, c := range check.Checkers() {
		if c.Level() == check.User {
			out = append(out, render.UserGuarantee{ID: c.ID(), Rule: c.Rule()})
		}
	}
	return out
}()

// comparesWorkarounds reports whether scenario scen runs a workaround
// policy.
func (a *Aggregate) comparesWorkarounds(scen string) bool {
	if s := a.byName[scen]; s != nil {
		for _, g := range s.PolicyGates() {
			if g.IsWorkaround() {
				return true
			}
		}
	}
	return false
}

// isUserLevel reports whether an invariant ID is a user-level guarantee.
func isUserLevel(id string) bool {
	for _, g := range userGuarantees {
		if g.ID == id {
			return true
		}
	}
	return false
}

// userTally is one scenario × policy's user-level counts, and the
// startup latencies of its pods no fault touched per workload and metric
// (only for scenarios that compare workarounds: a workload's own startup
// cost is the debate's, and the Latency section pools workloads).
type userTally struct {
	pods    map[string]int            // stratum → pods
	unmet   map[string]map[string]int // stratum → guarantee → pods
	startup map[[2]string][]float64   // (workload, metric) → ms
}

// addUserLevel folds one trial's pod records into row r's tally.
func (a *Aggregate) addUserLevel(r *Row, recs []metrics.Record) {
	if a.user == nil {
		a.user = map[*Row]*userTally{}
	}
	t := a.user[r]
	if t == nil {
		t = &userTally{pods: map[string]int{}, unmet: map[string]map[string]int{}}
		a.user[r] = t
	}
	perWorkload := a.comparesWorkarounds(r.Scenario)
	for i := range recs {
		rec := &recs[i]
		if perWorkload && !rec.Faulted {
			if t.startup == nil {
				t.startup = map[[2]string][]float64{}
			}
			for _, m := range render.UserStartupMetrics {
				if v, ok := rec.Latency(m); ok {
					k := [2]string{rec.Workload, m}
					t.startup[k] = append(t.startup[k], v)
				}
			}
		}
		strata := []string{render.StratumAll, render.StratumNoFault}
		switch len(rec.Faults) {
		case 0:
		case 1:
			strata[1] = rec.Faults[0]
		default:
			strata[1] = render.StratumSeveral
		}
		for _, s := range strata {
			t.pods[s]++
			for _, id := range rec.Unmet {
				if t.unmet[s] == nil {
					t.unmet[s] = map[string]int{}
				}
				t.unmet[s][id]++
			}
		}
	}
}

// userLevel returns scenario scen's user-level section, or nil when its
// pods have no user sidecar to judge (nothing unmet, and no policy is a
// workaround or compares designs: a single-policy scenario without
// findings gets no section).
func (a *Aggregate) userLevel(scen string) *render.UserLevel {
	u := &render.UserLevel{Guarantees: userGuarantees}
	strata := map[string]bool{}
	any := false
	for _, r := range a.rows {
		t := a.user[r]
		if r.Scenario != scen || t == nil {
			continue
		}
		u.Policies = append(u.Policies, r.Policy)
		for s, n := range t.pods {
			strata[s] = true
			for _, g := range u.Guarantees {
				k := t.unmet[s][g.ID]
				any = any || k > 0
				u.Cells = append(u.Cells, render.UserCell{Policy: r.Policy, Stratum: s, ID: g.ID, K: k, N: n})
			}
		}
	}
	if len(u.Policies) < 2 && !any {
		return nil
	}
	for _, r := range a.rows {
		t := a.user[r]
		if r.Scenario != scen || t == nil {
			continue
		}
		keys := make([][2]string, 0, len(t.startup))
		for k := range t.startup {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(x, y [2]string) int {
			if c := strings.Compare(x[0], y[0]); c != 0 {
				return c
			}
			return slices.Index(render.UserStartupMetrics, x[1]) - slices.Index(render.UserStartupMetrics, y[1])
		})
		for _, k := range keys {
			x := t.startup[k]
			u.Startup = append(u.Startup, render.UserStartup{Policy: r.Policy, Workload: k[0], Metric: k[1], N: len(x),
				P50: stats.QuantileSummary(x, 0.5, render.DefaultConfidence), P90: stats.QuantileSummary(x, 0.9, render.DefaultConfidence)})
		}
	}
	for s := range strata {
		u.Strata = append(u.Strata, s)
	}
	render.SortStrata(u.Strata)
	slices.SortStableFunc(u.Cells, func(x, y render.UserCell) int {
		return slices.Index(u.Strata, x.Stratum) - slices.Index(u.Strata, y.Stratum)
	})
	return u
}
