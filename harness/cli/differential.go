package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/sidebench/sidebench/harness/progress"
	"github.com/sidebench/sidebench/harness/scenario"
)

// fileDifferential is the differential table of `run --backend a,b`.
const fileDifferential = "differential.md"

// diffCell is one backend's counts for one scenario × policy × invariant.
type diffCell struct {
	ran          bool // the backend ran trials of this policy
	trials       int
	violations   int
	degradations int
	bounds       int
}

// diffRow is one line of the differential table.
type diffRow struct {
	Scenario, Policy, Invariant string
	cells                       []diffCell // one per backend, in --backend order
}

// disagree reports whether, among the backends that ran the policy, some
// have findings of a class (violations, or degradations) and others have
// none of that class.
func (r diffRow) disagree() bool {
	differs := func(has func(diffCell) bool) bool {
		with, without := 0, 0
		for _, c := range r.cells {
			if !c.ran {
				continue
			}
			if has(c) {
				with++
			} else {
				without++
			}
		}
		return with > 0 && without > 0
	}
	return differs(func(c diffCell) bool { return c.violations > 0 }) ||
		differs(func(c diffCell) bool { return c.degradations > 0 })
}

// runDifferential runs the same scenarios (same seeds) on every backend of
// names, one after the other, writing each backend's run directories under
// <out>/<backend>, then prints and writes the differential table. The exit
// code follows the usual rules over every backend's results.
func runDifferential(ctx context.Context, streams IOStreams, f *runFlags, todo []*scenario.Scenario, names []string,
	backends map[string]Backend, rep *progress.Reporter, stamp string) error {
	base := f.out
	if base == "" {
		n := todo[0].Metadata.Name
		if len(todo) > 1 {
			n = "differential"
		}
		base = filepath.Join("reports", "runs", stamp+"-"+n)
	}
	results := make([]*backendResult, len(names))
	var firstErr error
	for i, name := range names {
		if ctx.Err() != nil {
			break
		}
		res, err := runOnBackend(ctx, streams, f, todo, name, backends, rep, func(s *scenario.Scenario) string {
			if len(todo) > 1 {
				return filepath.Join(base, name, s.Metadata.Name)
			}
			return filepath.Join(base, name)
		})
		results[i] = res
		if err != nil {
			firstErr = err
			break
		}
		// Release a backend's resources (the local cluster) as soon as
		// its part is done (not held while the next backend runs).
		if c, ok := backends[name].(interface{ Close() error }); ok {
			delete(backends, name)
			if err := c.Close(); err != nil {
				fmt.Fprintf(streams.ErrOut, "sidebench: closing backend %s: %v\n", name, err)
			}
		}
	}
	rep.Close()
	if firstErr != nil {
		return firstErr
	}
	var all []row
	pass, partial := true, false
	var dirs []string
	for i, res := range results {
		if res == nil {
			partial = true
			continue
		}
		for _, r := range res.rows {
			r.Scenario = names[i] + "/" + r.Scenario
			all = append(all, r)
		}
		pass = pass && res.pass
		partial = partial || res.partial
		dirs = append(dirs, res.dirs...)
	}
	writeTable(streams.Out, all)
	fmt.Fprintln(streams.Out)
	rows := diffRows(todo, names, results)
	writeDiffTable(streams.Out, names, rows)
	if err := os.MkdirAll(base, 0o755); err != nil {
		return asInternal(err)
	}
	var md strings.Builder
	writeDiffMarkdown(&md, names, todo, rows)
	path := filepath.Join(base, fileDifferential)
	if err := writeAtomic(path, []byte(md.String())); err != nil {
		return asInternal(err)
	}
	if !f.quiet {
		for _, d := range dirs {
			fmt.Fprintf(streams.ErrOut, "sidebench: wrote %s\n", d)
		}
		fmt.Fprintf(streams.ErrOut, "sidebench: wrote %s\n", path)
	}
	res := &backendResult{pass: pass, partial: partial}
	return res.exit(ctx, streams)
}

