package cri

import (
	"fmt"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sidebench/sidebench/harness/behavior"
	"github.com/sidebench/sidebench/harness/history"
)

// Control methods: the local backend's fault injection. They act on the
// simulated processes directly, as the kernel or the runtime would, and
// the history shows their effect through the usual events.

// OOMKill makes the running attempt of container name in pod (namespace/
// name) exit 137 with reason OOMKilled at once (no preStop: the kernel
// does not run hooks). It returns the attempt killed, or an error if no
// such container is running.
func (s *Server) OOMKill(pod, name string) (uint32, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var found *container
	for _, c := range s.containers {
		if c.sb.pod == pod && c.name == name && c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
			if found == nil || c.attempt > found.attempt {
				found = c
			}
		}
	}
	if found == nil {
		return 0, fmt.Errorf("no running container %s in %s", name, pod)
	}
	s.exitLocked(found, 137, behavior.ReasonOOMKilled, "OOM killed by sidebench")
	return found.attempt, nil
}

// RemoveExited removes the records of exited containers for which match
// (pod namespace/name, container name) is true, as a runtime's garbage
// collection would (container.removed each). It returns how many it
// removed.
func (s *Server) RemoveExited(match func(pod, container string) bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.containers {
		if c.state == runtimeapi.ContainerState_CONTAINER_EXITED && match(c.sb.pod, c.name) {
			s.removeLocked(c)
			n++
		}
	}
	return n
}

// LoseAll models a runtime (or node) that lost every process and record:
// running containers exit 137 (container.exited), every ready sandbox is
// lost (sandbox.lost), and all state is dropped. It returns the number of
// sandboxes lost.
func (s *Server) LoseAll(msg string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.containers {
		if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
			s.exitLocked(c, 137, behavior.ReasonError, msg)
		}
		c.stopTimers()
	}
	lost := 0
	for _, sb := range s.sandboxes {
		if sb.state == runtimeapi.PodSandboxState_SANDBOX_READY {
			lost++
			s.emit(sb, history.Event{Kind: history.SandboxLost, Pod: sb.pod})
		}
	}
	s.containers = map[string]*container{}
	s.sandboxes = map[string]*sandbox{}
	return lost
}

// Serving reports whether the gRPC server is serving (between Serve and
// Stop).
func (s *Server) Serving() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.grpc != nil
}

// runningLocked returns the running attempt of container name in pod (the
// newest), or nil.
func (s *Server) runningLocked(pod, name string) *container {
	var found *container
	for _, c := range s.containers {
		if c.sb.pod == pod && c.name == name && c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
			if found == nil || c.attempt > found.attempt {
				found = c
			}
		}
	}
	return found
}

// Kill kills the running attempt of container name in pod from outside
// the kubelet (the container-kill fault): exit with code at once, or, with
// term, a SIGTERM the process handles as any (its termHandling and
// termExitCode; an error if it ignores SIGTERM). No preStop. It returns a
// description of the effect.
func (s *Server) Kill(pod, name string, code int32, term bool) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.runningLocked(pod, name)
	if c == nil {
		return "", fmt.Errorf("no running container %s in %s", name, pod)
	}
	if !term {
		s.exitLocked(c, code, behavior.ReasonFor(code), "killed by sidebench")
		return fmt.Sprintf("exited %d %s (attempt %d)", code, behavior.ReasonFor(code), c.attempt), nil
	}
	th := c.plan.TermHandling
	if th == behavior.Never {
		return "", fmt.Errorf("container %s in %s ignores SIGTERM", name, pod)
	}
	if c.stopAsked {
		return "", fmt.Errorf("container %s in %s already handles a SIGTERM", name, pod)
	}
	c.stopAsked = true
	c.termTimer = s.termExitAfter(c, th)
	return fmt.Sprintf("SIGTERM delivered (attempt %d); exits %d after %v", c.attempt, c.plan.TermExitCode, th), nil
}

// ReportUnknown makes the runtime report the running attempt of container
// name in pod as CONTAINER_UNKNOWN (container.unknown); its process goes
// on until the kubelet stops it.
func (s *Server) ReportUnknown(pod, name string) (uint32, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.runningLocked(pod, name)
	if c == nil {
		return 0, fmt.Errorf("no running container %s in %s", name, pod)
	}
	c.state = runtimeapi.ContainerState_CONTAINER_UNKNOWN
	s.emit(c.sb, c.event(history.ContainerUnknown))
	return c.attempt, nil
}

// pullFail is one image-pull-failure: pulls of image for pod fail until
// until (zero: for good); container is the container whose start fails.
type pullFail struct {
	pod, container, image string
	until                 time.Time
	hit                   bool
}

// FailPulls makes the pulls of image for pod fail until until (zero: for
// good): ImageStatus reports the image absent so the kubelet pulls, and
// PullImage fails with container.start-failed "ErrImagePull: IMAGE" for
// container. Pulled reports whether a pull failed since.
func (s *Server) FailPulls(pod, container, image string, until time.Time) (pulled func() bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pullFails = append(s.pullFails, pullFail{pod: pod, container: container, image: image, until: until})
	i := len(s.pullFails) - 1
	return func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return i < len(s.pullFails) && s.pullFails[i].hit
	}
}

// pullFailLocked returns the active failure of image for pod (any pod if
// pod is ""), or nil.
func (s *Server) pullFailLocked(pod, image string) *pullFail {
	now := s.cfg.Clock.Now()
	for i := range s.pullFails {
		f := &s.pullFails[i]
		if f.image == image && (pod == "" || f.pod == pod) && (f.until.IsZero() || now.Before(f.until)) {
			return f
		}
	}
	return nil
}
