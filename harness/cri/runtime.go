package cri

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/sidebench/sidebench/harness/behavior"
	"github.com/sidebench/sidebench/harness/history"
)

type sandbox struct {
	id        string
	pod       string // namespace/name
	config    *runtimeapi.PodSandboxConfig
	state     runtimeapi.PodSandboxState
	createdAt int64
	seed      uint64
	ip        string
}

type container struct {
	id         string
	sb         *sandbox
	name       string
	attempt    uint32
	config     *runtimeapi.ContainerConfig
	imageRef   string
	state      runtimeapi.ContainerState
	starting   bool
	createdAt  int64
	startedAt  int64
	finishedAt int64
	exitCode   int32
	reason     string
	message    string
	plan       behavior.Plan

	exited    chan struct{} // closed when the process exits
	exitTimer clock.Timer   // exit on its own
	termTimer clock.Timer   // exit after SIGTERM handling
	killTimer clock.Timer   // SIGKILL at the end of the grace period
	killAt    int64
	stopAsked bool
	// applied are the resources of the last UpdateContainerResources (nil:
	// the CreateContainer config's).
	applied   *runtimeapi.LinuxContainerResources
	lastProbe map[string]string

	// Workaround wiring (wiring.go): what it adds to the behaviour, when
	// the application started (startedAt unless a wrapper waits; 0 while
	// it waits), when the wait began, and whether container.serving was
	// written.
	wiring      *behavior.Wiring
	appAt       int64
	waitFrom    int64
	servingSent bool
}

func (c *container) stopTimers() {
	for _, t := range []clock.Timer{c.exitTimer, c.termTimer, c.killTimer} {
		if t != nil {
			t.Stop()
		}
	}
}

func (c *container) event(k history.Kind) history.Event {
	return history.Event{Kind: k, Pod: c.sb.pod, Container: c.name, Attempt: c.attempt}
}

func notFound(what, id string) error {
	return status.Errorf(codes.NotFound, "%s %q not found", what, id)
}

// RunPodSandbox creates a ready sandbox (no network: it reports no IP).
func (s *Server) RunPodSandbox(_ context.Context, req *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	cfg := req.GetConfig()
	md := cfg.GetMetadata()
	if md == nil {
		return nil, status.Error(codes.InvalidArgument, "sandbox config has no metadata")
	}
	seed, err := seedFor(cfg.GetAnnotations())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := &sandbox{
		id:        s.newID("sb"),
		pod:       md.GetNamespace() + "/" + md.GetName(),
		config:    cfg,
		state:     runtimeapi.PodSandboxState_SANDBOX_READY,
		createdAt: s.now(),
		seed:      seed,
	}
	if cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetNetwork() != runtimeapi.NamespaceMode_NODE {
		sb.ip = s.podIPLocked()
	}
	s.sandboxes[sb.id] = sb
	s.emit(sb, history.Event{Kind: history.SandboxCreated, Pod: sb.pod, Attempt: md.GetAttempt()})
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: sb.id}, nil
}

// StopPodSandbox kills what still runs in the sandbox and marks it not
// ready. Idempotent.
func (s *Server) StopPodSandbox(_ context.Context, req *runtimeapi.StopPodSandboxRequest) (*runtimeapi.StopPodSandboxResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, ok := s.sandboxes[req.GetPodSandboxId()]
	if !ok {
		return &runtimeapi.StopPodSandboxResponse{}, nil
	}
	for _, c := range s.containers {
		if c.sb == sb && c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
			s.emit(c.sb, c.event(history.ContainerKilled))
			s.exitLocked(c, 137, behavior.ReasonError, "sandbox stopped")
		}
	}
	if sb.state == runtimeapi.PodSandboxState_SANDBOX_READY {
		sb.state = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
		s.emit(sb, history.Event{Kind: history.SandboxStopped, Pod: sb.pod})
	}
	return &runtimeapi.StopPodSandboxResponse{}, nil
}

