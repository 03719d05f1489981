package metrics

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/sidebench/sidebench/harness/history"
)

// RecordWriter writes Records as JSONL (one JSON object per line), the
// pods.jsonl format. It buffers: call Flush at the end. The encoding is
// hand-written (AppendRecord) and byte-identical to encoding/json's.
type RecordWriter struct {
	w   io.Writer
	buf []byte
	err error
}

// recordFlushAt is the buffered size at which RecordWriter writes.
const recordFlushAt = 32 << 10

// NewRecordWriter returns a RecordWriter writing to w.
func NewRecordWriter(w io.Writer) *RecordWriter {
	return &RecordWriter{w: w, buf: make([]byte, 0, recordFlushAt+1024)}
}

// Write appends one record.
func (w *RecordWriter) Write(r *Record) error {
	if w.err != nil {
		return w.err
	}
	w.buf = AppendRecord(w.buf, r)
	if len(w.buf) >= recordFlushAt {
		return w.Flush()
	}
	return nil
}

// Flush writes buffered data to the underlying writer.
func (w *RecordWriter) Flush() error {
	if w.err != nil || len(w.buf) == 0 {
		return w.err
	}
	_, w.err = w.w.Write(w.buf)
	w.buf = w.buf[:0]
	return w.err
}

// AppendRecord appends r's pods.jsonl line, newline included, to dst: the
// bytes encoding/json (HTML escaping off) gives for r, with LatenciesMs
// written as {} when nil, without reflection or allocation.
func AppendRecord(dst []byte, r *Record) []byte {
	dst = append(dst, `{"scenario":`...)
	dst = history.AppendJSONString(dst, r.Scenario)
	dst = append(dst, `,"policy":`...)
	dst = history.AppendJSONString(dst, r.Policy)
	dst = append(dst, `,"seed":`...)
	dst = strconv.AppendUint(dst, r.Seed, 10)
	dst = append(dst, `,"trial":`...)
	dst = strconv.AppendInt(dst, int64(r.Trial), 10)
	if r.Backend != "" {
		dst = append(dst, `,"backend":`...)
		dst = history.AppendJSONString(dst, r.Backend)
	}
	dst = append(dst, `,"pod":`...)
	dst = history.AppendJSONString(dst, r.Pod)
	if r.Workload != "" {
		dst = append(dst, `,"workload":`...)
		dst = history.AppendJSONString(dst, r.Workload)
	}
	if r.Node != "" {
		dst = append(dst, `,"node":`...)
		dst = history.AppendJSONString(dst, r.Node)
	}
	if r.RestartPolicy != "" {
		dst = append(dst, `,"restartPolicy":`...)
		dst = history.AppendJSONString(dst, r.RestartPolicy)
	}
	dst = append(dst, `,"job":`...)
	dst = strconv.AppendBool(dst, r.Job)
	dst = append(dst, `,"inits":`...)
	dst = strconv.AppendInt(dst, int64(r.Inits), 10)
	dst = append(dst, `,"sidecars":`...)
	dst = strconv.AppendInt(dst, int64(r.Sidecars), 10)
	dst = append(dst, `,"mains":`...)
	dst = strconv.AppendInt(dst, int64(r.Mains), 10)
	dst = append(dst, `,"phase":`...)
	dst = history.AppendJSONString(dst, r.Phase)
	dst = append(dst, `,"deleted":`...)
	dst = strconv.AppendBool(dst, r.Deleted)
	dst = append(dst, `,"removed":`...)
	dst = strconv.AppendBool(dst, r.Removed)
	dst = append(dst, `,"faulted":`...)
	dst = strconv.AppendBool(dst, r.Faulted)
	if len(r.Faults) > 0 {
		dst = append(dst, `,"faults":`...)
		dst = appendStrings(dst, r.Faults)
	}
	dst = append(dst, `,"latenciesMs":{`...)
	dst = appendLatencies(dst, r.LatenciesMs)
	dst = append(dst, `},"restarts":{"init":`...)
	dst = strconv.AppendInt(dst, int64(r.Restarts.Init), 10)
	dst = append(dst, `,"sidecar":`...)
	dst = strconv.AppendInt(dst, int64(r.Restarts.Sidecar), 10)
	dst = append(dst, `,"main":`...)
	dst = strconv.AppendInt(dst, int64(r.Restarts.Main), 10)
	dst = append(dst, '}')
	if len(r.Notes) > 0 {
		dst = append(dst, `,"notes":`...)
		dst = appendStrings(dst, r.Notes)
	}
	if len(r.Unmet) > 0 {
		dst = append(dst, `,"unmet":`...)
		dst = appendStrings(dst, r.Unmet)
	}
	return append(dst, '}', '\n')
}

