package scenario

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sidebench/sidebench/harness/behavior"
	"github.com/sidebench/sidebench/harness/faults"
	"github.com/sidebench/sidebench/reference-impl/api"
	"github.com/sidebench/sidebench/reference-impl/convert"
)

// Allowed values of enumerations.
var (
	BackendNames     = []string{"sim", "local", "kube"}
	ArrivalTypes     = []string{"constant", "poisson", "burst"}
	ScheduleTypes    = []string{"once", "every", "poisson", "on-phase"}
	GraduationLevels = []string{"alpha", "beta", "ga"}
	RuntimeModes     = []string{"keep-containers", "kill-containers"}
	ProbeNames       = []string{"startup", "readiness", "liveness"}
	RoleNames        = []string{"init", "sidecar", "main"}
	PhaseNames       = []string{"initializing", "running", "terminating"}
)

// DefaultBehavior is the behaviors key that applies to every container
// without its own entry.
const DefaultBehavior = "default"

type policyGates struct {
	name  string
	gates api.Gates
}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// validate checks the decoded scenario's semantics; e collects errors.
// It also fills derived state (parsed gates).
func validate(s *Scenario, e *errs) {
	if s.Metadata.Name == "" {
		e.add("metadata.name", "required: a DNS label such as start-ordering")
	} else if !dnsLabel.MatchString(s.Metadata.Name) || len(s.Metadata.Name) > 63 {
		e.add("metadata.name", "invalid name %q: lowercase letters, digits and '-', at most 63 characters", s.Metadata.Name)
	}

	// Policies.
	if len(s.Policies) == 0 {
		s.Policies = []string{"kep753"}
	}
	s.gates = nil
	seenPol := map[string]bool{}
	for i, p := range s.Policies {
		path := idx("policies", i)
		g, err := api.ParseGates(p)
		if err != nil {
			msg := err.Error()
			head, _, _ := strings.Cut(p, "+")
			if rest, ok := strings.CutPrefix(p, api.WorkaroundPrefix); ok {
				for _, part := range strings.Split(rest, "+") {
					name, _, _ := strings.Cut(part, "(")
					if !contains(api.WorkaroundNames(), name) {
						if sug := Suggest(name, api.WorkaroundNames()); sug != "" {
							msg += fmt.Sprintf("; did you mean \"%s%s\"?", api.WorkaroundPrefix, sug)
						}
					}
				}
			} else if !contains(api.PolicyNames(), head) {
				if sug := Suggest(head, api.PolicyNames()); sug != "" {
					msg += fmt.Sprintf("; did you mean %q?", sug)
				}
			} else {
				for _, part := range strings.Split(p, "+")[1:] {
					if name, ok := strings.CutPrefix(part, "bug:"); ok {
						if sug := Suggest(name, api.BugNames()); sug != "" {
							msg += fmt.Sprintf("; did you mean \"bug:%s\"?", sug)
						}
					} else if sug := Suggest(part, api.GateNames); sug != "" {
						msg += fmt.Sprintf("; did you mean %q?", sug)
					}
				}
			}
			e.add(path, "%s", msg)
			continue
		}
		if seenPol[g.String()] {
			e.add(path, "duplicate policy %q", p)
			continue
		}
		seenPol[g.String()] = true
		s.gates = append(s.gates, policyGates{name: g.String(), gates: g})
	}

	// Backend.
	if s.Backend.Name == "" {
		s.Backend.Name = "sim"
	} else if !contains(BackendNames, s.Backend.Name) {
		e.add("backend.name", "%s", unknownName("backend", s.Backend.Name, BackendNames))
	}
	if s.Backend.Horizon < 0 {
		e.add("backend.horizon", "must be >= 0, got %v", s.Backend.Horizon)
	}
	if k := s.Backend.Kube; k != nil && k.Namespace != "" {
		e.add("backend.kube.namespace", "not supported: the kube backend creates one namespace per trial (sb-<run>-t<n>, labelled sidebench.dev/run) and deletes it at the end; remove the field")
	}

	// Cluster.
	if s.Cluster.Nodes < 1 {
		e.add("cluster.nodes", "must be >= 1, got %d", s.Cluster.Nodes)
	}
	if s.Cluster.PodsPerNode < 0 {
		e.add("cluster.podsPerNode", "must be >= 0 (0 means 110), got %d", s.Cluster.PodsPerNode)
	}
	if s.Cluster.ShutdownGracePeriod < 0 || s.Cluster.ShutdownGracePeriodCriticalPods < 0 {
		e.add("cluster", "shutdown grace periods must be >= 0")
	} else if s.Cluster.ShutdownGracePeriodCriticalPods > s.Cluster.ShutdownGracePeriod {
		e.add("cluster.shutdownGracePeriodCriticalPods", "must be <= shutdownGracePeriod (%v), got %v", s.Cluster.ShutdownGracePeriod, s.Cluster.ShutdownGracePeriodCriticalPods)
	}

	// Workloads.
	if len(s.Workloads) == 0 {
		e.add("workloads", "required: at least one workload")
	}
	seenW := map[string]int{}
	for i := range s.Workloads {
		validateWorkload(s, i, seenW, e)
	}

	// Faults.
	if len(e.list) == 0 {
		validateFaults(s, e)
	}

	// Trials and criteria.
	if s.Trials < 0 {
		e.add("trials", "must be >= 0 (0 means 1), got %d", s.Trials)
	}
	c := &s.Criteria
	if c.PodStartupP50 != nil && *c.PodStartupP50 <= 0 {
		e.add("criteria.podStartupP50", "must be > 0, got %v", *c.PodStartupP50)
	}
	if c.PodStartupP99 != nil && *c.PodStartupP99 <= 0 {
		e.add("criteria.podStartupP99", "must be > 0, got %v", *c.PodStartupP99)
	}
	if c.MaxViolations != nil && *c.MaxViolations < 0 {
		e.add("criteria.maxViolations", "must be >= 0, got %d", *c.MaxViolations)
	}
	if c.MaxDegradations != nil && *c.MaxDegradations < 0 {
		e.add("criteria.maxDegradations", "must be >= 0, got %d", *c.MaxDegradations)
	}
	if c.Graduation != "" && !contains(GraduationLevels, c.Graduation) {
		e.add("criteria.graduation", "%s", unknownName("graduation level", c.Graduation, GraduationLevels))
	}
	s.judged = nil
	for i, p := range c.Policies {
		g, err := api.ParseGates(p)
		if err != nil || !seenPol[g.String()] {
			e.add(idx("criteria.policies", i), "%s", unknownName("policy", p, s.Policies))
			continue
		}
		s.judged = append(s.judged, g.String())
	}
}

