package runner

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sidebench/sidebench/harness/rundir"
	"github.com/sidebench/sidebench/harness/scenario"
	"github.com/sidebench/sidebench/internal/version"
	"github.com/sidebench/sidebench/reports/compare"
)

// runsDir runs each scenario into dir/<name>, as 'run --out dir a.yaml
// b.yaml' does, and returns dir.
func runsDir(t *testing.T, dir string, scens ...*scenario.Scenario) string {
	t.Helper()
	var jobs []Job
	for _, s := range scens {
		jobs = append(jobs, Job{Scenario: s, Dir: filepath.Join(dir, s.Metadata.Name)})
	}
	if _, err := Run(context.Background(), opts(fake{}), jobs); err != nil {
		t.Fatal(err)
	}
	return dir
}

// named is the test scenario under another name; extra (a comment)
// changes its content, not its meaning.
func named(t *testing.T, name, extra string) *scenario.Scenario {
	t.Helper()
	src, err := os.ReadFile("testdata/tiny.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src = bytes.Replace(src, []byte("name: tiny"), []byte("name: "+name), 1)
	file := filepath.Join(t.TempDir(), name+".yaml")
	if err := os.WriteFile(file, append(src, "# "+extra+"\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := scenario.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestMergeAllDirectoriesOfRuns: two directories of runs (the shards of a
// two-scenario run) merge scenario by scenario into OUT/<name>, in name
// order; when a scenario cannot be merged, the ones merged before it are
// complete runs, returned, and named in the error.
func TestMergeAllDirectoriesOfRuns(t *testing.T) {
	base := t.TempDir()
	a, b := named(t, "a", ""), named(t, "b", "")
	s0 := runsDir(t, filepath.Join(base, "s0"), b, a)
	s1 := runsDir(t, filepath.Join(base, "s1"), a, b)
	out := filepath.Join(base, "out")
	results, err := MergeAll(context.Background(), MergeOptions{Dirs: []string{s0, s1}, Out: out, Build: version.Info{Version: "test"}})
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, r := range results {
		dirs = append(dirs, r.Dirs...)
	}
	if want := []string{filepath.Join(out, "a"), filepath.Join(out, "b")}; !slices.Equal(dirs, want) {
		t.Fatalf("merged into %v, want %v", dirs, want)
	}
	for _, d := range dirs {
		// The inputs ran the same seeds: each trial is merged once.
		if got, want := keys(t, d), keys(t, filepath.Join(s1, filepath.Base(d))); !slices.Equal(got, want) {
			t.Errorf("%s: trials %v, want %v", d, got, want)
		}
	}
	if _, err := MergeAll(context.Background(), MergeOptions{Dirs: []string{s0, s1}, Out: out}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("merge into a non-empty --out: %v", err)
	}

	// s2/b is another scenario named b: a merges, b is refused.
	s2 := runsDir(t, filepath.Join(base, "s2"), a, named(t, "b", "edited"))
	out2 := filepath.Join(base, "out2")
	results, err = MergeAll(context.Background(), MergeOptions{Dirs: []string{s0, s2}, Out: out2})
	var ue *rundir.UsageError
	if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), "stopped at b (a merged)") {
		t.Fatalf("merge with a mismatched b: %v, want a usage error naming a as merged", err)
	}
	if len(results) != 1 || results[0].Dirs[0] != filepath.Join(out2, "a") || !rundir.IsRun(results[0].Dirs[0]) {
		t.Errorf("results before the failure: %+v", results)
	}
}

// TestCompareDirectoriesOfRuns: directories of runs compare scenario by
// scenario (a table each, in name order); a scenario missing from one
// side is a usage error naming it.
func TestCompareDirectoriesOfRuns(t *testing.T) {
	base := t.TempDir()
	a, b := named(t, "a", ""), named(t, "b", "")
	x := runsDir(t, filepath.Join(base, "x"), a, b)
	y := runsDir(t, filepath.Join(base, "y"), b, a)
	tables, err := Compare([]string{x, y}, compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var scens []string
	for _, tb := range tables {
		scens = append(scens, tb.Runs[0].Scenario)
	}
	if !slices.Equal(scens, []string{"a", "b"}) {
		t.Errorf("tables of %v, want a then b", scens)
	}
	one, err := Compare([]string{filepath.Join(x, "a"), filepath.Join(y, "a")}, compare.Options{})
	if err != nil || len(one) != 1 {
		t.Errorf("two runs: %d tables, %v", len(one), err)
	}
	z := runsDir(t, filepath.Join(base, "z"), a)
	var ue *rundir.UsageError
	if _, err := Compare([]string{x, z}, compare.Options{}); err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), `no run "b"`) {
		t.Errorf("z lacks b: %v", err)
	}
}
