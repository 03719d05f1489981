package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sidebench/sidebench/harness/rundir"
	"github.com/sidebench/sidebench/reports/render"
)

// runCmp runs testdata/cmp.yaml (or a variant of it) into dir and fails on
// a usage or internal error.
func runCmp(t *testing.T, dir, file string, extra ...string) {
	t.Helper()
	args := append([]string{"run", "--quiet", "--out", dir}, extra...)
	_, errOut, code := run(t, append(args, file)...)
	if code != ExitOK && code != ExitFailed {
		t.Fatalf("run %s: exit %d: %s", file, code, errOut)
	}
}

// slowVariant writes cmp.yaml with the sidecar's startLatency 200ms larger.
func slowVariant(t *testing.T, dir string) string {
	t.Helper()
	src, err := os.ReadFile("testdata/cmp.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const from, to = "startLatency: uniform(min=100ms, max=300ms)", "startLatency: uniform(min=300ms, max=500ms)"
	if !strings.Contains(string(src), from) {
		t.Fatalf("cmp.yaml lacks %q", from)
	}
	p := filepath.Join(dir, "slow.yaml")
	if err := os.WriteFile(p, []byte(strings.Replace(string(src), from, to, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// cmpJSON is the part of `compare --format json` the tests read.
type cmpJSON struct {
	Latencies []struct {
		Policy string `json:"policy"`
		Metric string `json:"metric"`
		SameAs string `json:"sameAs"`
		Vs     []struct {
			Paired      bool     `json:"paired"`
			N1          int      `json:"n1"`
			N2          int      `json:"n2"`
			Slower      int      `json:"slower"`
			Faster      int      `json:"faster"`
			P           *float64 `json:"p"`
			Significant bool     `json:"significant"`
			Quantiles   []struct {
				Delta      string `json:"delta"`
				Regression bool   `json:"regression"`
			} `json:"quantiles"`
		} `json:"vs"`
	} `json:"latencies"`
	RegressionFound bool     `json:"regressionFound"`
	Warnings        []string `json:"warnings"`
}

func compareJSON(t *testing.T, args ...string) (cmpJSON, int) {
	t.Helper()
	out, errOut, code := run(t, append([]string{"compare", "--format", "json"}, args...)...)
	var doc cmpJSON
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("compare %v: exit %d, stderr %q, bad JSON: %v\n%.500s", args, code, errOut, err, out)
	}
	return doc, code
}

func TestCompareRuns(t *testing.T) {
	dir := t.TempDir()
	a, b, slow := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "slow")
	runCmp(t, a, "testdata/cmp.yaml")
	runCmp(t, b, "testdata/cmp.yaml", "--seed", "99")
	runCmp(t, slow, slowVariant(t, dir), "--seed", "99")

	// Same scenario, different seed: unpaired, no significant change.
	doc, code := compareJSON(t, a, b)
	if code != ExitOK || doc.RegressionFound || len(doc.Latencies) < 4 {
		t.Fatalf("compare a b: exit %d, %+v", code, doc)
	}
	for _, l := range doc.Latencies {
		v := l.Vs[0]
		if v.Paired {
			t.Errorf("%s %s paired across seeds", l.Policy, l.Metric)
		}
		if l.Policy == "kep753" && l.Metric == "pod_startup" && (v.N1 != 200 || v.N2 != 200) {
			t.Errorf("pod_startup: n=%d+%d, want 200+200", v.N1, v.N2)
		}
	}

	// Sidecar start 200ms slower: pod_startup regresses, exit 1, in every
	// format.
	out, errOut, code := run(t, "compare", a, slow)
	if code != ExitFailed {
		t.Fatalf("compare a slow: exit %d, stderr %q\n%s", code, errOut, out)
	}
	if !regexp.MustCompile(`(?m)^REGRESSION: kep753 pod_startup p50: \S+ → \S+ ms \(\+`).MatchString(out) {
		t.Errorf("no pod_startup regression line:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^kep753 +pod_startup +p50 .* REGRESSION$`).MatchString(out) {
		t.Errorf("pod_startup row not marked:\n%s", out)
	}
	// A threshold above the change: significant, but not a regression.
	if _, _, code := run(t, "compare", "--threshold", "0.9", a, slow); code != ExitOK {
		t.Errorf("--threshold 0.9: exit %d", code)
	}
	// A negative threshold means nothing (it ran as 0).
	if _, errOut, code := run(t, "compare", "--threshold", "-1", a, slow); code != ExitUsage || !strings.Contains(errOut, "must be a finite fraction >= 0") {
		t.Errorf("--threshold -1: exit %d %q", code, errOut)
	}
	if doc, code := compareJSON(t, a, slow); !doc.RegressionFound || code != ExitFailed {
		t.Errorf("json: regressionFound %v, exit %d", doc.RegressionFound, code)
	}
	md, _, code := run(t, "compare", "--format", "md", a, b)
	if code != ExitOK || !strings.Contains(md, "| policy | metric | q |") {
		t.Errorf("md: exit %d\n%.300s", code, md)
	}
	// Three runs, benchstat style: one column group per candidate.
	out, _, code = run(t, "compare", a, b, slow)
	if code != ExitFailed || !strings.Contains(out, "C: "+slow) || !strings.Contains(out, "REGRESSION: C") {
		t.Errorf("three runs: exit %d\n%s", code, out)
	}

	// Two policies of one run: the sidecar overhead of kep753 over none,
	// paired by trial (the policies of a trial share its seed).
	doc, code = compareJSON(t, "--policy-a", "none", "--policy-b", "kep753", a, a)
	if code == ExitUsage || code == ExitInternal || len(doc.Latencies) == 0 || !doc.Latencies[0].Vs[0].Paired {
		t.Errorf("--policy-a/b: exit %d %+v", code, doc)
	}
}

// policyComparisonVariant writes scenarios/policy-comparison.yaml with the
// proxy's startupAfter distribution scaled by 1.3 (median 1s → 1.3s, p99
// 5s → 6.5s): every proxy startup takes 30% longer.
func policyComparisonVariant(t *testing.T, dir string) string {
	t.Helper()
	src, err := os.ReadFile("../../scenarios/policy-comparison.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const from, to = "startupAfter: lognormal(median=1s, p99=5s)", "startupAfter: lognormal(median=1.3s, p99=6.5s)"
	if !strings.Contains(string(src), from) {
		t.Fatalf("policy-comparison.yaml lacks %q", from)
	}
	p := filepath.Join(dir, "policy-comparison.yaml")
	if err := os.WriteFile(p, []byte(strings.Replace(string(src), from, to, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestComparePairedRegression is issue 18's case: policy-comparison with
// --seed 1, then the same scenario with a 30% slower proxy startup and the
// same seed. kep753 pod_startup grows by 7.4%; a third of the pods got
// slower and none faster. Mann–Whitney on the pooled samples, corrected
// over 14 "metrics", printed "~" and exited 0; paired on the matched pods
// it is a regression (exit 1). With another seed and no change, the table
// stays "~" and exits 0.
func TestComparePairedRegression(t *testing.T) {
	dir := t.TempDir()
	a, b, c := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "c")
	runCmp(t, a, "../../scenarios/policy-comparison.yaml", "--seed", "1")
	runCmp(t, b, policyComparisonVariant(t, dir), "--seed", "1")
	runCmp(t, c, "../../scenarios/policy-comparison.yaml", "--seed", "2")

	doc, code := compareJSON(t, a, b)
	if code != ExitFailed || !doc.RegressionFound {
		t.Fatalf("slower proxy: exit %d, regressionFound %v", code, doc.RegressionFound)
	}
	found := false
	for _, l := range doc.Latencies {
		if l.Policy != "kep753" || l.Metric != "pod_startup" {
			continue
		}
		found = true
		v := l.Vs[0]
		if !v.Paired || v.N1 != 200 || v.Faster != 0 || v.Slower < 50 || !v.Significant || v.Quantiles[0].Delta == "~" || !v.Quantiles[0].Regression {
			t.Errorf("kep753 pod_startup: %+v", v)
		}
	}
	if !found {
		t.Fatal("no kep753 pod_startup row")
	}
	if !slices.ContainsFunc(doc.Warnings, func(w string) bool { return strings.Contains(w, "differs between A and B (scenarioHash") }) {
		t.Errorf("no scenario-hash warning: %q", doc.Warnings)
	}

	doc, code = compareJSON(t, a, c)
	if code != ExitOK || doc.RegressionFound {
		t.Fatalf("another seed: exit %d, regressionFound %v", code, doc.RegressionFound)
	}
	for _, l := range doc.Latencies {
		v := l.Vs[0]
		if v.Paired || v.Significant {
			t.Errorf("%s %s across seeds: paired %v significant %v", l.Policy, l.Metric, v.Paired, v.Significant)
		}
		for _, q := range v.Quantiles {
			if q.Delta != "~" {
				t.Errorf("%s %s across seeds: %s", l.Policy, l.Metric, q.Delta)
			}
		}
	}
}

// TestCompareGolden compares two committed run directories of tiny.yaml
// (seeds 42 and 43; summary.json with its findings emptied, and pods.jsonl).
func TestCompareGolden(t *testing.T) {
	a, b := filepath.Join("testdata", "runs", "tiny-seed42"), filepath.Join("testdata", "runs", "tiny-seed43")
	out, errOut, code := run(t, "compare", a, b)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	golden(t, "compare", out)
	// Both arguments may name the summary.json itself.
	out2, _, _ := run(t, "compare", filepath.Join(a, render.SummaryFile), filepath.Join(b, render.SummaryFile))
	if out2 != out {
		t.Error("summary.json paths gave another table")
	}
}

func TestCompareUsage(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	nopods := filepath.Join(dir, "nopods")
	os.Mkdir(nopods, 0o755)
	sum, _ := os.ReadFile(filepath.Join("testdata", "runs", "tiny-seed42", render.SummaryFile))
	os.WriteFile(filepath.Join(nopods, render.SummaryFile), sum, 0o644)
	badsum := filepath.Join(dir, "badsum")
	os.Mkdir(badsum, 0o755)
	os.WriteFile(filepath.Join(badsum, render.SummaryFile), []byte(`{"schemaVersion": 99}`), 0o644)
	good := filepath.Join("testdata", "runs", "tiny-seed42")
	// The same run under another scenario name.
	otherScenario := filepath.Join(dir, "other")
	os.Mkdir(otherScenario, 0o755)
	os.WriteFile(filepath.Join(otherScenario, render.SummaryFile), []byte(strings.Replace(string(sum), `"scenario": "tiny"`, `"scenario": "other"`, 1)), 0o644)
	pods, _ := os.ReadFile(filepath.Join(good, "pods.jsonl")) // a format 1 directory
	os.WriteFile(filepath.Join(otherScenario, "pods.jsonl"), []byte(strings.ReplaceAll(string(pods), `"scenario":"tiny"`, `"scenario":"other"`)), 0o644)
	if _, errOut, code := run(t, "compare", "--force", good, otherScenario); code != ExitOK || errOut != "" {
		t.Errorf("--force: exit %d %q", code, errOut)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"compare"}, "at least two"},
		{[]string{"compare", good}, "at least two"},
		{[]string{"compare", good, otherScenario}, "--force"},
		{[]string{"compare", good, filepath.Join(dir, "missing")}, filepath.Join(dir, "missing")},
		{[]string{"compare", good, empty}, empty},
		{[]string{"compare", good, nopods}, filepath.Join(nopods, "pods.jsonl")},
		{[]string{"compare", good, badsum}, filepath.Join(badsum, render.SummaryFile)},
		{[]string{"compare", "--format", "xml", good, good}, "--format"},
		{[]string{"compare", "--alpha", "2", good, good}, "--alpha"},
		{[]string{"compare", "--policy-a", "none", good, good}, "go together"},
		{[]string{"compare", "--policy-a", "x", "--policy-b", "none", good, good}, "--policy-a x"},
		{[]string{"graduate", good}, "--criteria"},
		{[]string{"graduate", "--criteria", "alpha"}, "run directory"},
		{[]string{"graduate", "--criteria", filepath.Join(dir, "c.yaml"), good}, filepath.Join(dir, "c.yaml")},
		{[]string{"graduate", "--criteria", "alpha", filepath.Join(dir, "missing")}, filepath.Join(dir, "missing")},
	}
	for _, c := range cases {
		_, errOut, code := run(t, c.args...)
		if code != ExitUsage || !strings.HasPrefix(errOut, "sidebench "+c.args[0]+": ") || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q (want 2 and %q)", c.args, code, errOut, c.want)
		}
	}
}

func TestGraduate(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	runCmp(t, a, "testdata/cmp.yaml")
	runCmp(t, b, "testdata/cmp.yaml", "--seed", "99")

	// kep753 under beta: no violation, but 400 lifecycles cannot bound the
	// rate below 1e-3 and there are no Jobs: INSUFFICIENT DATA, exit 0.
	out, errOut, code := run(t, "graduate", "--criteria", "beta", a, b)
	if code != ExitOK {
		t.Fatalf("beta: exit %d %s\n%s", code, errOut, out)
	}
	for _, want := range []string{
		"CRITERION                STATUS",
		"\ncmp  kep753\n  violation-rate         INSUFFICIENT DATA  0 ",
		"\n  pod-startup            PASS",
		"overall (beta): INSUFFICIENT DATA",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("beta output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "cmp  none") {
		t.Errorf("the none baseline was judged:\n%s", out)
	}
	// The NEEDED column says how many more lifecycles.
	if !regexp.MustCompile(`violation-rate +INSUFFICIENT DATA .* \+[0-9]+\n`).MatchString(out) {
		t.Errorf("no trials-needed count:\n%s", out)
	}
	// Pooling: two run directories give twice the lifecycles of one.
	if !strings.Contains(out, "0 violations in 400 lifecycles") {
		t.Errorf("runs not pooled:\n%s", out)
	}

	// policy none violates by design: FAIL, exit 1.
	out, _, code = run(t, "graduate", "--criteria", "alpha", "--policy", "none", a)
	if code != ExitFailed || !strings.Contains(out, "violation-rate         FAIL") || !strings.Contains(out, "overall (alpha): FAIL") {
		t.Errorf("none: exit %d\n%s", code, out)
	}
	// Its sidecar overhead is against itself: NOT APPLICABLE, not a PASS
	// at ratio 1.
	if !regexp.MustCompile(`\n  sidecar-overhead +NOT APPLICABLE +- +- +3 `).MatchString(out) || !strings.Contains(out, "none sidecar-overhead: NOT APPLICABLE: ") {
		t.Errorf("none's sidecar overhead:\n%s", out)
	}

	// A criteria file the run meets: every criterion PASS, exit 0.
	crit := filepath.Join(dir, "loose.yaml")
	os.WriteFile(crit, []byte("stage: loose\nconfidence: 0.95\nviolationRate: {max: 0.05}\npodStartup: {quantile: 0.99, maxMs: 5000, useUpperBound: false}\n"), 0o644)
	out, errOut, code = run(t, "graduate", "--criteria", crit, a, b)
	if code != ExitOK || strings.Contains(out, "FAIL") || strings.Contains(out, "INSUFFICIENT") || !strings.Contains(out, "overall (loose): PASS") {
		t.Errorf("loose: exit %d %s\n%s", code, errOut, out)
	}

	// Without journal.jsonl nothing was committed: a usage error naming
	// the directories, not a verdict on nothing.
	if err := os.Remove(filepath.Join(a, rundir.FileJournal)); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := run(t, "graduate", "--criteria", "alpha", a); code != ExitUsage || !strings.Contains(errOut, "no committed trials") {
		t.Errorf("no journal: exit %d %q", code, errOut)
	}
}

// TestGraduateJudgesEachCriterionWhereItsEvidenceIs: over several run
// directories, sidecar-jobs-complete is judged in the scenario that has
// Jobs with sidecars and sidecar-overhead in the one with the none
// baseline; each is NOT APPLICABLE in the other, naming where it is
// judged. Every scenario had to hold both, so the INSUFFICIENT DATA note
// "such as scenarios/job-completion.yaml" did not help when followed.
func TestGraduateJudgesEachCriterionWhereItsEvidenceIs(t *testing.T) {
	dir := t.TempDir()
	cmp, jobs := filepath.Join(dir, "cmp"), filepath.Join(dir, "jobs")
	runCmp(t, cmp, "testdata/cmp.yaml")
	runCmp(t, jobs, "../../scenarios/job-completion.yaml")
	out, errOut, code := run(t, "graduate", "--criteria", "alpha", "--policy", "kep753", cmp, jobs)
	if code != ExitOK && code != ExitFailed {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, re := range []string{
		`\ncmp  kep753\n(  .*\n)*  sidecar-jobs-complete +NOT APPLICABLE +- +- `,
		`\ncmp  kep753\n(  .*\n)*  sidecar-overhead +(PASS|INSUFFICIENT DATA) `,
		`\njob-completion  kep753\n(  .*\n)*  sidecar-jobs-complete +(PASS|INSUFFICIENT DATA|FAIL) `,
		`\njob-completion  kep753\n(  .*\n)*  sidecar-overhead +NOT APPLICABLE +- +- `,
		`cmp kep753 sidecar-jobs-complete: NOT APPLICABLE: no Job with sidecars in this scenario: the criterion is judged in\s+job-completion`,
		`job-completion kep753 sidecar-overhead: NOT APPLICABLE: no pod_startup samples of this policy or of none in this\s+scenario: the criterion is judged in cmp`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("output does not match %s:\n%s", re, out)
		}
	}
	// --format json names each verdict's scenario and policy (the
	// embedded Verdict's MarshalJSON dropped them).
	js, errOut, code := run(t, "graduate", "--criteria", "alpha", "--policy", "kep753", "--format", "json", cmp, jobs)
	if code != ExitOK && code != ExitFailed {
		t.Fatalf("json: exit %d: %s", code, errOut)
	}
	var res struct {
		Verdicts []struct {
			Scenario  string `json:"scenario"`
			Policy    string `json:"policy"`
			Criterion string `json:"criterion"`
			Status    string `json:"status"`
		} `json:"verdicts"`
	}
	if err := json.Unmarshal([]byte(js), &res); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, v := range res.Verdicts {
		got[v.Scenario+" "+v.Policy+" "+v.Criterion] = v.Status
	}
	if len(res.Verdicts) != 8 || got["cmp kep753 sidecar-jobs-complete"] != "NOT APPLICABLE" || got["job-completion kep753 sidecar-overhead"] != "NOT APPLICABLE" {
		t.Errorf("json verdicts: %v\n%s", got, js)
	}
	// Alone, the scenario without Jobs is short of evidence, as before.
	out, _, _ = run(t, "graduate", "--criteria", "alpha", "--policy", "kep753", cmp)
	if !regexp.MustCompile(`\n  sidecar-jobs-complete +INSUFFICIENT DATA `).MatchString(out) {
		t.Errorf("cmp alone:\n%s", out)
	}
}

// TestGraduateFitsTheTerminal: graduate's table, like run's, fits
// render.TableWidth whatever the policy's name: the policy is named in
// full once, on its scenario's line, not in a column of every criterion's
// line (kep753+ContainerRestartRules+RestartAllContainersOnContainerExits
// +bug:reset-trigger-first made every line 190 columns wide).
func TestGraduateFitsTheTerminal(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	scen := filepath.Join(t.TempDir(), "long.yaml")
	data, err := os.ReadFile("testdata/cmp.yaml")
	if err != nil {
		t.Fatal(err)
	}
	long := "kep753+ContainerRestartRules+RestartAllContainersOnContainerExits+bug:reset-trigger-first"
	text := regexp.MustCompile(`(?m)^policies:.*$`).ReplaceAllString(string(data), "policies: ["+long+", none]")
	if err := os.WriteFile(scen, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := run(t, "run", "--quiet", "--out", dir, scen); code != ExitOK && code != ExitFailed {
		t.Fatalf("run: exit %d %s", code, errOut)
	}
	out, errOut, code := run(t, "graduate", "--criteria", "beta", dir)
	if code != ExitOK && code != ExitFailed {
		t.Fatalf("graduate: exit %d %s", code, errOut)
	}
	if !strings.Contains(out, "cmp  "+long+"\n  violation-rate ") {
		t.Errorf("no group line naming the policy in full:\n%s", out)
	}
	for _, l := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(l); n > render.TableWidth {
			t.Errorf("%d columns: %s", n, l)
		}
	}
}

// TestGraduateGolden judges the committed tiny scenario's run.
func TestGraduateGolden(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	_, errOut, code := run(t, "run", "--quiet", "--out", dir, "testdata/tiny.yaml")
	if code != ExitOK && code != ExitFailed {
		t.Fatalf("run: exit %d %s", code, errOut)
	}
	out, errOut, code := run(t, "graduate", "--criteria", "alpha", dir)
	if code != ExitOK && code != ExitFailed {
		t.Fatalf("graduate: exit %d %s", code, errOut)
	}
	golden(t, "graduate", fmt.Sprintf("exit %d\n%s", code, out))
}

// TestGraduateUnknownPolicyNamesTheRunsPolicies: graduate --policy with a
// policy the directories did not run names the ones they did.
func TestGraduateUnknownPolicyNamesTheRunsPolicies(t *testing.T) {
	a := filepath.Join(t.TempDir(), "a")
	runCmp(t, a, "testdata/cmp.yaml")
	_, errOut, code := run(t, "graduate", "--criteria", "beta", "--policy", "kep753-2019", a)
	if want := "--policy kep753-2019: not in [" + a + "], which ran kep753, none"; code != ExitUsage || !strings.Contains(errOut, want) {
		t.Errorf("exit %d %q; want exit %d saying %q", code, errOut, ExitUsage, want)
	}
}
