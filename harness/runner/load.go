package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sidebench/sidebench/harness/metrics"
	"github.com/sidebench/sidebench/harness/rundir"
	"github.com/sidebench/sidebench/reports/compare"
	"github.com/sidebench/sidebench/reports/render"
)

// LoadRunData reads one scenario's report input from a run directory, a
// multi-scenario run's reports/NAME/ directory, or a summary.json path:
// the run's committed trials judged through the one aggregation (Load,
// Judge), with the latency distributions. Errors name the path;
// unreadable input is a *rundir.UsageError.
func LoadRunData(path string) (render.RunData, error) {
	dir := path
	fi, err := os.Stat(path)
	if err != nil {
		return render.RunData{}, usage("%s: %v", path, unwrapPath(err))
	}
	if !fi.IsDir() {
		dir = filepath.Dir(path)
	}
	runDir, scen := dir, ""
	if filepath.Base(filepath.Dir(dir)) == "reports" {
		if _, err := os.Stat(filepath.Join(dir, rundir.FileRun)); err != nil {
			// reports/<scenario>/ of a multi-scenario run: the data is two up.
			runDir, scen = filepath.Dir(filepath.Dir(dir)), filepath.Base(dir)
		}
	}
	if _, err := os.Stat(filepath.Join(runDir, rundir.FileRun)); err != nil {
		return render.RunData{}, usage("%s: not a run directory (no %s)", path, rundir.FileRun)
	}
	a := NewAggregate(nil, nil)
	st, err := a.Load(runDir)
	if err != nil {
		return render.RunData{}, err
	}
	if a.Trials == 0 {
		return render.RunData{}, usage("%s: no committed trials", runDir)
	}
	status := StatusComplete
	if !st.Complete {
		status = StatusPartial
	}
	out := Judge(a, Meta{Command: st.Info.Command, Backend: st.Info.Backend, Status: status, StartedAt: st.Info.StartedAt, Build: st.Info.Build})
	if scen == "" && len(out.Runs) == 1 {
		return out.Runs[0], nil
	}
	var names []string
	for _, d := range out.Runs {
		if d.Scenario == scen {
			return d, nil
		}
		names = append(names, d.Scenario)
	}
	return render.RunData{}, usage("%s: a run of several scenarios (%v): name one, e.g. %s", runDir, names, filepath.Join(runDir, "reports", names[0]))
}

func usage(format string, args ...any) error {
	return &rundir.UsageError{Err: fmt.Errorf(format, args...)}
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// CompareRuns loads run directories for `sidebench compare`, which pairs
// pods: each run's report input judged through the one aggregation, and
// every unfaulted pod's latencies from pods.jsonl.zst. A run that kept
// only some pods' records (--keep-history findings or sample:P) is
// refused: pairing the kept pods would compare samples biased towards
// findings. A directory written before format 2 (a plain pods.jsonl) is
// read by compare.Load.
func CompareRuns(paths []string) ([]compare.Run, error) {
	if len(paths) < 2 {
		return nil, fmt.Errorf("need at least two run directories, got %d", len(paths))
	}
	var runs []compare.Run
	for _, p := range paths {
		r, err := compareRun(p)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	return runs, nil
}

func compareRun(path string) (compare.Run, error) {
	dir := path
	if fi, err := os.Stat(path); err == nil && !fi.IsDir() {
		dir = filepath.Dir(path)
	}
	runDir := dir
	if filepath.Base(filepath.Dir(dir)) == "reports" {
		if _, err := os.Stat(filepath.Join(dir, rundir.FileRun)); err != nil {
			runDir = filepath.Dir(filepath.Dir(dir))
		}
	}
	info, err := rundir.ReadInfo(runDir)
	if err != nil {
		if _, serr := os.Stat(filepath.Join(dir, render.SummaryFile)); serr != nil {
			// Neither a run nor an older run's reports: say what is
			// missing (compare.Load would name summary.json as "no such
			// file" of the directory itself).
			return compare.Run{}, err
		}
		return compare.Load(path)
	}
	if info.Format < rundir.Format {
		return compare.Load(path)
	}
	if keep, _ := rundir.ParseRetention(info.KeepHistory); !keep.All() {
		return compare.Run{}, fmt.Errorf("%s kept the per-pod records of some pods only (--keep-history %s): compare pairs every pod; follow such runs with 'sidebench trend' (it compares their distributions) or re-run with --keep-history all", runDir, info.KeepHistory)
	}
	d, err := LoadRunData(path)
	if err != nil {
		return compare.Run{}, err
	}
	r := compare.Run{Path: dir, Data: d}
	n := map[[2]string]int{}
	err = rundir.EachPod(runDir, func(rec *metrics.Record) error {
		if rec.Scenario != d.Scenario || rec.Faulted {
			return nil
		}
		r.Pods = append(r.Pods, compare.Pod{
			Key:         compare.PodKey{Scenario: rec.Scenario, Policy: rec.Policy, Trial: rec.Trial, Seed: rec.Seed, Pod: rec.Pod},
			LatenciesMs: rec.LatenciesMs,
		})
		for m := range rec.LatenciesMs {
			n[[2]string{rec.Policy, m}]++
		}
		return nil
	})
	if err != nil {
		return compare.Run{}, err
	}
	for _, l := range d.Latencies {
		if got := n[[2]string{l.Policy, l.Metric}]; got != l.N {
			r.Warnings = append(r.Warnings, fmt.Sprintf("%s: %s %s: %d samples in %s, the trials' distribution has n=%d",
				path, l.Policy, l.Metric, got, rundir.FilePods, l.N))
		}
	}
	return r, nil
}
