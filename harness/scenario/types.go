// Package scenario is sidebench's scenario format: the versioned YAML schema
// (apiVersion sidebench.dev/v1alpha1, kind Scenario), strict decoding with
// file:line:field errors and typo suggestions, semantic validation, `base:`
// inheritance from the shipped scenarios, expansion into seeded trials
// (policies × trials) and compilation of one trial into the backend's input.
//
// The format is documented in docs/scenarios.md. Workload templates are
// real Kubernetes PodTemplateSpecs (k8s.io/api/core/v1), converted with
// reference-impl/convert.
package scenario

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sidebench/sidebench/harness/behavior"
)

// APIVersion and Kind identify the format.
const (
	APIVersion = "sidebench.dev/v1alpha1"
	Kind       = "Scenario"
)

// Scenario is one scenario file.
type Scenario struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Metadata   Metadata `json:"metadata"`
	// Base names a shipped scenario (scenarios/NAME.yaml) this file
	// overrides. See docs/scenarios.md for the merge rules.
	Base string `json:"base,omitempty"`
	// Seed is the master seed; per-trial seeds derive from it. Default 1.
	Seed *uint64 `json:"seed,omitempty"`
	// Policies are api.ParseGates strings run side by side. Default
	// [kep753].
	Policies []string `json:"policies,omitempty"`
	Backend  Backend  `json:"backend,omitempty"`
	Cluster  Cluster  `json:"cluster"`
	// Workloads are the pods to create.
	Workloads []Workload `json:"workloads"`
	Faults    []Fault    `json:"faults,omitempty"`
	// Trials per policy. Default 1.
	Trials   int      `json:"trials,omitempty"`
	Criteria Criteria `json:"criteria,omitempty"`

	// File is the path the scenario was loaded from (set by Load).
	File string `json:"-"`
	// Hash is the SHA-256 of the file content, hex (set by Load).
	Hash string `json:"-"`
	// Source is the file content (set by Load).
	Source []byte `json:"-"`

	gates []policyGates
	// judged are criteria.policies in canonical form (validated).
	judged []string
	pos    *positions
}

// Metadata names and describes a scenario.
type Metadata struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Tags classify the scenario. "large" scenarios (scale envelope, soak)
	// are skipped by `sidebench run` unless --include-large is given.
	Tags []string `json:"tags,omitempty"`
}

// Backend holds backend defaults; the command line overrides them.
type Backend struct {
	// Name is sim (default), local or kube.
	Name string `json:"name,omitempty"`
	// Horizon bounds one trial in backend time (virtual time on sim).
	// Default 1h.
	Horizon Duration `json:"horizon,omitempty"`
	Local   *Local   `json:"local,omitempty"`
	Kube    *Kube    `json:"kube,omitempty"`
}

// Local configures the local backend (real kubelets on loopback).
type Local struct {
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
}

// Kube configures the kube backend (an existing cluster).
type Kube struct {
	// Kubeconfig is the default of --kubeconfig when every scenario of a
	// run names the same one.
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// Namespace is rejected: each trial gets its own namespace, so that
	// everything a run creates is deleted by label.
	Namespace string `json:"namespace,omitempty"`
}

// Cluster is the cluster shape.
type Cluster struct {
	Nodes int `json:"nodes"`
	// PodsPerNode is the node capacity (the kubelet's maxPods). Default 110.
	PodsPerNode int `json:"podsPerNode,omitempty"`
	// ShutdownGracePeriod and ShutdownGracePeriodCriticalPods are the
	// kubelet's graceful node shutdown settings, the defaults for
	// node-shutdown faults.
	ShutdownGracePeriod             Duration `json:"shutdownGracePeriod,omitempty"`
	ShutdownGracePeriodCriticalPods Duration `json:"shutdownGracePeriodCriticalPods,omitempty"`
}

