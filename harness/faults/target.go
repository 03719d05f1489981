package faults

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/sidebench/sidebench/reference-impl/api"
)

// Target says where a fault hits.
//
// Node-level kinds (KubeletCrash, RuntimeRestart, NodeShutdown,
// NodePoweroff, ContainerGC) pick nodes: the explicit Nodes, else NodeCount
// random nodes, else a NodeFraction of the nodes, else one random node. With
// an OnPhase schedule they hit the node of the pod that entered the phase
// (the pod selectors below choose which pods count).
//
// Container-level kinds (OOMKill, ProbeFailure, ImageChange) pick live pods
// matching Workload and Labels — PodCount of them, or a PodFraction, else
// one — and in each pod one container matching Container and Role (a random
// one among several). With an OnPhase schedule the pod is the one that
// entered the phase.
type Target struct {
	// Nodes are explicit node indexes (0-based).
	Nodes []int
	// NodeCount picks this many distinct random nodes.
	NodeCount int
	// NodeFraction picks this fraction of the nodes (at least one).
	NodeFraction float64

	// Workload restricts pods to the named workload.
	Workload string
	// Labels restricts pods to those carrying every label given.
	Labels map[string]string
	// PodCount picks this many random matching pods.
	PodCount int
	// PodFraction picks this fraction of the matching pods (at least one).
	PodFraction float64

	// Container restricts containers to the one with this name.
	Container string
	// Role restricts containers to a role (0 = any).
	Role api.Role
}

// String describes the selector for errors and for Event.Target.
func (t *Target) String() string {
	var parts []string
	if len(t.Nodes) > 0 {
		parts = append(parts, fmt.Sprintf("nodes=%v", t.Nodes))
	}
	if t.NodeCount > 0 {
		parts = append(parts, fmt.Sprintf("nodeCount=%d", t.NodeCount))
	}
	if t.NodeFraction > 0 {
		parts = append(parts, fmt.Sprintf("nodeFraction=%g", t.NodeFraction))
	}
	if t.Workload != "" {
		parts = append(parts, "workload="+t.Workload)
	}
	if len(t.Labels) > 0 {
		keys := make([]string, 0, len(t.Labels))
		for k := range t.Labels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for i, k := range keys {
			keys[i] = k + "=" + t.Labels[k]
		}
		parts = append(parts, "labels{"+strings.Join(keys, ",")+"}")
	}
	if t.PodCount > 0 {
		parts = append(parts, fmt.Sprintf("podCount=%d", t.PodCount))
	}
	if t.PodFraction > 0 {
		parts = append(parts, fmt.Sprintf("podFraction=%g", t.PodFraction))
	}
	if t.Container != "" {
		parts = append(parts, "container="+t.Container)
	}
	if t.Role != 0 {
		parts = append(parts, "role="+t.Role.String())
	}
	if len(parts) == 0 {
		return "any"
	}
	return strings.Join(parts, " ")
}

// World is what a fault list is validated and selected against.
type World struct {
	Nodes     int
	Workloads []Workload
}

// Workload describes the pods of one workload.
type Workload struct {
	Name   string
	Labels map[string]string
	// Containers in spec order (init ++ main, as api.PodSpec.At).
	Containers []Container
}

// Container describes one container of a workload.
type Container struct {
	Name string
	Role api.Role
	// Probes says which probes it has, indexed by api.ProbeKind.
	Probes [3]bool
}

// WorldOf describes a pod spec as a Workload.
func WorldOf(name string, labels map[string]string, spec *api.PodSpec) Workload {
	w := Workload{Name: name, Labels: labels, Containers: make([]Container, spec.Len())}
	for i := 0; i < spec.Len(); i++ {
		c := spec.At(i)
		w.Containers[i] = Container{Name: c.Name, Role: c.Role,
			Probes: [3]bool{c.StartupProbe != nil, c.ReadinessProbe != nil, c.LivenessProbe != nil}}
	}
	return w
}

// MatchPod reports whether pods of workload w match the pod selectors.
func (t *Target) MatchPod(w *Workload) bool {
	if t.Workload != "" && t.Workload != w.Name {
		return false
	}
	for k, v := range t.Labels {
		if got, ok := w.Labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Containers returns the combined indexes of the containers of w that a
// fault of kind k (with probe p for ProbeFailure) can target, in spec
// order.
func (t *Target) Containers(w *Workload, k Kind, p api.ProbeKind) []int {
	var out []int
	for i := range w.Containers {
		if t.matchContainer(&w.Containers[i], k, p) {
			out = append(out, i)
		}
	}
	return out
}

// PickContainer returns one combined index of a container of w the fault
// targets, or -1. It does not allocate.
func (t *Target) PickContainer(w *Workload, k Kind, p api.ProbeKind, r Rand) int {
	n := 0
	for i := range w.Containers {
		if t.matchContainer(&w.Containers[i], k, p) {
			n++
		}
	}
	if n == 0 {
		return -1
	}
	pick := 0
	if n > 1 {
		pick = r.IntN(n)
	}
	for i := range w.Containers {
		if t.matchContainer(&w.Containers[i], k, p) {
			if pick == 0 {
				return i
			}
			pick--
		}
	}
	return -1
}

func (t *Target) matchContainer(c *Container, k Kind, p api.ProbeKind) bool {
	if t.Container != "" && c.Name != t.Container {
		return false
	}
	if t.Role != 0 && c.Role != t.Role {
		return false
	}
	if k == ProbeFailure && (int(p) >= len(c.Probes) || !c.Probes[p]) {
		return false
	}
	return true
}

// PickCount returns how many of n candidates (pods) to hit.
func (t *Target) PickCount(n int) int {
	want := 1
	switch {
	case t.PodCount > 0:
		want = t.PodCount
	case t.PodFraction > 0:
		want = int(math.Ceil(t.PodFraction * float64(n)))
	}
	if want > n {
		want = n
	}
	return want
}

// NodesHit returns how many of n nodes one firing of a node-level fault
// hits (PickNodes without the draw).
func (t *Target) NodesHit(n int) int {
	switch {
	case len(t.Nodes) > 0:
		return len(t.Nodes)
	case t.NodeCount > 0:
		return min(t.NodeCount, n)
	case t.NodeFraction > 0:
		return min(int(math.Ceil(t.NodeFraction*float64(n))), n)
	}
	return min(1, n)
}

// PickNodes returns the nodes a node-level fault hits among n nodes, in
// increasing order.
func (t *Target) PickNodes(n int, r Rand) []int {
	if len(t.Nodes) > 0 {
		out := append([]int(nil), t.Nodes...)
		sort.Ints(out)
		return out
	}
	want := 1
	switch {
	case t.NodeCount > 0:
		want = t.NodeCount
	case t.NodeFraction > 0:
		want = int(math.Ceil(t.NodeFraction * float64(n)))
	}
	return Sample(n, want, r)
}

// Sample returns k distinct integers of [0, n) chosen uniformly, in
// increasing order (Floyd's algorithm; O(k) draws).
func Sample(n, k int, r Rand) []int {
	if k > n {
		k = n
	}
	if k <= 0 {
		return nil
	}
	if k == n {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	chosen := make(map[int]struct{}, k)
	out := make([]int, 0, k)
	for j := n - k; j < n; j++ {
		v := r.IntN(j + 1)
		if _, dup := chosen[v]; dup {
			v = j
		}
		chosen[v] = struct{}{}
		out = append(out, v)
	}
	sort.Ints(out)
	return out
}

func logOneMinus(u float64) float64 { return math.Log1p(-u) }
