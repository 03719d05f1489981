package check

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sidebench/sidebench/harness/history"
)

// fleet builds n pods on two nodes, interleaved in time, a third of them
// with a swapped termination (INV-T3) and some with a kubelet crash on
// their node, framed as one run.
func fleet(n int, seed uint64) []history.Event {
	rng := rand.New(rand.NewPCG(seed, 1))
	var all []history.Event
	for i := range n {
		h := realistic()
		h.pod = fmt.Sprintf("default/web-%d", i)
		h.node = fmt.Sprintf("node-%d", i%2)
		ev := h.events()
		for k := range ev {
			ev[k].Pod = strings.Replace(ev[k].Pod, "web-0", fmt.Sprintf("web-%d", i), 1)
			if ev[k].Pod == "" && ev[k].Kind != history.FaultBegin && ev[k].Kind != history.FaultEnd && ev[k].Kind != history.FaultEffect {
				ev[k].Node = h.node
			}
			if ev[k].Pod != "" && ev[k].Kind != history.PodCreated {
				ev[k].Node = h.node
			}
			ev[k].T += int64(i) * 7 * ms1
		}
		// Node events are shared: keep the kubelet crash only on the first
		// two pods' copies so that each node has one.
		if i >= 2 {
			ev = slices.DeleteFunc(ev, func(e history.Event) bool { return e.Pod == "" })
		} else {
			for k := range ev {
				if ev[k].Pod == "" {
					ev[k].Node = h.node
				}
			}
		}
		if rng.IntN(3) == 0 {
			ev = moveBefore(ev, find(ev, history.ContainerStopRequested, "log", 0), find(ev, history.ContainerExited, "app", 0))
		}
		all = append(all, ev...)
	}
	slices.SortStableFunc(all, func(a, b history.Event) int { return int(a.T - b.T) })
	return withRun(all)
}

func TestRunnerIsDeterministic(t *testing.T) {
	ev := fleet(300, 1)
	want := CheckEvents(ev, Workers(1), FindingsCap(20))
	if want.Pods != 300 || want.Row("INV-T3").Violations == 0 {
		t.Fatalf("fleet: pods=%d T3=%+v", want.Pods, want.Row("INV-T3"))
	}
	for _, w := range []int{2, 4, 7} {
		got := CheckEvents(ev, Workers(w), FindingsCap(20))
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("workers=%d: report differs from the sequential one", w)
		}
	}
}

func TestReportCountsAllButStoresCap(t *testing.T) {
	rep := CheckEvents(fleet(300, 2), FindingsCap(5))
	row := rep.Row("INV-T3")
	if row.Violations <= 5 {
		t.Fatalf("want more than 5 T3 violations, got %d", row.Violations)
	}
	stored := 0
	for _, f := range rep.Findings {
		if f.ID == "INV-T3" {
			stored++
		}
	}
	if stored != 5 {
		t.Fatalf("stored %d T3 findings, want the cap 5", stored)
	}
	if row.Checked != 300 || rep.Valid != Invalid {
		t.Fatalf("checked=%d valid=%s", row.Checked, rep.Valid)
	}
	// Matrix: every T3 violation attributed to a fault or "none".
	sum := 0
	for _, c := range rep.Matrix {
		if c.ID == "INV-T3" {
			sum += c.Violations
		}
	}
	if sum != row.Violations {
		t.Fatalf("matrix T3 violations %d != row %d", sum, row.Violations)
	}
}

type panicky struct{ inv }

func (panicky) Check(*Pod, []Hit) []Hit { panic("boom") }

