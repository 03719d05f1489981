package runner

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sidebench/sidebench/harness/rundir"
	"github.com/sidebench/sidebench/harness/scenario"
	"github.com/sidebench/sidebench/internal/version"
)

// MergeOptions configure Merge.
type MergeOptions struct {
	// Dirs are the run directories to pool (the shards of a run, or any
	// runs of the same scenarios).
	Dirs []string
	// Out is the merged run directory (it must not exist or be empty).
	Out   string
	Build version.Info
	// Strict: INSUFFICIENT DATA and partial runs fail.
	Strict bool
	// Log receives warnings (duplicate trials). Nil discards.
	Log io.Writer
}

// Merge pools run directories into one: every committed trial of every
// directory, each counted once (a trial found twice, by scenario hash,
// policy, seed and number, is dropped with a warning), copied frame by
// frame (nothing is decoded or recompressed) in the order the unsharded
// run commits them (policy by policy, trial by trial; a soak's trial by
// trial), then judged and reported as `run` does: the merge of the N
// shards of a run is that run, byte for byte in its data files. Scenarios
// of the same name with different content are refused (a
// *rundir.UsageError). The output directory is locked while it is
// written.
func Merge(ctx context.Context, o MergeOptions) (*Result, error) {
	if len(o.Dirs) == 0 {
		return nil, usage("merge: no run directories given")
	}
	// Validate and pool once: mixed hashes are refused, duplicates named.
	pool := NewAggregate(nil, nil)
	var infos []rundir.Info
	complete := true
	for _, dir := range o.Dirs {
		if filepath.Clean(dir) == filepath.Clean(o.Out) {
			return nil, usage("merge: %s is both an input and --out", dir)
		}
		if within(o.Out, dir) {
			// A merge reads its inputs and writes nothing into them.
			return nil, usage("merge: --out %s is inside the input %s: give a directory outside the inputs", o.Out, dir)
		}
		st, err := pool.Load(dir)
		if err != nil {
			return nil, err
		}
		if st.Info.Format < rundir.Format {
			return nil, usage("%s: run directory format %d (written by an older sidebench) cannot be merged", dir, st.Info.Format)
		}
		if len(infos) > 0 && st.Info.Backend != infos[0].Backend {
			return nil, usage("merge: %s ran on --backend %s, %s on %s: merge runs of one backend", dir, st.Info.Backend, o.Dirs[0], infos[0].Backend)
		}
		infos = append(infos, st.Info)
		complete = complete && st.Complete
	}
	if pool.Trials == 0 {
		return nil, usage("merge: %v: no committed trials", o.Dirs)
	}
	for _, w := range pool.Warnings {
		if o.Log != nil {
			fmt.Fprintf(o.Log, "sidebench: warning: %s\n", w)
		}
	}

	// Every trial once, in the unsharded run's order.
	scens := pool.Scenarios()
	type source struct {
		dir int
		c   rundir.Committed
	}
	var all []source
	seen := map[keyDigest]bool{}
	for i, dir := range o.Dirs {
		err := rundir.EachCommitted(dir, func(c *rundir.Committed) error {
			k := c.Entry.Key()
			if k.ScenarioHash == "name:"+c.Entry.Scenario {
				k.ScenarioHash = infos[i].HashOf(c.Entry.Scenario)
			}
			if d := digest(k); !seen[d] {
				seen[d] = true
				all = append(all, source{i, *c})
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	soak := infos[0].Command == "soak"
	order := mergeOrder(scens, soak)
	slices.SortStableFunc(all, func(a, b source) int { return order(&a.c.Entry, &b.c.Entry) })

	info := infos[0]
	// rundir.Create lists the scenarios it copies: the first input's
	// list would name each of them twice.
	info.Shard, info.Merged, info.Scenarios = "", slices.Clone(o.Dirs), nil
	for _, in := range infos[1:] {
		if in.StartedAt.Before(info.StartedAt) {
			info.StartedAt = in.StartedAt
		}
	}
	var copies []*scenario.Scenario
	for _, s := range scens {
		c := *s
		if ref := originOf(infos, s.Metadata.Name); ref != "" {
			c.File = ref
		}
		copies = append(copies, &c)
	}
	d, err := rundir.Create(o.Out, info, copies)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	readers := make([]*rundir.Reader, len(o.Dirs))
	for i, dir := range o.Dirs {
		if readers[i], err = rundir.OpenReader(dir); err != nil {
			return nil, err
		}
		defer readers[i].Close()
	}
	const batch = 256
	for start := 0; start < len(all); start += batch {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var fs []*rundir.Finished
		for _, s := range all[start:min(start+batch, len(all))] {
			f, err := readers[s.dir].Finished(d, &s.c)
			if err != nil {
				return nil, err
			}
			fs = append(fs, f)
		}
		if _, err := d.Commit(fs...); err != nil {
			return nil, fmt.Errorf("%s: %w", o.Out, err)
		}
	}

	// Judge the merged directory as run does.
	agg := NewAggregate(scens, nil)
	if _, err := agg.loadCommitted(o.Out, d.Info); err != nil {
		return nil, err
	}
	agg.Warnings = append(agg.Warnings, pool.Warnings...)
	status := StatusComplete
	if !complete || agg.Partial {
		status = StatusPartial
	}
	m := Meta{Command: info.Command, Backend: info.Backend, Status: status, StartedAt: info.StartedAt, Build: o.Build, Strict: o.Strict,
		Extra: map[string]string{"merged": fmt.Sprintf("%d directories: %s", len(o.Dirs), strings.Join(o.Dirs, ", "))}}
	out := Judge(agg, m)
	res := &Result{Dirs: []string{o.Out}, State: JudgeAll([]*Aggregate{agg}, []Meta{m}, o.Strict), Partial: status != StatusComplete}
	if err := WriteReports(o.Out, out); err != nil {
		return res, &ReportError{err}
	}
	if err := d.Close(); err != nil {
		return res, err
	}
	if res.Partial {
		res.State.State.Pass = false
	}
	return res, nil
}

// mergeOrder orders trials as the unsharded run commits them: a run's
// policy by policy, trial by trial (scenario.Expand); a soak's trial by
// trial, then scenario, then policy.
func mergeOrder(scens []*scenario.Scenario, soak bool) func(a, b *rundir.Entry) int {
	scenIdx := map[string]int{}
	polIdx := map[[2]string]int{}
	for i, s := range scens {
		scenIdx[s.Metadata.Name] = i
		for j, g := range s.PolicyGates() {
			polIdx[[2]string{s.Metadata.Name, g.String()}] = j
		}
	}
	idx := func(m map[string]int, k string) int {
		if i, ok := m[k]; ok {
			return i
		}
		return len(m)
	}
	pol := func(e *rundir.Entry) int {
		if i, ok := polIdx[[2]string{e.Scenario, e.Policy}]; ok {
			return i
		}
		return len(polIdx)
	}
	return func(a, b *rundir.Entry) int {
		if soak {
			return cmp.Or(cmp.Compare(a.Trial, b.Trial), cmp.Compare(idx(scenIdx, a.Scenario), idx(scenIdx, b.Scenario)), cmp.Compare(pol(a), pol(b)),
				cmp.Compare(a.Policy, b.Policy), cmp.Compare(a.Seed, b.Seed))
		}
		return cmp.Or(cmp.Compare(idx(scenIdx, a.Scenario), idx(scenIdx, b.Scenario)), cmp.Compare(pol(a), pol(b)), cmp.Compare(a.Policy, b.Policy),
			cmp.Compare(a.Trial, b.Trial), cmp.Compare(a.Seed, b.Seed))
	}
}

// originOf is the path a scenario was run from (run.json's origin).
func originOf(infos []rundir.Info, name string) string {
	for _, in := range infos {
		for _, ref := range in.Scenarios {
			if ref.Name == name && ref.Origin != "" {
				return ref.Origin
			}
		}
	}
	return ""
}

// within reports whether path is inside dir (both made absolute).
func within(path, dir string) bool {
	p, err1 := filepath.Abs(path)
	d, err2 := filepath.Abs(dir)
	if err1 != nil || err2 != nil {
		return false
	}
	rel, err := filepath.Rel(d, p)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
