package runner

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"iter"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/sidebench/sidebench/harness/check"
	"github.com/sidebench/sidebench/harness/metrics"
	"github.com/sidebench/sidebench/harness/rundir"
	"github.com/sidebench/sidebench/harness/scenario"
	"github.com/sidebench/sidebench/reference-impl/api"
)

// MaxReportFindings bounds the findings per scenario × policy carried into
// the reports (findings.jsonl.zst has every one).
const MaxReportFindings = 50

// Role is how a policy of a scenario is treated.
type Role string

const (
	// Judged: the scenario's criteria (and graduation stage) apply.
	Judged Role = "judged"
	// Baseline: measured for comparison, never judged (none, the 2019
	// design, policies not named in criteria.policies).
	Baseline Role = "baseline"
	// BugReplica: a deliberately wrong variant; it passes when the
	// checker catches it.
	BugReplica Role = "bug-replica"
)

// RoleOf returns the role of policy pol in scenario s: a bug replica if it
// names a bug; judged if the scenario's criteria judge it (criteria.policies,
// or its first policy); a baseline otherwise.
func RoleOf(s *scenario.Scenario, pol string) Role {
	for _, g := range s.PolicyGates() {
		if g.String() == pol && g.Bug != api.BugNone {
			return BugReplica
		}
	}
	if slices.Contains(s.JudgedPolicies(), pol) {
		return Judged
	}
	return Baseline
}

// Row is everything committed for one scenario × policy.
type Row struct {
	Scenario, Policy string
	Role             Role
	Trials           int
	PartialTrials    int
	Pods             int
	Violations       int
	// ViolatingPods counts pods with at least one violation: the
	// numerator of the violation rate.
	ViolatingPods int
	Degradations  int
	Bounds        int
	// Elapsed is the trials' summed wall time.
	Elapsed  time.Duration
	inv      map[string]*check.Row
	invOrder []string
	matrix   map[[2]string]*check.Cell
	mxOrder  [][2]string
	Faults   map[string]*rundir.FaultCount
	Findings []rundir.FindingRecord // the first MaxReportFindings
	// groups counts pods with a violation per invariant group;
	// groupsMissing: a trial with violations recorded none (a journal
	// written before groups were recorded).
	groups        map[string]int
	groupsMissing bool
}

// Invariants returns the per-invariant counts in first-seen order.
func (r *Row) Invariants() []check.Row {
	out := make([]check.Row, 0, len(r.invOrder))
	for _, id := range r.invOrder {
		out = append(out, *r.inv[id])
	}
	return out
}

// Matrix returns the invariant × fault cells in first-seen order.
func (r *Row) Matrix() []check.Cell {
	out := make([]check.Cell, 0, len(r.mxOrder))
	for _, k := range r.mxOrder {
		out = append(out, *r.matrix[k])
	}
	return out
}

// Aggregate is the one aggregation path: every number of every output
// (result table, summary.json, report.md/html, PerfData, junit.xml, the
// criteria and `graduate`) is computed from an Aggregate, over one
// population per metric (harness/metrics: faulted pods excluded from
// latency samples and counted apart). It is filled as trials commit, or
// from run directories (Load).
type Aggregate struct {
	scens    []*scenario.Scenario
	byName   map[string]*scenario.Scenario
	rows     []*Row
	index    map[[2]string]*Row
	lat      *metrics.Aggregator
	seenMu   sync.RWMutex // Seen is asked by the runner's trial source while trials commit
	seen     map[keyDigest]struct{}
	Trials   int
	Partial  bool
	Resumed  int
	Warnings []string
	// AllowMixed lets Load pool run directories whose scenario of the same
	// name has different content (hash); Mixed records that it did.
	AllowMixed bool
	Mixed      bool
	// MixedRemedy is the advice that ends the refusal of mixed content;
	// a command with an --allow-mixed flag names it here. Empty, the
	// refusal names no flag: merge has none, and its advice must not
	// send the user to one that does not exist.
	MixedRemedy string
	hashes      map[string]string
	// user holds each row's user-level counts (userlevel.go).
	user map[*Row]*userCounts
	// figs is each scenario's figure data (figures.go).
	figs map[string]*scenarioFigures
}

