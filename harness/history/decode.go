package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrTruncated marks a last line that ends without a newline and does not
// decode: the writer died mid-line (a crashed run). Every complete line
// before it was returned normally, so callers that accept crashed runs
// treat it as end-of-data: errors.Is(err, ErrTruncated).
var ErrTruncated = errors.New("truncated last line (crashed run?)")

// MaxLineBytes bounds one history line (without its newline). The Writer
// refuses to write a longer one and the Reader reports a longer one as a
// LineError wrapping ErrLineTooLong, having skipped it without holding it:
// a history is read with memory bounded by this, whatever the file holds (a
// 1.5 GB line without a newline ran `check` out of memory). Real lines are
// a few hundred bytes; a pod.created line with a large spec a few KB.
const MaxLineBytes = 4 << 20

// ErrLineTooLong marks a line longer than MaxLineBytes.
var ErrLineTooLong = errors.New("line too long")

// ErrUnsorted marks a line whose t is before the previous line's within a
// run: the history contract sorts lines by t (docs/history.md), and the
// checkers rely on it, so such a history is malformed.
var ErrUnsorted = errors.New("t goes backwards")

// LineError is a decoding error with the 1-based line number it occurred on.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("history line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// Reader decodes a JSONL history one event at a time.
//
// It is strict where strictness catches real bugs (unknown kinds, unknown
// or duplicate fields, non-integer numbers are errors) and lenient where a
// crash or an editor leaves harmless marks (blank lines and a trailing
// '\r' are ignored; a truncated last line is ErrTruncated, not garbage).
//
// After a LineError that is not ErrTruncated, Read may be called again: it
// continues with the next line.
//
// Events with byte-identical specs share one *PodSpec: treat Spec as
// read-only.
type Reader struct {
	br   *bufio.Reader
	long []byte // accumulates lines longer than br's buffer
	line int
	eof  bool
	d    decoder
	// lastT and lastLine are the t and line number of the previous event
	// of the current run (lastLine 0: none yet), for the order check.
	lastT    int64
	lastLine int
}

// NewReader returns a Reader that reads from r.
func NewReader(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 64<<10)}
}

// Line returns the line number of the last line read.
func (r *Reader) Line() int { return r.line }

// Read decodes the next event into e, overwriting all of it. It returns
// io.EOF at the end of the input, and a *LineError otherwise.
func (r *Reader) Read(e *Event) error {
	for {
		if r.eof {
			return io.EOF
		}
		line, nl, err := r.readLine()
		if err == errTooLong {
			r.line++
			return &LineError{Line: r.line, Err: fmt.Errorf("%w: longer than %d bytes", ErrLineTooLong, MaxLineBytes)}
		}
		if err != nil {
			if err == io.EOF {
				r.eof = true
				return io.EOF
			}
			return fmt.Errorf("history: read after line %d: %w", r.line, err)
		}
		r.line++
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if err := r.d.decode(line, e); err != nil {
			if !nl {
				r.eof = true
				return &LineError{Line: r.line, Err: fmt.Errorf("%w: %v", ErrTruncated, err)}
			}
			return &LineError{Line: r.line, Err: err}
		}
		return r.checkOrder(e)
	}
}

// checkOrder enforces the contract that a run's lines are sorted by t;
// run.meta starts a new run (a file may hold several, each from t=0).
func (r *Reader) checkOrder(e *Event) error {
	if e.Kind != RunMeta && r.lastLine > 0 && e.T < r.lastT {
		return &LineError{Line: r.line, Err: fmt.Errorf("%w: t=%d is before t=%d of line %d (lines of a run are sorted by t)", ErrUnsorted, e.T, r.lastT, r.lastLine)}
	}
	r.lastT, r.lastLine = e.T, r.line
	return nil
}

// errTooLong is readLine's report of a line over MaxLineBytes.
var errTooLong = errors.New("line too long")

// readLine returns the next line without its "\n" (and without a "\r"
// before it); nl reports whether the newline was there. The returned slice
// is valid until the next call.
func (r *Reader) readLine() (line []byte, nl bool, err error) {
	b, err := r.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		r.long = append(r.long[:0], b...)
		for err == bufio.ErrBufferFull {
			b, err = r.br.ReadSlice('\n')
			if len(r.long)+len(b) > MaxLineBytes+2 { // +2: the "\r\n"
				// Skip the rest of the line without keeping it.
				for err == bufio.ErrBufferFull {
					_, err = r.br.ReadSlice('\n')
				}
				r.long = nil
				if err != nil && err != io.EOF {
					return nil, false, err
				}
				if err == io.EOF {
					r.eof = true
				}
				return nil, false, errTooLong
			}
			r.long = append(r.long, b...)
		}
		b = r.long
	}
	switch {
	case err == nil:
		b = b[:len(b)-1]
		if n := len(b); n > 0 && b[n-1] == '\r' {
			b = b[:n-1]
		}
		return b, true, nil
	case err == io.EOF && len(b) > 0:
		return b, false, nil
	default:
		return nil, false, err
	}
}