func TestPanickingCheckerIsUnknown(t *testing.T) {
	bad := &panicky{inv{id: "INV-X", rule: "panics", level: Hard}}
	good := registry[0]
	rep := CheckEvents(withRun(realistic().events()), WithCheckers(good, bad))
	if rep.Valid != Unknown {
		t.Fatalf("verdict %s, want unknown", rep.Valid)
	}
	if row := rep.Row("INV-X"); row.Unknown != 1 || row.Checked != 0 || row.Valid != Unknown {
		t.Fatalf("panicking row: %+v", row)
	}
	if row := rep.Row(good.ID()); row.Checked != 1 || row.Valid != Valid {
		t.Fatalf("other checkers must still run: %+v", row)
	}
	if len(rep.Errors) != 1 || !strings.Contains(rep.Errors[0].Err, "boom") {
		t.Fatalf("errors: %+v", rep.Errors)
	}
	// Invalid dominates Unknown (Jepsen's merge-valid).
	ev := realistic().events()
	ev = moveBefore(ev, find(ev, history.ContainerStopRequested, "log", 0), find(ev, history.ContainerExited, "app", 0))
	rep = CheckEvents(withRun(ev), WithCheckers(append(Checkers(), bad)...))
	if rep.Valid != Invalid {
		t.Fatalf("verdict %s, want invalid", rep.Valid)
	}
}

// TestPanicResumesWithNextChecker: the worker recovers once per pod, so
// after a checker panics the following ones must still run on that pod,
// and a second panic on the same pod must be recorded too.
func TestPanicResumesWithNextChecker(t *testing.T) {
	bad1 := &panicky{inv{id: "INV-X1", rule: "panics", level: Hard}}
	bad2 := &panicky{inv{id: "INV-X2", rule: "panics", level: Hard}}
	var t3 Checker
	for _, c := range registry {
		if c.ID() == "INV-T3" {
			t3 = c
		}
	}
	ev := realistic().events()
	ev = moveBefore(ev, find(ev, history.ContainerStopRequested, "log", 0), find(ev, history.ContainerExited, "app", 0))
	for _, workers := range []int{1, 2} {
		rep := CheckEvents(withRun(ev), Workers(workers), WithCheckers(bad1, t3, bad2, registry[0]))
		for _, id := range []string{"INV-X1", "INV-X2"} {
			if row := rep.Row(id); row.Unknown != 1 || row.Checked != 0 {
				t.Fatalf("workers=%d: row %s: %+v", workers, id, row)
			}
		}
		if row := rep.Row("INV-T3"); row.Checked != 1 || row.Violations == 0 {
			t.Fatalf("workers=%d: the checker after a panic must run: %+v", workers, row)
		}
		if row := rep.Row(registry[0].ID()); row.Checked != 1 || row.Unknown != 0 {
			t.Fatalf("workers=%d: the checker after the second panic must run: %+v", workers, row)
		}
		if len(rep.Errors) != 2 || rep.Errors[0].ID != "INV-X1" || rep.Errors[1].ID != "INV-X2" ||
			!strings.HasPrefix(rep.Errors[0].Err, "INV-X1 panicked: boom\n") || !strings.Contains(rep.Errors[0].Err, "goroutine ") {
			t.Fatalf("workers=%d: errors: %+v", workers, rep.Errors)
		}
	}
}

