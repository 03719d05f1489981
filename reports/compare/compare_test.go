package compare

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sidebench/sidebench/reports/render"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		_ = os.WriteFile(path+".got", got, 0o644)
		t.Errorf("%s differs from the golden file; got written to %s.got", path, path)
	}
}

// workload describes a synthetic run: trials × pods per policy, every pod's
// latencies drawn from a stream keyed by (seed, trial, pod), so that two
// runs with the same seed hold the same pods with the same draws (common
// random numbers), as sim runs do.
type workload struct {
	scenario, hash string
	seed           uint64
	trials, pods   int
	// slow maps "policy metric" to a change applied to each pod's value
	// (before create_to_ready is copied from pod_startup).
	slow map[string]func(pod int, v float64) float64
	inv  []render.InvariantRow
}

func (w workload) run(path string) Run {
	r := Run{Path: path, Data: render.RunData{Scenario: w.scenario, Policies: []string{"kep753", "none"},
		Meta: render.Meta{Seed: w.seed, Trials: w.trials, Backend: "sim", Version: "test", ScenarioHash: w.hash}, Invariants: w.inv}}
	for _, pol := range r.Data.Policies {
		for tr := range w.trials {
			trialSeed := w.seed*1000 + uint64(tr)
			for p := range w.pods {
				rng := rand.New(rand.NewPCG(trialSeed, uint64(p)))
				lat := map[string]float64{
					"pod_startup":  math.Round(1000*math.Exp(rng.NormFloat64()/3)) + 200*float64(rng.IntN(3)),
					"sidecar_gate": 40 + float64(rng.IntN(20)),
				}
				if pol == "none" {
					lat["pod_startup"] *= 0.8
					delete(lat, "sidecar_gate")
				}
				for m, f := range w.slow {
					if mp, mm, _ := strings.Cut(m, " "); mp == pol {
						if v, ok := lat[mm]; ok {
							lat[mm] = f(p, v)
						}
					}
				}
				lat["create_to_ready"] = lat["pod_startup"] // identical, as on most sim workloads
				r.Pods = append(r.Pods, Pod{Key: PodKey{Scenario: w.scenario, Policy: pol, Trial: tr, Seed: trialSeed, Pod: fmt.Sprintf("default/web-%d", p)}, LatenciesMs: lat})
			}
		}
	}
	return r
}

var baseInv = []render.InvariantRow{
	{Policy: "kep753", ID: "INV-S3", Checked: 120},
	{Policy: "kep753", ID: "INV-T10", Checked: 120, Violations: 2},
	{Policy: "none", ID: "INV-S3", Checked: 120, Violations: 100},
	{Policy: "none", ID: "INV-T3", Checked: 120},
}

func base() workload {
	return workload{scenario: "sidecar-basic", hash: "aaaa", seed: 1, trials: 3, pods: 40, inv: baseInv}
}

// slower returns base() with kep753's pod_startup 30% slower on every
// third pod and INV-S3 broken on 30 pods.
func slower() workload {
	w := base()
	w.hash = "bbbb"
	w.slow = map[string]func(int, float64) float64{"kep753 pod_startup": func(p int, v float64) float64 {
		if p%3 == 0 {
			return math.Round(v * 1.3)
		}
		return v
	}}
	w.inv = slices.Clone(baseInv)
	w.inv[0].Violations = 30
	return w
}

func writeAll(t *testing.T, tab *Table, name string) {
	t.Helper()
	var text, md, js bytes.Buffer
	if err := tab.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := tab.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if err := tab.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if !json.Valid(js.Bytes()) {
		t.Errorf("invalid JSON")
	}
	golden(t, name+".txt.golden", text.Bytes())
	golden(t, name+".md.golden", md.Bytes())
	golden(t, name+".json.golden", js.Bytes())
}

