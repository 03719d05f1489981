package compare

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"

	"golang.org/x/perf/benchmath"

	"github.com/sidebench/sidebench/reports/stats"
)

// matchKey is PodKey without the policy: with --policy-a/--policy-b the
// same pod under two policies of one run is a pair too (the policies of a
// trial share its seed).
type matchKey struct {
	scenario string
	trial    int
	seed     uint64
	pod      string
}

type sample struct {
	key matchKey
	v   float64
}

type rowKey struct{ policy, metric string }

// samplesOf groups a run's pod latencies by policy and metric, each list
// in pod-key order (so that everything derived from it is deterministic).
func samplesOf(r Run) map[rowKey][]sample {
	out := map[rowKey][]sample{}
	for _, p := range r.Pods {
		mk := matchKey{p.Key.Scenario, p.Key.Trial, p.Key.Seed, p.Key.Pod}
		for m, v := range p.LatenciesMs {
			k := rowKey{p.Key.Policy, m}
			out[k] = append(out[k], sample{mk, v})
		}
	}
	for _, s := range out {
		slices.SortStableFunc(s, func(x, y sample) int {
			return cmp.Or(cmp.Compare(x.key.scenario, y.key.scenario), cmp.Compare(x.key.trial, y.key.trial),
				cmp.Compare(x.key.seed, y.key.seed), cmp.Compare(x.key.pod, y.key.pod))
		})
	}
	return out
}

func values(s []sample) []float64 {
	out := make([]float64, len(s))
	for i := range s {
		out[i] = s[i].v
	}
	return out
}

// quantilesOf returns the nearest-rank Quantiles of x (NaN when empty).
func quantilesOf(x []float64) []float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	out := make([]float64, len(Quantiles))
	for i, q := range Quantiles {
		out[i] = stats.PercentileSorted(s, 100*q)
	}
	return out
}

// rowSeed derives a row's bootstrap stream from the comparison's seed, so
// that adding a run or a metric leaves the other rows' intervals alone.
func rowSeed(seed uint64, policy, metric string, run int) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%s\x00%d", policy, metric, run)
	return seed ^ h.Sum64()
}

// signature is what makes two comparisons the same test: the samples fed
// to it (pairs in pod order when paired, sorted values otherwise).
type signature struct {
	paired bool
	a, b   []float64
}

func (s *signature) equal(o *signature) bool {
	return s.paired == o.paired && slices.Equal(s.a, o.a) && slices.Equal(s.b, o.b)
}

