package compare

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/sidebench/sidebench/reports/render"
	"github.com/sidebench/sidebench/reports/stats"
)

// compareRates pairs the baseline's invariant rows with the candidates'
// (policy mapped as for latencies) and compares their Wilson intervals.
func compareRates(t *Table, runs []Run, o Options) {
	type inv struct{ policy, id string }
	rows := make([]map[inv]render.InvariantRow, len(runs))
	for j, r := range runs {
		rows[j] = map[inv]render.InvariantRow{}
		for _, x := range r.Data.Invariants {
			rows[j][inv{x.Policy, x.ID}] = x
		}
	}
	base := slices.Clone(runs[0].Data.Invariants)
	var names []string
	for _, x := range base {
		names = append(names, x.Policy)
	}
	order := policyOrder(runs[0].Data, names)
	slices.SortStableFunc(base, func(x, y render.InvariantRow) int {
		return cmp.Or(cmp.Compare(order(x.Policy), order(y.Policy)), naturalCompare(x.ID, y.ID))
	})
	lacks := make([]int, len(runs))
	for _, ra := range base {
		pb, ok := o.candidatePolicy(ra.Policy)
		if !ok {
			continue
		}
		a := ra.Rate(o.Confidence)
		row := RateRow{Policy: rowPolicy(ra.Policy, pb), ID: ra.ID, Runs: []*stats.RateSummary{&a}}
		for j := 1; j < len(runs); j++ {
			rb, ok := rows[j][inv{pb, ra.ID}]
			if !ok {
				lacks[j]++
				row.Runs = append(row.Runs, nil)
				row.Deltas = append(row.Deltas, "")
				continue
			}
			b := rb.Rate(o.Confidence)
			row.Runs = append(row.Runs, &b)
			d := "~"
			switch {
			case a.N == 0 || b.N == 0:
			case b.WilsonLo > a.WilsonHi:
				d, row.Regression = "worse", true
				who := ""
				if len(runs) > 2 {
					who = t.Runs[j].Name + " vs " + t.Runs[0].Name + ": "
				}
				t.Regressions = append(t.Regressions, fmt.Sprintf("%s%s %s: violation rate %s → %s (%d/%d → %d/%d), %v%% intervals do not overlap",
					who, row.Policy, row.ID, fmtPct(a.Rate), fmtPct(b.Rate), a.K, a.N, b.K, b.N, 100*o.Confidence))
			case b.WilsonHi < a.WilsonLo:
				d = "better"
			}
			row.Deltas = append(row.Deltas, d)
		}
		t.Rates = append(t.Rates, row)
	}
	for j := 1; j < len(runs); j++ {
		if lacks[j] > 0 {
			t.Warnings = append(t.Warnings, fmt.Sprintf("%s lacks %d invariant row(s) of %s", t.Runs[j].Name, lacks[j], t.Runs[0].Name))
		}
		only := 0
		for k := range rows[j] {
			pa, ok := o.baselinePolicy(k.policy)
			if !ok {
				continue
			}
			if _, ok := rows[0][inv{pa, k.id}]; !ok {
				only++
			}
		}
		if only > 0 {
			t.Warnings = append(t.Warnings, fmt.Sprintf("%d invariant row(s) only in %s", only, t.Runs[j].Name))
		}
	}
}
