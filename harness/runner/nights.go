package runner

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/sidebench/sidebench/harness/rundir"
	"github.com/sidebench/sidebench/reports/render"
	"github.com/sidebench/sidebench/reports/trend"
)

// LoadNights reads nightly runs for `sidebench trend`: each path is a run
// directory, or a directory whose subdirectories are run directories (a
// CronJob's results). Each night is judged through the one aggregation,
// as its own report was. A path that holds no run is a *rundir.UsageError.
func LoadNights(paths []string) ([]trend.Night, error) {
	var dirs []string
	for _, p := range paths {
		if _, err := os.Stat(filepath.Join(p, rundir.FileRun)); err == nil {
			dirs = append(dirs, p)
			continue
		}
		ents, err := os.ReadDir(p)
		if err != nil {
			return nil, usage("%s: %v", p, unwrapPath(err))
		}
		n := len(dirs)
		for _, e := range ents {
			sub := filepath.Join(p, e.Name())
			if _, err := os.Stat(filepath.Join(sub, rundir.FileRun)); e.IsDir() && err == nil {
				dirs = append(dirs, sub)
			}
		}
		if len(dirs) == n {
			return nil, usage("%s: neither a run directory nor a directory of run directories (no %s)", p, rundir.FileRun)
		}
	}
	slices.Sort(dirs)
	dirs = slices.Compact(dirs)
	var out []trend.Night
	for _, dir := range dirs {
		a := NewAggregate(nil, nil)
		a.AllowMixed = true // one directory: its scenarios are its own
		st, err := a.Load(dir)
		if err != nil {
			return nil, err
		}
		status := StatusComplete
		if !st.Complete {
			status = StatusPartial
		}
		judged := Judge(a, Meta{Command: st.Info.Command, Backend: st.Info.Backend, Status: status, StartedAt: st.Info.StartedAt, Build: st.Info.Build})
		out = append(out, trend.Night{Dir: dir, Start: st.Info.StartedAt, Command: st.Info.Command, Partial: !st.Complete,
			Build: render.Build{Version: st.Info.Build.Version, Revision: st.Info.Build.Revision, Modified: st.Info.Build.Modified}, Runs: judged.Runs})
	}
	return out, nil
}

// Trend loads the nights of paths (LoadNights), builds the trend and
// writes trend.md and trend.html into out ("" : the directory of nights
// when paths is one directory holding several, else "."). It returns the
// table and trend.md's content.
func Trend(paths []string, out string, o trend.Options) (*trend.Table, []byte, error) {
	nights, err := LoadNights(paths)
	if err != nil {
		return nil, nil, err
	}
	t := trend.Build(nights, o)
	if out == "" {
		out = "."
		if len(paths) == 1 && len(nights) > 1 {
			out = paths[0]
		}
	}
	var md, html bytes.Buffer
	if err := t.WriteMarkdown(&md); err != nil {
		return nil, nil, err
	}
	if err := t.WriteHTML(&html); err != nil {
		return nil, nil, err
	}
	// --out is created as run and merge create theirs (trend's own example
	// names a new directory; it used to fail there with exit 3).
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, nil, fmt.Errorf("writing the trend: %w", err)
	}
	for name, b := range map[string][]byte{trend.MarkdownFile: md.Bytes(), trend.HTMLFile: html.Bytes()} {
		if err := rundir.WriteFileAtomic(filepath.Join(out, name), b); err != nil {
			return nil, nil, fmt.Errorf("writing the trend: %w", err)
		}
	}
	return &t, md.Bytes(), nil
}
