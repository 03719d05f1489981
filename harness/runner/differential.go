package runner

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/sidebench/sidebench/harness/scenario"
	"github.com/sidebench/sidebench/reports/render"
)

// DiffCell is one backend's counts for one scenario × policy × invariant.
type DiffCell struct {
	Ran          bool // the backend ran trials of this policy
	Trials       int
	Violations   int
	Degradations int
	Bounds       int
	// Unmet counts the pods a user-level guarantee failed (its rows only).
	Unmet int
}

// DiffRow is one line of the differential table.
type DiffRow struct {
	Scenario, Policy, Invariant string
	Cells                       []DiffCell // one per backend, in order
}

// Disagree reports whether, among the backends that ran the policy, some
// have findings of a class (violations, or degradations) and others have
// none of that class.
func (r DiffRow) Disagree() bool {
	differs := func(has func(DiffCell) bool) bool {
		with, without := 0, 0
		for _, c := range r.Cells {
			if !c.Ran {
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
	return differs(func(c DiffCell) bool { return c.Violations > 0 }) ||
		differs(func(c DiffCell) bool { return c.Degradations > 0 }) ||
		differs(func(c DiffCell) bool { return c.Unmet > 0 })
}

// Marker is the table's verdict on a row.
func (r DiffRow) Marker() string {
	if r.Disagree() {
		return "disagree"
	}
	for _, c := range r.Cells {
		if !c.Ran {
			return "not compared"
		}
	}
	return "agree"
}

func (c DiffCell) String() string {
	if !c.Ran {
		return "-"
	}
	if c.Unmet > 0 {
		return fmt.Sprintf("%d unmet", c.Unmet)
	}
	s := fmt.Sprintf("%d/%d", c.Violations, c.Degradations)
	if c.Bounds > 0 {
		s += fmt.Sprintf(" (+%d bound)", c.Bounds)
	}
	return s
}

// DiffRows builds the differential table from each backend's outcome (nil
// for a backend that did not run): per scenario × policy, one row per
// invariant with findings on some backend, or a single "all" row when no
// backend has any.
func DiffRows(scens []*scenario.Scenario, outs []*Outcome) []DiffRow {
	var out []DiffRow
	for _, s := range scens {
		name := s.Metadata.Name
		for _, g := range s.PolicyGates() {
			pol := g.String()
			ran := make([]bool, len(outs))
			trials := make([]int, len(outs))
			var order []string
			per := map[string][]DiffCell{}
			for i, o := range outs {
				if o == nil {
					continue
				}
				for _, r := range o.State.Rows {
					if r.Scenario == name && r.Policy == pol && r.Trials > 0 {
						ran[i], trials[i] = true, r.Trials
					}
				}
				for _, d := range o.Runs {
					if d.Scenario != name {
						continue
					}
					for _, ir := range d.Invariants {
						if ir.Policy != pol || ir.Violations+ir.Degradations+ir.BoundsExceeded == 0 {
							continue
						}
						if per[ir.ID] == nil {
							per[ir.ID] = make([]DiffCell, len(outs))
							order = append(order, ir.ID)
						}
						per[ir.ID][i] = DiffCell{Violations: ir.Violations, Degradations: ir.Degradations, Bounds: ir.BoundsExceeded}
					}
					// User-level guarantees: the pods each left unmet
					// (userlevel.go).
					if u := d.UserLevel; u != nil {
						for _, g := range u.Guarantees {
							c := u.Cell(pol, render.StratumAll, g.ID)
							if c.K == 0 {
								continue
							}
							if per[g.ID] == nil {
								per[g.ID] = make([]DiffCell, len(outs))
								order = append(order, g.ID)
							}
							per[g.ID][i] = DiffCell{Unmet: c.K}
						}
					}
				}
			}
			anyRan := false
			for _, r := range ran {
				anyRan = anyRan || r
			}
			if !anyRan {
				continue
			}
			mk := func(inv string, cells []DiffCell) DiffRow {
				if cells == nil {
					cells = make([]DiffCell, len(outs))
				}
				for i := range cells {
					cells[i].Ran, cells[i].Trials = ran[i], trials[i]
				}
				return DiffRow{Scenario: name, Policy: pol, Invariant: inv, Cells: cells}
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

// WriteDiffTable prints the differential table: per backend "V/D"
// (violations / degradations, bounds exceeded in parentheses), "-" where
// the backend did not run the policy.
func WriteDiffTable(w io.Writer, names []string, rows []DiffRow) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	hdr := []string{"SCENARIO", "POLICY", "INVARIANT"}
	for _, n := range names {
		hdr = append(hdr, strings.ToUpper(n)+" V/D")
	}
	hdr = append(hdr, "DIFFERENTIAL")
	fmt.Fprintln(tw, strings.Join(hdr, "\t"))
	for _, r := range rows {
		f := []string{r.Scenario, r.Policy, r.Invariant}
		for _, c := range r.Cells {
			f = append(f, c.String())
		}
		f = append(f, r.Marker())
		fmt.Fprintln(tw, strings.Join(f, "\t"))
	}
	tw.Flush()
}

// WriteDiffMarkdown writes differential.md.
func WriteDiffMarkdown(w io.Writer, names []string, scens []*scenario.Scenario, rows []DiffRow) {
	fmt.Fprintf(w, "# Differential run: %s\n\n", strings.Join(names, " vs "))
	fmt.Fprintln(w, "Same scenario files and seeds on every backend. Cells are violations/degradations")
	fmt.Fprintln(w, "(bounds exceeded in parentheses) summed over the trials; `-` where the backend did not run")
	fmt.Fprintln(w, "the policy. **disagree**: one backend has findings of a class (violations, or degradations)")
	fmt.Fprintln(w, "where another has none of that class.")
	fmt.Fprintln(w)
	for _, s := range scens {
		fmt.Fprintf(w, "- `%s` (%s), master seed %d\n", s.Metadata.Name, s.File, s.MasterSeed())
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
		for _, c := range r.Cells {
			line += " " + c.String() + " |"
		}
		m := r.Marker()
		if m == "disagree" {
			m = "**disagree**"
		}
		fmt.Fprintln(w, line+" "+m+" |")
	}
}

// DiffResult is what a differential run gave.
type DiffResult struct {
	Names   []string
	Results []*Result // nil for a backend that did not run (interrupted)
	Rows    []DiffRow
	// Markdown is differential.md's content.
	Markdown string
}

// Pass reports whether every backend's run passed.
func (r *DiffResult) Pass() bool {
	for _, res := range r.Results {
		if res == nil || !res.Pass() {
			return false
		}
	}
	return true
}

// Differential runs the same scenarios with the same seeds on each
// backend in turn (runs[i] configures backend i), one run directory per
// backend and scenario (dirOf), and compares their findings per
// invariant. A backend that holds resources (io.Closer: the local
// cluster) is closed as soon as its part is done, not held while the next
// backend runs.
func Differential(ctx context.Context, runs []Options, scens []*scenario.Scenario, dirOf func(backend string, s *scenario.Scenario) string) (*DiffResult, error) {
	dr := &DiffResult{Results: make([]*Result, len(runs))}
	outs := make([]*Outcome, len(runs))
	for i := range runs {
		o := runs[i]
		dr.Names = append(dr.Names, o.BackendName)
		if ctx.Err() != nil {
			continue
		}
		var jobs []Job
		for _, s := range scens {
			jobs = append(jobs, Job{Scenario: s, Dir: dirOf(o.BackendName, s)})
		}
		res, err := Run(ctx, o, jobs)
		if c, ok := o.Backend.(io.Closer); ok {
			if cerr := c.Close(); cerr != nil {
				o.logf("closing backend %s: %v", o.BackendName, cerr)
			}
		}
		if err != nil {
			return dr, err
		}
		dr.Results[i] = res
		outs[i] = &res.State
	}
	dr.Rows = DiffRows(scens, outs)
	var md strings.Builder
	WriteDiffMarkdown(&md, dr.Names, scens, dr.Rows)
	dr.Markdown = md.String()
	return dr, nil
}
