package graduation

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/sidebench/sidebench/reports/stats"
)

func mustLoad(t *testing.T, stage string) Criteria {
	t.Helper()
	c, err := Load(stage)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestLoadBuiltins(t *testing.T) {
	tests := []struct {
		stage     string
		maxRate   float64
		upper     bool
		lowerJobs bool
		maxRatio  float64
	}{
		{"alpha", 1e-2, false, false, 3},
		{"beta", 1e-3, true, false, 2.5},
		{"ga", 1e-4, true, true, 2},
	}
	for _, tt := range tests {
		c := mustLoad(t, tt.stage)
		if c.Stage != tt.stage || c.Confidence != 0.95 || c.ViolationRate.Max != tt.maxRate || c.ViolationRate.Sided != "two" ||
			c.PodStartup.Quantile != 0.99 || c.PodStartup.MaxMs != 5000 || c.PodStartup.UseUpperBound != tt.upper ||
			c.SidecarJobs.MinFraction != 0.99 || c.SidecarJobs.UseLowerBound != tt.lowerJobs ||
			c.SidecarOverhead.MaxRatio != tt.maxRatio || c.SidecarOverhead.Metric != "pod_startup" {
			t.Errorf("%s: %+v", tt.stage, c)
		}
	}
	if _, err := Load("gamma"); err == nil {
		t.Error("unknown stage accepted")
	}
}

func TestParseStrict(t *testing.T) {
	tests := []struct {
		name, yaml, wantErr string
	}{
		// Unknown fields name their line, their section and what it allows
		// (the decoder, through JSON, said only `unknown field "bogus"`).
		{"unknown field", "stage: x\nconfidence: 0.95\nbogus: 1\n",
			`line 3: unknown field "bogus" at the top level (allowed: stage, description, confidence, violationRate, podStartup, sidecarJobs, sidecarOverhead)`},
		{"typo in section", "stage: x\nconfidence: 0.95\nviolationRate:\n  # the ceiling\n  maxx: 0.1\n",
			`line 5: unknown field "maxx" in violationRate (allowed: max, sided)`},
		{"flow section", "stage: x\nconfidence: 0.95\nsidecarJobs: {minJob: 3}\n", `line 3: unknown field "minJob" in sidecarJobs (allowed: `},
		// Field names are case-sensitive, as the apiserver's: encoding/json
		// took maxMS for maxMs, and both given kept the last.
		{"wrong case", "stage: x\nconfidence: 0.95\npodStartup: {quantile: 0.99, maxMS: 5000}\n",
			`line 3: unknown field "maxMS" in podStartup (allowed: quantile, maxMs, useUpperBound); did you mean "maxMs"? field names are case-sensitive`},
		{"wrong case section", "stage: x\nconfidence: 0.95\nPodStartup:\n  quantile: 0.99\n", `line 3: unknown field "PodStartup" at the top level`},
		{"both cases", "stage: x\nconfidence: 0.95\npodStartup:\n  quantile: 0.99\n  maxMs: 5000\n  maxMS: 100\n", `line 6: unknown field "maxMS" in podStartup`},
		// The same field name in two sections: the line of the one named.
		{"field of a later section", "stage: x\nconfidence: 0.95\npodStartup:\n  quantile: 0.99\n  maxMs: 5000\nsidecarOverhead:\n  metric: pod_startup\n  quantile: 0.5\n  maxRatio: 2\n  maxMs: 3\n",
			`line 10: unknown field "maxMs" in sidecarOverhead`},
		{"a scenario", "apiVersion: sidebench.dev/v1alpha1\nkind: Scenario\nmetadata: {name: s}\n", "this is a scenario file, not a criteria file"},
		{"duplicate key", "stage: x\nstage: y\nconfidence: 0.95\n", "already set"},
		{"missing stage", "confidence: 0.95\n", "stage is required"},
		{"bad confidence", "stage: x\nconfidence: 95\n", "confidence"},
		{"bad sided", "stage: x\nconfidence: 0.95\nviolationRate: {max: 0.1, sided: three}\n", "sided"},
		{"bad quantile", "stage: x\nconfidence: 0.95\npodStartup: {quantile: 99, maxMs: 5000}\n", "quantile"},
		{"bad fraction", "stage: x\nconfidence: 0.95\nsidecarJobs: {minFraction: 1}\n", "minFraction"},
		{"bad ratio", "stage: x\nconfidence: 0.95\nsidecarOverhead: {metric: pod_startup, quantile: 0.5, maxRatio: 0}\n", "maxRatio"},
		{"ok minimal", "stage: x\nconfidence: 0.9\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestViolationRate(t *testing.T) {
	ga := mustLoad(t, "ga")
	oneSided := ga
	oneSided.ViolationRate = &ViolationRate{Max: 1e-4, Sided: "one"}
	beta := mustLoad(t, "beta")
	tests := []struct {
		name   string
		c      Criteria
		k, n   int
		status Status
		more   int
	}{
		// Two-sided 95% = one-sided 97.5%: ceil(ln 0.025 / ln(1 − 1e-4)) = 36,887.
		{"ga no data", ga, 0, 0, Insufficient, 36887},
		{"ga 40k clean", ga, 0, 40000, Pass, 0},
		{"ga 30k clean", ga, 0, 30000, Insufficient, 6887},
		{"ga rate too high", ga, 5, 1000, Fail, 0},
		// One-sided 95%: 29,956 (ANCHORS.md §3.2).
		{"one-sided exactly enough", oneSided, 0, 29956, Pass, 0},
		{"one-sided one short", oneSided, 0, 29955, Insufficient, 1},
		// 1/10,000: CP two-sided upper ≈ 5.6e-4 < 1e-3.
		{"beta one violation", beta, 1, 10000, Pass, 0},
		{"beta one violation early", beta, 1, 2000, Insufficient, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Evaluate(Criteria{Stage: "t", Confidence: tt.c.Confidence, ViolationRate: tt.c.ViolationRate}, Inputs{Violations: tt.k, Lifecycles: tt.n})[0]
			if v.Status != tt.status || (tt.more >= 0 && v.MoreTrialsNeeded != tt.more) || v.Criterion != CriterionViolationRate {
				t.Errorf("verdict = %+v", v)
			}
			if tt.more < 0 {
				// The estimate must make the bound pass at the projected rate.
				N := tt.n + v.MoreTrialsNeeded
				K := int(math.Ceil(float64(tt.k) * float64(N) / float64(tt.n)))
				if v.MoreTrialsNeeded <= 0 || stats.ClopperPearsonUpper(K-1, N, 0.975) >= tt.c.ViolationRate.Max {
					t.Errorf("more = %d does not reach the target", v.MoreTrialsNeeded)
				}
			}
		})
	}
}

func ms(n int, f func(i int) float64) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = f(i)
	}
	return x
}

