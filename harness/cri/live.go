package cri

import runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

// Live counts the ready sandboxes and running containers of the pods
// (namespace/name) for which match is true: what the kubelet has not torn
// down yet. The local backend waits for 0 after a trial, so that a pod a
// workaround kept running to the horizon does not write into the next
// trial's pod of the same name.
func (s *Server) Live(match func(pod string) bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, sb := range s.sandboxes {
		if sb.state == runtimeapi.PodSandboxState_SANDBOX_READY && match(sb.pod) {
			n++
		}
	}
	for _, c := range s.containers {
		if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING && match(c.sb.pod) {
			n++
		}
	}
	return n
}