// NewAggregate returns an empty aggregate with a row per scenario ×
// policy (keep filters the policies; nil keeps all).
func NewAggregate(scens []*scenario.Scenario, keep func(s *scenario.Scenario, policy string) bool) *Aggregate {
	a := &Aggregate{byName: map[string]*scenario.Scenario{}, index: map[[2]string]*Row{},
		lat: metrics.NewAggregator(metrics.Options{}), seen: map[keyDigest]struct{}{}, hashes: map[string]string{}}
	for _, s := range scens {
		a.scens = append(a.scens, s)
		a.byName[s.Metadata.Name] = s
		a.hashes[s.Metadata.Name] = s.Hash
		for _, g := range s.PolicyGates() {
			if keep == nil || keep(s, g.String()) {
				a.row(s.Metadata.Name, g.String())
			}
		}
	}
	return a
}

// row returns (creating) the row of a scenario × policy.
func (a *Aggregate) row(scen, pol string) *Row {
	k := [2]string{scen, pol}
	if r := a.index[k]; r != nil {
		return r
	}
	role := Baseline
	if s := a.byName[scen]; s != nil {
		role = RoleOf(s, pol)
	}
	r := &Row{Scenario: scen, Policy: pol, Role: role, inv: map[string]*check.Row{}, matrix: map[[2]string]*check.Cell{}}
	a.rows = append(a.rows, r)
	a.index[k] = r
	return r
}

// Rows returns the rows in scenario and policy order.
func (a *Aggregate) Rows() []*Row { return a.rows }

// Row returns one row (nil if unknown).
func (a *Aggregate) Row(scen, pol string) *Row { return a.index[[2]string{scen, pol}] }

// Scenarios returns the scenarios in order.
func (a *Aggregate) Scenarios() []*scenario.Scenario { return a.scens }

// Latencies is the latency aggregation (samples and percentiles).
func (a *Aggregate) Latencies() *metrics.Aggregator { return a.lat }

// keyDigest is a trial key's SHA-256 prefix: the set of trials counted
// costs 16 bytes per trial, the only state of an aggregate that grows
// with the run (an 8-hour soak: about 10 MB).
type keyDigest [16]byte

func digest(k rundir.Key) keyDigest {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%d\x00%d", k.ScenarioHash, k.Policy, k.Seed, k.Trial)
	var d keyDigest
	copy(d[:], h.Sum(nil))
	return d
}

// Seen reports whether a trial with this key was added.
func (a *Aggregate) Seen(k rundir.Key) bool {
	a.seenMu.RLock()
	defer a.seenMu.RUnlock()
	_, ok := a.seen[digest(k)]
	return ok
}

// AddTrial folds one committed trial in: its journal entry, its
// TrialStats (counts and distributions over all of its pods) and its
// findings. It returns false, and adds nothing, when a trial with the
// same key (scenario hash, policy, seed, number) was already added:
// pooled run directories count each trial once.
func (a *Aggregate) AddTrial(e *rundir.Entry, st *rundir.TrialStats, finds []rundir.FindingRecord) bool {
	k := digest(e.Key())
	a.seenMu.Lock()
	_, dup := a.seen[k]
	a.seen[k] = struct{}{}
	a.seenMu.Unlock()
	if dup {
		return false
	}
	a.Trials++
	r := a.row(e.Scenario, e.Policy)
	r.Trials++
	if e.Partial {
		r.PartialTrials++
		a.Partial = true
	}
	r.Pods += e.Pods
	r.Violations += e.Violations
	r.ViolatingPods += e.ViolatingPods
	r.Degradations += e.Degradations
	r.Elapsed += time.Duration(e.ElapsedNanos)
	if st.GroupViolatingPods == nil && e.ViolatingPods > 0 {
		r.groupsMissing = true
	}
	for g, n := range st.GroupViolatingPods {
		if r.groups == nil {
			r.groups = map[string]int{}
		}
		r.groups[g] += n
	}
	for kind, c := range st.Faults {
		if r.Faults == nil {
			r.Faults = map[string]*rundir.FaultCount{}
		}
		acc := r.Faults[kind]
		if acc == nil {
			acc = &rundir.FaultCount{}
			r.Faults[kind] = acc
		}
		acc.Add(c)
	}
	for _, row := range st.Rows {
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
		r.Bounds += row.Bounds
	}
	for _, c := range st.Matrix {
		mk := [2]string{c.ID, c.Fault}
		acc := r.matrix[mk]
		if acc == nil {
			acc = &check.Cell{ID: c.ID, Fault: c.Fault}
			r.matrix[mk] = acc
			r.mxOrder = append(r.mxOrder, mk)
		}
		acc.Violations += c.Violations
		acc.Degradations += c.Degradations
		acc.Bounds += c.Bounds
	}
	a.lat.AddSnapshot(&st.Metrics)
	a.addUserLevel(r, st.User)
	a.addFindings(r, finds)
	return true
}

