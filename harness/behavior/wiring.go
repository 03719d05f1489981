package behavior

import (
	"errors"
	"fmt"
	"time"
)

// Wiring is how a container's behaviour depends on the other containers of
// its pod: what the pre-1.28 sidecar workarounds add to a pod
// (harness/workaround, docs/workarounds.md). A scenario does not write it;
// a workaround policy does, and every backend executes it the same way: the
// sim engine, sidebench's CRI server (local) and sidebench-agent (kube).
//
// "Ready" below is the container's behaviour-level readiness: its process
// runs and ReadyAfter has passed since the application started (what its
// readiness endpoint answers), not the kubelet's view of it. Waits poll it
// on a grid: the first poll when the wait begins, then one every Period.
type Wiring struct {
	// Serving: record container.serving when the application begins to
	// answer its readiness endpoint, for the user-level guarantees (set
	// on every user sidecar, whatever the policy).
	Serving bool `json:"serving,omitempty"`
	// Wait: the entrypoint polls these containers' readiness before it
	// execs the application (container.app-started); the application's
	// behaviour (startup, readiness, run time, memory) starts then.
	Wait *Wait `json:"wait,omitempty"`
	// Hold: the postStart hook polls this container's own readiness
	// (pilot-agent wait) instead of running for the drawn PostStart; it
	// fails if Timeout passes first.
	Hold *Poll `json:"hold,omitempty"`
	// Drain: the preStop hook polls until every container of Drain.Of has
	// exited (Envoy draining until zero connections), instead of running
	// for the drawn PreStop.
	Drain *Drain `json:"drain,omitempty"`
	// Signal: when the application exits on its own (run time, crash), the
	// wrapper tells these containers to quit. A kill (SIGKILL after the
	// grace, an OOM kill) takes the wrapper with it: no signal.
	Signal *Signal `json:"signal,omitempty"`
	// Quit: the container exits 0 when told to quit, TermHandling after
	// the signal (at once if SIGTERM is ignored: /quitquitquit is not a
	// signal). Via a file, its wrapper notices it on its next poll, and a
	// restarted container finds it too.
	Quit *Quit `json:"quit,omitempty"`
}

// Wait is an entrypoint's wait for other containers' readiness.
type Wait struct {
	For    []string      `json:"for"`
	Period time.Duration `json:"period"`
	// Timeout > 0 bounds the wait; then the application starts anyway
	// (StartOnTimeout) or the container exits 1.
	Timeout        time.Duration `json:"timeout,omitempty"`
	StartOnTimeout bool          `json:"startOnTimeout,omitempty"`
}

// Poll is a hook that polls every Period, failing after Timeout (> 0).
type Poll struct {
	Period  time.Duration `json:"period"`
	Timeout time.Duration `json:"timeout,omitempty"`
}

// Drain is a preStop that polls every Period until the containers Of have
// exited.
type Drain struct {
	Of     []string      `json:"of"`
	Period time.Duration `json:"period"`
}

// Signal is a quit signal to other containers on the application's exit.
type Signal struct {
	To []string `json:"to"`
	// File: a shared file (persists; the receivers poll for it). Otherwise
	// one HTTP request per receiver, lost if it is not running then.
	File bool `json:"file,omitempty"`
}

// Quit is how a container learns it must quit.
type Quit struct {
	// File: its wrapper polls for the shared quit file every Period.
	File   bool          `json:"file,omitempty"`
	Period time.Duration `json:"period,omitempty"`
}

// IsZero reports whether w wires nothing.
func (w *Wiring) IsZero() bool {
	return w == nil || (!w.Serving && w.Wait == nil && w.Hold == nil && w.Drain == nil && w.Signal == nil && w.Quit == nil)
}

// Validate checks w against the names of the pod's containers (self is
// the wired container's name).
func (w *Wiring) Validate(self string, names []string) error {
	if w == nil {
		return nil
	}
	var errs []error
	known := func(field string, list []string) {
		if len(list) == 0 {
			errs = append(errs, fmt.Errorf("%s: names no container", field))
		}
		for _, n := range list {
			found := false
			for _, m := range names {
				found = found || m == n
			}
			if !found || n == self {
				errs = append(errs, fmt.Errorf("%s: %q is not another container of the pod", field, n))
			}
		}
	}
	period := func(field string, d time.Duration) {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s: must be > 0, got %v", field, d))
		}
	}
	if w.Wait != nil {
		known("wait.for", w.Wait.For)
		period("wait.period", w.Wait.Period)
		if w.Wait.Timeout < 0 {
			errs = append(errs, errors.New("wait.timeout: must be >= 0"))
		}
	}
	if w.Hold != nil {
		period("hold.period", w.Hold.Period)
		if w.Hold.Timeout < 0 {
			errs = append(errs, errors.New("hold.timeout: must be >= 0"))
		}
	}
	if w.Drain != nil {
		known("drain.of", w.Drain.Of)
		period("drain.period", w.Drain.Period)
	}
	if w.Signal != nil {
		known("signal.to", w.Signal.To)
	}
	if w.Quit != nil && w.Quit.File {
		period("quit.period", w.Quit.Period)
	}
	return errors.Join(errs...)
}

// PollsUntil returns when a wait that began at start and polls every
// period (first poll at start) first sees a condition that holds from
// readyAt on: the first grid point at or after readyAt. readyAt before
// start: start. Never stays Never.
func PollsUntil(start, readyAt, period time.Duration) time.Duration {
	if readyAt == Never {
		return Never
	}
	if readyAt <= start {
		return start
	}
	n := (readyAt - start + period - 1) / period
	return start + n*period
}

// SignalsOnExit reports whether a wrapper that signals on exit gets to
// signal after an exit with this reason: a SIGKILL (the kubelet's after
// the grace, 137 Error) or an OOM kill takes the wrapper with the
// application (cgroup v2 kills the whole container on OOM), so only an
// exit of the application on its own does.
func SignalsOnExit(reason string, killed bool) bool {
	return !killed && reason != ReasonOOMKilled
}
