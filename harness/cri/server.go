// Package cri is sidebench's CRI runtime and image service for real
// kubelets (the local backend). It runs no processes: every container is a
// simulated process whose timing (start latency, probes, hooks, exits,
// SIGTERM handling, crashes, OOM kills) is drawn from harness/behavior, and
// every CRI call and state change is written to a history.Sink with
// nanosecond wall-clock timestamps.
//
// The server is meant to run in the harness process, one per kubelet, on a
// unix socket the kubelet's containerRuntimeEndpoint points at.
package cri

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/sidebench/sidebench/harness/history"
)

// Version is the CRI Version().Version string the server reports.
const Version = "0.1.0"

// RuntimeName is the runtime name the kubelet shows (sidebench://<id>
// container IDs, CONTAINER-RUNTIME sidebench://0.1.0).
const RuntimeName = "sidebench"

// Config configures a Server.
type Config struct {
	// Node is the node name written into every event.
	Node string
	// Sink receives the events. It is called with the server's lock held,
	// so events of one server are in order; share a sink between servers
	// only through SerialSink. Nil means history.Discard.
	Sink history.Sink
	// FsMountpoint is the mountpoint reported by ImageFsInfo and stats (the
	// kubelet's root dir is a good value). Default "/".
	FsMountpoint string
	// ImageSize is the size reported for every image (the kubelet rejects
	// size 0). Default 1 MiB.
	ImageSize uint64
	// Clock times every simulated delay (start latency, run time, SIGTERM
	// handling, grace periods, hooks) and stamps every event. Default
	// clock.RealClock; tests drive a fake clock
	// (k8s.io/utils/clock/testing), so that no test depends on how fast
	// the machine is.
	Clock clock.WithDelayedExecution
	// Logf, if set, receives one line per notable problem (bad annotations).
	Logf func(format string, args ...any)
	// PodCIDR is the IPv4 range pod IPs are handed out from, in order (the
	// kubelet recreates a sandbox that reports no IP). Default
	// 127.100.0.0/16: loopback, so nothing sent to a pod IP (an HTTP probe,
	// say) can leave the machine. Give each server of a cluster its own.
	PodCIDR string
}

// Server implements runtimeapi.RuntimeServiceServer and
// runtimeapi.ImageServiceServer.
type Server struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	runtimeapi.UnimplementedImageServiceServer

	cfg Config

	mu         sync.Mutex
	sandboxes  map[string]*sandbox
	containers map[string]*container
	images     map[string]*runtimeapi.Image // by name and by id
	nextID     uint64
	// quit holds the pods whose shared quit file a workaround's wrapper
	// wrote (wiring.go): it outlives sandboxes, as the emptyDir does.
	quit map[string]bool

	grpc *grpc.Server
	lis  net.Listener

	// timers counts timer callbacks that have fired and not finished
	// (tests with a fake clock wait for them; see afterFunc).
	timers sync.WaitGroup

	podNet  *net.IPNet
	nextPod uint32

	// pullFails are the image pulls failing now (FailPulls).
	pullFails []pullFail
}

// New returns a server; start it with Serve or ListenAndServe.
func New(cfg Config) *Server {
	if cfg.Sink == nil {
		cfg.Sink = history.Discard
	}
	if cfg.FsMountpoint == "" {
		cfg.FsMountpoint = "/"
	}
	if cfg.ImageSize == 0 {
		cfg.ImageSize = 1 << 20
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.PodCIDR == "" {
		cfg.PodCIDR = "127.100.0.0/16"
	}
	s := &Server{
		cfg:        cfg,
		sandboxes:  map[string]*sandbox{},
		containers: map[string]*container{},
		images:     map[string]*runtimeapi.Image{},
	}
	if _, n, err := net.ParseCIDR(cfg.PodCIDR); err == nil && n.IP.To4() != nil {
		s.podNet = n
	} else {
		cfg.Logf("cri: bad PodCIDR %q; pods get no IP", cfg.PodCIDR)
	}
	return s
}

// podIPLocked hands out the next address of PodCIDR (wrapping around,
// skipping the network and broadcast addresses).
func (s *Server) podIPLocked() string {
	if s.podNet == nil {
		return ""
	}
	ones, bits := s.podNet.Mask.Size()
	size := uint32(1) << uint(bits-ones)
	if size < 4 {
		return s.podNet.IP.String()
	}
	s.nextPod = s.nextPod%(size-2) + 1
	base := binary.BigEndian.Uint32(s.podNet.IP.To4())
	ip := make(net.IP, 4)
	binary.BigEndian.PutUint32(ip, base+s.nextPod)
	return ip.String()
}

// ListenAndServe removes a stale socket file, listens on the unix socket
// path and serves in the background until Stop.
func (s *Server) ListenAndServe(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("cri: remove stale socket: %w", err)
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("cri: listen: %w", err)
	}
	go s.Serve(lis) //nolint:errcheck // Serve returns when Stop closes the listener
	return nil
}

