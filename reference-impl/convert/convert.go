// Package convert translates between Kubernetes' core/v1 pod spec
// (k8s.io/api/core/v1) and the reference implementation's pod spec subset
// (reference-impl/api). It is the only reference-impl package that imports
// k8s.io/*.
//
// PodSpecFromV1 keeps what matters for sidecar semantics (container roles,
// probe timing, lifecycle hook presence, restart policy, grace period,
// criticality, CPU and memory requests and limits, resize policy,
// overhead) and ignores fields that do not (other resources, env,
// volumes, ports, security contexts, ...). Fields that would change
// ordering semantics in a way the reference implementation does not model
// are rejected with an error that names the container and the rule.
package convert

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sidebench/sidebench/reference-impl/api"
)

// Probe defaults, as Kubernetes applies them (pkg/apis/core/v1/defaults.go).
const (
	DefaultProbePeriod           = 10 * time.Second
	DefaultProbeTimeout          = 1 * time.Second
	DefaultProbeSuccessThreshold = 1
	DefaultProbeFailureThreshold = 3
)

// CriticalPriorityClasses are the priority classes node shutdown terminates
// in its critical phase.
var CriticalPriorityClasses = map[string]bool{
	"system-node-critical":    true,
	"system-cluster-critical": true,
}

// Error is a conversion error: which container (empty for the pod) broke
// which rule. Field is the core/v1 field path, e.g.
// "initContainers[1].restartPolicy".
type Error struct {
	Container string
	Field     string
	Rule      string
	Msg       string
}

func (e *Error) Error() string {
	if e.Container == "" {
		return fmt.Sprintf("pod: %s: %s: %s", e.Field, e.Rule, e.Msg)
	}
	return fmt.Sprintf("container %q (%s): %s: %s", e.Container, e.Field, e.Rule, e.Msg)
}

// PodSpecFromV1 converts a core/v1 pod spec into the reference
// implementation's subset and validates the result (api.PodSpec.Validate).
//
// Rules:
//   - an init container with restartPolicy: Always is a sidecar
//     (api.RoleSidecar); any other init container restartPolicy value is an
//     error; restartPolicy on a regular container is an error (not modelled);
//   - probes become api.Probe with Kubernetes defaults applied (period 10s,
//     timeout 1s, success 1, failure 3);
//   - lifecycle.postStart / lifecycle.preStop become presence flags;
//   - terminationGracePeriodSeconds defaults to 30s;
//   - restartPolicy "" means Always;
//   - priorityClassName system-node-critical / system-cluster-critical
//     marks the pod Critical;
//   - ephemeral containers are rejected (not modelled).
func PodSpecFromV1(in *corev1.PodSpec) (api.PodSpec, error) {
	var out api.PodSpec
	if in == nil {
		return out, &Error{Field: "spec", Rule: "required", Msg: "pod spec is nil"}
	}
	switch in.RestartPolicy {
	case "", corev1.RestartPolicyAlways:
		out.RestartPolicy = api.RestartAlways
	case corev1.RestartPolicyOnFailure:
		out.RestartPolicy = api.RestartOnFailure
	case corev1.RestartPolicyNever:
		out.RestartPolicy = api.RestartNever
	default:
		return out, &Error{Field: "restartPolicy", Rule: "restartPolicy", Msg: fmt.Sprintf("unsupported value %q (allowed: Always, OnFailure, Never)", in.RestartPolicy)}
	}
	out.TerminationGracePeriod = api.DefaultTerminationGracePeriod
	if in.TerminationGracePeriodSeconds != nil {
		if *in.TerminationGracePeriodSeconds < 0 {
			return out, &Error{Field: "terminationGracePeriodSeconds", Rule: "terminationGracePeriodSeconds", Msg: fmt.Sprintf("must be >= 0, got %d", *in.TerminationGracePeriodSeconds)}
		}
		out.TerminationGracePeriod = time.Duration(*in.TerminationGracePeriodSeconds) * time.Second
	}
	out.Critical = CriticalPriorityClasses[in.PriorityClassName]
	out.NodeCritical = in.PriorityClassName == "system-node-critical"
	out.OverheadCPU, out.OverheadMem = milliCPU(in.Overhead), bytesOf(in.Overhead)
	if len(in.EphemeralContainers) > 0 {
		return out, &Error{Container: in.EphemeralContainers[0].Name, Field: "ephemeralContainers[0]", Rule: "ephemeral-containers", Msg: "ephemeral containers are not supported"}
	}
	for i := range in.InitContainers {
		c, err := containerFromV1(&in.InitContainers[i], fmt.Sprintf("initContainers[%d]", i), true)
		if err != nil {
			return out, err
		}
		out.Init = append(out.Init, c)
	}
	for i := range in.Containers {
		c, err := containerFromV1(&in.Containers[i], fmt.Sprintf("containers[%d]", i), false)
		if err != nil {
			return out, err
		}
		out.Main = append(out.Main, c)
	}
	if err := out.Validate(); err != nil {
		return out, err
	}
	return out, nil
}

