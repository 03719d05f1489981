package cri

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Stats are minimal: zero CPU and memory, a tiny writable layer. They exist
// so the kubelet's CRI stats provider and eviction manager have data.

func (s *Server) containerStatsLocked(c *container) *runtimeapi.ContainerStats {
	now := s.now()
	return &runtimeapi.ContainerStats{
		Attributes: &runtimeapi.ContainerAttributes{
			Id: c.id, Metadata: c.config.GetMetadata(), Labels: c.config.GetLabels(), Annotations: c.config.GetAnnotations(),
		},
		Cpu:           &runtimeapi.CpuUsage{Timestamp: now, UsageCoreNanoSeconds: &runtimeapi.UInt64Value{}, UsageNanoCores: &runtimeapi.UInt64Value{}},
		Memory:        &runtimeapi.MemoryUsage{Timestamp: now, WorkingSetBytes: &runtimeapi.UInt64Value{}, UsageBytes: &runtimeapi.UInt64Value{}, RssBytes: &runtimeapi.UInt64Value{}},
		WritableLayer: s.fsUsage(4096),
	}
}

// ContainerStats returns one container's stats.
func (s *Server) ContainerStats(_ context.Context, req *runtimeapi.ContainerStatsRequest) (*runtimeapi.ContainerStatsResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.containers[req.GetContainerId()]
	if !ok {
		return nil, notFound("container", req.GetContainerId())
	}
	return &runtimeapi.ContainerStatsResponse{Stats: s.containerStatsLocked(c)}, nil
}

// ListContainerStats returns the stats of the containers that match.
func (s *Server) ListContainerStats(_ context.Context, req *runtimeapi.ListContainerStatsRequest) (*runtimeapi.ListContainerStatsResponse, error) {
	f := req.GetFilter()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*runtimeapi.ContainerStats
	for _, c := range s.containers {
		if f.GetId() != "" && f.GetId() != c.id || f.GetPodSandboxId() != "" && f.GetPodSandboxId() != c.sb.id ||
			!labelsMatch(f.GetLabelSelector(), c.config.GetLabels()) {
			continue
		}
		out = append(out, s.containerStatsLocked(c))
	}
	return &runtimeapi.ListContainerStatsResponse{Stats: out}, nil
}

func (s *Server) sandboxStatsLocked(sb *sandbox) *runtimeapi.PodSandboxStats {
	now := s.now()
	st := &runtimeapi.PodSandboxStats{
		Attributes: &runtimeapi.PodSandboxAttributes{
			Id: sb.id, Metadata: sb.config.GetMetadata(), Labels: sb.config.GetLabels(), Annotations: sb.config.GetAnnotations(),
		},
		Linux: &runtimeapi.LinuxPodSandboxStats{
			Cpu:    &runtimeapi.CpuUsage{Timestamp: now, UsageCoreNanoSeconds: &runtimeapi.UInt64Value{}, UsageNanoCores: &runtimeapi.UInt64Value{}},
			Memory: &runtimeapi.MemoryUsage{Timestamp: now, WorkingSetBytes: &runtimeapi.UInt64Value{}, UsageBytes: &runtimeapi.UInt64Value{}, RssBytes: &runtimeapi.UInt64Value{}},
		},
	}
	for _, c := range s.containers {
		if c.sb == sb {
			st.Linux.Containers = append(st.Linux.Containers, s.containerStatsLocked(c))
		}
	}
	return st
}

// PodSandboxStats returns one sandbox's stats.
func (s *Server) PodSandboxStats(_ context.Context, req *runtimeapi.PodSandboxStatsRequest) (*runtimeapi.PodSandboxStatsResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, ok := s.sandboxes[req.GetPodSandboxId()]
	if !ok {
		return nil, notFound("pod sandbox", req.GetPodSandboxId())
	}
	return &runtimeapi.PodSandboxStatsResponse{Stats: s.sandboxStatsLocked(sb)}, nil
}

// ListPodSandboxStats returns the stats of the sandboxes that match.
func (s *Server) ListPodSandboxStats(_ context.Context, req *runtimeapi.ListPodSandboxStatsRequest) (*runtimeapi.ListPodSandboxStatsResponse, error) {
	f := req.GetFilter()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*runtimeapi.PodSandboxStats
	for _, sb := range s.sandboxes {
		if f.GetId() != "" && f.GetId() != sb.id || !labelsMatch(f.GetLabelSelector(), sb.config.GetLabels()) {
			continue
		}
		out = append(out, s.sandboxStatsLocked(sb))
	}
	return &runtimeapi.ListPodSandboxStatsResponse{Stats: out}, nil
}
