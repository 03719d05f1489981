package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sidebench/sidebench/harness/backend/kube"
	"github.com/sidebench/sidebench/harness/check"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/metrics"
	"github.com/sidebench/sidebench/harness/scenario"
	"github.com/sidebench/sidebench/harness/scenario/simconfig"
	"github.com/sidebench/sidebench/harness/sim"
	"github.com/sidebench/sidebench/reports/render"
)

// Backend runs one trial and streams its history to sink: run.meta first,
// run.end last ("complete", or "partial" when ctx was cancelled).
type Backend interface {
	RunTrial(ctx context.Context, t scenario.Trial, sink history.Sink) (TrialStats, error)
}

// TrialStats is what a backend reports about a trial beyond its history.
type TrialStats struct {
	Partial bool
}

// newBackend returns the named backend. Tests replace it.
var newBackend = defaultBackend

func defaultBackend(name string) (Backend, error) {
	switch name {
	case "sim":
		return simBackend{}, nil
	case "local":
		return newLocalBackend(localOpts), nil
	case "kube":
		if kubeOpts.provider == "" {
			if err := kube.CheckConfig(kubeOpts.kubeconfig, kubeOpts.context); err != nil {
				return nil, usageErr("--backend kube: %v", err)
			}
		}
		return newKubeBackend(kubeOpts), nil
	}
	return nil, usageErr("--backend %q: unknown backend (allowed: sim, local, kube)", name)
}

type simBackend struct{}

func (simBackend) RunTrial(ctx context.Context, t scenario.Trial, sink history.Sink) (TrialStats, error) {
	cfg, err := simconfig.Compile(t, version())
	if err != nil {
		return TrialStats{}, err
	}
	res, err := sim.Run(ctx, cfg, t.Seed, &trialSink{next: sink, trial: t.Number})
	return TrialStats{Partial: res.Partial}, err
}

// trialSink stamps the trial number into run.meta (sim.Run writes 0).
type trialSink struct {
	next  history.Sink
	trial int
}

func (s *trialSink) Write(e *history.Event) error {
	if e.Kind == history.RunMeta && e.Meta != nil && e.Meta.Trial != s.trial {
		m := *e.Meta
		m.Trial = s.trial
		c := *e
		c.Meta = &m
		return s.next.Write(&c)
	}
	return s.next.Write(e)
}

type teeSink []history.Sink

func (t teeSink) Write(e *history.Event) error {
	for _, s := range t {
		if err := s.Write(e); err != nil {
			return err
		}
	}
	return nil
}

// Files of a run directory.
const (
	fileHistory  = "history.jsonl"
	filePods     = "pods.jsonl"
	fileFindings = "findings.jsonl"
	fileJournal  = "journal.jsonl"
	fileSummary  = "summary.json"
	fileRun      = "run.json"
	dirScenarios = "scenarios"
	dirSegments  = ".segments"
)

// runInfo is run.json: what was run, so that --resume can continue it.
type runInfo struct {
	Command   string        `json:"command"`
	Backend   string        `json:"backend"`
	Seed      uint64        `json:"seed,omitempty"`
	Trials    int           `json:"trials,omitempty"`
	Duration  string        `json:"duration,omitempty"`
	Scenarios []scenarioRef `json:"scenarios"`
	StartedAt time.Time     `json:"startedAt"`
	Version   string        `json:"version"`
}

type scenarioRef struct {
	Name string `json:"name"`
	// File is the copy inside the run directory (scenarios/NAME.yaml);
	// Origin the path given on the command line.
	File   string `json:"file"`
	Origin string `json:"origin"`
	Hash   string `json:"hash"`
}