// RemovePodSandbox removes the sandbox and its containers. Idempotent.
func (s *Server) RemovePodSandbox(_ context.Context, req *runtimeapi.RemovePodSandboxRequest) (*runtimeapi.RemovePodSandboxResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, ok := s.sandboxes[req.GetPodSandboxId()]
	if !ok {
		return &runtimeapi.RemovePodSandboxResponse{}, nil
	}
	for _, c := range s.containers {
		if c.sb == sb {
			s.removeLocked(c)
		}
	}
	if sb.state == runtimeapi.PodSandboxState_SANDBOX_READY {
		s.emit(sb, history.Event{Kind: history.SandboxStopped, Pod: sb.pod})
	}
	delete(s.sandboxes, sb.id)
	return &runtimeapi.RemovePodSandboxResponse{}, nil
}

func (s *Server) sandboxStatus(sb *sandbox) *runtimeapi.PodSandboxStatus {
	return &runtimeapi.PodSandboxStatus{
		Id:          sb.id,
		Metadata:    sb.config.GetMetadata(),
		State:       sb.state,
		CreatedAt:   sb.createdAt,
		Network:     &runtimeapi.PodSandboxNetworkStatus{Ip: sb.ip},
		Linux:       &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{Options: sb.config.GetLinux().GetSecurityContext().GetNamespaceOptions()}},
		Labels:      sb.config.GetLabels(),
		Annotations: sb.config.GetAnnotations(),
	}
}

// PodSandboxStatus returns a sandbox's status.
func (s *Server) PodSandboxStatus(_ context.Context, req *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, ok := s.sandboxes[req.GetPodSandboxId()]
	if !ok {
		return nil, notFound("pod sandbox", req.GetPodSandboxId())
	}
	resp := &runtimeapi.PodSandboxStatusResponse{Status: s.sandboxStatus(sb)}
	if req.GetVerbose() {
		resp.Info = map[string]string{}
	}
	return resp, nil
}

