package localcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/godbus/dbus/v5/prop"
	"k8s.io/utils/clock"
)

// Graceful node shutdown on real kubelets (docs/local-backend.md, "Node
// shutdown"). The kubelet's shutdown manager
// (pkg/kubelet/nodeshutdown/systemd in v1.37.2) talks to logind on the
// system D-Bus: it reads org.freedesktop.login1.Manager's
// InhibitDelayMaxUSec, takes a "delay" inhibitor lock for "shutdown"
// (Inhibit, a file descriptor it closes to release it), and waits for the
// PrepareForShutdown(true) signal; then it kills the pods (regular ones
// with shutdownGracePeriod - shutdownGracePeriodCriticalPods, then the
// critical ones) and releases the lock. logind powers the machine off when
// every delay lock is released or InhibitDelayMaxUSec has passed.
//
// Each node gets a private dbus-daemon (a recorded process, its socket in
// the node dir, only root may connect) and, in the harness process, a
// fake logind on it: the kubelet is pointed at it with
// DBUS_SYSTEM_BUS_ADDRESS. One bus per node, because PrepareForShutdown
// is a broadcast: it must reach one kubelet.

const (
	logindName    = "org.freedesktop.login1"
	logindPath    = dbus.ObjectPath("/org/freedesktop/login1")
	logindIface   = "org.freedesktop.login1.Manager"
	dbusDaemonBin = "dbus-daemon"
)

// fakeLogind is org.freedesktop.login1 on one private bus: inhibitor
// locks and PrepareForShutdown, nothing else.
type fakeLogind struct {
	conn  *dbus.Conn
	clock clock.Clock
	// maxDelay is InhibitDelayMaxUSec: at least the kubelet's
	// shutdownGracePeriod, so that it never tries to raise it (it would
	// write /etc/systemd/logind.conf.d/99-kubelet.conf on the host and
	// ask systemd to reload logind).
	maxDelay time.Duration

	mu    sync.Mutex
	locks []*inhibitLock
	taken chan struct{} // signalled at every Inhibit
}

// inhibitLock is one delay lock: the holder got the write end of a
// pipe; when every copy of it is closed (the holder closed it, or died),
// the read end sees EOF. ours is logind's own copy of the write end, kept
// until a shutdown needs the lock's state (it must outlive the reply that
// passes a duplicate of it).
type inhibitLock struct {
	who, why string
	r, ours  *os.File
}

// dbusDaemonArgs runs the bus of config in the foreground, with no pid
// file.
func dbusDaemonArgs(config string) []string {
	return []string{"--config-file=" + config, "--nofork", "--nopidfile", "--nosyslog"}
}

// logindBus is the private bus of one node: its dbus-daemon config and
// socket.
func logindBus(nodeDir string) (config, socket string) {
	return filepath.Join(nodeDir, "dbus.conf"), filepath.Join(nodeDir, "dbus.sock")
}

// dbusConfig is a system-type bus on socket that only root may use.
func dbusConfig(socket string) string {
	return `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=` + socket + `</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <deny own="*"/>
    <deny send_type="method_call"/>
  </policy>
  <policy user="root">
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
`
}

// startLogind connects to the bus at address, takes the name
// org.freedesktop.login1 and serves the Manager object.
func startLogind(address string, maxDelay time.Duration, clk clock.Clock) (*fakeLogind, error) {
	conn, err := dbus.Connect(address)
	if err != nil {
		return nil, fmt.Errorf("localcluster: fake logind: connect %s: %w", address, err)
	}
	if !conn.SupportsUnixFDs() {
		conn.Close()
		return nil, errors.New("localcluster: fake logind: the bus does not pass file descriptors (inhibitor locks need them)")
	}
	l := &fakeLogind{conn: conn, clock: clk, maxDelay: maxDelay, taken: make(chan struct{}, 1)}
	if err := conn.ExportMethodTable(map[string]any{"Inhibit": l.inhibit}, logindPath, logindIface); err != nil {
		conn.Close()
		return nil, err
	}
	if _, err := prop.Export(conn, logindPath, prop.Map{logindIface: {
		"InhibitDelayMaxUSec": {Value: uint64(maxDelay / time.Microsecond), Emit: prop.EmitFalse},
	}}); err != nil {
		conn.Close()
		return nil, err
	}
	reply, err := conn.RequestName(logindName, dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		conn.Close()
		return nil, fmt.Errorf("localcluster: fake logind: cannot own %s (%v, reply %v)", logindName, err, reply)
	}
	return l, nil
}

