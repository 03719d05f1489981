package integration

import (
	"context"
	"reflect"
	"strings"
	"testing"

	simbackend "github.com/sidebench/sidebench/harness/backend/sim"
	"github.com/sidebench/sidebench/harness/check"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/scenario"
	"github.com/sidebench/sidebench/harness/sim"
	"github.com/sidebench/sidebench/harness/trial"
)

// gatingPodsPerWorkload caps each workload of a shipped scenario: the
// scale scenarios create 10^5 pods, and what matters here is the variety
// of histories, which the faults and shapes bring in the first hundreds.
const gatingPodsPerWorkload = 3000

// TestGatingChangesNothingOnScenarios: the checker skips, on each pod,
// the checkers whose precondition the pod's history rules out
// (harness/check: inv.needs). Every pod of the sim's first trial of every
// policy of every shipped scenario must get the same report with the
// gating and without it (check.Ungated): the same findings (message,
// class, excuse, fault, excerpt), counts and errors. harness/check tests
// the same on its own histories and their random mutations.
func TestGatingChangesNothingOnScenarios(t *testing.T) {
	names := scenario.ShippedNames()
	if len(names) == 0 {
		t.Fatal("no shipped scenarios")
	}
	perWorkload := gatingPodsPerWorkload
	if testing.Short() {
		perWorkload = 40
	}
	pods, findings := 0, 0
	for _, name := range names {
		s, err := scenario.LoadShipped(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for i := range s.Workloads {
			s.Workloads[i].Count = min(s.Workloads[i].Count, perWorkload)
		}
		for _, tr := range scenario.ExpandRange(s, 0, 1) {
			prog, err := trial.Compile(tr)
			if err != nil {
				t.Fatalf("%s %s: compile: %v", name, tr.Policy, err)
			}
			part := history.NewPartitioner(func(meta *history.Meta, pod string, events []history.Event) error {
				pods++
				gated, all := checkPod(meta, pod, events), checkPod(meta, pod, events, check.Ungated())
				findings += len(all.Findings)
				if !reflect.DeepEqual(gated, all) {
					t.Fatalf("%s %s pod %s: gating changed the report\n--- gated:\n%s\n--- ungated:\n%s",
						name, tr.Policy, pod, reportText(gated), reportText(all))
				}
				return nil
			})
			if _, err := sim.RunTrial(context.Background(), simbackend.Config(prog, "gating"), tr.Seed, 0, part); err != nil {
				t.Fatalf("%s %s: sim: %v", name, tr.Policy, err)
			}
			if err := part.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("%d pods of %d scenarios (%d findings) identical gated and ungated", pods, len(names), findings)
}

// checkPod is one pod's report, every finding kept, the errors' stacks
// (addresses) cut.
func checkPod(meta *history.Meta, pod string, events []history.Event, opts ...check.Option) *check.Report {
	r := check.NewRunner(append([]check.Option{check.Workers(1), check.FindingsCap(1 << 30)}, opts...)...)
	r.Add(meta, pod, events)
	rep := r.Close()
	for i := range rep.Errors {
		rep.Errors[i].Err, _, _ = strings.Cut(rep.Errors[i].Err, "\n")
	}
	return rep
}

func reportText(rep *check.Report) string {
	var b strings.Builder
	rep.WriteText(&b, 1<<30)
	for _, e := range rep.Errors {
		b.WriteString(e.ID + " " + e.Pod + ": " + e.Err + "\n")
	}
	return b.String()
}