func containerFromV1(in *corev1.Container, path string, init bool) (api.Container, error) {
	c := api.Container{Name: in.Name, Image: in.Image, Role: api.RoleMain}
	if init {
		c.Role = api.RoleInit
	}
	if in.RestartPolicy != nil {
		switch {
		case init && *in.RestartPolicy == corev1.ContainerRestartPolicyAlways:
			c.Role = api.RoleSidecar
		case init && *in.RestartPolicy != corev1.ContainerRestartPolicyOnFailure && *in.RestartPolicy != corev1.ContainerRestartPolicyNever:
			return c, &Error{Container: in.Name, Field: path + ".restartPolicy", Rule: "sidecar", Msg: fmt.Sprintf("unsupported init container restartPolicy %q (allowed: Always, which makes it a sidecar; OnFailure or Never, a container-level policy under ContainerRestartRules)", *in.RestartPolicy)}
		default:
			// ContainerRestartRules (KEP-5307): a container-level policy on
			// a regular container or a regular init container
			// (validateInitContainerRestartPolicy allows OnFailure and
			// Never there).
			var rp api.RestartPolicy
			switch *in.RestartPolicy {
			case corev1.ContainerRestartPolicyAlways:
				rp = api.RestartAlways
			case corev1.ContainerRestartPolicyOnFailure:
				rp = api.RestartOnFailure
			case corev1.ContainerRestartPolicyNever:
				rp = api.RestartNever
			default:
				return c, &Error{Container: in.Name, Field: path + ".restartPolicy", Rule: "restartPolicy", Msg: fmt.Sprintf("unsupported value %q (allowed: Always, OnFailure, Never)", *in.RestartPolicy)}
			}
			c.RestartPolicy = &rp
		}
	}
	for j, r := range in.RestartPolicyRules {
		field := fmt.Sprintf("%s.restartPolicyRules[%d]", path, j)
		rule := api.RestartRule{}
		switch r.Action {
		case corev1.ContainerRestartRuleActionRestart:
			rule.Action = api.RuleRestart
		case corev1.ContainerRestartRuleActionRestartAllContainers:
			rule.Action = api.RuleRestartAllContainers
		default:
			return c, &Error{Container: in.Name, Field: field + ".action", Rule: "restart-rules", Msg: fmt.Sprintf("unsupported action %q (allowed: Restart, RestartAllContainers)", r.Action)}
		}
		if r.ExitCodes == nil {
			return c, &Error{Container: in.Name, Field: field + ".exitCodes", Rule: "restart-rules", Msg: "exitCodes is required"}
		}
		switch r.ExitCodes.Operator {
		case corev1.ContainerRestartRuleOnExitCodesOpIn, "":
			rule.Operator = api.OpIn
		case corev1.ContainerRestartRuleOnExitCodesOpNotIn:
			rule.Operator = api.OpNotIn
		default:
			return c, &Error{Container: in.Name, Field: field + ".exitCodes.operator", Rule: "restart-rules", Msg: fmt.Sprintf("unsupported operator %q (allowed: In, NotIn)", r.ExitCodes.Operator)}
		}
		rule.Values = append([]int32(nil), r.ExitCodes.Values...)
		c.RestartRules = append(c.RestartRules, rule)
	}
	var err error
	if c.StartupProbe, err = probeFromV1(in.StartupProbe, in.Name, path+".startupProbe"); err != nil {
		return c, err
	}
	if c.ReadinessProbe, err = probeFromV1(in.ReadinessProbe, in.Name, path+".readinessProbe"); err != nil {
		return c, err
	}
	if c.LivenessProbe, err = probeFromV1(in.LivenessProbe, in.Name, path+".livenessProbe"); err != nil {
		return c, err
	}
	if in.Lifecycle != nil {
		c.PostStart = in.Lifecycle.PostStart != nil
		c.PreStop = in.Lifecycle.PreStop != nil
	}
	r := &c.Resources
	r.CPURequest, r.CPULimit = milliCPU(in.Resources.Requests), milliCPU(in.Resources.Limits)
	r.MemRequest, r.MemLimit = bytesOf(in.Resources.Requests), bytesOf(in.Resources.Limits)
	// API defaulting (pkg/apis/core/v1/defaults.go): a limit without a
	// request sets the request.
	if _, ok := in.Resources.Requests[corev1.ResourceCPU]; !ok {
		r.CPURequest = r.CPULimit
	}
	if _, ok := in.Resources.Requests[corev1.ResourceMemory]; !ok {
		r.MemRequest = r.MemLimit
	}
	for j, rp := range in.ResizePolicy {
		field := fmt.Sprintf("%s.resizePolicy[%d]", path, j)
		restart := false
		switch rp.RestartPolicy {
		case corev1.NotRequired, "":
		case corev1.RestartContainer:
			restart = true
		default:
			return c, &Error{Container: in.Name, Field: field + ".restartPolicy", Rule: "resizePolicy", Msg: fmt.Sprintf("unsupported value %q (allowed: NotRequired, RestartContainer)", rp.RestartPolicy)}
		}
		switch rp.ResourceName {
		case corev1.ResourceCPU:
			c.ResizePolicy.CPURestart = restart
		case corev1.ResourceMemory:
			c.ResizePolicy.MemRestart = restart
		default:
			return c, &Error{Container: in.Name, Field: field + ".resourceName", Rule: "resizePolicy", Msg: fmt.Sprintf("unsupported resource %q (allowed: cpu, memory)", rp.ResourceName)}
		}
	}
	return c, nil
}

