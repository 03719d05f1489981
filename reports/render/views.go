package render

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// View models shared by report.md and report.html: the verdict banner,
// the collapsed tables, the warnings said once and the notable findings.

// banner is the verdict at the top of a report.
type banner struct {
	Overall string // PASS, FAIL, INSUFFICIENT DATA, or "" (nothing judged)
	Class   string
	// Status is "complete" or "PARTIAL"; Partial says which.
	Status  string
	Partial bool
	Facts   string // trials, pods, backend
	Rows    []bannerRow
	// Baselines are the policies measured and not judged.
	Baselines []string
}

// bannerRow is one judged policy or bug replica.
type bannerRow struct {
	Policy, Role   string
	Overall, Class string
	Levels         []bannerLevel
	// More is the most lifecycles any of its criteria still needs.
	More int
}

// bannerLevel groups a policy's criteria: the scenario's own criteria, a
// graduation stage (criteria named "beta/..."), or the bug-replica check.
type bannerLevel struct {
	Name          string
	Status, Class string
	Criteria      []bannerCriterion
}

type bannerCriterion struct {
	Name, Status, Class, Message string
	More                         int
}

func buildBanner(d RunData) banner {
	b := banner{Overall: overall(d.Verdicts), Status: "complete", Partial: d.Meta.Partial}
	b.Class = statusClass(b.Overall)
	if d.Meta.Partial {
		b.Status = "PARTIAL"
	}
	b.Facts = fmt.Sprintf("%d trial(s) per policy, %d pod lifecycles, backend %s, seed %d", d.Meta.Trials, totalPods(d), d.Meta.Backend, d.Meta.Seed)
	for _, pol := range d.Policies {
		role := d.RoleOf(pol)
		if role == RoleBaseline {
			b.Baselines = append(b.Baselines, pol)
			continue
		}
		r := bannerRow{Policy: pol, Role: role}
		var vs []Verdict
		for _, v := range d.Verdicts {
			if v.Policy == pol {
				vs = append(vs, v)
			}
		}
		r.Overall = overall(vs)
		if r.Overall == "" {
			r.Overall = "no criteria"
		}
		r.Class = statusClass(r.Overall)
		for _, v := range vs {
			level, name := "scenario criteria", v.Criterion
			if i := strings.Index(v.Criterion, "/"); i > 0 {
				level, name = "graduation "+v.Criterion[:i], v.Criterion[i+1:]
			} else if role == RoleBugReplica {
				level = "bug replica"
			}
			j := slices.IndexFunc(r.Levels, func(l bannerLevel) bool { return l.Name == level })
			if j < 0 {
				r.Levels = append(r.Levels, bannerLevel{Name: level})
				j = len(r.Levels) - 1
			}
			r.Levels[j].Criteria = append(r.Levels[j].Criteria, bannerCriterion{Name: name, Status: v.Status, Class: statusClass(v.Status),
				Message: v.Message, More: v.MoreTrialsNeeded})
			r.More = max(r.More, v.MoreTrialsNeeded)
		}
		for i := range r.Levels {
			l := &r.Levels[i]
			var lvs []Verdict
			for _, c := range l.Criteria {
				lvs = append(lvs, Verdict{Status: c.Status})
			}
			l.Status = overall(lvs)
			l.Class = statusClass(l.Status)
		}
		b.Rows = append(b.Rows, r)
	}
	return b
}

// latencyView is one policy's latency table: rows with samples, and the
// metrics without any named once.
type latencyView struct {
	Policy string
	Rows   []Latency
	// Empty names the metrics without samples; Faulted is how many pods
	// they left out (the largest count).
	Empty   []string
	Faulted int
}

// noLatencySamples is the one line that replaces the latency tables when
// no policy has any sample ("" otherwise).
func noLatencySamples(vs []latencyView) string {
	faulted := 0
	var metrics []string
	for _, v := range vs {
		if len(v.Rows) > 0 {
			return ""
		}
		faulted = max(faulted, v.Faulted)
		for _, m := range v.Empty {
			if !slices.Contains(metrics, m) {
				metrics = append(metrics, m)
			}
		}
	}
	if len(metrics) == 0 {
		return ""
	}
	return fmt.Sprintf("No latency sample in any policy: every pod was touched by a fault (up to %d per policy and metric excluded; latency samples exclude faulted pods). Metrics: %s.", faulted, strings.Join(metrics, ", "))
}