func mustCompare(t *testing.T, runs []Run, o Options) Table {
	t.Helper()
	tab, err := Compare(runs, o)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

func row(t *testing.T, tab *Table, name string) *LatencyRow {
	t.Helper()
	r := tab.row(name)
	if r == nil {
		t.Fatalf("no row %q", name)
	}
	return r
}

// TestGoldenPaired: same seeds, kep753 slower on a third of its pods: the
// pods pair up, the signed-rank test sees 40 slower and 0 faster.
func TestGoldenPaired(t *testing.T) {
	tab := mustCompare(t, []Run{base().run("runs/a"), slower().run("runs/b")}, Options{})
	writeAll(t, &tab, "paired")
	v := row(t, &tab, "kep753 pod_startup").Vs[0]
	if !v.Paired || v.Slower != 42 || v.Faster != 0 || v.Equal != 78 || !v.Significant {
		t.Errorf("kep753 pod_startup: %+v", v)
	}
}

// TestGoldenUnpaired: the same candidate change under another seed: no
// pod has a partner, Mann–Whitney on the two samples.
func TestGoldenUnpaired(t *testing.T) {
	other := slower()
	other.seed = 2
	tab := mustCompare(t, []Run{base().run("runs/a"), other.run("runs/b")}, Options{})
	writeAll(t, &tab, "unpaired")
	for i := range tab.Latencies {
		for _, v := range tab.Latencies[i].Vs {
			if v.Paired || v.Test != "mann-whitney-u" {
				t.Errorf("%s: %+v", tab.Latencies[i].Name(), v)
			}
		}
	}
}

// TestGoldenThreeRuns: N inputs, benchstat style: B paired with A, C not.
func TestGoldenThreeRuns(t *testing.T) {
	c := base()
	c.seed = 3
	tab := mustCompare(t, []Run{base().run("runs/a"), slower().run("runs/b"), c.run("runs/c")}, Options{})
	var text bytes.Buffer
	if err := tab.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	golden(t, "three.txt.golden", text.Bytes())
	r := row(t, &tab, "kep753 pod_startup")
	if len(r.Vs) != 2 || !r.Vs[0].Paired || r.Vs[1].Paired || len(tab.Geomean) != len(Quantiles) || len(tab.Geomean[0].Changes) != 2 {
		t.Fatalf("three runs: %+v, geomean %+v", r.Vs, tab.Geomean)
	}
}

// TestPairedFindsWhatUnpairedMisses is the case in miniature: a
// change confined to a minority of pods, hidden in the pod-to-pod spread
// for Mann–Whitney, stands out once the pods are paired.
func TestPairedFindsWhatUnpairedMisses(t *testing.T) {
	w := base()
	w.pods = 60
	small := base()
	small.pods = 60
	small.slow = map[string]func(int, float64) float64{"kep753 pod_startup": func(p int, v float64) float64 {
		if p%4 == 0 {
			return math.Round(v * 1.25)
		}
		return v
	}}
	paired := mustCompare(t, []Run{w.run("a"), small.run("b")}, Options{})
	pr := row(t, &paired, "kep753 pod_startup").Vs[0]
	// The same two samples with the pairing broken: each run keeps its
	// values, but the candidate's pod keys no longer match.
	b := small.run("b")
	for i := range b.Pods {
		b.Pods[i].Key.Seed += 7
	}
	unpaired := mustCompare(t, []Run{w.run("a"), b}, Options{})
	ur := row(t, &unpaired, "kep753 pod_startup").Vs[0]
	if !pr.Paired || ur.Paired {
		t.Fatalf("pairing: %v / %v", pr.Paired, ur.Paired)
	}
	if !pr.Significant || ur.Significant {
		t.Errorf("paired p=%v (significant %v), unpaired p=%v (significant %v): want paired only", pr.P, pr.Significant, ur.P, ur.Significant)
	}
	if pr.Quantiles[0].Change != ur.Quantiles[0].Change {
		t.Errorf("the same samples have different changes: %v vs %v", pr.Quantiles[0].Change, ur.Quantiles[0].Change)
	}
}

func TestRegressionDetection(t *testing.T) {
	tab := mustCompare(t, []Run{base().run("a"), slower().run("b")}, Options{})
	if !tab.RegressionFound {
		t.Fatal("no regression found")
	}
	var regs []string
	for i := range tab.Latencies {
		r := &tab.Latencies[i]
		for _, c := range r.Vs[0].Quantiles {
			if c.Regression {
				regs = append(regs, fmt.Sprintf("%s p%g", r.Name(), 100*c.Q))
			}
			if c.Regression && !(c.Lo > 0 && c.Change > 0.05 && r.Vs[0].Significant) {
				t.Errorf("%s: regression without its conditions: %+v", r.Name(), c)
			}
		}
		if v := r.Vs[0]; v.Tested && v.P < v.PRaw {
			t.Errorf("%s: Holm-adjusted p %v < raw %v", r.Name(), v.P, v.PRaw)
		}
	}
	for _, r := range tab.Rates {
		if r.Regression {
			regs = append(regs, r.Policy+" "+r.ID)
		}
	}
	// create_to_ready is the same sample as pod_startup: flagged too, but
	// listed once, with its alias.
	if !slices.Contains(regs, "kep753 pod_startup p90") || !slices.Contains(regs, "kep753 create_to_ready p90") || !slices.Contains(regs, "kep753 INV-S3") {
		t.Errorf("regressions %v", regs)
	}
	for _, x := range regs {
		if strings.HasPrefix(x, "none ") || strings.Contains(x, "sidecar_gate") {
			t.Errorf("unchanged row flagged: %s", x)
		}
	}
	for _, line := range tab.Regressions {
		if strings.HasPrefix(line, "kep753 create_to_ready") {
			t.Errorf("a folded row listed on its own: %s", line)
		}
	}
	if !slices.ContainsFunc(tab.Regressions, func(s string) bool { return strings.Contains(s, "(same samples: kep753 create_to_ready)") }) {
		t.Errorf("no alias in %q", tab.Regressions)
	}
	// A threshold above every change: significant, but no regression.
	tab = mustCompare(t, []Run{base().run("a"), slower().run("b")}, Options{Threshold: 0.5})
	for i := range tab.Latencies {
		for _, c := range tab.Latencies[i].Vs[0].Quantiles {
			if c.Regression {
				t.Errorf("%s regression at a 50%% threshold", tab.Latencies[i].Name())
			}
		}
	}
}

// TestHolmFoldsIdenticalSamples: copies of one metric do not dilute its
// significance. Holm over k identical samples would multiply p by k.
func TestHolmFoldsIdenticalSamples(t *testing.T) {
	a, b := base().run("a"), slower().run("b")
	one := mustCompare(t, []Run{a, b}, Options{Metrics: []string{"pod_startup"}, PolicyA: "kep753", PolicyB: "kep753"})
	for _, r := range []*Run{&a, &b} {
		for i := range r.Pods {
			l := r.Pods[i].LatenciesMs
			for k := range 10 {
				l[fmt.Sprintf("copy_%d", k)] = l["pod_startup"]
			}
		}
	}
	many := mustCompare(t, []Run{a, b}, Options{PolicyA: "kep753", PolicyB: "kep753"})
	p1 := row(t, &one, "kep753 pod_startup").Vs[0]
	pm := row(t, &many, "kep753 pod_startup").Vs[0]
	// In "many" the family holds pod_startup with its 11 copies (one
	// test), and sidecar_gate, unchanged, cannot reject: a family of one.
	if p1.P != p1.PRaw || pm.PRaw != p1.PRaw || pm.P != pm.PRaw {
		t.Errorf("one: p=%v raw %v; many: p=%v raw %v", p1.P, p1.PRaw, pm.P, pm.PRaw)
	}
	for k := range 10 {
		r := row(t, &many, fmt.Sprintf("kep753 copy_%d", k))
		if r.SameAs != "kep753 pod_startup" || r.Vs[0].P != pm.P {
			t.Errorf("copy_%d: sameAs %q p %v", k, r.SameAs, r.Vs[0].P)
		}
	}
	if n := many.distinct(1); n != 1 {
		t.Errorf("Holm family of %d, want 1", n)
	}
}

func TestScenarioChecks(t *testing.T) {
	other := base()
	other.scenario = "bug-replicas"
	_, err := Compare([]Run{base().run("runs/a"), other.run("runs/b")}, Options{})
	var mm *ScenarioMismatchError
	if !errors.As(err, &mm) || !strings.Contains(err.Error(), "runs/b") || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("different scenarios: %v", err)
	}
	tab := mustCompare(t, []Run{base().run("runs/a"), other.run("runs/b")}, Options{Force: true})
	if !slices.ContainsFunc(tab.Warnings, func(w string) bool { return strings.Contains(w, "different scenarios") }) {
		t.Errorf("--force: warnings %q", tab.Warnings)
	}
	if len(tab.Warnings) > 3 {
		t.Errorf("--force gave %d warnings, want them summarised: %q", len(tab.Warnings), tab.Warnings)
	}
	// Same name, other content: a warning, and still paired.
	tab = mustCompare(t, []Run{base().run("runs/a"), slower().run("runs/b")}, Options{})
	if !slices.ContainsFunc(tab.Warnings, func(w string) bool { return strings.Contains(w, "differs between A and B (scenarioHash aaaa") }) {
		t.Errorf("hash: warnings %q", tab.Warnings)
	}
	if _, err := Compare([]Run{base().run("a")}, Options{}); err == nil {
		t.Error("one run compared")
	}
}

