package cri

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/sidebench/sidebench/harness/behavior"
	"github.com/sidebench/sidebench/harness/history"
)

// AnnotationWiringPrefix + container name holds that container's wiring
// (behavior.Wiring as JSON): what a workaround policy adds to its
// behaviour (docs/workarounds.md) — an entrypoint wrapper that waits for
// the sidecars, hooks that poll, a quit signal — and container.serving for
// the user's sidecars. The server executes it as the sim engine does
// (harness/sim/wiring.go).
const AnnotationWiringPrefix = "sidebench.dev/wiring."

// WiringAnnotation returns the annotation key and value that give
// container name the wiring w.
func WiringAnnotation(name string, w *behavior.Wiring) (key, value string, err error) {
	v, err := json.Marshal(w)
	if err != nil {
		return "", "", err
	}
	return AnnotationWiringPrefix + name, string(v), nil
}

// wiringFor decodes container name's wiring from pod annotations (nil if
// none).
func wiringFor(ann map[string]string, name string) (*behavior.Wiring, error) {
	v, ok := ann[AnnotationWiringPrefix+name]
	if !ok {
		return nil, nil
	}
	w := new(behavior.Wiring)
	if err := json.Unmarshal([]byte(v), w); err != nil {
		return nil, fmt.Errorf("annotation %s%s: %w", AnnotationWiringPrefix, name, err)
	}
	return w, nil
}

// alive reports whether c is still the server's running container.
func (s *Server) alive(c *container) bool {
	// A container reported Unknown still runs its process (issue 16 D).
	return s.containers[c.id] == c && (c.state == runtimeapi.ContainerState_CONTAINER_RUNNING ||
		c.state == runtimeapi.ContainerState_CONTAINER_UNKNOWN)
}

// waits reports whether c's entrypoint waits for other containers before
// it execs the application.
func (c *container) waits() bool { return c.wiring != nil && c.wiring.Wait != nil }

// peer returns the running attempt of container name in c's sandbox, or
// nil.
func (s *Server) peer(c *container, name string) *container {
	var found *container
	for _, o := range s.containers {
		if o.sb == c.sb && o.name == name && o.state == runtimeapi.ContainerState_CONTAINER_RUNNING && (found == nil || o.attempt > found.attempt) {
			found = o
		}
	}
	return found
}

// readyLocked reports whether c's application answers its readiness
// endpoint now (what a wrapper's or a hook's poll sees). A sidecar wired
// to report serving gets its container.serving first, if its timer has
// not written it yet: nothing observes readiness before it is recorded.
func (s *Server) readyLocked(c *container) bool {
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING || c.appAt == 0 || c.plan.ReadyAfter == behavior.Never {
		return false
	}
	if time.Duration(s.now()-c.appAt) < c.plan.ReadyAfter {
		return false
	}
	s.servingLocked(c)
	return true
}

func (s *Server) servingLocked(c *container) {
	if c.wiring == nil || !c.wiring.Serving || c.servingSent {
		return
	}
	c.servingSent = true
	e := c.event(history.ContainerServing)
	e.Value = true
	s.emit(c.sb, e)
}

// wireStartedLocked arms c's wiring once its process runs.
func (s *Server) wireStartedLocked(c *container) {
	w := c.wiring
	if w == nil {
		return
	}
	if w.Serving && c.plan.ReadyAfter != behavior.Never {
		s.afterFunc(c.plan.ReadyAfter, func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.alive(c) {
				s.servingLocked(c)
			}
		})
	}
	if w.Wait != nil {
		c.waitFrom = s.now()
		s.pollWaitLocked(c)
	}
	if w.Quit != nil && w.Quit.File && s.quit[c.sb.pod] {
		// The quit file is there already: the sidecar's wrapper sees it
		// on its first look.
		s.exitLocked(c, 0, behavior.ReasonCompleted, "told to quit")
	}
}

// pollWaitLocked is one poll of c's wrapper: exec the application once
// every container it waits for is ready; after the timeout exec anyway
// or exit 1; otherwise poll again a period later.
func (s *Server) pollWaitLocked(c *container) {
	if !s.alive(c) || c.appAt != 0 {
		return
	}
	w := c.wiring.Wait
	all := true
	for _, name := range w.For {
		if p := s.peer(c, name); p == nil || !s.readyLocked(p) {
			all = false
			break
		}
	}
	elapsed := time.Duration(s.now() - c.waitFrom)
	switch {
	case all:
		s.execAppLocked(c, true)
	case w.Timeout > 0 && elapsed >= w.Timeout:
		if w.StartOnTimeout {
			s.execAppLocked(c, false)
		} else {
			s.exitLocked(c, 1, behavior.ReasonError, "wait for the sidecars timed out")
		}
	default:
		s.afterFunc(w.Period, func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.pollWaitLocked(c)
		})
	}
}

// execAppLocked starts c's application: container.app-started, then its
// behaviour clock (probes, run time, crash, memory) from now.
func (s *Server) execAppLocked(c *container, ok bool) {
	c.appAt = s.now()
	e := c.event(history.ContainerAppStarted)
	e.Value = ok
	s.emit(c.sb, e)
	s.armExitLocked(c)
}

