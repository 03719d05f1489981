package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sidebench/sidebench/harness/rundir"
)

// explain exits 2, like check, on a history it cannot read (issue 15,
// item 15: a malformed history was an internal error, exit 3), and names
// the file and line.
func TestExplainMalformedHistory(t *testing.T) {
	dir := filepath.Join("..", "check", "testdata", "malformed")
	for _, tt := range []struct {
		file, want string
	}{
		{"unknown-kind.jsonl", `history line 21: unknown kind "pod.bogus"`},
		{"broken-line.jsonl", `history line 41: field "node": expected a string`},
		{"t-backwards.jsonl", "history line 30: t goes backwards"},
		{"empty.jsonl", `no pod "web-0"`},
		{"meta-only.jsonl", `no pod "web-0"`},
	} {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join(dir, tt.file)
			_, stderr, code := run(t, "explain", path, "--pod", "web-0")
			if code != ExitUsage || !strings.Contains(stderr, tt.want) || !strings.Contains(stderr, path) {
				t.Fatalf("exit %d, stderr %q; want exit %d naming %s and %q", code, stderr, ExitUsage, path, tt.want)
			}
			_, stderr, code = run(t, "check", path)
			if code == ExitOK || code == ExitInternal {
				t.Fatalf("check: exit %d (%s)", code, stderr)
			}
		})
	}
}

// FuzzExplain runs `sidebench explain` on an arbitrary run directory (a
// history and a findings file): whatever the bytes, it exits 0 (printed a
// timeline) or 2 (no such pod, or an unreadable history), never 3 or a
// panic. `make test` runs it for a few seconds; testdata/fuzz/FuzzExplain
// is its committed corpus.
func FuzzExplain(f *testing.F) {
	hist, _ := filepath.Glob(filepath.Join("..", "check", "testdata", "*.jsonl"))
	bad, _ := filepath.Glob(filepath.Join("..", "check", "testdata", "malformed", "*.jsonl"))
	finding := []byte(`{"scenario":"golden","policy":"kep753","trial":0,"pod":"default/web-0","id":"INV-S1","class":"violation","msg":"m"}` + "\n")
	for _, p := range append(hist, bad...) {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b, finding)
		}
	}
	f.Fuzz(func(t *testing.T, history, findings []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, rundir.FileHistory), history, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, rundir.FileFindings), findings, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"--pod", "web-0", "--all"}, {"--pod", "default/job-0", "--trial", "0", "--policy", "kep753"}} {
			_, stderr, code := run(t, append([]string{"explain", dir}, args...)...)
			if code != ExitOK && code != ExitUsage {
				t.Fatalf("explain %v: exit %d: %s", args, code, stderr)
			}
		}
	})
}

// TestExplainNamesWhatTheRunHas: a --policy or --trial the run directory
// does not have is refused as such, naming the policies or trials it has.
// Before, a policy it did not run and a trial past its last were "no pod
// \"default/web-0\" in ...", and a misspelt policy listed every policy
// sidebench knows rather than the run's.
func TestExplainNamesWhatTheRunHas(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	if _, errOut, code := run(t, "run", "--quiet", "--out", dir, "testdata/tiny.yaml"); code != ExitOK && code != ExitFailed {
		t.Fatalf("run: exit %d %s", code, errOut)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--policy", "kep753-2019"}, "--policy kep753-2019: not in " + dir + ", which ran kep753, none"},
		{[]string{"--policy", "kep7533"}, `--policy "kep7533": not a policy; ` + dir + " ran kep753, none"},
		{[]string{"--trial", "9"}, "--trial 9: not in " + dir + ", which has trials 0-1"},
	} {
		_, errOut, code := run(t, append([]string{"explain", dir, "--pod", "web-0"}, tc.args...)...)
		if code != ExitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("explain %v: exit %d %q; want exit %d saying %q", tc.args, code, errOut, ExitUsage, tc.want)
		}
	}
	// What the run has still explains.
	if out, errOut, code := run(t, "explain", dir, "--pod", "web-0", "--policy", "none", "--trial", "1"); code != ExitOK || out == "" {
		t.Errorf("explain of a pod the run has: exit %d %s", code, errOut)
	}
	// The listing (no --pod) checks them the same way, and lists only the
	// pods of the policy and trial given (it ignored both and listed
	// every pod with findings).
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--policy", "kep753-2019"}, "--policy kep753-2019: not in " + dir + ", which ran kep753, none"},
		{[]string{"--trial", "9"}, "--trial 9: not in " + dir + ", which has trials 0-1"},
	} {
		_, errOut, code := run(t, append([]string{"explain", dir}, tc.args...)...)
		if code != ExitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("explain %v (listing): exit %d %q; want exit %d saying %q", tc.args, code, errOut, ExitUsage, tc.want)
		}
	}
	out, errOut, code := run(t, "explain", dir, "--policy", "none", "--trial", "1", "--all")
	if code != ExitOK || !strings.Contains(out, " of policy none of trial 1 (violations first)\n") {
		t.Fatalf("listing of none, trial 1: exit %d %s\n%s", code, errOut, out)
	}
	rows := 0
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 2 && strings.HasPrefix(f[2], "default/") {
			rows++
			if f[0] != "none" || f[1] != "1" {
				t.Errorf("listed a pod of policy %s, trial %s: %s", f[0], f[1], l)
			}
		}
	}
	if rows == 0 {
		t.Errorf("no pod listed:\n%s", out)
	}
	if out, _, _ := run(t, "explain", dir, "--policy", "kep753"); out != dir+": no findings of policy kep753 (2 committed trials): every invariant held on every pod\n" {
		t.Errorf("listing of kep753:\n%s", out)
	}
}
