package runner

import (
	"slices"
	"strings"

	"github.com/sidebench/sidebench/harness/check"
	"github.com/sidebench/sidebench/harness/metrics"
	"github.com/sidebench/sidebench/harness/rundir"
	"github.com/sidebench/sidebench/harness/scenario"
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

// comparesWorkarounds reports whether scenario s runs a workaround
// policy.
func comparesWorkarounds(s *scenario.Scenario) bool {
	if s == nil {
		return false
	}
	for _, g := range s.PolicyGates() {
		if g.IsWorkaround() {
			return true
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

// userCounts are user-level counts per stratum and startup latency
// histograms per (workload, metric): one trial's, collected from its pods'
// records as they are checked (kept with the trial's stats as
// rundir.UserStats, so that they cover every pod whatever the retention),
// or one scenario × policy's, merged from its trials'.
type userCounts struct {
	// perWorkload: add collects per-workload startup latencies (the
	// scenario compares workarounds: a workload's own startup cost is the
	// debate's, and the Latency section pools workloads).
	perWorkload bool
	pods        map[string]int            // stratum → pods
	unmet       map[string]map[string]int // stratum → guarantee → pods
	startup     map[[2]string]*stats.Hist // (workload, metric) → ms
}

func newUserCounts(perWorkload bool) *userCounts {
	return &userCounts{perWorkload: perWorkload, pods: map[string]int{}}
}

func (c *userCounts) addUnmet(stratum, id string, n int) {
	if c.unmet == nil {
		c.unmet = map[string]map[string]int{}
	}
	if c.unmet[stratum] == nil {
		c.unmet[stratum] = map[string]int{}
	}
	c.unmet[stratum][id] += n
}

func (c *userCounts) hist(workload, metric string) *stats.Hist {
	k := [2]string{workload, metric}
	h := c.startup[k]
	if h == nil {
		if c.startup == nil {
			c.startup = map[[2]string]*stats.Hist{}
		}
		h = &stats.Hist{}
		c.startup[k] = h
	}
	return h
}

// add counts one pod; rec.Unmet must be set.
func (c *userCounts) add(rec *metrics.Record) {
	if c.perWorkload && !rec.Faulted {
		for _, m := range render.UserStartupMetrics {
			if v, ok := rec.Latency(m); ok {
				c.hist(rec.Workload, m).Add(v)
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
		c.pods[s]++
		for _, id := range rec.Unmet {
			c.addUnmet(s, id, 1)
		}
	}
}

// merge adds one trial's counts (nil: none).
func (c *userCounts) merge(u *rundir.UserStats) {
	if u == nil {
		return
	}
	for s, n := range u.Pods {
		c.pods[s] += n
	}
	for s, m := range u.Unmet {
		for id, n := range m {
			c.addUnmet(s, id, n)
		}
	}
	for _, su := range u.Startup {
		if su.Ms != nil {
			c.hist(su.Workload, su.Metric).Merge(su.Ms)
		}
	}
}

// stats returns the counts as a trial's, startups in (workload, metric)
// order.
func (c *userCounts) stats() *rundir.UserStats {
	st := &rundir.UserStats{Pods: c.pods, Unmet: c.unmet}
	for _, k := range sortedStartupKeys(c.startup) {
		st.Startup = append(st.Startup, rundir.UserStartup{Workload: k[0], Metric: k[1], Ms: c.startup[k]})
	}
	return st
}

func sortedStartupKeys[V any](m map[[2]string]V) [][2]string {
	keys := make([][2]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y [2]string) int {
		if c := strings.Compare(x[0], y[0]); c != 0 {
			return c
		}
		return slices.Index(render.UserStartupMetrics, x[1]) - slices.Index(render.UserStartupMetrics, y[1])
	})
	return keys
}

// addUserLevel folds one trial's user-level counts into row r's (u nil:
// a trial without them, counted as a row all the same).
func (a *Aggregate) addUserLevel(r *Row, u *rundir.UserStats) {
	if a.user == nil {
		a.user = map[*Row]*userCounts{}
	}
	t := a.user[r]
	if t == nil {
		t = newUserCounts(false)
		a.user[r] = t
	}
	t.merge(u)
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
		for _, k := range sortedStartupKeys(t.startup) {
			h := t.startup[k]
			u.Startup = append(u.Startup, render.UserStartup{Policy: r.Policy, Workload: k[0], Metric: k[1], N: h.N(),
				P50: stats.QuantileSummaryOf(h, 0.5, render.DefaultConfidence), P90: stats.QuantileSummaryOf(h, 0.9, render.DefaultConfidence)})
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
