package runner

import (
	"cmp"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sidebench/sidebench/reports/graduation"
	"github.com/sidebench/sidebench/reports/render"
)

// TestRunFillsFigures guards "nothing sets RunData.Timelines": a run with
// violations (policy none of tiny.yaml) reports Gantt timelines of its
// violating pods with their findings marked, a policy comparison and a
// run timeline; the same with 3 trials in parallel, so the choice does
// not depend on scheduling.
func TestRunFillsFigures(t *testing.T) {
	run := func(parallel int) render.RunData {
		dir := filepath.Join(t.TempDir(), "r")
		o := opts(fake{})
		o.Parallel = parallel
		res, err := Run(context.Background(), o, []Job{{Scenario: load(t), Dir: dir}})
		if err != nil {
			t.Fatal(err)
		}
		page, err := os.ReadFile(filepath.Join(dir, render.HTMLFile))
		if err != nil {
			t.Fatal(err)
		}
		for _, fig := range []string{`data-figure="forest"`, `data-figure="gantt"`, `data-figure="run-timeline"`, `data-figure="latency-pod_startup"`} {
			if !strings.Contains(string(page), fig) {
				t.Errorf("report.html has no %s", fig)
			}
		}
		return res.State.Runs[0]
	}
	d := run(1)
	if len(d.Timelines) == 0 || len(d.Timelines) > MaxReportTimelines {
		t.Fatalf("%d timelines", len(d.Timelines))
	}
	for _, tl := range d.Timelines {
		if tl.Policy != "none" || len(tl.Marks) == 0 || len(tl.Events) == 0 || tl.Why == "" || tl.Seed == 0 {
			t.Errorf("timeline %s/%s trial %d: %d marks, %d events, why %q, seed %d", tl.Policy, tl.Pod, tl.Trial, len(tl.Marks), len(tl.Events), tl.Why, tl.Seed)
		}
		for _, e := range tl.Events {
			if e.Pod != "" && e.Pod != tl.Pod {
				t.Errorf("timeline of %s holds an event of %s", tl.Pod, e.Pod)
			}
		}
	}
	var all []render.GroupRate
	for _, g := range d.Groups {
		if g.Group == render.GroupAll {
			all = append(all, g)
		}
	}
	for _, r := range d.State.Rows {
		i := slices.IndexFunc(all, func(g render.GroupRate) bool { return g.Policy == r.Policy })
		if i < 0 || all[i].Pods != r.Pods {
			t.Errorf("%s: no overall group rate for its %d pods", r.Policy, r.Pods)
		}
	}
	if len(d.FindingPoints) == 0 {
		t.Error("no finding on the run timeline")
	}
	p := run(3)
	if !reflect.DeepEqual(p.Timelines, d.Timelines) || !reflect.DeepEqual(p.Groups, d.Groups) || !reflect.DeepEqual(sorted(p.FindingPoints), sorted(d.FindingPoints)) {
		t.Error("figure data depends on the number of trials run in parallel")
	}
}

func sorted(ps []render.FindingPoint) []render.FindingPoint {
	out := slices.Clone(ps)
	slices.SortFunc(out, func(a, b render.FindingPoint) int {
		return cmp.Or(cmp.Compare(a.Policy, b.Policy), cmp.Compare(a.Trial, b.Trial), cmp.Compare(a.T, b.T), cmp.Compare(a.ID, b.ID), cmp.Compare(a.Node, b.Node))
	})
	return out
}

// TestKeepTimeline: a policy keeps at most maxTimelinesPerPolicy pods,
// each showing an invariant and class none before shows; a violation
// replaces a kept degradation once full.
func TestKeepTimeline(t *testing.T) {
	tl := func(pod string, marks ...string) render.Timeline {
		out := render.Timeline{Pod: pod}
		for _, m := range marks {
			id, class, _ := strings.Cut(m, " ")
			out.Marks = append(out.Marks, render.TimelineMark{ID: id, Class: class})
		}
		return out
	}
	var kept []render.Timeline
	for _, step := range []struct {
		add  render.Timeline
		want []string
	}{
		{tl("a", "S3 violation"), []string{"a"}},
		{tl("b", "S3 violation"), []string{"a"}},
		{tl("c", "T3 degradation"), []string{"a", "c"}},
		{tl("d", "S3 violation", "P2 violation"), []string{"a", "c", "d"}},
		{tl("e", "R1 degradation"), []string{"a", "c", "d"}},
		{tl("f", "F1 violation"), []string{"a", "d", "f"}},
		{tl("g", "F3 violation"), []string{"a", "d", "f"}},
	} {
		kept = keepTimeline(kept, step.add)
		var got []string
		for _, k := range kept {
			got = append(got, k.Pod)
		}
		if !slices.Equal(got, step.want) {
			t.Fatalf("after %s: kept %v, want %v", step.add.Pod, got, step.want)
		}
	}
}

// TestBottomKIsOrderFree: the run timeline's sample is a function of the
// items, not of the order they are committed in.
func TestBottomKIsOrderFree(t *testing.T) {
	var items []int
	for i := range 1000 {
		items = append(items, i)
	}
	sample := func(order []int) []int {
		b := bottomK[int]{k: 50}
		for _, x := range order {
			b.add(identity(x), x)
		}
		out := b.items()
		slices.Sort(out)
		if b.dropped() != len(order)-50 {
			t.Errorf("dropped %d", b.dropped())
		}
		return out
	}
	a := sample(items)
	rev := slices.Clone(items)
	slices.Reverse(rev)
	if !slices.Equal(a, sample(rev)) {
		t.Error("the sample depends on the order")
	}
	if a[len(a)-1] < 500 {
		t.Errorf("the sample keeps the first items only: max %d", a[len(a)-1])
	}
}

// TestSoakReportsProgressAndTargets: a soak's reports carry the
// lifecycles at each checkpoint and, with no graduation stage, every
// stage's violation-rate target with the lifecycles it needs (the number
// graduation computes).
func TestSoakReportsProgressAndTargets(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	res, err := soak(t, dir, false, 6*time.Second, fake{refuse: "none"})
	if err != nil {
		t.Fatal(err)
	}
	d := res.State.Runs[0]
	st := d.State
	if st == nil || len(st.Progress) < 2 {
		t.Fatalf("progress: %+v", st)
	}
	last := st.Progress[len(st.Progress)-1]
	if last.Policy != "kep753" || last.Pods != st.Rows[0].Pods {
		t.Errorf("last checkpoint %+v, row pods %d", last, st.Rows[0].Pods)
	}
	var names []string
	for _, tg := range d.RateTargets {
		names = append(names, tg.Name)
		stage := strings.Fields(tg.Name)[0]
		crit, err := graduation.Load(stage)
		if err != nil {
			t.Fatal(err)
		}
		if want := graduation.LifecyclesNeeded(crit, 0, st.Rows[0].Pods); tg.Needed != want || want <= 0 {
			t.Errorf("%s needs %d, graduation says %d", tg.Name, tg.Needed, want)
		}
	}
	if !slices.Equal(names, []string{"alpha 1%", "beta 0.1%", "ga 0.01%"}) {
		t.Errorf("targets %v", names)
	}
	page, _ := os.ReadFile(filepath.Join(dir, render.HTMLFile))
	for _, fig := range []string{`data-figure="soak-lifecycles"`} {
		if !strings.Contains(string(page), fig) {
			t.Errorf("report.html has no %s", fig)
		}
	}
}
