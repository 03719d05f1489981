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
	for _, i := range p.Shutdowns { // every node.shutdown, in order
		p.windows = append(p.windows, window{ex: ExShutdown, from: p.Ev[i].T, to: p.Horizon, name: "node shutdown"})
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

// Unattributed is the matrix column of findings no fault can explain.
const Unattributed = "unattributed"

// attribute returns the fault that can have caused hit h, or nil: the
// finding is then unattributed.
//
// A fault can cause h when it touched the pod or its node, or the whole
// cluster (the pod's history holds no other fault events), took effect
// (no fault.not-applied), began at or before the offending event, and its
// window (effectEnd) contains that event: for an Order hit the offending
// event at index max(A, B), time T; for a Timing hit the interval
// [From, T] overlaps the window. Of several such faults, the latest to
// begin is named.
//
// Being the nearest preceding fault is not enough: a kubelet crash long
// over on the node does not explain a deletion that goes wrong later (the
// sidecars-with-mains bug replica's INV-T3 findings are not kubelet-crash
// findings).
func (p *Pod) attribute(h *Hit) *FaultRef {
	idx := max(h.A, h.B)
	for i := len(p.Faults) - 1; i >= 0; i-- {
		f := &p.Faults[i]
		if f.NotApplied {
			continue
		}
		end := p.effectEnd(f)
		var began, inside bool
		switch {
		case h.Kind == Order && idx != none:
			began, inside = f.Idx <= idx, h.T < end
		default: // a deadline, or a bound between two events
			began, inside = f.T <= h.T, h.From < end
		}
		if began && inside {
			return &FaultRef{Name: f.Name, ID: f.ID, T: f.T}
		}
	}
	return nil
}

// effectEnd is when fault f stops explaining what happens to the pod
// (exclusive):
//
//   - its end widened by settle: the kubelet resyncs once it is back, as
//     for excuses;
//   - later, if the fault stopped containers of the pod (an attempt that
//     ran when it began ended inside that window, by an exit or with its
//     sandbox): their next start, plus settle, is the re-initialization
//     it forced, even a backoff later;
//   - a container GC that removed one of the pod's records lasts to the
//     end of the history (a removed record stays removed);
//
// but never past a pod termination that begins after the fault's own
// window: a deletion is a cause of its own.
func (p *Pod) effectEnd(f *Fault) int64 {
	base := f.EndT + p.settle()
	end := base
	if faultExcuse(f.Name) == ExGC && p.removedDuring(f) {
		end = p.Horizon + 1
	}
	for c := range p.Ctrs {
		att := p.Ctrs[c].Att
		for k := range att {
			a := &att[k]
			if !a.runningAt(f.Idx) || k+1 >= len(att) {
				continue
			}
			if stop := p.attemptEnd(a); stop != none && p.T(stop) < base {
				if next := att[k+1].Start(); next != none {
					end = max(end, p.T(next)+p.settle())
				}
			}
		}
	}
	for i := range p.Terms {
		if t := p.Terms[i].T; t >= base && t < end {
			end = t
		}
	}
	return end
}

// attemptEnd is the index where attempt a stopped running: its exit, or
// the end of its sandbox; none while it runs.
func (p *Pod) attemptEnd(a *Attempt) int32 {
	if a.Exited != none {
		return a.Exited
	}
	if a.Sandbox >= 0 && int(a.Sandbox) < len(p.Sandboxes) {
		return p.Sandboxes[a.Sandbox].End
	}
	return none
}

// removedByGC reports whether removal event i happened inside a container
// GC fault: the runtime's removal, not the kubelet's.
func (p *Pod) removedByGC(i int32) bool {
	for k := range p.Faults {
		if f := &p.Faults[k]; faultExcuse(f.Name) == ExGC && i > f.Idx && p.T(i) <= f.EndT {
			return true
		}
	}
	return false
}

// removedDuring reports whether fault f (a container GC) removed a record
// of one of the pod's containers.
func (p *Pod) removedDuring(f *Fault) bool {
	for c := range p.Ctrs {
		for _, i := range p.Ctrs[c].Ev {
			if e := &p.Ev[i]; i > f.Idx && e.Kind == history.ContainerRemoved && e.T <= f.EndT {
				return true
			}
		}
	}
	return false
}
