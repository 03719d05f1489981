package check

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckCommandMalformed: `sidebench check` on the histories of
// testdata/malformed (issue 15, items 14 and 16). A history that holds no
// pod (empty, or the run.meta a SIGKILLed run leaves) fails with "no pods
// checked" (exit 1: nothing was verified); a history whose t goes
// backwards within a run is malformed (exit 2, naming the line), like one
// with an unknown kind or a broken line.
func TestCheckCommandMalformed(t *testing.T) {
	for _, tt := range []struct {
		file   string
		code   int
		stderr string
	}{
		{"empty.jsonl", 1, "check: no pods checked (testdata/malformed/empty.jsonl)"},
		{"meta-only.jsonl", 1, "check: no pods checked (scenario=golden policy=kep753 in testdata/malformed/meta-only.jsonl)"},
		{"t-backwards.jsonl", 2, "history line 30: t goes backwards: t=599000000 is before t=600000000 of line 29"},
		{"unknown-kind.jsonl", 2, `history line 21: unknown kind "pod.bogus"`},
		{"broken-line.jsonl", 2, `history line 41: field "node": expected a string`},
	} {
		t.Run(tt.file, func(t *testing.T) {
			var out, errb strings.Builder
			code := RunCheckCommand(&out, &errb, []string{filepath.Join("testdata", "malformed", tt.file)}, nil)
			if code != tt.code || !strings.Contains(errb.String(), tt.stderr) {
				t.Fatalf("exit %d, stderr %q; want exit %d and %q", code, errb.String(), tt.code, tt.stderr)
			}
		})
	}
}

// A run with pods next to a run without any: the empty one is reported
// (0 pods) and fails the check; the other keeps its table.
func TestCheckCommandRunWithoutPods(t *testing.T) {
	ok, err := os.ReadFile("testdata/kep753-ok.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	meta := strings.Replace(strings.SplitN(string(ok), "\n", 2)[0], `"policy":"kep753"`, `"policy":"none"`, 1)
	path := filepath.Join(t.TempDir(), "h.jsonl")
	if err := os.WriteFile(path, append(ok, meta+"\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb strings.Builder
	if code := RunCheckCommand(&out, &errb, []string{path}, nil); code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "no pods checked (scenario=golden policy=none") || strings.Contains(errb.String(), "policy=kep753 in") {
		t.Fatalf("stderr: %s", errb.String())
	}
	if !strings.Contains(out.String(), "policy=kep753 ") || !strings.Contains(out.String(), "policy=none ") {
		t.Fatalf("stdout lacks a table:\n%s", out.String())
	}
}

// Every scenario × policy gets a report with its own Runner: a history
// whose every run names a new scenario is refused past MaxReports, naming
// the line, instead of starting a Runner per line.
func TestCheckCommandTooManyReports(t *testing.T) {
	var b strings.Builder
	for i := range MaxReports + 1 {
		fmt.Fprintf(&b, `{"t":0,"k":"run.meta","meta":{"scenario":"s%d","seed":1,"trial":0,"policy":"kep753","backend":"sim","version":"v"}}`+"\n", i)
		b.WriteString(`{"t":0,"k":"pod.scheduled","pod":"default/p0","node":"n"}` + "\n")
	}
	path := filepath.Join(t.TempDir(), "h.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb strings.Builder
	code := RunCheckCommand(&out, &errb, []string{path}, nil)
	want := fmt.Sprintf("history line %d: more than %d scenario × policy combinations", 2*MaxReports+1, MaxReports)
	if code != 2 || !strings.Contains(errb.String(), want) {
		t.Fatalf("exit %d, stderr %q; want 2 and %q", code, errb.String(), want)
	}
}

// TestCheckCommandNamesTheTrials: a history of several trials of one
// scenario × policy (a run directory) is one report; its header counts the
// trials and each finding names its trial, since every trial has pods of
// the same names (the header gave the first trial's seed and number as if
// only it had been checked).
func TestCheckCommandNamesTheTrials(t *testing.T) {
	none, err := os.ReadFile("testdata/none.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	second := strings.Replace(string(none), `"trial":0`, `"trial":1`, 1)
	if second == string(none) {
		t.Fatal("no trial in the run.meta line")
	}
	path := filepath.Join(t.TempDir(), "h.jsonl")
	if err := os.WriteFile(path, append(none, second...), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb strings.Builder
	if code := RunCheckCommand(&out, &errb, []string{path}, nil); code != 1 {
		t.Fatalf("exit %d, want 1 (violations)\n%s", code, errb.String())
	}
	text := out.String()
	if !strings.HasPrefix(text, "runs: scenario=golden policy=none backend=sim trials=2 (the first: seed=1 trial=0)\n") {
		t.Errorf("header:\n%s", text)
	}
	for _, trial := range []string{" trial=0 pod=", " trial=1 pod="} {
		if !strings.Contains(text, trial) {
			t.Errorf("no finding with %q:\n%s", trial, text)
		}
	}
	// One trial: the header and the findings as before.
	out.Reset()
	RunCheckCommand(&out, &errb, []string{"testdata/none.jsonl"}, nil)
	if !strings.HasPrefix(out.String(), "run: scenario=golden policy=none backend=sim seed=1 trial=0\n") || strings.Contains(out.String(), " trial=0 pod=") {
		t.Errorf("one trial:\n%s", out.String())
	}
}

// TestCheckCommandCountsATrialOnce: a trial given twice (a run directory
// and its merge, a history and its copy) was checked twice, doubling its
// pods and findings, where graduate and merge count it once. Histories
// without a scenario hash (older runs) cannot be told apart and are not
// deduplicated.
func TestCheckCommandCountsATrialOnce(t *testing.T) {
	none, err := os.ReadFile("testdata/none.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	hashed := strings.Replace(string(none), `"scenario":"golden",`, `"scenario":"golden","scenarioHash":"h1",`, 1)
	if hashed == string(none) {
		t.Fatal("no scenario in the run.meta line")
	}
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b := write("a.jsonl", hashed), write("b.jsonl", hashed)
	var once, twice, errb strings.Builder
	RunCheckCommand(&once, &errb, []string{a}, nil)
	errb.Reset()
	RunCheckCommand(&twice, &errb, []string{a, b}, nil)
	if twice.String() != once.String() {
		t.Errorf("a trial given twice was not checked once:\n%s\nwant\n%s", twice.String(), once.String())
	}
	if want := "check: warning: " + b + ": 1 trials (same scenario content, policy, seed and trial number) were in an earlier input too: each checked once\n"; errb.String() != want {
		t.Errorf("stderr %q, want %q", errb.String(), want)
	}
	// Other content (another hash) is another trial.
	c := write("c.jsonl", strings.Replace(hashed, `"h1"`, `"h2"`, 1))
	var out strings.Builder
	errb.Reset()
	RunCheckCommand(&out, &errb, []string{a, c}, nil)
	if !strings.HasPrefix(out.String(), "runs: scenario=golden policy=none backend=sim trials=2 ") || errb.Len() != 0 {
		t.Errorf("two contents:\n%s%s", out.String(), errb.String())
	}
	// Without a hash: checked as given.
	out.Reset()
	errb.Reset()
	RunCheckCommand(&out, &errb, []string{"testdata/none.jsonl", "testdata/none.jsonl"}, nil)
	if !strings.HasPrefix(out.String(), "runs: scenario=golden policy=none backend=sim trials=2 ") {
		t.Errorf("no hash:\n%s", out.String())
	}
}