// milliCPU is the CPU quantity of l in milli-CPU (0 if unset).
func milliCPU(l corev1.ResourceList) int64 {
	q, ok := l[corev1.ResourceCPU]
	if !ok {
		return 0
	}
	return q.MilliValue()
}

// bytesOf is the memory quantity of l in bytes (0 if unset).
func bytesOf(l corev1.ResourceList) int64 {
	q, ok := l[corev1.ResourceMemory]
	if !ok {
		return 0
	}
	return q.Value()
}

// resourceList builds a ResourceList of the non-zero quantities.
func resourceList(cpu, mem int64) corev1.ResourceList {
	if cpu == 0 && mem == 0 {
		return nil
	}
	l := corev1.ResourceList{}
	if cpu != 0 {
		l[corev1.ResourceCPU] = *resource.NewMilliQuantity(cpu, resource.DecimalSI)
	}
	if mem != 0 {
		l[corev1.ResourceMemory] = *resource.NewQuantity(mem, resource.BinarySI)
	}
	return l
}

func probeFromV1(in *corev1.Probe, name, path string) (*api.Probe, error) {
	if in == nil {
		return nil, nil
	}
	p := &api.Probe{
		InitialDelay:     time.Duration(in.InitialDelaySeconds) * time.Second,
		Period:           time.Duration(in.PeriodSeconds) * time.Second,
		Timeout:          time.Duration(in.TimeoutSeconds) * time.Second,
		SuccessThreshold: in.SuccessThreshold,
		FailureThreshold: in.FailureThreshold,
	}
	if p.Period == 0 {
		p.Period = DefaultProbePeriod
	}
	if p.Timeout == 0 {
		p.Timeout = DefaultProbeTimeout
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = DefaultProbeSuccessThreshold
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = DefaultProbeFailureThreshold
	}
	if in.TerminationGracePeriodSeconds != nil {
		if *in.TerminationGracePeriodSeconds < 0 {
			return nil, &Error{Container: name, Field: path + ".terminationGracePeriodSeconds", Rule: "probe", Msg: "must be >= 0"}
		}
		p.TerminationGracePeriod = time.Duration(*in.TerminationGracePeriodSeconds) * time.Second
	}
	if in.InitialDelaySeconds < 0 || in.PeriodSeconds < 0 || in.TimeoutSeconds < 0 || in.SuccessThreshold < 0 || in.FailureThreshold < 0 {
		return nil, &Error{Container: name, Field: path, Rule: "probe", Msg: "probe timings and thresholds must be >= 0"}
	}
	return p, nil
}

