package cli

import (
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