func validateWorkload(s *Scenario, i int, seen map[string]int, e *errs) {
	w := &s.Workloads[i]
	p := idx("workloads", i)
	switch {
	case w.Name == "":
		e.add(p+".name", "required: a DNS label naming the workload")
	case !dnsLabel.MatchString(w.Name):
		e.add(p+".name", "invalid name %q: lowercase letters, digits and '-'", w.Name)
	default:
		if j, dup := seen[w.Name]; dup {
			e.add(p+".name", "duplicate workload name %q (also workloads[%d])", w.Name, j)
		}
		seen[w.Name] = i
	}
	if w.Count < 1 {
		e.add(p+".count", "must be >= 1, got %d", w.Count)
	}
	a := &w.Arrival
	if a.Type == "" {
		a.Type = "constant"
	}
	switch a.Type {
	case "constant":
		if a.Rate < 0 {
			e.add(p+".arrival.rate", "must be >= 0 pods per second (0: all at once), got %g", a.Rate)
		}
	case "poisson":
		if !(a.Rate > 0) {
			e.add(p+".arrival.rate", "poisson arrival needs rate > 0 (pods per second), got %g", a.Rate)
		}
	case "burst":
		if a.Size < 1 {
			e.add(p+".arrival.size", "burst arrival needs size >= 1, got %d", a.Size)
		}
		if a.Every <= 0 && a.Size < w.Count {
			e.add(p+".arrival.every", "burst arrival needs every > 0 when size < count")
		}
	default:
		e.add(p+".arrival.type", "%s", unknownName("arrival type", a.Type, ArrivalTypes))
	}
	if a.Start < 0 {
		e.add(p+".arrival.start", "must be >= 0")
	}
	if a.Type != "burst" && (a.Size != 0 || a.Every != 0) {
		e.add(p+".arrival", "size and every apply to type: burst only")
	}

	spec, err := convert.PodSpecFromV1(&w.Template.Spec)
	if err != nil {
		e.add(specErrPath(p+".template.spec", &w.Template.Spec, err), "%s", specErrMsg(err))
		return
	}
	jobStyle := spec.RestartPolicy != api.RestartAlways
	if w.Completion != nil && !jobStyle {
		e.add(p+".completion", "a Job-style workload needs template.spec.restartPolicy Never or OnFailure (got Always)")
	}
	if w.Lifetime != nil && w.Completion != nil {
		e.add(p+".lifetime", "lifetime (long-running pods) and completion (Job-style pods) are exclusive")
	}

	// Behaviours: every key names a container (or default), every
	// container has a behaviour.
	names := make([]string, 0, spec.Len())
	for j := 0; j < spec.Len(); j++ {
		names = append(names, spec.At(j).Name)
	}
	for k := range w.Behaviors {
		bp := p + ".behaviors." + k
		if k != DefaultBehavior && spec.IndexOf(k) < 0 {
			e.add(bp, "%s", unknownName("container", k, append(names, DefaultBehavior)))
		}
	}
	_, hasDefault := w.Behaviors[DefaultBehavior]
	for j := 0; j < spec.Len(); j++ {
		c := spec.At(j)
		bp := p + ".behaviors." + c.Name
		if _, ok := w.Behaviors[c.Name]; !ok {
			if !hasDefault {
				e.add(p+".behaviors", "container %q has no behaviour: add behaviors.%s or behaviors.default", c.Name, c.Name)
				continue
			}
			bp = p + ".behaviors." + DefaultBehavior
		}
		b, err := w.BehaviorOf(c.Name)
		if err != nil {
			e.add(bp, "%v", err)
			continue
		}
		if err := b.Validate(); err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				field, msg, ok := strings.Cut(line, ": ")
				if ok && !strings.ContainsAny(field, " ") {
					e.add(bp+"."+field, "container %q: %s", c.Name, msg)
				} else {
					e.add(bp, "container %q: %s", c.Name, line)
				}
			}
		}
		if c.Role == api.RoleInit && b.RunTime.IsNever() {
			e.add(bp+".runTime", "regular init container %q never exits (runTime: never), so no pod of this workload would ever start its main containers", c.Name)
		}
	}
	if jobStyle && (w.Completion == nil || w.Completion.RunTime == nil) {
		for j := range spec.Main {
			c := &spec.Main[j]
			if b, err := w.BehaviorOf(c.Name); err == nil && b.RunTime.IsNever() {
				e.add(p+".completion", "main container %q of a Job-style workload (restartPolicy %s) never exits: set completion.runTime or behaviors.%s.runTime", c.Name, spec.RestartPolicy, c.Name)
			}
		}
	}
	if w.Completion != nil && w.Completion.RunTime != nil && w.Completion.RunTime.IsNever() {
		e.add(p+".completion.runTime", "never: a Job-style workload's main containers must exit")
	}
	if w.DeleteGrace != nil && *w.DeleteGrace < 0 {
		e.add(p+".deleteGrace", "must be >= 0")
	}
}