// armExitLocked arms the application's own exit (run time, crash, OOM),
// measured from its start.
func (s *Server) armExitLocked(c *container) {
	if c.plan.ExitAfter == behavior.Never {
		return
	}
	code, reason := c.plan.ExitCode, c.plan.ExitReason
	c.exitTimer = s.afterFunc(c.plan.ExitAfter, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.alive(c) {
			s.exitLocked(c, code, reason, "")
			s.ownExitLocked(c, reason)
		}
	})
}

// termExitAfter arms c's exit once its process has handled a SIGTERM
// (the kubelet's StopContainer or a container-kill fault): its
// termExitCode after th. It exits on its own, so a workaround's wrapper
// signals its sidecars as on any own exit.
func (s *Server) termExitAfter(c *container, th time.Duration) clock.Timer {
	code := c.plan.TermExitCode
	return s.afterFunc(th, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.alive(c) {
			s.exitLocked(c, code, behavior.ReasonFor(code), "")
			s.ownExitLocked(c, behavior.ReasonFor(code))
		}
	})
}

// ownExitLocked runs after c's application exited on its own (its run
// time, a crash, SIGTERM handled): a wrapper that signals tells the
// sidecars to quit. An OOM kill or a SIGKILL takes the wrapper with the
// application: no signal.
func (s *Server) ownExitLocked(c *container, reason string) {
	w := c.wiring
	if w == nil || w.Signal == nil || c.appAt == 0 || !behavior.SignalsOnExit(reason, false) {
		return
	}
	if w.Signal.File {
		if s.quit == nil {
			s.quit = map[string]bool{}
		}
		s.quit[c.sb.pod] = true
	}
	for _, name := range w.Signal.To {
		p := s.peer(c, name)
		if p == nil || p.wiring == nil || p.wiring.Quit == nil {
			continue // /quitquitquit to a proxy that is not running is lost
		}
		q := p.wiring.Quit
		if !q.File || q.Period <= 0 {
			s.exitLocked(p, 0, behavior.ReasonCompleted, "told to quit")
			continue
		}
		// The sidecar's wrapper sees the file on its next poll.
		since := time.Duration(s.now() - p.startedAt)
		s.afterFunc((since/q.Period+1)*q.Period-since, func() { s.quitNow(p) })
	}
}

// quitNow makes a sidecar told to quit exit 0.
func (s *Server) quitNow(c *container) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.alive(c) {
		s.exitLocked(c, 0, behavior.ReasonCompleted, "told to quit")
	}
}

// holdHook is a hold postStart (pilot-agent wait): it polls c's own
// readiness every period from now and returns when it is ready; it fails
// after the hold's timeout, the call's timeout, c's exit or the call's
// cancellation.
func (s *Server) holdHook(ctx context.Context, c *container, timeoutSec int64) (bool, string) {
	h := c.wiring.Hold
	var timeout <-chan time.Time
	if h.Timeout > 0 {
		t := s.cfg.Clock.NewTimer(h.Timeout)
		defer t.Stop()
		timeout = t.C()
	}
	var callTimeout <-chan time.Time
	if timeoutSec > 0 {
		t := s.cfg.Clock.NewTimer(time.Duration(timeoutSec) * time.Second)
		defer t.Stop()
		callTimeout = t.C()
	}
	for {
		s.mu.Lock()
		ready := s.readyLocked(c)
		s.mu.Unlock()
		if ready {
			return true, ""
		}
		next := s.cfg.Clock.NewTimer(h.Period)
		select {
		case <-next.C():
		case <-timeout:
			next.Stop()
			return false, "readiness wait timed out"
		case <-c.exited:
			next.Stop()
			return false, "container exited during the hook"
		case <-callTimeout:
			next.Stop()
			return false, "hook timed out"
		case <-ctx.Done():
			next.Stop()
			return false, "hook cancelled"
		}
	}
}

// drainHook is a zero-connections preStop: it polls every period until
// no container it drains for runs in c's sandbox.
func (s *Server) drainHook(ctx context.Context, c *container, timeoutSec int64) (bool, string) {
	d := c.wiring.Drain
	var callTimeout <-chan time.Time
	if timeoutSec > 0 {
		t := s.cfg.Clock.NewTimer(time.Duration(timeoutSec) * time.Second)
		defer t.Stop()
		callTimeout = t.C()
	}
	for {
		s.mu.Lock()
		busy := false
		for _, name := range d.Of {
			busy = busy || s.peer(c, name) != nil
		}
		s.mu.Unlock()
		if !busy {
			return true, ""
		}
		next := s.cfg.Clock.NewTimer(d.Period)
		select {
		case <-next.C():
		case <-c.exited:
			next.Stop()
			return false, "container exited during the hook"
		case <-callTimeout:
			next.Stop()
			return false, "hook timed out"
		case <-ctx.Done():
			next.Stop()
			return false, "hook cancelled"
		}
	}
}