func TestSameRunNoRegression(t *testing.T) {
	a := base().run("a")
	tab := mustCompare(t, []Run{a, a}, Options{})
	if tab.RegressionFound {
		t.Errorf("regressions comparing a run with itself: %v", tab.Regressions)
	}
	for i := range tab.Latencies {
		v := tab.Latencies[i].Vs[0]
		if !v.Paired || v.Tested || v.P != 1 || v.Quantiles[0].Delta != "~" || v.Equal != v.N1 {
			t.Errorf("%s: %+v", tab.Latencies[i].Name(), v)
		}
	}
}

func TestPolicyPairing(t *testing.T) {
	a := base().run("a")
	tab := mustCompare(t, []Run{a, a}, Options{PolicyA: "none", PolicyB: "kep753", Metrics: []string{"pod_startup"}})
	if len(tab.Latencies) != 1 || tab.Latencies[0].Policy != "none→kep753" {
		t.Fatalf("rows: %+v", tab.Latencies)
	}
	v := tab.Latencies[0].Vs[0]
	// The policies of a trial share its seed: the pods pair up, and every
	// kep753 pod is 25% slower than its none twin.
	if !v.Paired || v.Slower != v.N1 || !v.Significant || !tab.RegressionFound || math.Abs(v.Quantiles[0].Change-0.25) > 1e-9 {
		t.Errorf("none→kep753 pod_startup: %+v", v)
	}
	if len(tab.Rates) != 2 || tab.Rates[0].Deltas[0] != "better" {
		t.Errorf("rates: %+v", tab.Rates)
	}
	if _, err := Compare([]Run{a, a}, Options{PolicyA: "x", PolicyB: "none"}); err == nil || !strings.Contains(err.Error(), "--policy-a x") {
		t.Errorf("unknown policy: %v", err)
	}
}

