package cri

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/sidebench/sidebench/harness/behavior"
)

// Pod annotations through which the backend tells the CRI server how a
// pod's containers behave. The kubelet copies every pod annotation into the
// PodSandboxConfig it passes to RunPodSandbox and CreateContainer, so the
// server reads them from there; nothing else is needed on the wire.
const (
	// AnnotationBehaviorPrefix + container name holds that container's
	// behaviour as JSON (behavior.Container, lowerCamel field names,
	// distributions as strings: {"startupAfter":"2s","runTime":"never"}).
	// Fields left out keep behavior.Default's values. Containers without the
	// annotation behave as behavior.Default().
	AnnotationBehaviorPrefix = "sidebench.dev/behavior."
	// AnnotationSeed is the trial seed (decimal uint64) from which every
	// attempt's behaviour is drawn: stream behavior.ContainerKey(seed,
	// "namespace/name", container, attempt), the key the sim uses too.
	AnnotationSeed = "sidebench.dev/seed"
)

// BehaviorAnnotation returns the annotation key and value that give
// container name the behaviour b.
func BehaviorAnnotation(name string, b behavior.Container) (key, value string, err error) {
	v, err := json.Marshal(b)
	if err != nil {
		return "", "", err
	}
	return AnnotationBehaviorPrefix + name, string(v), nil
}

// behaviorFor decodes container name's behaviour from pod annotations.
func behaviorFor(ann map[string]string, name string) (behavior.Container, error) {
	b := behavior.Default()
	v, ok := ann[AnnotationBehaviorPrefix+name]
	if !ok {
		return b, nil
	}
	if err := json.Unmarshal([]byte(v), &b); err != nil {
		return b, fmt.Errorf("annotation %s%s: %w", AnnotationBehaviorPrefix, name, err)
	}
	if err := b.Validate(); err != nil {
		return b, fmt.Errorf("annotation %s%s: %w", AnnotationBehaviorPrefix, name, err)
	}
	return b, nil
}

func seedFor(ann map[string]string) (uint64, error) {
	v, ok := ann[AnnotationSeed]
	if !ok {
		return 0, nil
	}
	s, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("annotation %s: %w", AnnotationSeed, err)
	}
	return s, nil
}

// Exec commands the server understands. The backend writes probes and
// hooks as exec handlers with these commands; the kubelet runs both through
// ExecSync (hooks via RunInContainer), and the server answers them from the
// container's drawn behaviour. Any other command succeeds at once.
const (
	CommandName    = "sidebench"
	ProbeStartup   = "startup"
	ProbeReadiness = "readiness"
	ProbeLiveness  = "liveness"
	HookPostStart  = "postStart"
	HookPreStop    = "preStop"
)

// ProbeCommand is the exec command of a probe of kind (ProbeStartup,
// ProbeReadiness or ProbeLiveness).
func ProbeCommand(kind string) []string { return []string{CommandName, "probe", kind} }

// HookCommand is the exec command of a lifecycle hook (HookPostStart or
// HookPreStop).
func HookCommand(kind string) []string { return []string{CommandName, "hook", kind} }
