package sim

import (
	"context"
	"testing"

	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/scenario"
	engine "github.com/sidebench/sidebench/harness/sim"
	"github.com/sidebench/sidebench/harness/trial"
)

type countSink struct{ n int }

func (c *countSink) Write(*history.Event) error { c.n++; return nil }

// TestShippedScenarios compiles every shipped scenario for every policy
// into the engine's configuration and runs the first trial of the small
// ones.
func TestShippedScenarios(t *testing.T) {
	for _, name := range scenario.ShippedNames() {
		s, err := scenario.LoadShipped(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, tr := range scenario.ExpandRange(s, 0, 1) {
			p, err := trial.Compile(tr)
			if err != nil {
				t.Fatalf("%s: %v", tr, err)
			}
			cfg := Config(p, "test")
			if err := cfg.Validate(); err != nil {
				t.Fatalf("%s: %v", tr, err)
			}
			if s.HasTag("large") || testing.Short() {
				continue
			}
			var cs countSink
			res, err := engine.Run(context.Background(), cfg, tr.Seed, &cs)
			if err != nil {
				t.Fatalf("%s: run: %v", tr, err)
			}
			if res.PodsCreated != s.TotalPods() {
				t.Errorf("%s: created %d pods, want %d", tr, res.PodsCreated, s.TotalPods())
			}
		}
	}
}

// TestTestdataConfig compiles the scenario package's example files.
func TestTestdataConfig(t *testing.T) {
	for _, f := range []string{"../../scenario/testdata/valid.yaml", "../../scenario/testdata/base-override.yaml"} {
		s, err := scenario.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range scenario.Expand(s) {
			p, err := trial.Compile(tr)
			if err != nil {
				t.Fatalf("%s: %v", tr, err)
			}
			cfg := Config(p, "test")
			if err := cfg.Validate(); err != nil {
				t.Fatalf("%s: %v", tr, err)
			}
			if cfg.Gates.String() != tr.Gates.String() || len(cfg.Workloads) != len(s.Workloads) || len(cfg.Faults) != len(s.Faults) {
				t.Fatalf("%s: compiled %+v", tr, cfg)
			}
		}
	}
}
