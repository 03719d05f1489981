// Package kubelet is sidebench's reference in-node implementation of sidecar
// ordering: a pure planner (Plan) in the shape of the kubelet's
// computePodActions, and a Machine that wraps it in raft's RawNode shape.
package kubelet

import "github.com/sidebench/sidebench/reference-impl/api"

// Machine plays the kubelet for one pod on one node.
//
// Host contract (see doc.go): after every Step, while HasReady(): take
// rd := Ready(), issue rd.Actions in order, record rd.Trace, arm a timer for
// rd.WakeAt (api.Never = none), then Advance(rd).
type Machine struct {
	spec  *api.PodSpec
	gates api.Gates
	obs   api.Observed
}

// NewMachine validates spec and returns a machine with no memory, as a
// freshly started kubelet has.
func NewMachine(spec *api.PodSpec, gates api.Gates) (*Machine, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	return &Machine{spec: spec, gates: gates}, nil
}

// Step applies one input observed at now and replans.
func (m *Machine) Step(now api.Time, in api.Input) error { return nil }

// HasReady reports whether there is output to collect.
func (m *Machine) HasReady() bool { return false }

// Ready returns the pending output batch.
func (m *Machine) Ready() api.Ready { return api.Ready{WakeAt: api.Never} }

// Advance acknowledges that rd was executed.
func (m *Machine) Advance(rd api.Ready) {}

// Status returns the last computed pod status.
func (m *Machine) Status() api.PodStatus { return api.PodStatus{} }

// Terminating reports whether a whole-pod kill is in progress (probers stop
// liveness probes then, INV-P6).
func (m *Machine) Terminating() bool { return m.obs.Term.Active }

// Done reports whether the pod is finished on this node: terminal, nothing
// running, sandbox stopped.
func (m *Machine) Done() bool { return m.obs.Pod.Done }