// UnmarshalEvent decodes one JSONL line (with or without its newline) into
// e, overwriting all of it.
func UnmarshalEvent(line []byte, e *Event) error {
	var d decoder
	return d.decode(bytes.TrimRight(line, "\r\n"), e)
}

// decoder is a hand-written scanner for the flat event object: the checker
// re-reads big histories, and reflection-based decoding is several times
// slower. Only spec and meta (once per pod or run) go through encoding/json.
type decoder struct {
	// intern deduplicates repeated strings (pod, node and container names
	// recur on every line), so decoding a name allocates once, and pods
	// buffered by a Partitioner share one copy.
	intern  map[string]string
	scratch []byte // unescaped string bytes
	specs   map[string]*PodSpec
}

// maxIntern bounds the intern table; it is cleared when full, which only
// costs some re-allocation.
const maxIntern = 1 << 14

type field uint8

const (
	fT field = iota
	fK
	fPod
	fNode
	fC
	fAttempt
	fCode
	fReason
	fGrace
	fCritGrace
	fCPU
	fMem
	fCPULimit
	fMemLimit
	fOOM
	fCPUs
	fPhase
	fCond
	fV
	fProbe
	fResult
	fFault
	fFID
	fTarget
	fMsg
	fSpec
	fMeta
	fieldCount
)

var fieldNames = [fieldCount]string{"t", "k", "pod", "node", "c", "attempt", "code", "reason", "grace",
	"critGrace", "cpu", "mem", "cpuLimit", "memLimit", "oomScoreAdj", "cpus", "phase", "cond", "v", "probe", "result", "fault", "fid", "target", "msg", "spec", "meta"}

func lookupField(key []byte) (field, bool) {
	switch string(key) { // no allocation: the compiler special-cases this
	case "t":
		return fT, true
	case "k":
		return fK, true
	case "pod":
		return fPod, true
	case "node":
		return fNode, true
	case "c":
		return fC, true
	case "attempt":
		return fAttempt, true
	case "code":
		return fCode, true
	case "reason":
		return fReason, true
	case "grace":
		return fGrace, true
	case "critGrace":
		return fCritGrace, true
	case "cpu":
		return fCPU, true
	case "mem":
		return fMem, true
	case "cpuLimit":
		return fCPULimit, true
	case "memLimit":
		return fMemLimit, true
	case "oomScoreAdj":
		return fOOM, true
	case "cpus":
		return fCPUs, true
	case "phase":
		return fPhase, true
	case "cond":
		return fCond, true
	case "v":
		return fV, true
	case "probe":
		return fProbe, true
	case "result":
		return fResult, true
	case "fault":
		return fFault, true
	case "fid":
		return fFID, true
	case "target":
		return fTarget, true
	case "msg":
		return fMsg, true
	case "spec":
		return fSpec, true
	case "meta":
		return fMeta, true
	}
	return 0, false
}

func (d *decoder) decode(b []byte, e *Event) error {
	*e = Event{}
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return errors.New("expected a JSON object")
	}
	i = skipWS(b, i+1)
	var seen uint32
	if i < len(b) && b[i] == '}' {
		i++
	} else {
		for {
			key, j, err := d.str(b, i)
			if err != nil {
				return fmt.Errorf("field name: %v", err)
			}
			f, ok := lookupField(key)
			if !ok {
				return fmt.Errorf("unknown field %q", key)
			}
			if seen&(1<<f) != 0 {
				return fmt.Errorf("duplicate field %q", fieldNames[f])
			}
			seen |= 1 << f
			j = skipWS(b, j)
			if j >= len(b) || b[j] != ':' {
				return fmt.Errorf("field %q: expected ':'", fieldNames[f])
			}
			j = skipWS(b, j+1)
			if j, err = d.value(b, j, f, e); err != nil {
				if f == fK {
					return err // `unknown kind "x"` needs no more context
				}
				return fmt.Errorf("field %q: %v", fieldNames[f], err)
			}
			i = skipWS(b, j)
			if i >= len(b) {
				return errors.New("unexpected end of line")
			}
			if b[i] == '}' {
				i++
				break
			}
			if b[i] != ',' {
				return fmt.Errorf("expected ',' or '}' at column %d", i+1)
			}
			i = skipWS(b, i+1)
		}
	}
	if i = skipWS(b, i); i != len(b) {
		return fmt.Errorf("unexpected data after the object at column %d", i+1)
	}
	if seen&(1<<fK) == 0 {
		return errors.New(`missing field "k"`)
	}
	if seen&(1<<fT) == 0 {
		return errors.New(`missing field "t"`)
	}
	return nil
}

