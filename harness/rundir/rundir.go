// Package rundir is the run directory as a typed store: creating one,
// reopening one to resume it (locked, scenario hashes verified, journal
// checked line by line), committing a finished trial crash-safely, and
// typed readers of its files for everything that reads runs back
// (graduate, compare, explain, reports).
//
// Layout (docs/reports.md):
//
//	run.json        what was run (command, backend, seeds, scenarios with their hashes, build)
//	scenarios/      a copy of every scenario file as run
//	history.jsonl   every event of every committed trial
//	pods.jsonl      one metrics.Record per pod
//	findings.jsonl  one FindingRecord per checker finding
//	journal.jsonl   one Entry per committed trial, with the file sizes after its commit
//	.lock           flock held by the process writing the directory
//	.segments/      trials in flight (removed on commit or resume)
//
// The commit order (data files appended and fsynced, then the journal line
// naming their new sizes) makes a crash at any point recoverable: on
// resume, whatever lies past the journal's last sizes is cut off.
package rundir

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sidebench/sidebench/harness/check"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/metrics"
	"github.com/sidebench/sidebench/internal/version"
)

// Files of a run directory.
const (
	FileHistory  = "history.jsonl"
	FilePods     = "pods.jsonl"
	FileFindings = "findings.jsonl"
	FileJournal  = "journal.jsonl"
	FileRun      = "run.json"
	FileLock     = ".lock"
	DirScenarios = "scenarios"
	DirSegments  = ".segments"
)

// Info is run.json: what was run, so that a resume continues it and a
// reader knows what it reads.
type Info struct {
	Command   string        `json:"command"`
	Backend   string        `json:"backend"`
	Seed      uint64        `json:"seed,omitempty"`
	Trials    int           `json:"trials,omitempty"`
	Duration  string        `json:"duration,omitempty"`
	Scenarios []ScenarioRef `json:"scenarios"`
	StartedAt time.Time     `json:"startedAt"`
	// Version is the build's version string (Build.Version), kept at the
	// top level for readers of older run directories.
	Version string       `json:"version"`
	Build   version.Info `json:"build"`
	// Options are the backend's settings that shape the results (nodes,
	// feature gates...), recorded so that a resume uses the same.
	Options map[string]string `json:"options,omitempty"`
}

// ScenarioRef is one scenario of the run.
type ScenarioRef struct {
	Name string `json:"name"`
	// File is the copy inside the run directory (scenarios/NAME.yaml);
	// Origin the path given on the command line.
	File   string `json:"file"`
	Origin string `json:"origin"`
	// Hash is the SHA-256 of the file content as run.
	Hash string `json:"hash"`
}

// HashOf returns the recorded hash of the named scenario ("" if absent).
func (i *Info) HashOf(name string) string {
	for _, s := range i.Scenarios {
		if s.Name == name {
			return s.Hash
		}
	}
	return ""
}

// Entry is one line of journal.jsonl: a committed trial, its checker and
// fault counts, and the data files' sizes right after its commit.
type Entry struct {
	Scenario     string `json:"scenario"`
	ScenarioHash string `json:"scenarioHash,omitempty"`
	Policy       string `json:"policy"`
	Trial        int    `json:"trial"`
	Seed         uint64 `json:"seed"`
	Pods         int    `json:"pods"`
	Violations   int    `json:"violations"`
	// ViolatingPods counts the trial's pods with at least one violation.
	ViolatingPods int  `json:"violatingPods"`
	Degradations  int  `json:"degradations"`
	Partial       bool `json:"partial,omitempty"`
	// ElapsedNanos is the trial's wall time.
	ElapsedNanos int64 `json:"elapsedNanos,omitempty"`
	History      int64 `json:"historyBytes"`
	PodsBytes    int64 `json:"podsBytes"`
	FindingBytes int64 `json:"findingsBytes"`
	// Rows and Matrix are the trial's checker counts.
	Rows   []check.Row  `json:"rows,omitempty"`
	Matrix []check.Cell `json:"matrix,omitempty"`
	// Faults tallies the trial's fault firings by catalogue name.
	Faults map[string]*FaultCount `json:"faults,omitempty"`
	// GroupViolatingPods counts the trial's pods with a violation of an
	// invariant of each group (check.Report.GroupViolatingPods).
	GroupViolatingPods map[string]int `json:"groupViolatingPods,omitempty"`
}

// Key identifies a trial across run directories: two entries with the same
// key are the same trial (same scenario content, policy, seed and number)
// and must be counted once when runs are pooled.
type Key struct {
	ScenarioHash, Policy string
	Seed                 uint64
	Trial                int
}

// Key returns the entry's key (hash falls back to the scenario name for
// journals written before hashes were recorded per entry).
func (e *Entry) Key() Key {
	h := e.ScenarioHash
	if h == "" {
		h = "name:" + e.Scenario
	}
	return Key{h, e.Policy, e.Seed, e.Trial}
}

// FaultCount is how many firings of one fault kind took effect and how
// many could not (with their first distinct reasons).
type FaultCount struct {
	Applied    int      `json:"applied"`
	NotApplied int      `json:"notApplied,omitempty"`
	Reasons    []string `json:"reasons,omitempty"`
}

// MaxFaultReasons bounds the distinct reasons kept per fault kind.
const MaxFaultReasons = 3

// Add folds o into c.
func (c *FaultCount) Add(o *FaultCount) {
	c.Applied += o.Applied
	c.NotApplied += o.NotApplied
	for _, r := range o.Reasons {
		c.Reason(r)
	}
}

// Reason records a distinct reason for a firing not applied.
func (c *FaultCount) Reason(r string) {
	if len(c.Reasons) >= MaxFaultReasons {
		return
	}
	for _, x := range c.Reasons {
		if x == r {
			return
		}
	}
	c.Reasons = append(c.Reasons, r)
}

