package cli

import (
	"io"
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