func latencyViews(d RunData) []latencyView {
	var out []latencyView
	for _, pol := range d.Policies {
		v := latencyView{Policy: pol}
		for _, l := range d.Latencies {
			if l.Policy != pol {
				continue
			}
			if l.N == 0 {
				v.Empty = append(v.Empty, l.Metric)
				v.Faulted = max(v.Faulted, l.FaultedExcluded)
				continue
			}
			v.Rows = append(v.Rows, l)
		}
		if len(v.Rows) > 0 || len(v.Empty) > 0 {
			out = append(out, v)
		}
	}
	return out
}

// sharedWarning is one warning said once, with where it applies.
type sharedWarning struct {
	Text  string
	Where []string
	// All: it applies to every row it could.
	All bool
}

func (w sharedWarning) String() string {
	switch {
	case w.All:
		return w.Text + " (every row)"
	case len(w.Where) > 6:
		return fmt.Sprintf("%s (%s and %d more)", w.Text, strings.Join(w.Where[:6], ", "), len(w.Where)-6)
	}
	return w.Text + " (" + strings.Join(w.Where, ", ") + ")"
}

// latencyWarnings gathers the latency rows' percentile warnings, each
// said once with the rows it applies to ("no samples" is left out: the
// tables say it in their own line).
func latencyWarnings(d RunData) []sharedWarning {
	var out []sharedWarning
	rows := 0
	for _, l := range d.Latencies {
		if l.N == 0 {
			continue
		}
		rows++
		for _, q := range []struct {
			name string
			ws   []string
		}{{"p50", l.P50.Warnings}, {"p90", l.P90.Warnings}, {"p99", l.P99.Warnings}} {
			for _, x := range q.ws {
				text := q.name + ": " + x
				i := slices.IndexFunc(out, func(w sharedWarning) bool { return w.Text == text })
				if i < 0 {
					out = append(out, sharedWarning{Text: text})
					i = len(out) - 1
				}
				out[i].Where = append(out[i].Where, l.Policy+" "+l.Metric)
			}
		}
	}
	for i := range out {
		out[i].All = len(out[i].Where) == rows && rows > 1
	}
	return out
}

// verdictWarnings gathers the verdicts' warnings, each said once.
func verdictWarnings(d RunData) []sharedWarning {
	var out []sharedWarning
	for _, v := range d.Verdicts {
		for _, x := range v.Warnings {
			i := slices.IndexFunc(out, func(w sharedWarning) bool { return w.Text == x })
			if i < 0 {
				out = append(out, sharedWarning{Text: x})
				i = len(out) - 1
			}
			where := v.Policy + " " + v.Criterion
			if !slices.Contains(out[i].Where, where) {
				out[i].Where = append(out[i].Where, where)
			}
		}
	}
	for i := range out {
		out[i].All = len(out[i].Where) == len(d.Verdicts) && len(d.Verdicts) > 1
	}
	return out
}

// invariantView is one policy's invariants: the rows with any finding
// (or undecided pods), and the clean ones collapsed into one line.
type invariantView struct {
	Policy string
	Rows   []InvariantRow
	// Clean are the IDs with no finding; CleanPods the most pods any of
	// them was checked on; CleanBound the 95% Clopper–Pearson upper bound
	// for 0 in CleanPods.
	Clean      []string
	CleanPods  int
	CleanBound float64
}

func (v invariantView) CleanLine() string {
	if len(v.Clean) == 0 {
		return ""
	}
	return fmt.Sprintf("%d invariants: 0 findings in %d pods (each below %s at 95%%)", len(v.Clean), v.CleanPods, fmtPct(v.CleanBound))
}

func invariantViews(d RunData) []invariantView {
	var out []invariantView
	for _, pol := range d.Policies {
		v := invariantView{Policy: pol}
		for _, r := range d.Invariants {
			if r.Policy != pol {
				continue
			}
			if r.Violations+r.Degradations+r.BoundsExceeded+r.Unknown > 0 {
				v.Rows = append(v.Rows, r)
				continue
			}
			v.Clean = append(v.Clean, r.ID)
			v.CleanPods = max(v.CleanPods, r.Checked)
		}
		if len(v.Clean) > 0 {
			v.CleanBound = rowRate(InvariantRow{Checked: v.CleanPods}).CPHi
		}
		if len(v.Rows) > 0 || len(v.Clean) > 0 {
			out = append(out, v)
		}
	}
	return out
}

// ruleNote is one invariant's rule, for the footnotes and tooltips.
type ruleNote struct{ ID, Level, Rule string }