// FindingRecord is one line of findings.jsonl: a checker finding with its
// trial's identity; the excerpt events are in the history's JSONL form.
type FindingRecord struct {
	Scenario string            `json:"scenario"`
	Policy   string            `json:"policy"`
	Trial    int               `json:"trial"`
	Seed     uint64            `json:"seed"`
	ID       string            `json:"id"`
	Class    string            `json:"class"`
	Pod      string            `json:"pod"`
	Node     string            `json:"node,omitempty"`
	T        int64             `json:"t"`
	Msg      string            `json:"msg"`
	Excuse   string            `json:"excuse,omitempty"`
	Fault    *check.FaultRef   `json:"fault,omitempty"`
	Excerpt  []json.RawMessage `json:"excerpt,omitempty"`
	Elided   int               `json:"elided,omitempty"`
}

// NewFindingRecord records a finding of a trial.
func NewFindingRecord(scen, policy string, trial int, seed uint64, f *check.Finding) FindingRecord {
	r := FindingRecord{Scenario: scen, Policy: policy, Trial: trial, Seed: seed,
		ID: f.ID, Class: f.Class.String(), Pod: f.Pod, Node: f.Node, T: f.T, Msg: f.Msg, Excuse: f.Excuse, Fault: f.Fault, Elided: f.Elided}
	for i := range f.Excerpt {
		if b, err := history.AppendEvent(nil, &f.Excerpt[i]); err == nil {
			r.Excerpt = append(r.Excerpt, json.RawMessage(bytes.TrimRight(b, "\n")))
		}
	}
	return r
}

// String renders the finding ("INV-S5 violation t=1.2s: ... [fault ...]").
func (r *FindingRecord) String() string {
	s := fmt.Sprintf("%s %s t=%s: %s", r.ID, r.Class, fmtNs(r.T), r.Msg)
	if r.Excuse != "" {
		s += " [excused: " + r.Excuse + "]"
	}
	if r.Fault != nil {
		s += fmt.Sprintf(" [fault %s#%d at %s]", r.Fault.Name, r.Fault.ID, fmtNs(r.Fault.T))
	}
	return s
}

func fmtNs(ns int64) string {
	d := time.Duration(ns)
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.String()
}

// UsageError is a problem with what the user pointed at (not a run
// directory, a corrupt journal, a locked directory, an edited scenario):
// commands exit 2 on it.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func usage(format string, args ...any) error { return &UsageError{fmt.Errorf(format, args...)} }

// ReadInfo reads run.json.
func ReadInfo(dir string) (Info, error) {
	var info Info
	b, err := os.ReadFile(filepath.Join(dir, FileRun))
	if err != nil {
		return info, usage("%s: not a run directory: %v", dir, unwrapPath(err))
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return info, usage("%s: bad %s: %v", dir, FileRun, err)
	}
	if info.Build.Version == "" {
		info.Build.Version = info.Version
	}
	return info, nil
}

// ReadJournal reads journal.jsonl. A torn last line (no newline: the crash
// happened while it was written) is not committed and is ignored; any
// other line that does not decode is an error naming it, because dropping
// it would silently drop every later trial. It also returns the size of
// the committed part.
func ReadJournal(path string) ([]Entry, int64, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	var out []Entry
	var good int64
	for line := 1; len(b) > 0; line++ {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break // torn last line: not committed
		}
		var e Entry
		if err := json.Unmarshal(b[:i], &e); err != nil {
			return nil, 0, usage("%s:%d: corrupt journal line (%v); only a torn last line can be dropped, so nothing was changed (rebuild the journal with 'soak --resume --repair' or restore the file)", path, line, err)
		}
		out = append(out, e)
		good += int64(i + 1)
		b = b[i+1:]
	}
	return out, good, nil
}

// EachPod calls fn for every record of pods.jsonl (none if absent).
func EachPod(dir string, fn func(*metrics.Record) error) error {
	path := filepath.Join(dir, FilePods)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return usage("%s: %v", path, unwrapPath(err))
	}
	defer f.Close()
	rr := metrics.NewRecordReader(f)
	var rec metrics.Record
	for n := 1; ; n++ {
		if err := rr.Read(&rec); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return usage("%s: record %d: %v", path, n, err)
		}
		if err := fn(&rec); err != nil {
			return err
		}
	}
}

// MaxFindingLine bounds one line of findings.jsonl.
const MaxFindingLine = 64 << 20

// EachFinding calls fn for every record of findings.jsonl (none if absent).
func EachFinding(dir string, fn func(*FindingRecord) error) error {
	path := filepath.Join(dir, FileFindings)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return usage("%s: %v", path, unwrapPath(err))
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), MaxFindingLine)
	for n := 1; sc.Scan(); n++ {
		var fr FindingRecord
		if err := json.Unmarshal(sc.Bytes(), &fr); err != nil {
			return usage("%s:%d: %v", path, n, err)
		}
		if err := fn(&fr); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return usage("%s: %v", path, err)
	}
	return nil
}

// WriteFileAtomic writes a file through a temporary file in the same
// directory, fsync and rename: a reader sees the old or the new content,
// never a torn one, and an error (disk full) leaves the old content.
func WriteFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	fail := func(err error) error {
		tmp.Close()
		os.Remove(name)
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(name)
		return err
	}
	return os.Rename(name, path)
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// segmentName is a trial's file in .segments/.
func segmentName(scen, policy string, trial int) string {
	return fmt.Sprintf("%s.%s.%d.jsonl", scen, strings.NewReplacer(":", "_", "/", "_").Replace(policy), trial)
}
