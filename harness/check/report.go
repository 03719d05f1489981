package check

import (
	"cmp"
	"slices"

	"github.com/sidebench/sidebench/harness/history"
)

// Row is one invariant's line in a Report.
type Row struct {
	ID         string `json:"id"`
	Rule       string `json:"rule"`
	Level      Level  `json:"level"`
	Checked    int    `json:"checked"` // pods the checker decided (did not panic on)
	Violations int    `json:"violations"`
	// ViolatingPods counts pods with at least one violation of this
	// invariant: the numerator of its per-lifecycle violation rate.
	ViolatingPods int `json:"violatingPods"`
	Degradations  int `json:"degradations"`
	Bounds        int `json:"boundsExceeded"`
	// Unmet counts the pods a user-level guarantee (Level User) failed:
	// its checkers report at most one finding per pod.
	Unmet   int      `json:"unmet,omitempty"`
	Unknown int      `json:"unknown"` // pods on which the checker failed
	Valid   Validity `json:"valid"`
}

// Cell counts one invariant's findings attributed to one fault
// (Unattributed when no fault can have caused them): the invariant × fault
// matrix.
type Cell struct {
	ID           string `json:"id"`
	Fault        string `json:"fault"`
	Violations   int    `json:"violations"`
	Degradations int    `json:"degradations"`
	Bounds       int    `json:"boundsExceeded"`
	Unmet        int    `json:"unmet,omitempty"`
}

// PodError is why a checker's verdict on a pod is Unknown.
type PodError struct {
	ID  string `json:"id"` // invariant, or "" when the pod could not be built
	Pod string `json:"pod"`
	Err string `json:"err"`
}

// Report aggregates the verdicts over many pods. Counts are complete;
// Findings keeps the first FindingsCap findings per invariant in pod
// arrival order, Errors the first FindingsCap errors.
type Report struct {
	Meta *history.Meta `json:"meta,omitempty"` // the first run's
	// Runs counts the runs (trials: run.meta) whose pods were checked.
	Runs int `json:"runs"`
	Pods int `json:"pods"`
	// ViolatingPods counts pods with at least one violation of any
	// invariant: the numerator of the hard-violation rate per lifecycle.
	ViolatingPods int        `json:"violatingPods"`
	Valid         Validity   `json:"valid"`
	Rows          []Row      `json:"rows"`
	Matrix        []Cell     `json:"matrix"`
	Findings      []Finding  `json:"findings"`
	Errors        []PodError `json:"errors,omitempty"`
	Warnings      []string   `json:"warnings,omitempty"`
	FindingsCap   int        `json:"findingsCap"`
	// GroupViolatingPods counts, per invariant group (InvariantGroup), the
	// pods with at least one violation of an invariant of the group.
	GroupViolatingPods map[string]int `json:"groupViolatingPods,omitempty"`
	// Kept are the pods KeepPods kept, with their events.
	Kept []KeptPod `json:"-"`
}

// Violations is the total number of violations.
func (r *Report) Violations() int {
	n := 0
	for i := range r.Rows {
		n += r.Rows[i].Violations
	}
	return n
}

// Row returns the row of invariant id, or nil.
func (r *Report) Row(id string) *Row {
	for i := range r.Rows {
		if r.Rows[i].ID == id {
			return &r.Rows[i]
		}
	}
	return nil
}

type cellKey struct {
	chk   int
	fault string
}

// aggregator folds pod results, in pod arrival order, into a Report.
type aggregator struct {
	rep    Report
	cells  map[cellKey]*Cell
	stored []int // findings stored per checker
	keep   keeper
	// lastMeta is the run of the pod folded last (Report.Runs).
	lastMeta *history.Meta
}

func newAggregator(checkers []Checker, cap int) *aggregator {
	a := &aggregator{cells: map[cellKey]*Cell{}, stored: make([]int, len(checkers))}
	a.rep.FindingsCap = cap
	for _, c := range checkers {
		a.rep.Rows = append(a.rep.Rows, Row{ID: c.ID(), Rule: c.Rule(), Level: c.Level()})
	}
	return a
}

func (a *aggregator) fold(res *podResult) {
	r := &a.rep
	r.Pods++
	if r.Meta == nil {
		r.Meta = res.meta
	}
	if res.meta != a.lastMeta {
		// The pods of one run share its Meta; a history holds its runs
		// one after another.
		a.lastMeta = res.meta
		r.Runs++
	}
	for i := range r.Rows {
		if res.unknown&(1<<uint(i)) != 0 {
			r.Rows[i].Unknown++
		} else {
			r.Rows[i].Checked++
		}
	}
	for _, e := range res.errs {
		if len(r.Errors) < r.FindingsCap {
			r.Errors = append(r.Errors, e)
		}
	}
	var violated uint64
	anyViolation := false
	for k := range res.findings {
		f := &res.findings[k]
		row := &r.Rows[f.chk]
		if f.Class == Violation {
			anyViolation = true
			if f.chk < 64 && violated&(1<<uint(f.chk)) == 0 {
				violated |= 1 << uint(f.chk)
				row.ViolatingPods++
			}
		}
		key := cellKey{f.chk, f.FaultName()}
		cell := a.cells[key]
		if cell == nil {
			cell = &Cell{ID: row.ID, Fault: key.fault}
			a.cells[key] = cell
		}
		switch f.Class {
		case Violation:
			row.Violations++
			cell.Violations++
		case Degradation:
			row.Degradations++
			cell.Degradations++
		case Unmet:
			row.Unmet++
			cell.Unmet++
		default:
			row.Bounds++
			cell.Bounds++
		}
		if a.stored[f.chk] < r.FindingsCap {
			a.stored[f.chk]++
			if res.meta != nil {
				f.Trial = res.meta.Trial
			}
			r.Findings = append(r.Findings, *f)
		}
	}
	if anyViolation {
		r.ViolatingPods++
		var groups []string
		for i := range r.Rows {
			if i < 64 && violated&(1<<uint(i)) != 0 {
				if g := InvariantGroup(r.Rows[i].ID); !slices.Contains(groups, g) {
					groups = append(groups, g)
				}
			}
		}
		if r.GroupViolatingPods == nil {
			r.GroupViolatingPods = map[string]int{}
		}
		for _, g := range groups {
			r.GroupViolatingPods[g]++
		}
	}
}

func (a *aggregator) finish() *Report {
	r := &a.rep
	r.Valid = Valid
	for i := range r.Rows {
		row := &r.Rows[i]
		switch {
		case row.Violations > 0:
			row.Valid = Invalid
		case row.Unknown > 0:
			row.Valid = Unknown
		}
		r.Valid = Merge(r.Valid, row.Valid)
	}
	keys := make([]cellKey, 0, len(a.cells))
	for k := range a.cells {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y cellKey) int {
		return cmp.Or(cmp.Compare(x.chk, y.chk), cmp.Compare(x.fault, y.fault))
	})
	r.Matrix = r.Matrix[:0]
	for _, k := range keys {
		r.Matrix = append(r.Matrix, *a.cells[k])
	}
	if r.Findings == nil {
		r.Findings = []Finding{}
	}
	return r
}