func compareLatencies(t *Table, runs []Run, o Options) {
	idx := make([]map[rowKey][]sample, len(runs))
	for i, r := range runs {
		idx[i] = samplesOf(r)
	}
	want := func(m string) bool { return len(o.Metrics) == 0 || slices.Contains(o.Metrics, m) }
	var keys []rowKey
	var names []string
	for k := range idx[0] {
		keys = append(keys, k)
		names = append(names, k.policy)
	}
	order := policyOrder(runs[0].Data, names)
	slices.SortFunc(keys, func(x, y rowKey) int {
		return cmp.Or(cmp.Compare(order(x.policy), order(y.policy)), cmp.Compare(x.policy, y.policy),
			cmp.Compare(metricIndex(x.metric), metricIndex(y.metric)), cmp.Compare(x.metric, y.metric))
	})
	lacks := make([][]string, len(runs))
	sigs := make([][]signature, len(runs)) // per candidate, per row
	for j := range sigs {
		sigs[j] = []signature{}
	}
	for _, k := range keys {
		pb, ok := o.candidatePolicy(k.policy)
		if !ok || !want(k.metric) {
			continue
		}
		a := idx[0][k]
		av := values(a)
		row := LatencyRow{Policy: rowPolicy(k.policy, pb), Metric: k.metric, N: len(a), Base: quantilesOf(av), Vs: make([]*Versus, len(runs)-1)}
		for j := 1; j < len(runs); j++ {
			b, ok := idx[j][rowKey{pb, k.metric}]
			if !ok {
				lacks[j] = append(lacks[j], row.Name())
				sigs[j] = append(sigs[j], signature{})
				continue
			}
			v, sig := versus(a, b, j, o)
			row.Vs[j-1] = v
			sigs[j] = append(sigs[j], sig)
		}
		t.Latencies = append(t.Latencies, row)
	}
	for j := 1; j < len(runs); j++ {
		if len(lacks[j]) > 0 {
			t.Warnings = append(t.Warnings, fmt.Sprintf("%s lacks %d latency row(s) of %s: %s", t.Runs[j].Name, len(lacks[j]), t.Runs[0].Name, list(lacks[j])))
		}
		var only []string
		for k := range idx[j] {
			pa, ok := o.baselinePolicy(k.policy)
			if !ok {
				continue
			}
			if _, ok := idx[0][rowKey{pa, k.metric}]; !ok && want(k.metric) {
				only = append(only, k.policy+" "+k.metric)
			}
		}
		if len(only) > 0 {
			slices.Sort(only)
			t.Warnings = append(t.Warnings, fmt.Sprintf("%d latency row(s) only in %s: %s", len(only), t.Runs[j].Name, list(only)))
		}
		fold(t, j, sigs[j])
		// One bootstrap per distinct test: folded rows show the very same
		// interval (one number, one place) and cost nothing.
		for i := range t.Latencies {
			r := &t.Latencies[i]
			if v := r.Vs[j-1]; v != nil && v.SameAs == "" {
				bootstrap(v, &sigs[j][i], o, rowSeed(o.Seed, r.Policy, r.Metric, j))
			}
		}
		for i := range t.Latencies {
			if v := t.Latencies[i].Vs[j-1]; v != nil && v.SameAs != "" {
				rep := t.row(v.SameAs).Vs[j-1]
				for qi := range v.Quantiles {
					c, rc := &v.Quantiles[qi], &rep.Quantiles[qi]
					c.Change, c.Lo, c.Hi = rc.Change, rc.Lo, rc.Hi
				}
			}
		}
		holm(t, j, o.Alpha)
	}
	foldRows(t)
	// The p99 caveat, once: below the sample size at which the order
	// statistics bound a p99 at all, its bootstrap interval is too narrow
	// (the resampled p99 cannot exceed the sample maximum).
	need := stats.MinSamplesForCI(Quantiles[len(Quantiles)-1], o.Confidence)
	for i := range t.Latencies {
		if r := &t.Latencies[i]; r.N < need {
			t.Warnings = append(t.Warnings, fmt.Sprintf("p%g intervals of rows with fewer than %d samples (the smallest here: n=%d) undercover: read them as indicative",
				100*Quantiles[len(Quantiles)-1], need, minN(t)))
			break
		}
	}
	for i := range t.Latencies {
		r := &t.Latencies[i]
		for _, v := range r.Vs {
			if v != nil {
				decide(t, r, v, o)
			}
		}
	}
	geomean(t, len(runs))
}

// minN is the smallest sample size of any row and run.
func minN(t *Table) int {
	n := math.MaxInt
	for i := range t.Latencies {
		r := &t.Latencies[i]
		n = min(n, r.N)
		for _, v := range r.Vs {
			if v != nil {
				n = min(n, v.N2)
			}
		}
	}
	return n
}

// row returns the row named "policy metric".
func (t *Table) row(name string) *LatencyRow {
	for i := range t.Latencies {
		if t.Latencies[i].Name() == name {
			return &t.Latencies[i]
		}
	}
	return nil
}

// list renders names for a warning, at most 6 of them.
func list(names []string) string {
	if len(names) <= 6 {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:6], ", ") + fmt.Sprintf(", … (%d more)", len(names)-6)
}

