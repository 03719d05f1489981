package check

import (
	"fmt"

	"github.com/sidebench/sidebench/harness/history"
)

// Finding is one classified, attributed hit: what the report shows.
type Finding struct {
	ID    string `json:"id"`
	Class Class  `json:"class"`
	Pod   string `json:"pod"`
	Node  string `json:"node,omitempty"`
	T     int64  `json:"t"`
	Msg   string `json:"msg"`
	// Excuse names the fault context that made this a degradation.
	Excuse string `json:"excuse,omitempty"`
	// Fault is the fault that can have caused the finding (Pod.attribute);
	// nil: unattributed.
	Fault *FaultRef `json:"fault,omitempty"`
	// Excerpt is the pod's history from the first to the second event in
	// conflict, at most excerptCap events; Elided counts the events left
	// out of its middle.
	Excerpt []history.Event `json:"excerpt,omitempty"`
	Elided  int             `json:"elided,omitempty"`
	// Trial is the trial (run.meta) of the pod, set when the report
	// stores the finding: pods of the same name run in every trial.
	Trial int `json:"trial,omitempty"`

	chk int // index of the checker in the runner's list
}

// FaultName is the attributed fault's name, or Unattributed.
func (f *Finding) FaultName() string {
	if f.Fault == nil {
		return Unattributed
	}
	return f.Fault.Name
}

const excerptCap = 12

// classify turns a checker's hit into a Finding.
func (p *Pod) classify(ch Checker, h *Hit) Finding {
	f := Finding{ID: ch.ID(), Pod: p.Name, Node: p.Node, T: h.T, Msg: h.Msg, Excuse: h.Excuse}
	if ch.Level() == User {
		// Nothing Kubernetes promised was broken: no excuse applies, but
		// the fault that can have caused it is named.
		f.Class, f.Excuse = Unmet, ""
		f.Fault = p.attribute(h)
		return f
	}
	switch {
	case f.Excuse != "":
		f.Class = Degradation
	case h.Kind == Timing:
		f.Class = Bound
	}
	if f.Excuse == "" {
		if name := p.excused(ch.Excuses(), h); name != "" {
			f.Class, f.Excuse = Degradation, name
		}
	}
	f.Fault = p.attribute(h)
	return f
}

// excerpt copies the events between a and b (either may be none).
func (p *Pod) excerpt(f *Finding, a, b int32) {
	lo, hi := a, b
	if lo == none || hi != none && hi < lo {
		lo, hi = hi, lo
	}
	if lo == none {
		return
	}
	if hi == none {
		hi = lo
	}
	n := int(hi-lo) + 1
	if n <= excerptCap {
		f.Excerpt = append([]history.Event(nil), p.Ev[lo:hi+1]...)
		return
	}
	half := excerptCap / 2
	f.Excerpt = append(append([]history.Event(nil), p.Ev[lo:lo+int32(half)]...), p.Ev[hi+1-int32(half):hi+1]...)
	f.Elided = n - excerptCap
}

// String is a one-line summary of f.
func (f *Finding) String() string { return f.format(false) }

// format is String, with the trial before the pod when withTrial (a report
// over several trials, each with a pod of that name).
func (f *Finding) format(withTrial bool) string {
	where := "pod=" + f.Pod
	if withTrial {
		where = fmt.Sprintf("trial=%d %s", f.Trial, where)
	}
	s := fmt.Sprintf("%s %s %s node=%s t=%s: %s", f.ID, f.Class, where, f.Node, ms(f.T), f.Msg)
	if f.Excuse != "" {
		s += " [excused: " + f.Excuse + "]"
	}
	if f.Fault != nil {
		s += fmt.Sprintf(" [fault %s#%d at %s]", f.Fault.Name, f.Fault.ID, ms(f.Fault.T))
	}
	return s
}
