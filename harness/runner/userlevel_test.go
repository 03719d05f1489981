package runner

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sidebench/sidebench/harness/metrics"
	"github.com/sidebench/sidebench/harness/rundir"
	"github.com/sidebench/sidebench/harness/scenario"
	"github.com/sidebench/sidebench/reports/render"
)

const jobScenario = `apiVersion: sidebench.dev/v1alpha1
kind: Scenario
metadata: {name: user-level}
seed: 3
policies: [kep753, "workaround:wait-wrapper"]
backend: {horizon: 2m}
cluster: {nodes: 1}
workloads:
- name: job
  count: 4
  completion: {runTime: 2s}
  template:
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 5
      initContainers:
      - {name: shipper, image: fluent-bit:3, restartPolicy: Always}
      containers:
      - {name: main, image: batch:1}
  behaviors:
    default: {startLatency: 100ms}
trials: 1
`

// The user-level guarantees reach the outputs once: each pod's unmet
// guarantees in pods.jsonl, the report's section counted from them (a
// wait-wrapper keeps every Job running, native sidecars none), and the
// differential table.
func TestUserLevelSection(t *testing.T) {
	s, err := scenario.LoadBytes("user-level.yaml", []byte(jobScenario))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "r")
	res, err := Run(context.Background(), opts(fake{}), []Job{{Scenario: s, Dir: dir}})
	if err != nil {
		t.Fatal(err)
	}
	unmet := map[string]int{}
	if err := rundir.EachPod(dir, func(r *metrics.Record) error {
		if slices.Contains(r.Unmet, "USER-JOB-COMPLETES") {
			unmet[r.Policy]++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if unmet["workaround:wait-wrapper"] != 4 || unmet["kep753"] != 0 {
		t.Fatalf("pods.jsonl unmet job-completes: %v", unmet)
	}
	u := res.State.Runs[0].UserLevel
	if u == nil {
		t.Fatal("no user-level section")
	}
	if c := u.Cell("workaround:wait-wrapper", render.StratumNoFault, "USER-JOB-COMPLETES"); c.K != 4 || c.N != 4 {
		t.Errorf("wait-wrapper cell %+v, want 4/4", c)
	}
	if c := u.Cell("kep753", render.StratumAll, "USER-JOB-COMPLETES"); c.K != 0 || c.N != 4 {
		t.Errorf("kep753 cell %+v, want 0/4", c)
	}
	if len(u.Startup) == 0 {
		t.Error("no per-workload startup cost for a scenario that compares workarounds")
	}
	for _, row := range res.State.Runs[0].Invariants {
		if isUserLevel(row.ID) {
			t.Errorf("user-level row %s in the invariant table", row.ID)
		}
	}

	// The differential table covers them.
	base := t.TempDir()
	a, b := opts(fake{}), opts(fake{refuse: "workaround:wait-wrapper"})
	a.BackendName, b.BackendName = "one", "two"
	dr, err := Differential(context.Background(), []Options{a, b}, []*scenario.Scenario{s}, func(be string, s *scenario.Scenario) string {
		return filepath.Join(base, be)
	})
	if err != nil {
		t.Fatal(err)
	}
	markers := map[string]string{}
	for _, r := range dr.Rows {
		markers[r.Policy+"/"+r.Invariant] = r.Marker() + " " + r.Cells[0].String()
	}
	if markers["workaround:wait-wrapper/USER-JOB-COMPLETES"] != "not compared 4 unmet" || markers["kep753/all"] != "agree 0/0" {
		t.Errorf("differential markers: %v", markers)
	}
}
