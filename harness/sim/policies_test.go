package sim

import (
	"testing"

	"github.com/sidebench/sidebench/reference-impl/api"
)

// TestPolicies runs the fault-loaded determinism config under every
// policy, gate and bug replica: every run completes and removes every pod.
func TestPolicies(t *testing.T) {
	gates := []string{"kep753", "kep753-2019", "none", "kep753+SidecarsRestartableDuringPodTermination"}
	for _, b := range api.BugNames() {
		gates = append(gates, "kep753+bug:"+b)
	}
	for _, g := range gates {
		gs, err := api.ParseGates(g)
		if err != nil {
			t.Errorf("%s: %v", g, err)
			continue
		}
		cfg := detConfig()
		cfg.Gates = gs
		_, res := runMem(t, cfg, 5)
		if res.Partial || res.PodsRemoved != res.PodsCreated {
			t.Errorf("%s: %+v", g, res)
		}
	}
}