// journalEntry is one line of journal.jsonl: a committed trial and the
// file sizes right after its commit.
type journalEntry struct {
	Scenario   string `json:"scenario"`
	Policy     string `json:"policy"`
	Trial      int    `json:"trial"`
	Seed       uint64 `json:"seed"`
	Pods       int    `json:"pods"`
	Violations int    `json:"violations"`
	// ViolatingPods counts the trial's pods with at least one violation.
	ViolatingPods int   `json:"violatingPods"`
	Degradations  int   `json:"degradations"`
	Partial       bool  `json:"partial,omitempty"`
	History       int64 `json:"historyBytes"`
	PodsBytes     int64 `json:"podsBytes"`
	FindingBytes  int64 `json:"findingsBytes"`
	// Rows and Matrix are the trial's checker counts (reports need them
	// summed over trials, also after a resume).
	Rows   []check.Row  `json:"rows,omitempty"`
	Matrix []check.Cell `json:"matrix,omitempty"`
	// Faults tallies the trial's fault firings by catalogue name.
	Faults map[string]*faultCount `json:"faults,omitempty"`
}

// faultCount is how many firings of one fault kind took effect and how
// many could not (with their first distinct reasons): a backend that
// cannot inject a fault says so, and the run summary shows it.
type faultCount struct {
	Applied    int      `json:"applied"`
	NotApplied int      `json:"notApplied,omitempty"`
	Reasons    []string `json:"reasons,omitempty"`
}

// maxFaultReasons bounds the distinct reasons kept per fault kind.
const maxFaultReasons = 3

func (c *faultCount) add(o *faultCount) {
	c.Applied += o.Applied
	c.NotApplied += o.NotApplied
	for _, r := range o.Reasons {
		c.reason(r)
	}
}

func (c *faultCount) reason(r string) {
	if len(c.Reasons) < maxFaultReasons && !slices.Contains(c.Reasons, r) {
		c.Reasons = append(c.Reasons, r)
	}
}

// faultTally counts fault.effect and fault.not-applied events of a
// history as it streams by.
type faultTally map[string]*faultCount

func (t faultTally) Write(e *history.Event) error {
	if e.Kind != history.FaultEffect && e.Kind != history.FaultNotApplied {
		return nil
	}
	c := t[e.Fault]
	if c == nil {
		c = &faultCount{}
		t[e.Fault] = c
	}
	if e.Kind == history.FaultEffect {
		c.Applied++
	} else {
		c.NotApplied++
		c.reason(e.Msg)
	}
	return nil
}

// rowState aggregates one scenario × policy.
type rowState struct {
	Scenario      string
	Policy        string
	criteria      scenario.Criteria
	applies       bool
	Trials        int
	PartialTrials int
	Pods          int
	Violations    int
	ViolatingPods int
	Degradations  int
	startup       []float64 // pod_startup, ms
	inv           map[string]*check.Row
	invOrder      []string
	matrix        map[[2]string]*check.Cell
	matrixOrder   [][2]string
	findings      []render.Finding // the first maxReportFindings
	faults        map[string]*faultCount
}

type rssSample struct {
	ElapsedSeconds float64 `json:"elapsedSeconds"`
	Bytes          int64   `json:"bytes"`
}

// runDir is an open run directory.
type runDir struct {
	dir     string
	info    runInfo
	hist    *os.File
	pods    *os.File
	finds   *os.File
	journal *os.File
	offsets journalEntry // sizes after the last commit

	mu        sync.Mutex
	rows      []*rowState
	index     map[string]*rowState
	committed map[string]bool
	partial   bool
	rss       []rssSample
	started   time.Time
	resumed   int
	scens     []*scenario.Scenario
	agg       *metrics.Aggregator
}

func rowKey(scen, pol string) string { return scen + "\x00" + pol }
func trialKey(scen, pol string, n int) string {
	return scen + "\x00" + pol + "\x00" + strconv.Itoa(n)
}

