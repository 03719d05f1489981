package rundir

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
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

	lock    *os.File
	data    [4]*os.File // dataFiles order
	journal *os.File
	last    sizes // after the last commit
	failed  error // a commit failed: the files may hold a torn tail
	sync    func(*os.File) error
	spillAt int64
}

// dataFiles are the frame files a commit appends to, in commit order.
var dataFiles = [4]string{FileHistory, FilePods, FileFindings, FileTrials}

// Option configures Create and Open.
type Option func(*Dir)

// WithSync replaces fsync (tests inject a failing one).
func WithSync(fn func(*os.File) error) Option { return func(d *Dir) { d.sync = fn } }

// WithSpillAt sets the size from which a trial's history in flight moves
// to a file (default SpillAt).
func WithSpillAt(n int64) Option { return func(d *Dir) { d.spillAt = n } }

func dirWith(path string, opts []Option) *Dir {
	d := &Dir{Path: path, sync: (*os.File).Sync, spillAt: SpillAt}
	for _, o := range opts {
		o(d)
	}
	return d
}

// notEmptyRemedy is what to do about a non-empty output directory. Only
// a soak is continued in place, so only a soak's directory is offered
// 'soak --resume', as a command that works as printed (run.json holds its
// duration). It used to offer 'soak --resume' for any directory: for a
// run's, the printed advice failed (no --duration) and, given one, would
// have appended soak trials to a finished run.
func notEmptyRemedy(path string) string {
	if info, err := ReadInfo(path); err == nil && info.Command == "soak" {
		return fmt.Sprintf("use another --out, or continue that soak with 'sidebench soak --resume %s'", path)
	}
	return "use another --out"
}

// CheckEmpty refuses an output directory that exists and holds anything
// (a UsageError saying what to do instead): Create's check, and merge's
// for the directory it writes several runs into.
func CheckEmpty(path string) error {
	if ents, err := os.ReadDir(path); err == nil && len(ents) > 0 {
		return usage("output directory %s exists and is not empty (%s)", path, notEmptyRemedy(path))
	}
	return nil
}

