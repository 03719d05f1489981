package simconfig

import (
	"context"
	"testing"

	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/scenario"
	"github.com/sidebench/sidebench/harness/sim"
)

type countSink struct{ n int }

func (c *countSink) Write(*history.Event) error { c.n++; return nil }

// TestShippedCompile compiles every shipped scenario for every policy and
// runs the first trial of the small ones on the simulator.
func TestShippedCompile(t *testing.T) {
	for _, name := range scenario.ShippedNames() {
		s, err := scenario.LoadShipped(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, tr := range scenario.ExpandRange(s, 0, 1) {
			cfg, err := Compile(tr, "test")
			if err != nil {
				t.Fatalf("%s: %v", tr, err)
			}
			if err := cfg.Validate(); err != nil {
				t.Fatalf("%s: %v", tr, err)
			}
			if s.HasTag("large") || testing.Short() {
				continue
			}
			var cs countSink
			res, err := sim.Run(context.Background(), cfg, tr.Seed, &cs)
			if err != nil {
				t.Fatalf("%s: run: %v", tr, err)
			}
			if res.PodsCreated != s.TotalPods() {
				t.Errorf("%s: created %d pods, want %d", tr, res.PodsCreated, s.TotalPods())
			}
			t.Logf("%s: %d events, end %v", tr, cs.n, res.End)
		}
	}
}

// TestTestdataCompile compiles the scenario package's example files.
func TestTestdataCompile(t *testing.T) {
	for _, f := range []string{"../testdata/valid.yaml", "../testdata/base-override.yaml"} {
		s, err := scenario.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range scenario.Expand(s) {
			cfg, err := Compile(tr, "test")
			if err != nil {
				t.Fatalf("%s: %v", tr, err)
			}
			if err := cfg.Validate(); err != nil {
				t.Fatalf("%s: %v", tr, err)
			}
			if cfg.Gates != tr.Gates || len(cfg.Workloads) != len(s.Workloads) || len(cfg.Faults) != len(s.Faults) {
				t.Fatalf("%s: compiled %+v", tr, cfg)
			}
		}
	}
}