func TestPodStartup(t *testing.T) {
	ga, alpha := mustLoad(t, "ga"), mustLoad(t, "alpha")
	tests := []struct {
		name    string
		c       Criteria
		samples []float64
		status  Status
		more    int
	}{
		{"500 pods within 5s", ga, ms(500, func(i int) float64 { return float64(10 * (i + 1)) }), Pass, 0},
		{"100 pods: CI unbounded", ga, ms(100, func(int) float64 { return 1000 }), Insufficient, 268},
		{"100 pods alpha point estimate", alpha, ms(100, func(int) float64 { return 1000 }), Pass, 0},
		{"p99 above 5s", alpha, ms(100, func(i int) float64 { return float64(100 * i) }), Fail, 0},
		{"no samples", ga, nil, Insufficient, 368},
		{"1000 pods, 0.5% slow", ga, ms(1000, func(i int) float64 {
			if i < 995 {
				return 1000
			}
			return 9000
		}), Insufficient, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Evaluate(Criteria{Stage: "t", Confidence: 0.95, PodStartup: tt.c.PodStartup}, Inputs{PodStartupMs: stats.HistOf(tt.samples)})[0]
			if v.Status != tt.status || (tt.more >= 0 && v.MoreTrialsNeeded != tt.more) {
				t.Errorf("verdict = %+v", v)
			}
			if tt.more < 0 {
				N := len(tt.samples) + v.MoreTrialsNeeded
				_, hi := stats.QuantileCIRanks(N, 0.99, 0.95)
				if v.MoreTrialsNeeded <= 0 || hi > int(0.995*float64(N)) {
					t.Errorf("more = %d: hi rank %d of %d exceeds the 99.5%% within the limit", v.MoreTrialsNeeded, hi, N)
				}
			}
		})
	}
}