// TestUnmatchedPods: a few pods faulted in one run only still pair the
// rest, with a warning naming how many were left out.
func TestUnmatchedPods(t *testing.T) {
	a, b := base().run("a"), slower().run("b")
	b.Pods = slices.DeleteFunc(b.Pods, func(p Pod) bool { return p.Key.Policy == "kep753" && p.Key.Pod == "default/web-1" })
	tab := mustCompare(t, []Run{a, b}, Options{})
	v := row(t, &tab, "kep753 pod_startup").Vs[0]
	if !v.Paired || v.N1 != 117 || v.Unmatched != 3 || !slices.ContainsFunc(v.Warnings, func(w string) bool { return strings.Contains(w, "paired on 117 pods") }) {
		t.Errorf("%+v", v)
	}
	// Most pods without a partner: unpaired.
	b.Pods = slices.DeleteFunc(b.Pods, func(p Pod) bool { return p.Key.Policy == "kep753" && p.Key.Trial > 0 })
	tab = mustCompare(t, []Run{a, b}, Options{})
	if v := row(t, &tab, "kep753 pod_startup").Vs[0]; v.Paired {
		t.Errorf("paired on a third of the pods: %+v", v)
	}
}

// TestMannWhitneyPublished checks the unpaired test (benchmath's
// AssumeNothing) against published values, through Compare.
func TestMannWhitneyPublished(t *testing.T) {
	p := func(a, b []float64) float64 {
		mk := func(x []float64, seed uint64) Run {
			r := Run{Data: render.RunData{Scenario: "s", Policies: []string{"p"}}}
			for i, v := range x {
				r.Pods = append(r.Pods, Pod{Key: PodKey{Scenario: "s", Policy: "p", Seed: seed, Pod: fmt.Sprint(i)}, LatenciesMs: map[string]float64{"m": v}})
			}
			return r
		}
		tab := mustCompare(t, []Run{mk(a, 1), mk(b, 2)}, Options{})
		return tab.Latencies[0].Vs[0].PRaw
	}
	seq := func(lo, hi int) []float64 {
		var x []float64
		for i := lo; i <= hi; i++ {
			x = append(x, float64(i))
		}
		return x
	}
	// R: wilcox.test(1:5, 6:10)$p.value = 2/choose(10, 5) = 0.007937.
	if got := p(seq(1, 5), seq(6, 10)); math.Abs(got-2.0/252) > 1e-12 {
		t.Errorf("1:5 vs 6:10: p = %v, want %v", got, 2.0/252)
	}
	// Small samples with ties: the exact conditional distribution,
	// checked by enumerating all C(15, 7) = 6435 assignments.
	a := []float64{1, 2, 2, 3, 5, 5, 8}
	b := []float64{2, 3, 4, 5, 6, 7, 9, 9}
	if got, want := p(a, b), permutationP(a, b); math.Abs(got-want) > 1e-9 {
		t.Errorf("ties: p = %v, enumeration %v", got, want)
	}
	// Large samples: normal approximation with tie and continuity
	// correction, against the permutation variance of the midranks.
	rng := rand.New(rand.NewPCG(5, 5))
	var la, lb []float64
	for range 80 {
		la = append(la, float64(rng.IntN(30)))
		lb = append(lb, float64(rng.IntN(30)+3))
	}
	if got, want := p(la, lb), normalP(la, lb); math.Abs(got-want) > 1e-9 {
		t.Errorf("80v80 with ties: p = %v, independent %v", got, want)
	}
}

