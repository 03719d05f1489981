package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sidebench/sidebench/harness/rundir"
	"github.com/sidebench/sidebench/reports/compare"
	"github.com/sidebench/sidebench/reports/render"
)

// MergeAll is Merge for what 'sidebench merge' takes: run directories,
// pooled into o.Out, or directories of runs as 'run --out DIR a.yaml
// b.yaml' writes them (DIR/a, DIR/b), pooled scenario by scenario into
// o.Out/<name>, the layout of the unsharded run (every input must hold the
// same scenarios' runs). It returns a result per merged directory, in
// scenario name order. On an error it returns the results of the
// scenarios merged before it, and the error names them.
func MergeAll(ctx context.Context, o MergeOptions) ([]*Result, error) {
	names, groups, err := rundir.RunGroups(o.Dirs)
	if err != nil {
		return nil, err
	}
	if names[0] == "" {
		res, err := Merge(ctx, o)
		if err != nil {
			return nil, err
		}
		return []*Result{res}, nil
	}
	// Refuse a non-empty --out before the first scenario is merged, not
	// at the first scenario whose directory exists.
	if err := rundir.CheckEmpty(o.Out); err != nil {
		return nil, err
	}
	var results []*Result
	for i, name := range names {
		one := o
		one.Dirs, one.Out = groups[i], filepath.Join(o.Out, name)
		res, err := Merge(ctx, one)
		if err != nil {
			if i > 0 {
				err = &stoppedError{at: name, done: names[:i], err: err}
			}
			return results, err
		}
		results = append(results, res)
	}
	return results, nil
}

// stoppedError is a merge of directories of runs that failed after some
// scenarios were merged: they are complete run directories, worth naming.
type stoppedError struct {
	at   string
	done []string
	err  error
}

func (e *stoppedError) Error() string {
	return fmt.Sprintf("stopped at %s (%s merged): %v", e.at, strings.Join(e.done, ", "), e.err)
}

func (e *stoppedError) Unwrap() error { return e.err }

// Compare compares what 'sidebench compare' takes: run directories (or
// their summary.json, or a multi-scenario run's reports/<name>), in one
// table; or directories of runs as 'run --out DIR a.yaml b.yaml' writes
// them, A/<name> with B/<name>, a table per scenario in name order (every
// directory must hold the same scenarios' runs). Unreadable or
// incomparable input is a *rundir.UsageError naming the scenario.
func Compare(paths []string, o compare.Options) ([]compare.Table, error) {
	names, groups := []string{""}, [][]string{paths}
	if slices.ContainsFunc(paths, holdsRunsOnly) {
		var err error
		if names, groups, err = rundir.RunGroups(paths); err != nil {
			return nil, err
		}
	}
	tables := make([]compare.Table, len(groups))
	for i, group := range groups {
		runs, err := CompareRuns(group)
		if err == nil {
			tables[i], err = compare.Compare(runs, o)
		}
		if err != nil {
			if names[i] != "" {
				return nil, usage("%s: %v", names[i], err)
			}
			return nil, usage("%v", err)
		}
	}
	return tables, nil
}

// holdsRunsOnly reports whether path is a directory of runs, and neither a
// run nor an older run's reports (which compare reads by their
// summary.json).
func holdsRunsOnly(path string) bool {
	if _, err := os.Stat(filepath.Join(path, render.SummaryFile)); err == nil || rundir.IsRun(path) {
		return false
	}
	_, err := rundir.Runs(path)
	return err == nil
}