// inhibit is org.freedesktop.login1.Manager.Inhibit(what, who, why, mode)
// -> fd. Only delay locks on shutdown are what the kubelet takes; others
// are refused as logind would not need them here.
func (l *fakeLogind) inhibit(what, who, why, mode string) (dbus.UnixFD, *dbus.Error) {
	if what != "shutdown" || mode != "delay" {
		return 0, dbus.MakeFailedError(fmt.Errorf("sidebench's fake logind only serves delay locks on shutdown, not %q/%q", what, mode))
	}
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		return 0, dbus.MakeFailedError(err)
	}
	// A pollable read end: closing it ends a blocked Read.
	if err := syscall.SetNonblock(p[0], true); err != nil {
		syscall.Close(p[0])
		syscall.Close(p[1])
		return 0, dbus.MakeFailedError(err)
	}
	lk := &inhibitLock{who: who, why: why, r: os.NewFile(uintptr(p[0]), "inhibit-r"), ours: os.NewFile(uintptr(p[1]), "inhibit-w")}
	l.mu.Lock()
	l.locks = append(l.locks, lk)
	l.mu.Unlock()
	select {
	case l.taken <- struct{}{}:
	default:
	}
	return dbus.UnixFD(p[1]), nil
}

// Locks is the number of inhibitor locks taken so far (held or not).
func (l *fakeLogind) Locks() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.locks)
}

// waitLock waits until at least n locks were taken.
func (l *fakeLogind) waitLock(ctx context.Context, n int) error {
	for l.Locks() < n {
		select {
		case <-l.taken:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// ShutdownResult is what a PrepareForShutdown led to.
type ShutdownResult struct {
	// Released: every delay lock was released before InhibitDelayMaxUSec.
	Released bool
	// Waited is how long logind waited (clock time).
	Waited time.Duration
	// Holders are the locks still held when the wait ended ("who: why").
	Holders []string
}

// shutdown emits PrepareForShutdown(true), then waits as logind does:
// until every delay lock is released or maxDelay has passed.
func (l *fakeLogind) shutdown(ctx context.Context) (ShutdownResult, error) {
	l.mu.Lock()
	locks := append([]*inhibitLock(nil), l.locks...)
	l.locks = nil
	l.mu.Unlock()
	// The replies that passed the locks are long sent: logind's own
	// copies go, so that a released (or dead) holder's pipe reads EOF.
	for _, lk := range locks {
		lk.ours.Close()
	}
	t0 := l.clock.Now()
	if err := l.conn.Emit(logindPath, logindIface+".PrepareForShutdown", true); err != nil {
		return ShutdownResult{}, fmt.Errorf("localcluster: fake logind: PrepareForShutdown: %w", err)
	}
	released := make(chan *inhibitLock, len(locks))
	for _, lk := range locks {
		go func() {
			var b [1]byte
			for {
				if _, err := lk.r.Read(b[:]); err != nil { // EOF: every write end closed
					released <- lk
					return
				}
			}
		}()
	}
	held := map[*inhibitLock]bool{}
	for _, lk := range locks {
		held[lk] = true
	}
	timer := l.clock.NewTimer(l.maxDelay)
	defer timer.Stop()
	res := ShutdownResult{}
	for len(held) > 0 {
		select {
		case lk := <-released:
			delete(held, lk)
			lk.r.Close()
		case <-timer.C():
			for lk := range held {
				res.Holders = append(res.Holders, lk.who+": "+lk.why)
				lk.r.Close() // unblocks its reader
			}
			res.Waited = l.clock.Since(t0)
			return res, nil
		case <-ctx.Done():
			for lk := range held {
				lk.r.Close()
			}
			return res, ctx.Err()
		}
	}
	res.Released, res.Waited = true, l.clock.Since(t0)
	return res, nil
}

// close drops the bus connection and every lock.
func (l *fakeLogind) close() {
	l.mu.Lock()
	for _, lk := range l.locks {
		lk.ours.Close()
		lk.r.Close()
	}
	l.locks = nil
	l.mu.Unlock()
	l.conn.Close()
}

// waitSocket waits until something accepts connections on the unix
// socket path.
func waitSocket(ctx context.Context, path string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		c, err := net.DialTimeout("unix", path, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing listens on %s after %s: %w", path, within, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
