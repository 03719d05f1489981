package cri

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sidebench/sidebench/harness/behavior"
	"github.com/sidebench/sidebench/harness/history"
)

// ExecSync answers exec probes and exec lifecycle hooks written with
// ProbeCommand and HookCommand from the container's drawn behaviour; any
// other command exits 0 at once.
//
//   - startup probe: passes once StartupAfter has elapsed since the
//     process started; readiness likewise with ReadyAfter; liveness passes
//     until LivenessFailAfter, then fails for good.
//   - postStart hook: returns after PostStart (container.poststart-done).
//   - preStop hook: container.prestop-begin, returns after PreStop,
//     container.prestop-end.
//
// A hook ends early (exit 137) if the process exits meanwhile, or with the
// call's context. Probe results are written as probe.result when they
// change.
func (s *Server) ExecSync(ctx context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	s.mu.Lock()
	c, ok := s.containers[req.GetContainerId()]
	if !ok {
		s.mu.Unlock()
		return nil, notFound("container", req.GetContainerId())
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		s.mu.Unlock()
		return nil, status.Errorf(codes.FailedPrecondition, "container %q is not running", c.id)
	}
	cmd := req.GetCmd()
	if len(cmd) < 3 || cmd[0] != CommandName {
		s.mu.Unlock()
		return &runtimeapi.ExecSyncResponse{}, nil
	}
	switch cmd[1] {
	case "probe":
		defer s.mu.Unlock()
		return s.probeLocked(c, cmd[2]), nil
	case "hook":
		switch cmd[2] {
		case HookPostStart:
			d := c.plan.PostStart
			s.mu.Unlock()
			var ok bool
			var why string
			if c.wiring != nil && c.wiring.Hold != nil {
				ok, why = s.holdHook(ctx, c, req.GetTimeout())
			} else {
				ok, why = s.waitHook(ctx, c, d, req.GetTimeout())
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if !ok && errors.Is(ctx.Err(), context.Canceled) {
				// The caller went away (the kubelet died): no kubelet
				// received a result, none kills the container for it, and
				// the restarted one does not run the hook again. Not a
				// failure: no container.poststart-done, as in the sim,
				// whose kubelet crash drops the hook (INV-H1 read a
				// cancelled hold as a failed hook on a Started container).
				return nil, status.FromContextError(ctx.Err()).Err()
			}
			if ok && c.plan.PostStartFails {
				ok, why = false, "FailedPostStartHook"
			}
			e := c.event(history.ContainerPostStartDone)
			e.Value, e.Msg = ok, why
			s.emit(c.sb, e)
			return hookResult(ok, why), nil
		case HookPreStop:
			s.emit(c.sb, c.event(history.ContainerPreStopBegin))
			d := c.plan.PreStop
			s.mu.Unlock()
			var ok bool
			var why string
			if c.wiring != nil && c.wiring.Drain != nil {
				ok, why = s.drainHook(ctx, c, req.GetTimeout())
			} else {
				ok, why = s.waitHook(ctx, c, d, req.GetTimeout())
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if ok && c.plan.PreStopFails {
				ok, why = false, "FailedPreStopHook"
			}
			e := c.event(history.ContainerPreStopEnd)
			e.Msg = why
			s.emit(c.sb, e)
			return hookResult(ok, why), nil
		}
	}
	s.mu.Unlock()
	return &runtimeapi.ExecSyncResponse{Stderr: []byte("sidebench: unknown command\n"), ExitCode: 127}, nil
}

func hookResult(ok bool, why string) *runtimeapi.ExecSyncResponse {
	if ok {
		return &runtimeapi.ExecSyncResponse{}
	}
	return &runtimeapi.ExecSyncResponse{Stderr: []byte(why + "\n"), ExitCode: 137}
}

// waitHook waits d (Never: until something else ends it).
func (s *Server) waitHook(ctx context.Context, c *container, d time.Duration, timeoutSec int64) (bool, string) {
	var timer <-chan time.Time
	if d != behavior.Never {
		t := s.cfg.Clock.NewTimer(d)
		defer t.Stop()
		timer = t.C()
	}
	var timeout <-chan time.Time
	if timeoutSec > 0 {
		t := s.cfg.Clock.NewTimer(time.Duration(timeoutSec) * time.Second)
		defer t.Stop()
		timeout = t.C()
	}
	select {
	case <-timer:
		return true, ""
	case <-c.exited:
		return false, "container exited during the hook"
	case <-timeout:
		return false, "hook timed out"
	case <-ctx.Done():
		return false, "hook cancelled"
	}
}

func (s *Server) probeLocked(c *container, kind string) *runtimeapi.ExecSyncResponse {
	// The behaviour's clock starts with the application: a wrapper that
	// has not exec'd it yet answers no probe (startup and readiness fail,
	// liveness passes).
	elapsed := time.Duration(s.now() - c.appAt)
	if c.appAt == 0 {
		elapsed = -1
	}
	var ok bool
	switch kind {
	case ProbeStartup:
		ok = c.plan.StartupAfter != behavior.Never && elapsed >= c.plan.StartupAfter
		if ok && c.plan.ReadyAfter != behavior.Never && elapsed >= c.plan.ReadyAfter {
			s.servingLocked(c) // the startup probe saw it serving: record it first
		}
	case ProbeReadiness:
		ok = c.plan.ReadyAfter != behavior.Never && elapsed >= c.plan.ReadyAfter
		if ok {
			s.servingLocked(c)
		}
	case ProbeLiveness:
		ok = c.plan.LivenessFailAfter == behavior.Never || elapsed < 0 || elapsed < c.plan.LivenessFailAfter
	default:
		return &runtimeapi.ExecSyncResponse{Stderr: []byte("sidebench: unknown probe " + kind + "\n"), ExitCode: 127}
	}
	result := "failure"
	if ok {
		result = "success"
	}
	if c.lastProbe[kind] != result {
		c.lastProbe[kind] = result
		e := c.event(history.ProbeResult)
		e.Probe, e.Result = kind, result
		s.emit(c.sb, e)
	}
	if ok {
		return &runtimeapi.ExecSyncResponse{}
	}
	return &runtimeapi.ExecSyncResponse{Stderr: []byte(kind + " probe failing\n"), ExitCode: 1}
}
