package cri

import (
	"fmt"

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
			s.emit(history.Event{Kind: history.SandboxLost, Pod: sb.pod})
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
