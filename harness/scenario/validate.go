package scenario

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sidebench/sidebench/harness/behavior"
	"github.com/sidebench/sidebench/harness/faults"
	"github.com/sidebench/sidebench/harness/workaround"
	"github.com/sidebench/sidebench/reference-impl/api"
	"github.com/sidebench/sidebench/reference-impl/convert"
	"github.com/sidebench/sidebench/reference-impl/kubelet"
)

// Allowed values of enumerations.
var (
	BackendNames     = []string{"sim", "local", "kube"}
	ArrivalTypes     = []string{"constant", "poisson", "burst"}
	ScheduleTypes    = []string{"once", "every", "poisson", "on-phase", "on-container"}
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

	// Workaround policies run a transformed pod (harness/workaround): one
	// that cannot be built is refused here, naming the policy, not when
	// its first trial starts (a sidecar with restartPolicyRules run as a
	// regular container broke INV-RR2 and ended the run with exit 3 after
	// the other policies' trials).
	if len(e.list) == 0 {
		validateWorkarounds(s, e)
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

// validateWorkarounds builds every workload's pod under every workaround
// policy, as a trial does.
func validateWorkarounds(s *Scenario, e *errs) {
	for i, pg := range s.gates {
		if !pg.gates.IsWorkaround() {
			continue
		}
		for j := range s.Workloads {
			w := &s.Workloads[j]
			// s.gates[i] is s.Policies[i]: validation stops before this
			// when a policy does not parse or repeats.
			if _, err := workaround.Apply(&w.Template, pg.gates, w.BehaviorOf); err != nil {
				e.add(idx("policies", i), "%s runs the sidecars as regular containers, and workloads[%d] %q cannot run that way: %v (leave the policy out of this scenario, or change the pod)", pg.name, j, w.Name, err)
			}
		}
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
	if w.Count >= 1 {
		checkArrivalSpan(s, w, p, e)
	}
	if a.Type != "burst" && (a.Size != 0 || a.Every != 0) {
		e.add(p+".arrival", "size and every apply to type: burst only")
	}

	if !checkGraceSeconds(&w.Template.Spec, p+".template.spec", e) {
		return
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
		if err != nil && !strings.HasPrefix(err.Error(), "attempts[") {
			e.add(bp, "%v", err)
			continue
		}
		if err == nil {
			err = b.Validate()
		}
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				field, msg, ok := strings.Cut(line, ": ")
				if sub, rest, nested := strings.Cut(msg, ": "); ok && strings.HasPrefix(field, "attempts[") && nested && !strings.ContainsAny(sub, " ") {
					field, msg = field+"."+sub, rest // attempts[n]: exitCode: ...
				}
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

// maxDurationSeconds is the longest whole number of seconds a
// time.Duration holds (about 292 years). The kubelet converts grace periods
// with time.Duration(seconds) * time.Second, so a larger value overflows
// (9223372036854775807 became "-1s").
const maxDurationSeconds = math.MaxInt64 / int64(time.Second)

// checkGraceSeconds rejects grace periods no duration can hold, before the
// conversion that would overflow them. It reports whether all were fine.
func checkGraceSeconds(ps *corev1.PodSpec, path string, e *errs) bool {
	ok := true
	check := func(g *int64, field string) {
		if g != nil && *g > maxDurationSeconds {
			e.add(field, "must be at most %d seconds (about 292 years, the longest duration the kubelet can represent), got %d", maxDurationSeconds, *g)
			ok = false
		}
	}
	check(ps.TerminationGracePeriodSeconds, path+".terminationGracePeriodSeconds")
	for _, list := range []struct {
		name string
		cs   []corev1.Container
	}{{"initContainers", ps.InitContainers}, {"containers", ps.Containers}} {
		for j := range list.cs {
			c := &list.cs[j]
			for _, pr := range []struct {
				name string
				p    *corev1.Probe
			}{{"startupProbe", c.StartupProbe}, {"readinessProbe", c.ReadinessProbe}, {"livenessProbe", c.LivenessProbe}} {
				if pr.p != nil {
					check(pr.p.TerminationGracePeriodSeconds, fmt.Sprintf("%s.%s[%d].%s.terminationGracePeriodSeconds", path, list.name, j, pr.name))
				}
			}
		}
	}
	return ok
}

// maxPoissonGapFactor bounds one Poisson gap in units of the mean: a
// draw is -ln(1-u)/rate with u < 1-2^-53, so one gap is below 37/rate.
const maxPoissonGapFactor = 37

// checkArrivalSpan rejects arrivals whose times cannot be represented or,
// for deterministic arrivals, fall after the trial's horizon: a pod
// "arriving" at 10^300 seconds overflowed to time 0 (issue 15: rate 1e-300
// silently created every pod at t=0), and a pod due after the horizon is
// never created at all.
func checkArrivalSpan(s *Scenario, w *Workload, p string, e *errs) {
	a := &w.Arrival
	maxSec := float64(math.MaxInt64) / float64(time.Second)
	var last float64 // seconds after start of the last arrival
	var field, how string
	switch a.Type {
	case "constant":
		if !(a.Rate > 0) {
			return // all at once
		}
		last = float64(w.Count-1) / a.Rate
		field, how = p+".arrival.rate", fmt.Sprintf("at %g pods per second, pod %d of %d arrives %s after the first", a.Rate, w.Count, w.Count, fmtSeconds(last))
	case "poisson":
		if !(a.Rate > 0) {
			return
		}
		if g := maxPoissonGapFactor / a.Rate; g > maxSec {
			e.add(p+".arrival.rate", "%g pods per second is too low: one gap between arrivals may reach %s, more than the longest duration (about 292 years)", a.Rate, fmtSeconds(g))
		}
		return
	case "burst":
		if a.Size < 1 || a.Every <= 0 {
			return
		}
		bursts := (w.Count + a.Size - 1) / a.Size
		last = float64(bursts-1) * a.Every.D().Seconds()
		field, how = p+".arrival.every", fmt.Sprintf("with %d bursts every %v, the last burst comes %s after the first", bursts, a.Every, fmtSeconds(last))
	default:
		return
	}
	start := a.Start.D().Seconds()
	switch {
	case last+start > maxSec:
		e.add(field, "%s, more than the longest duration (about 292 years)", how)
	case time.Duration((last+start)*float64(time.Second)) > s.Horizon():
		e.add(field, "%s: after the trial's horizon (backend.horizon %v), so those pods would never be created; raise the rate or the horizon", how, s.Horizon())
	}
}

// fmtSeconds formats a number of seconds as a duration when one can hold
// it, else in seconds.
func fmtSeconds(sec float64) string {
	if sec < float64(math.MaxInt64)/float64(time.Second) {
		return time.Duration(sec * float64(time.Second)).Round(time.Millisecond).String()
	}
	return fmt.Sprintf("%.3gs", sec)
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
	// Attempt overlays apply on top of all of the above.
	return c, c.Resolve()
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
	case strings.Contains(se.Rule, "Probe."), se.Rule == "resizePolicy", se.Rule == "restartPolicyRules":
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
	if sp.When.Kind == faults.OnContainer || sc.Container != "" || sc.Event != "" {
		s.onContainerSchedule(p, sc, &sp, e)
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
	s.killParams(p, f, &sp, e)
	if f.Resources != nil {
		sp.Resources = resizePatch(f.Resources)
	}
	if sp.Kind == faults.Resize {
		s.checkResize(p, f, &sp, e)
	}
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

// onContainerSchedule compiles an on-container schedule's container and
// event.
func (s *Scenario) onContainerSchedule(p string, sc *Schedule, sp *faults.Spec, e *errs) {
	if sp.When.Kind != faults.OnContainer {
		e.add(p+".schedule", "container and event belong to schedule type on-container, not %s", sp.When.Kind)
		return
	}
	if sc.Event == "" {
		e.add(p+".schedule.event", "required for on-container: one of %s", strings.Join(faults.ContainerEventNames(), ", "))
	} else if ev, ok := faults.ParseContainerEvent(sc.Event); ok {
		sp.When.Event = ev
	} else {
		e.add(p+".schedule.event", "%s", unknownName("container event", sc.Event, faults.ContainerEventNames()))
	}
	if sc.Container == "" {
		e.add(p+".schedule.container", "required for on-container: the container whose event triggers the fault")
		return
	}
	var all []string
	for j := range s.Workloads {
		ps := &s.Workloads[j].Template.Spec
		for _, c := range append(append([]corev1.Container(nil), ps.InitContainers...), ps.Containers...) {
			all = append(all, c.Name)
		}
	}
	if !slices.Contains(all, sc.Container) {
		e.add(p+".schedule.container", "%s", unknownName("container", sc.Container, dedupe(all)))
		return
	}
	sp.When.Container = sc.Container
}

// killParams compiles a container-kill's signal and exit code.
func (s *Scenario) killParams(p string, f *Fault, sp *faults.Spec, e *errs) {
	if f.Signal != "" {
		name := strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(f.Signal)), "SIG")
		if n, ok := faults.SignalNames[name]; ok {
			sp.Signal = n
		} else if n, err := strconv.Atoi(name); err == nil && n >= 1 && n <= 31 {
			sp.Signal = n
		} else {
			names := make([]string, 0, len(faults.SignalNames))
			for k := range faults.SignalNames {
				names = append(names, k)
			}
			sort.Strings(names)
			e.add(p+".signal", "%s", unknownName("signal", f.Signal, append(names, "a number in 1..31")))
		}
	}
	if f.ExitCode != nil {
		sp.ExitCode, sp.HasExitCode = *f.ExitCode, true
	}
	if (f.Signal != "" || f.ExitCode != nil) && sp.Kind != faults.ContainerKill && sp.Kind != faults.KindInvalid {
		e.add(p+".signal", "signal and exitCode belong to container-kill, not %s", sp.Kind)
	}
	if f.Resources != nil && sp.Kind != faults.Resize && sp.Kind != faults.KindInvalid {
		e.add(p+".resources", "resources belong to resize, not %s", sp.Kind)
	}
}

// resizePatch turns a resize's resources into a patch (millicores, bytes).
func resizePatch(r *ResizeResources) faults.ResourcePatch {
	var rp faults.ResourcePatch
	get := func(l corev1.ResourceList, name corev1.ResourceName, milli bool) *int64 {
		q, ok := l[name]
		if !ok {
			return nil
		}
		v := q.Value()
		if milli {
			v = q.MilliValue()
		}
		return &v
	}
	rp.CPURequest, rp.CPULimit = get(r.Requests, corev1.ResourceCPU, true), get(r.Limits, corev1.ResourceCPU, true)
	rp.MemRequest, rp.MemLimit = get(r.Requests, corev1.ResourceMemory, false), get(r.Limits, corev1.ResourceMemory, false)
	return rp
}

// checkResize rejects a resize the API server would refuse: resources
// other than cpu and memory, and a resize that changes the pod's QoS class
// ("Pod QoS is immutable", pkg/apis/core/validation ValidatePodResize).
func (s *Scenario) checkResize(p string, f *Fault, sp *faults.Spec, e *errs) {
	if f.Resources == nil {
		e.add(p+".resources", "required for resize: requests and/or limits of cpu and memory")
		return
	}
	for _, l := range []corev1.ResourceList{f.Resources.Requests, f.Resources.Limits} {
		for name := range l {
			if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
				e.add(p+".resources", "only cpu and memory can be resized in place, not %q", name)
			}
		}
	}
	for j := range s.Workloads {
		wl := &s.Workloads[j]
		spec, err := convert.PodSpecFromV1(&wl.Template.Spec)
		if err != nil {
			continue
		}
		world := faults.WorldOf(wl.Name, wl.Template.Labels, &spec)
		if !sp.Where.MatchPod(&world) {
			continue
		}
		before := kubelet.PodQOS(&spec)
		for _, c := range sp.Where.Containers(&world, sp.Kind, 0) {
			resized := spec
			resized.Init = append([]api.Container(nil), spec.Init...)
			resized.Main = append([]api.Container(nil), spec.Main...)
			resized.At(c).Resources = sp.Resources.Apply(spec.At(c).Resources)
			if after := kubelet.PodQOS(&resized); after != before {
				e.add(p+".resources", "resizing container %q of workload %q would change the pod's QoS class from %s to %s; the API server refuses that (Pod QoS is immutable)",
					spec.At(c).Name, wl.Name, before, after)
				return
			}
		}
	}
}