func labelsMatch(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func (s *Server) listSandboxes(f *runtimeapi.PodSandboxFilter) []*runtimeapi.PodSandbox {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*runtimeapi.PodSandbox
	for _, sb := range s.sandboxes {
		if f != nil {
			if f.GetId() != "" && f.GetId() != sb.id {
				continue
			}
			if f.GetState() != nil && f.GetState().GetState() != sb.state {
				continue
			}
			if !labelsMatch(f.GetLabelSelector(), sb.config.GetLabels()) {
				continue
			}
		}
		out = append(out, &runtimeapi.PodSandbox{
			Id: sb.id, Metadata: sb.config.GetMetadata(), State: sb.state, CreatedAt: sb.createdAt,
			Labels: sb.config.GetLabels(), Annotations: sb.config.GetAnnotations(),
		})
	}
	return out
}

// ListPodSandbox lists sandboxes by filter.
func (s *Server) ListPodSandbox(_ context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	return &runtimeapi.ListPodSandboxResponse{Items: s.listSandboxes(req.GetFilter())}, nil
}

// StreamPodSandboxes sends ListPodSandbox's answer as one message.
func (s *Server) StreamPodSandboxes(req *runtimeapi.StreamPodSandboxesRequest, st runtimeapi.RuntimeService_StreamPodSandboxesServer) error {
	items := s.listSandboxes(req.GetFilter())
	if len(items) == 0 {
		return nil
	}
	return st.Send(&runtimeapi.StreamPodSandboxesResponse{PodSandboxes: items})
}

// CreateContainer creates a container and draws its attempt's behaviour.
// It emits container.start-requested: the kubelet creates a container
// only to start it at once.
func (s *Server) CreateContainer(_ context.Context, req *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error) {
	cfg := req.GetConfig()
	md := cfg.GetMetadata()
	if md == nil {
		return nil, status.Error(codes.InvalidArgument, "container config has no metadata")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, ok := s.sandboxes[req.GetPodSandboxId()]
	if !ok {
		return nil, notFound("pod sandbox", req.GetPodSandboxId())
	}
	if sb.state != runtimeapi.PodSandboxState_SANDBOX_READY {
		return nil, status.Errorf(codes.FailedPrecondition, "pod sandbox %q is not ready", sb.id)
	}
	beh, err := behaviorFor(sb.config.GetAnnotations(), md.GetName())
	var wiring *behavior.Wiring
	if err == nil {
		wiring, err = wiringFor(sb.config.GetAnnotations(), md.GetName())
	}
	if err != nil {
		s.cfg.Logf("cri: %s/%s: %v", sb.pod, md.GetName(), err)
		s.emit(sb, history.Event{Kind: history.ContainerStartFailed, Pod: sb.pod, Container: md.GetName(), Attempt: md.GetAttempt(), Msg: err.Error()})
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	c := &container{
		id:        s.newID("c"),
		sb:        sb,
		name:      md.GetName(),
		attempt:   md.GetAttempt(),
		config:    cfg,
		imageRef:  s.imageRefLocked(cfg.GetImage().GetImage()),
		state:     runtimeapi.ContainerState_CONTAINER_CREATED,
		createdAt: s.now(),
		plan:      beh.ForAttempt(md.GetAttempt()).Draw(behavior.ContainerKey(sb.seed, sb.pod, md.GetName(), md.GetAttempt()).Rand()),
		exited:    make(chan struct{}),
		lastProbe: map[string]string{},
		wiring:    wiring,
	}
	s.containers[c.id] = c
	s.emit(c.sb, c.event(history.ContainerStartRequested))
	return &runtimeapi.CreateContainerResponse{ContainerId: c.id}, nil
}

// sleepCtx waits d on clk or until ctx ends; false if ctx ended first.
func sleepCtx(ctx context.Context, clk clock.Clock, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-ctx.Done():
		return false
	}
}

// StartContainer waits the attempt's start latency, then the process runs
// (container.running) and its own exit, if any, is scheduled.
func (s *Server) StartContainer(ctx context.Context, req *runtimeapi.StartContainerRequest) (*runtimeapi.StartContainerResponse, error) {
	s.mu.Lock()
	c, ok := s.containers[req.GetContainerId()]
	if !ok {
		s.mu.Unlock()
		return nil, notFound("container", req.GetContainerId())
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_CREATED || c.starting {
		s.mu.Unlock()
		return nil, status.Errorf(codes.FailedPrecondition, "container %q is not in created state", c.id)
	}
	c.starting = true
	lat := c.plan.StartLatency
	s.mu.Unlock()

	// A real runtime finishes a start it began even if the caller goes
	// away (the kubelet was SIGKILLed mid-call): the latency is not cut
	// short by ctx. The kubelet finds the container running when it
	// relists.
	done := sleepCtx(context.WithoutCancel(ctx), s.cfg.Clock, lat)

	s.mu.Lock()
	defer s.mu.Unlock()
	c.starting = false
	if s.containers[c.id] != c || c.state != runtimeapi.ContainerState_CONTAINER_CREATED {
		return nil, status.Errorf(codes.FailedPrecondition, "container %q was removed or stopped while starting", c.id)
	}
	if !done {
		s.emit(c.sb, history.Event{Kind: history.ContainerStartFailed, Pod: c.sb.pod, Container: c.name, Attempt: c.attempt, Msg: "start cancelled"})
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	c.state = runtimeapi.ContainerState_CONTAINER_RUNNING
	c.startedAt = s.now()
	s.emit(c.sb, c.event(history.ContainerRunning))
	if !c.waits() {
		// The application is the process; a wrapper execs it later
		// (wiring.go) and its exit is armed then.
		c.appAt = c.startedAt
		s.armExitLocked(c)
	}
	s.wireStartedLocked(c)
	return &runtimeapi.StartContainerResponse{}, nil
}

// exitLocked ends c's process with code and reason (no-op unless it runs).
func (s *Server) exitLocked(c *container, code int32, reason, msg string) {
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING && c.state != runtimeapi.ContainerState_CONTAINER_UNKNOWN {
		return
	}
	c.stopTimers()
	c.state = runtimeapi.ContainerState_CONTAINER_EXITED
	c.finishedAt = s.now()
	c.exitCode, c.reason, c.message = code, reason, msg
	close(c.exited)
	e := c.event(history.ContainerExited)
	e.Code, e.Reason = code, reason
	s.emit(c.sb, e)
}

// StopContainer sends the simulated SIGTERM: the process exits after its
// SIGTERM handling time with its termination exit code, or is SIGKILLed
// (137) when the timeout (seconds) runs out. It returns once the process
// has exited. Idempotent; a second call can only shorten the deadline.
func (s *Server) StopContainer(ctx context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	s.mu.Lock()
	c, ok := s.containers[req.GetContainerId()]
	if !ok {
		s.mu.Unlock()
		return nil, notFound("container", req.GetContainerId())
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING && c.state != runtimeapi.ContainerState_CONTAINER_UNKNOWN {
		// A container reported Unknown is killed as a running one: its
		// process may still run (the kubelet "tries killing it before
		// restart").
		s.mu.Unlock()
		return &runtimeapi.StopContainerResponse{}, nil
	}
	grace := time.Duration(req.GetTimeout()) * time.Second
	e := c.event(history.ContainerStopRequested)
	e.Grace = int64(grace)
	s.emit(c.sb, e)
	now := s.now()
	if !c.stopAsked {
		c.stopAsked = true
		if th := c.plan.TermHandling; th != behavior.Never && th < grace {
			c.termTimer = s.termExitAfter(c, th)
		}
	}
	if killAt := now + int64(grace); c.killTimer == nil || killAt < c.killAt {
		if c.killTimer != nil {
			c.killTimer.Stop()
		}
		c.killAt = killAt
		c.killTimer = s.afterFunc(grace, func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
				s.emit(c.sb, c.event(history.ContainerKilled))
				s.exitLocked(c, 137, behavior.ReasonError, "")
			}
		})
	}
	exited := c.exited
	s.mu.Unlock()
	select {
	case <-exited:
		return &runtimeapi.StopContainerResponse{}, nil
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
}

// removeLocked force-kills c if it runs and removes its record.
func (s *Server) removeLocked(c *container) {
	if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
		s.emit(c.sb, c.event(history.ContainerKilled))
		s.exitLocked(c, 137, behavior.ReasonError, "removed while running")
	}
	c.stopTimers()
	delete(s.containers, c.id)
	s.emit(c.sb, c.event(history.ContainerRemoved))
}

// RemoveContainer removes a container, killing it first if it runs.
// Idempotent.
func (s *Server) RemoveContainer(_ context.Context, req *runtimeapi.RemoveContainerRequest) (*runtimeapi.RemoveContainerResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.containers[req.GetContainerId()]; ok {
		s.removeLocked(c)
	}
	return &runtimeapi.RemoveContainerResponse{}, nil
}

func (s *Server) listContainers(f *runtimeapi.ContainerFilter) []*runtimeapi.Container {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*runtimeapi.Container
	for _, c := range s.containers {
		if f != nil {
			if f.GetId() != "" && f.GetId() != c.id {
				continue
			}
			if f.GetPodSandboxId() != "" && f.GetPodSandboxId() != c.sb.id {
				continue
			}
			if f.GetState() != nil && f.GetState().GetState() != c.state {
				continue
			}
			if !labelsMatch(f.GetLabelSelector(), c.config.GetLabels()) {
				continue
			}
		}
		out = append(out, &runtimeapi.Container{
			Id: c.id, PodSandboxId: c.sb.id, Metadata: c.config.GetMetadata(), Image: c.config.GetImage(),
			ImageRef: c.imageRef, ImageId: c.imageRef, State: c.state, CreatedAt: c.createdAt,
			Labels: c.config.GetLabels(), Annotations: c.config.GetAnnotations(),
		})
	}
	return out
}

// ListContainers lists containers by filter.
func (s *Server) ListContainers(_ context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	return &runtimeapi.ListContainersResponse{Containers: s.listContainers(req.GetFilter())}, nil
}

// StreamContainers sends ListContainers' answer as one message.
func (s *Server) StreamContainers(req *runtimeapi.StreamContainersRequest, st runtimeapi.RuntimeService_StreamContainersServer) error {
	items := s.listContainers(req.GetFilter())
	if len(items) == 0 {
		return nil
	}
	return st.Send(&runtimeapi.StreamContainersResponse{Containers: items})
}

// ContainerStatus returns a container's status.
func (s *Server) ContainerStatus(_ context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.containers[req.GetContainerId()]
	if !ok {
		return nil, notFound("container", req.GetContainerId())
	}
	logPath := ""
	if c.config.GetLogPath() != "" {
		logPath = filepath.Join(c.sb.config.GetLogDirectory(), c.config.GetLogPath())
	}
	st := &runtimeapi.ContainerStatus{
		Id: c.id, Metadata: c.config.GetMetadata(), State: c.state,
		CreatedAt: c.createdAt, StartedAt: c.startedAt, FinishedAt: c.finishedAt,
		ExitCode: c.exitCode, Image: c.config.GetImage(), ImageRef: c.imageRef, ImageId: c.imageRef,
		Reason: c.reason, Message: c.message,
		Labels: c.config.GetLabels(), Annotations: c.config.GetAnnotations(),
		Mounts: c.config.GetMounts(), LogPath: logPath,
	}
	if r := c.resources(); r != nil {
		// The applied resources: the kubelet compares them with the
		// allocated ones to actuate and confirm an in-place resize.
		st.Resources = &runtimeapi.ContainerResources{Linux: r}
	}
	resp := &runtimeapi.ContainerStatusResponse{Status: st}
	if req.GetVerbose() {
		resp.Info = map[string]string{"plan": c.plan.String()}
	}
	return resp, nil
}

// UpdateContainerResources applies an in-place resize (the kubelet's
// actuation of a resize, INV-U2) and records it as container.resized with
// the new requests and limits (cpu shares and quota converted back to
// milli-CPU, memory limit in bytes; the request is what the kubelet put
// in the annotations-free LinuxContainerResources: shares for cpu, the
// limit for memory).
func (s *Server) UpdateContainerResources(_ context.Context, req *runtimeapi.UpdateContainerResourcesRequest) (*runtimeapi.UpdateContainerResourcesResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.containers[req.GetContainerId()]
	if !ok {
		return nil, notFound("container", req.GetContainerId())
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return &runtimeapi.UpdateContainerResourcesResponse{}, nil
	}
	r := req.GetLinux()
	c.applied = r
	e := c.event(history.ContainerResized)
	e.CPU, e.CPULimit = sharesToMilli(r.GetCpuShares()), quotaToMilli(r.GetCpuQuota(), r.GetCpuPeriod())
	e.MemLimit = r.GetMemoryLimitInBytes()
	if v, ok := r.GetUnified()["memory.min"]; ok {
		fmt.Sscan(v, &e.Mem)
	}
	s.emit(c.sb, e)
	return &runtimeapi.UpdateContainerResourcesResponse{}, nil
}

// sharesToMilli inverts the kubelet's MilliCPUToShares (1024 shares per
// CPU, minimum 2).
func sharesToMilli(shares int64) int64 {
	if shares <= 2 {
		return 0
	}
	return (shares*1000 + 1023) / 1024
}

// quotaToMilli inverts MilliCPUToQuota (quota per period, in µs).
func quotaToMilli(quota, period int64) int64 {
	if quota <= 0 || period <= 0 {
		return 0
	}
	return quota * 1000 / period
}

// UpdatePodSandboxResources accepts and ignores resource updates.
func (s *Server) UpdatePodSandboxResources(context.Context, *runtimeapi.UpdatePodSandboxResourcesRequest) (*runtimeapi.UpdatePodSandboxResourcesResponse, error) {
	return &runtimeapi.UpdatePodSandboxResourcesResponse{}, nil
}

// ReopenContainerLog is a no-op: simulated containers write no logs.
func (s *Server) ReopenContainerLog(context.Context, *runtimeapi.ReopenContainerLogRequest) (*runtimeapi.ReopenContainerLogResponse, error) {
	return &runtimeapi.ReopenContainerLogResponse{}, nil
}

// resources returns the container's applied Linux resources: the last
// in-place update, else those of its creation.
func (c *container) resources() *runtimeapi.LinuxContainerResources {
	if c.applied != nil {
		return c.applied
	}
	return c.config.GetLinux().GetResources()
}
