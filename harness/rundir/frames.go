package rundir

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/sidebench/sidebench/harness/history"
)

// The data files are sequences of independent zstd frames, one per
// committed trial and file (an empty part writes no frame). A frame
// decompresses to whole JSON lines, so the files read as one JSONL stream
// (`zstdcat history.jsonl.zst`), a trial's part is the byte range its
// journal entry names, and a crash loses at most the frames in flight: a
// resume cuts the files at the sizes of the last journal line. A file no
// trial wrote to gets one empty frame when the directory is closed
// (endEmpty), so that it too is a zstd stream.

// zstdMagic starts every zstd frame.
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// encoders are reused: a zstd encoder holds megabytes of tables.
var encoders = sync.Pool{New: func() any {
	e, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedDefault),
		zstd.WithWindowSize(1<<20), zstd.WithZeroFrames(false))
	if err != nil {
		panic(err) // the options are constant
	}
	return e
}}

// Compress returns data as one zstd frame (nil for no data: an empty part
// writes no frame).
func Compress(data []byte) []byte {
	if len(data) == 0 {
		return nil
	}
	e := encoders.Get().(*zstd.Encoder)
	defer encoders.Put(e)
	return e.EncodeAll(data, make([]byte, 0, len(data)/4+64))
}

// FrameWriter compresses a stream into one zstd frame written to w: a
// Segment for a trial's history, too large to build in memory first; a
// bytes.Buffer for its retained pods' records, compressed as they come
// instead of held whole (a 50,000-pod trial's records are 20 MB, whose
// buffer growth, zeroing included, was 3% of a certification run's CPU).
// Close ends the frame; nothing is written for an empty stream.
type FrameWriter struct {
	enc *zstd.Encoder
	n   int64
}

// NewFrameWriter starts a frame into w.
func NewFrameWriter(w io.Writer) *FrameWriter {
	e := encoders.Get().(*zstd.Encoder)
	e.Reset(w)
	return &FrameWriter{enc: e}
}

// Write compresses p into the frame.
func (w *FrameWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return w.enc.Write(p)
}

// Close ends the frame (writing nothing if no byte was written) and
// returns the encoder to the pool.
func (w *FrameWriter) Close() error {
	if w.enc == nil {
		return nil
	}
	var err error
	if w.n > 0 {
		err = w.enc.Close()
	}
	w.enc.Reset(nil)
	encoders.Put(w.enc)
	w.enc = nil
	return err
}

// SpillAt is the size from which a Segment moves from memory to a file in
// .segments/: a trial's compressed history is usually far smaller (a
// soak's trial keeps a few pods), and held in memory it is written to the
// run directory once, at its commit, instead of written then copied. Its
// buffer doubles as it grows: at 32 MiB it held up to 64 MiB (96 MiB while
// it grew) of the scale envelope's peak, for a copy that costs
// milliseconds.
const SpillAt = 8 << 20

// Segment holds one compressed part of a trial in flight: in memory, or
// past SpillAt in a file of .segments/ (removed on commit, on Close, and
// on resume).
type Segment struct {
	path  string // spill file, created on demand
	spill int64  // size from which it spills
	buf   bytes.Buffer
	f     *os.File
	n     int64
	err   error
}

// Write appends p.
func (s *Segment) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	s.n += int64(len(p))
	if s.f == nil && s.path != "" && int64(s.buf.Len()+len(p)) > s.spill {
		f, err := os.Create(s.path)
		if err != nil {
			s.err = err
			return 0, err
		}
		if _, err := f.Write(s.buf.Bytes()); err != nil {
			f.Close()
			s.err = err
			return 0, err
		}
		s.buf = bytes.Buffer{}
		s.f = f
	}
	if s.f != nil {
		n, err := s.f.Write(p)
		if err != nil {
			s.err = err
		}
		return n, err
	}
	return s.buf.Write(p)
}