// createRunDir makes a fresh run directory and copies the scenarios in.
func createRunDir(dir string, info runInfo, scens []*scenario.Scenario) (*runDir, error) {
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return nil, usageErr("output directory %s exists and is not empty (use another --out, or soak --resume)", dir)
	}
	if err := os.MkdirAll(filepath.Join(dir, dirScenarios), 0o755); err != nil {
		return nil, err
	}
	for _, s := range scens {
		ref := scenarioRef{Name: s.Metadata.Name, File: filepath.Join(dirScenarios, s.Metadata.Name+".yaml"), Origin: s.File, Hash: s.Hash}
		if err := os.WriteFile(filepath.Join(dir, ref.File), s.Source, 0o644); err != nil {
			return nil, err
		}
		info.Scenarios = append(info.Scenarios, ref)
	}
	b, _ := json.MarshalIndent(info, "", "  ")
	if err := writeAtomic(filepath.Join(dir, fileRun), append(b, '\n')); err != nil {
		return nil, err
	}
	rd := &runDir{dir: dir, info: info, started: time.Now()}
	if err := rd.open(); err != nil {
		return nil, err
	}
	rd.initRows(scens)
	return rd, nil
}

// openRunDir reopens a run directory for --resume: it drops whatever was
// written after the last committed trial (a partial trailing segment) and
// rebuilds the aggregates from the journal and pods.jsonl.
func openRunDir(dir string) (*runDir, []*scenario.Scenario, error) {
	b, err := os.ReadFile(filepath.Join(dir, fileRun))
	if err != nil {
		return nil, nil, usageErr("--resume %s: not a run directory: %v", dir, err)
	}
	var info runInfo
	if err := json.Unmarshal(b, &info); err != nil {
		return nil, nil, usageErr("--resume %s: bad %s: %v", dir, fileRun, err)
	}
	var scens []*scenario.Scenario
	for _, ref := range info.Scenarios {
		s, err := scenario.Load(filepath.Join(dir, ref.File))
		if err != nil {
			return nil, nil, &exitError{code: ExitUsage, err: err}
		}
		scens = append(scens, s.WithOverrides(info.Seed, info.Trials))
	}
	rd := &runDir{dir: dir, info: info, started: time.Now()}
	entries, jsize, err := readJournal(filepath.Join(dir, fileJournal))
	if err != nil {
		return nil, nil, err
	}
	if err := os.Truncate(filepath.Join(dir, fileJournal), jsize); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, err
	}
	if n := len(entries); n > 0 {
		rd.offsets = entries[n-1]
	}
	for name, size := range map[string]int64{fileHistory: rd.offsets.History, filePods: rd.offsets.PodsBytes, fileFindings: rd.offsets.FindingBytes} {
		if err := os.Truncate(filepath.Join(dir, name), size); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, nil, err
		}
	}
	os.RemoveAll(filepath.Join(dir, dirSegments))
	if err := rd.open(); err != nil {
		return nil, nil, err
	}
	rd.initRows(scens)
	for _, e := range entries {
		rd.apply(&e, nil)
	}
	rd.readFindings()
	rd.resumed = len(entries)
	// Startup samples from pods.jsonl (exactly the committed records).
	f, err := os.Open(filepath.Join(dir, filePods))
	if err == nil {
		defer f.Close()
		rr := metrics.NewRecordReader(f)
		var rec metrics.Record
		for {
			if err := rr.Read(&rec); err != nil {
				if !errors.Is(err, io.EOF) {
					return nil, nil, fmt.Errorf("%s: %w", filePods, err)
				}
				break
			}
			if r := rd.index[rowKey(rec.Scenario, rec.Policy)]; r != nil {
				if v, ok := rec.Latency(metrics.PodStartup); ok {
					r.startup = append(r.startup, v)
				}
				rd.agg.Add(&rec)
			}
		}
	}
	return rd, scens, nil
}

func readJournal(path string) ([]journalEntry, int64, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	var out []journalEntry
	var good int64
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break // a torn last line: not committed
		}
		var e journalEntry
		if err := json.Unmarshal(b[:i], &e); err != nil {
			break
		}
		out = append(out, e)
		good += int64(i + 1)
		b = b[i+1:]
	}
	return out, good, nil
}

