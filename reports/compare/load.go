package compare

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sidebench/sidebench/harness/metrics"
	"github.com/sidebench/sidebench/reports/render"
)

// filePods is the per-pod records of a run directory written before
// format 2 (plain JSONL). Format 2 directories (pods.jsonl.zst) are read
// by harness/runner.CompareRuns, which builds the same Run; the run
// directory's store is not a report's dependency.
const filePods = "pods.jsonl"

// RunDirs loads every path (a run directory or its summary.json) and
// compares the others with the first. Every error names the path it is
// about; all of them are the caller's input errors (bad path, not a run
// directory, runs of different scenarios without Force).
func RunDirs(paths []string, o Options) (Table, error) {
	if len(paths) < 2 {
		return Table{}, fmt.Errorf("need at least two run directories, got %d", len(paths))
	}
	runs := make([]Run, len(paths))
	for i, p := range paths {
		r, err := Load(p)
		if err != nil {
			return Table{}, err
		}
		runs[i] = r
	}
	return Compare(runs, o)
}

// Load reads a run directory (or its summary.json): the summary, and the
// per-pod latencies of pods.jsonl with faulted pods left out, as the
// reports' latency samples are (metrics.Options.IncludeFaulted unset).
// A torn last line of pods.jsonl (a run killed mid-write) is ignored.
func Load(path string) (Run, error) {
	dir := path
	if fi, err := os.Stat(path); err != nil {
		return Run{}, fmt.Errorf("%s: %w", path, unwrapPathErr(err))
	} else if !fi.IsDir() {
		dir = filepath.Dir(path)
	}
	sumPath := filepath.Join(dir, render.SummaryFile)
	fh, err := os.Open(sumPath)
	if err != nil {
		return Run{}, fmt.Errorf("%s: not a run directory: %w", path, unwrapPathErr(err))
	}
	s, err := render.ReadSummaryJSON(fh)
	fh.Close()
	if err != nil {
		hint := ""
		if _, serr := os.Stat(filepath.Join(dir, "reports")); serr == nil {
			hint = " (a run of several scenarios: compare " + filepath.Join(dir, "reports", "<scenario>") + ")"
		}
		return Run{}, fmt.Errorf("%s: %w%s", sumPath, err, hint)
	}
	r := Run{Path: dir, Data: s.RunData()} // the directory also when summary.json was named
	podsPath := filepath.Join(dir, filePods)
	if _, err := os.Stat(podsPath); err != nil && filepath.Base(filepath.Dir(dir)) == "reports" {
		// reports/<scenario>/ of a multi-scenario run: pods.jsonl is two up.
		podsPath = filepath.Join(filepath.Dir(filepath.Dir(dir)), filePods)
	}
	n := map[rowKey]int{}
	err = forEachRecord(podsPath, func(rec *metrics.Record) {
		if r.Data.Scenario != "" && rec.Scenario != r.Data.Scenario || rec.Faulted {
			return
		}
		r.Pods = append(r.Pods, Pod{
			Key:         PodKey{Scenario: rec.Scenario, Policy: rec.Policy, Trial: rec.Trial, Seed: rec.Seed, Pod: rec.Pod},
			LatenciesMs: rec.LatenciesMs,
		})
		for m := range rec.LatenciesMs {
			n[rowKey{rec.Policy, m}]++
		}
	})
	if err != nil {
		return Run{}, err
	}
	for _, l := range r.Data.Latencies {
		if got := n[rowKey{l.Policy, l.Metric}]; got != l.N {
			r.Warnings = append(r.Warnings, fmt.Sprintf("%s: %s %s: %d samples in %s, summary.json says n=%d",
				path, l.Policy, l.Metric, got, filePods, l.N))
		}
	}
	return r, nil
}

// forEachRecord calls fn with every record of a pods.jsonl.
func forEachRecord(path string, fn func(*metrics.Record)) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%s: cannot read per-pod records: %w", path, unwrapPathErr(err))
	}
	defer f.Close()
	if err := metrics.ForEachRecord(f, fn); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// unwrapPathErr drops the path of an *os.PathError (the caller names it).
func unwrapPathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