// Serve serves the runtime and image services on lis until Stop.
func (s *Server) Serve(lis net.Listener) error {
	g := grpc.NewServer(grpc.MaxRecvMsgSize(16<<20), grpc.MaxSendMsgSize(16<<20))
	runtimeapi.RegisterRuntimeServiceServer(g, s)
	runtimeapi.RegisterImageServiceServer(g, s)
	s.mu.Lock()
	s.grpc, s.lis = g, lis
	s.mu.Unlock()
	return g.Serve(lis)
}

// Stop stops serving (closing the socket; in-flight calls are cancelled)
// and stops every timer. The simulated state is kept, so a new Serve on the
// same Server models a runtime restart that kept its containers.
func (s *Server) Stop() {
	s.mu.Lock()
	g := s.grpc
	s.grpc = nil
	s.mu.Unlock()
	if g != nil {
		g.Stop()
	}
}

// Close stops serving and drops all state, stopping every timer.
func (s *Server) Close() {
	s.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.containers {
		c.stopTimers()
	}
	s.containers = map[string]*container{}
	s.sandboxes = map[string]*sandbox{}
}

// now is the clock's time in Unix nanoseconds.
func (s *Server) now() int64 { return s.cfg.Clock.Now().UnixNano() }

// afterFunc runs f in its own goroutine d from now (clock time), like
// time.AfterFunc. A fake clock calls its callbacks synchronously under
// its own lock, from whoever steps it; f takes s.mu and reads the clock,
// so it must not run there.
func (s *Server) afterFunc(d time.Duration, f func()) clock.Timer {
	return s.cfg.Clock.AfterFunc(d, func() {
		s.timers.Add(1)
		go func() {
			defer s.timers.Done()
			f()
		}()
	})
}

// emit writes one event of sandbox sb stamped now. Callers hold s.mu.
// A sink that is a SandboxSink also gets the sandbox's pod UID and labels
// (RunPodSandbox's metadata and config), so a backend can tell apart two
// pods of one name: the previous trial's, still being killed, and the
// current one (issue 16 A9).
func (s *Server) emit(sb *sandbox, e history.Event) {
	e.T = s.now()
	if e.Node == "" {
		e.Node = s.cfg.Node
	}
	var err error
	if us, ok := s.cfg.Sink.(SandboxSink); ok && sb != nil {
		err = us.WriteSandbox(&e, sb.config.GetMetadata().GetUid(), sb.config.GetLabels())
	} else {
		err = s.cfg.Sink.Write(&e)
	}
	if err != nil {
		s.cfg.Logf("cri: history write: %v", err)
	}
}

// SandboxSink is a history.Sink that also takes the pod UID and the labels
// of the sandbox an event belongs to (the kubelet copies the pod's labels
// into the PodSandboxConfig).
type SandboxSink interface {
	history.Sink
	WriteSandbox(e *history.Event, uid string, labels map[string]string) error
}

func (s *Server) newID(prefix string) string {
	s.nextID++
	return fmt.Sprintf("%s%012x%012x", prefix, uint64(s.now())&0xffffffffffff, s.nextID)
}

// SerialSink makes one Sink safe for several servers: writes are
// serialised, and T never goes backwards (a write stamped before the
// previous one, because another server's lock was held, is clamped to it).
func SerialSink(next history.Sink) history.Sink { return &serialSink{next: next} }

type serialSink struct {
	mu   sync.Mutex
	last int64
	next history.Sink
}

// WriteSandbox passes the sandbox's UID and labels on when the next sink
// takes them.
func (s *serialSink) WriteSandbox(e *history.Event, uid string, labels map[string]string) error {
	if us, ok := s.next.(SandboxSink); ok {
		s.mu.Lock()
		defer s.mu.Unlock()
		if e.T < s.last {
			e.T = s.last
		}
		s.last = e.T
		return us.WriteSandbox(e, uid, labels)
	}
	return s.Write(e)
}

func (s *serialSink) Write(e *history.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.T < s.last {
		e.T = s.last
	}
	s.last = e.T
	return s.next.Write(e)
}

// Version implements the CRI Version call.
func (s *Server) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{
		Version:           Version,
		RuntimeName:       RuntimeName,
		RuntimeVersion:    Version,
		RuntimeApiVersion: "v1",
	}, nil
}

// Status reports the runtime and network ready.
func (s *Server) Status(context.Context, *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true},
		{Type: runtimeapi.NetworkReady, Status: true},
	}}}, nil
}

// RuntimeConfig reports the cgroupfs driver.
func (s *Server) RuntimeConfig(context.Context, *runtimeapi.RuntimeConfigRequest) (*runtimeapi.RuntimeConfigResponse, error) {
	return &runtimeapi.RuntimeConfigResponse{Linux: &runtimeapi.LinuxRuntimeConfiguration{
		CgroupDriver: runtimeapi.CgroupDriver_CGROUPFS,
	}}, nil
}

// UpdateRuntimeConfig accepts and ignores the pod CIDR.
func (s *Server) UpdateRuntimeConfig(context.Context, *runtimeapi.UpdateRuntimeConfigRequest) (*runtimeapi.UpdateRuntimeConfigResponse, error) {
	return &runtimeapi.UpdateRuntimeConfigResponse{}, nil
}
