package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

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

// latencyRows returns the latency rows of a text comparison (policy,
// metric, ..., vs A, ...).
func latencyRows(out string) [][]string {
	var rows [][]string
	in := false
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 1 && f[0] == "policy" && f[1] == "metric":
			in = true
		case len(f) == 0:
			if in && len(rows) > 0 {
				return rows
			}
		case in:
			rows = append(rows, f)
		}
	}
	return rows
}

func TestCompareRuns(t *testing.T) {
	dir := t.TempDir()
	a, b, slow := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "slow")
	runCmp(t, a, "testdata/cmp.yaml")
	runCmp(t, b, "testdata/cmp.yaml", "--seed", "99")
	runCmp(t, slow, slowVariant(t, dir), "--seed", "99")

	// Same scenario, different seed: no significant regression.
	out, errOut, code := run(t, "compare", a, b)
	if code != ExitOK {
		t.Fatalf("compare a b: exit %d, stderr %q\n%s", code, errOut, out)
	}
	rows := latencyRows(out)
	if len(rows) < 4 {
		t.Fatalf("latency rows: %v\n%s", rows, out)
	}
	same := 0
	for _, r := range rows {
		if r[4] == "~" {
			same++
		}
		if r[0] == "kep753" && r[1] == "pod_startup" && !strings.HasSuffix(r[len(r)-1], "+200") {
			t.Errorf("pod_startup row %v: want 200+200 samples", r)
		}
	}
	if same*2 <= len(rows) {
		t.Errorf("only %d of %d rows are ~:\n%s", same, len(rows), out)
	}
	if strings.Contains(out, "REGRESSION") || !strings.Contains(out, "no regression") {
		t.Errorf("regression reported:\n%s", out)
	}

	// Sidecar start 200ms slower: pod_startup regresses, exit 1.
	out, errOut, code = run(t, "compare", a, slow)
	if code != ExitFailed {
		t.Fatalf("compare a slow: exit %d, stderr %q\n%s", code, errOut, out)
	}
	if !regexp.MustCompile(`(?m)^REGRESSION: kep753 pod_startup: median \S+ → \S+ ms \(\+`).MatchString(out) {
		t.Errorf("no pod_startup regression line:\n%s", out)
	}
	for _, r := range latencyRows(out) {
		if r[0] == "kep753" && r[1] == "pod_startup" && (r[4] == "~" || r[len(r)-1] != "REGRESSION") {
			t.Errorf("pod_startup row %v", r)
		}
	}
	// A threshold above the change: significant, but not a regression.
	if _, _, code := run(t, "compare", "--threshold", "0.5", a, slow); code != ExitOK {
		t.Errorf("--threshold 0.5: exit %d", code)
	}

	// JSON and Markdown carry the same verdict.
	js, _, code := run(t, "compare", "--format", "json", a, slow)
	var doc struct {
		RegressionFound bool `json:"regressionFound"`
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil || !doc.RegressionFound || code != ExitFailed {
		t.Errorf("json: err %v, regressionFound %v, exit %d\n%.300s", err, doc.RegressionFound, code, js)
	}
	md, _, code := run(t, "compare", "--format", "md", a, b)
	if code != ExitOK || !strings.Contains(md, "|") {
		t.Errorf("md: exit %d\n%.300s", code, md)
	}

	// Two policies of one run: the sidecar overhead of kep753 over none.
	out, errOut, code = run(t, "compare", "--policy-a", "none", "--policy-b", "kep753", a, a)
	if code == ExitUsage || code == ExitInternal || !strings.Contains(out, "pod_startup") {
		t.Errorf("--policy-a/b: exit %d %s\n%s", code, errOut, out)
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
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"compare"}, "exactly two"},
		{[]string{"compare", good}, "exactly two"},
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
		if code != ExitUsage || !strings.HasPrefix(errOut, "sidebench: ") || !strings.Contains(errOut, c.want) {
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
		"SCENARIO  POLICY  CRITERION",
		"cmp       kep753  violation-rate         INSUFFICIENT DATA  0 ",
		"cmp       kep753  pod-startup            PASS",
		"overall (beta): INSUFFICIENT DATA",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("beta output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "cmp       none") {
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
