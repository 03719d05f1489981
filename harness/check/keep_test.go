package check

import (
	"reflect"
	"testing"
)

// TestKeepPods checks that the pods kept for the reports' timelines are
// the same whatever the number of workers, that they are the first pods
// (in arrival order) bringing a violated invariant, and that each carries
// its own events and findings.
func TestKeepPods(t *testing.T) {
	ev := fleet(300, 1)
	want := CheckEvents(ev, Workers(1), KeepPods(2, 1))
	if len(want.Kept) == 0 {
		t.Fatal("no pod kept from a fleet with T3 violations")
	}
	first := ""
	for _, f := range CheckEvents(ev, Workers(1)).Findings {
		if f.Class == Violation {
			first = f.Pod
			break
		}
	}
	if want.Kept[0].Pod != first {
		t.Errorf("first kept pod %s, want the first violating pod %s", want.Kept[0].Pod, first)
	}
	for _, k := range want.Kept {
		if len(k.Findings) == 0 || len(k.Events) == 0 {
			t.Errorf("%s kept with %d findings, %d events", k.Pod, len(k.Findings), len(k.Events))
		}
		for _, e := range k.Events {
			if e.Pod != "" && e.Pod != k.Pod {
				t.Errorf("%s kept with an event of %s", k.Pod, e.Pod)
			}
		}
	}
	if len(want.Kept) > 3 {
		t.Errorf("%d pods kept, at most 2+1 allowed", len(want.Kept))
	}
	for _, w := range []int{2, 4, 7} {
		got := CheckEvents(ev, Workers(w), KeepPods(2, 1))
		if !reflect.DeepEqual(got.Kept, want.Kept) {
			t.Errorf("workers=%d keep other pods than the sequential run", w)
		}
	}
	// Without the option nothing is kept, and the report is unchanged.
	plain := CheckEvents(ev, Workers(4))
	if plain.Kept != nil {
		t.Errorf("kept %d pods without KeepPods", len(plain.Kept))
	}
	plain.Kept = want.Kept
	if !reflect.DeepEqual(plain, want) {
		t.Errorf("KeepPods changed the report's counts")
	}
}

// TestGroupViolatingPods checks the per-group count of violating pods:
// at least the largest count of any invariant of the group, at most the
// pods with any violation.
func TestGroupViolatingPods(t *testing.T) {
	rep := CheckEvents(fleet(300, 3), Workers(4))
	if rep.ViolatingPods == 0 {
		t.Fatal("no violation")
	}
	groups := map[string]int{}
	for _, r := range rep.Rows {
		g := InvariantGroup(r.ID)
		groups[g] = max(groups[g], r.ViolatingPods)
	}
	for g, lo := range groups {
		got := rep.GroupViolatingPods[g]
		if got < lo || got > rep.ViolatingPods {
			t.Errorf("group %s: %d violating pods, want in [%d, %d]", g, got, lo, rep.ViolatingPods)
		}
	}
	for _, c := range []struct{ id, want string }{{"INV-S3", "S"}, {"INV-RA4", "RA"}, {"INV-T10", "T"}, {"S1", "S"}} {
		if got := InvariantGroup(c.id); got != c.want {
			t.Errorf("InvariantGroup(%s) = %s, want %s", c.id, got, c.want)
		}
	}
}
