// Package api holds the plain data types of sidebench's reference in-node
// sidecar implementation: the pod spec subset it understands, the runtime
// state it observes, the inputs it is stepped with, the plan and actions it
// decides, the policy/feature gates it runs under and the trace events it
// emits.
//
// The package imports the standard library only (an import-rules test
// enforces it) so that the planner can be used as an executable specification
// anywhere, and so that allocation-free planning is possible.
package api

import (
	"fmt"
	"time"
)

// Time is a point on the backend's clock in nanoseconds. On the sim backend
// it counts from the start of the trial; real backends use Unix nanoseconds.
// The planner never reads a clock: every Time it sees is an argument.
type Time int64

// Add returns t+d.
func (t Time) Add(d time.Duration) Time { return t + Time(d) }

// Sub returns t-u as a duration.
func (t Time) Sub(u Time) time.Duration { return time.Duration(t - u) }

// Never is a Time that is later than every real event.
const Never Time = 1<<63 - 1

// Role says what part a container plays in the pod lifecycle.
type Role uint8

const (
	// RoleInit is a regular init container: runs to completion, in order.
	RoleInit Role = iota + 1
	// RoleSidecar is an init container with restartPolicy: Always
	// ("restartable init container" in kubelet code).
	RoleSidecar
	// RoleMain is an entry of spec.containers.
	RoleMain
)

func (r Role) String() string {
	switch r {
	case RoleInit:
		return "init"
	case RoleSidecar:
		return "sidecar"
	case RoleMain:
		return "main"
	}
	return fmt.Sprintf("Role(%d)", uint8(r))
}

// RestartPolicy is the pod-level restart policy.
type RestartPolicy uint8

const (
	RestartAlways RestartPolicy = iota
	RestartOnFailure
	RestartNever
)

func (p RestartPolicy) String() string {
	switch p {
	case RestartAlways:
		return "Always"
	case RestartOnFailure:
		return "OnFailure"
	case RestartNever:
		return "Never"
	}
	return fmt.Sprintf("RestartPolicy(%d)", uint8(p))
}

// Probe is the timing part of a Kubernetes probe. What the probe checks is
// not modelled: the backend decides the outcome and reports it as an input.
type Probe struct {
	InitialDelay     time.Duration
	Period           time.Duration
	Timeout          time.Duration
	SuccessThreshold int32
	FailureThreshold int32
	// TerminationGracePeriod is the probe-level override used when a
	// liveness or startup probe failure kills the container (INV-P5).
	// Zero means "use the pod's".
	TerminationGracePeriod time.Duration
}

// Container is the subset of a Kubernetes container that matters for
// ordering. Hooks are flags: their duration is behaviour, not spec.
type Container struct {
	Name  string
	Image string
	Role  Role
	// Intent is the role the scenario's template gave the container when
	// a workaround policy runs it in another one (a native sidecar run as
	// a regular container, harness/workaround); zero when it plays the
	// role it was written with. The planner ignores it: the history
	// carries it, so that user-level guarantees know the user's sidecars.
	Intent Role
	// WaitsForSidecars: the container's entrypoint waits for the pod's
	// sidecars before it execs its application (a workaround's wrapper);
	// the planner ignores it, the history carries it.
	WaitsForSidecars bool

	StartupProbe   *Probe
	ReadinessProbe *Probe
	LivenessProbe  *Probe

	PostStart bool
	PreStop   bool

	// RestartPolicy is the container-level restart policy
	// (ContainerRestartRules, KEP-5307); nil means "use the pod's".
	RestartPolicy *RestartPolicy
	// RestartRules are restartPolicyRules, evaluated in order on exit; the
	// first rule whose exit codes match decides (INV-RR1).
	RestartRules []RestartRule

	// Resources are the container's requests and limits; ResizePolicy says
	// which of them restart the container when resized in place (INV-U2).
	Resources    Resources
	ResizePolicy ResizePolicy
}

// Resources are CPU and memory requests and limits: milli-CPU and bytes,
// zero when unset. Only the two resources QoS, scheduling and OOM scores
// are computed from are modelled.
type Resources struct {
	CPURequest, CPULimit int64
	MemRequest, MemLimit int64
}

// ResizePolicy is a container's resizePolicy: true means RestartContainer
// for that resource, false NotRequired (the default).
type ResizePolicy struct {
	CPURestart, MemRestart bool
}