// BehaviorOf returns the effective behaviour of a container:
// behavior.Default() overlaid with the workload's "default" entry, then
// with the container's own entry. For Job-style workloads with
// completion.runTime, main containers run for that time and exit 0.
func (w *Workload) BehaviorOf(name string) (behavior.Container, error) {
	c := behavior.Default()
	if err := w.Behaviors[DefaultBehavior].apply(&c); err != nil {
		return c, err
	}
	if name != DefaultBehavior {
		if err := w.Behaviors[name].apply(&c); err != nil {
			return c, err
		}
	}
	if w.Completion != nil && w.Completion.RunTime != nil {
		for _, m := range w.Template.Spec.Containers {
			if m.Name == name {
				c.RunTime = *w.Completion.RunTime
				c.ExitCode = 0
			}
		}
	}
	// Regular init containers must exit: unless the scenario says
	// otherwise, they run for a short fixed time.
	for _, ic := range w.Template.Spec.InitContainers {
		if ic.Name == name && ic.RestartPolicy == nil && !w.Behaviors[name].Set("runTime") && !w.Behaviors[DefaultBehavior].Set("runTime") {
			c.RunTime = behavior.Fixed(DefaultInitRunTime)
		}
	}
	return c, nil
}

// DefaultInitRunTime is the run time of a regular init container whose
// behaviour does not set one.
const DefaultInitRunTime = 500 * time.Millisecond

