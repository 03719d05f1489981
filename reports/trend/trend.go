// Package trend follows a scenario's numbers across nightly runs: per
// night and judged policy, the violation rate with its Clopper–Pearson
// upper bound, pod_startup p50 and p99 with their confidence intervals,
// the lifecycles behind them and the build that ran; and, between
// adjacent nights, a change flag from the tests `sidebench compare` uses
// (the unpaired ones of reports/compare, nights having different seeds:
// Mann–Whitney U on pod_startup, here on the nights' 1 ms histograms,
// with the relative-change threshold; disjoint Wilson intervals on an
// invariant's violation rate). Regressed says
// whether the newest night regressed against the one before: a nightly
// gate.
//
// The inputs are plain data (render.RunData per scenario, as the reports
// are rendered from); the CLI's runner loads them.
package trend

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/sidebench/sidebench/reports/render"
	"github.com/sidebench/sidebench/reports/stats"
)

// Night is one run directory of the series.
type Night struct {
	Dir     string
	Start   time.Time
	Build   render.Build
	Command string
	// Partial: the run did not complete (its numbers cover what was
	// committed).
	Partial bool
	// Runs holds one report input per scenario of the run.
	Runs []render.RunData
}

// Options control the change tests (compare.Options' defaults: α 0.05, a
// 5% threshold on the median, 95% intervals; a negative Threshold flags
// any significant change).
type Options struct {
	Alpha, Threshold, Confidence float64
}

// Point is one night of one scenario × policy.
type Point struct {
	// Night indexes Table.Nights.
	Night int
	// Lifecycles are the policy's pods; Violating those with at least one
	// violation; Rate their ratio and CPUpper its one-sided Clopper–Pearson
	// upper bound at Confidence.
	Lifecycles, Violating int
	Rate, CPUpper         float64
	// P50 and P99 are pod_startup's (ms, faulted pods excluded) with their
	// distribution-free intervals.
	P50, P99 stats.Summary
	// ScenarioChanged: the scenario's content differs from the night
	// before (its numbers measure another experiment).
	ScenarioChanged bool
	// Changes lists what differs significantly from the previous night of
	// the series (empty: nothing); Regression says one of them is worse.
	Changes    []string
	Regression bool
}

// Series is one judged scenario × policy over the nights.
type Series struct {
	Scenario, Policy string
	Points           []Point
}

// NightLabel names a night in the table.
type NightLabel struct {
	Dir, Start, Version, Revision string
	Modified, Partial             bool
}

// Table is the trend.
type Table struct {
	Nights     []NightLabel
	Series     []Series
	Confidence float64
	Threshold  float64
	Alpha      float64
	// Regressed: the newest night regressed against the one before (in
	// any series); Regressions says where, one line each.
	Regressed   bool
	Regressions []string
	Warnings    []string
}

// Build orders the nights by start time and computes the table.
func Build(nights []Night, o Options) Table {
	if o.Alpha <= 0 {
		o.Alpha = 0.05
	}
	if o.Threshold == 0 {
		o.Threshold = 0.05
	}
	if o.Threshold < 0 {
		o.Threshold = 0 // any significant change, as compare.Options
	}
	if o.Confidence <= 0 || o.Confidence >= 1 {
		o.Confidence = 0.95
	}
	ns := slices.Clone(nights)
	slices.SortStableFunc(ns, func(a, b Night) int { return cmp.Or(a.Start.Compare(b.Start), cmp.Compare(a.Dir, b.Dir)) })
	t := Table{Confidence: o.Confidence, Threshold: o.Threshold, Alpha: o.Alpha}
	type key struct{ scen, pol string }
	index := map[key]int{}
	prevRun := map[key]render.RunData{} // the series' previous night
	for ni, n := range ns {
		t.Nights = append(t.Nights, NightLabel{Dir: n.Dir, Start: n.Start.UTC().Format("2006-01-02 15:04"), Version: n.Build.Version,
			Revision: n.Build.Revision, Modified: n.Build.Modified, Partial: n.Partial})
		if n.Partial {
			t.Warnings = append(t.Warnings, fmt.Sprintf("%s is partial: its numbers cover only the trials it committed", n.Dir))
		}
		for _, d := range n.Runs {
			for _, pol := range d.Policies {
				if d.RoleOf(pol) != render.RoleJudged {
					continue
				}
				k := key{d.Scenario, pol}
				si, ok := index[k]
				if !ok {
					si = len(t.Series)
					index[k] = si
					t.Series = append(t.Series, Series{Scenario: d.Scenario, Policy: pol})
				}
				p := point(ni, d, pol, o.Confidence)
				if prev, ok := prevRun[k]; ok {
					p.ScenarioChanged = prev.Meta.ScenarioHash != d.Meta.ScenarioHash
					p.Changes, p.Regression = changes(prev, d, pol, o)
					if p.Regression && ni == len(ns)-1 {
						t.Regressed = true
						for _, c := range p.Changes {
							t.Regressions = append(t.Regressions, fmt.Sprintf("%s/%s: %s", d.Scenario, pol, c))
						}
					}
				}
				prevRun[k] = d
				t.Series[si].Points = append(t.Series[si].Points, p)
			}
		}
	}
	return t
}

