package scenario

import (
	"os"
	"strings"
	"testing"
)

func TestBaseMerge(t *testing.T) {
	s, err := Load("testdata/base-override.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s.Metadata.Name != "start-ordering-crash" || s.Base != "start-ordering" {
		t.Errorf("name/base: %q %q", s.Metadata.Name, s.Base)
	}
	if s.Trials != 5 || len(s.Policies) != 2 || len(s.Faults) != 1 {
		t.Errorf("overrides not applied: trials=%d policies=%v faults=%d", s.Trials, s.Policies, len(s.Faults))
	}
	if len(s.Workloads) != 1 {
		t.Fatalf("workloads merged by name: got %d", len(s.Workloads))
	}
	w := s.Workloads[0]
	if w.Count != 10 || len(w.Template.Spec.InitContainers) != 3 {
		t.Errorf("workload merge: count=%d init=%d", w.Count, len(w.Template.Spec.InitContainers))
	}
	proxy, _ := w.BehaviorOf("proxy")
	if got := proxy.StartupAfter.String(); got != "3s" {
		t.Errorf("proxy.startupAfter = %q", got)
	}
	if !w.Behaviors["migrate"].Set("runTime") || !w.Behaviors["default"].Set("startLatency") {
		t.Errorf("base behaviours lost: %+v", w.Behaviors)
	}
	if s.Seed == nil || *s.Seed != 753 {
		t.Errorf("seed not inherited")
	}
	// Positions: an overlay field resolves to the overlay file, an
	// inherited one to the shipped file.
	if p := s.Pos("trials"); p != "testdata/base-override.yaml:9" {
		t.Errorf("trials at %s", p)
	}
	if p := s.Pos("workloads[0].template.spec.initContainers[1]"); !strings.HasPrefix(p, "scenarios/start-ordering.yaml:") {
		t.Errorf("inherited field at %s", p)
	}
}

func TestBaseErrorPointsAtOrigin(t *testing.T) {
	src, _ := os.ReadFile("testdata/base-override.yaml")
	bad := strings.Replace(string(src), "      startupAfter: 3s", "      startupAfter: 3 s", 1)
	_, err := LoadBytes("over.yaml", []byte(bad))
	if err == nil || !strings.HasPrefix(err.Error(), "over.yaml:15:") {
		t.Fatalf("want an error at over.yaml:15, got %v", err)
	}
	// null deletes an inherited key.
	del := strings.Replace(string(src), "trials: 5", "trials: 5\ncriteria: null", 1)
	s, err := LoadBytes("over.yaml", []byte(del))
	if err != nil {
		t.Fatal(err)
	}
	if s.Criteria.PodStartupP99 != nil {
		t.Error("criteria: null did not delete the inherited criteria")
	}
}

func TestBaseNeedsOwnName(t *testing.T) {
	_, err := LoadBytes("x.yaml", []byte("apiVersion: sidebench.dev/v1alpha1\nkind: Scenario\nbase: start-ordering\n"))
	if err == nil || !strings.Contains(err.Error(), "own metadata.name") {
		t.Fatalf("got %v", err)
	}
}

func TestExpandSeeds(t *testing.T) {
	s, err := Load("testdata/valid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tr := Expand(s)
	if len(tr) != 4 {
		t.Fatalf("want 2 policies x 2 trials, got %d", len(tr))
	}
	if tr[0].Seed != tr[2].Seed || tr[0].Seed == tr[1].Seed {
		t.Errorf("seeds: trial numbers share seeds across policies and differ between numbers: %v", tr)
	}
	if tr[0].Policy != "kep753" || tr[2].Policy != "none" {
		t.Errorf("order: %v %v", tr[0].Policy, tr[2].Policy)
	}
	again, _ := Load("testdata/valid.yaml")
	if Expand(again)[3].Seed != tr[3].Seed {
		t.Error("expansion is not deterministic")
	}
	if TrialSeed(7, 0) == TrialSeed(8, 0) {
		t.Error("master seed ignored")
	}
	o := s.WithOverrides(99, 5)
	if len(Expand(o)) != 10 || Expand(o)[0].Seed != TrialSeed(99, 0) {
		t.Error("overrides")
	}
}

func TestSuggest(t *testing.T) {
	cases := map[string]string{"trails": "trials", "workload": "workloads", "zzzzzz": "", "Kind": "kind"}
	for in, want := range cases {
		if got := Suggest(in, []string{"trials", "workloads", "kind", "seed"}); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", in, got, want)
		}
	}
}