// versus compares one row of a candidate with the baseline: paired when
// at least MinPairedFraction of each side's pods find their partner.
func versus(a, b []sample, run int, o Options) (*Versus, signature) {
	v := &Versus{Run: run}
	pos := make(map[matchKey]int, len(b))
	for i, s := range b {
		if _, dup := pos[s.key]; dup {
			pos[s.key] = -1 // the same pod twice: not a usable partner
			continue
		}
		pos[s.key] = i
	}
	var ma, mb []float64
	for _, s := range a {
		if i, ok := pos[s.key]; ok && i >= 0 {
			ma = append(ma, s.v)
			mb = append(mb, b[i].v)
			pos[s.key] = -1
		}
	}
	n := len(ma)
	bv := values(b)
	bq := quantilesOf(bv)
	var sig signature
	if n > 0 && float64(n) >= MinPairedFraction*float64(len(a)) && float64(n) >= MinPairedFraction*float64(len(b)) {
		w := stats.WilcoxonSignedRank(ma, mb)
		v.Paired, v.N1, v.N2 = true, n, n
		v.Unmatched = len(a) + len(b) - 2*n
		v.Slower, v.Faster, v.Equal, v.SignP = w.Up, w.Down, w.Equal, w.SignP
		v.PRaw, v.Tested = w.P, !w.Degenerate && !math.IsNaN(w.P)
		v.Test = "wilcoxon-signed-rank normal"
		if w.Exact {
			v.Test = "wilcoxon-signed-rank exact"
		}
		if v.Tested {
			v.Warnings = append(v.Warnings, w.Warnings...) // "no pair differs" is in the test cell
		}
		if v.Unmatched > 0 {
			v.Warnings = append(v.Warnings, fmt.Sprintf("paired on %d pods: %d of %d and %d of %d without a partner left out (faulted in one run only, or the metric missing)",
				n, len(a)-n, len(a), len(b)-n, len(b)))
		}
		sig = signature{paired: true, a: ma, b: mb}
	} else {
		av := values(a)
		v.N1, v.N2 = len(a), len(b)
		v.Test = "mann-whitney-u"
		th := &benchmath.Thresholds{CompareAlpha: o.Alpha}
		c := benchmath.AssumeNothing.Compare(benchmath.NewSample(slices.Clone(av), th), benchmath.NewSample(slices.Clone(bv), th))
		v.PRaw = c.P
		v.Tested = !allEqual(av, bv)
		for _, w := range c.Warnings {
			if v.Tested {
				v.Warnings = append(v.Warnings, w.Error())
			}
		}
		sa, sb := slices.Clone(av), slices.Clone(bv)
		slices.Sort(sa)
		slices.Sort(sb)
		sig = signature{a: sa, b: sb}
	}
	for i, q := range Quantiles {
		v.Quantiles = append(v.Quantiles, QuantileCell{Q: q, B: bq[i], Change: math.NaN(), Lo: math.Inf(-1), Hi: math.Inf(1)})
	}
	return v, sig
}

// bootstrap fills the changes of v and their intervals from the samples
// of its test (sig), one stream per row.
func bootstrap(v *Versus, sig *signature, o Options, seed uint64) {
	var changes []stats.Summary
	if sig.paired {
		changes = stats.BootstrapPairedQuantileChange(sig.a, sig.b, Quantiles, o.Confidence, o.Resamples, seed)
	} else {
		for i, q := range Quantiles {
			changes = append(changes, stats.BootstrapQuantileChange(sig.a, sig.b, q, o.Confidence, o.Resamples, seed+uint64(i)))
		}
	}
	for i, c := range changes {
		q := &v.Quantiles[i]
		q.Change, q.Lo, q.Hi = c.Center, c.Lo, c.Hi
		for _, w := range c.Warnings {
			if !slices.Contains(v.Warnings, w) {
				v.Warnings = append(v.Warnings, w)
			}
		}
	}
}

// allEqual reports whether every value of a and b is the same: no test
// can reject then, whatever the labels.
func allEqual(a, b []float64) bool {
	all := append(slices.Clone(a), b...)
	return len(all) == 0 || !slices.ContainsFunc(all, func(x float64) bool { return x != all[0] })
}

// fold marks the comparisons of candidate j whose samples equal an earlier
// row's: the same test, counted once by Holm.
func fold(t *Table, j int, sigs []signature) {
	for i := range t.Latencies {
		v := t.Latencies[i].Vs[j-1]
		if v == nil {
			continue
		}
		for e := range i {
			if t.Latencies[e].Vs[j-1] != nil && t.Latencies[e].Vs[j-1].SameAs == "" && sigs[i].equal(&sigs[e]) {
				v.SameAs = t.Latencies[e].Name()
				break
			}
		}
	}
}

