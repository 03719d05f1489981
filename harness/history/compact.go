package history

import (
	"encoding/binary"
	"unsafe"
)

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
//
// The records are stored encoded, one after the other in a byte slice
// (appendRec, recReader): the sequence number and time as deltas from the
// pod's previous record, the rest as varints present only when not zero.
// A record takes 9-12 bytes instead of 56 (a sequence number and a rec):
// the 150,000 live pods of the scale envelope held 212 MB of records.

// rec is one event in a pod's buffer, decoded.
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
	recSpec                    // Spec is the buffer's spec (podBuf.spec)
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
	recent [256]symCache
	// same caches lookups by where the string's bytes are: the sim writes
	// the very same string values (a spec's container names, constant
	// reasons), found without reading their bytes (a cache miss each when
	// the hash above read three of them). The entry holds the string, so
	// its bytes cannot be freed and reused by another string while cached.
	same [256]symCache
}

type symCache struct {
	s  string
	id sym
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
	at := uintptr(unsafe.Pointer(unsafe.StringData(s)))
	sc := &t.same[(at>>4^at>>12)&255]
	if unsafe.StringData(sc.s) == unsafe.StringData(s) && len(sc.s) == len(s) {
		return sc.id, true
	}
	id, ok := t.idByValue(s)
	if ok {
		sc.s, sc.id = s, id
	}
	return id, ok
}

// idByValue is id's lookup by the string's bytes.
func (t *symtab) idByValue(s string) (sym, bool) {
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
		e.Fault != "" || e.FaultID != 0 || e.Target != "" || e.Msg != "" || e.Meta != nil ||
		(e.Spec != nil && pb.spec != nil && e.Spec != pb.spec) {
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
	ok = ok1 && ok2 && ok3 && ok4
	if ok && e.Spec != nil {
		// A pod has one spec (pod.created's): kept once, by pointer, not
		// in a whole event of 304 bytes.
		pb.spec = e.Spec
		r.flags |= recSpec
	}
	return r, ok
}

// expand writes the event r of o stands for into e; strs are the
// symbols (symtab.strs, or a snapshot of it: the table only grows).
func expand(strs []string, r *rec, o *recOwner, e *Event) {
	if r.ext >= 0 {
		*e = o.ext[r.ext]
		return
	}
	*e = Event{T: r.t, Kind: r.kind, Attempt: r.attempt, Code: r.code, Grace: r.grace, OOMScoreAdj: r.oom,
		Container: strs[r.ctr], Reason: strs[r.reason], Result: strs[r.result], Value: r.flags&recValue != 0}
	if r.flags&recPod != 0 {
		e.Pod = o.name
	}
	if r.flags&recNode != 0 {
		e.Node = o.node
	}
	if r.flags&recSpec != 0 {
		e.Spec = o.spec
	}
	switch {
	case r.flags&recPhase != 0:
		e.Phase = strs[r.str]
	case r.flags&recCond != 0:
		e.Cond = strs[r.str]
	case r.flags&recProbe != 0:
		e.Probe = strs[r.str]
	}
}

// Presence bits of a record's optional fields (the has byte).
const (
	hasGrace uint8 = 1 << iota
	hasAttempt
	hasCode
	hasOOM
	hasExt
	hasCtr
	hasReason
	hasResult
)

// maxRecBytes bounds an encoded record: a sequence number and a time
// delta of up to 10 bytes each, kind, flags and has, three 64-bit and
// four 32-bit varints, four symbols.
const maxRecBytes = 10 + 3 + 10 + 3*10 + 4*5 + 4*3

// recBase is the state records are encoded against: the previous record's
// sequence number and time.
type recBase struct {
	seq uint64
	t   int64
}

// appendRec appends r, the event at stream position seq, to b, and moves
// base on to it.
func appendRec(b []byte, base *recBase, seq uint64, r *rec) []byte {
	var has uint8
	if r.grace != 0 {
		has |= hasGrace
	}
	if r.attempt != 0 {
		has |= hasAttempt
	}
	if r.code != 0 {
		has |= hasCode
	}
	if r.oom != 0 {
		has |= hasOOM
	}
	if r.ext >= 0 {
		has |= hasExt
	}
	if r.ctr != 0 {
		has |= hasCtr
	}
	if r.reason != 0 {
		has |= hasReason
	}
	if r.result != 0 {
		has |= hasResult
	}
	b = binary.AppendUvarint(b, seq-base.seq)
	b = append(b, byte(r.kind), r.flags, has)
	b = binary.AppendVarint(b, r.t-base.t)
	base.seq, base.t = seq, r.t
	if has&hasGrace != 0 {
		b = binary.AppendVarint(b, r.grace)
	}
	if has&hasAttempt != 0 {
		b = binary.AppendUvarint(b, uint64(r.attempt))
	}
	if has&hasCode != 0 {
		b = binary.AppendVarint(b, int64(r.code))
	}
	if has&hasOOM != 0 {
		b = binary.AppendVarint(b, int64(r.oom))
	}
	if has&hasExt != 0 {
		b = binary.AppendUvarint(b, uint64(r.ext))
	}
	if has&hasCtr != 0 {
		b = binary.AppendUvarint(b, uint64(r.ctr))
	}
	if has&hasReason != 0 {
		b = binary.AppendUvarint(b, uint64(r.reason))
	}
	if has&hasResult != 0 {
		b = binary.AppendUvarint(b, uint64(r.result))
	}
	if r.flags&(recPhase|recCond|recProbe) != 0 {
		b = binary.AppendUvarint(b, uint64(r.str))
	}
	return b
}

// recReader decodes the records appendRec wrote, in order.
type recReader struct {
	b    []byte
	base recBase
}

// next decodes the next record into r and returns its sequence number.
// The caller knows how many records there are.
func (d *recReader) next(r *rec) uint64 {
	b := d.b
	uv := func() uint64 {
		v, n := binary.Uvarint(b)
		b = b[n:]
		return v
	}
	sv := func() int64 {
		v, n := binary.Varint(b)
		b = b[n:]
		return v
	}
	d.base.seq += uv()
	kind, flags, has := Kind(b[0]), b[1], b[2]
	b = b[3:]
	d.base.t += sv()
	*r = rec{t: d.base.t, kind: kind, flags: flags, ext: -1}
	if has&hasGrace != 0 {
		r.grace = sv()
	}
	if has&hasAttempt != 0 {
		r.attempt = uint32(uv())
	}
	if has&hasCode != 0 {
		r.code = int32(sv())
	}
	if has&hasOOM != 0 {
		r.oom = int32(sv())
	}
	if has&hasExt != 0 {
		r.ext = int32(uv())
	}
	if has&hasCtr != 0 {
		r.ctr = sym(uv())
	}
	if has&hasReason != 0 {
		r.reason = sym(uv())
	}
	if has&hasResult != 0 {
		r.result = sym(uv())
	}
	if flags&(recPhase|recCond|recProbe) != 0 {
		r.str = sym(uv())
	}
	d.b = b
	return d.base.seq
}