// Workload is a set of identical pods.
type Workload struct {
	Name string `json:"name"`
	// Count is the number of pods created per trial.
	Count   int     `json:"count"`
	Arrival Arrival `json:"arrival,omitempty"`
	// Lifetime is the time from creation to deletion of a long-running pod.
	Lifetime *behavior.Dist `json:"lifetime,omitempty"`
	// DeleteGrace is the grace period of a lifetime deletion (default: the
	// pod's terminationGracePeriodSeconds).
	DeleteGrace *Duration `json:"deleteGrace,omitempty"`
	// Completion makes the workload Job-style: the template's restartPolicy
	// must be Never or OnFailure and the main containers exit on their own.
	Completion *Completion `json:"completion,omitempty"`
	// Template is a real Kubernetes PodTemplateSpec.
	Template corev1.PodTemplateSpec `json:"template"`
	// Behaviors maps container names (and "default") to behaviour.
	Behaviors map[string]Behavior `json:"behaviors,omitempty"`
}

// Arrival says when pods are created.
type Arrival struct {
	// Type is constant (default), poisson or burst.
	Type string `json:"type,omitempty"`
	// Rate is pods per second (constant, poisson). Default: all at once.
	Rate float64 `json:"rate,omitempty"`
	// Size and Every (burst): Size pods every Every.
	Size  int      `json:"size,omitempty"`
	Every Duration `json:"every,omitempty"`
	// Start delays the first creation.
	Start Duration `json:"start,omitempty"`
}

// Completion describes a Job-style workload.
type Completion struct {
	// RunTime is how long main containers run before exiting 0; it overrides
	// their behaviours' runTime and exitCode.
	RunTime *behavior.Dist `json:"runTime,omitempty"`
}

// Behavior is one entry of a workload's behaviors map: any subset of the
// fields of behavior.Container (startLatency, startupAfter, readyAfter,
// runTime, exitCode, termHandling, termExitCode, crashMTBF, crashExitCode,
// memoryGrowth, memoryLimit, postStart, preStop, livenessFailAfter). The
// effective behaviour of a container is behavior.Default(), overlaid with
// the "default" entry, overlaid with the container's own entry (see
// Workload.BehaviorOf). The entry keeps its JSON so that "not set" and
// "set to the zero value" stay distinct.
type Behavior struct {
	raw json.RawMessage
}

// UnmarshalJSON keeps the entry's JSON.
func (b *Behavior) UnmarshalJSON(data []byte) error {
	b.raw = append(json.RawMessage(nil), data...)
	return nil
}

// MarshalJSON writes the entry's JSON.
func (b Behavior) MarshalJSON() ([]byte, error) {
	if len(b.raw) == 0 {
		return []byte("{}"), nil
	}
	return b.raw, nil
}

// Set reports whether the entry sets the field (JSON name).
func (b Behavior) Set(field string) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(b.raw, &m) != nil {
		return false
	}
	v, ok := m[field]
	return ok && string(v) != "null"
}

// apply overlays the entry on c.
func (b Behavior) apply(c *behavior.Container) error {
	if len(b.raw) == 0 || string(b.raw) == "null" {
		return nil
	}
	return json.Unmarshal(b.raw, c)
}

// Fault is one entry of the fault list (see harness/faults).
type Fault struct {
	Name string `json:"name,omitempty"`
	// Type is a catalogue name: kubelet-crash, runtime-restart, oom-kill,
	// node-shutdown, node-poweroff, container-gc, probe-failure,
	// image-change.
	Type     string   `json:"type"`
	Schedule Schedule `json:"schedule,omitempty"`
	Target   Target   `json:"target,omitempty"`

	Downtime           Duration `json:"downtime,omitempty"`
	RecoveryCrash      bool     `json:"recoveryCrash,omitempty"`
	RecoveryCrashAfter Duration `json:"recoveryCrashAfter,omitempty"`
	// Mode (runtime-restart): keep-containers (default) or kill-containers.
	Mode                            string    `json:"mode,omitempty"`
	ShutdownGracePeriod             *Duration `json:"shutdownGracePeriod,omitempty"`
	ShutdownGracePeriodCriticalPods *Duration `json:"shutdownGracePeriodCriticalPods,omitempty"`
	Return                          bool      `json:"return,omitempty"`
	AllExited                       bool      `json:"allExited,omitempty"`
	// Probe (probe-failure): startup, readiness or liveness.
	Probe  string   `json:"probe,omitempty"`
	Window Duration `json:"window,omitempty"`
	// Image (image-change): the new image.
	Image string `json:"image,omitempty"`
	// Signal (container-kill): KILL (default), TERM, INT, ... (SIG prefix
	// optional) or a number; ExitCode: exit with this code instead.
	Signal   string `json:"signal,omitempty"`
	ExitCode *int32 `json:"exitCode,omitempty"`
	// Resources (resize): the new requests and limits (cpu, memory); what
	// is not given keeps the container's value.
	Resources *ResizeResources `json:"resources,omitempty"`
}