func TestSidecarJobs(t *testing.T) {
	ga, beta := mustLoad(t, "ga"), mustLoad(t, "beta")
	tests := []struct {
		name   string
		c      Criteria
		k, n   int
		status Status
		more   int
	}{
		// Lower bound with 0 failures: 0.025^(1/n); 0.025^(1/500) = 0.99265.
		{"ga 500 of 500", ga, 500, 500, Pass, 0},
		// 0.025^(1/200) = 0.9817; n ≥ ceil(ln 0.025 / ln 0.99) = 368 needed.
		{"ga 200 of 200", ga, 200, 200, Insufficient, 168},
		{"ga 98 of 100", ga, 98, 100, Fail, 0},
		{"ga exactly at the limit", ga, 99, 100, Insufficient, 0},
		{"beta too few jobs", beta, 50, 50, Insufficient, 50},
		// Runs without a Job: more trials of them give none, so no count
		// is needed (it said +100, which no number of trials would meet).
		{"beta no jobs at all", beta, 0, 0, Insufficient, 0},
		{"beta 99 of 100 point", beta, 99, 100, Pass, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Evaluate(Criteria{Stage: "t", Confidence: 0.95, SidecarJobs: tt.c.SidecarJobs}, Inputs{SidecarJobs: tt.n, SidecarJobsCompleted: tt.k})[0]
			if v.Status != tt.status || v.MoreTrialsNeeded != tt.more {
				t.Errorf("verdict = %+v", v)
			}
		})
	}
}

func TestSidecarOverhead(t *testing.T) {
	h := stats.HistOf
	ga, alpha := mustLoad(t, "ga"), mustLoad(t, "alpha")
	base := ms(100, func(i int) float64 { return float64(10 * (i + 1)) })
	scale := func(f float64) []float64 { return ms(100, func(i int) float64 { return f * base[i] }) }
	tests := []struct {
		name       string
		c          Criteria
		in         Inputs
		status     Status
		observed   float64
		boundAbove float64
	}{
		{"1.5x within 2x", ga, Inputs{PodStartupMs: h(scale(1.5)), BaselineMs: h(base), Seed: 1}, Pass, 1.5, 1.5},
		{"3x fails GA", ga, Inputs{OverheadMs: h(scale(3)), BaselineMs: h(base), Seed: 1}, Fail, 3, 0},
		{"1.9x: CI crosses 2x", ga, Inputs{PodStartupMs: h(scale(1.9)), BaselineMs: h(base), Seed: 1}, Insufficient, 1.9, 2},
		{"1.9x alpha point", alpha, Inputs{PodStartupMs: h(scale(1.9)), BaselineMs: h(base)}, Pass, 1.9, 0},
		{"no baseline", ga, Inputs{PodStartupMs: h(base)}, Insufficient, math.NaN(), 0},
		{"few baseline samples", ga, Inputs{PodStartupMs: h(base), BaselineMs: h(base[:5])}, Insufficient, math.NaN(), 0},
		// The none baseline judged against itself: not a PASS at ratio 1.
		{"baseline itself", ga, Inputs{PodStartupMs: h(base), BaselineMs: h(base), Seed: 1, IsBaseline: true}, NotApplicable, math.NaN(), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Criteria{Stage: "t", Confidence: 0.95, SidecarOverhead: tt.c.SidecarOverhead}
			v := Evaluate(c, tt.in)[0]
			if v.Status != tt.status || !(math.Abs(v.Observed-tt.observed) < 1e-12 || math.IsNaN(v.Observed) && math.IsNaN(tt.observed)) {
				t.Errorf("verdict = %+v", v)
			}
			if tt.boundAbove > 0 && !(v.Bound > tt.boundAbove) {
				t.Errorf("bound %v should exceed %v", v.Bound, tt.boundAbove)
			}
			// More trials are needed only while both policies have some
			// samples: a policy that did not run gives none (this said
			// "+20" for a scenario without the none baseline).
			if ran := tt.in.BaselineMs.N() > 0; tt.status == Insufficient && v.Bound == math.Inf(1) && (v.MoreTrialsNeeded > 0) != ran {
				t.Errorf("MoreTrialsNeeded = %d with %d baseline samples: %s", v.MoreTrialsNeeded, tt.in.BaselineMs.N(), v.Message)
			}
			if again := Evaluate(c, tt.in)[0]; again.Bound != v.Bound && !math.IsInf(v.Bound, 1) && !math.IsNaN(v.Bound) {
				t.Errorf("not deterministic: %v vs %v", again.Bound, v.Bound)
			}
		})
	}
}