// ruleNotes lists each invariant's rule once, in ID order.
func ruleNotes(d RunData) []ruleNote {
	var out []ruleNote
	for _, r := range d.Invariants {
		if r.Rule == "" || slices.ContainsFunc(out, func(n ruleNote) bool { return n.ID == r.ID }) {
			continue
		}
		out = append(out, ruleNote{r.ID, r.Level, r.Rule})
	}
	slices.SortFunc(out, func(a, b ruleNote) int { return naturalCompare(a.ID, b.ID) })
	return out
}

func ruleOf(notes []ruleNote, id string) string {
	for _, n := range notes {
		if n.ID == id {
			return n.Rule
		}
	}
	return ""
}

// findingGroup is one notable finding and the other trials in which the
// same finding (policy, invariant, class, pod, message) occurred.
type findingGroup struct {
	F Finding
	// Also are the other trials with the same finding.
	Also []int
}

// notableFindings picks up to MaxFindings findings for the reports:
// identical findings of different trials are one entry naming its
// trials, and the entries are taken round-robin over the (policy,
// invariant) pairs in report order, so that one prolific invariant does
// not hide the others.
func notableFindings(d RunData) (groups []findingGroup, more int) {
	key := func(f *Finding) string {
		return strings.Join([]string{f.Policy, f.ID, f.Class, f.Pod, f.Msg, strconv.FormatInt(f.T, 10)}, "\x00")
	}
	var all []findingGroup
	index := map[string]int{}
	for i := range d.Findings {
		f := &d.Findings[i]
		k := key(f)
		if j, ok := index[k]; ok {
			if f.Trial != all[j].F.Trial && !slices.Contains(all[j].Also, f.Trial) {
				all[j].Also = append(all[j].Also, f.Trial)
			}
			continue
		}
		index[k] = len(all)
		all = append(all, findingGroup{F: *f})
	}
	// Round-robin over (class, policy, invariant) buckets, keeping the
	// normalized order inside each.
	type bucket struct {
		key   string
		items []int
	}
	var buckets []bucket
	bidx := map[string]int{}
	for i, g := range all {
		k := g.F.Class + "\x00" + g.F.Policy + "\x00" + g.F.ID
		j, ok := bidx[k]
		if !ok {
			j = len(buckets)
			bidx[k] = j
			buckets = append(buckets, bucket{key: k})
		}
		buckets[j].items = append(buckets[j].items, i)
	}
	var picked []int
	for round := 0; len(picked) < MaxFindings; round++ {
		took := false
		for _, b := range buckets {
			if round < len(b.items) && len(picked) < MaxFindings {
				picked = append(picked, b.items[round])
				took = true
			}
		}
		if !took {
			break
		}
	}
	slices.Sort(picked)
	for _, i := range picked {
		groups = append(groups, all[i])
	}
	return groups, len(all) - len(groups)
}

// trialsText is "trial 3" or "trial 3 (same finding in trials 4, 7)".
func (g findingGroup) trialsText() string {
	s := fmt.Sprintf("trial %d, seed %d", g.F.Trial, g.F.Seed)
	if len(g.Also) > 0 {
		ts := make([]string, len(g.Also))
		for i, t := range g.Also {
			ts[i] = strconv.Itoa(t)
		}
		s += fmt.Sprintf("; the same finding in trial(s) %s", strings.Join(ts, ", "))
	}
	return s
}

// faultRow is one fault kind × policy of the "Faults injected" section.
type faultRow struct {
	Fault, Policy       string
	Applied, NotApplied int
	Reasons             []string // why not applied
}

// Why is the reasons joined, as the report shows them.
func (r faultRow) Why() string { return strings.Join(r.Reasons, "; ") }

// faultsInjectedNote says what the "Faults injected" table counts.
const faultsInjectedNote = "Firings of each fault kind, per policy, that took effect (applied) and that found nothing to act on (NOT applied: the container not running, the kubelet already down, ...). A firing NOT applied is recorded in the history as fault.not-applied with its reason and is not counted as applied: the pods it missed did not get that fault."

// faultRows lists the fault tallies of d (normalized) by fault kind, then
// policy in report order; nil if no policy has any.
func faultRows(d RunData) []faultRow {
	var kinds []string
	for _, pr := range d.PolicyRuns {
		for k := range pr.Faults {
			if !slices.Contains(kinds, k) {
				kinds = append(kinds, k)
			}
		}
	}
	slices.Sort(kinds)
	var out []faultRow
	for _, k := range kinds {
		for _, pol := range d.Policies {
			if t, ok := d.PolicyRuns[pol].Faults[k]; ok {
				out = append(out, faultRow{Fault: k, Policy: pol, Applied: t.Applied, NotApplied: t.NotApplied, Reasons: t.Reasons})
			}
		}
	}
	return out
}