// specErrPath maps a conversion or api validation error to a field path.
func specErrPath(base string, ps *corev1.PodSpec, err error) string {
	var ce *convert.Error
	if errors.As(err, &ce) {
		if ce.Field == "spec" {
			return base
		}
		return base + "." + ce.Field
	}
	var se *api.SpecError
	if errors.As(err, &se) {
		return base + containerPath(ps, se)
	}
	return base
}

func containerPath(ps *corev1.PodSpec, se *api.SpecError) string {
	if se.Container == "" {
		if se.Rule == "containers" {
			return ".containers"
		}
		return ""
	}
	field := ""
	switch {
	case se.Rule == "INV-P4":
		field = firstProbeOrHook(ps, se.Container)
	case strings.Contains(se.Rule, "Probe."):
		field = "." + se.Rule
	}
	// The first container with the name (duplicates: the second one).
	count := 0
	for j, c := range ps.InitContainers {
		if c.Name == se.Container {
			count++
			if se.Rule != "unique-names" || count == 2 {
				return fmt.Sprintf(".initContainers[%d]%s", j, field)
			}
		}
	}
	for j, c := range ps.Containers {
		if c.Name == se.Container {
			count++
			if se.Rule != "unique-names" || count == 2 {
				return fmt.Sprintf(".containers[%d]%s", j, field)
			}
		}
	}
	return ""
}

func specErrMsg(err error) string {
	var se *api.SpecError
	if errors.As(err, &se) {
		if se.Container == "" {
			return fmt.Sprintf("%s: %s", se.Rule, se.Msg)
		}
		return fmt.Sprintf("container %q: %s: %s", se.Container, se.Rule, se.Msg)
	}
	var ce *convert.Error
	if errors.As(err, &ce) {
		if ce.Container == "" {
			return ce.Msg
		}
		return fmt.Sprintf("container %q: %s", ce.Container, ce.Msg)
	}
	return err.Error()
}

func validateFaults(s *Scenario, e *errs) {
	world := s.world()
	seen := map[string]int{}
	for i := range s.Faults {
		f := &s.Faults[i]
		p := idx("faults", i)
		if f.Name != "" {
			if j, dup := seen[f.Name]; dup {
				e.add(p+".name", "duplicate fault name %q (also faults[%d])", f.Name, j)
			}
			seen[f.Name] = i
		}
		n := len(e.list)
		spec := s.faultSpec(i, e)
		if len(e.list) > n {
			continue
		}
		if err := spec.Validate(i, world); err != nil {
			var fe *faults.Error
			path := p
			msg := err.Error()
			if errors.As(err, &fe) {
				msg = fe.Msg
				if fe.Selector != "" {
					path = p + ".target"
					msg = fmt.Sprintf("target %s: %s", fe.Selector, fe.Msg)
				}
			}
			e.add(path, "%s", msg)
		}
	}
}

// world describes the scenario for fault validation and selection.
func (s *Scenario) world() *faults.World {
	w := &faults.World{Nodes: s.Cluster.Nodes}
	for i := range s.Workloads {
		wl := &s.Workloads[i]
		spec, err := convert.PodSpecFromV1(&wl.Template.Spec)
		if err != nil {
			continue
		}
		w.Workloads = append(w.Workloads, faults.WorldOf(wl.Name, wl.Template.Labels, &spec))
	}
	return w
}