func point(night int, d render.RunData, pol string, confidence float64) Point {
	pr := d.PolicyRuns[pol]
	p := Point{Night: night, Lifecycles: pr.Pods, Violating: pr.ViolatingPods, Rate: math.NaN(), CPUpper: math.NaN(),
		P50: stats.Summary{Center: math.NaN(), Lo: math.Inf(-1), Hi: math.Inf(1)}, P99: stats.Summary{Center: math.NaN(), Lo: math.Inf(-1), Hi: math.Inf(1)}}
	if pr.Pods > 0 {
		p.Rate = float64(pr.ViolatingPods) / float64(pr.Pods)
		p.CPUpper = stats.ClopperPearsonUpper(pr.ViolatingPods, pr.Pods, confidence)
	}
	for _, l := range d.Latencies {
		if l.Policy == pol && l.Metric == "pod_startup" {
			p.P50, p.P99 = l.P50, l.P99
		}
	}
	return p
}

// changes compares night b with night a for one policy with compare's
// unpaired tests: pod_startup changed when Mann–Whitney U rejects at Alpha
// and the median moved by more than the threshold; its p99 when the
// intervals are disjoint and it moved by more than the threshold (a tail
// shift the median test does not see); an invariant's violation rate when
// the Wilson intervals are disjoint. Regression: one of them is worse.
func changes(a, b render.RunData, pol string, o Options) ([]string, bool) {
	var out []string
	regressed := false
	la, lb := latency(a, pol), latency(b, pol)
	if la.Ms.N() > 0 && lb.Ms.N() > 0 {
		u := stats.MannWhitneyUHist(la.Ms, lb.Ms)
		ma, mb := stats.PercentileOf(la.Ms, 50), stats.PercentileOf(lb.Ms, 50)
		if rel := stats.RelativeChange(ma, mb); u.P < o.Alpha && math.Abs(rel) > o.Threshold {
			out = append(out, fmt.Sprintf("pod_startup median %s → %s ms (%+.1f%%, Mann–Whitney p=%.3g)", fmtMs(ma), fmtMs(mb), 100*rel, u.P))
			regressed = regressed || rel > 0
		}
	}
	pa, pb := la.P99, lb.P99
	if rel := stats.RelativeChange(pa.Center, pb.Center); pa.N > 0 && pb.N > 0 && math.Abs(rel) > o.Threshold && (pb.Lo > pa.Hi || pb.Hi < pa.Lo) {
		out = append(out, fmt.Sprintf("pod_startup p99 %s → %s ms (%+.1f%%, %v intervals disjoint)", fmtMs(pa.Center), fmtMs(pb.Center), 100*rel, o.Confidence))
		regressed = regressed || pb.Lo > pa.Hi
	}
	rb := map[string]render.InvariantRow{}
	for _, r := range b.Invariants {
		if r.Policy == pol {
			rb[r.ID] = r
		}
	}
	for _, r := range a.Invariants {
		y, ok := rb[r.ID]
		if r.Policy != pol || !ok {
			continue
		}
		ra, rrb := r.Rate(o.Confidence), y.Rate(o.Confidence)
		switch {
		case ra.N == 0 || rrb.N == 0:
		case rrb.WilsonLo > ra.WilsonHi:
			out = append(out, fmt.Sprintf("%s violation rate %d/%d → %d/%d (worse)", r.ID, ra.K, ra.N, rrb.K, rrb.N))
			regressed = true
		case rrb.WilsonHi < ra.WilsonLo:
			out = append(out, fmt.Sprintf("%s violation rate %d/%d → %d/%d (better)", r.ID, ra.K, ra.N, rrb.K, rrb.N))
		}
	}
	return out, regressed
}

// latency is a policy's pod_startup row (empty if none).
func latency(d render.RunData, pol string) render.Latency {
	for _, l := range d.Latencies {
		if l.Policy == pol && l.Metric == "pod_startup" {
			return l
		}
	}
	return render.Latency{P99: stats.Summary{Center: math.NaN()}}
}

func fmtMs(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "n/a"
	}
	return fmt.Sprintf("%.0f", v)
}

// Flagged reports whether any night of any series changed.
func (t *Table) Flagged() bool {
	for _, s := range t.Series {
		for _, p := range s.Points {
			if len(p.Changes) > 0 {
				return true
			}
		}
	}
	return false
}

func shortRev(r string) string {
	if len(r) > 12 {
		return r[:12]
	}
	return r
}

func (n NightLabel) build() string {
	s := n.Version
	if n.Revision != "" {
		s += " (" + shortRev(n.Revision)
		if n.Modified {
			s += "+dirty"
		}
		s += ")"
	}
	return strings.TrimSpace(s)
}