// holm adjusts candidate j's p-values over its distinct tests that can
// reject, and copies each result to the comparisons folded into it.
func holm(t *Table, j int, alpha float64) {
	var reps []*Versus
	var raw []float64
	byName := map[string]*Versus{}
	for i := range t.Latencies {
		v := t.Latencies[i].Vs[j-1]
		if v == nil || v.SameAs != "" {
			continue
		}
		byName[t.Latencies[i].Name()] = v
		if v.Tested {
			reps = append(reps, v)
			raw = append(raw, v.PRaw)
		} else {
			v.P = v.PRaw
			if !math.IsNaN(v.P) {
				v.P = 1
			}
		}
	}
	for i, p := range stats.Holm(raw) {
		reps[i].P = p
	}
	for i := range t.Latencies {
		v := t.Latencies[i].Vs[j-1]
		if v == nil {
			continue
		}
		if v.SameAs != "" {
			v.P = byName[v.SameAs].P
		}
		v.Significant = v.Tested && v.P < alpha
	}
}

// foldRows folds a row into an earlier one when every candidate found its
// samples identical to that row's.
func foldRows(t *Table) {
	for i := range t.Latencies {
		r := &t.Latencies[i]
		same := ""
		for k, v := range r.Vs {
			if v == nil || v.SameAs == "" || k > 0 && v.SameAs != same {
				same = ""
				break
			}
			same = v.SameAs
		}
		r.SameAs = same
	}
}

// decide fills the cells of one comparison and records its regressions.
func decide(t *Table, r *LatencyRow, v *Versus, o Options) {
	for qi := range v.Quantiles {
		c := &v.Quantiles[qi]
		c.Delta = "~"
		if v.Significant && (c.Lo > 0 || c.Hi < 0) {
			c.Delta = fmtChange(c.Change)
		}
		c.Regression = v.Significant && c.Lo > 0 && c.Change > o.Threshold
		if !c.Regression || v.SameAs != "" {
			continue
		}
		who := ""
		if len(t.Runs) > 2 {
			who = t.Runs[v.Run].Name + " vs " + t.Runs[0].Name + ": "
		}
		msg := fmt.Sprintf("%s%s p%g: %s → %s ms (%s %s; %s) exceeds the %.4g%% threshold",
			who, r.Name(), 100*c.Q, fmtMs(r.Base[qi]), fmtMs(c.B), fmtChange(c.Change), fmtCI(c.Lo, c.Hi), testSummary(v), 100*o.Threshold)
		if al := aliases(t, r, v.Run); len(al) > 0 {
			msg += " (same samples: " + strings.Join(al, ", ") + ")"
		}
		t.Regressions = append(t.Regressions, msg)
	}
}

// aliases lists the rows whose comparison with run is folded into r's.
func aliases(t *Table, r *LatencyRow, run int) []string {
	var out []string
	for i := range t.Latencies {
		if v := t.Latencies[i].Vs[run-1]; v != nil && v.SameAs == r.Name() {
			out = append(out, t.Latencies[i].Name())
		}
	}
	return out
}

// testSummary is e.g. "paired Wilcoxon p<0.001, 67 of 200 pods slower,
// 0 faster" or "Mann–Whitney p=0.012, n=200+200".
func testSummary(v *Versus) string {
	if v.Paired {
		return fmt.Sprintf("paired Wilcoxon p%s, %d of %d pods slower, %d faster", pCmp(v.P), v.Slower, v.N1, v.Faster)
	}
	return fmt.Sprintf("Mann–Whitney p%s, n=%d+%d", pCmp(v.P), v.N1, v.N2)
}

// geomean fills the benchstat summary rows: per quantile, the geometric
// mean over the rows every run has with positive values (folded rows
// once).
func geomean(t *Table, runs int) {
	for qi, q := range Quantiles {
		g := GeomeanRow{Q: q, Values: make([]float64, runs), Changes: make([]float64, runs-1)}
		logs := make([]float64, runs)
	rows:
		for i := range t.Latencies {
			r := &t.Latencies[i]
			if r.SameAs != "" {
				continue
			}
			vals := []float64{r.Base[qi]}
			for _, v := range r.Vs {
				if v == nil {
					continue rows
				}
				vals = append(vals, v.Quantiles[qi].B)
			}
			for _, x := range vals {
				if !(x > 0) {
					continue rows
				}
			}
			for k, x := range vals {
				logs[k] += math.Log(x)
			}
			g.Rows++
		}
		if g.Rows == 0 {
			continue
		}
		for k := range logs {
			g.Values[k] = math.Exp(logs[k] / float64(g.Rows))
		}
		for k := 1; k < runs; k++ {
			g.Changes[k-1] = stats.RelativeChange(g.Values[0], g.Values[k])
		}
		t.Geomean = append(t.Geomean, g)
	}
}
