// Package compare compares sidebench runs the way benchstat compares
// benchmark results: the first run is the baseline, every other run is
// compared with it, and each latency metric of each policy gets p50, p90
// and p99 rows with the relative change and a bootstrap confidence
// interval of that change, a geomean row closing the table.
//
// The test behind "~" depends on how the runs relate:
//
//   - Paired: when a candidate ran the same scenario with the same seeds,
//     its pods are the baseline's pods (same arrivals, same lifetimes,
//     common random numbers; matched by scenario, policy, trial, seed and
//     pod name). The test is then a Wilcoxon signed-rank test on the
//     per-pod differences, with the count of pods that got slower, faster
//     or stayed equal, and the bootstrap resamples pods, keeping each pair
//     together.
//   - Unpaired otherwise (different seeds): a Mann–Whitney U test
//     (golang.org/x/perf/benchmath's AssumeNothing) and an independent
//     bootstrap of each side.
//
// p-values are Holm-corrected per candidate run over the distinct samples
// compared: metrics whose samples are identical (create_to_ready equals
// pod_startup pod for pod on most workloads; two policies that behave
// alike) are one test, not several, and tests that cannot reject (no value
// differs) are left out of the family.
//
// A regression is a quantile whose change is significant (the test after
// Holm), whose interval lies above 0 and whose change exceeds
// Options.Threshold; or a violation rate whose Wilson interval lies entirely
// above the baseline's. The CLI exits 1 when Table.RegressionFound.
//
// Load reads a run directory (I/O at the edge); Compare is pure.
package compare

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/sidebench/sidebench/reports/render"
	"github.com/sidebench/sidebench/reports/stats"
)

// Options control a comparison. The zero value is benchstat's defaults, a
// 5% threshold, 95% intervals and 2000 bootstrap resamples.
type Options struct {
	// Alpha is the significance level (0: 0.05).
	Alpha float64
	// Threshold is the relative increase of a quantile, as a fraction (0.05
	// = 5%), beyond which a significant change counts as a regression.
	// 0 means 0.05; a negative value means any significant increase.
	Threshold float64
	// Confidence is the level of the bootstrap intervals and the rate
	// bounds (0: 0.95).
	Confidence float64
	// Resamples is the number of bootstrap resamples (0: 2000).
	Resamples int
	// Seed seeds the bootstrap (0: 1). Each row derives its own stream
	// from it, so the table is a pure function of its inputs.
	Seed uint64
	// Metrics restricts the latency metrics compared (empty: all).
	Metrics []string
	// PolicyA and PolicyB, if both set, compare policy PolicyA of the first
	// run with policy PolicyB of every other run (e.g. none against kep753
	// of one run: the sidecar overhead). Otherwise policies are matched by
	// name.
	PolicyA, PolicyB string
	// Force compares runs of different scenarios (otherwise an error).
	Force bool
}

// DefaultResamples is the bootstrap resample count of a comparison: enough
// for stable 95% percentile intervals (Efron & Tibshirani: ≥ 1000), and
// a pairwise bootstrap of 42,000 pods stays under a second per row.
const DefaultResamples = 2000

// MinPairedFraction is the share of each side's samples that must find a
// partner for a comparison to be paired.
const MinPairedFraction = 0.9

// Quantiles are the rows of each metric.
var Quantiles = []float64{0.50, 0.90, 0.99}

