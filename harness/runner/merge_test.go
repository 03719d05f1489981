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
	"github.com/sidebench/sidebench/reports/render"
)

func keys(t *testing.T, dir string) []rundir.Key {
	t.Helper()
	var out []rundir.Key
	if err := rundir.EachCommitted(dir, func(c *rundir.Committed) error { out = append(out, c.Entry.Key()); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestShardsMergeToTheRun: the 4 shards of a run are disjoint and
// together are the run (same trials, same seeds); merging them gives the
// run's data files byte for byte, and its counts, findings and verdicts.
func TestShardsMergeToTheRun(t *testing.T) {
	base := t.TempDir()
	s := load(t).WithOverrides(0, 5) // 2 policies × 5 trials
	whole := filepath.Join(base, "whole")
	res, err := Run(context.Background(), opts(fake{}), []Job{{Scenario: s, Dir: whole}})
	if err != nil {
		t.Fatal(err)
	}
	var shards []string
	var union []rundir.Key
	for i := range 4 {
		dir := filepath.Join(base, "shard", string(rune('0'+i)))
		o := opts(fake{})
		o.Shard = Shard{Index: i, Count: 4}
		if _, err := Run(context.Background(), o, []Job{{Scenario: s, Dir: dir}}); err != nil {
			t.Fatal(err)
		}
		ks := keys(t, dir)
		if len(ks) == 0 {
			t.Fatalf("shard %d ran nothing", i)
		}
		union = append(union, ks...)
		shards = append(shards, dir)
	}
	want := keys(t, whole)
	if len(union) != len(want) {
		t.Fatalf("shards ran %d trials, the run %d", len(union), len(want))
	}
	for _, k := range want {
		if !slices.Contains(union, k) {
			t.Errorf("trial %+v of the run is in no shard", k)
		}
	}

	merged := filepath.Join(base, "merged")
	mres, err := Merge(context.Background(), MergeOptions{Dirs: []string{shards[2], shards[0], shards[3], shards[1]}, Out: merged, Build: version.Info{Version: "test"}})
	if err != nil {
		t.Fatal(err)
	}
	// run.json names the run's scenarios once each, as the run's does.
	wi, err := rundir.ReadInfo(whole)
	if err != nil {
		t.Fatal(err)
	}
	mi, err := rundir.ReadInfo(merged)
	if err != nil {
		t.Fatal(err)
	}
	names := func(in rundir.Info) (out []string) {
		for _, s := range in.Scenarios {
			out = append(out, s.Name+"@"+s.Hash)
		}
		return out
	}
	if !slices.Equal(names(wi), names(mi)) {
		t.Errorf("merged run.json scenarios %v, the run's %v", names(mi), names(wi))
	}
	for _, f := range []string{rundir.FileHistory, rundir.FilePods, rundir.FileFindings, rundir.FileTrials, rundir.FileJournal} {
		a, _ := os.ReadFile(filepath.Join(whole, f))
		b, _ := os.ReadFile(filepath.Join(merged, f))
		if !bytes.Equal(a, b) || len(a) == 0 {
			t.Errorf("%s: merged shards differ from the run (%d vs %d bytes)", f, len(b), len(a))
		}
	}
	if !slices.EqualFunc(res.State.State.Rows, mres.State.State.Rows, func(x, y render.StateRow) bool {
		return x.Policy == y.Policy && x.Trials == y.Trials && x.Pods == y.Pods && x.Violations == y.Violations &&
			x.Degradations == y.Degradations && x.PodStartupMs == y.PodStartupMs && x.Status == y.Status
	}) || res.State.State.Verdict != mres.State.State.Verdict {
		t.Errorf("rows differ:\n%+v\n%+v", res.State.State.Rows, mres.State.State.Rows)
	}
	// The reports: the same but for the lines naming the run itself.
	for _, f := range []string{render.MarkdownFile, render.JUnitFile} {
		a, _ := os.ReadFile(filepath.Join(whole, f))
		b, _ := os.ReadFile(filepath.Join(merged, f))
		if x, y := stable(a), stable(b); x != y {
			t.Errorf("%s differs:\n%s\nvs\n%s", f, x, y)
		}
	}

	// A shard given twice is counted once, with a warning.
	var log bytes.Buffer
	again := filepath.Join(base, "again")
	if _, err := Merge(context.Background(), MergeOptions{Dirs: append(shards, shards[1]), Out: again, Log: &log}); err != nil {
		t.Fatal(err)
	}
	if a, b := keys(t, again), keys(t, merged); !slices.Equal(a, b) || !strings.Contains(log.String(), "already counted") {
		t.Errorf("duplicate shard: %d trials (want %d), log %q", len(a), len(b), log.String())
	}
	// A run of other scenario content under the same name is refused.
	src, _ := os.ReadFile("testdata/tiny.yaml")
	other := filepath.Join(base, "other.yaml")
	os.WriteFile(other, bytes.Replace(src, []byte("seed:"), []byte("# edited\nseed:"), 1), 0o644)
	s2, err := scenario.Load(other)
	if err != nil {
		t.Fatal(err)
	}
	odir := filepath.Join(base, "odir")
	if _, err := Run(context.Background(), opts(fake{}), []Job{{Scenario: s2, Dir: odir}}); err != nil {
		t.Fatal(err)
	}
	_, err = Merge(context.Background(), MergeOptions{Dirs: []string{shards[0], odir}, Out: filepath.Join(base, "mixed")})
	var ue *rundir.UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "other content") {
		t.Errorf("mixed hashes: %v", err)
	}
	// A merge writes nothing into its inputs: an --out inside one (it
	// made a directory there) and the input itself are refused.
	for _, out := range []string{filepath.Join(shards[0], "merged"), filepath.Join(shards[0], "a", "b"), shards[1]} {
		before, _ := os.ReadDir(shards[0])
		_, err = Merge(context.Background(), MergeOptions{Dirs: shards, Out: out})
		if !errors.As(err, &ue) {
			t.Errorf("--out %s: %v, want a usage error", out, err)
		}
		if after, _ := os.ReadDir(shards[0]); len(after) != len(before) {
			t.Errorf("--out %s: the input %s went from %d to %d entries", out, shards[0], len(before), len(after))
		}
	}
	if !within("x/y", "x") || within("xy", "x") || within("x", "x") || within("../x", ".") {
		t.Error("within")
	}
}

// stable drops the lines of a report that name the run itself (start
// time, wall time, command, merged inputs).
func stable(b []byte) string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "started") || strings.Contains(l, "elapsed") || strings.Contains(l, "merged") || strings.Contains(l, "timestamp") ||
			strings.Contains(l, "time=") || strings.Contains(l, "| wall") {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}
