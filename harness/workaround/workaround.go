// Package workaround turns a pod written with native sidecars into what
// people ran before Kubernetes 1.28 had them: the workaround policies of
// reference-impl/api (docs/workarounds.md). A scenario's pod template is
// written once; the trial compiler (harness/trial) applies the policy's
// transform here, so that the sim, local and kube backends all run the same
// transformed pod: its Kubernetes template (what the apiserver backends
// create), its reference-implementation spec (what the sim's kubelet runs)
// and its containers' behaviours and wiring (what the sim engine, the CRI
// server and the agent execute).
//
// The transform is pure: a function of the template, the behaviours and
// the workaround parameters.
package workaround

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sidebench/sidebench/harness/behavior"
	"github.com/sidebench/sidebench/reference-impl/api"
	"github.com/sidebench/sidebench/reference-impl/convert"
)

// Container is one container of a transformed pod, in spec order.
type Container struct {
	Name     string
	Behavior behavior.Container
	// Wiring is what the workaround adds to the container's behaviour
	// (nil: nothing).
	Wiring *behavior.Wiring
}

// Pod is a pod to run: its template, reference spec and containers.
type Pod struct {
	Template *corev1.PodTemplateSpec
	Spec     api.PodSpec
	// Containers are in spec order (Spec.At(i) ↔ Containers[i]).
	Containers []Container
}

// Commands the workarounds write into the Kubernetes template (what the
// real-world workaround runs). Backends that execute behaviours rewrite
// hooks to their own commands (harness/backend/local RewriteSpec); these
// keep a template readable and kubectl-appliable.
var (
	holdCommand  = []string{"pilot-agent", "wait"}
	drainCommand = []string{"sh", "-c", "while [ \"$(curl -s localhost:15000/stats | grep -c 'downstream_cx_active: [1-9]')\" != 0 ]; do sleep 1; done"}
)

func sleepCommand(d time.Duration) []string {
	return []string{"sh", "-c", "sleep " + strconv.FormatFloat(d.Seconds(), 'f', -1, 64)}
}

