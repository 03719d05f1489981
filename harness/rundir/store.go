package rundir

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sidebench/sidebench/harness/scenario"
)

// Dir is a run directory open for writing. One process at a time holds
// it (an exclusive flock on .lock): a second run, soak or merge on the
// same directory is refused, because two writers interleave trials and
// corrupt the journal.
type Dir struct {
	Path string
	Info Info
	// Resumed is the number of trials committed before this process
	// opened the directory.
	Resumed int

	lock                       *os.File
	hist, pods, finds, journal *os.File
	last                       Entry // sizes after the last commit
}

// Create makes a fresh run directory (which must not exist or be empty),
// copies the scenarios in and writes run.json.
func Create(path string, info Info, scens []*scenario.Scenario) (*Dir, error) {
	if ents, err := os.ReadDir(path); err == nil && len(ents) > 0 {
		return nil, usage("output directory %s exists and is not empty (use another --out, or soak --resume)", path)
	}
	if err := os.MkdirAll(filepath.Join(path, DirScenarios), 0o755); err != nil {
		return nil, err
	}
	d := &Dir{Path: path}
	if err := d.acquire(info.Command); err != nil {
		return nil, err
	}
	for _, s := range scens {
		ref := ScenarioRef{Name: s.Metadata.Name, File: filepath.Join(DirScenarios, s.Metadata.Name+".yaml"), Origin: s.File, Hash: s.Hash}
		if err := WriteFileAtomic(filepath.Join(path, ref.File), s.Source); err != nil {
			d.Close()
			return nil, err
		}
		info.Scenarios = append(info.Scenarios, ref)
	}
	d.Info = info
	b, _ := json.MarshalIndent(info, "", "  ")
	if err := WriteFileAtomic(filepath.Join(path, FileRun), append(b, '\n')); err != nil {
		d.Close()
		return nil, err
	}
	if err := d.openFiles(); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// Open reopens a run directory to resume it. It takes the lock, checks
// that every scenario copy still has the hash recorded at creation (an
// edited copy would mix trials of different content), reads the journal
// (a corrupt line other than a torn last one is an error and nothing is
// touched), then cuts whatever was written after the last committed trial
// and drops the trials in flight. It returns the scenarios with run.json's
// overrides applied and the committed entries.
func Open(path string) (*Dir, []*scenario.Scenario, []Entry, error) {
	info, err := ReadInfo(path)
	if err != nil {
		return nil, nil, nil, err
	}
	d := &Dir{Path: path, Info: info}
	if err := d.acquire(info.Command + " --resume"); err != nil {
		return nil, nil, nil, err
	}
	fail := func(err error) (*Dir, []*scenario.Scenario, []Entry, error) {
		d.Close()
		return nil, nil, nil, err
	}
	var scens []*scenario.Scenario
	for _, ref := range info.Scenarios {
		file := filepath.Join(path, ref.File)
		b, err := os.ReadFile(file)
		if err != nil {
			return fail(usage("%s: %v", file, unwrapPath(err)))
		}
		if sum := sha256.Sum256(b); ref.Hash != "" && hex.EncodeToString(sum[:]) != ref.Hash {
			return fail(usage("%s: the scenario was changed after the run started (sha256 %.12s, recorded %.12s): resuming would mix trials of different scenarios; start a new run instead", file, hex.EncodeToString(sum[:]), ref.Hash))
		}
		s, err := scenario.LoadBytes(file, b)
		if err != nil {
			return fail(&UsageError{err})
		}
		scens = append(scens, s.WithOverrides(info.Seed, info.Trials))
	}
	jpath := filepath.Join(path, FileJournal)
	entries, jsize, err := ReadJournal(jpath)
	if err != nil {
		return fail(err)
	}
	if n := len(entries); n > 0 {
		d.last = entries[n-1]
	}
	// Check every size before cutting anything: a data file shorter than
	// the journal says was damaged outside sidebench.
	sizes := map[string]int64{FileHistory: d.last.History, FilePods: d.last.PodsBytes, FileFindings: d.last.FindingBytes}
	for name, want := range sizes {
		fi, err := os.Stat(filepath.Join(path, name))
		have := int64(0)
		if err == nil {
			have = fi.Size()
		} else if !errors.Is(err, os.ErrNotExist) {
			return fail(err)
		}
		if have < want {
			return fail(usage("%s: %d bytes, but the journal's last committed trial ends at %d: the file was truncated outside sidebench; nothing was changed", filepath.Join(path, name), have, want))
		}
	}
	if err := truncate(jpath, jsize); err != nil {
		return fail(err)
	}
	for name, size := range sizes {
		if err := truncate(filepath.Join(path, name), size); err != nil {
			return fail(err)
		}
	}
	os.RemoveAll(filepath.Join(path, DirSegments))
	if err := d.openFiles(); err != nil {
		return fail(err)
	}
	d.Resumed = len(entries)
	return d, scens, entries, nil
}

func truncate(path string, size int64) error {
	if err := os.Truncate(path, size); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// acquire takes the directory's lock or says who holds it.
func (d *Dir) acquire(what string) error {
	path := filepath.Join(d.Path, FileLock)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := io.ReadAll(io.LimitReader(f, 512))
		f.Close()
		who := strings.TrimSpace(string(holder))
		if who == "" {
			who = "another process"
		}
		return usage("run directory %s is in use by %s; wait for it to finish or use another directory", d.Path, who)
	}
	f.Truncate(0)
	f.WriteAt([]byte(fmt.Sprintf("pid %s (sidebench %s, since %s)\n", strconv.Itoa(os.Getpid()), what, time.Now().UTC().Format(time.RFC3339))), 0)
	d.lock = f
	return nil
}

func (d *Dir) openFiles() error {
	var err error
	open := func(name string) *os.File {
		if err != nil {
			return nil
		}
		var f *os.File
		f, err = os.OpenFile(filepath.Join(d.Path, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		return f
	}
	d.hist, d.pods, d.finds, d.journal = open(FileHistory), open(FilePods), open(FileFindings), open(FileJournal)
	if err == nil {
		err = os.MkdirAll(filepath.Join(d.Path, DirSegments), 0o755)
	}
	return err
}

// NewSegment creates the history file of a trial in flight.
func (d *Dir) NewSegment(scen, policy string, trial int) (*os.File, error) {
	return os.Create(filepath.Join(d.Path, DirSegments, segmentName(scen, policy, trial)))
}

// Finished is a trial ready to commit: its journal entry (the sizes are
// filled by Commit), its history segment (synced by the caller) and its
// pods.jsonl and findings.jsonl lines.
type Finished struct {
	Entry    Entry
	Segment  string
	Pods     []byte
	Findings []byte
}

// Commit appends a finished trial: history, pods and findings are appended
// and fsynced first, then the journal line naming their new sizes. It
// returns the entry as committed. An error (disk full, failing fsync)
// leaves the trial uncommitted: on resume it is cut off.
func (d *Dir) Commit(t *Finished) (Entry, error) {
	seg, err := os.Open(t.Segment)
	if err != nil {
		return Entry{}, err
	}
	hn, err := io.Copy(d.hist, seg)
	seg.Close()
	if err != nil {
		return Entry{}, fmt.Errorf("%s: %w", FileHistory, err)
	}
	if _, err := d.pods.Write(t.Pods); err != nil {
		return Entry{}, fmt.Errorf("%s: %w", FilePods, err)
	}
	if _, err := d.finds.Write(t.Findings); err != nil {
		return Entry{}, fmt.Errorf("%s: %w", FileFindings, err)
	}
	for _, f := range []*os.File{d.hist, d.pods, d.finds} {
		if err := f.Sync(); err != nil {
			return Entry{}, fmt.Errorf("fsync %s: %w", f.Name(), err)
		}
	}
	e := t.Entry
	e.History = d.last.History + hn
	e.PodsBytes = d.last.PodsBytes + int64(len(t.Pods))
	e.FindingBytes = d.last.FindingBytes + int64(len(t.Findings))
	b, err := json.Marshal(e)
	if err != nil {
		return Entry{}, err
	}
	if _, err := d.journal.Write(append(b, '\n')); err != nil {
		return Entry{}, fmt.Errorf("%s: %w", FileJournal, err)
	}
	if err := d.journal.Sync(); err != nil {
		return Entry{}, fmt.Errorf("fsync %s: %w", FileJournal, err)
	}
	os.Remove(t.Segment)
	d.last = e
	return e, nil
}

// Close closes the files, drops the trials in flight and releases the
// lock.
func (d *Dir) Close() error {
	var first error
	for _, f := range []*os.File{d.hist, d.pods, d.finds, d.journal} {
		if f != nil {
			if err := f.Close(); err != nil && first == nil {
				first = err
			}
		}
	}
	d.hist, d.pods, d.finds, d.journal = nil, nil, nil, nil
	os.RemoveAll(filepath.Join(d.Path, DirSegments))
	if d.lock != nil {
		d.lock.Truncate(0)
		d.lock.Close() // releases the flock
		d.lock = nil
	}
	return first
}
