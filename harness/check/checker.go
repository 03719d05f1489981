package check

import "fmt"

// HitKind says what a checker observed; the framework turns it into a
// Class with the pod's fault context.
type HitKind uint8

const (
	// Order: an event happened that the invariant forbids (or in the wrong
	// order). Violation unless a fault excuses it.
	Order HitKind = iota
	// Timing: a time bound was missed (too late, too early, never within
	// the horizon). Bound exceeded unless a fault excuses it.
	Timing
)

// Hit is what a checker reports: raw, before classification.
type Hit struct {
	Kind HitKind
	// T is when the invariant was broken (the offending event, or the
	// deadline that passed). From..T is the interval whose fault context
	// can excuse it.
	T, From int64
	// A and B delimit the excerpt: the two events in conflict (B may be
	// none, e.g. for a missing event).
	A, B int32
	Msg  string
	// Excuse, if set, is the checker's own reason to count the hit as a
	// degradation (e.g. "grace expired" for INV-T3/T4).
	Excuse string
}

// Checker decides one invariant over one pod. Check must be a pure
// function of p: it appends its hits to hits and returns the slice.
type Checker interface {
	ID() string
	Rule() string
	Level() Level
	// Excuses is the set of fault contexts under which a hit counts as
	// degradation rather than violation (SEMANTICS.md §5).
	Excuses() Excuse
	Check(p *Pod, hits []Hit) []Hit
}

type inv struct {
	id, rule string
	level    Level
	ex       Excuse
	fn       func(p *Pod, hits []Hit) []Hit
	// needs is the checker's precondition: features (pod.go) at least one
	// of which every hit of fn, and every path on which it could panic,
	// requires. The worker skips fn on a pod with none of them; 0 means
	// always run. Each one says why it is sound where it is set; a wrong
	// one fails TestGatingChangesNothing.
	needs feature
}

func (c *inv) ID() string                     { return c.id }
func (c *inv) Rule() string                   { return c.rule }
func (c *inv) Level() Level                   { return c.level }
func (c *inv) Excuses() Excuse                { return c.ex }
func (c *inv) Check(p *Pod, hits []Hit) []Hit { return c.fn(p, hits) }

// Checkers returns the registered checkers in report order.
func Checkers() []Checker { return append([]Checker(nil), registry...) }

var registry = func() []Checker {
	var out []Checker
	for _, group := range [][]*inv{startInvs, restartInvs, phaseInvs, probeInvs, termInvs, hookInvs, resourceInvs, faultInvs, ruleInvs, userInvs} {
		for _, c := range group {
			out = append(out, c)
		}
	}
	return out
}()

// at builds an Order hit at event i, in conflict with event j (none if
// the conflict is a missing event).
func (p *Pod) at(i, j int32, format string, args ...any) Hit {
	h := Hit{Kind: Order, T: p.T(i), A: i, B: j, Msg: fmt.Sprintf(format, args...)}
	h.From = h.T
	if j != none {
		h.From = min(h.T, p.T(j))
	}
	return h
}

// late builds a Timing hit: something was due by deadline after event
// from, and the history shows it was not.
func (p *Pod) late(from, to int32, deadline int64, format string, args ...any) Hit {
	return Hit{Kind: Timing, T: deadline, From: p.T(from), A: from, B: to, Msg: fmt.Sprintf(format, args...)}
}

// ms formats a nanosecond duration for messages.
func ms(ns int64) string { return fmt.Sprintf("%.3fs", float64(ns)/1e9) }