// RestartFor reports whether resizing from old to new needs a restart of
// the container under policy p: a changed resource whose policy is
// RestartContainer (kuberuntime_manager.go computePodResizeAction).
func (p ResizePolicy) RestartFor(old, new Resources) bool {
	cpu := old.CPURequest != new.CPURequest || old.CPULimit != new.CPULimit
	mem := old.MemRequest != new.MemRequest || old.MemLimit != new.MemLimit
	return cpu && p.CPURestart || mem && p.MemRestart
}

// RuleAction is a restartPolicyRules action.
type RuleAction uint8

const (
	// RuleRestart restarts the container (KEP-5307).
	RuleRestart RuleAction = iota + 1
	// RuleRestartAllContainers resets the whole pod in place: every
	// container is killed and removed, then initialization re-runs in the
	// same sandbox (KEP-5532).
	RuleRestartAllContainers
)

func (a RuleAction) String() string {
	switch a {
	case RuleRestart:
		return "Restart"
	case RuleRestartAllContainers:
		return "RestartAllContainers"
	}
	return fmt.Sprintf("RuleAction(%d)", uint8(a))
}

// RuleOperator is an exit-code operator.
type RuleOperator uint8

const (
	OpIn RuleOperator = iota + 1
	OpNotIn
)

func (o RuleOperator) String() string {
	switch o {
	case OpIn:
		return "In"
	case OpNotIn:
		return "NotIn"
	}
	return fmt.Sprintf("RuleOperator(%d)", uint8(o))
}

// RestartRule is one entry of restartPolicyRules.
type RestartRule struct {
	Action   RuleAction
	Operator RuleOperator
	Values   []int32
}

// Matches reports whether the rule applies to exit code code.
func (r *RestartRule) Matches(code int32) bool {
	in := false
	for _, v := range r.Values {
		if v == code {
			in = true
			break
		}
	}
	if r.Operator == OpNotIn {
		return !in
	}
	return in
}

// MatchRule returns the first rule of c that matches code, or nil
// (INV-RR1: list order, first match).
func (c *Container) MatchRule(code int32) *RestartRule {
	for i := range c.RestartRules {
		if c.RestartRules[i].Matches(code) {
			return &c.RestartRules[i]
		}
	}
	return nil
}

// UserSidecar reports whether the scenario's template made c a sidecar,
// whatever role a workaround runs it in.
func (c *Container) UserSidecar() bool { return c.Role == RoleSidecar || c.Intent == RoleSidecar }

// Probe returns the probe of the given kind, or nil.
func (c *Container) Probe(k ProbeKind) *Probe {
	switch k {
	case ProbeStartup:
		return c.StartupProbe
	case ProbeReadiness:
		return c.ReadinessProbe
	case ProbeLiveness:
		return c.LivenessProbe
	}
	return nil
}

// PodSpec is the pod spec subset. Containers are addressed by index into
// the concatenation Init ++ Main (see Index), the way the kubelet's
// podActions address containers by index into the spec.
type PodSpec struct {
	// Init holds spec.initContainers in spec order, sidecars included.
	Init []Container
	// Main holds spec.containers.
	Main []Container

	RestartPolicy RestartPolicy
	// TerminationGracePeriod is spec.terminationGracePeriodSeconds.
	TerminationGracePeriod time.Duration
	// Critical marks a pod that node shutdown terminates in the critical
	// phase (priority class system-*-critical).
	Critical bool
	// NodeCritical marks priority class system-node-critical: the kubelet
	// gives its containers the lowest oom_score_adj (IsNodeCriticalPod).
	NodeCritical bool
	// OverheadCPU (milli-CPU) and OverheadMem (bytes) are spec.overhead,
	// added to the pod's effective requests (INV-Q1).
	OverheadCPU, OverheadMem int64
}

// DefaultTerminationGracePeriod is Kubernetes' default TGPS.
const DefaultTerminationGracePeriod = 30 * time.Second

// Len returns the number of containers (init + main).
func (s *PodSpec) Len() int { return len(s.Init) + len(s.Main) }

// At returns the container with combined index i.
func (s *PodSpec) At(i int) *Container {
	if i < len(s.Init) {
		return &s.Init[i]
	}
	return &s.Main[i-len(s.Init)]
}

