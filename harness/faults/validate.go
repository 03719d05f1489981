package faults

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/sidebench/sidebench/reference-impl/api"
)

// Error is a validation error naming the fault (its index and label) and
// the selector or field at fault.
type Error struct {
	Index    int
	Name     string
	Selector string
	Msg      string
}

func (e *Error) Error() string {
	if e.Selector == "" {
		return fmt.Sprintf("fault %d (%s): %s", e.Index, e.Name, e.Msg)
	}
	return fmt.Sprintf("fault %d (%s): target %q: %s", e.Index, e.Name, e.Selector, e.Msg)
}

// Validate checks every fault against the world before a run: a fault
// whose target cannot exist, or whose parameters make no sense, is an
// error naming the fault and the selector. It returns the first problem as
// an *Error.
func Validate(specs []Spec, w *World) error {
	for i := range specs {
		if err := specs[i].Validate(i, w); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks one fault (index i of the list) against w.
func (s *Spec) Validate(i int, w *World) error {
	name := s.Label(i)
	fail := func(sel bool, format string, args ...any) error {
		e := &Error{Index: i, Name: name, Msg: fmt.Sprintf(format, args...)}
		if sel {
			e.Selector = s.Where.String()
		}
		return e
	}
	if s.Kind == KindInvalid || s.Kind >= kindCount {
		return fail(false, "unknown fault kind %d (allowed: %s)", s.Kind, strings.Join(KindNames(), ", "))
	}
	// Schedule.
	sc := &s.When
	switch sc.Kind {
	case Once:
	case Every:
		if sc.Interval <= 0 {
			return fail(false, "schedule every: interval must be > 0, got %v", sc.Interval)
		}
		if sc.Jitter < 0 {
			return fail(false, "schedule every: jitter must be >= 0, got %v", sc.Jitter)
		}
	case Poisson:
		if !(sc.Rate > 0) || math.IsInf(sc.Rate, 0) {
			return fail(false, "schedule poisson: rate must be a finite number > 0, got %g", sc.Rate)
		}
		if gap := MaxPoissonGap / sc.Rate * float64(time.Second); gap >= maxGapNanos {
			return fail(false, "schedule poisson: rate %g per second is too low: one gap between firings may reach %.3gs, beyond the longest duration (about 292 years)", sc.Rate, gap/float64(time.Second))
		}
	case OnPhase:
		if math.IsNaN(sc.Probability) {
			return fail(false, "schedule on-phase: probability must be in [0,1], got NaN")
		}
		if sc.Phase == PhaseNone || int(sc.Phase) >= len(podPhaseNames) {
			return fail(false, "schedule on-phase: phase must be initializing, running or terminating")
		}
		if sc.Delay < 0 {
			return fail(false, "schedule on-phase: delay must be >= 0, got %v", sc.Delay)
		}
		if sc.Probability < 0 || sc.Probability > 1 {
			return fail(false, "schedule on-phase: probability must be in [0,1], got %g", sc.Probability)
		}
	case OnContainer:
		if sc.Container == "" {
			return fail(false, "schedule on-container: container must name the container whose event triggers the fault")
		}
		if sc.Event == EventNone || int(sc.Event) >= len(containerEventNames) {
			return fail(false, "schedule on-container: event must be one of %s", strings.Join(ContainerEventNames(), ", "))
		}
		if sc.Delay < 0 {
			return fail(false, "schedule on-container: delay must be >= 0, got %v", sc.Delay)
		}
		if sc.Probability < 0 || sc.Probability > 1 {
			return fail(false, "schedule on-container: probability must be in [0,1], got %g", sc.Probability)
		}
	default:
		return fail(false, "unknown schedule kind %d", sc.Kind)
	}
	if sc.At < 0 || sc.Until < 0 || sc.Max < 0 {
		return fail(false, "schedule: at, until and max must be >= 0")
	}
	if sc.Until > 0 && sc.Until < sc.At {
		return fail(false, "schedule: until (%v) is before at (%v)", sc.Until, sc.At)
	}

	// Parameters.
	switch s.Kind {
	case KubeletCrash, RuntimeRestart:
		if s.Downtime <= 0 {
			return fail(false, "downtime must be > 0, got %v", s.Downtime)
		}
		if s.RecoveryCrashAfter < 0 {
			return fail(false, "recoveryCrashAfter must be >= 0, got %v", s.RecoveryCrashAfter)
		}
		if s.Kind == RuntimeRestart && s.Mode > KillContainers {
			return fail(false, "mode must be keep-containers or kill-containers")
		}
	case NodeShutdown, NodePoweroff:
		if s.Return && s.Downtime <= 0 {
			return fail(false, "return: downtime must be > 0, got %v", s.Downtime)
		}
		if s.Downtime < 0 {
			return fail(false, "downtime must be >= 0, got %v", s.Downtime)
		}
		if s.Kind == NodeShutdown {
			if s.ShutdownGracePeriod <= 0 {
				return fail(false, "shutdownGracePeriod must be > 0, got %v", s.ShutdownGracePeriod)
			}
			if s.ShutdownGracePeriodCriticalPods < 0 || s.ShutdownGracePeriodCriticalPods > s.ShutdownGracePeriod {
				return fail(false, "shutdownGracePeriodCriticalPods must be in [0, shutdownGracePeriod=%v], got %v",
					s.ShutdownGracePeriod, s.ShutdownGracePeriodCriticalPods)
			}
		}
	case ProbeFailure:
		if s.Probe > api.ProbeLiveness {
			return fail(false, "probe must be startup, readiness or liveness")
		}
		if s.Window <= 0 {
			return fail(false, "window must be > 0, got %v", s.Window)
		}
	case ImageChange:
		if s.Image == "" {
			return fail(false, "image must be set")
		}
	case ImagePullFailure:
		if s.Window < 0 {
			return fail(false, "window must be >= 0 (0: the pulls fail for good), got %v", s.Window)
		}
	case ContainerKill:
		if s.HasExitCode && s.Signal != 0 {
			return fail(false, "signal and exitCode are exclusive: a process is killed by a signal or exits with a code")
		}
		if s.Signal < 0 || s.Signal > 31 {
			return fail(false, "signal must be in 1..31, got %d", s.Signal)
		}
		if s.HasExitCode && (s.ExitCode < 0 || s.ExitCode > 255) {
			return fail(false, "exitCode must be in 0..255, got %d", s.ExitCode)
		}
	case Resize:
		rp := &s.Resources
		if rp.Empty() {
			return fail(false, "resources must set at least one request or limit")
		}
		for _, v := range []*int64{rp.CPURequest, rp.CPULimit, rp.MemRequest, rp.MemLimit} {
			if v != nil && *v < 0 {
				return fail(false, "resources must not be negative")
			}
		}
		if rp.CPURequest != nil && rp.CPULimit != nil && *rp.CPULimit > 0 && *rp.CPURequest > *rp.CPULimit {
			return fail(false, "resources: the cpu request %dm exceeds the cpu limit %dm", *rp.CPURequest, *rp.CPULimit)
		}
		if rp.MemRequest != nil && rp.MemLimit != nil && *rp.MemLimit > 0 && *rp.MemRequest > *rp.MemLimit {
			return fail(false, "resources: the memory request %d exceeds the memory limit %d", *rp.MemRequest, *rp.MemLimit)
		}
	}

	// Target.
	t := &s.Where
	if t.NodeCount < 0 || t.PodCount < 0 {
		return fail(true, "counts must be >= 0")
	}
	if !(t.NodeFraction >= 0 && t.NodeFraction <= 1 && t.PodFraction >= 0 && t.PodFraction <= 1) { // NaN fails too
		return fail(true, "fractions must be in [0,1]")
	}
	if w.Nodes <= 0 {
		return fail(true, "the cluster has no nodes")
	}
	for _, n := range t.Nodes {
		if n < 0 || n >= w.Nodes {
			return fail(true, "node index %d out of range [0,%d)", n, w.Nodes)
		}
	}
	if t.NodeCount > w.Nodes {
		return fail(true, "nodeCount %d exceeds the %d nodes of the cluster", t.NodeCount, w.Nodes)
	}
	if t.Role > api.RoleMain {
		return fail(true, "unknown role %d", t.Role)
	}
	podSelective := t.Workload != "" || len(t.Labels) > 0
	containerSelective := t.Container != "" || t.Role != 0
	if s.Kind.NodeLevel() && sc.Timed() && (podSelective || containerSelective) && s.Kind != ContainerGC {
		return fail(true, "a %s fault with a timed schedule selects nodes only; pod and container selectors need schedule on-phase or on-container", s.Kind)
	}
	needPods := podSelective || !s.Kind.NodeLevel() || !sc.Timed()
	if needPods {
		matched := 0
		for j := range w.Workloads {
			wl := &w.Workloads[j]
			if !t.MatchPod(wl) {
				continue
			}
			if (s.Kind.NodeLevel() && s.Kind != ContainerGC) || len(t.Containers(wl, s.Kind, s.Probe)) > 0 {
				matched++
				break // one is enough: scanning on made validation quadratic
			}
		}
		if matched == 0 {
			what := "no workload matches the pod selector"
			if containerSelective || s.Kind == ProbeFailure {
				what = "no container of a matching workload matches the container selector"
				if s.Kind == ProbeFailure {
					what += fmt.Sprintf(" and has a %s probe", s.Probe)
				}
			}
			return fail(true, "%s", what)
		}
		if sc.Kind == OnContainer {
			// The trigger container must exist in a pod the fault hits.
			found := false
			for j := range w.Workloads {
				wl := &w.Workloads[j]
				if !t.MatchPod(wl) || (!s.Kind.NodeLevel() && len(t.Containers(wl, s.Kind, s.Probe)) == 0) {
					continue
				}
				for _, c := range wl.Containers {
					found = found || c.Name == sc.Container
				}
			}
			if !found {
				return fail(true, "schedule on-container: no pod the fault can hit has a container %q", sc.Container)
			}
		}
	}
	return nil
}

// BudgetFor returns the node-shutdown grace budget of a pod (INV-F4): the
// regular-pod budget ShutdownGracePeriod − ShutdownGracePeriodCriticalPods
// or the critical budget, capped by the pod's own grace period.
func (s *Spec) BudgetFor(critical bool, podGrace time.Duration) time.Duration {
	b := s.ShutdownGracePeriod - s.ShutdownGracePeriodCriticalPods
	if critical {
		b = s.ShutdownGracePeriodCriticalPods
	}
	if podGrace < b {
		return podGrace
	}
	return b
}
