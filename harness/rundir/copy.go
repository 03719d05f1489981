package rundir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Committed is a committed trial of a directory with the sizes before
// it: its frames are the bytes [Before, Entry) of each data file.
type Committed struct {
	Entry  Entry
	Before Entry
}

// EachCommitted calls fn for every committed trial of dir, in order, with
// the byte ranges of its frames.
func EachCommitted(dir string, fn func(*Committed) error) error {
	v, err := OpenView(dir)
	if err != nil {
		return err
	}
	var prev Entry
	return v.EachEntry(func(e *Entry) error {
		c := Committed{Entry: *e, Before: prev}
		prev = *e
		return fn(&c)
	})
}

// Reader reads committed trials' frames as stored (compressed), to copy
// them into another directory without decoding them (merge).
type Reader struct {
	dir   string
	files [4]*os.File // dataFiles order; nil if absent
}

// OpenReader opens dir's data files for copying trials out. The
// directory must be format 2.
func OpenReader(dir string) (*Reader, error) {
	info, err := ReadInfo(dir)
	if err != nil {
		return nil, err
	}
	if info.Format < Format {
		return nil, usage("%s: run directory format %d (written by an older sidebench): its trials cannot be copied; re-run it", dir, info.Format)
	}
	r := &Reader{dir: dir}
	for i, name := range dataFiles {
		f, err := os.Open(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			r.Close()
			return nil, err
		}
		r.files[i] = f
	}
	return r, nil
}

// Close closes the files.
func (r *Reader) Close() error {
	for _, f := range r.files {
		if f != nil {
			f.Close()
		}
	}
	return nil
}

// Finished returns a committed trial ready to commit into d: its entry
// and its frames, byte for byte.
func (r *Reader) Finished(d *Dir, c *Committed) (*Finished, error) {
	var parts [4][]byte
	after, before := c.Entry.sizes(), c.Before.sizes()
	for i, name := range dataFiles {
		from, to := before.of(name), after.of(name)
		if to == from {
			continue
		}
		if r.files[i] == nil || to < from {
			return nil, usage("%s: %s: trial %s/%s#%d names bytes [%d, %d) that are not there", r.dir, name, c.Entry.Scenario, c.Entry.Policy, c.Entry.Trial, from, to)
		}
		parts[i] = make([]byte, to-from)
		if _, err := r.files[i].ReadAt(parts[i], from); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(r.dir, name), err)
		}
	}
	seg := d.NewSegment(c.Entry.Scenario, c.Entry.Policy, c.Entry.Trial)
	seg.Write(parts[0])
	return &Finished{Entry: c.Entry, History: seg, Pods: parts[1], Findings: parts[2], Trials: parts[3]}, nil
}
