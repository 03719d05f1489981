// Package simconfig compiles a scenario trial into the sim backend's input
// (harness/sim.Config). It is separate from package scenario so that the
// scenario format does not depend on the simulator.
package simconfig

import (
	"fmt"

	"github.com/sidebench/sidebench/harness/scenario"
	"github.com/sidebench/sidebench/harness/sim"
	"github.com/sidebench/sidebench/reference-impl/convert"
)

// Compile returns the sim configuration of one trial. The scenario must
// have been loaded (validated) by package scenario.
func Compile(t scenario.Trial, version string) (*sim.Config, error) {
	s := t.Scenario
	cfg := &sim.Config{
		Scenario:     s.Metadata.Name,
		ScenarioHash: s.Hash,
		Version:      version,
		Cluster: sim.Cluster{
			Nodes:       s.Cluster.Nodes,
			PodsPerNode: s.Cluster.PodsPerNode,
		},
		Gates: t.Gates,
		Stop:  sim.Stop{MaxDuration: s.Horizon()},
	}
	if cfg.Cluster.PodsPerNode == 0 {
		cfg.Cluster.PodsPerNode = scenario.DefaultPodsPerNode
	}
	for i := range s.Workloads {
		w := &s.Workloads[i]
		spec, err := convert.PodSpecFromV1(&w.Template.Spec)
		if err != nil {
			return nil, fmt.Errorf("workloads[%d] %q: %w", i, w.Name, err)
		}
		sw := sim.Workload{
			Name:      w.Name,
			Namespace: w.Template.Namespace,
			Labels:    w.Template.Labels,
			Spec:      spec,
			Count:     w.Count,
		}
		if w.Lifetime != nil {
			sw.Lifetime = *w.Lifetime
		}
		if w.DeleteGrace != nil {
			sw.DeleteGrace = w.DeleteGrace.D()
		}
		a := &w.Arrival
		sw.Arrival.Start = a.Start.D()
		switch a.Type {
		case "poisson":
			sw.Arrival.Kind, sw.Arrival.Rate = sim.ArrivalPoisson, a.Rate
		case "burst":
			sw.Arrival.Kind, sw.Arrival.BurstSize, sw.Arrival.BurstInterval = sim.ArrivalBurst, a.Size, a.Every.D()
		default: // constant
			if a.Rate > 0 {
				sw.Arrival.Kind, sw.Arrival.Rate = sim.ArrivalConstant, a.Rate
			} else {
				sw.Arrival.Kind = sim.ArrivalBurst // everything at Start
			}
		}
		for j := 0; j < spec.Len(); j++ {
			name := spec.At(j).Name
			b, err := w.BehaviorOf(name)
			if err != nil {
				return nil, fmt.Errorf("workloads[%d] %q: container %q: %w", i, w.Name, name, err)
			}
			sw.Behavior = append(sw.Behavior, sim.ContainerBehavior{Container: name, Behavior: b})
		}
		cfg.Workloads = append(cfg.Workloads, sw)
	}
	specs, err := s.FaultSpecs()
	if err != nil {
		return nil, err
	}
	cfg.Faults = specs
	return cfg, nil
}