func (rd *runDir) open() error {
	var err error
	open := func(name string) *os.File {
		if err != nil {
			return nil
		}
		var f *os.File
		f, err = os.OpenFile(filepath.Join(rd.dir, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		return f
	}
	rd.hist, rd.pods, rd.finds, rd.journal = open(fileHistory), open(filePods), open(fileFindings), open(fileJournal)
	if err == nil {
		err = os.MkdirAll(filepath.Join(rd.dir, dirSegments), 0o755)
	}
	return err
}

func (rd *runDir) close() {
	for _, f := range []*os.File{rd.hist, rd.pods, rd.finds, rd.journal} {
		if f != nil {
			f.Close()
		}
	}
	os.RemoveAll(filepath.Join(rd.dir, dirSegments))
}

func (rd *runDir) initRows(scens []*scenario.Scenario) {
	rd.scens = scens
	rd.agg = metrics.NewAggregator(metrics.Options{})
	rd.index = map[string]*rowState{}
	rd.committed = map[string]bool{}
	for _, s := range scens {
		for i, g := range s.PolicyGates() {
			pol := g.String()
			applies := i == 0
			if len(s.Criteria.Policies) > 0 {
				applies = false
				for _, p := range s.Criteria.Policies {
					if pg, err := parseGatesString(p); err == nil && pg == pol {
						applies = true
					}
				}
			}
			r := &rowState{Scenario: s.Metadata.Name, Policy: pol, criteria: s.Criteria, applies: applies,
				inv: map[string]*check.Row{}, matrix: map[[2]string]*check.Cell{}}
			rd.rows = append(rd.rows, r)
			rd.index[rowKey(r.Scenario, r.Policy)] = r
		}
	}
}

// trialOut is a finished, not yet committed trial.
type trialOut struct {
	t             scenario.Trial
	segment       string
	pods          []byte
	findings      []byte
	podCount      int
	violations    int
	violatingPods int
	degradations  int
	startup       []float64
	partial       bool
	faults        faultTally
	records       []metrics.Record
	rows          []check.Row
	matrix        []check.Cell
	found         []check.Finding
}

// runTrial runs one trial into a segment file, checking and measuring its
// pods as they finish (the history is never held in memory).
func (rd *runDir) runTrial(ctx context.Context, be Backend, t scenario.Trial, checkWorkers int) (*trialOut, error) {
	out := &trialOut{t: t}
	out.segment = filepath.Join(rd.dir, dirSegments, fmt.Sprintf("%s.%s.%d.jsonl", t.Scenario.Metadata.Name, strings.ReplaceAll(t.Policy, ":", "_"), t.Number))
	f, err := os.Create(out.segment)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	hw := history.NewWriter(f)
	cr := check.NewRunner(check.Workers(checkWorkers))
	var podsBuf bytes.Buffer
	rw := metrics.NewRecordWriter(&podsBuf)
	part := history.NewPartitioner(func(meta *history.Meta, pod string, evs []history.Event) error {
		out.podCount++
		cr.Add(meta, pod, evs)
		rec := metrics.FromEvents(meta, pod, evs)
		if v, ok := rec.Latency(metrics.PodStartup); ok {
			out.startup = append(out.startup, v)
		}
		out.records = append(out.records, rec)
		return rw.Write(&rec)
	})
	// Encoding, partitioning, checking and measuring run on their own
	// goroutine beside the backend (a sim trial is single-threaded).
	tally := faultTally{}
	async := history.NewAsyncSink(teeSink{hw, part, tally}, 0)
	stats, runErr := be.RunTrial(ctx, t, async)
	perr := async.Close()
	if cerr := part.Close(); perr == nil {
		perr = cerr
	}
	rep := cr.Close()
	if runErr != nil {
		return nil, fmt.Errorf("%s: %w", t, runErr)
	}
	if perr != nil {
		return nil, fmt.Errorf("%s: %w", t, perr)
	}
	if err := hw.Flush(); err != nil {
		return nil, err
	}
	if err := f.Sync(); err != nil {
		return nil, err
	}
	if err := rw.Flush(); err != nil {
		return nil, err
	}
	out.pods = podsBuf.Bytes()
	out.partial = stats.Partial
	if len(tally) > 0 {
		out.faults = tally
	}
	out.violations = rep.Violations()
	out.violatingPods = rep.ViolatingPods
	for _, row := range rep.Rows {
		out.degradations += row.Degradations
	}
	out.rows, out.matrix, out.found = rep.Rows, rep.Matrix, rep.Findings
	var fb bytes.Buffer
	for i := range rep.Findings {
		b, err := json.Marshal(newFindingRecord(t, &rep.Findings[i]))
		if err != nil {
			return nil, err
		}
		fb.Write(b)
		fb.WriteByte('\n')
	}
	out.findings = fb.Bytes()
	return out, nil
}

// findingRecord is one line of findings.jsonl: a checker finding with its
// run identity; the excerpt events are in the history's JSONL encoding.
type findingRecord struct {
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

func newFindingRecord(t scenario.Trial, f *check.Finding) findingRecord {
	r := findingRecord{Scenario: t.Scenario.Metadata.Name, Policy: t.Policy, Trial: t.Number, Seed: t.Seed,
		ID: f.ID, Class: f.Class.String(), Pod: f.Pod, Node: f.Node, T: f.T, Msg: f.Msg, Excuse: f.Excuse, Fault: f.Fault, Elided: f.Elided}
	for i := range f.Excerpt {
		if b, err := history.AppendEvent(nil, &f.Excerpt[i]); err == nil {
			r.Excerpt = append(r.Excerpt, json.RawMessage(bytes.TrimRight(b, "\n")))
		}
	}
	return r
}

// String renders the finding like check.Finding.String.
func (r *findingRecord) String() string {
	s := fmt.Sprintf("%s %s t=%s: %s", r.ID, r.Class, fmtMs(float64(r.T)/1e6), r.Msg)
	if r.Excuse != "" {
		s += " [excused: " + r.Excuse + "]"
	}
	if r.Fault != nil {
		s += fmt.Sprintf(" [fault %s#%d at %s]", r.Fault.Name, r.Fault.ID, fmtMs(float64(r.Fault.T)/1e6))
	}
	return s
}

// commit appends a finished trial to the run directory. The order makes a
// crash at any point recoverable: history, pods and findings are appended
// and fsynced first, then the journal line that names their new sizes. On
// resume, anything past the journal's last sizes is truncated.
func (rd *runDir) commit(o *trialOut) error {
	seg, err := os.Open(o.segment)
	if err != nil {
		return err
	}
	hn, err := io.Copy(rd.hist, seg)
	seg.Close()
	if err != nil {
		return err
	}
	if _, err := rd.pods.Write(o.pods); err != nil {
		return err
	}
	if _, err := rd.finds.Write(o.findings); err != nil {
		return err
	}
	for _, f := range []*os.File{rd.hist, rd.pods, rd.finds} {
		if err := f.Sync(); err != nil {
			return err
		}
	}
	e := journalEntry{
		Scenario: o.t.Scenario.Metadata.Name, Policy: o.t.Policy, Trial: o.t.Number, Seed: o.t.Seed,
		Pods: o.podCount, Violations: o.violations, ViolatingPods: o.violatingPods, Degradations: o.degradations, Partial: o.partial,
		History: rd.offsets.History + hn, PodsBytes: rd.offsets.PodsBytes + int64(len(o.pods)),
		FindingBytes: rd.offsets.FindingBytes + int64(len(o.findings)),
		Rows:         o.rows, Matrix: o.matrix, Faults: o.faults,
	}
	b, _ := json.Marshal(e)
	if _, err := rd.journal.Write(append(b, '\n')); err != nil {
		return err
	}
	if err := rd.journal.Sync(); err != nil {
		return err
	}
	os.Remove(o.segment)
	rd.offsets = e
	rd.apply(&e, o)
	return nil
}

// apply folds a committed trial into the aggregates; o is nil when the
// trial is replayed from the journal on resume.
func (rd *runDir) apply(e *journalEntry, o *trialOut) {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	rd.committed[trialKey(e.Scenario, e.Policy, e.Trial)] = true
	r := rd.index[rowKey(e.Scenario, e.Policy)]
	if r == nil {
		return
	}
	r.Trials++
	if e.Partial {
		r.PartialTrials++
		rd.partial = true
	}
	r.Pods += e.Pods
	for k, c := range e.Faults {
		if r.faults == nil {
			r.faults = map[string]*faultCount{}
		}
		acc := r.faults[k]
		if acc == nil {
			acc = &faultCount{}
			r.faults[k] = acc
		}
		acc.add(c)
	}
	r.Violations += e.Violations
	r.ViolatingPods += e.ViolatingPods
	r.Degradations += e.Degradations
	for _, row := range e.Rows {
		acc := r.inv[row.ID]
		if acc == nil {
			acc = &check.Row{ID: row.ID, Rule: row.Rule, Level: row.Level}
			r.inv[row.ID] = acc
			r.invOrder = append(r.invOrder, row.ID)
		}
		acc.Checked += row.Checked
		acc.Violations += row.Violations
		acc.ViolatingPods += row.ViolatingPods
		acc.Degradations += row.Degradations
		acc.Bounds += row.Bounds
		acc.Unknown += row.Unknown
	}
	for _, c := range e.Matrix {
		k := [2]string{c.ID, c.Fault}
		acc := r.matrix[k]
		if acc == nil {
			acc = &check.Cell{ID: c.ID, Fault: c.Fault}
			r.matrix[k] = acc
			r.matrixOrder = append(r.matrixOrder, k)
		}
		acc.Violations += c.Violations
		acc.Degradations += c.Degradations
		acc.Bounds += c.Bounds
	}
	if o == nil {
		return
	}
	r.startup = append(r.startup, o.startup...)
	for i := range o.records {
		rd.agg.Add(&o.records[i])
	}
	for i := range o.found {
		if len(r.findings) >= maxReportFindings {
			break
		}
		r.findings = append(r.findings, reportFinding(newFindingRecord(o.t, &o.found[i])))
	}
}

func (rd *runDir) isCommitted(t scenario.Trial) bool {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	return rd.committed[trialKey(t.Scenario.Metadata.Name, t.Policy, t.Number)]
}

// trialSource yields trials in order; ok=false ends the run.
type trialSource func() (t scenario.Trial, ok bool)

// execOptions tune execute.
type execOptions struct {
	parallel int
	// onCommit is called after each commit (from the committing goroutine).
	onCommit func(o *trialOut)
}

// execute runs trials from next on parallel workers and commits them in
// source order. Cancelling ctx stops taking new trials; trials in flight
// finish as partial and are committed.
func (rd *runDir) execute(parent context.Context, be Backend, next trialSource, o execOptions) error {
	// ctx is also cancelled on the first error, so that a soak does not
	// keep running trials it cannot commit.
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	par := max(o.parallel, 1)
	checkWorkers := max(runtime.GOMAXPROCS(0)/par, 1)
	type job struct {
		seq int
		t   scenario.Trial
	}
	type result struct {
		seq     int
		out     *trialOut
		err     error
		skipped bool
	}
	jobs := make(chan job)
	results := make(chan result)
	go func() {
		defer close(jobs)
		for seq := 0; ctx.Err() == nil; {
			t, ok := next()
			if !ok {
				return
			}
			if rd.isCommitted(t) {
				continue
			}
			select {
			case jobs <- job{seq, t}:
				seq++
			case <-ctx.Done():
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for range par {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				if ctx.Err() != nil {
					results <- result{seq: j.seq, skipped: true}
					continue
				}
				out, err := rd.runTrial(ctx, be, j.t, checkWorkers)
				results <- result{seq: j.seq, out: out, err: err}
			}
		}()
	}
	go func() { wg.Wait(); close(results) }()
	pending := map[int]result{}
	nextSeq := 0
	var firstErr error
	for r := range results {
		pending[r.seq] = r
		for {
			r, ok := pending[nextSeq]
			if !ok {
				break
			}
			delete(pending, nextSeq)
			nextSeq++
			switch {
			case r.skipped || firstErr != nil:
			case r.err != nil:
				firstErr = r.err
				cancel()
			default:
				if err := rd.commit(r.out); err != nil {
					firstErr = err
					cancel()
				} else if o.onCommit != nil {
					o.onCommit(r.out)
				}
			}
		}
	}
	if parent.Err() != nil {
		rd.mu.Lock()
		rd.partial = true
		rd.mu.Unlock()
	}
	return firstErr
}

// row is a summary.json row.
type row struct {
	Scenario      string       `json:"scenario"`
	Policy        string       `json:"policy"`
	Trials        int          `json:"trials"`
	PartialTrials int          `json:"partialTrials,omitempty"`
	Pods          int          `json:"pods"`
	Violations    int          `json:"violations"`
	Degradations  int          `json:"degradations"`
	PodStartupMs  percentiles  `json:"podStartupMs"`
	Criteria      criteriaEval `json:"criteria"`
	// Faults: firings applied and not applied per fault kind.
	Faults map[string]*faultCount `json:"faults,omitempty"`
}

type percentiles struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
}

type criteriaEval struct {
	Applies    bool     `json:"applies"`
	Pass       bool     `json:"pass"`
	Failures   []string `json:"failures,omitempty"`
	Graduation string   `json:"graduation,omitempty"`
}

// summary is summary.json.
type summary struct {
	Version         string      `json:"version"`
	Command         string      `json:"command"`
	Backend         string      `json:"backend"`
	Partial         bool        `json:"partial"`
	StartedAt       time.Time   `json:"startedAt"`
	UpdatedAt       time.Time   `json:"updatedAt"`
	TrialsCommitted int         `json:"trialsCommitted"`
	Resumes         int         `json:"resumedFromTrials,omitempty"`
	Rows            []row       `json:"rows"`
	RSS             []rssSample `json:"rss,omitempty"`
	Pass            bool        `json:"pass"`
}

// nearestRank returns the p-th percentile (0 < p <= 100) by nearest rank.
func nearestRank(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	r := int(math.Ceil(float64(n) * p / 100))
	return sorted[min(max(r, 1), n)-1]
}

func (rd *runDir) summary() summary {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	s := summary{Version: version(), Command: rd.info.Command, Backend: rd.info.Backend, Partial: rd.partial,
		StartedAt: rd.info.StartedAt, UpdatedAt: time.Now().UTC(), RSS: append([]rssSample(nil), rd.rss...), Pass: true, Resumes: rd.resumed}
	for _, r := range rd.rows {
		s.TrialsCommitted += r.Trials
		st := append([]float64(nil), r.startup...)
		sort.Float64s(st)
		out := row{Scenario: r.Scenario, Policy: r.Policy, Trials: r.Trials, PartialTrials: r.PartialTrials, Pods: r.Pods,
			Violations: r.Violations, Degradations: r.Degradations,
			PodStartupMs: percentiles{N: len(st), P50: nearestRank(st, 50), P90: nearestRank(st, 90), P99: nearestRank(st, 99)}}
		out.Criteria = evalCriteria(r, out.PodStartupMs)
		for k, c := range r.faults {
			if out.Faults == nil {
				out.Faults = map[string]*faultCount{}
			}
			cc := *c
			cc.Reasons = slices.Clone(c.Reasons)
			out.Faults[k] = &cc
		}
		if out.Criteria.Applies && !out.Criteria.Pass {
			s.Pass = false
		}
		s.Rows = append(s.Rows, out)
	}
	return s
}

func evalCriteria(r *rowState, p percentiles) criteriaEval {
	c := r.criteria
	ev := criteriaEval{Applies: r.applies, Pass: true, Graduation: c.Graduation}
	if !r.applies {
		return ev
	}
	fail := func(format string, args ...any) {
		ev.Pass = false
		ev.Failures = append(ev.Failures, fmt.Sprintf(format, args...))
	}
	maxV := 0
	if c.MaxViolations != nil {
		maxV = *c.MaxViolations
	}
	if r.Violations > maxV {
		fail("violations %d > maxViolations %d", r.Violations, maxV)
	}
	if c.MaxDegradations != nil && r.Degradations > *c.MaxDegradations {
		fail("degradations %d > maxDegradations %d", r.Degradations, *c.MaxDegradations)
	}
	ms := func(d scenario.Duration) float64 { return float64(d.D()) / 1e6 }
	if c.PodStartupP99 != nil {
		switch {
		case p.N == 0:
			fail("pod_startup p99: no pod started")
		case p.P99 > ms(*c.PodStartupP99):
			fail("pod_startup p99 %s > %s", fmtMs(p.P99), c.PodStartupP99.D())
		}
	}
	if c.PodStartupP50 != nil {
		switch {
		case p.N == 0:
			fail("pod_startup p50: no pod started")
		case p.P50 > ms(*c.PodStartupP50):
			fail("pod_startup p50 %s > %s", fmtMs(p.P50), c.PodStartupP50.D())
		}
	}
	return ev
}

// fmtMs renders milliseconds as a rounded duration ("1.234s", "850ms").
func fmtMs(v float64) string {
	d := time.Duration(v * 1e6)
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.String()
}

// sampleRSS records the resident set size now.
func (rd *runDir) sampleRSS() {
	rss := readRSS()
	rd.mu.Lock()
	rd.rss = append(rd.rss, rssSample{ElapsedSeconds: math.Round(time.Since(rd.started).Seconds()*1000) / 1000, Bytes: rss})
	rd.mu.Unlock()
}

// readRSS returns the process's resident set size (VmRSS), or the Go
// runtime's obtained memory where /proc is not available.
func readRSS() int64 {
	if f, err := os.Open("/proc/self/status"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
				fs := strings.Fields(rest)
				if len(fs) > 0 {
					if kb, err := strconv.ParseInt(fs[0], 10, 64); err == nil {
						return kb * 1024
					}
				}
			}
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.Sys)
}

// writeAtomic writes a file through a temporary file and a rename.
func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// writeTable prints the result table.
func writeTable(w io.Writer, rows []row) {
	tw := newTabWriter(w)
	fmt.Fprintln(tw, "SCENARIO\tPOLICY\tTRIALS\tPODS\tVIOLATIONS\tDEGRADATIONS\tP50 STARTUP\tP99 STARTUP\tCRITERIA")
	for _, r := range rows {
		crit := "-"
		if r.Criteria.Applies {
			crit = "PASS"
			if !r.Criteria.Pass {
				crit = "FAIL"
			}
		}
		trials := strconv.Itoa(r.Trials)
		if r.PartialTrials > 0 {
			trials += fmt.Sprintf(" (%d partial)", r.PartialTrials)
		}
		p50, p99 := "-", "-"
		if r.PodStartupMs.N > 0 {
			p50, p99 = fmtMs(r.PodStartupMs.P50), fmtMs(r.PodStartupMs.P99)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\n", r.Scenario, r.Policy, trials, r.Pods, r.Violations, r.Degradations, p50, p99, crit)
	}
	tw.Flush()
	for _, r := range rows {
		for _, f := range r.Criteria.Failures {
			fmt.Fprintf(w, "FAIL %s/%s: %s\n", r.Scenario, r.Policy, f)
		}
	}
}