func appendStrings(dst []byte, ss []string) []byte {
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = history.AppendJSONString(dst, s)
	}
	return append(dst, ']')
}

// appendLatencies writes the map's entries in key order, as encoding/json
// does.
func appendLatencies(dst []byte, m map[Metric]float64) []byte {
	var buf [8]string
	keys := buf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = history.AppendJSONString(dst, k)
		dst = append(dst, ':')
		dst = appendFloat(dst, m[k])
	}
	return dst
}

// appendFloat formats f as encoding/json does (ES6 number formatting).
// Non-finite values cannot occur in a record (durations between int64
// nanosecond times); encoding/json would fail on them, this writes null.
func appendFloat(dst []byte, f float64) []byte {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return append(dst, "null"...)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// WriteRecords writes recs as JSONL to w and flushes.
func WriteRecords(w io.Writer, recs []Record) error {
	rw := NewRecordWriter(w)
	for i := range recs {
		if err := rw.Write(&recs[i]); err != nil {
			return err
		}
	}
	return rw.Flush()
}

// RecordReader reads pods.jsonl. Decoding is strict: an unknown field is an
// error (a typo or a version mismatch should not pass silently). Blank lines
// are skipped.
type RecordReader struct {
	s    *bufio.Scanner
	line int
}

// NewRecordReader returns a RecordReader reading from r.
func NewRecordReader(r io.Reader) *RecordReader {
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 64<<10), 16<<20)
	return &RecordReader{s: s}
}

// Read decodes the next record into rec. It returns io.EOF at the end.
func (r *RecordReader) Read(rec *Record) error {
	for r.s.Scan() {
		r.line++
		b := bytes.TrimSpace(r.s.Bytes())
		if len(b) == 0 {
			continue
		}
		if err := UnmarshalRecord(b, rec); err != nil {
			return fmt.Errorf("pods.jsonl line %d: %w", r.line, err)
		}
		return nil
	}
	if err := r.s.Err(); err != nil {
		return fmt.Errorf("pods.jsonl line %d: %w", r.line+1, err)
	}
	return io.EOF
}

// UnmarshalRecord decodes one pods.jsonl line strictly (an unknown field
// is an error) into rec.
func UnmarshalRecord(b []byte, rec *Record) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	*rec = Record{}
	if err := dec.Decode(rec); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the record")
	}
	if rec.LatenciesMs == nil {
		rec.LatenciesMs = map[Metric]float64{}
	}
	return nil
}

// ForEachRecord calls fn with every record read from r. A torn last line
// (a run killed while writing it) ends the records without an error; any
// other decoding error is returned. rec is only valid during the call.
func ForEachRecord(r io.Reader, fn func(rec *Record)) error {
	rr := NewRecordReader(r)
	for {
		var rec Record
		err := rr.Read(&rec)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) && errors.Is(rr.Read(&rec), io.EOF) {
				return nil // torn last line
			}
			return err
		}
		fn(&rec)
	}
}

// ReadRecords reads every record from r.
func ReadRecords(r io.Reader) ([]Record, error) {
	rr := NewRecordReader(r)
	var out []Record
	for {
		var rec Record
		err := rr.Read(&rec)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, rec)
	}
}
