package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sidebench/sidebench/harness/check"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/metrics"
	"github.com/sidebench/sidebench/harness/rundir"
	"github.com/sidebench/sidebench/reports/render"
)

func findingKeys(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	if err := rundir.EachFinding(dir, func(f *rundir.FindingRecord) error {
		out = append(out, fmt.Sprintf("%s#%d %s %s %s t=%d %s", f.Policy, f.Trial, f.Pod, f.ID, f.Class, f.T, f.Msg))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func records(t *testing.T, dir string) map[string]metrics.Record {
	t.Helper()
	out := map[string]metrics.Record{}
	if err := rundir.EachPod(dir, func(r *metrics.Record) error {
		out[fmt.Sprintf("%s#%d %s", r.Policy, r.Trial, r.Pod)] = *r
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestKeptHistoryRechecks: with --keep-history findings or sample:P only
// some pods' histories are kept, each as a run of its own; checking the
// kept history again gives exactly the run's findings, the kept pods'
// records are the ones a run keeping everything writes, and every number
// of the outputs is the same as with all.
func TestKeptHistoryRechecks(t *testing.T) {
	base := t.TempDir()
	s := load(t).WithOverrides(0, 4) // policy none violates: findings on some pods
	all := filepath.Join(base, "all")
	resAll, err := Run(context.Background(), opts(fake{}), []Job{{Scenario: s, Dir: all}})
	if err != nil {
		t.Fatal(err)
	}
	allRecs := records(t, all)
	for _, keep := range []string{"findings", "sample:50"} {
		t.Run(keep, func(t *testing.T) {
			o := opts(fake{})
			o.Keep, _ = rundir.ParseRetention(keep)
			dir := filepath.Join(base, keep)
			res, err := Run(context.Background(), o, []Job{{Scenario: s, Dir: dir}})
			if err != nil {
				t.Fatal(err)
			}
			// Every number is the same as when everything is kept.
			if !slices.EqualFunc(res.State.State.Rows, resAll.State.State.Rows, sameRow) {
				t.Errorf("rows differ from --keep-history all:\n%+v\n%+v", res.State.State.Rows, resAll.State.State.Rows)
			}
			want := findingKeys(t, dir)
			if len(want) == 0 || !slices.Equal(want, findingKeys(t, all)) {
				t.Fatalf("findings: %d, --keep-history all has %d", len(want), len(findingKeys(t, all)))
			}
			// Check the kept history again, pod by pod (each knows its trial).
			h, err := rundir.OpenHistory(dir)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			err = history.ForEachPod(history.NewReader(h), func(meta *history.Meta, pod string, evs []history.Event) error {
				r := check.NewRunner(check.Workers(1), check.FindingsCap(1<<20))
				r.Add(meta, pod, evs)
				for _, f := range r.Close().Findings {
					got = append(got, fmt.Sprintf("%s#%d %s %s %s t=%d %s", meta.Policy, meta.Trial, f.Pod, f.ID, f.Class, f.T, f.Msg))
				}
				return nil
			})
			h.Close()
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("re-checking the kept history: %d findings, the run had %d\n%v\n%v", len(got), len(want), got, want)
			}
			// The kept pods' records are those of a run keeping all.
			kept := records(t, dir)
			for k, r := range kept {
				if !recordEqual(r, allRecs[k]) {
					t.Errorf("%s: record %+v, with everything kept %+v", k, r, allRecs[k])
				}
			}
			if keep == "findings" && len(kept) >= len(allRecs) || keep == "sample:50" && (len(kept) <= len(findingPods(t, dir)) || len(kept) >= len(allRecs)) {
				t.Errorf("%s kept %d of %d pods (%d with findings)", keep, len(kept), len(allRecs), len(findingPods(t, dir)))
			}
			// Re-deriving the records from the kept history gives them too.
			h, _ = rundir.OpenHistory(dir)
			defer h.Close()
			n := 0
			// (A record's unmet user-level guarantees are the checker's.)
			rc := check.NewRunner(check.Workers(1), check.OnPod(func(meta *history.Meta, pod string, evs []history.Event, v check.PodVerdict) {
				r := metrics.FromEvents(meta, pod, evs)
				r.Unmet = v.Unmet
				if !recordEqual(r, kept[fmt.Sprintf("%s#%d %s", r.Policy, r.Trial, r.Pod)]) {
					t.Errorf("%s: record from the kept history differs", pod)
				}
				n++
			}))
			err = history.ForEachPod(history.NewReader(h), func(meta *history.Meta, pod string, evs []history.Event) error {
				rc.Add(meta, pod, evs)
				return nil
			})
			rc.Close()
			if err != nil && err != io.EOF {
				t.Fatal(err)
			}
			if n != len(kept) {
				t.Errorf("kept history has %d pods, pods.jsonl.zst %d", n, len(kept))
			}
		})
	}
}

func findingPods(t *testing.T, dir string) map[string]bool {
	out := map[string]bool{}
	rundir.EachFinding(dir, func(f *rundir.FindingRecord) error {
		out[fmt.Sprintf("%s#%d %s", f.Policy, f.Trial, f.Pod)] = true
		return nil
	})
	return out
}

func recordEqual(a, b metrics.Record) bool {
	return fmt.Sprintf("%+v", a) == fmt.Sprintf("%+v", b)
}

func sameRow(x, y render.StateRow) bool {
	return x.Policy == y.Policy && x.Trials == y.Trials && x.Pods == y.Pods && x.Violations == y.Violations &&
		x.Degradations == y.Degradations && x.PodStartupMs == y.PodStartupMs && x.Status == y.Status
}

// legacy rewrites a format 2 run directory as sidebench wrote it before
// compression (format 1): plain JSONL files, the checker and fault counts
// in the journal, no trials file, no format in run.json.
func legacy(t *testing.T, from string) string {
	t.Helper()
	to := filepath.Join(t.TempDir(), "legacy")
	os.MkdirAll(filepath.Join(to, rundir.DirScenarios), 0o755)
	plain := func(name string) []byte {
		var b bytes.Buffer
		switch name {
		case "history.jsonl":
			h, err := rundir.OpenHistory(from)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(&b, h)
			h.Close()
		case "pods.jsonl":
			rundir.EachPod(from, func(r *metrics.Record) error { return metrics.WriteRecords(&b, []metrics.Record{*r}) })
		case "findings.jsonl":
			rundir.EachFinding(from, func(f *rundir.FindingRecord) error { x, _ := json.Marshal(f); b.Write(append(x, '\n')); return nil })
		}
		return b.Bytes()
	}
	// Per trial: the plain parts, so the journal's sizes can be rebuilt.
	var stats []rundir.TrialStats
	rundir.EachTrialStats(from, func(st *rundir.TrialStats) error { stats = append(stats, *st); return nil })
	entries, _, _ := rundir.ReadJournal(filepath.Join(from, rundir.FileJournal))
	hist, pods, finds := plain("history.jsonl"), plain("pods.jsonl"), plain("findings.jsonl")
	var jl bytes.Buffer
	for i, e := range entries {
		e.Rows, e.Matrix, e.Faults = stats[i].Rows, stats[i].Matrix, stats[i].Faults
		e.TrialsBytes = 0
		if i == len(entries)-1 {
			e.History, e.PodsBytes, e.FindingBytes = int64(len(hist)), int64(len(pods)), int64(len(finds))
		}
		b, _ := json.Marshal(e)
		jl.Write(append(b, '\n'))
	}
	info, _ := os.ReadFile(filepath.Join(from, rundir.FileRun))
	info = bytes.Replace(info, []byte(`"format": 2,`), nil, 1)
	for name, b := range map[string][]byte{"history.jsonl": hist, "pods.jsonl": pods, "findings.jsonl": finds, rundir.FileJournal: jl.Bytes(), rundir.FileRun: info} {
		os.WriteFile(filepath.Join(to, name), b, 0o644)
	}
	scen, _ := os.ReadFile(filepath.Join(from, "scenarios", "tiny.yaml"))
	os.WriteFile(filepath.Join(to, "scenarios", "tiny.yaml"), scen, 0o644)
	if bytes.Contains(info, []byte(`"format"`)) {
		t.Fatal("run.json still names its format")
	}
	return to
}

// TestLoadsFormat1: a run directory written before compression (plain
// files, counts in the journal, distributions only in pods.jsonl) is
// judged as its format 2 twin: the same rows, latencies and verdicts.
func TestLoadsFormat1(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	if _, err := Run(context.Background(), opts(fake{}), []Job{{Scenario: load(t), Dir: dir}}); err != nil {
		t.Fatal(err)
	}
	old := legacy(t, dir)
	judge := func(d string) Outcome {
		a := NewAggregate(nil, nil)
		st, err := a.Load(d)
		if err != nil || st.Trials != 4 {
			t.Fatalf("%s: %d trials, %v", d, st.Trials, err)
		}
		return Judge(a, Meta{Command: "run", Status: StatusComplete})
	}
	a, b := judge(dir), judge(old)
	if !slices.EqualFunc(a.State.Rows, b.State.Rows, sameRow) || a.State.Verdict != b.State.Verdict || len(a.Runs[0].Findings) != len(b.Runs[0].Findings) {
		t.Errorf("format 1 judged differently:\n%+v\n%+v", b.State.Rows, a.State.Rows)
	}
	_, _, err := rundir.Open(old)
	if err == nil || !strings.Contains(err.Error(), "not resumed") {
		t.Fatalf("resuming format 1: %v", err)
	}
	// The refusal lists the commands that read the directory; each of
	// them does. It used to list merge, which refuses format 1.
	m := regexp.MustCompile(`it can be read \(([a-z, ]+)\)`).FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("no list of the commands that read it: %v", err)
	}
	// A format 1 directory has the summary.json its run wrote (compare
	// reads its identity there).
	if b, err := os.ReadFile(filepath.Join(dir, render.SummaryFile)); err != nil {
		t.Fatal(err)
	} else {
		os.WriteFile(filepath.Join(old, render.SummaryFile), b, 0o644)
	}
	reads := map[string]func() error{
		"graduate": func() error { _, err := NewAggregate(nil, nil).Load(old); return err },
		"trend":    func() error { _, err := LoadNights([]string{old}); return err },
		"compare":  func() error { _, err := CompareRuns([]string{old, old}); return err },
		"check": func() error {
			h, err := rundir.OpenHistory(old)
			if err == nil {
				h.Close()
			}
			return err
		},
		"merge": func() error {
			_, err := Merge(context.Background(), MergeOptions{Dirs: []string{old}, Out: filepath.Join(t.TempDir(), "m")})
			return err
		},
	}
	for _, cmd := range strings.Split(m[1], ", ") {
		read, ok := reads[cmd]
		if !ok {
			t.Errorf("the refusal names %q, which this test cannot try", cmd)
			continue
		}
		if err := read(); err != nil {
			t.Errorf("the refusal says %s reads format 1, but: %v", cmd, err)
		}
	}
}
