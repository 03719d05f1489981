package cli

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// flagNamed matches a long flag named in a message ("--allow-mixed").
var flagNamed = regexp.MustCompile(`(?:^|[\s('"])--([a-z][a-z0-9-]*)`)

// adviceFlagsExist fails the test if msg, printed by `sidebench <command>`,
// names a long flag that command does not define: advice must be followable.
func adviceFlagsExist(t *testing.T, command []string, msg string) {
	t.Helper()
	root := NewRootCommand(IOStreams{Out: io.Discard, ErrOut: io.Discard})
	cmd, _, err := root.Find(command)
	if err != nil {
		t.Fatalf("sidebench %v: %v", command, err)
	}
	for _, m := range flagNamed.FindAllStringSubmatch(msg, -1) {
		if cmd.Flags().Lookup(m[1]) == nil && cmd.InheritedFlags().Lookup(m[1]) == nil {
			t.Errorf("sidebench %s names --%s, which it does not have: %q", strings.Join(command, " "), m[1], msg)
		}
	}
}

// TestMixedContentAdvice: runs whose scenario of one name differs in
// content are refused by merge and by graduate, each with advice naming
// only flags it has: graduate offers its --allow-mixed (which then pools
// them), merge has no such flag. Merge used to say "pass --allow-mixed",
// which it rejects as an unknown flag.
func TestMixedContentAdvice(t *testing.T) {
	base := t.TempDir()
	a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
	if _, errOut, code := run(t, "run", "--quiet", "--trials", "1", "--out", a, "testdata/tiny.yaml"); code != ExitOK {
		t.Fatalf("run a: %d %s", code, errOut)
	}
	if _, errOut, code := run(t, "run", "--quiet", "--trials", "1", "--out", b, scenarioWith(t, "  podStartupP99: 11s\n")); code != ExitOK {
		t.Fatalf("run b: %d %s", code, errOut)
	}

	_, errOut, code := run(t, "merge", "--out", filepath.Join(base, "m"), a, b)
	if code != ExitUsage || !strings.Contains(errOut, "other content") {
		t.Fatalf("merge: exit %d %q", code, errOut)
	}
	adviceFlagsExist(t, []string{"merge"}, errOut)

	_, errOut, code = run(t, "graduate", "--criteria", "beta", a, b)
	if code != ExitUsage || !strings.Contains(errOut, "--allow-mixed") {
		t.Fatalf("graduate: exit %d %q", code, errOut)
	}
	adviceFlagsExist(t, []string{"graduate"}, errOut)
	if out, errOut, code := run(t, "graduate", "--criteria", "beta", "--allow-mixed", a, b); code == ExitUsage || !strings.Contains(out, "[mixed]") {
		t.Errorf("graduate --allow-mixed, as advised: exit %d %q\n%s", code, errOut, out)
	}
}

// TestReportSaysWhatFailsTheRun: report.md's footnote says what fails a
// run; a run with no violation that fails on a latency criterion, or on
// its degradations under maxDegradations, must not be told "only
// violations fail the run" (it was).
func TestReportSaysWhatFailsTheRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	if _, errOut, code := run(t, "run", "--quiet", "--out", dir, scenarioWith(t, "  podStartupP99: 1s\n")); code != ExitFailed {
		t.Fatalf("a p99 above its 1s criterion: exit %d (want %d) %s", code, ExitFailed, errOut)
	}
	sum := readState(t, filepath.Join(dir, "summary.json"))
	for _, r := range sum.Rows {
		if r.Role == "judged" && r.Violations != 0 {
			t.Fatalf("the judged policy has %d violations; the test needs a failure without one", r.Violations)
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(md), "Only violations fail the run") {
		t.Errorf("report.md says only violations fail the run; this one failed with none (verdict %s)", sum.Verdict)
	}
	if !strings.Contains(string(md), "latency criteria can fail it") || !strings.Contains(string(md), "maxDegradations") {
		t.Errorf("report.md does not say what else fails a run")
	}
}

// TestExplicitZeroFlags: a --seed 0, --trials 0 or --shards 0 the user
// typed is not silently replaced by the scenario's seed or trials or by no
// sharding (it was: --seed 0 ran tiny's seed 42, --shards 0 the whole
// run). Each is refused, and the seed refusal's advice (seed: 0 in the
// scenario) runs with master seed 0.
func TestExplicitZeroFlags(t *testing.T) {
	base := t.TempDir()
	t.Setenv("JOB_COMPLETION_INDEX", "1")
	for _, flag := range []string{"--seed", "--trials", "--shards"} {
		dir := filepath.Join(base, flag[2:])
		_, errOut, code := run(t, "run", "--quiet", flag, "0", "--out", dir, "testdata/tiny.yaml")
		if code == ExitUsage {
			adviceFlagsExist(t, []string{"run"}, errOut)
			continue
		}
		if code != ExitOK {
			t.Fatalf("run %s 0: exit %d %s", flag, code, errOut)
		}
		st := readState(t, filepath.Join(dir, "summary.json"))
		t.Errorf("run %s 0: exit %d, ran %d trials (want a refusal, not the scenario's value)", flag, code, st.TrialsCommitted)
	}
	_, errOut, _ := run(t, "run", "--quiet", "--seed", "0", "--out", filepath.Join(base, "again"), "testdata/tiny.yaml")
	if !strings.Contains(errOut, "set seed: 0 in the scenario") {
		t.Fatalf("--seed 0: %q", errOut)
	}
	src, _ := os.ReadFile("testdata/tiny.yaml")
	seed0 := filepath.Join(base, "seed0.yaml")
	os.WriteFile(seed0, []byte(strings.Replace(string(src), "seed: 42\n", "seed: 0\n", 1)), 0o644)
	dir := filepath.Join(base, "seed0")
	if _, errOut, code := run(t, "run", "--quiet", "--trials", "1", "--out", dir, seed0); code != ExitOK {
		t.Fatalf("seed: 0 in the scenario: exit %d %s", code, errOut)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "summary.json"))
	var sum struct {
		Run struct {
			Seed *uint64 `json:"seed"`
		} `json:"run"`
	}
	if err := json.Unmarshal(b, &sum); err != nil || sum.Run.Seed == nil || *sum.Run.Seed != 0 {
		t.Errorf("seed: 0 in the scenario: summary.json run.seed %v (%v)", sum.Run.Seed, err)
	}
}