// value decodes the value of field f starting at b[i] into e.
func (d *decoder) value(b []byte, i int, f field, e *Event) (int, error) {
	switch f {
	case fT, fGrace, fCritGrace, fCPU, fMem, fCPULimit, fMemLimit:
		v, j, err := parseInt(b, i, 64)
		switch f {
		case fT:
			e.T = v
		case fGrace:
			e.Grace = v
		case fCritGrace:
			e.CritGrace = v
		case fCPU:
			e.CPU = v
		case fMem:
			e.Mem = v
		case fCPULimit:
			e.CPULimit = v
		case fMemLimit:
			e.MemLimit = v
		}
		return j, err
	case fCode, fOOM:
		v, j, err := parseInt(b, i, 32)
		if f == fCode {
			e.Code = int32(v)
		} else {
			e.OOMScoreAdj = int32(v)
		}
		return j, err
	case fAttempt, fFID:
		v, j, err := parseUint(b, i, 32)
		if f == fAttempt {
			e.Attempt = uint32(v)
		} else {
			e.FaultID = uint32(v)
		}
		return j, err
	case fV:
		switch {
		case bytes.HasPrefix(b[i:], []byte("true")):
			e.Value = true
			return i + 4, nil
		case bytes.HasPrefix(b[i:], []byte("false")):
			return i + 5, nil
		}
		return i, errors.New("expected true or false")
	case fK:
		s, j, err := d.str(b, i)
		if err != nil {
			return j, err
		}
		k, ok := kindByName[string(s)]
		if !ok {
			return j, fmt.Errorf("unknown kind %q", s)
		}
		e.Kind = k
		return j, nil
	case fSpec, fMeta:
		j, err := skipObject(b, i)
		if err != nil {
			return j, err
		}
		if f == fSpec {
			e.Spec, err = d.spec(b[i:j])
		} else {
			e.Meta = new(Meta)
			err = strictUnmarshal(b[i:j], e.Meta)
		}
		return j, err
	}
	s, j, err := d.str(b, i)
	if err != nil {
		return j, err
	}
	var v string
	if f == fMsg {
		v = string(s) // free text rarely repeats; keep it out of the table
	} else {
		v = d.internBytes(s)
	}
	switch f {
	case fPod:
		e.Pod = v
	case fNode:
		e.Node = v
	case fC:
		e.Container = v
	case fReason:
		e.Reason = v
	case fPhase:
		e.Phase = v
	case fCond:
		e.Cond = v
	case fProbe:
		e.Probe = v
	case fResult:
		e.Result = v
	case fFault:
		e.Fault = v
	case fTarget:
		e.Target = v
	case fCPUs:
		e.CPUs = v
	case fMsg:
		e.Msg = v
	}
	return j, nil
}

func (d *decoder) internBytes(s []byte) string {
	if v, ok := d.intern[string(s)]; ok { // lookup does not allocate
		return v
	}
	if d.intern == nil || len(d.intern) >= maxIntern {
		d.intern = make(map[string]string, 256)
	}
	v := string(s)
	d.intern[v] = v
	return v
}

// spec decodes a pod spec, sharing one *PodSpec between byte-identical
// specs: pods of one workload carry the same spec, and encoding/json is by
// far the most expensive part of reading a history.
func (d *decoder) spec(raw []byte) (*PodSpec, error) {
	if ps, ok := d.specs[string(raw)]; ok {
		return ps, nil
	}
	ps := new(PodSpec)
	if err := strictUnmarshal(raw, ps); err != nil {
		return nil, err
	}
	if d.specs == nil || len(d.specs) >= maxSpecs {
		d.specs = make(map[string]*PodSpec)
	}
	d.specs[string(raw)] = ps
	return ps, nil
}

// maxSpecs bounds the spec cache (distinct specs are few: one per
// workload template, unless labels are per pod).
const maxSpecs = 256

