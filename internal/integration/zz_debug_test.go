package integration

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/sidebench/sidebench/harness/check"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/sim"
)

type dumpSink struct {
	pod string
	n   int
}

func (d *dumpSink) Write(e *history.Event) error {
	if e.Pod == d.pod || (e.Pod == "" && e.Node != "" && false) {
		fmt.Println(check.Describe(e))
	}
	return nil
}

func TestZZDump(t *testing.T) {
	pod := os.Getenv("DUMP_POD")
	if pod == "" {
		t.Skip()
	}
	count, _ := strconv.Atoi(os.Getenv("DUMP_COUNT"))
	text := fmt.Sprintf(`apiVersion: sidebench.dev/v1alpha1
kind: Scenario
metadata: {name: mixed-faults}
seed: 42
policies: [kep753]
cluster: {nodes: 50, podsPerNode: 30}
workloads:
- name: web
  count: %d
  arrival: {type: poisson, rate: 300}
  lifetime: uniform(min=2s, max=6s)
%s%s
faults: %s
trials: 1
`, count, strings.Replace(sidecarPod, "    proxy: {startupAfter: 1s, preStop: 500ms}\n", "", 1), mixedBehaviors, mixedFaults)
	cfg, tr := compileTrial(t, text, "", 0)
	if _, err := sim.RunTrial(context.Background(), cfg, tr.Seed, 0, &dumpSink{pod: pod}); err != nil {
		t.Fatal(err)
	}
}
