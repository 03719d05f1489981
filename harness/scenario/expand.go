package scenario

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sidebench/sidebench/harness/faults"
	"github.com/sidebench/sidebench/reference-impl/api"
)

// DefaultSeed is the master seed when a scenario gives none.
const DefaultSeed uint64 = 1

// DefaultHorizon bounds a trial when backend.horizon is not set.
const DefaultHorizon = time.Hour

// DefaultPodsPerNode is the kubelet's default maxPods.
const DefaultPodsPerNode = 110

// Trial is one run: a scenario under one policy with one seed.
type Trial struct {
	Scenario *Scenario
	// Policy is the canonical gates string (api.Gates.String()).
	Policy string
	Gates  api.Gates
	// PolicyIndex is the position of the policy in Scenario.Policies.
	PolicyIndex int
	// Number counts trials of this policy from 0. Trials with the same
	// Number share their Seed across policies (common random numbers), so
	// policies are compared on identical workloads and fault times.
	Number int
	Seed   uint64
}

// String names the trial: "scenario/policy#number".
func (t Trial) String() string {
	return fmt.Sprintf("%s/%s#%d", t.Scenario.Metadata.Name, t.Policy, t.Number)
}

// MasterSeed returns the scenario's master seed.
func (s *Scenario) MasterSeed() uint64 {
	if s.Seed != nil {
		return *s.Seed
	}
	return DefaultSeed
}

// TrialCount returns the number of trials per policy (at least 1).
func (s *Scenario) TrialCount() int {
	if s.Trials < 1 {
		return 1
	}
	return s.Trials
}

// Horizon returns the per-trial time bound.
func (s *Scenario) Horizon() time.Duration {
	if s.Backend.Horizon > 0 {
		return s.Backend.Horizon.D()
	}
	return DefaultHorizon
}

// PolicyGates returns the parsed policies in order.
func (s *Scenario) PolicyGates() []api.Gates {
	out := make([]api.Gates, len(s.gates))
	for i, g := range s.gates {
		out[i] = g.gates
	}
	return out
}

// JudgedPolicies returns the policies the scenario's criteria judge, in
// canonical form: criteria.policies, or the first policy.
func (s *Scenario) JudgedPolicies() []string {
	if len(s.judged) > 0 {
		return slices.Clone(s.judged)
	}
	if len(s.gates) > 0 {
		return []string{s.gates[0].name}
	}
	return nil
}

// HasTag reports whether the scenario carries tag.
func (s *Scenario) HasTag(tag string) bool { return contains(s.Metadata.Tags, tag) }

// TotalPods returns the pods one trial creates.
func (s *Scenario) TotalPods() int {
	n := 0
	for i := range s.Workloads {
		n += s.Workloads[i].Count
	}
	return n
}

// TrialSeed derives the seed of trial number n from a master seed. It is a
// pure function (splitmix64 over master and n), so the same master seed
// always yields the same trials, and a soak run's trial n+1 is a fresh but
// reproducible seed.
func TrialSeed(master uint64, n int) uint64 {
	return mix64(mix64(master) ^ (uint64(n) + 0x9e3779b97f4a7c15))
}

func mix64(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Expand returns the trials of a scenario: every policy × every trial
// number, policy-major. Per-trial seeds derive from the master seed.
func Expand(s *Scenario) []Trial {
	return ExpandRange(s, 0, s.TrialCount())
}

// ExpandRange returns the trials numbered [from, to) for every policy.
func ExpandRange(s *Scenario, from, to int) []Trial {
	var out []Trial
	for pi, g := range s.gates {
		for n := from; n < to; n++ {
			out = append(out, Trial{Scenario: s, Policy: g.name, Gates: g.gates, PolicyIndex: pi, Number: n, Seed: TrialSeed(s.MasterSeed(), n)})
		}
	}
	return out
}

// WithOverrides returns a copy of s with the command line's overrides
// applied (seed > 0 replaces the master seed; trials > 0 the trial count).
func (s *Scenario) WithOverrides(seed uint64, trials int) *Scenario {
	c := *s
	if seed != 0 {
		c.Seed = &seed
	}
	if trials > 0 {
		c.Trials = trials
	}
	return &c
}

func firstProbeOrHook(ps *corev1.PodSpec, name string) string {
	for _, c := range ps.InitContainers {
		if c.Name != name {
			continue
		}
		switch {
		case c.StartupProbe != nil:
			return ".startupProbe"
		case c.ReadinessProbe != nil:
			return ".readinessProbe"
		case c.LivenessProbe != nil:
			return ".livenessProbe"
		case c.Lifecycle != nil:
			return ".lifecycle"
		}
	}
	return ""
}

// FaultSpecs returns the scenario's faults in the harness/faults form.
func (s *Scenario) FaultSpecs() ([]faults.Spec, error) {
	e := &errs{res: s.pos}
	if s.pos == nil {
		e.res = &positions{main: ixResolver{indexYAML(s.File, nil)}}
	}
	out := make([]faults.Spec, len(s.Faults))
	for i := range s.Faults {
		out[i] = s.faultSpec(i, e)
	}
	return out, e.err()
}
