package runner

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sidebench/sidebench/harness/rundir"
	"github.com/sidebench/sidebench/reports/render"
	"github.com/sidebench/sidebench/reports/trend"
)

// LoadNights reads nightly runs for `sidebench trend`. Each path is a run
// directory (a night), or a directory of nights (a CronJob's results):
// its subdirectories are runs, or directories of one night's runs
// (NIGHTS/<night>/<scenario>, as 'run --out NIGHTS/<night> a.yaml b.yaml'
// writes them). The runs of one invocation of several scenarios (the
// invocation in their run.json) are one night, so the directory 'run
// --out DIR a.yaml b.yaml' wrote is one night too. Each night is judged
// through the one aggregation, as its own report was. A path that holds
// no run is a *rundir.UsageError.
func LoadNights(paths []string) ([]trend.Night, error) {
	var nights [][]string
	for _, p := range paths {
		if rundir.IsRun(p) {
			nights = append(nights, []string{p})
			continue
		}
		ents, err := os.ReadDir(p)
		if err != nil {
			return nil, usage("%s: %v", p, unwrapPath(err))
		}
		n := len(nights)
		byInvocation := map[string]int{} // index in nights
		for _, e := range ents {
			sub := filepath.Join(p, e.Name())
			switch {
			case !e.IsDir():
			case rundir.IsRun(sub):
				info, err := rundir.ReadInfo(sub)
				if err == nil && info.Invocation != "" {
					if i, ok := byInvocation[info.Invocation]; ok {
						nights[i] = append(nights[i], sub)
						continue
					}
					byInvocation[info.Invocation] = len(nights)
				}
				nights = append(nights, []string{sub})
			default:
				if runs, err := rundir.Runs(sub); err == nil {
					nights = append(nights, runs)
				}
			}
		}
		if len(nights) == n {
			return nil, usage("%s: neither a run directory nor a directory of nights (run directories, or directories of one night's run directories; no %s)", p, rundir.FileRun)
		}
	}
	slices.SortFunc(nights, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
	nights = slices.CompactFunc(nights, func(a, b []string) bool { return a[0] == b[0] })
	var out []trend.Night
	for _, runs := range nights {
		a := NewAggregate(nil, nil)
		a.AllowMixed = true // one night: its scenarios are its own
		night := trend.Night{Dir: runs[0]}
		if len(runs) > 1 {
			night.Dir = filepath.Dir(runs[0])
		}
		var first rundir.Info
		for i, dir := range runs {
			st, err := a.Load(dir)
			if err != nil {
				return nil, err
			}
			if i == 0 || st.Info.StartedAt.Before(first.StartedAt) {
				first = st.Info
			}
			night.Partial = night.Partial || !st.Complete
		}
		status := StatusComplete
		if night.Partial {
			status = StatusPartial
		}
		judged := Judge(a, Meta{Command: first.Command, Backend: first.Backend, Status: status, StartedAt: first.StartedAt, Build: first.Build})
		night.Start, night.Command, night.Runs = first.StartedAt, first.Command, judged.Runs
		night.Build = render.Build{Version: first.Build.Version, Revision: first.Build.Revision, Modified: first.Build.Modified}
		out = append(out, night)
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