func TestEvaluateAllAndOverall(t *testing.T) {
	h := stats.HistOf
	ga := mustLoad(t, "ga")
	good := Inputs{
		Violations: 0, Lifecycles: 50000,
		PodStartupMs: h(ms(1000, func(i int) float64 { return 500 + float64(i) })),
		BaselineMs:   h(ms(1000, func(i int) float64 { return 400 + float64(i) })),
		SidecarJobs:  1000, SidecarJobsCompleted: 1000, Seed: 7,
	}
	vs := Evaluate(ga, good)
	names := []string{}
	for _, v := range vs {
		names = append(names, v.Criterion)
		if v.Status != Pass {
			t.Errorf("%s", v)
		}
	}
	if !slices.Equal(names, []string{CriterionViolationRate, CriterionPodStartup, CriterionSidecarJobs, CriterionSidecarOverhead}) {
		t.Errorf("order = %v", names)
	}
	if Overall(vs) != Pass {
		t.Errorf("overall = %v", Overall(vs))
	}
	// A NOT APPLICABLE verdict neither passes nor fails the whole.
	if st := Overall(append(slices.Clone(vs), Verdict{Status: NotApplicable})); st != Pass {
		t.Errorf("overall with NOT APPLICABLE = %v", st)
	}
	if st := Overall([]Verdict{{Status: NotApplicable}, {Status: Insufficient}}); st != Insufficient {
		t.Errorf("overall = %v", st)
	}
	// Nothing judged is no PASS.
	if st := Overall([]Verdict{{Status: NotApplicable}, {Status: NotApplicable}}); st != Insufficient {
		t.Errorf("overall of NOT APPLICABLE only = %v", st)
	}
	if st := Overall(nil); st != Pass {
		t.Errorf("overall of no verdicts = %v", st)
	}
	bad := good
	bad.Lifecycles = 100
	vs = Evaluate(ga, bad)
	if Overall(vs) != Insufficient {
		t.Errorf("overall = %v", Overall(vs))
	}
	bad.Violations = 1
	if Overall(Evaluate(ga, bad)) != Fail {
		t.Error("want FAIL")
	}
	b, err := json.Marshal(Evaluate(ga, Inputs{}))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"status":"INSUFFICIENT DATA"`) || !strings.Contains(string(b), `"observed":null`) {
		t.Errorf("json: %s", b)
	}
	if s := vs[0].String(); !strings.Contains(s, "violation-rate") {
		t.Errorf("String = %q", s)
	}
}

// TestLifecyclesNeeded: the soak figure's "lifecycles needed" is the
// verdict's "more trials needed" counted from zero: the same number.
func TestLifecyclesNeeded(t *testing.T) {
	for _, stage := range []string{"alpha", "beta", "ga"} {
		c, err := Load(stage)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range []struct{ k, n int }{{0, 10}, {0, 200}, {1, 2000}, {3, 50000}, {11, 440400}} {
			v := Evaluate(Criteria{Stage: c.Stage, Confidence: c.Confidence, ViolationRate: c.ViolationRate}, Inputs{Violations: in.k, Lifecycles: in.n})[0]
			got := LifecyclesNeeded(c, in.k, in.n)
			switch v.Status {
			case Insufficient:
				if got != in.n+v.MoreTrialsNeeded {
					t.Errorf("%s k=%d n=%d: needed %d, verdict says %d more", stage, in.k, in.n, got, v.MoreTrialsNeeded)
				}
			case Fail:
				if got != -1 {
					t.Errorf("%s k=%d n=%d: FAIL but needed %d", stage, in.k, in.n, got)
				}
			case Pass:
				if got > in.n || got <= 0 {
					t.Errorf("%s k=%d n=%d: PASS but needed %d", stage, in.k, in.n, got)
				}
				// Stages of different targets cross at different counts.
				if in.k > 0 && stage != "alpha" && got == LifecyclesNeeded(Criteria{Confidence: c.Confidence, ViolationRate: &ViolationRate{Max: 10 * c.ViolationRate.Max}}, in.k, in.n) {
					t.Errorf("%s k=%d n=%d: the same count as a 10x laxer target", stage, in.k, in.n)
				}
			}
		}
	}
	if LifecyclesNeeded(Criteria{}, 0, 10) != -1 {
		t.Error("no violation-rate criterion: want -1")
	}
}

// TestPoolEvidence: over several scenarios, a criterion is judged where
// its evidence is. A scenario without Jobs with sidecars, or without the
// none baseline, gets NOT APPLICABLE for that criterion when another
// scenario of the same policy has some (a graduation over
// policy-comparison and job-completion could never pass: each lacked
// what the other had), and stays INSUFFICIENT DATA when none has.
func TestPoolEvidence(t *testing.T) {
	h := stats.HistOf
	beta := mustLoad(t, "beta")
	lat := h(ms(400, func(i int) float64 { return 500 + float64(i) }))
	noJobsWithBase := Inputs{Lifecycles: 400, PodStartupMs: lat, BaselineMs: lat, Seed: 1}
	jobsNoBase := Inputs{Lifecycles: 400, PodStartupMs: lat, SidecarJobs: 400, SidecarJobsCompleted: 400, Seed: 1}
	judge := func(scen, pol string, in Inputs) Judged {
		return Judged{Scenario: scen, Policy: pol, In: in, Verdicts: Evaluate(beta, in)}
	}
	status := func(j Judged, crit string) (Status, string) {
		for _, v := range j.Verdicts {
			if v.Criterion == crit {
				return v.Status, v.Message
			}
		}
		t.Fatalf("%s %s: no %s verdict", j.Scenario, j.Policy, crit)
		return "", ""
	}
	tests := []struct {
		name   string
		js     []Judged
		want   map[string]Status // scenario/policy/criterion -> status
		naming map[string]string // scenario/policy/criterion -> in the message
	}{
		{
			name: "each lacks what the other has",
			js:   []Judged{judge("cmp", "kep753", noJobsWithBase), judge("jobs", "kep753", jobsNoBase)},
			want: map[string]Status{
				"cmp/kep753/" + CriterionSidecarJobs: NotApplicable, "cmp/kep753/" + CriterionSidecarOverhead: Pass,
				"jobs/kep753/" + CriterionSidecarJobs: Pass, "jobs/kep753/" + CriterionSidecarOverhead: NotApplicable,
			},
			naming: map[string]string{
				"cmp/kep753/" + CriterionSidecarJobs:      "no Job with sidecars in this scenario: the criterion is judged in jobs",
				"jobs/kep753/" + CriterionSidecarOverhead: "no pod_startup samples of this policy or of none in this scenario: the criterion is judged in cmp",
			},
		},
		{
			name: "one scenario: insufficient, as before",
			js:   []Judged{judge("cmp", "kep753", noJobsWithBase)},
			want: map[string]Status{"cmp/kep753/" + CriterionSidecarJobs: Insufficient},
		},
		{
			name: "no scenario has Jobs: insufficient everywhere",
			js:   []Judged{judge("a", "kep753", noJobsWithBase), judge("b", "kep753", noJobsWithBase)},
			want: map[string]Status{"a/kep753/" + CriterionSidecarJobs: Insufficient, "b/kep753/" + CriterionSidecarJobs: Insufficient},
		},
		{
			name: "another policy's evidence does not count",
			js:   []Judged{judge("cmp", "kep753", noJobsWithBase), judge("jobs", "other", jobsNoBase)},
			want: map[string]Status{"cmp/kep753/" + CriterionSidecarJobs: Insufficient, "jobs/other/" + CriterionSidecarOverhead: Insufficient},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			PoolEvidence(beta, tt.js)
			for _, j := range tt.js {
				for _, crit := range []string{CriterionSidecarJobs, CriterionSidecarOverhead} {
					key := j.Scenario + "/" + j.Policy + "/" + crit
					st, msg := status(j, crit)
					if want, ok := tt.want[key]; ok && st != want {
						t.Errorf("%s: %s (%s), want %s", key, st, msg, want)
					}
					if want := tt.naming[key]; want != "" && msg != want {
						t.Errorf("%s: message %q, want %q", key, msg, want)
					}
				}
			}
		})
	}
}