// uStat counts pairs with a > b, ties one half.
func uStat(a, b []float64) float64 {
	var u float64
	for _, x := range a {
		for _, y := range b {
			switch {
			case x > y:
				u++
			case x == y:
				u += 0.5
			}
		}
	}
	return u
}

// permutationP is the exact two-sided p-value of U given the pooled values
// (ties fixed), by enumerating every split: twice the smaller tail,
// 2·min(P(U ≤ u), P(U ≥ u)), capped at 1.
func permutationP(a, b []float64) float64 {
	all := append(slices.Clone(a), b...)
	n, m := len(all), len(a)
	obs := uStat(a, b)
	var le, ge, total float64
	for mask := 0; mask < 1<<n; mask++ {
		var x, y []float64
		for i := range n {
			if mask&(1<<i) != 0 {
				x = append(x, all[i])
			} else {
				y = append(y, all[i])
			}
		}
		if len(x) != m {
			continue
		}
		total++
		u := uStat(x, y)
		if u <= obs {
			le++
		}
		if u >= obs {
			ge++
		}
	}
	return min(1, 2*min(le, ge)/total)
}

// normalP: z = (|U − n1·n2/2| − 0.5)/σ with σ² the permutation variance of
// the rank sum computed from midranks, n1·n2/(N(N−1))·Σ(r − (N+1)/2)².
func normalP(a, b []float64) float64 {
	all := append(slices.Clone(a), b...)
	N := float64(len(all))
	var ss float64
	for _, v := range all {
		var less, eq float64
		for _, w := range all {
			if w < v {
				less++
			} else if w == v {
				eq++
			}
		}
		mid := less + (eq+1)/2
		ss += (mid - (N+1)/2) * (mid - (N+1)/2)
	}
	n1, n2 := float64(len(a)), float64(len(b))
	z := (math.Abs(uStat(a, b)-n1*n2/2) - 0.5) / math.Sqrt(n1*n2/(N*(N-1))*ss)
	return math.Erfc(z / math.Sqrt2)
}

