package cli

import (
	"encoding/json"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDirectoryOfRuns: `run --out DIR a.yaml b.yaml` writes DIR/a and
// DIR/b, and every command that reads runs takes DIR for them. Before,
// explain listed DIR as a run without findings ("every invariant held on
// every pod", exit 0) although DIR/a had hundreds of violations, and the
// others refused it ("not a run directory").
func TestDirectoryOfRuns(t *testing.T) {
	tmp := t.TempDir()
	cmp := filepath.Join(tmp, "cmp.yaml")
	b, err := os.ReadFile("testdata/cmp.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cmp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	scenarios := []string{"testdata/tiny.yaml", cmp}
	full := filepath.Join(tmp, "full")
	if _, errOut, code := run(t, append([]string{"run", "--quiet", "--out", full}, scenarios...)...); code != ExitOK && code != ExitFailed {
		t.Fatalf("run: exit %d %s", code, errOut)
	}
	var shards []string
	for i := range 2 {
		sh := filepath.Join(tmp, "shard-"+string(rune('0'+i)))
		if _, errOut, code := run(t, append([]string{"run", "--quiet", "--shard", string(rune('0'+i)) + "/2", "--out", sh}, scenarios...)...); code != ExitOK && code != ExitFailed {
			t.Fatalf("run shard %d: exit %d %s", i, code, errOut)
		}
		shards = append(shards, sh)
	}

	// explain lists every run's pods with findings, as for each run alone.
	out, errOut, code := run(t, "explain", full)
	if code != ExitOK {
		t.Fatalf("explain DIR: exit %d %s", code, errOut)
	}
	for _, name := range []string{"cmp", "tiny"} {
		alone, _, _ := run(t, "explain", filepath.Join(full, name))
		if !strings.Contains(out, alone) || !strings.Contains(alone, " findings on ") {
			t.Errorf("explain DIR lacks the listing of %s:\n%s\nin\n%s", name, alone, out)
		}
	}
	if _, errOut, code := run(t, "explain", full, "--pod", "web-0"); code != ExitUsage || !strings.Contains(errOut, "holds the runs of cmp, tiny: --pod needs one of them") {
		t.Errorf("explain DIR --pod: exit %d %s", code, errOut)
	}

	// check and graduate read the runs as if each were named.
	named := []string{filepath.Join(full, "cmp"), filepath.Join(full, "tiny")}
	for _, args := range [][]string{{"check"}, {"graduate", "--criteria", "alpha"}, {"graduate", "--criteria", "beta", "--format", "json"}} {
		gotOut, _, gotCode := run(t, append(args, full)...)
		wantOut, _, wantCode := run(t, append(args, named...)...)
		if args[0] == "graduate" {
			gotOut, wantOut = withoutDirs(t, gotOut), withoutDirs(t, wantOut)
		}
		if gotCode != wantCode || gotOut != wantOut || gotOut == "" {
			t.Errorf("%v DIR: exit %d, want %d as for its runs named; output:\n%s\nwant:\n%s", args, gotCode, wantCode, gotOut, wantOut)
		}
	}

	// merge of the shards of a run of two scenarios is the unsharded run,
	// scenario by scenario, in the same layout.
	merged := filepath.Join(tmp, "merged")
	if _, errOut, code := run(t, append([]string{"merge", "--quiet", "--out", merged}, shards...)...); code != ExitOK && code != ExitFailed {
		t.Fatalf("merge of shard directories: exit %d %s", code, errOut)
	}
	for _, name := range []string{"cmp", "tiny"} {
		for _, f := range []string{"history.jsonl.zst", "pods.jsonl.zst", "findings.jsonl.zst", "trials.jsonl.zst"} {
			a, err := exec.Command("zstdcat", filepath.Join(full, name, f)).Output()
			if err != nil {
				t.Skipf("zstdcat: %v", err)
			}
			b, err := exec.Command("zstdcat", filepath.Join(merged, name, f)).Output()
			if err != nil {
				t.Fatalf("merged %s/%s: %v", name, f, err)
			}
			if string(a) != string(b) || len(a) == 0 {
				t.Errorf("merged %s/%s differs from the unsharded run's (%d and %d bytes)", name, f, len(b), len(a))
			}
		}
	}
	// A non-empty --out is refused as for one run (its runs go inside it).
	if _, errOut, code := run(t, append([]string{"merge", "--quiet", "--out", full}, shards...)...); code != ExitUsage || !strings.Contains(errOut, "output directory "+full+" exists and is not empty (use another --out)") {
		t.Errorf("merge of shard directories into a non-empty --out: exit %d %s", code, errOut)
	}
	if _, errOut, code := run(t, "merge", "--quiet", "--out", filepath.Join(tmp, "m2"), shards[0], filepath.Join(shards[1], "tiny")); code != ExitUsage || !strings.Contains(errOut, "give run directories (such as "+shards[0]+"/<scenario>) or directories of them, not both") {
		t.Errorf("merge of a run and a directory of runs: exit %d %s", code, errOut)
	}
	if err := os.RemoveAll(filepath.Join(shards[1], "cmp")); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := run(t, append([]string{"merge", "--quiet", "--out", filepath.Join(tmp, "m3")}, shards...)...); code != ExitUsage || !strings.Contains(errOut, shards[1]+`: no run "cmp" (the others have one)`) {
		t.Errorf("merge of shards that do not hold the same scenarios: exit %d %s", code, errOut)
	}

	// compare compares A/<name> with B/<name>: a table per scenario, the
	// JSON an array of them.
	out, errOut, code = run(t, "compare", full, merged)
	if code != ExitOK {
		t.Fatalf("compare DIR DIR: exit %d %s", code, errOut)
	}
	for _, name := range []string{"cmp", "tiny"} {
		alone, _, _ := run(t, "compare", filepath.Join(full, name), filepath.Join(merged, name))
		if !strings.Contains(out, strings.TrimRight(alone, "\n")) || alone == "" {
			t.Errorf("compare DIR DIR lacks the table of %s:\n%s", name, alone)
		}
	}
	js, _, _ := run(t, "compare", "--format", "json", full, merged)
	var tables []struct {
		Runs []struct{ Scenario string } `json:"runs"`
	}
	if err := json.Unmarshal([]byte(js), &tables); err != nil || len(tables) != 2 || tables[0].Runs[0].Scenario != "cmp" || tables[1].Runs[0].Scenario != "tiny" {
		t.Errorf("compare --format json DIR DIR: %v %+v\n%s", err, tables, js)
	}

	// One run directory of several scenarios (a soak of several, or a
	// merge of different scenarios' runs): the listing names each pod's
	// scenario, which pods of the same name in two scenarios needed, and
	// --scenario picks one.
	both := filepath.Join(tmp, "both")
	if _, errOut, code := run(t, "merge", "--quiet", "--out", both, filepath.Join(full, "cmp"), filepath.Join(full, "tiny")); code != ExitOK && code != ExitFailed {
		t.Fatalf("merge of two scenarios' runs: exit %d %s", code, errOut)
	}
	out, _, _ = run(t, "explain", both)
	if !strings.Contains(out, "SCENARIO  POLICY  TRIAL  POD") || !strings.Contains(out, "\ncmp       none    0      default/web-0 ") ||
		!strings.Contains(out, "timeline of one: sidebench explain "+both+" --pod default/web-0 --scenario cmp --trial 0 --policy none") {
		t.Errorf("listing of a run of two scenarios:\n%s", out)
	}
	out, _, _ = run(t, "explain", both, "--scenario", "tiny", "--all")
	if !strings.Contains(out, " of scenario tiny (violations first)") || strings.Contains(out, "SCENARIO") || strings.Count(out, "default/web-") == 0 {
		t.Errorf("listing of --scenario tiny:\n%s", out)
	}
	for _, scen := range []string{"cmp", "tiny"} {
		out, errOut, code := run(t, "explain", both, "--pod", "web-0", "--scenario", scen, "--policy", "none", "--trial", "0")
		if code != ExitOK || !strings.HasPrefix(out, "pod default/web-0  scenario="+scen+" policy=none trial=0") {
			t.Errorf("explain --pod web-0 --scenario %s: exit %d %s\n%s", scen, code, errOut, out)
		}
	}
	// Without --scenario, the first scenario's pod is shown, and the
	// others that have one of that name are named.
	out, errOut, code = run(t, "explain", both, "--pod", "web-0", "--policy", "none", "--trial", "0")
	if code != ExitOK || !strings.Contains(out, "scenario=cmp") || !strings.Contains(errOut, "scenario tiny has a pod web-0 too (this is cmp's): --scenario picks one") {
		t.Errorf("explain --pod web-0 of two scenarios: exit %d %s\n%.200s", code, errOut, out)
	}

	// The report of each scenario gives timelines' commands that show
	// that scenario's pod (the first scenario's web-0 came up before).
	for _, scen := range []string{"cmp", "tiny"} {
		page, err := os.ReadFile(filepath.Join(both, "reports", scen, "report.html"))
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`sidebench explain RUNDIR (--pod [^<]*)`).FindSubmatch(page)
		if m == nil {
			t.Fatalf("%s's report.html has no explain command", scen)
		}
		args := append([]string{"explain", both}, strings.Fields(html.UnescapeString(string(m[1])))...)
		out, errOut, code := run(t, args...)
		if code != ExitOK || !strings.Contains(out, " scenario="+scen+" ") {
			t.Errorf("%s's report command %v: exit %d %s\n%.300s", scen, args, code, errOut, out)
		}
	}
	if _, errOut, code := run(t, "explain", both, "--scenario", "nope"); code != ExitUsage || !strings.Contains(errOut, "--scenario nope: not in "+both+", which ran cmp, tiny") {
		t.Errorf("explain --scenario nope: exit %d %s", code, errOut)
	}

	// A command that takes one run says what a directory of runs holds
	// (it said "not a run directory: no such file or directory").
	if _, errOut, code := run(t, "soak", "--resume", full); code != ExitUsage || !strings.Contains(errOut, full+": not a run directory (no run.json): it holds the runs of cmp, tiny; give one of them, such as "+filepath.Join(full, "cmp")) {
		t.Errorf("soak --resume DIR of runs: exit %d %s", code, errOut)
	}

	// A directory with no run in it is named as such by every command.
	empty := t.TempDir()
	for _, args := range [][]string{{"explain", empty}, {"check", empty}, {"graduate", "--criteria", "alpha", empty}, {"compare", empty, empty}, {"merge", "--out", filepath.Join(tmp, "m4"), empty}} {
		want := empty + ": not a run directory (no run.json)"
		if _, errOut, code := run(t, args...); code != ExitUsage || !strings.Contains(errOut, want) {
			t.Errorf("%v: exit %d %s", args, code, errOut)
		}
	}
}

// withoutDirs drops the input directories from graduate's output (text:
// the "runs:" lines; json: "runs"), which name what was given.
func withoutDirs(t *testing.T, out string) string {
	t.Helper()
	if strings.HasPrefix(out, "{") {
		var m map[string]any
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "runs")
		b, _ := json.Marshal(m)
		return string(b)
	}
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if !strings.Contains(l, string(os.PathSeparator)) {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// TestRunSaysWhichScenariosItDidNotRun: a run of two scenarios that stops
// in the first (--max-disk here; Ctrl-C alike) printed a table of one
// scenario, as if it had been given one; the second is now named as not
// run.
func TestRunSaysWhichScenariosItDidNotRun(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r")
	_, errOut, code := run(t, "run", "--quiet", "--max-disk", "20KB", "--out", out, "testdata/tiny.yaml", "testdata/cmp.yaml")
	if code != ExitFailed || !strings.Contains(errOut, "sidebench: not run (the run stopped first): cmp\n") {
		t.Errorf("exit %d, stderr:\n%s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(out, "cmp")); !os.IsNotExist(err) {
		t.Errorf("cmp's directory: %v, want none", err)
	}
}
