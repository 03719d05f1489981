package runner

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/sidebench/sidebench/harness/metrics"
	"github.com/sidebench/sidebench/harness/rundir"
	"github.com/sidebench/sidebench/reports/render"
)

// LoadRunData reads one scenario's report input from a run directory, a
// multi-scenario run's reports/NAME/ directory, or a summary.json path:
// the run's committed trials judged through the one aggregation (Load,
// Judge), with the latency distributions. A directory without run.json
// (a summary.json and pods.jsonl only, as older runs were shared) is read
// from those two files. Errors name the path; unreadable input is a
// *rundir.UsageError.
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
		return loadSummaryAndPods(path, dir)
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

// loadSummaryAndPods reads a directory holding a summary.json and a plain
// pods.jsonl: the summary's numbers, and the distributions rebuilt from
// the records (faulted pods excluded, as the aggregation does).
func loadSummaryAndPods(path, dir string) (render.RunData, error) {
	sumPath := filepath.Join(dir, render.SummaryFile)
	fh, err := os.Open(sumPath)
	if err != nil {
		return render.RunData{}, usage("%s: not a run directory: %v", path, unwrapPath(err))
	}
	s, err := render.ReadSummaryJSON(fh)
	fh.Close()
	if err != nil {
		return render.RunData{}, usage("%s: %v", sumPath, err)
	}
	d := s.RunData()
	podsPath := filepath.Join(dir, "pods.jsonl")
	f, err := os.Open(podsPath)
	if err != nil {
		return render.RunData{}, usage("%s: cannot read per-pod records: %v", podsPath, unwrapPath(err))
	}
	defer f.Close()
	agg := metrics.NewAggregator(metrics.Options{})
	rr := metrics.NewRecordReader(f)
	for {
		var rec metrics.Record
		err := rr.Read(&rec)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) && errors.Is(rr.Read(&rec), io.EOF) {
				break // torn last line
			}
			return render.RunData{}, usage("%s: %v", podsPath, err)
		}
		if d.Scenario == "" || rec.Scenario == d.Scenario {
			agg.Add(&rec)
		}
	}
	for i := range d.Latencies {
		l := &d.Latencies[i]
		l.Ms = agg.Hist(metrics.Key{Scenario: d.Scenario, Policy: l.Policy, Metric: l.Metric})
		if l.Ms.N() != l.N {
			d.Warnings = append(d.Warnings, fmt.Sprintf("%s: %s %s: %d samples in pods.jsonl, summary.json says n=%d",
				path, l.Policy, l.Metric, l.Ms.N(), l.N))
		}
	}
	return d, nil
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
