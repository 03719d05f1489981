package check

import (
	"slices"
	"strings"
	"unicode"

	"github.com/sidebench/sidebench/harness/history"
)

// KeptPod is a pod whose events the runner kept for the reports' pod
// timelines (KeepPods): its history partition and its findings.
type KeptPod struct {
	Meta     *history.Meta
	Pod      string
	Events   []history.Event
	Findings []Finding
}

// KeepPods makes the Runner keep the events of a few pods with findings,
// for the Gantt timelines of the reports (Report.Kept): the first
// violations pods, in the order pods were added, that each bring a
// violated invariant not kept yet, and the first others pods that each
// bring a degraded or exceeded invariant not kept yet. The choice depends
// on the order of Add alone, never on the scheduling of the workers, and
// memory stays bounded by violations+others pods.
func KeepPods(violations, others int) Option {
	return func(r *Runner) { r.keepV, r.keepO = max(violations, 0), max(others, 0) }
}

// InvariantGroup returns the group of an invariant ID: the letters after
// "INV-" ("INV-RA4" → "RA", "INV-S3" → "S"), the sections of
// SEMANTICS.md's invariants (start ordering, restarts, termination...).
func InvariantGroup(id string) string {
	id = strings.TrimPrefix(id, "INV-")
	i := strings.IndexFunc(id, func(r rune) bool { return !unicode.IsLetter(r) })
	if i < 0 {
		return id
	}
	return id[:i]
}

// keeper is the aggregator's side of KeepPods.
type keeper struct {
	wantV, wantO int
	gotV, gotO   int
	ids          []string // invariants of the kept pods
}

func (k *keeper) enabled() bool { return k.wantV+k.wantO > 0 }

// full reports whether no later pod can be kept.
func (k *keeper) full() bool { return k.gotV >= k.wantV && k.gotO >= k.wantO }

// keepView is what the workers know of the keeper: an immutable snapshot
// published after each fold that changed it. The keeper only grows (more
// invariants kept, quotas filling), and a pod is folded after every pod
// folded before its worker read the view, so a pod the view says cannot
// be kept would not be kept by the fold either: the worker skips copying
// its events.
type keepView struct {
	vFull, oFull bool
	ids          []string
}

func (k *keeper) view() *keepView {
	return &keepView{vFull: k.gotV >= k.wantV, oFull: k.gotO >= k.wantO, ids: slices.Clone(k.ids)}
}

// mayKeep reports whether a pod with these findings can still be kept.
func (v *keepView) mayKeep(fs []Finding) bool {
	for i := range fs {
		if fs[i].Class == Unmet {
			continue // user-level findings have their own section, no timelines
		}
		full := v.oFull
		if fs[i].Class == Violation {
			full = v.vFull
		}
		if !full && !slices.Contains(v.ids, fs[i].ID) {
			return true
		}
	}
	return false
}

// consider keeps res's pod if it brings a new invariant in a class with
// room left. events are the pod's events (res.events in parallel mode).
func (k *keeper) consider(rep *Report, res *podResult, name string, events []history.Event) {
	if len(res.findings) == 0 || events == nil || k.full() {
		return
	}
	newIn := func(class func(Class) bool) bool {
		for i := range res.findings {
			f := &res.findings[i]
			if class(f.Class) && !slices.Contains(k.ids, f.ID) {
				return true
			}
		}
		return false
	}
	switch {
	case k.gotV < k.wantV && newIn(func(c Class) bool { return c == Violation }):
		k.gotV++
	case k.gotO < k.wantO && newIn(func(c Class) bool { return c != Violation && c != Unmet }):
		k.gotO++
	default:
		return
	}
	for i := range res.findings {
		if id := res.findings[i].ID; res.findings[i].Class != Unmet && !slices.Contains(k.ids, id) {
			k.ids = append(k.ids, id)
		}
	}
	rep.Kept = append(rep.Kept, KeptPod{Meta: res.meta, Pod: name, Events: slices.Clone(events), Findings: slices.Clone(res.findings)})
}
