// Package rundir is the run directory as a typed store: creating one,
// reopening one to resume it (locked, scenario hashes verified, journal
// checked line by line), committing finished trials crash-safely, and
// typed readers of its files for everything that reads runs back
// (graduate, compare, explain, merge, trend, reports).
//
// Layout (format 2, docs/reports.md):
//
//	run.json            what was run (command, backend, seeds, scenarios with their hashes, build, retention)
//	scenarios/          a copy of every scenario file as run
//	journal.jsonl       one Entry per committed trial, with the data files' sizes after its commit
//	trials.jsonl.zst    per trial: its checker counts and the distributions of every pod (TrialStats)
//	history.jsonl.zst   the retained history (Retention): every event, or the pods with findings and a sample
//	pods.jsonl.zst      one metrics.Record per retained pod
//	findings.jsonl.zst  one FindingRecord per checker finding
//	.lock               flock held by the process writing the directory
//	.segments/          trials in flight too large for memory (removed on commit or resume)
//
// The .zst files are sequences of independent zstd frames, one per trial
// (frames.go): `zstdcat` reads them as JSONL, and every reader here reads
// only the committed part. The commit order (data frames appended and
// fsynced, then the journal lines naming their new sizes) makes a crash at
// any point recoverable: on resume, whatever lies past the journal's last
// sizes is cut off. Format 1 directories (plain .jsonl files, counts in
// the journal) are read, not resumed.
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
	"github.com/sidebench/sidebench/reports/stats"
)

// Files of a run directory.
const (
	FileHistory  = "history.jsonl.zst"
	FilePods     = "pods.jsonl.zst"
	FileFindings = "findings.jsonl.zst"
	FileTrials   = "trials.jsonl.zst"
	FileJournal  = "journal.jsonl"
	FileRun      = "run.json"
	FileLock     = ".lock"
	DirScenarios = "scenarios"
	DirSegments  = ".segments"
)

// Format is the run directory format this package writes: 2 (compressed
// frames, per-trial distributions, retention).
const Format = 2

// legacyName is a data file's name in a format 1 directory.
func legacyName(name string) string { return strings.TrimSuffix(name, ".zst") }

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
	// Format is the directory format (0 or 1: plain files, before
	// compression; Format is the current one).
	Format int `json:"format,omitempty"`
	// KeepHistory is the retention (Retention.String()); "" is "all".
	KeepHistory string `json:"keepHistory,omitempty"`
	// Shard is "I/N" for one slice of a sharded run ("" for a whole run).
	Shard string `json:"shard,omitempty"`
	// MaxDisk is the --max-disk budget in bytes (0: none).
	MaxDisk int64 `json:"maxDisk,omitempty"`
	// Merged lists the directories 'sidebench merge' pooled into this one.
	Merged []string `json:"merged,omitempty"`
	// Invocation is shared by the run directories of one 'sidebench run'
	// of several scenarios (DIR/a, DIR/b), "" for a run of one: nothing
	// else ties them together (trend reads them as one night).
	Invocation string `json:"invocation,omitempty"`
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

// Entry is one line of journal.jsonl: a committed trial, its headline
// counts, and the data files' sizes right after its commit (the trial's
// frames are the bytes between the previous entry's sizes and its own).
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
	// Retained counts the pods whose history and record were kept.
	Retained int `json:"retainedPods,omitempty"`
	// ElapsedNanos is the trial's wall time.
	ElapsedNanos int64 `json:"elapsedNanos,omitempty"`
	History      int64 `json:"historyBytes"`
	PodsBytes    int64 `json:"podsBytes"`
	FindingBytes int64 `json:"findingsBytes"`
	TrialsBytes  int64 `json:"trialsBytes,omitempty"`

	// Format 1 journals carried the checker and fault counts inline;
	// format 2 keeps them in trials.jsonl.zst (TrialStats).
	Rows               []check.Row            `json:"rows,omitempty"`
	Matrix             []check.Cell           `json:"matrix,omitempty"`
	Faults             map[string]*FaultCount `json:"faults,omitempty"`
	GroupViolatingPods map[string]int         `json:"groupViolatingPods,omitempty"`
}

// TrialStats is a trial's line in trials.jsonl.zst: what was measured
// over all of its pods, retained or not: the checker's counts per
// invariant and per invariant × fault, the fault firings, and the pod
// counts and latency distributions (metrics.Snapshot, mergeable). It is
// everything the aggregation needs besides the journal entry, so a run
// aggregates, resumes, merges and trends without re-reading pods.
type TrialStats struct {
	Rows   []check.Row            `json:"rows,omitempty"`
	Matrix []check.Cell           `json:"matrix,omitempty"`
	Faults map[string]*FaultCount `json:"faults,omitempty"`
	// GroupViolatingPods counts the trial's pods with a violation of an
	// invariant of each group (check.Report.GroupViolatingPods).
	GroupViolatingPods map[string]int   `json:"groupViolatingPods,omitempty"`
	Metrics            metrics.Snapshot `json:"metrics"`
	// User is the trial's user-level counts (nil: the trial's pods had
	// no user-level finding and its scenario compares no workarounds).
	User *UserStats `json:"user,omitempty"`
}

