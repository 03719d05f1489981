package history

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
)

// flushAt is the buffered size at which Writer hands bytes to the
// underlying io.Writer. 32 KiB amortises syscalls (an event is ~100 bytes)
// while keeping the amount lost in a crash small.
const flushAt = 32 << 10

// Writer encodes events as JSONL (one event per line, see docs/history.md).
// It is a Sink. Output is byte-deterministic: keys are written in a fixed
// order and Spec/Meta maps are sorted by encoding/json.
//
// Writer buffers; call Flush before closing the underlying writer. It is
// not safe for concurrent use. After an I/O error every later call returns
// that error.
type Writer struct {
	w   io.Writer
	buf []byte
	err error
}

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: w, buf: make([]byte, 0, flushAt+1024)}
}

// Write encodes e as one line. It does not allocate in steady state unless
// e carries a Spec or Meta.
func (w *Writer) Write(e *Event) error {
	if w.err != nil {
		return w.err
	}
	n := len(w.buf)
	b, err := AppendEvent(w.buf, e)
	if err == nil && len(b)-n-1 > MaxLineBytes {
		err = fmt.Errorf("history: event %s at t=%d encodes to %d bytes, more than the %d a line may hold", e.Kind, e.T, len(b)-n-1, MaxLineBytes)
	}
	if err != nil {
		w.buf = b[:n] // drop the half-written line; the stream stays valid
		return err
	}
	w.buf = b
	if len(w.buf) >= flushAt {
		return w.Flush()
	}
	return nil
}

// Flush writes buffered lines to the underlying writer. Lines are always
// written whole, so a reader never sees a partial line unless the process
// dies inside the underlying Write.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	if len(w.buf) == 0 {
		return nil
	}
	_, err := w.w.Write(w.buf)
	w.buf = w.buf[:0]
	if err != nil {
		w.err = fmt.Errorf("history: write: %w", err)
	}
	return w.err
}

// AppendEvent appends the JSONL encoding of e, including the trailing
// newline, to dst. Keys are in the fixed order t, k, pod, node, c, attempt,
// code, reason, grace, critGrace, cpu, mem, cpuLimit, memLimit,
// oomScoreAdj, cpus, phase, cond, v, probe, result, fault, fid, target, msg,
// spec, meta; empty fields are omitted except "v" for kinds where
// Kind.HasValue.
func AppendEvent(dst []byte, e *Event) ([]byte, error) {
	if !e.Kind.valid() {
		return dst, fmt.Errorf("history: cannot encode event with invalid kind %d at t=%d", uint8(e.Kind), e.T)
	}
	dst = append(dst, `{"t":`...)
	dst = strconv.AppendInt(dst, e.T, 10)
	dst = append(dst, `,"k":"`...)
	dst = append(dst, kindNames[e.Kind]...) // kind names need no escaping
	dst = append(dst, '"')
	dst = appendStrField(dst, `,"pod":`, e.Pod)
	dst = appendStrField(dst, `,"node":`, e.Node)
	dst = appendStrField(dst, `,"c":`, e.Container)
	if e.Attempt != 0 {
		dst = append(dst, `,"attempt":`...)
		dst = strconv.AppendUint(dst, uint64(e.Attempt), 10)
	}
	if e.Code != 0 {
		dst = append(dst, `,"code":`...)
		dst = strconv.AppendInt(dst, int64(e.Code), 10)
	}
	dst = appendStrField(dst, `,"reason":`, e.Reason)
	dst = appendIntField(dst, `,"grace":`, e.Grace)
	dst = appendIntField(dst, `,"critGrace":`, e.CritGrace)
	dst = appendIntField(dst, `,"cpu":`, e.CPU)
	dst = appendIntField(dst, `,"mem":`, e.Mem)
	dst = appendIntField(dst, `,"cpuLimit":`, e.CPULimit)
	dst = appendIntField(dst, `,"memLimit":`, e.MemLimit)
	dst = appendIntField(dst, `,"oomScoreAdj":`, int64(e.OOMScoreAdj))
	dst = appendStrField(dst, `,"cpus":`, e.CPUs)
	dst = appendStrField(dst, `,"phase":`, e.Phase)
	dst = appendStrField(dst, `,"cond":`, e.Cond)
	// A true Value on a kind that does not carry one is still written, so
	// that encoding never loses information.
	if e.Value || e.Kind.HasValue() {
		dst = append(dst, `,"v":`...)
		dst = strconv.AppendBool(dst, e.Value)
	}
	dst = appendStrField(dst, `,"probe":`, e.Probe)
	dst = appendStrField(dst, `,"result":`, e.Result)
	dst = appendStrField(dst, `,"fault":`, e.Fault)
	if e.FaultID != 0 {
		dst = append(dst, `,"fid":`...)
		dst = strconv.AppendUint(dst, uint64(e.FaultID), 10)
	}
	dst = appendStrField(dst, `,"target":`, e.Target)
	dst = appendStrField(dst, `,"msg":`, e.Msg)
	if e.Spec != nil {
		// Rare (once per pod): encoding/json is fast enough and sorts map
		// keys, which keeps the output deterministic.
		b, err := json.Marshal(e.Spec)
		if err != nil {
			return dst, fmt.Errorf("history: encode spec of %s: %w", e.Pod, err)
		}
		dst = append(dst, `,"spec":`...)
		dst = append(dst, b...)
	}
	if e.Meta != nil {
		b, err := json.Marshal(e.Meta)
		if err != nil {
			return dst, fmt.Errorf("history: encode meta: %w", err)
		}
		dst = append(dst, `,"meta":`...)
		dst = append(dst, b...)
	}
	return append(dst, '}', '\n'), nil
}

// String returns e's JSONL encoding without the newline (for test failure
// messages and debugging).
func (e Event) String() string {
	b, err := AppendEvent(nil, &e)
	if err != nil {
		return fmt.Sprintf("{invalid event: %v}", err)
	}
	return string(b[:len(b)-1])
}

func appendIntField(dst []byte, key string, v int64) []byte {
	if v == 0 {
		return dst
	}
	dst = append(dst, key...)
	return strconv.AppendInt(dst, v, 10)
}

func appendStrField(dst []byte, key, s string) []byte {
	if s == "" {
		return dst
	}
	dst = append(dst, key...)
	return appendString(dst, s)
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. It escapes what JSON requires
// (quote, backslash, control characters), replaces invalid UTF-8 with
// U+FFFD like encoding/json, and escapes U+2028/U+2029 so a line is also
// valid JavaScript. HTML characters are left alone: histories are not
// embedded in HTML unescaped.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
