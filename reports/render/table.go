package render

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// TableWidth is the widest line the result table prints (a terminal of
// 120 columns; CI logs wrap beyond it).
const TableWidth = 120

// tableHeader is the result table's header: the scenario is a group line
// above its policies, so that long scenario and policy names do not both
// widen every line.
var tableHeader = []string{"POLICY", "TRIALS", "PODS", "VIOL", "DEGR", "P50", "P99", "N (FAULTED)", "VERDICT"}

// WriteResultTable prints the result table of a run: per scenario a line
// with its name, then one line per policy with its trials, pods,
// violations, degradations, the pod_startup p50/p99 over the population
// every output uses (N unfaulted pods, the faulted ones counted in
// parentheses) and its verdict ("-": a baseline, measured and not judged).
// The numbers are the runner's (summary.json's "sidebench" rows). Policy
// names too long for TableWidth are shortened to "head…tail[k]" and
// listed in full under the table. Below it, every criterion that did not PASS,
// one line each, wrapped at TableWidth.
func WriteResultTable(w io.Writer, rows []StateRow) {
	cells := make([][]string, len(rows))
	for i, r := range rows {
		trials := strconv.Itoa(r.Trials)
		if r.PartialTrials > 0 {
			trials += fmt.Sprintf(" (%d partial)", r.PartialTrials)
		}
		p50, p99 := "-", "-"
		if r.PodStartupMs.N > 0 {
			p50, p99 = FmtDurationMs(r.PodStartupMs.P50), FmtDurationMs(r.PodStartupMs.P99)
		}
		cells[i] = []string{r.Policy, trials, strconv.Itoa(r.Pods), strconv.Itoa(r.Violations), strconv.Itoa(r.Degradations),
			p50, p99, fmt.Sprintf("%d (%d)", r.PodStartupMs.N, r.PodStartupMs.FaultedExcluded), r.Status}
	}
	widths := make([]int, len(tableHeader))
	measure := func(row []string, from int) {
		for j := from; j < len(row); j++ {
			widths[j] = max(widths[j], utf8.RuneCountInString(row[j]))
		}
	}
	measure(tableHeader, 0)
	for j := range cells {
		measure(cells[j], 1) // the policy column is measured once names are shortened
	}
	// The policy column gets what the others leave (names are indented
	// by two under their scenario line).
	rest := 0
	for j := 1; j < len(widths); j++ {
		rest += widths[j] + 2
	}
	budget := max(TableWidth-rest-2, len("kep753+bug:")+6)
	var legend []string
	abbrev := map[string]string{}
	for i, r := range rows {
		name := r.Policy
		if utf8.RuneCountInString(name) > budget {
			a, ok := abbrev[name]
			if !ok {
				legend = append(legend, name)
				// Keep the head and the (most distinctive) tail.
				rs, tag := []rune(name), fmt.Sprintf("[%d]", len(legend))
				head := budget / 3
				tail := budget - head - 1 - utf8.RuneCountInString(tag)
				a = string(rs[:head]) + "…" + string(rs[len(rs)-tail:]) + tag
				abbrev[name] = a
			}
			name = a
		}
		cells[i][0] = "  " + name
		widths[0] = max(widths[0], utf8.RuneCountInString(cells[i][0]))
	}
	line := func(row []string) { fmt.Fprintln(w, AlignedLine(widths, row)) }
	line(tableHeader)
	scen := ""
	for i, r := range rows {
		if i == 0 || r.Scenario != scen {
			scen = r.Scenario
			fmt.Fprintln(w, scen)
		}
		line(cells[i])
	}
	for i, name := range legend {
		fmt.Fprintln(w, Wrap(fmt.Sprintf("[%d] %s", i+1, name), TableWidth, "    "))
	}
	for _, r := range rows {
		for _, c := range r.Criteria {
			if c.Status == StatusPass {
				continue
			}
			s := fmt.Sprintf("%s %s/%s %s: %s", c.Status, r.Scenario, r.Policy, c.Name, c.Message)
			if c.MoreTrialsNeeded > 0 {
				s += fmt.Sprintf(" (≈%d more trials needed)", c.MoreTrialsNeeded)
			}
			fmt.Fprintln(w, Wrap(s, TableWidth, "  "))
		}
	}
}

// AlignedLine writes a table row: each cell but the last padded to its
// column's width (widths[j], in runes) plus two spaces, no trailing space.
// The result table and graduate's table print their rows with it.
func AlignedLine(widths []int, row []string) string {
	var b strings.Builder
	for j, c := range row {
		b.WriteString(c)
		if j < len(row)-1 {
			b.WriteString(strings.Repeat(" ", widths[j]-utf8.RuneCountInString(c)+2))
		}
	}
	return strings.TrimRight(b.String(), " ")
}

// Wrap breaks s at spaces into lines of at most width runes, indenting
// the continuation lines.
func Wrap(s string, width int, indent string) string {
	var b strings.Builder
	n := 0
	for i, word := range strings.Fields(s) {
		wl := utf8.RuneCountInString(word)
		if i > 0 {
			if n+1+wl > width {
				b.WriteString("\n" + indent)
				n = len(indent)
			} else {
				b.WriteByte(' ')
				n++
			}
		}
		b.WriteString(word)
		n += wl
	}
	return b.String()
}

// FmtDurationMs renders milliseconds as a rounded duration ("1.234s",
// "850ms"), as the result table prints latencies.
func FmtDurationMs(v float64) string {
	d := time.Duration(v * 1e6)
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.String()
}