// UserStats is one trial's user-level guarantee counts (harness/check,
// Level USER) per stratum: "all", "no fault", one fault kind, or "several
// faults" (harness/runner/userlevel.go). Mergeable across trials.
type UserStats struct {
	Pods  map[string]int            `json:"pods"`            // stratum → pods
	Unmet map[string]map[string]int `json:"unmet,omitempty"` // stratum → guarantee → pods
	// Startup holds the startup latencies of the pods no fault touched per
	// workload and metric, for scenarios that compare workarounds.
	Startup []UserStartup `json:"startup,omitempty"`
}

// UserStartup is one workload's startup latency distribution.
type UserStartup struct {
	Workload string      `json:"workload"`
	Metric   string      `json:"metric"`
	Ms       *stats.Hist `json:"ms"`
}

// statsLine encodes a TrialStats as one JSON line: the invariants' rule
// texts are left out (the checker registry has them, and they would be
// most of the bytes).
func statsLine(st *TrialStats) ([]byte, error) {
	c := *st
	c.Rows = make([]check.Row, len(st.Rows))
	for i, r := range st.Rows {
		r.Rule = ""
		c.Rows[i] = r
	}
	b, err := json.Marshal(&c)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// rules maps invariant IDs to their rule text (for rows read back).
var rules = func() map[string]string {
	m := map[string]string{}
	for _, c := range check.Checkers() {
		m[c.ID()] = c.Rule()
	}
	return m
}()

// fillRules restores the rule texts statsLine left out.
func fillRules(rows []check.Row) {
	for i := range rows {
		if rows[i].Rule == "" {
			rows[i].Rule = rules[rows[i].ID]
		}
	}
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
		return info, notARun(dir, err)
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return info, usage("%s: bad %s: %v", dir, FileRun, err)
	}
	if info.Build.Version == "" {
		info.Build.Version = info.Version
	}
	return info, nil
}

// ReadJournal reads journal.jsonl into memory (EachEntry streams it).
// It also returns the size of the committed part.
func ReadJournal(path string) ([]Entry, int64, error) {
	var out []Entry
	good, err := EachEntry(path, func(e *Entry) error {
		out = append(out, *e)
		return nil
	})
	return out, good, err
}

// EachEntry calls fn for every committed line of journal.jsonl, in
// order, and returns the size of the committed part. A torn last line (no
// newline: the crash happened while it was written) is not committed and
// is ignored; any other line that does not decode is an error naming it,
// because dropping it would silently drop every later trial. A missing
// journal has no entries.
func EachEntry(path string, fn func(*Entry) error) (int64, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	var good int64
	for line := 1; ; line++ {
		b, err := r.ReadBytes('\n')
		if err == io.EOF {
			return good, nil // a torn last line (or none): not committed
		}
		if err != nil {
			return good, err
		}
		var e Entry
		if err := json.Unmarshal(b, &e); err != nil {
			// The advice is what a resume can do with the lines before:
			// it cuts the data files at their sizes and runs the later
			// trials again (the same seeds give the same trials). It
			// used to name a 'soak --resume --repair' that does not exist.
			return good, usage("%s:%d: corrupt journal line (%v); only a torn last line can be dropped, so nothing was changed. Restore the file, or keep the %d trials committed before it (a resume runs the later ones again, with the same seeds): head -n %d %s > %s.good && mv %s.good %s",
				path, line, err, line-1, line-1, path, path, path, path)
		}
		if err := fn(&e); err != nil {
			return good, err
		}
		good += int64(len(b))
	}
}

// sizes are the committed sizes of the data files: the last journal
// entry's.
type sizes struct{ history, pods, findings, trials int64 }

func (e *Entry) sizes() sizes { return sizes{e.History, e.PodsBytes, e.FindingBytes, e.TrialsBytes} }

func (s sizes) of(name string) int64 {
	switch name {
	case FileHistory:
		return s.history
	case FilePods:
		return s.pods
	case FileFindings:
		return s.findings
	}
	return s.trials
}

// View is a consistent view of a run directory's committed trials: the
// journal as read once. A directory being written (a soak running, a run
// being merged) grows after the view is taken; its readers see the
// trials committed when it was, and every file up to their sizes only.
type View struct {
	Dir string
	// N is the number of committed trials.
	N    int
	last sizes
}

