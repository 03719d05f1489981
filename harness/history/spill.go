package history

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
)

// spillFile holds pods' buffered events that a Partitioner moved out of
// memory. It is a temporary file, unlinked at once where the OS allows it
// (so a crash leaves nothing behind) and removed by close otherwise. A
// record is uvarint(seq), uvarint(len), then the event's JSONL line.
type spillFile struct {
	f      *os.File
	path   string // non-empty while the file must still be removed
	off    int64  // end of the written data
	chunks int    // chunks still referenced by a live pod
	buf    []byte // one chunk being written
	line   []byte // one event's line
	d      decoder
}

// spillChunk is one spill of one pod: count records at [off, off+n).
type spillChunk struct {
	off, n int64
	count  int
}

func newSpillFile(dir string) (*spillFile, error) {
	f, err := os.CreateTemp(dir, "sidebench-partition-*.spill")
	if err != nil {
		return nil, err
	}
	sf := &spillFile{f: f}
	if os.Remove(f.Name()) != nil {
		sf.path = f.Name()
	}
	return sf, nil
}

func (s *spillFile) write(evs []seqEvent) (spillChunk, error) {
	b := s.buf[:0]
	for i := range evs {
		line, err := AppendEvent(s.line[:0], &evs[i].ev)
		if err != nil {
			return spillChunk{}, err
		}
		s.line = line
		b = binary.AppendUvarint(b, evs[i].seq)
		b = binary.AppendUvarint(b, uint64(len(line)))
		b = append(b, line...)
	}
	c := spillChunk{off: s.off, n: int64(len(b)), count: len(evs)}
	if _, err := s.f.WriteAt(b, s.off); err != nil {
		return spillChunk{}, fmt.Errorf("spill: %w", err)
	}
	s.off += int64(len(b))
	s.chunks++
	if cap(b) <= 1<<20 {
		s.buf = b[:0]
	}
	return c, nil
}

// read returns the events of chunks followed by tail.
func (s *spillFile) read(chunks []spillChunk, tail []seqEvent) ([]seqEvent, error) {
	n := len(tail)
	for _, c := range chunks {
		n += c.count
	}
	out := make([]seqEvent, 0, n)
	for _, c := range chunks {
		b := make([]byte, c.n)
		if _, err := s.f.ReadAt(b, c.off); err != nil {
			return nil, fmt.Errorf("spill: %w", err)
		}
		for len(b) > 0 {
			seq, k := binary.Uvarint(b)
			if k <= 0 {
				return nil, errors.New("spill: corrupt record")
			}
			b = b[k:]
			l, k := binary.Uvarint(b)
			if k <= 0 || uint64(len(b)-k) < l {
				return nil, errors.New("spill: corrupt record")
			}
			line := b[k : k+int(l)]
			b = b[k+int(l):]
			var e Event
			if err := s.d.decode(line[:len(line)-1], &e); err != nil {
				return nil, fmt.Errorf("spill: %w", err)
			}
			out = append(out, seqEvent{seq, e})
		}
	}
	return append(out, tail...), nil
}

// release forgets n chunks of a delivered pod; when none is left the file
// is emptied, so it holds at most what live pods still need.
func (s *spillFile) release(n int) {
	s.chunks -= n
	if s.chunks == 0 {
		s.off = 0
		_ = s.f.Truncate(0)
	}
}

func (s *spillFile) close() error {
	err := s.f.Close()
	if s.path != "" {
		if rerr := os.Remove(s.path); err == nil {
			err = rerr
		}
	}
	return err
}
