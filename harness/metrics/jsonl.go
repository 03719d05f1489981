package metrics

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// RecordWriter writes Records as JSONL (one JSON object per line), the
// pods.jsonl format. It buffers: call Flush at the end.
type RecordWriter struct {
	w   *bufio.Writer
	enc *json.Encoder
}

// NewRecordWriter returns a RecordWriter writing to w.
func NewRecordWriter(w io.Writer) *RecordWriter {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw) // Encode appends the newline
	enc.SetEscapeHTML(false)
	return &RecordWriter{w: bw, enc: enc}
}

// Write appends one record.
func (w *RecordWriter) Write(r *Record) error {
	if r.LatenciesMs == nil { // keep the field present: {} not null
		c := *r
		c.LatenciesMs = map[Metric]float64{}
		r = &c
	}
	return w.enc.Encode(r)
}

// Flush writes buffered data to the underlying writer.
func (w *RecordWriter) Flush() error { return w.w.Flush() }

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