// OpenView reads dir's journal (EachEntry's rules: a torn last line is
// not committed, any other bad line is an error). A directory without a
// journal has no committed trial.
func OpenView(dir string) (*View, error) {
	v := &View{Dir: dir}
	_, err := EachEntry(filepath.Join(dir, FileJournal), func(e *Entry) error {
		v.N++
		v.last = e.sizes()
		return nil
	})
	return v, err
}

// EachEntry calls fn for the view's committed journal entries, in order.
func (v *View) EachEntry(fn func(*Entry) error) error {
	n := 0
	_, err := EachEntry(filepath.Join(v.Dir, FileJournal), func(e *Entry) error {
		if n == v.N {
			return errViewEnd
		}
		n++
		return fn(e)
	})
	if err == errViewEnd {
		err = nil
	}
	return err
}

var errViewEnd = errors.New("end of the view")

// file returns the name of a data file (the format 2 name, or the format
// 1 one if only that exists) and the size of its committed part.
func (v *View) file(name string) (string, int64) {
	limit := v.last.of(name)
	if _, err := os.Stat(filepath.Join(v.Dir, name)); errors.Is(err, os.ErrNotExist) {
		if _, err := os.Stat(filepath.Join(v.Dir, legacyName(name))); err == nil {
			return legacyName(name), limit
		}
	}
	return name, limit
}

// eachLine calls fn for every JSON line of a data file's committed part
// (none if the file is absent).
func (v *View) eachLine(name string, fn func(line int, b []byte) error) error {
	file, limit := v.file(name)
	path := filepath.Join(v.Dir, file)
	lr, err := openLines(path, limit)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return usage("%s: %v", path, unwrapPath(err))
	}
	defer lr.Close()
	sc := bufio.NewScanner(lr)
	sc.Buffer(make([]byte, 64<<10), MaxFindingLine)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		if err := fn(n, sc.Bytes()); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return usage("%s: %v", path, tornFrame(err))
	}
	return nil
}

// EachPod calls fn for every committed record of pods.jsonl.zst (the
// retained pods).
func (v *View) EachPod(fn func(*metrics.Record) error) error {
	return v.eachLine(FilePods, func(n int, b []byte) error {
		var rec metrics.Record
		if err := metrics.UnmarshalRecord(b, &rec); err != nil {
			return usage("%s: record %d: %v", filepath.Join(v.Dir, FilePods), n, err)
		}
		return fn(&rec)
	})
}

// EachTrialStats calls fn for every committed line of trials.jsonl.zst, in
// journal order (none for a format 1 directory).
func (v *View) EachTrialStats(fn func(*TrialStats) error) error {
	if _, err := os.Stat(filepath.Join(v.Dir, FileTrials)); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return v.eachLine(FileTrials, func(n int, b []byte) error {
		var st TrialStats
		if err := json.Unmarshal(b, &st); err != nil {
			return usage("%s: trial %d: %v", filepath.Join(v.Dir, FileTrials), n, err)
		}
		fillRules(st.Rows)
		return fn(&st)
	})
}

// EachFinding calls fn for every committed record of findings.jsonl.zst.
func (v *View) EachFinding(fn func(*FindingRecord) error) error {
	return v.eachLine(FileFindings, func(n int, b []byte) error {
		var fr FindingRecord
		if err := json.Unmarshal(b, &fr); err != nil {
			return usage("%s:%d: %v", filepath.Join(v.Dir, FileFindings), n, err)
		}
		return fn(&fr)
	})
}

// EachPod calls fn for every committed record of dir's pods.jsonl.zst.
func EachPod(dir string, fn func(*metrics.Record) error) error {
	v, err := OpenView(dir)
	if err != nil {
		return err
	}
	return v.EachPod(fn)
}

// EachTrialStats calls fn for every committed line of dir's
// trials.jsonl.zst.
func EachTrialStats(dir string, fn func(*TrialStats) error) error {
	v, err := OpenView(dir)
	if err != nil {
		return err
	}
	return v.EachTrialStats(fn)
}

// EachFinding calls fn for every committed record of dir's
// findings.jsonl.zst.
func EachFinding(dir string, fn func(*FindingRecord) error) error {
	v, err := OpenView(dir)
	if err != nil {
		return err
	}
	return v.EachFinding(fn)
}

// MaxFindingLine bounds one line of findings.jsonl.
const MaxFindingLine = 64 << 20

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

// segmentName is a trial's spill file in .segments/.
func segmentName(scen, policy string, trial int) string {
	return fmt.Sprintf("%s.%s.%d.jsonl.zst", scen, strings.NewReplacer(":", "_", "/", "_", "+", "_").Replace(policy), trial)
}