func (a *Aggregate) addFindings(r *Row, finds []rundir.FindingRecord) {
	for i := range finds {
		if len(r.Findings) >= MaxReportFindings {
			break
		}
		if isUserLevel(finds[i].ID) {
			continue // the user-level section counts them (userlevel.go)
		}
		r.Findings = append(r.Findings, finds[i])
	}
}

// trialID is a trial within one run directory (records and findings carry
// scenario, policy, trial and seed, not the scenario hash).
type trialID struct {
	scen, policy string
	trial        int
	seed         uint64
}

// DirStatus says whether a run directory holds a complete run.
type DirStatus struct {
	Dir    string
	Info   rundir.Info
	Trials int
	// Complete: the run finished (its final summary says so and covers
	// every committed trial). A run stopped by Ctrl-C, a crash or a soak
	// still running is not complete.
	Complete bool
}

// Load reads committed trials from run directories into a (new or
// filled) aggregate, streaming (memory does not grow with the trials
// read). A trial already in the aggregate (same scenario hash, policy,
// seed and number: a directory given twice, a copy, two soaks with the
// same seeds) is counted once, and a warning names it.
func (a *Aggregate) Load(dir string) (DirStatus, error) {
	st := DirStatus{Dir: dir}
	info, err := rundir.ReadInfo(dir)
	if err != nil {
		return st, err
	}
	st.Info = info
	if err := a.checkHashes(dir, &info); err != nil {
		return st, err
	}
	n := a.Trials
	entries, err := a.loadCommitted(dir, info)
	if err != nil {
		return st, err
	}
	st.Trials = a.Trials - n
	st.Complete = complete(dir, entries)
	if !st.Complete {
		a.Partial = true
	}
	return st, nil
}

var errStop = errors.New("stop")

// loadCommitted adds the committed trials of a run directory (journal
// entries with their TrialStats, then findings), skipping trials already
// counted, and returns the number of committed trials.
func (a *Aggregate) loadCommitted(dir string, info rundir.Info) (int, error) {
	// One view: a directory being written shows the trials committed now.
	v, err := rundir.OpenView(dir)
	if err != nil {
		return 0, err
	}
	var jerr error
	entries := func(yield func(*rundir.Entry) bool) {
		err := v.EachEntry(func(e *rundir.Entry) error {
			if !yield(e) {
				return errStop
			}
			return nil
		})
		if err != errStop {
			jerr = err
		}
	}
	dups := map[trialID]bool{}
	count := 0
	add := func(e *rundir.Entry, st *rundir.TrialStats) {
		count++
		if e.ScenarioHash == "" {
			e.ScenarioHash = info.HashOf(e.Scenario)
		}
		if !a.AddTrial(e, st, nil) {
			dups[trialID{e.Scenario, e.Policy, e.Trial, e.Seed}] = true
		}
	}
	if info.Format >= rundir.Format {
		next, stop := iter.Pull(entries)
		defer stop()
		err := v.EachTrialStats(func(st *rundir.TrialStats) error {
			e, ok := next()
			if !ok && jerr != nil {
				return jerr
			}
			if !ok {
				return &rundir.UsageError{Err: fmt.Errorf("%s: %s has more trials than %s", dir, rundir.FileTrials, rundir.FileJournal)}
			}
			add(e, st)
			return nil
		})
		if err != nil {
			return count, err
		}
		if _, more := next(); more {
			return count, &rundir.UsageError{Err: fmt.Errorf("%s: %s has fewer trials than %s (the file was damaged outside sidebench)", dir, rundir.FileTrials, rundir.FileJournal)}
		}
	} else if err := a.loadLegacy(v, entries, add); err != nil {
		return count, err
	}
	if jerr != nil {
		return count, jerr
	}
	if len(dups) > 0 {
		a.Warnings = append(a.Warnings, dupWarning(dir, len(dups), count))
	}
	// Findings come in commit order, a trial's together: each trial's
	// go to its row (the first MaxReportFindings) and to the figures.
	var cur []rundir.FindingRecord
	flush := func() {
		if len(cur) > 0 {
			a.addFigures(cur[0].Scenario, figuresOfRecords(cur))
			cur = cur[:0]
		}
	}
	err = v.EachFinding(func(f *rundir.FindingRecord) error {
		id := trialID{f.Scenario, f.Policy, f.Trial, f.Seed}
		if dups[id] {
			return nil
		}
		if len(cur) > 0 && (trialID{cur[0].Scenario, cur[0].Policy, cur[0].Trial, cur[0].Seed}) != id {
			flush()
		}
		cur = append(cur, *f)
		if r := a.Row(f.Scenario, f.Policy); r != nil {
			a.addFindings(r, []rundir.FindingRecord{*f})
		}
		return nil
	})
	flush()
	return count, err
}