// Create makes a fresh run directory (which must not exist or be empty),
// copies the scenarios in and writes run.json.
func Create(path string, info Info, scens []*scenario.Scenario, opts ...Option) (*Dir, error) {
	if err := CheckEmpty(path); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(path, DirScenarios), 0o755); err != nil {
		return nil, fmt.Errorf("creating the run directory: %w", err)
	}
	info.Format = Format
	d := dirWith(path, opts)
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
// overrides applied; Resumed is the number of committed trials, which
// EachEntry, EachTrialStats and EachFinding read back.
func Open(path string, opts ...Option) (*Dir, []*scenario.Scenario, error) {
	info, err := ReadInfo(path)
	if err != nil {
		return nil, nil, err
	}
	if info.Format < Format {
		return nil, nil, usage("%s: written by an older sidebench (run directory format %d, this one writes %d): it can be read (graduate, compare, trend, check) but not resumed or merged; start a new soak", path, info.Format, Format)
	}
	d := dirWith(path, opts)
	d.Info = info
	if err := d.acquire(info.Command + " --resume"); err != nil {
		return nil, nil, err
	}
	fail := func(err error) (*Dir, []*scenario.Scenario, error) {
		d.Close()
		return nil, nil, err
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
	n := 0
	jsize, err := EachEntry(jpath, func(e *Entry) error {
		n++
		d.last = e.sizes()
		return nil
	})
	if err != nil {
		return fail(err)
	}
	// Check every size before cutting anything: a data file shorter than
	// the journal says was damaged outside sidebench.
	for _, name := range dataFiles {
		want := d.last.of(name)
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
	for _, name := range dataFiles {
		if err := truncate(filepath.Join(path, name), d.last.of(name)); err != nil {
			return fail(err)
		}
	}
	os.RemoveAll(filepath.Join(path, DirSegments))
	if err := d.openFiles(); err != nil {
		return fail(err)
	}
	d.Resumed = n
	return d, scens, nil
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
	for i, name := range dataFiles {
		d.data[i] = open(name)
	}
	d.journal = open(FileJournal)
	if err == nil {
		err = os.MkdirAll(filepath.Join(d.Path, DirSegments), 0o755)
	}
	return err
}

// NewSegment returns the holder of a trial's compressed history in flight
// (in memory, spilled to .segments/ when large).
func (d *Dir) NewSegment(scen, policy string, trial int) *Segment {
	return &Segment{path: filepath.Join(d.Path, DirSegments, segmentName(scen, policy, trial)), spill: d.spillAt}
}

// Finished is a trial ready to commit: its journal entry (the sizes are
// filled by Commit) and its parts, each one zstd frame or empty: the
// retained history, the retained pods' records, the findings and the
// trial's TrialStats line. NewFinished builds one.
type Finished struct {
	Entry    Entry
	History  *Segment
	Pods     []byte
	Findings []byte
	Trials   []byte
}

// NewFinished assembles a trial's parts: pods is the retained pods'
// records already compressed as one frame (FrameWriter), findings is JSONL
// (either may be empty), st its TrialStats.
func NewFinished(e Entry, history *Segment, pods, findings []byte, st *TrialStats) (*Finished, error) {
	line, err := statsLine(st)
	if err != nil {
		return nil, err
	}
	return &Finished{Entry: e, History: history, Pods: pods, Findings: Compress(findings), Trials: Compress(line)}, nil
}

// Size is the number of bytes committing t appends (its frames and
// about its journal line).
func (t *Finished) Size() int64 {
	n := int64(len(t.Pods) + len(t.Findings) + len(t.Trials) + 1024)
	if t.History != nil {
		n += t.History.Len()
	}
	return n
}

// Commit appends finished trials, in order: every part of every trial is
// appended to its file, each file written to is fsynced once, then the
// journal lines naming the new sizes are appended and the journal
// fsynced (a group commit: one fsync per file however many trials). It
// returns the entries as committed. An error (disk full, failing fsync)
// leaves the trials uncommitted (a resume cuts them off) and the
// directory refuses further commits.
func (d *Dir) Commit(batch ...*Finished) ([]Entry, error) {
	if d.failed != nil {
		return nil, fmt.Errorf("an earlier commit failed: %w", d.failed)
	}
	out, err := d.commit(batch)
	if err != nil {
		d.failed = err
	}
	return out, err
}

func (d *Dir) commit(batch []*Finished) ([]Entry, error) {
	out := make([]Entry, 0, len(batch))
	cur := d.last
	var written [4]bool
	add := func(i int, n int64) {
		switch dataFiles[i] {
		case FileHistory:
			cur.history += n
		case FilePods:
			cur.pods += n
		case FileFindings:
			cur.findings += n
		default:
			cur.trials += n
		}
		written[i] = written[i] || n > 0
	}
	var lines []byte
	for _, t := range batch {
		if t.History != nil {
			n, err := t.History.writeTo(d.data[0])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", FileHistory, err)
			}
			add(0, n)
		}
		for i, part := range [][]byte{t.Pods, t.Findings, t.Trials} {
			if _, err := d.data[i+1].Write(part); err != nil {
				return nil, fmt.Errorf("%s: %w", dataFiles[i+1], err)
			}
			add(i+1, int64(len(part)))
		}
		e := t.Entry
		e.History, e.PodsBytes, e.FindingBytes, e.TrialsBytes = cur.history, cur.pods, cur.findings, cur.trials
		b, err := json.Marshal(e)
		if err != nil {
			return nil, err
		}
		lines = append(append(lines, b...), '\n')
		out = append(out, e)
	}
	for i, f := range d.data {
		if written[i] {
			if err := d.sync(f); err != nil {
				return nil, fmt.Errorf("fsync %s: %w", f.Name(), err)
			}
		}
	}
	if _, err := d.journal.Write(lines); err != nil {
		return nil, fmt.Errorf("%s: %w", FileJournal, err)
	}
	if err := d.sync(d.journal); err != nil {
		return nil, fmt.Errorf("fsync %s: %w", FileJournal, err)
	}
	for _, t := range batch {
		if t.History != nil {
			t.History.Close()
		}
	}
	d.last = cur
	return out, nil
}

// Close closes the files, drops the trials in flight and releases the
// lock.
func (d *Dir) Close() error {
	var first error
	for _, f := range d.data {
		if err := endEmpty(f); err != nil && first == nil {
			first = err
		}
	}
	for _, f := range append(d.data[:], d.journal) {
		if f != nil {
			if err := f.Close(); err != nil && first == nil {
				first = err
			}
		}
	}
	d.data, d.journal = [4]*os.File{}, nil
	os.RemoveAll(filepath.Join(d.Path, DirSegments))
	if d.lock != nil {
		d.lock.Truncate(0)
		d.lock.Close() // releases the flock
		d.lock = nil
	}
	return first
}

// emptyFrame is a zstd frame of no content (single segment, content size
// 0, one empty last block, no checksum).
var emptyFrame = []byte{0x28, 0xb5, 0x2f, 0xfd, 0x20, 0x00, 0x01, 0x00, 0x00}

// endEmpty gives a data file no trial wrote to (no finding in the whole
// run, every pod dropped by retention) one empty frame: a zero-byte file
// is not a zstd stream, and `zstdcat findings.jsonl.zst` failed on it
// with "unexpected end of file". The frame lies past the journal's last
// committed size, so readers (which stop there) never see it and a
// resume cuts it off like any uncommitted bytes.
func endEmpty(f *os.File) error {
	if f == nil {
		return nil
	}
	fi, err := f.Stat()
	if err != nil || fi.Size() > 0 {
		return err
	}
	if _, err := f.Write(emptyFrame); err != nil {
		return err
	}
	return f.Sync()
}

// BudgetError is a commit that would take the run directory past its
// --max-disk budget: the run stops before it, with what was committed.
type BudgetError struct {
	Max, Used, Need int64
	// Reserve is the room kept for rewriting the reports: twice their
	// size, at least 1 MiB. The message states it: without it, "holds
	// 44.8 KiB and the next commit needs 27.0 KiB" read as fitting a
	// 293 KiB budget.
	Reserve int64
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("stopped before exceeding --max-disk %s: the directory holds %s, the next commit needs %s and %s stays free for rewriting the final reports (twice their size, at least 1 MiB)",
		FormatSize(e.Max), FormatSize(e.Used), FormatSize(e.Need), FormatSize(e.Reserve))
}

// CheckBudget says whether committing pending more bytes keeps the
// directory within Info.MaxDisk, with room to rewrite the reports (they
// are replaced atomically, so twice their size) and the journal: nil if
// it does (or there is no budget), a *BudgetError if not.
func (d *Dir) CheckBudget(pending int64) error {
	if d.Info.MaxDisk <= 0 {
		return nil
	}
	used, reports := d.usage()
	reserve := max(2*reports, 1<<20)
	if used+pending+reserve > d.Info.MaxDisk {
		return &BudgetError{Max: d.Info.MaxDisk, Used: used, Need: pending, Reserve: reserve}
	}
	return nil
}

// usage sums the sizes of the directory's files, and of its reports.
func (d *Dir) usage() (total, reports int64) {
	filepath.WalkDir(d.Path, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return nil
		}
		fi, err := e.Info()
		if err != nil {
			return nil
		}
		total += fi.Size()
		rel, _ := filepath.Rel(d.Path, p)
		switch {
		case rel == FileJournal || rel == FileRun || rel == FileLock || slices.Contains(dataFiles[:], rel),
			strings.HasPrefix(rel, DirScenarios+string(filepath.Separator)), strings.HasPrefix(rel, DirSegments+string(filepath.Separator)):
		default:
			reports += fi.Size()
		}
		return nil
	})
	return total, reports
}

// FormatSize renders a byte count with a binary unit.
func FormatSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