// faultSpec compiles fault i into a faults.Spec, reporting field errors.
func (s *Scenario) faultSpec(i int, e *errs) faults.Spec {
	f := &s.Faults[i]
	p := idx("faults", i)
	var sp faults.Spec
	sp.Name = f.Name
	if f.Type == "" {
		e.add(p+".type", "required: one of %s", strings.Join(faults.KindNames(), ", "))
	} else if k, ok := faults.ParseKind(f.Type); !ok {
		e.add(p+".type", "%s", unknownName("fault type", f.Type, faults.KindNames()))
	} else {
		sp.Kind = k
	}
	sc := &f.Schedule
	st := sc.Type
	if st == "" {
		st = "once"
	}
	if k, ok := faults.ParseScheduleKind(st); ok {
		sp.When.Kind = k
	} else {
		e.add(p+".schedule.type", "%s", unknownName("schedule type", st, ScheduleTypes))
	}
	sp.When.At, sp.When.Interval, sp.When.Jitter = sc.At.D(), sc.Interval.D(), sc.Jitter.D()
	sp.When.Rate, sp.When.Until, sp.When.Max = sc.Rate, sc.Until.D(), sc.Max
	sp.When.Delay, sp.When.Probability = sc.Delay.D(), sc.Probability
	if sc.Phase != "" {
		if ph, ok := faults.ParsePodPhase(sc.Phase); ok {
			sp.When.Phase = ph
		} else {
			e.add(p+".schedule.phase", "%s", unknownName("phase", sc.Phase, PhaseNames))
		}
	}

	t := &f.Target
	sp.Where = faults.Target{Nodes: t.Nodes, NodeCount: t.NodeCount, NodeFraction: t.NodeFraction,
		Workload: t.Workload, PodCount: t.PodCount, PodFraction: t.PodFraction, Container: t.Container}
	if t.Workload != "" {
		var names []string
		found := false
		for j := range s.Workloads {
			names = append(names, s.Workloads[j].Name)
			found = found || s.Workloads[j].Name == t.Workload
		}
		if !found {
			e.add(p+".target.workload", "%s", unknownName("workload", t.Workload, names))
		}
	}
	if t.Selector != "" {
		sel, err := labels.Parse(t.Selector)
		switch {
		case err != nil:
			e.add(p+".target.selector", "invalid label selector %q: %v (use key=value pairs separated by commas, e.g. \"app=web,tier=front\")", t.Selector, err)
		default:
			m, err := labels.ConvertSelectorToLabelsMap(t.Selector)
			if err != nil {
				e.add(p+".target.selector", "unsupported label selector %q: only equality (key=value, comma-separated) is supported", t.Selector)
			} else {
				sp.Where.Labels = m
				matched := false
				for j := range s.Workloads {
					if sel.Matches(labels.Set(s.Workloads[j].Template.Labels)) {
						matched = true
					}
				}
				if !matched {
					e.add(p+".target.selector", "label selector %q matches no workload's template labels", t.Selector)
				}
			}
		}
	}
	if t.Container != "" {
		var all []string
		found := false
		for j := range s.Workloads {
			ps := &s.Workloads[j].Template.Spec
			for _, c := range append(append([]corev1.Container(nil), ps.InitContainers...), ps.Containers...) {
				all = append(all, c.Name)
				found = found || c.Name == t.Container
			}
		}
		if !found {
			e.add(p+".target.container", "%s", unknownName("container", t.Container, dedupe(all)))
		}
	}
	switch t.Role {
	case "":
	case "init":
		sp.Where.Role = api.RoleInit
	case "sidecar":
		sp.Where.Role = api.RoleSidecar
	case "main":
		sp.Where.Role = api.RoleMain
	default:
		e.add(p+".target.role", "%s", unknownName("role", t.Role, RoleNames))
	}

	sp.Downtime = f.Downtime.D()
	sp.RecoveryCrash = f.RecoveryCrash
	sp.RecoveryCrashAfter = f.RecoveryCrashAfter.D()
	if m, ok := faults.ParseRuntimeMode(f.Mode); ok {
		sp.Mode = m
	} else {
		e.add(p+".mode", "%s", unknownName("runtime-restart mode", f.Mode, RuntimeModes))
	}
	sp.ShutdownGracePeriod = s.Cluster.ShutdownGracePeriod.D()
	sp.ShutdownGracePeriodCriticalPods = s.Cluster.ShutdownGracePeriodCriticalPods.D()
	if f.ShutdownGracePeriod != nil {
		sp.ShutdownGracePeriod = f.ShutdownGracePeriod.D()
	}
	if f.ShutdownGracePeriodCriticalPods != nil {
		sp.ShutdownGracePeriodCriticalPods = f.ShutdownGracePeriodCriticalPods.D()
	}
	sp.Return = f.Return
	sp.AllExited = f.AllExited
	switch f.Probe {
	case "":
	case "startup":
		sp.Probe = api.ProbeStartup
	case "readiness":
		sp.Probe = api.ProbeReadiness
	case "liveness":
		sp.Probe = api.ProbeLiveness
	default:
		e.add(p+".probe", "%s", unknownName("probe", f.Probe, ProbeNames))
	}
	if sp.Kind == faults.ProbeFailure && f.Probe == "" {
		e.add(p+".probe", "required for probe-failure: one of %s", strings.Join(ProbeNames, ", "))
	}
	sp.Window = f.Window.D()
	sp.Image = f.Image
	return sp
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