// PodSpecToV1 converts back to a core/v1 pod spec, so that
// PodSpecFromV1(PodSpecToV1(s)) == s for any valid s whose durations are
// whole seconds. Probes get an exec handler (`true`) and hooks an exec
// handler (`true`) so that the result passes API validation; what a probe
// or hook checks is behaviour, not spec, in sidebench.
func PodSpecToV1(in api.PodSpec) corev1.PodSpec {
	var out corev1.PodSpec
	switch in.RestartPolicy {
	case api.RestartOnFailure:
		out.RestartPolicy = corev1.RestartPolicyOnFailure
	case api.RestartNever:
		out.RestartPolicy = corev1.RestartPolicyNever
	default:
		out.RestartPolicy = corev1.RestartPolicyAlways
	}
	g := int64(in.TerminationGracePeriod / time.Second)
	out.TerminationGracePeriodSeconds = &g
	if in.Critical {
		out.PriorityClassName = "system-cluster-critical"
	}
	if in.NodeCritical {
		out.PriorityClassName = "system-node-critical"
	}
	out.Overhead = resourceList(in.OverheadCPU, in.OverheadMem)
	for i := range in.Init {
		out.InitContainers = append(out.InitContainers, containerToV1(&in.Init[i]))
	}
	for i := range in.Main {
		out.Containers = append(out.Containers, containerToV1(&in.Main[i]))
	}
	return out
}

func containerToV1(in *api.Container) corev1.Container {
	c := corev1.Container{Name: in.Name, Image: in.Image}
	if in.Role == api.RoleSidecar {
		always := corev1.ContainerRestartPolicyAlways
		c.RestartPolicy = &always
	}
	if in.RestartPolicy != nil {
		rp := map[api.RestartPolicy]corev1.ContainerRestartPolicy{api.RestartAlways: corev1.ContainerRestartPolicyAlways,
			api.RestartOnFailure: corev1.ContainerRestartPolicyOnFailure, api.RestartNever: corev1.ContainerRestartPolicyNever}[*in.RestartPolicy]
		c.RestartPolicy = &rp
	}
	for _, r := range in.RestartRules {
		out := corev1.ContainerRestartRule{Action: corev1.ContainerRestartRuleActionRestart,
			ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: append([]int32(nil), r.Values...)}}
		if r.Action == api.RuleRestartAllContainers {
			out.Action = corev1.ContainerRestartRuleActionRestartAllContainers
		}
		if r.Operator == api.OpNotIn {
			out.ExitCodes.Operator = corev1.ContainerRestartRuleOnExitCodesOpNotIn
		}
		c.RestartPolicyRules = append(c.RestartPolicyRules, out)
	}
	c.Resources.Requests = resourceList(in.Resources.CPURequest, in.Resources.MemRequest)
	c.Resources.Limits = resourceList(in.Resources.CPULimit, in.Resources.MemLimit)
	if in.ResizePolicy.CPURestart {
		c.ResizePolicy = append(c.ResizePolicy, corev1.ContainerResizePolicy{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.RestartContainer})
	}
	if in.ResizePolicy.MemRestart {
		c.ResizePolicy = append(c.ResizePolicy, corev1.ContainerResizePolicy{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer})
	}
	c.StartupProbe = probeToV1(in.StartupProbe)
	c.ReadinessProbe = probeToV1(in.ReadinessProbe)
	c.LivenessProbe = probeToV1(in.LivenessProbe)
	if in.PostStart || in.PreStop {
		c.Lifecycle = &corev1.Lifecycle{}
		if in.PostStart {
			c.Lifecycle.PostStart = &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}
		}
		if in.PreStop {
			c.Lifecycle.PreStop = &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}
		}
	}
	return c
}

func probeToV1(in *api.Probe) *corev1.Probe {
	if in == nil {
		return nil
	}
	p := &corev1.Probe{
		ProbeHandler:        corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}},
		InitialDelaySeconds: int32(in.InitialDelay / time.Second),
		PeriodSeconds:       int32(in.Period / time.Second),
		TimeoutSeconds:      int32(in.Timeout / time.Second),
		SuccessThreshold:    in.SuccessThreshold,
		FailureThreshold:    in.FailureThreshold,
	}
	if in.TerminationGracePeriod > 0 {
		g := int64(in.TerminationGracePeriod / time.Second)
		p.TerminationGracePeriodSeconds = &g
	}
	return p
}
