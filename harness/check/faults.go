package check

import "github.com/sidebench/sidebench/harness/history"

// Excuse is a set of fault contexts that void a guarantee (SEMANTICS.md §5).
type Excuse uint8

const (
	ExKubelet  Excuse = 1 << iota // kubelet down: nothing is started or signalled
	ExRuntime                     // container runtime down
	ExNode                        // node powered off / down: no ordering, no grace (INV-F5)
	ExShutdown                    // graceful node shutdown: budget shorter than TGPS (INV-F4)
	ExOOM                         // OOM kill: no preStop for the killed container
	ExGC                          // container records garbage-collected

	// exDefault is what voids most "happens after" invariants: while the
	// kubelet or runtime is down, or the node is, they are suspended.
	exDefault = ExKubelet | ExRuntime | ExNode
)

// faultExcuse maps a fault catalogue name to the context it creates.
// Faults that are mere inputs (probe-failure, image-change) excuse nothing.
func faultExcuse(name string) Excuse {
	switch name {
	case "kubelet-crash", "kubelet-restart":
		return ExKubelet
	case "runtime-restart":
		return ExRuntime
	case "node-poweroff", "node-reboot":
		return ExNode
	case "node-shutdown":
		return ExShutdown
	case "oom-kill":
		return ExOOM
	case "container-gc":
		return ExGC
	}
	return 0
}

// window is a period during which an excuse holds. The name is what the
// finding's excuse says.
type window struct {
	ex       Excuse
	from, to int64
	name     string
}

func (p *Pod) buildWindows() {
	for _, o := range p.Outages {
		w := window{from: p.T(o.Down), to: p.Horizon}
		if o.Up != none {
			w.to = p.T(o.Up)
		}
		switch o.What {
		case history.KubeletDown:
			w.ex, w.name = ExKubelet, "kubelet down"
		case history.RuntimeDown:
			w.ex, w.name = ExRuntime, "runtime down"
		default:
			w.ex, w.name = ExNode, "node down"
		}
		p.windows = append(p.windows, w)
	}
	for _, f := range p.Faults {
		if ex := faultExcuse(f.Name); ex != 0 && !f.NotApplied {
			w := window{ex: ex, from: f.T, to: f.EndT, name: f.Name}
			if ex == ExGC {
				// A removed record stays removed: what the kubelet derives
				// from it is off for the rest of the pod's life.
				w.to = p.Horizon
			}
			p.windows = append(p.windows, w)
		}
	}
	for i := range p.Ev {
		if p.Ev[i].Kind == history.NodeShutdown {
			p.windows = append(p.windows, window{ex: ExShutdown, from: p.Ev[i].T, to: p.Horizon, name: "node shutdown"})
		}
	}
}

// settle is how long after a fault ends its effects still excuse: the
// kubelet needs a sync or two to converge after it comes back.
func (p *Pod) settle() int64 { return 2e9 + p.Tol }

// excused returns the name of a window in mask that excuses hit h, or "".
//
// An Order hit is excused only if its offending event happened inside the
// window: once the component is back, what it does is judged (that is
// what INV-F1..F3 are about), so "suspended during KUBELET_DOWN" does not
// extend past kubelet.up. A Timing hit is excused if its interval
// [From, T] overlaps the window widened by settle: a deadline that ran
// across an outage, or right after it, is the outage's.
func (p *Pod) excused(mask Excuse, h *Hit) string {
	for i := range p.windows {
		w := &p.windows[i]
		if w.ex&mask == 0 {
			continue
		}
		if h.Kind == Order {
			// Outages are half-open (at kubelet.up the kubelet is back);
			// instantaneous faults (an OOM kill) and open ones include
			// their end.
			if w.from <= h.T && (h.T < w.to || h.T == w.to && (w.from == w.to || w.to >= p.Horizon)) {
				return w.name
			}
		} else if w.from <= h.T && h.From <= w.to+p.settle() {
			return w.name
		}
	}
	return ""
}

// FaultRef names the fault a finding is attributed to.
type FaultRef struct {
	Name string `json:"name"`
	ID   uint32 `json:"id"`
	T    int64  `json:"t"`
}

// nearestFault is the last fault that began at or before event index i and
// was not reported as not applied; nil if none.
func (p *Pod) nearestFault(i int32) *FaultRef {
	for f := len(p.Faults) - 1; f >= 0; f-- {
		if x := &p.Faults[f]; x.Idx <= i && !x.NotApplied {
			return &FaultRef{Name: x.Name, ID: x.ID, T: x.T}
		}
	}
	return nil
}

// faultBefore is the last fault that began at or before time t.
func (p *Pod) faultBefore(t int64) *FaultRef {
	for f := len(p.Faults) - 1; f >= 0; f-- {
		if x := &p.Faults[f]; x.T <= t && !x.NotApplied {
			return &FaultRef{Name: x.Name, ID: x.ID, T: x.T}
		}
	}
	return nil
}