// Len is the number of bytes written.
func (s *Segment) Len() int64 { return s.n }

// writeTo copies the segment to w.
func (s *Segment) writeTo(w io.Writer) (int64, error) {
	if s.err != nil {
		return 0, s.err
	}
	if s.f == nil {
		n, err := w.Write(s.buf.Bytes())
		return int64(n), err
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return 0, err
	}
	return io.Copy(w, bufio.NewReaderSize(s.f, 1<<20))
}

// Close drops the segment's content (and its spill file).
func (s *Segment) Close() error {
	s.buf = bytes.Buffer{}
	if s.f != nil {
		s.f.Close()
		s.f = nil
		return os.Remove(s.path)
	}
	return nil
}

// lineReader reads the JSON lines of a data file: decompressed when it is
// a sequence of zstd frames, as is when it is plain JSONL (a run directory
// written by sidebench before format 2, or a history file given by hand).
// Only the first limit bytes are read (limit < 0: all), so that a reader
// sees exactly the committed trials of a directory being written.
type lineReader struct {
	f   *os.File
	dec *zstd.Decoder
	r   *bufio.Reader
}

// openLines opens path for reading lines (see lineReader).
func openLines(path string, limit int64) (*lineReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	var src io.Reader = f
	if limit >= 0 {
		src = io.LimitReader(f, limit)
	}
	br := bufio.NewReaderSize(src, 64<<10)
	lr := &lineReader{f: f, r: br}
	if head, _ := br.Peek(4); bytes.Equal(head, zstdMagic) {
		dec, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
		if err != nil {
			f.Close()
			return nil, err
		}
		lr.dec = dec
		lr.r = bufio.NewReaderSize(dec, 64<<10)
	}
	return lr, nil
}

func (l *lineReader) Read(p []byte) (int, error) { return l.r.Read(p) }

func (l *lineReader) Close() error {
	if l.dec != nil {
		l.dec.Close()
	}
	return l.f.Close()
}

// ErrTornFrame is a data file that ends inside a zstd frame: the process
// died while writing it. The frames before it are whole. It is also a
// history.ErrTruncated, so history readers treat it as a crashed run's
// torn last line.
var ErrTornFrame = fmt.Errorf("the file ends inside a compressed frame (a trial was being written when the process died): %w", history.ErrTruncated)

// tornFrame maps the decoder's errors for a frame cut short to ErrTornFrame.
func tornFrame(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, zstd.ErrMagicMismatch) {
		return fmt.Errorf("%w (%v)", ErrTornFrame, err)
	}
	return err
}

// OpenHistory opens a history for reading as JSONL: a run directory's
// committed trials (history.jsonl.zst, or history.jsonl of an older
// directory), a compressed history file, or a plain one. A file that ends
// inside a frame reads up to the frame's start, then fails with an error
// wrapping ErrTornFrame.
func OpenHistory(path string) (io.ReadCloser, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		lr, err := openLines(path, -1)
		if err != nil {
			return nil, err
		}
		return tornReader{lr}, nil
	}
	v, err := OpenView(path)
	if err != nil {
		return nil, err
	}
	name, limit := v.file(FileHistory)
	lr, err := openLines(filepath.Join(path, name), limit)
	if errors.Is(err, os.ErrNotExist) {
		if _, rerr := os.Stat(filepath.Join(path, FileRun)); rerr != nil {
			// Any directory was called "this run directory".
			return nil, usage("%s: not a run directory (no %s) and not a history file", path, FileRun)
		}
		return nil, usage("%s: no history in this run directory", path)
	}
	if err != nil {
		return nil, err
	}
	return tornReader{lr}, nil
}

type tornReader struct{ *lineReader }

func (t tornReader) Read(p []byte) (int, error) {
	n, err := t.lineReader.Read(p)
	if err != nil && err != io.EOF {
		err = tornFrame(err)
	}
	return n, err
}