func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// str reads a JSON string at b[i]. The returned bytes alias b when the
// string has no escapes and d.scratch otherwise; they are valid until the
// next call.
func (d *decoder) str(b []byte, i int) ([]byte, int, error) {
	if i >= len(b) || b[i] != '"' {
		return nil, i, errors.New("expected a string")
	}
	i++
	start := i
	for i < len(b) {
		for i < len(b) && plainASCII[b[i]] { // the hot loop: names are plain ASCII
			i++
		}
		if i >= len(b) {
			break
		}
		c := b[i]
		switch {
		case c == '"':
			return b[start:i], i + 1, nil
		case c == '\\':
			return d.strSlow(b, start, i)
		case c < 0x20:
			return nil, i, errors.New("control character in string")
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				return d.strSlow(b, start, i)
			}
			i += size
			continue
		}
		i++
	}
	return nil, i, errors.New("unterminated string")
}

// strSlow continues str from the first backslash or invalid UTF-8 byte at
// b[i].
func (d *decoder) strSlow(b []byte, start, i int) ([]byte, int, error) {
	out := append(d.scratch[:0], b[start:i]...)
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			d.scratch = out // keep the grown buffer for the next string
			return out, i + 1, nil
		case c < 0x20:
			return nil, i, errors.New("control character in string")
		case c >= utf8.RuneSelf:
			// Invalid UTF-8 becomes U+FFFD, as encoding/json does, so
			// decoding and re-encoding are stable.
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				out = utf8.AppendRune(out, utf8.RuneError)
			} else {
				out = append(out, b[i:i+size]...)
			}
			i += size
			continue
		case c != '\\':
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(b) {
			break
		}
		i++
		switch b[i] {
		case '"', '\\', '/':
			out = append(out, b[i])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(b, i+1)
			if !ok {
				return nil, i, errors.New(`bad \u escape`)
			}
			i += 4
			if utf16.IsSurrogate(r) {
				r2, ok := rune(0), false
				if i+2 < len(b) && b[i+1] == '\\' && b[i+2] == 'u' {
					r2, ok = hex4(b, i+3)
				}
				if dec := utf16.DecodeRune(r, r2); ok && dec != utf8.RuneError {
					r = dec
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			return nil, i, fmt.Errorf("bad escape \\%c", b[i])
		}
		i++
	}
	return nil, i, errors.New("unterminated string")
}

// plainASCII marks the bytes a JSON string can hold as is: printable ASCII
// except quote and backslash.
var plainASCII = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// parseInt reads a JSON integer (no fraction or exponent: every numeric
// field is an integer, and a float would mean a broken writer).
func parseInt(b []byte, i, bits int) (int64, int, error) {
	neg := i < len(b) && b[i] == '-'
	j := i
	if neg {
		j++
	}
	u, k, err := parseUint(b, j, 64)
	if err != nil {
		return 0, k, err
	}
	lim := uint64(1) << (bits - 1) // |min|; max is lim-1
	if (!neg && u >= lim) || (neg && u > lim) {
		return 0, k, fmt.Errorf("%s out of range for int%d", b[i:k], bits)
	}
	if neg {
		return -int64(u), k, nil // wraps correctly for the minimum
	}
	return int64(u), k, nil
}

func parseUint(b []byte, i, bits int) (uint64, int, error) {
	j := i
	var u uint64
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		d := uint64(b[j] - '0')
		if u > (1<<64-1-d)/10 {
			return 0, j, errors.New("integer overflow")
		}
		u = u*10 + d
		j++
	}
	if j == i {
		return 0, i, errors.New("expected an integer")
	}
	if j < len(b) && (b[j] == '.' || b[j] == 'e' || b[j] == 'E') {
		return 0, j, errors.New("expected an integer, got a fraction or exponent")
	}
	if b[i] == '0' && j-i > 1 {
		return 0, j, errors.New("leading zero in integer")
	}
	if bits < 64 && u >= 1<<bits {
		return 0, j, fmt.Errorf("%s out of range for uint%d", b[i:j], bits)
	}
	return u, j, nil
}

// skipObject returns the index just past the JSON object (or null) at b[i].
// It only balances braces and brackets outside strings; encoding/json
// validates the contents afterwards.
func skipObject(b []byte, i int) (int, error) {
	if bytes.HasPrefix(b[i:], []byte("null")) {
		return i, errors.New("null is not allowed; omit the field")
	}
	if i >= len(b) || b[i] != '{' {
		return i, errors.New("expected an object")
	}
	depth := 0
	for j := i; j < len(b); j++ {
		switch b[j] {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return j + 1, nil
			}
		case '"':
			for j++; j < len(b) && b[j] != '"'; j++ {
				if b[j] == '\\' {
					j++
				}
			}
		}
	}
	return len(b), errors.New("unterminated object")
}