// MainIndex returns the combined index of main container j.
func (s *PodSpec) MainIndex(j int) int { return len(s.Init) + j }

// IndexOf returns the combined index of the named container, or -1.
func (s *PodSpec) IndexOf(name string) int {
	for i := range s.Init {
		if s.Init[i].Name == name {
			return i
		}
	}
	for j := range s.Main {
		if s.Main[j].Name == name {
			return len(s.Init) + j
		}
	}
	return -1
}

// HasSidecars reports whether any init container is a sidecar.
func (s *PodSpec) HasSidecars() bool {
	for i := range s.Init {
		if s.Init[i].Role == RoleSidecar {
			return true
		}
	}
	return false
}

// SpecError is a validation error: which container broke which rule.
type SpecError struct {
	Container string // empty for pod-level rules
	Rule      string // e.g. "INV-P4" or "unique-names"
	Msg       string
}

func (e *SpecError) Error() string {
	if e.Container == "" {
		return fmt.Sprintf("pod: %s: %s", e.Rule, e.Msg)
	}
	return fmt.Sprintf("container %q: %s: %s", e.Container, e.Rule, e.Msg)
}

// Validate checks the rules Kubernetes API validation enforces on the
// subset, plus what the planner relies on. It returns the first problem as
// a *SpecError.
func (s *PodSpec) Validate() error {
	if s.Len() == 0 || len(s.Main) == 0 {
		return &SpecError{Rule: "containers", Msg: "a pod needs at least one main container"}
	}
	if s.Len() > MaxContainers {
		return &SpecError{Rule: "containers", Msg: fmt.Sprintf("at most %d containers are supported, got %d", MaxContainers, s.Len())}
	}
	if s.OverheadCPU < 0 || s.OverheadMem < 0 {
		return &SpecError{Rule: "overhead", Msg: "overhead must be >= 0"}
	}
	if s.TerminationGracePeriod < 0 {
		return &SpecError{Rule: "terminationGracePeriodSeconds", Msg: fmt.Sprintf("must be >= 0, got %v", s.TerminationGracePeriod)}
	}
	if s.RestartPolicy > RestartNever {
		return &SpecError{Rule: "restartPolicy", Msg: "must be Always, OnFailure or Never"}
	}
	for i := 0; i < s.Len(); i++ {
		c := s.At(i)
		if c.Name == "" {
			return &SpecError{Container: fmt.Sprintf("#%d", i), Rule: "name", Msg: "name is required"}
		}
		// At most MaxContainers names: a quadratic scan beats a map and
		// keeps validation allocation-free (machines are pooled).
		for j := 0; j < i; j++ {
			if s.At(j).Name == c.Name {
				return &SpecError{Container: c.Name, Rule: "unique-names", Msg: "two containers have the same name; names must be unique across initContainers and containers"}
			}
		}
		wantInit := i < len(s.Init)
		switch {
		case wantInit && c.Role != RoleInit && c.Role != RoleSidecar:
			return &SpecError{Container: c.Name, Rule: "role", Msg: "an init container must have role init or sidecar"}
		case !wantInit && c.Role != RoleMain:
			return &SpecError{Container: c.Name, Rule: "role", Msg: "a main container must have role main (restartPolicy: Always is only allowed on init containers)"}
		}
		if c.Role == RoleInit {
			switch {
			case c.StartupProbe != nil || c.ReadinessProbe != nil || c.LivenessProbe != nil:
				return &SpecError{Container: c.Name, Rule: "INV-P4", Msg: "probes are not allowed on a regular init container (only on sidecars, restartPolicy: Always)"}
			case c.PostStart || c.PreStop:
				return &SpecError{Container: c.Name, Rule: "INV-P4", Msg: "lifecycle hooks are not allowed on a regular init container (only on sidecars, restartPolicy: Always)"}
			}
		}
		if c.RestartPolicy != nil && (*c.RestartPolicy > RestartNever || c.Role == RoleSidecar || (c.Role == RoleInit && *c.RestartPolicy == RestartAlways)) {
			return &SpecError{Container: c.Name, Rule: "restartPolicy", Msg: "a container-level restartPolicy is Always, OnFailure or Never on a main container, OnFailure or Never on a regular init container; an init container with restartPolicy: Always is a sidecar"}
		}
		if len(c.RestartRules) > 0 && c.Role != RoleSidecar && c.RestartPolicy == nil {
			return &SpecError{Container: c.Name, Rule: "INV-RR2", Msg: "restartPolicyRules require a container-level restartPolicy"}
		}
		for j := range c.RestartRules {
			r := &c.RestartRules[j]
			switch {
			case r.Action != RuleRestart && r.Action != RuleRestartAllContainers:
				return &SpecError{Container: c.Name, Rule: "restartPolicyRules", Msg: fmt.Sprintf("rule %d: action must be Restart or RestartAllContainers", j)}
			case r.Operator != OpIn && r.Operator != OpNotIn:
				return &SpecError{Container: c.Name, Rule: "restartPolicyRules", Msg: fmt.Sprintf("rule %d: exitCodes.operator must be In or NotIn", j)}
			case len(r.Values) == 0 || len(r.Values) > 255:
				return &SpecError{Container: c.Name, Rule: "restartPolicyRules", Msg: fmt.Sprintf("rule %d: exitCodes.values must hold 1 to 255 codes", j)}
			case r.Action == RuleRestart && c.Role == RoleSidecar:
				return &SpecError{Container: c.Name, Rule: "restartPolicyRules", Msg: fmt.Sprintf("rule %d: a sidecar always restarts; only RestartAllContainers rules are allowed on it", j)}
			}
		}
		r := &c.Resources
		switch {
		case r.CPURequest < 0 || r.CPULimit < 0 || r.MemRequest < 0 || r.MemLimit < 0:
			return &SpecError{Container: c.Name, Rule: "resources", Msg: "requests and limits must be >= 0"}
		case r.CPULimit > 0 && r.CPURequest > r.CPULimit:
			return &SpecError{Container: c.Name, Rule: "resources", Msg: "the cpu request must be <= its limit"}
		case r.MemLimit > 0 && r.MemRequest > r.MemLimit:
			return &SpecError{Container: c.Name, Rule: "resources", Msg: "the memory request must be <= its limit"}
		case c.Role == RoleInit && (c.ResizePolicy.CPURestart || c.ResizePolicy.MemRestart):
			// pkg/apis/core/validation: a regular init container cannot be
			// restarted for a resize.
			return &SpecError{Container: c.Name, Rule: "resizePolicy", Msg: "RestartContainer is not allowed on a regular init container"}
		case s.RestartPolicy == RestartNever && (c.ResizePolicy.CPURestart || c.ResizePolicy.MemRestart):
			// pkg/apis/core/validation validateResizePolicy.
			return &SpecError{Container: c.Name, Rule: "resizePolicy", Msg: "must be 'NotRequired' when pod restartPolicy is 'Never'"}
		}
		for k := ProbeStartup; k <= ProbeLiveness; k++ {
			p := c.Probe(k)
			if p == nil {
				continue
			}
			switch {
			case p.Period <= 0:
				return &SpecError{Container: c.Name, Rule: k.String() + "Probe.periodSeconds", Msg: "must be > 0"}
			case p.InitialDelay < 0:
				return &SpecError{Container: c.Name, Rule: k.String() + "Probe.initialDelaySeconds", Msg: "must be >= 0"}
			case p.FailureThreshold < 1:
				return &SpecError{Container: c.Name, Rule: k.String() + "Probe.failureThreshold", Msg: "must be >= 1"}
			case p.SuccessThreshold < 1:
				return &SpecError{Container: c.Name, Rule: k.String() + "Probe.successThreshold", Msg: "must be >= 1"}
			case k != ProbeReadiness && p.SuccessThreshold != 1:
				return &SpecError{Container: c.Name, Rule: k.String() + "Probe.successThreshold", Msg: "must be 1 for startup and liveness probes"}
			case p.TerminationGracePeriod < 0:
				return &SpecError{Container: c.Name, Rule: k.String() + "Probe.terminationGracePeriodSeconds", Msg: "must be >= 0"}
			}
		}
	}
	return nil
}

// MaxContainers bounds the containers per pod so that per-pod sets fit in a
// bitmask (Set).
const MaxContainers = 64

// Set is a set of combined container indexes.
type Set uint64

func (s Set) Has(i int) bool    { return s&(1<<uint(i)) != 0 }
func (s Set) With(i int) Set    { return s | 1<<uint(i) }
func (s Set) Without(i int) Set { return s &^ (1 << uint(i)) }
func (s Set) Empty() bool       { return s == 0 }