// loadLegacy reads a format 1 directory: the counts are in the journal
// and the distributions are rebuilt from every pod's record.
func (a *Aggregate) loadLegacy(v *rundir.View, entries iter.Seq[*rundir.Entry], add func(*rundir.Entry, *rundir.TrialStats)) error {
	lat := map[trialID]*metrics.Aggregator{}
	user := map[trialID]*userCounts{}
	if err := v.EachPod(func(r *metrics.Record) error {
		id := trialID{r.Scenario, r.Policy, r.Trial, r.Seed}
		if lat[id] == nil {
			lat[id] = metrics.NewAggregator(metrics.Options{})
			user[id] = newUserCounts(comparesWorkarounds(a.byName[r.Scenario]))
		}
		lat[id].Add(r)
		user[id].add(r)
		return nil
	}); err != nil {
		return err
	}
	for e := range entries {
		st := &rundir.TrialStats{Rows: e.Rows, Matrix: e.Matrix, Faults: e.Faults, GroupViolatingPods: e.GroupViolatingPods}
		if l := lat[trialID{e.Scenario, e.Policy, e.Trial, e.Seed}]; l != nil {
			st.Metrics = l.Snapshot()
			st.User = user[trialID{e.Scenario, e.Policy, e.Trial, e.Seed}].stats()
		}
		add(e, st)
	}
	return nil
}

// checkHashes refuses to pool a run directory whose scenario has the name
// of one already loaded but other content, unless AllowMixed; it also
// learns the directory's scenarios (their criteria and policy roles) from
// its copies.
func (a *Aggregate) checkHashes(dir string, info *rundir.Info) error {
	for _, ref := range info.Scenarios {
		h, seen := a.hashes[ref.Name]
		if seen && h != ref.Hash {
			if !a.AllowMixed {
				remedy := a.MixedRemedy
				if remedy == "" {
					remedy = "pool runs of one scenario content"
				}
				return &rundir.UsageError{Err: fmt.Errorf("%s: scenario %q has other content (sha256 %.12s) than in the runs before (%.12s): pooling them would mix different experiments; %s", dir, ref.Name, ref.Hash, h, remedy)}
			}
			if !a.Mixed {
				a.Warnings = append(a.Warnings, fmt.Sprintf("mixed scenarios: %s: scenario %q has other content (sha256 %.12s, before %.12s); pooled because of --allow-mixed", dir, ref.Name, ref.Hash, h))
			}
			a.Mixed = true
			continue
		}
		if seen {
			continue
		}
		a.hashes[ref.Name] = ref.Hash
		if a.byName[ref.Name] == nil {
			s, err := scenario.Load(filepath.Join(dir, ref.File))
			if err != nil {
				return &rundir.UsageError{Err: err}
			}
			s = s.WithOverrides(info.Seed, info.Trials)
			a.scens = append(a.scens, s)
			a.byName[ref.Name] = s
		}
	}
	return nil
}