// Apply runs the pod of template under gates: for a workaround policy the
// transformed pod, otherwise the template as written. behaviorOf gives
// each container's behaviour by name (the scenario's). Every user sidecar
// (a native sidecar of the template, whatever the workaround makes of it)
// is wired to record container.serving, for the user-level guarantees.
func Apply(template *corev1.PodTemplateSpec, gates api.Gates, behaviorOf func(name string) (behavior.Container, error)) (*Pod, error) {
	tmpl := template
	var sidecars, mains []string
	for _, c := range template.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars = append(sidecars, c.Name)
		}
	}
	for _, c := range template.Spec.Containers {
		mains = append(mains, c.Name)
	}
	if gates.IsWorkaround() {
		if len(sidecars) == 0 {
			// Nothing to work around: the pod runs as written.
			gates = api.Gates{Policy: gates.Policy}
		} else {
			tmpl = transformTemplate(template, gates.Workarounds, sidecars)
		}
	}
	spec, err := convert.PodSpecFromV1(&tmpl.Spec)
	if err != nil {
		return nil, err
	}
	wirings := map[string]*behavior.Wiring{}
	wire := func(name string) *behavior.Wiring {
		if wirings[name] == nil {
			wirings[name] = &behavior.Wiring{}
		}
		return wirings[name]
	}
	for _, s := range sidecars {
		wire(s).Serving = true
		if i := spec.IndexOf(s); i >= 0 && gates.IsWorkaround() {
			spec.At(i).Intent = api.RoleSidecar
		}
	}
	overrides := map[string]func(b *behavior.Container){}
	for _, w := range gates.Workarounds {
		switch w.Kind {
		case api.WaitWrapper:
			for _, m := range mains {
				wire(m).Wait = &behavior.Wait{For: slices.Clone(sidecars), Period: w.Poll, Timeout: w.Timeout, StartOnTimeout: w.OnTimeout == api.TimeoutStart}
			}
		case api.HoldUntilProxyStarts:
			for _, s := range sidecars {
				wire(s).Hold = &behavior.Poll{Period: w.Poll, Timeout: w.Timeout}
				if w.ZeroConnections {
					wire(s).Drain = &behavior.Drain{Of: slices.Clone(mains), Period: w.Poll}
				} else {
					sleep := w.Sleep
					overrides[s] = func(b *behavior.Container) { b.PreStop = behavior.Fixed(sleep) }
				}
			}
		case api.JobQuitSignal:
			for _, m := range mains {
				wire(m).Signal = &behavior.Signal{To: slices.Clone(sidecars), File: w.Via == api.QuitFile}
				if !w.NoWait {
					wire(m).Wait = &behavior.Wait{For: slices.Clone(sidecars), Period: w.Poll, Timeout: w.Timeout, StartOnTimeout: w.OnTimeout == api.TimeoutStart}
				}
			}
			for _, s := range sidecars {
				q := &behavior.Quit{File: w.Via == api.QuitFile}
				if q.File {
					q.Period = w.Poll
				}
				wire(s).Quit = q
			}
		case api.PreStopSleep:
			for _, s := range sidecars {
				sleep := w.Sleep
				overrides[s] = func(b *behavior.Container) { b.PreStop = behavior.Fixed(sleep) }
			}
		}
	}
	for name, w := range wirings {
		if i := spec.IndexOf(name); i >= 0 && w.Wait != nil {
			spec.At(i).WaitsForSidecars = true
		}
	}
	pod := &Pod{Template: tmpl, Spec: spec}
	names := make([]string, spec.Len())
	for i := range names {
		names[i] = spec.At(i).Name
	}
	for _, name := range names {
		b, err := behaviorOf(name)
		if err != nil {
			return nil, fmt.Errorf("container %q: %w", name, err)
		}
		if f := overrides[name]; f != nil {
			f(&b)
		}
		wr := wirings[name]
		if err := wr.Validate(name, names); err != nil {
			return nil, fmt.Errorf("container %q: %s: %w", name, gates, err)
		}
		pod.Containers = append(pod.Containers, Container{Name: name, Behavior: b, Wiring: wr})
	}
	return pod, nil
}

// transformTemplate returns the template the workarounds ws make of t:
// the sidecars (init containers with restartPolicy: Always, names in
// spec order) become regular containers — the first ones under
// hold-until-proxy-starts (Istio injects the proxy first), after the mains
// otherwise — with the hooks the workarounds give them.
func transformTemplate(t *corev1.PodTemplateSpec, ws api.WorkaroundSet, sidecars []string) *corev1.PodTemplateSpec {
	out := t.DeepCopy()
	spec := &out.Spec
	var moved []corev1.Container
	inits := spec.InitContainers[:0]
	for _, c := range spec.InitContainers {
		if slices.Contains(sidecars, c.Name) {
			c.RestartPolicy = nil
			moved = append(moved, c)
			continue
		}
		inits = append(inits, c)
	}
	spec.InitContainers = inits
	if len(spec.InitContainers) == 0 {
		spec.InitContainers = nil
	}
	for i := range moved {
		c := &moved[i]
		if w := ws.Has(api.HoldUntilProxyStarts); w != nil {
			lc := lifecycle(c)
			lc.PostStart = &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: slices.Clone(holdCommand)}}
			if w.ZeroConnections {
				lc.PreStop = &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: slices.Clone(drainCommand)}}
			} else {
				lc.PreStop = &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: sleepCommand(w.Sleep)}}
			}
		}
		if w := ws.Has(api.PreStopSleep); w != nil {
			lifecycle(c).PreStop = &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: sleepCommand(w.Sleep)}}
		}
	}
	if ws.Has(api.HoldUntilProxyStarts) != nil {
		spec.Containers = append(moved, spec.Containers...)
	} else {
		spec.Containers = append(spec.Containers, moved...)
	}
	return out
}

func lifecycle(c *corev1.Container) *corev1.Lifecycle {
	if c.Lifecycle == nil {
		c.Lifecycle = &corev1.Lifecycle{}
	}
	return c.Lifecycle
}