// TestRatesCountViolatingPods: an invariant broken at every restart holds
// more violations than pods; its rate is pods with a violation over pods
// checked, as the report's. compare divided the violations by the pods
// and handed 1079/180 to the Clopper–Pearson interval, which panicked
// ("cephes: parameter out of bounds"; rules-restart-all-main's bug policy
// against another seed).
func TestRatesCountViolatingPods(t *testing.T) {
	a, b := base(), base()
	b.hash = "bbbb"
	a.inv = []render.InvariantRow{{Policy: "kep753", ID: "INV-RA7", Checked: 180, Violations: 1079, ViolatingPods: 178}}
	b.inv = []render.InvariantRow{{Policy: "kep753", ID: "INV-RA7", Checked: 180, Violations: 1200, ViolatingPods: 180}}
	tab := mustCompare(t, []Run{a.run("a"), b.run("b")}, Options{})
	if len(tab.Rates) != 1 {
		t.Fatalf("%d rate rows, want 1", len(tab.Rates))
	}
	r := tab.Rates[0]
	if got := r.Runs[0]; got.K != 178 || got.N != 180 {
		t.Errorf("A's rate %d/%d, want 178/180 (pods with a violation)", got.K, got.N)
	}
	if got := r.Runs[1]; got.K != 180 || got.N != 180 {
		t.Errorf("B's rate %d/%d, want 180/180", got.K, got.N)
	}
	if want := render.DefaultConfidence; r.Runs[0].CPHi != a.inv[0].Rate(want).CPHi {
		t.Errorf("compare's bound %v is not the report's %v", r.Runs[0].CPHi, a.inv[0].Rate(want).CPHi)
	}
}

// TestTextFitsTheTerminal: a policy name too long for the table's width
// (kep753+ContainerRestartRules+RestartAllContainersOnContainerExits
// +bug:reset-trigger-first made compare's lines 213 columns wide) moves
// to a line of its own above its rows; a table that fits keeps its policy
// column.
func TestTextFitsTheTerminal(t *testing.T) {
	long := "kep753+ContainerRestartRules+RestartAllContainersOnContainerExits+bug:reset-trigger-first"
	text := func(runs []Run) string {
		tab := mustCompare(t, runs, Options{})
		var b bytes.Buffer
		if err := tab.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	runs := []Run{base().run("a"), slower().run("b")}
	for i := range runs {
		renamePolicy(&runs[i], "kep753", long)
		// A long path, too: the header lines were as wide as it.
		runs[i].Path = "/var/lib/sidebench/nightly/2026-12-01T03:00:00Z/" + strings.Repeat("shard-results/", 4) + runs[i].Path
	}
	out := text(runs)
	if !strings.Contains(out, "\n"+long+"\n  pod_startup ") {
		t.Errorf("no line naming the policy above its rows:\n%s", out)
	}
	for _, l := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(l); n > render.TableWidth {
			t.Errorf("%d columns: %s", n, l)
		}
	}
	if short := text([]Run{base().run("a"), slower().run("b")}); !regexp.MustCompile(`\nkep753 +pod_startup +p50`).MatchString(short) {
		t.Errorf("a table that fits lost its policy column:\n%s", short)
	}
}

// renamePolicy renames a policy throughout a synthetic run.
func renamePolicy(r *Run, from, to string) {
	for i, p := range r.Data.Policies {
		if p == from {
			r.Data.Policies[i] = to
		}
	}
	r.Data.Invariants = slices.Clone(r.Data.Invariants)
	for i := range r.Data.Invariants {
		if r.Data.Invariants[i].Policy == from {
			r.Data.Invariants[i].Policy = to
		}
	}
	for i := range r.Pods {
		if r.Pods[i].Key.Policy == from {
			r.Pods[i].Key.Policy = to
		}
	}
}
