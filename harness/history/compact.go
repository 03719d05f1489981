package history

// The Partitioner holds every live pod's events until the pod finishes.
// An Event is 304 bytes with a dozen strings; holding and copying those
// was the partitioner's cost (five cold cache lines written per event and
// per pod it is copied to) and most of a large run's memory (150,000 live
// pods). A pod's buffer holds compact records instead: 48 bytes, no
// pointers (the garbage collector does not scan them), strings replaced
// by small numbers. A record expands back to the exact Event when the pod
// is delivered. What does not fit the compact form (fault events,
// resources, the spec, free-text messages) is kept as a whole Event
// beside the records.

// rec is one event in a pod's buffer.
type rec struct {
	t       int64
	grace   int64
	attempt uint32
	code    int32
	oom     int32
	ext     int32 // index into podBuf.ext of the whole event, -1 = none
	kind    Kind
	flags   uint8
	ctr     sym // Container
	reason  sym
	str     sym // Phase, Cond or Probe (at most one of them is set)
	result  sym
}

const (
	recValue uint8 = 1 << iota // Value
	recPod                     // Pod is the buffer's pod (else "")
	recNode                    // Node is the buffer's node (else "")
	recPhase                   // str is Phase
	recCond                    // str is Cond
	recProbe                   // str is Probe
)

// sym numbers a short string of the history's vocabulary (container
// names, reasons, phases, conditions, probe kinds and results); 0 is "".
type sym uint16

// symtab interns the vocabulary. It only grows, up to maxSyms strings;
// beyond that events are kept whole.
type symtab struct {
	strs []string
	ids  map[string]sym
	// recent caches lookups by a cheap hash of the string: a backend
	// writes the same few strings over and over, usually the very same
	// string values, whose comparison is a pointer comparison.
	recent [256]struct {
		s  string
		id sym
	}
}

const maxSyms = 1<<16 - 1

func newSymtab() symtab {
	return symtab{strs: []string{""}, ids: map[string]sym{"": 0}}
}

// id returns s's number, adding s if there is room.
func (t *symtab) id(s string) (sym, bool) {
	if s == "" {
		return 0, true
	}
	h := (len(s)*131 + int(s[0])*31 + int(s[len(s)-1])*7 + int(s[len(s)/2])) & 255
	c := &t.recent[h]
	if c.s == s {
		return c.id, true
	}
	if id, ok := t.ids[s]; ok {
		c.s, c.id = s, id
		return id, true
	}
	if len(t.strs) >= maxSyms {
		return 0, false
	}
	id := sym(len(t.strs))
	t.strs = append(t.strs, s)
	t.ids[s] = id
	c.s, c.id = s, id
	return id, true
}

// compact returns e as a record of pb's buffer; ok is false when e does
// not fit (then it is kept whole).
func (t *symtab) compact(e *Event, pb *podBuf) (r rec, ok bool) {
	if e.CritGrace != 0 || e.CPU != 0 || e.Mem != 0 || e.CPULimit != 0 || e.MemLimit != 0 || e.CPUs != "" ||
		e.Fault != "" || e.FaultID != 0 || e.Target != "" || e.Msg != "" || e.Spec != nil || e.Meta != nil {
		return r, false
	}
	r = rec{t: e.T, grace: e.Grace, attempt: e.Attempt, code: e.Code, oom: e.OOMScoreAdj, ext: -1, kind: e.Kind}
	if e.Value {
		r.flags |= recValue
	}
	switch e.Pod {
	case "":
	case pb.name:
		r.flags |= recPod
	default:
		return r, false
	}
	switch e.Node {
	case "":
	case pb.node:
		r.flags |= recNode
	default:
		return r, false
	}
	var s string
	switch {
	case e.Phase != "" && e.Cond == "" && e.Probe == "":
		s, r.flags = e.Phase, r.flags|recPhase
	case e.Cond != "" && e.Phase == "" && e.Probe == "":
		s, r.flags = e.Cond, r.flags|recCond
	case e.Probe != "" && e.Phase == "" && e.Cond == "":
		s, r.flags = e.Probe, r.flags|recProbe
	case e.Phase != "" || e.Cond != "" || e.Probe != "":
		return r, false // more than one: keep it whole
	}
	var ok1, ok2, ok3, ok4 bool
	r.ctr, ok1 = t.id(e.Container)
	r.reason, ok2 = t.id(e.Reason)
	r.str, ok3 = t.id(s)
	r.result, ok4 = t.id(e.Result)
	return r, ok1 && ok2 && ok3 && ok4
}

// expand writes the event r stands for into e.
func (t *symtab) expand(r *rec, pb *podBuf, e *Event) {
	if r.ext >= 0 {
		*e = pb.ext[r.ext]
		return
	}
	*e = Event{T: r.t, Kind: r.kind, Attempt: r.attempt, Code: r.code, Grace: r.grace, OOMScoreAdj: r.oom,
		Container: t.strs[r.ctr], Reason: t.strs[r.reason], Result: t.strs[r.result], Value: r.flags&recValue != 0}
	if r.flags&recPod != 0 {
		e.Pod = pb.name
	}
	if r.flags&recNode != 0 {
		e.Node = pb.node
	}
	switch {
	case r.flags&recPhase != 0:
		e.Phase = t.strs[r.str]
	case r.flags&recCond != 0:
		e.Cond = t.strs[r.str]
	case r.flags&recProbe != 0:
		e.Probe = t.strs[r.str]
	}
}