func (o Options) withDefaults() Options {
	if o.Alpha <= 0 {
		o.Alpha = 0.05
	}
	if o.Threshold == 0 {
		o.Threshold = 0.05
	}
	if o.Threshold < 0 {
		o.Threshold = 0
	}
	if o.Confidence <= 0 || o.Confidence >= 1 {
		o.Confidence = 0.95
	}
	if o.Resamples <= 0 {
		o.Resamples = DefaultResamples
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	return o
}

// Run is one input of a comparison: what summary.json and pods.jsonl of a
// run directory hold.
type Run struct {
	// Path names the run in the header (a directory or file).
	Path string
	// Data is the run's summary: scenario, meta, policies and invariant
	// rows. Its latency rows are not used: samples come from Pods.
	Data render.RunData
	// Pods are the per-pod latencies, faulted pods already left out.
	Pods []Pod
	// Warnings are problems found while loading (shown verbatim).
	Warnings []string
}

// Pod is one pod's latencies in one run.
type Pod struct {
	Key         PodKey
	LatenciesMs map[string]float64
}

// PodKey identifies a pod lifecycle across runs: under common random
// numbers the same key is the same pod with the same workload draws.
type PodKey struct {
	Scenario string
	Policy   string
	Trial    int
	Seed     uint64
	Pod      string
}

// RunLabel identifies one input of a comparison.
type RunLabel struct {
	// Name is the column name: A, B, C, ...
	Name         string `json:"name"`
	Path         string `json:"path,omitempty"`
	Scenario     string `json:"scenario"`
	ScenarioHash string `json:"scenarioHash,omitempty"`
	Seed         uint64 `json:"seed"`
	Trials       int    `json:"trials"`
	Backend      string `json:"backend"`
	Version      string `json:"version"`
	Partial      bool   `json:"partial"`
}

// LatencyRow is one policy × metric: its comparison with every candidate.
type LatencyRow struct {
	// Policy is the baseline's policy name (PolicyA→PolicyB when they
	// differ); Metric a harness/metrics name.
	Policy string
	Metric string
	// Base holds the baseline's nearest-rank quantiles (ms) over all its
	// samples, one per Quantiles entry; N is their number.
	Base []float64
	N    int
	// SameAs names the earlier row ("policy metric") whose samples equal
	// this row's in every run: the row is the same test and is shown folded
	// into that one.
	SameAs string
	// Vs holds one comparison per candidate run (Table.Runs[1:]), nil
	// where the candidate lacks the policy × metric.
	Vs []*Versus
}

// Name is "policy metric".
func (r *LatencyRow) Name() string { return r.Policy + " " + r.Metric }

// Versus compares one row's samples of a candidate with the baseline's.
type Versus struct {
	// Run indexes Table.Runs.
	Run int
	// Paired is true when the pods were matched; N1 and N2 are then both
	// the number of pairs, else the sample sizes of baseline and candidate.
	Paired bool
	N1, N2 int
	// Unmatched counts samples of either side left out of a paired test.
	Unmatched int
	// Slower, Faster and Equal count pairs whose candidate value is above,
	// below or equal to the baseline's (paired only); SignP is the exact
	// sign test on Slower against Faster.
	Slower, Faster, Equal int
	SignP                 float64
	// Test names the test: "wilcoxon-signed-rank exact|normal" or
	// "mann-whitney-u".
	Test string
	// P is the Holm-adjusted p-value, PRaw the test's own. Tested is false
	// when the test could not reject whatever the labels (no value
	// differs): it is then out of the Holm family, and P is 1.
	P, PRaw     float64
	Tested      bool
	Significant bool
	// SameAs names the earlier row with identical samples in this
	// comparison (its test is this one's; Holm counts it once).
	SameAs    string
	Quantiles []QuantileCell
	Warnings  []string
}

// QuantileCell is one quantile of one row in one comparison.
type QuantileCell struct {
	Q float64
	// B is the candidate's nearest-rank quantile (ms) over all its samples.
	B float64
	// Change is the relative change of the quantile, (B − A)/A as a
	// fraction (over the matched pods when paired), with its percentile
	// bootstrap interval [Lo, Hi].
	Change, Lo, Hi float64
	// Delta is the benchstat cell: "~" unless the test is significant and
	// the interval excludes 0, else the change, e.g. "+7.44%".
	Delta      string
	Regression bool
}

// GeomeanRow is the geometric mean of one quantile over the distinct rows
// every run has (benchstat's summary row).
type GeomeanRow struct {
	Q float64
	// Values holds one geomean per run (ms), Changes one relative change
	// per candidate.
	Values  []float64
	Changes []float64
	// Rows is the number of rows in the mean.
	Rows int
}

// RateRow compares one policy × invariant's violation rate.
type RateRow struct {
	Policy string
	ID     string
	// Runs holds one rate per run (nil where the run lacks the row);
	// Deltas one cell per candidate: "~" when the Wilson intervals overlap,
	// "worse" when the candidate's lies entirely above the baseline's,
	// "better" when entirely below.
	Runs       []*stats.RateSummary
	Deltas     []string
	Regression bool
}

// Table is the outcome of Compare.
type Table struct {
	Runs       []RunLabel
	Alpha      float64
	Threshold  float64
	Confidence float64
	Resamples  int
	Latencies  []LatencyRow
	Geomean    []GeomeanRow
	Rates      []RateRow
	// RegressionFound is true if any row is a regression; Regressions
	// says which, one line each.
	RegressionFound bool
	Regressions     []string
	Warnings        []string
}

// ScenarioMismatchError is returned by Compare for runs of different
// scenarios without Options.Force: their pods, policies and metrics do not
// correspond, and a table of them would be noise.
type ScenarioMismatchError struct {
	Base, Other   string
	BaseScenario  string
	OtherScenario string
}

func (e *ScenarioMismatchError) Error() string {
	return fmt.Sprintf("%s is scenario %q, %s is %q: runs of different scenarios do not compare (use --force to compare them anyway)",
		e.Base, e.BaseScenario, e.Other, e.OtherScenario)
}

func label(name string, r Run) RunLabel {
	d := r.Data
	return RunLabel{Name: name, Path: r.Path, Scenario: d.Scenario, ScenarioHash: d.Meta.ScenarioHash, Seed: d.Meta.Seed,
		Trials: d.Meta.Trials, Backend: d.Meta.Backend, Version: d.Meta.Version, Partial: d.Meta.Partial}
}

// colName is the column name of run i: A, B, ..., Z, R27, ...
func colName(i int) string {
	if i < 26 {
		return string(rune('A' + i))
	}
	return fmt.Sprintf("R%d", i+1)
}

// Compare compares runs[1:] (candidates) with runs[0] (the baseline).
//
// Latency rows follow the baseline's policy order and harness/metrics'
// metric order; a policy × metric missing from a candidate is a warning.
// Runs of different scenarios are a *ScenarioMismatchError unless
// o.Force; the same scenario with another content hash is a warning (the
// comparison then measures that change).
func Compare(runs []Run, opts Options) (Table, error) {
	if len(runs) < 2 {
		return Table{}, errors.New("need at least two runs to compare")
	}
	o := opts.withDefaults()
	t := Table{Alpha: o.Alpha, Threshold: o.Threshold, Confidence: o.Confidence, Resamples: o.Resamples}
	for i, r := range runs {
		t.Runs = append(t.Runs, label(colName(i), r))
	}
	base := t.Runs[0]
	for _, r := range runs {
		t.Warnings = append(t.Warnings, r.Warnings...)
	}
	for i, l := range t.Runs {
		if l.Partial {
			t.Warnings = append(t.Warnings, fmt.Sprintf("run %s is partial: it covers only what was recorded", l.Name))
		}
		if i == 0 {
			continue
		}
		switch {
		case l.Scenario != base.Scenario && !o.Force:
			return Table{}, &ScenarioMismatchError{Base: runName(base), Other: runName(l), BaseScenario: base.Scenario, OtherScenario: l.Scenario}
		case l.Scenario != base.Scenario:
			t.Warnings = append(t.Warnings, fmt.Sprintf("runs of different scenarios (%s: %q, %s: %q), compared by policy and metric names only (--force)",
				base.Name, base.Scenario, l.Name, l.Scenario))
		case l.ScenarioHash != "" && base.ScenarioHash != "" && l.ScenarioHash != base.ScenarioHash:
			t.Warnings = append(t.Warnings, fmt.Sprintf("scenario %q differs between %s and %s (scenarioHash %.12s… vs %.12s…): the comparison measures that change",
				l.Scenario, base.Name, l.Name, base.ScenarioHash, l.ScenarioHash))
		}
	}
	if o.PolicyA != "" && o.PolicyB != "" {
		if have := policiesOf(runs[0]); !slices.Contains(have, o.PolicyA) {
			return Table{}, fmt.Errorf("--policy-a %s: no such policy in %s (have %v)", o.PolicyA, runName(base), have)
		}
		for i, r := range runs[1:] {
			if have := policiesOf(r); !slices.Contains(have, o.PolicyB) {
				return Table{}, fmt.Errorf("--policy-b %s: no such policy in %s (have %v)", o.PolicyB, runName(t.Runs[i+1]), have)
			}
		}
	}
	compareLatencies(&t, runs, o)
	compareRates(&t, runs, o)
	t.RegressionFound = len(t.Regressions) > 0
	return t, nil
}

// policiesOf lists the policies a run has: its declared ones, then any
// other that a pod or invariant row names.
func policiesOf(r Run) []string {
	ps := slices.Clone(r.Data.Policies)
	add := func(p string) {
		if !slices.Contains(ps, p) {
			ps = append(ps, p)
		}
	}
	for _, p := range r.Pods {
		add(p.Key.Policy)
	}
	for _, x := range r.Data.Invariants {
		add(x.Policy)
	}
	return ps
}

func runName(l RunLabel) string {
	if l.Path != "" {
		return l.Path
	}
	return "run " + l.Name
}

// candidatePolicy maps a baseline policy to the candidates' (ok false: the
// policy is not compared).
func (o Options) candidatePolicy(pa string) (pb string, ok bool) {
	if o.PolicyA != "" && o.PolicyB != "" {
		return o.PolicyB, pa == o.PolicyA
	}
	return pa, true
}

// baselinePolicy maps a candidate's policy back to the baseline's (ok
// false: the candidate policy is not compared).
func (o Options) baselinePolicy(pb string) (pa string, ok bool) {
	if o.PolicyA != "" && o.PolicyB != "" {
		return o.PolicyA, pb == o.PolicyB
	}
	return pb, true
}

func rowPolicy(pa, pb string) string {
	if pa == pb {
		return pa
	}
	return pa + "→" + pb
}

// policyOrder returns a ranking function: d's policy order, then the
// other names given, sorted; unknown last.
func policyOrder(d render.RunData, more []string) func(string) int {
	ps := slices.Clone(d.Policies)
	var extra []string
	for _, p := range more {
		if !slices.Contains(ps, p) && !slices.Contains(extra, p) {
			extra = append(extra, p)
		}
	}
	slices.Sort(extra)
	ps = append(ps, extra...)
	return func(p string) int {
		if i := slices.Index(ps, p); i >= 0 {
			return i
		}
		return len(ps)
	}
}

var knownMetrics = []string{"pod_startup", "create_to_initialized", "create_to_ready", "sidecar_gate", "deletion_to_exited", "job_completion"}

func metricIndex(m string) int {
	if i := slices.Index(knownMetrics, m); i >= 0 {
		return i
	}
	return len(knownMetrics)
}

// naturalCompare orders IDs with embedded numbers numerically (S2 < S10).
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		if isDigit(a[0]) && isDigit(b[0]) {
			i, j := digits(a), digits(b)
			na, nb := trimZeros(a[:i]), trimZeros(b[:j])
			if c := cmp.Or(cmp.Compare(len(na), len(nb)), cmp.Compare(na, nb), cmp.Compare(i, j)); c != 0 {
				return c
			}
			a, b = a[i:], b[j:]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func digits(s string) int {
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}

func trimZeros(s string) string {
	for len(s) > 1 && s[0] == '0' {
		s = s[1:]
	}
	return s
}
