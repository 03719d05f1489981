package check

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/sidebench/sidebench/harness/history"
)

// CheckFiles checks JSONL history files, in the order given, into one
// report. A truncated last line (a crashed run) is accepted with a
// warning; any other decoding error is returned with its file and line.
func CheckFiles(paths []string, opts ...Option) (*Report, error) {
	reps, err := checkFiles(openFile, paths, false, opts...)
	if err != nil {
		return nil, err
	}
	return reps[0], nil
}

// CheckFilesByPolicy is CheckFiles with one report per scenario × policy,
// in the order they first appear: a run directory's history holds every
// policy of a scenario, and mixing them in one table would hide which
// design broke what.
func CheckFilesByPolicy(paths []string, opts ...Option) ([]*Report, error) {
	return checkFiles(openFile, paths, true, opts...)
}

// Opener opens a history by the name given on the command line (a plain
// JSONL file, or whatever else the caller accepts: a run directory, a
// compressed file).
type Opener func(path string) (io.ReadCloser, error)

func openFile(path string) (io.ReadCloser, error) { return os.Open(path) }

func checkFiles(open Opener, paths []string, byPolicy bool, opts ...Option) ([]*Report, error) {
	var (
		keys     []string
		runners  = map[string]*Runner{}
		metas    = map[string]*history.Meta{}
		warnings []string
	)
	runnerFor := func(meta *history.Meta) (*Runner, error) {
		key := ""
		if byPolicy && meta != nil {
			key = meta.Scenario + "\x00" + meta.Policy
		}
		r := runners[key]
		if r == nil {
			if len(keys) >= MaxReports {
				return nil, fmt.Errorf("more than %d scenario × policy combinations: check fewer histories at once", MaxReports)
			}
			r = NewRunner(opts...)
			runners[key] = r
			metas[key] = meta
			keys = append(keys, key)
		}
		return r, nil
	}
	closeAll := func() []*Report {
		out := make([]*Report, 0, len(keys))
		for _, k := range keys {
			rep := runners[k].Close()
			if rep.Meta == nil {
				rep.Meta = metas[k] // a run without pods
			}
			out = append(out, rep)
		}
		return out
	}
	// A trial given twice (a run and its merge, a directory and a copy)
	// is checked once, as graduate and merge count it: keyed by scenario
	// content, policy, seed and trial number (histories without a
	// scenario hash are not deduplicated). The run a pod belongs to is its
	// meta's identity: every run.meta line decodes to its own Meta.
	type trialKey struct {
		hash, policy string
		seed         uint64
		trial        int
	}
	first := map[trialKey]*history.Meta{}
	dup := map[*history.Meta]bool{}
	path, dups := "", 0 // the input being read, its duplicate trials
	duplicate := func(meta *history.Meta) bool {
		if meta == nil || meta.ScenarioHash == "" {
			return false
		}
		if d, ok := dup[meta]; ok {
			return d
		}
		k := trialKey{meta.ScenarioHash, meta.Policy, meta.Seed, meta.Trial}
		f, seen := first[k]
		if !seen {
			first[k] = meta
		}
		d := seen && f != meta
		dup[meta] = d
		if d {
			dups++
		}
		return d
	}
	add := func(meta *history.Meta, pod string, evs []history.Event) error {
		if duplicate(meta) {
			return nil
		}
		r, err := runnerFor(meta)
		if err == nil {
			r.Add(meta, pod, evs)
		}
		return err
	}
	onRun := func(meta *history.Meta) error {
		_, err := runnerFor(meta)
		return err
	}
	for _, path = range paths {
		dups = 0
		f, err := open(path)
		if err != nil {
			closeAll()
			return nil, err
		}
		// A run with a run.meta but no pod (what a SIGKILLed run leaves)
		// gets its report too: it shows 0 pods checked.
		err = forEachPod(history.NewReader(f), onRun, add)
		f.Close()
		if dups > 0 {
			warnings = append(warnings, fmt.Sprintf("%s: %d trials (same scenario content, policy, seed and trial number) were in an earlier input too: each checked once", path, dups))
		}
		switch {
		case errors.Is(err, history.ErrTruncated):
			warnings = append(warnings, fmt.Sprintf("%s: %v (run cut short; its pods were checked)", path, err))
		case err != nil:
			closeAll()
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	if len(keys) == 0 {
		runnerFor(nil) // cannot fail: no key yet
	}
	reps := closeAll()
	reps[0].Warnings = append(reps[0].Warnings, warnings...)
	return reps, nil
}

// MaxReports bounds the scenario × policy reports of one check: each holds
// a Runner (and its goroutines), and a history of runs with a new scenario
// name on every line would otherwise create hundreds of thousands.
const MaxReports = 1000

// forEachPod is history.ForEachPod that also reports each run.meta; an
// error from onRun stops it, with the line.
func forEachPod(r *history.Reader, onRun func(*history.Meta) error, fn history.PodFunc) error {
	p := history.NewPartitioner(fn)
	var e history.Event
	for {
		err := r.Read(&e)
		switch {
		case err == io.EOF:
			return p.Close()
		case errors.Is(err, history.ErrTruncated):
			if cerr := p.Close(); cerr != nil {
				return cerr
			}
			return err
		case err != nil:
			p.Close()
			return err
		}
		if e.Kind == history.RunMeta {
			if err := onRun(e.Meta); err != nil {
				p.Close()
				return &history.LineError{Line: r.Line(), Err: err}
			}
		}
		if err := p.Write(&e); err != nil {
			p.Close()
			return err
		}
	}
}

// RunCheckCommand is `sidebench check FILE...`: it prints, per scenario ×
// policy, the table per invariant and the first findings, and returns the
// exit code: 1 if any violation, or if a report checked no pod at all (an
// empty or metadata-only history, which is what a SIGKILLed run leaves:
// nothing was verified, so it must not pass); 2 if the input is unreadable
// or malformed; 0 otherwise (degradations, bounds exceeded and unknowns do
// not fail the check; the table shows them). open opens each path (nil:
// plain files).
func RunCheckCommand(stdout, stderr io.Writer, paths []string, open Opener) (exitCode int) {
	if len(paths) == 0 {
		fmt.Fprintln(stderr, "check: no history files given")
		return 2
	}
	if open == nil {
		open = openFile
	}
	reps, err := checkFiles(open, paths, true)
	if err != nil {
		fmt.Fprintf(stderr, "check: %v\n", err)
		return 2
	}
	for _, w := range reps[0].Warnings {
		fmt.Fprintf(stderr, "check: warning: %s\n", w)
	}
	for i, rep := range reps {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		rep.WriteText(stdout, 10)
		if rep.Violations() > 0 {
			exitCode = 1
		}
		if rep.Pods == 0 {
			what := strings.Join(paths, ", ")
			if m := rep.Meta; m != nil {
				what = fmt.Sprintf("scenario=%s policy=%s in %s", m.Scenario, m.Policy, what)
			}
			fmt.Fprintf(stderr, "check: no pods checked (%s): the history holds no pod events\n", what)
			exitCode = 1
		}
	}
	return exitCode
}

// WriteText renders the report: run header, the per-invariant table, then
// up to n findings (violations first) with their history excerpts.
func (r *Report) WriteText(w io.Writer, n int) {
	if m := r.Meta; m != nil {
		if r.Runs > 1 {
			// The pods of several trials, pooled: the first trial's seed
			// and number would read as if only it was checked.
			fmt.Fprintf(w, "runs: scenario=%s policy=%s backend=%s trials=%d (the first: seed=%d trial=%d)\n", m.Scenario, m.Policy, m.Backend, r.Runs, m.Seed, m.Trial)
		} else {
			fmt.Fprintf(w, "run: scenario=%s policy=%s backend=%s seed=%d trial=%d\n", m.Scenario, m.Policy, m.Backend, m.Seed, m.Trial)
		}
	}
	fmt.Fprintf(w, "pods: %d  verdict: %s\n\n", r.Pods, r.Valid)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "INVARIANT\tLEVEL\tPODS\tVIOLATIONS\tDEGRADATIONS\tBOUNDS\tUNKNOWN\t")
	users := false
	for _, row := range r.Rows {
		if row.Level == User {
			users = true
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t\n", row.ID, row.Level, row.Checked, row.Violations, row.Degradations, row.Bounds, row.Unknown)
	}
	tw.Flush()
	if users {
		// User-level guarantees change no verdict: their own table.
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "USER-LEVEL GUARANTEE\tPODS\tUNMET\tUNKNOWN\t")
		for _, row := range r.Rows {
			if row.Level == User {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t\n", row.ID, row.Checked, row.Unmet, row.Unknown)
			}
		}
		tw.Flush()
	}
	if len(r.Findings) > 0 && n > 0 {
		fmt.Fprintf(w, "\nfirst findings:\n")
		shown := 0
		for _, class := range []Class{Violation, Degradation, Bound, Unmet} {
			for i := range r.Findings {
				if f := &r.Findings[i]; f.Class == class && shown < n {
					shown++
					writeFinding(w, f, r.Runs > 1)
				}
			}
		}
	}
	for i, e := range r.Errors {
		if i == 0 {
			fmt.Fprintf(w, "\nunknown verdicts:\n")
		}
		first, _, _ := strings.Cut(e.Err, "\n")
		fmt.Fprintf(w, "  %s pod=%s: %s\n", e.ID, e.Pod, first)
	}
}

// writeFinding prints f and its excerpt; withTrial names its trial (a
// report over several trials: each has a pod of that name, and explain
// needs --trial).
func writeFinding(w io.Writer, f *Finding, withTrial bool) {
	fmt.Fprintf(w, "\n%s\n", f.format(withTrial))
	for k := range f.Excerpt {
		if f.Elided > 0 && k == excerptCap/2 {
			fmt.Fprintf(w, "      ... %d events elided ...\n", f.Elided)
		}
		fmt.Fprintf(w, "      %s\n", Describe(&f.Excerpt[k]))
	}
}

// Describe renders one event compactly for excerpts (history.Describe).
func Describe(e *history.Event) string { return history.Describe(e) }