// diffRows builds the table: per scenario × policy, one row per invariant
// with findings (violations, degradations or bounds) on some backend, or a
// single "all" row when no backend has any.
func diffRows(todo []*scenario.Scenario, names []string, results []*backendResult) []diffRow {
	var out []diffRow
	for _, s := range todo {
		for _, g := range s.PolicyGates() {
			pol := g.String()
			key := rowKey(s.Metadata.Name, pol)
			ran := make([]bool, len(names))
			trials := make([]int, len(names))
			var order []string
			per := map[string][]diffCell{}
			for i, res := range results {
				if res == nil {
					continue
				}
				for _, r := range res.rows {
					if r.Scenario == s.Metadata.Name && r.Policy == pol && r.Trials > 0 {
						ran[i], trials[i] = true, r.Trials
					}
				}
				for _, ir := range res.inv[key] {
					if ir.Violations+ir.Degradations+ir.Bounds == 0 {
						continue
					}
					if per[ir.ID] == nil {
						per[ir.ID] = make([]diffCell, len(names))
						order = append(order, ir.ID)
					}
					per[ir.ID][i] = diffCell{violations: ir.Violations, degradations: ir.Degradations, bounds: ir.Bounds}
				}
			}
			anyRan := false
			for _, r := range ran {
				anyRan = anyRan || r
			}
			if !anyRan {
				continue
			}
			mk := func(inv string, cells []diffCell) diffRow {
				if cells == nil {
					cells = make([]diffCell, len(names))
				}
				for i := range cells {
					cells[i].ran, cells[i].trials = ran[i], trials[i]
				}
				return diffRow{Scenario: s.Metadata.Name, Policy: pol, Invariant: inv, cells: cells}
			}
			if len(order) == 0 {
				out = append(out, mk("all", nil))
				continue
			}
			for _, id := range order {
				out = append(out, mk(id, per[id]))
			}
		}
	}
	return out
}

func (c diffCell) String() string {
	if !c.ran {
		return "-"
	}
	s := fmt.Sprintf("%d/%d", c.violations, c.degradations)
	if c.bounds > 0 {
		s += fmt.Sprintf(" (+%d bound)", c.bounds)
	}
	return s
}

func diffMarker(r diffRow) string {
	if r.disagree() {
		return "disagree"
	}
	for _, c := range r.cells {
		if !c.ran {
			return "not compared"
		}
	}
	return "agree"
}

// writeDiffTable prints the differential table: per backend "V/D"
// (violations / degradations, bounds exceeded in parentheses), "-" where
// the backend did not run the policy.
func writeDiffTable(w io.Writer, names []string, rows []diffRow) {
	tw := newTabWriter(w)
	hdr := []string{"SCENARIO", "POLICY", "INVARIANT"}
	for _, n := range names {
		hdr = append(hdr, strings.ToUpper(n)+" V/D")
	}
	hdr = append(hdr, "DIFFERENTIAL")
	fmt.Fprintln(tw, strings.Join(hdr, "\t"))
	for _, r := range rows {
		f := []string{r.Scenario, r.Policy, r.Invariant}
		for _, c := range r.cells {
			f = append(f, c.String())
		}
		f = append(f, diffMarker(r))
		fmt.Fprintln(tw, strings.Join(f, "\t"))
	}
	tw.Flush()
}

func writeDiffMarkdown(w io.Writer, names []string, todo []*scenario.Scenario, rows []diffRow) {
	fmt.Fprintf(w, "# Differential run: %s\n\n", strings.Join(names, " vs "))
	fmt.Fprintln(w, "Same scenario files and seeds on every backend. Cells are violations/degradations")
	fmt.Fprintln(w, "(bounds exceeded in parentheses) summed over the trials; `-` where the backend did not run")
	fmt.Fprintln(w, "the policy. **disagree**: one backend has findings of a class (violations, or degradations)")
	fmt.Fprintln(w, "where another has none of that class.")
	fmt.Fprintln(w)
	for _, s := range todo {
		seed := scenario.DefaultSeed
		if s.Seed != nil {
			seed = *s.Seed
		}
		fmt.Fprintf(w, "- `%s` (%s), master seed %d\n", s.Metadata.Name, s.File, seed)
	}
	fmt.Fprintln(w)
	hdr := "| scenario | policy | invariant |"
	sep := "|---|---|---|"
	for _, n := range names {
		hdr += " " + n + " V/D |"
		sep += "---|"
	}
	fmt.Fprintln(w, hdr+" differential |")
	fmt.Fprintln(w, sep+"---|")
	for _, r := range rows {
		line := fmt.Sprintf("| %s | %s | %s |", r.Scenario, r.Policy, r.Invariant)
		for _, c := range r.cells {
			line += " " + c.String() + " |"
		}
		m := diffMarker(r)
		if m == "disagree" {
			m = "**disagree**"
		}
		fmt.Fprintln(w, line+" "+m+" |")
	}
}
