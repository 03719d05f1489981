package render

import "slices"

// TimelinePick names a pod to draw as a timeline and why.
type TimelinePick struct {
	Policy, Pod, Why string
}

// PickTimelines chooses the pods whose histories report.html draws: the
// pods of violation findings first (in the report's finding order), then
// of degradations and bounds exceeded, then extra (e.g. the slowest
// pod_startup pods, slowest first), without duplicates and at most max.
// The CLI then keeps those pods' events from its history pass and fills
// RunData.Timelines.
func PickTimelines(findings []Finding, extra []TimelinePick, max int) []TimelinePick {
	fs := slices.Clone(findings)
	slices.SortStableFunc(fs, func(a, b Finding) int { return classRank(a.Class) - classRank(b.Class) })
	var out []TimelinePick
	seen := map[[2]string]bool{}
	add := func(p TimelinePick) {
		k := [2]string{p.Policy, p.Pod}
		if len(out) < max && !seen[k] {
			seen[k] = true
			out = append(out, p)
		}
	}
	for _, f := range fs {
		add(TimelinePick{Policy: f.Policy, Pod: f.Pod, Why: f.ID + " " + f.Class})
	}
	for _, p := range extra {
		add(p)
	}
	return out
}