// ResizeResources are the requests and limits of a resize fault.
type ResizeResources struct {
	Requests corev1.ResourceList `json:"requests,omitempty"`
	Limits   corev1.ResourceList `json:"limits,omitempty"`
}

// Schedule says when a fault fires.
type Schedule struct {
	// Type is once (default), every, poisson or on-phase.
	Type        string   `json:"type,omitempty"`
	At          Duration `json:"at,omitempty"`
	Interval    Duration `json:"interval,omitempty"`
	Jitter      Duration `json:"jitter,omitempty"`
	Rate        float64  `json:"rate,omitempty"`
	Until       Duration `json:"until,omitempty"`
	Max         int      `json:"max,omitempty"`
	Phase       string   `json:"phase,omitempty"`
	Delay       Duration `json:"delay,omitempty"`
	Probability float64  `json:"probability,omitempty"`
	// Container and Event (on-container): fire delay after this
	// container's event (start-requested, running, started, ready, exited,
	// prestop-begin).
	Container string `json:"container,omitempty"`
	Event     string `json:"event,omitempty"`
}

// Target says where a fault hits.
type Target struct {
	Nodes        []int   `json:"nodes,omitempty"`
	NodeCount    int     `json:"nodeCount,omitempty"`
	NodeFraction float64 `json:"nodeFraction,omitempty"`
	Workload     string  `json:"workload,omitempty"`
	// Selector is an equality label selector, "app=web,tier=front".
	Selector    string  `json:"selector,omitempty"`
	PodCount    int     `json:"podCount,omitempty"`
	PodFraction float64 `json:"podFraction,omitempty"`
	Container   string  `json:"container,omitempty"`
	// Role is init, sidecar or main.
	Role string `json:"role,omitempty"`
}

// Criteria are the pass criteria of a run.
type Criteria struct {
	// PodStartupP50 and PodStartupP99 bound the pod startup latency
	// percentiles (CL2 definition).
	PodStartupP50 *Duration `json:"podStartupP50,omitempty"`
	PodStartupP99 *Duration `json:"podStartupP99,omitempty"`
	// MaxViolations bounds the ordering violations over all trials of a
	// policy. Default 0.
	MaxViolations *int `json:"maxViolations,omitempty"`
	// MaxDegradations bounds the guarantees broken under voiding faults.
	// Default: unbounded.
	MaxDegradations *int `json:"maxDegradations,omitempty"`
	// Graduation names graduation criteria (alpha, beta, ga) that
	// reports/graduation evaluates.
	Graduation string `json:"graduation,omitempty"`
	// Policies restricts the criteria to these policies (default: the
	// first policy only; baselines such as none are expected to fail).
	Policies []string `json:"policies,omitempty"`
}

// Duration is a time.Duration written as a Go duration string ("300ms").
type Duration time.Duration

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes the duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON parses a duration string such as "1m30s". A bare 0 is
// accepted.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if string(b) == "0" || string(b) == "null" {
		*d = 0
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("expected a duration such as \"300ms\" or \"1m30s\", got %s", b)
	}
	v, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("invalid duration %q (use a Go duration such as \"300ms\", \"2s\", \"1m30s\"; units ns, us, ms, s, m, h)", s)
	}
	*d = Duration(v)
	return nil
}