func TestMerge(t *testing.T) {
	for _, tc := range []struct{ a, b, want Validity }{
		{Valid, Valid, Valid}, {Valid, Unknown, Unknown}, {Unknown, Invalid, Invalid}, {Invalid, Valid, Invalid},
	} {
		if got := Merge(tc.a, tc.b); got != tc.want {
			t.Errorf("Merge(%s, %s) = %s, want %s", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestPodWithoutSpecIsUnknown(t *testing.T) {
	ev := realistic().events()[1:] // drop pod.created
	rep := CheckEvents(withRun(ev))
	if rep.Valid != Unknown || len(rep.Errors) != 1 || rep.Errors[0].Err != ErrNoSpec.Error() {
		t.Fatalf("valid=%s errors=%+v", rep.Valid, rep.Errors)
	}
}

func TestAttributionAndExcerpt(t *testing.T) {
	ev := realistic().events()
	ev = moveBefore(ev, find(ev, history.ContainerStopRequested, "log", 0), find(ev, history.ContainerExited, "app", 0))
	rep := CheckEvents(withRun(ev))
	var f *Finding
	for i := range rep.Findings {
		if rep.Findings[i].ID == "INV-T3" {
			f = &rep.Findings[i]
		}
	}
	if f == nil || f.Class != Violation || f.Pod != "default/web-0" || f.Node != "node-1" {
		t.Fatalf("finding: %+v", f)
	}
	// The kubelet crash at 10–12 s cannot explain a deletion at 20 s
	// (TestAttribution has the cases).
	if f.Fault != nil || f.FaultName() != Unattributed {
		t.Fatalf("attribution: %+v", f.Fault)
	}
	first, last := f.Excerpt[0], f.Excerpt[len(f.Excerpt)-1]
	if first.Kind != history.ContainerStopRequested || first.Container != "log" || last.Kind != history.ContainerExited || last.Container != "app" {
		t.Fatalf("excerpt should run from the early SIGTERM to the exit it should have waited for:\n%v", f.Excerpt)
	}
}

func TestExcerptIsCapped(t *testing.T) {
	p := &Pod{Ev: make([]history.Event, 40)}
	var f Finding
	p.excerpt(&f, 30, 2)
	if len(f.Excerpt) != excerptCap || f.Elided != 29-excerptCap {
		t.Fatalf("excerpt %d events, elided %d", len(f.Excerpt), f.Elided)
	}
}

func writeHistory(t *testing.T, ev []history.Event) string {
	t.Helper()
	var buf bytes.Buffer
	w := history.NewWriter(&buf)
	for i := range ev {
		if err := w.Write(&ev[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "history.jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRunCheckCommand(t *testing.T) {
	swapped := realistic().events()
	swapped = moveBefore(swapped, find(swapped, history.ContainerStopRequested, "log", 0), find(swapped, history.ContainerExited, "app", 0))
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	os.WriteFile(bad, []byte("{\"t\":0,\"k\":\"run.meta\",\"meta\":{}}\n{\"t\":1,\"k\":\"no.such.kind\"}\n"), 0o644)
	for _, tc := range []struct {
		name     string
		paths    []string
		code     int
		out, err string
	}{
		{"correct history exits 0", []string{writeHistory(t, withRun(realistic().events()))}, 0, "INV-T3", ""},
		{"violation exits 1 and explains it", []string{writeHistory(t, withRun(swapped))}, 1, `sidecar "log" signalled before main "app" exited`, ""},
		{"unreadable input exits 2 with file and line", []string{bad}, 2, "", "bad.jsonl: history line 2"},
		{"missing file exits 2", []string{filepath.Join(t.TempDir(), "nope.jsonl")}, 2, "", "nope.jsonl"},
		{"no file exits 2", nil, 2, "", "no history files"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := RunCheckCommand(&out, &errb, tc.paths, nil); code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out.String(), errb.String())
			}
			if !strings.Contains(out.String(), tc.out) || !strings.Contains(errb.String(), tc.err) {
				t.Fatalf("stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
			}
		})
	}
}

func TestReportJSONRoundTrip(t *testing.T) {
	ev := realistic().events()
	ev = moveBefore(ev, find(ev, history.ContainerStopRequested, "log", 0), find(ev, history.ContainerExited, "app", 0))
	rep := CheckEvents(withRun(ev))
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"class":"violation"`)) || !bytes.Contains(b, []byte(`"level":"BEST-EFFORT"`)) || !bytes.Contains(b, []byte(`"valid":"invalid"`)) {
		t.Fatalf("JSON lacks readable enums: %.300s", b)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Valid != Invalid || back.Row("INV-T3").Violations != 1 || back.Findings[0].Class != Violation {
		t.Fatalf("round trip: %+v", back.Rows[0])
	}
}

// TestOnPodHook: the hook sees every pod once, in the order the pods were
// added, with its events and whether the checker found anything on it
// (the same verdict the report has), in both modes, also a pod whose long
// history Add checks itself.
func TestOnPodHook(t *testing.T) {
	ev := fleet(120, 3)
	var long []history.Event
	for k := range 10000 {
		t := int64(k+1) * ms1
		long = append(long, history.Event{T: t, Kind: history.KubeletDown, Node: "node-0"}, history.Event{T: t, Kind: history.KubeletUp, Node: "node-0"})
	}
	ev = append(append(append([]history.Event(nil), ev[:3]...), long...), ev[3:]...)
	slices.SortStableFunc(ev, func(a, b history.Event) int { return int(a.T - b.T) })
	for _, workers := range []int{1, 4} {
		longest := 0
		var order []string
		notable := map[string]bool{}
		r := NewRunner(Workers(workers), OnPod(func(meta *history.Meta, pod string, evs []history.Event, v PodVerdict) {
			if len(evs) == 0 || meta == nil {
				t.Errorf("%s: no events or meta", pod)
			}
			longest = max(longest, len(evs))
			order = append(order, pod)
			notable[pod] = v.Notable
		}))
		var added []string
		part := history.NewPartitioner(func(meta *history.Meta, pod string, evs []history.Event) error {
			added = append(added, pod)
			r.Add(meta, pod, evs)
			return nil
		})
		for i := range ev {
			part.Write(&ev[i])
		}
		part.Close()
		rep := r.Close()
		if !slices.Equal(order, added) {
			t.Fatalf("workers=%d: hook order differs from the add order", workers)
		}
		if longest < bigPod {
			t.Errorf("workers=%d: the hook saw no long history (longest %d)", workers, longest)
		}
		withFindings := map[string]bool{}
		for _, f := range rep.Findings {
			withFindings[f.Pod] = true
		}
		n := 0
		for pod, v := range notable {
			if v {
				n++
			}
			if withFindings[pod] && !v {
				t.Errorf("workers=%d: %s has findings but was not notable", workers, pod)
			}
		}
		if n == 0 || n == len(notable) {
			t.Errorf("workers=%d: %d of %d pods notable", workers, n, len(notable))
		}
	}
}

// A pod with a long history (a kubelet restarting under it 10k times) is
// checked in Add's goroutine, not copied for a worker; the report is the
// sequential one whatever the number of workers.
func TestRunnerLongHistoryInOrder(t *testing.T) {
	ev := fleet(50, 3)
	var long []history.Event
	for k := range 10000 {
		t := int64(k+1) * ms1
		long = append(long, history.Event{T: t, Kind: history.KubeletDown, Node: "node-0"}, history.Event{T: t, Kind: history.KubeletUp, Node: "node-0"})
	}
	// Splice the outages after the fleet's first events: the pods live on
	// node-0 see them all.
	ev = append(append(append([]history.Event(nil), ev[:3]...), long...), ev[3:]...)
	slices.SortStableFunc(ev, func(a, b history.Event) int { return int(a.T - b.T) })
	longest := 0
	part := history.NewPartitioner(func(_ *history.Meta, _ string, evs []history.Event) error {
		longest = max(longest, len(evs))
		return nil
	})
	for i := range ev {
		part.Write(&ev[i])
	}
	part.Close()
	if longest < bigPod {
		t.Fatalf("longest pod history %d events, want >= %d", longest, bigPod)
	}
	want := CheckEvents(ev, Workers(1))
	for _, w := range []int{2, 3} {
		if got := CheckEvents(ev, Workers(w)); !reflect.DeepEqual(got, want) {
			t.Fatalf("workers=%d: report differs from the sequential one", w)
		}
	}
}

// A pod bigger than the whole in-flight budget takes all of it rather
// than waiting forever.
func TestBudgetCapsOneAcquire(t *testing.T) {
	b := newBudget(maxInflightEvents)
	if n := b.acquire(10 * maxInflightEvents); n != maxInflightEvents {
		t.Fatalf("took %d", n)
	}
	b.release(maxInflightEvents)
	if n := b.acquire(0); n != 1 {
		t.Fatalf("an empty pod took %d", n)
	}
}
