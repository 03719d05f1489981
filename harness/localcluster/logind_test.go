package localcluster

import (
	"context"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
)

// privateBus runs a dbus-daemon with the nodes' configuration in a
// temporary dir and returns its address.
func privateBus(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the private bus admits root only")
	}
	if _, err := exec.LookPath(dbusDaemonBin); err != nil {
		t.Skip("dbus-daemon not installed (Debian package dbus-daemon)")
	}
	dir := t.TempDir()
	conf, sock := logindBus(dir)
	if err := os.WriteFile(conf, []byte(dbusConfig(sock)), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(dbusDaemonBin, dbusDaemonArgs(conf)...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if err := waitSocket(context.Background(), sock, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	return "unix:path=" + sock
}

// kubeletLike connects as the kubelet's shutdown manager does
// (pkg/kubelet/nodeshutdown/systemd, v1.37.2): InhibitDelayMaxUSec, an
// inhibitor lock, the PrepareForShutdown match.
func kubeletLike(t *testing.T, addr string) (conn *dbus.Conn, lock int, delay time.Duration, signals chan *dbus.Signal) {
	t.Helper()
	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	obj := conn.Object(logindName, logindPath)
	v, err := obj.GetProperty(logindIface + ".InhibitDelayMaxUSec")
	if err != nil {
		t.Fatal(err)
	}
	us, ok := v.Value().(uint64)
	if !ok {
		t.Fatalf("InhibitDelayMaxUSec is %T, the kubelet wants uint64", v.Value())
	}
	call := obj.Call(logindIface+".Inhibit", 0, "shutdown", "kubelet", "Kubelet needs time to handle node shutdown", "delay")
	if call.Err != nil {
		t.Fatal(call.Err)
	}
	var fd uint32
	if err := call.Store(&fd); err != nil {
		t.Fatalf("the kubelet's Store(&uint32) of the lock: %v", err)
	}
	if err := conn.AddMatchSignal(dbus.WithMatchInterface(logindIface), dbus.WithMatchMember("PrepareForShutdown"), dbus.WithMatchObjectPath(logindPath)); err != nil {
		t.Fatal(err)
	}
	signals = make(chan *dbus.Signal, 4)
	conn.Signal(signals)
	return conn, int(fd), time.Duration(us) * time.Microsecond, signals
}

// TestFakeLogindReleased: the kubelet's calls work against the fake; a
// shutdown signals PrepareForShutdown(true) and ends when the lock is
// released, not at the maximum delay.
func TestFakeLogindReleased(t *testing.T) {
	addr := privateBus(t)
	l, err := startLogind(addr, 20*time.Second, clock.RealClock{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	_, fd, delay, signals := kubeletLike(t, addr)
	if delay != 20*time.Second {
		t.Errorf("InhibitDelayMaxUSec = %v, want the 20s max delay", delay)
	}
	if err := l.waitLock(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	done := make(chan ShutdownResult, 1)
	go func() {
		res, err := l.shutdown(context.Background())
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	select {
	case s := <-signals:
		if s.Name != logindIface+".PrepareForShutdown" || len(s.Body) != 1 || s.Body[0] != true {
			t.Fatalf("signal %+v, want PrepareForShutdown(true)", s)
		}
	case <-time.After(30 * time.Second): // a hang guard
		t.Fatal("no PrepareForShutdown")
	}
	select {
	case res := <-done:
		t.Fatalf("shutdown ended (%+v) while the lock is held", res)
	default:
	}
	syscall.Close(fd) // the kubelet's ReleaseInhibitLock
	res := <-done
	if !res.Released || len(res.Holders) != 0 {
		t.Errorf("after the release: %+v, want released", res)
	}
}

// TestFakeLogindMaxDelay: a lock never released holds the shutdown for
// InhibitDelayMaxUSec (clock time), and is named.
func TestFakeLogindMaxDelay(t *testing.T) {
	addr := privateBus(t)
	clk := testingclock.NewFakeClock(time.Unix(1_700_000_000, 0))
	l, err := startLogind(addr, 20*time.Second, clk)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	kubeletLike(t, addr)
	done := make(chan ShutdownResult, 1)
	go func() {
		res, _ := l.shutdown(context.Background())
		done <- res
	}()
	for deadline := time.Now().Add(30 * time.Second); !clk.HasWaiters(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("shutdown never armed its max-delay timer")
		}
	}
	clk.Step(20*time.Second - time.Nanosecond)
	select {
	case res := <-done:
		t.Fatalf("shutdown ended at 20s-1ns: %+v", res)
	default:
	}
	clk.Step(time.Nanosecond)
	res := <-done
	if res.Released || res.Waited != 20*time.Second || len(res.Holders) != 1 || res.Holders[0] != "kubelet: Kubelet needs time to handle node shutdown" {
		t.Errorf("at the max delay: %+v", res)
	}
	// Another caller of Inhibit than the kubelet's kind is refused.
	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if call := conn.Object(logindName, logindPath).Call(logindIface+".Inhibit", 0, "sleep", "x", "y", "block"); call.Err == nil {
		t.Error("a block lock on sleep was granted")
	}
}
