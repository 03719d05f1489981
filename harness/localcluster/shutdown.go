package localcluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// EnableGracefulShutdown makes every node's kubelet run its graceful
// node shutdown manager with shutdownGracePeriod grace and
// shutdownGracePeriodCriticalPods critical, against a fake logind on a
// private bus of the node (logind.go): the first call starts each node's
// dbus-daemon and logind; every call that changes the settings rewrites
// the kubelets' configuration and restarts them (SIGKILL, start, healthz),
// then waits until each has taken its inhibitor lock, the proof that it
// accepted the fake logind. Meant between trials: the restart is a
// kubelet restart. A kubelet that does not take a lock within a minute
// is an error quoting what it logged about it.
func (c *Cluster) EnableGracefulShutdown(ctx context.Context, grace, critical time.Duration) error {
	if grace <= 0 || critical < 0 || critical > grace {
		return fmt.Errorf("localcluster: graceful node shutdown needs 0 <= shutdownGracePeriodCriticalPods (%s) <= shutdownGracePeriod (%s), shutdownGracePeriod > 0", critical, grace)
	}
	if _, err := exec.LookPath(dbusDaemonBin); err != nil {
		return fmt.Errorf("localcluster: graceful node shutdown needs %s (Debian package dbus-daemon): %w", dbusDaemonBin, err)
	}
	// A few nodes at a time: each restart is a kubelet start.
	sem := make(chan struct{}, 8)
	errs := make([]error, len(c.Nodes))
	var wg sync.WaitGroup
	for i, n := range c.Nodes {
		if n.logind != nil && n.shutdownGrace == grace && n.shutdownCritical == critical {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = c.enableShutdown(ctx, i, grace, critical)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return c.WaitNodesReady(ctx, 2*time.Minute)
}

func (c *Cluster) enableShutdown(ctx context.Context, i int, grace, critical time.Duration) error {
	n := c.Nodes[i]
	dir := filepath.Dir(n.RootDir)
	conf, sock := logindBus(dir)
	if n.logind == nil {
		if err := os.WriteFile(conf, []byte(dbusConfig(sock)), 0o600); err != nil {
			return err
		}
		if err := c.start(c.cfg, "dbus-"+n.Name, nil, dbusDaemonBin, dbusDaemonArgs(conf)...); err != nil {
			return err
		}
		if err := waitSocket(ctx, sock, 30*time.Second); err != nil {
			return fmt.Errorf("localcluster: the private bus of %s: %w (log %s)", n.Name, err, c.logPath("dbus-"+n.Name))
		}
	} else {
		n.logind.close()
		n.logind = nil
	}
	// InhibitDelayMaxUSec = shutdownGracePeriod: what the kubelet asks for,
	// so that it never rewrites logind's configuration.
	l, err := startLogind("unix:path="+sock, grace, clock.RealClock{})
	if err != nil {
		return err
	}
	c.mu.Lock()
	n.logind = l
	n.shutdownGrace, n.shutdownCritical = grace, critical
	c.mu.Unlock()
	cfg := n.baseConf + fmt.Sprintf("shutdownGracePeriod: %s\nshutdownGracePeriodCriticalPods: %s\n", grace, critical)
	if err := os.WriteFile(n.kubeletConf, []byte(cfg), 0o644); err != nil {
		return err
	}
	n.kubeletEnv = []string{"DBUS_SYSTEM_BUS_ADDRESS=unix:path=" + sock}
	if p, ok := c.proc("kubelet-" + n.Name); ok && p.Alive() {
		if err := c.KillKubelet(i); err != nil {
			return err
		}
	}
	if err := c.StartKubelet(ctx, i); err != nil {
		return err
	}
	lctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := l.waitLock(lctx, 1); err != nil {
		return fmt.Errorf("localcluster: the kubelet of %s took no inhibitor lock from the fake logind within a minute: it refused it or never asked; its log says: %s", n.Name, shutdownLogLines(n.Log))
	}
	return nil
}

// shutdownLogLines quotes what a kubelet log says about its shutdown
// manager and D-Bus (the last few such lines).
func shutdownLogLines(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if strings.Contains(l, "hutdown") || strings.Contains(l, "dbus") || strings.Contains(l, "logind") || strings.Contains(l, "nhibit") {
			lines = append(lines, l)
		}
	}
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	if len(lines) == 0 {
		return "(nothing about shutdown or D-Bus in " + path + ")"
	}
	return strings.Join(lines, " | ")
}

// GracefulShutdown returns node i's graceful node shutdown settings, and
// whether EnableGracefulShutdown configured them.
func (c *Cluster) GracefulShutdown(i int) (grace, critical time.Duration, ok bool) {
	if i < 0 || i >= len(c.Nodes) {
		return 0, 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.Nodes[i]
	return n.shutdownGrace, n.shutdownCritical, n.logind != nil
}

// ShutdownNode begins a graceful shutdown of node i as systemd would:
// logind emits PrepareForShutdown(true) and waits until the kubelet
// releases its inhibitor lock (it has terminated the pods) or
// InhibitDelayMaxUSec (= shutdownGracePeriod) has passed. Then the
// machine would power off: that, and bringing it back, is the caller's
// (KillKubelet, the runtime's loss of every container, StartKubelet).
func (c *Cluster) ShutdownNode(ctx context.Context, i int) (ShutdownResult, error) {
	if i < 0 || i >= len(c.Nodes) {
		return ShutdownResult{}, fmt.Errorf("localcluster: no node %d (%d nodes)", i, len(c.Nodes))
	}
	c.mu.Lock()
	l := c.Nodes[i].logind
	c.mu.Unlock()
	if l == nil {
		return ShutdownResult{}, fmt.Errorf("localcluster: graceful node shutdown is not enabled on %s (EnableGracefulShutdown)", c.Nodes[i].Name)
	}
	return l.shutdown(ctx)
}
