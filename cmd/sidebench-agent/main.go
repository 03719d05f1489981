// Command sidebench-agent is the entrypoint of every container the kube
// backend creates on a real cluster. It plays one attempt of a container
// behaviour (harness/behavior), drawn from the same seeded stream as the
// sim and the local backend's CRI server, and appends nanosecond-stamped
// lifecycle lines to a log file shared by the pod's containers (an
// emptyDir), because API timestamps have one-second resolution.
//
// Usage:
//
//	sidebench-agent                          run the plan (the container's process)
//	sidebench-agent probe startup|ready|live exit 0 if the probe passes, 1 if not (exec probes)
//	sidebench-agent hook poststart|prestop   sleep the drawn hook duration (exec hooks)
//	sidebench-agent plan                     print the drawn plan and exit
//	sidebench-agent cat                      copy the shared log to stdout (collection by exec; the image has no shell)
//	sidebench-agent fail PROBE DURATION      make a probe of this container fail for DURATION
//	sidebench-agent oom                      make the main process grow its memory until the kernel OOM-kills it
//	sidebench-agent pause                    block until SIGTERM or SIGINT, exit 0 (the pod sandbox's image)
//
// Environment: SIDEBENCH_BEHAVIOR (behavior.Container as JSON),
// SIDEBENCH_SEED, SIDEBENCH_POD, SIDEBENCH_NAMESPACE, SIDEBENCH_POD_UID,
// SIDEBENCH_CONTAINER, SIDEBENCH_ATTEMPT, SIDEBENCH_LOG, SIDEBENCH_DIR,
// SIDEBENCH_STDOUT. See
// docs/kube-backend.md.
package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/utils/clock"
)

func main() { os.Exit(realMain(os.Args[1:], os.Getenv, os.Stdout, os.Stderr)) }

// Exit codes of the agent's own failures (a plan's codes are 0..255 too,
// so these are only distinguishable through the log and stderr).
const (
	exitUsage  = 2
	exitConfig = 3
)

func realMain(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	cmd := ""
	if len(args) > 0 {
		cmd = args[0]
	}
	switch cmd {
	case "", "run":
		return runMain(getenv, stderr)
	case "probe":
		if len(args) != 2 {
			fmt.Fprintln(stderr, "usage: sidebench-agent probe startup|ready|live")
			return exitUsage
		}
		return probe(args[1], getenv, stderr)
	case "hook":
		if len(args) != 2 {
			fmt.Fprintln(stderr, "usage: sidebench-agent hook poststart|prestop")
			return exitUsage
		}
		return hook(args[1], getenv, stderr, clock.RealClock{})
	case "plan":
		c, err := loadConfig(getenv)
		if err != nil {
			fmt.Fprintln(stderr, "sidebench-agent:", err)
			return exitConfig
		}
		if !c.AttemptSet {
			c.Attempt = countAttempts(&c)
		}
		fmt.Fprintf(stdout, "pod=%s container=%s attempt=%d seed=%d\n%s\n", c.podKey(), c.Container, c.Attempt, c.Seed, c.plan())
		return 0
	case "cat":
		path := getenv(envLog)
		if len(args) == 2 {
			path = args[1]
		}
		f, err := os.Open(path)
		if err != nil {
			fmt.Fprintln(stderr, "sidebench-agent:", err)
			return 1
		}
		defer f.Close()
		if _, err := io.Copy(stdout, f); err != nil {
			fmt.Fprintln(stderr, "sidebench-agent:", err)
			return 1
		}
		return 0
	case "oom":
		return triggerOOM(getenv, stderr)
	case "fail":
		return failProbe(args[1:], getenv, stderr)
	case "pause":
		// The sandbox (pause) container of the containerd tier: the same
		// binary, so the node needs one imported image and nothing pulled.
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
		<-sig
		return 0
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, "usage: sidebench-agent [run | probe startup|ready|live | hook poststart|prestop | plan | cat [FILE] | oom | fail PROBE DURATION | pause]")
		return 0
	}
	fmt.Fprintf(stderr, "sidebench-agent: unknown command %q (allowed: run, probe, hook, plan, cat, oom, fail, pause)\n", cmd)
	return exitUsage
}

func nowNS() int64 { return time.Now().UnixNano() }

func runMain(getenv func(string) string, stderr io.Writer) int {
	// Catch SIGTERM first: the kubelet may send it at any time.
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGTERM)
	oom := make(chan os.Signal, 1)
	signal.Notify(oom, syscall.SIGUSR1)
	c, err := loadConfig(getenv)
	if err != nil {
		fmt.Fprintln(stderr, "sidebench-agent:", err)
		return exitConfig
	}
	if !c.AttemptSet {
		c.Attempt = countAttempts(&c)
	}
	l, err := openLog(&c, nowNS)
	if err != nil {
		fmt.Fprintln(stderr, "sidebench-agent: log:", err)
		return exitConfig
	}
	defer l.close()
	if c.LogPath != "" {
		// Witness the other containers' deaths (witness.go); a failure
		// only costs precision, never the container.
		dir := filepath.Join(filepath.Dir(c.LogPath), "locks")
		if f, err := holdLock(dir, c.Container, c.Attempt); err == nil {
			defer f.Close()
			go witness(dir, lockName(c.Container, c.Attempt), l, 20*time.Millisecond)
		} else {
			fmt.Fprintln(stderr, "sidebench-agent: witness lock:", err)
		}
	}
	a := &agent{c: &c, plan: c.plan(), log: l, memTick: 10 * time.Millisecond}
	return a.run(sig, oom)
}

// triggerOOM signals the main process (SIGUSR1; pid from its state file)
// to grow its memory until the container's memory limit OOM-kills it: a
// real kernel OOM kill, injected with an exec (no Chaos Mesh needed). A
// signal to pid 1 from inside its pid namespace is delivered only because
// the agent handles it.
func triggerOOM(getenv func(string) string, stderr io.Writer) int {
	dir := getenv(envDir)
	if dir == "" {
		dir = DefaultDir
	}
	st, ok := readState(&config{Dir: dir}, 2*time.Second)
	if !ok || st.PID <= 0 {
		fmt.Fprintln(stderr, "sidebench-agent: oom: no main process state in", dir)
		return 1
	}
	if err := syscall.Kill(st.PID, syscall.SIGUSR1); err != nil {
		fmt.Fprintf(stderr, "sidebench-agent: oom: signal pid %d: %v\n", st.PID, err)
		return 1
	}
	return 0
}

// probe answers an exec probe from the files the main process maintains.
func probe(kind string, getenv func(string) string, stderr io.Writer) int {
	dir := getenv(envDir)
	if dir == "" {
		dir = DefaultDir
	}
	c := config{Dir: dir}
	var ok bool
	switch kind {
	case "startup":
		ok = exists(c.path(fileStarted))
	case "ready", "readiness":
		kind = "ready"
		ok = exists(c.path(fileReady))
	case "live", "liveness":
		kind = "live"
		ok = !exists(c.path(fileUnhealthy))
	default:
		fmt.Fprintf(stderr, "sidebench-agent: unknown probe %q (allowed: startup, ready, live)\n", kind)
		return exitUsage
	}
	forced := exists(c.path(forceFailPrefix + kind))
	if forced {
		ok = false
	}
	logProbe(kind, ok, forced, getenv)
	if !ok {
		return 1
	}
	return 0
}

// failProbe makes a probe of this container fail for d (the kube
// backend's probe-failure fault without Chaos Mesh): it creates the
// force-fail file the probe command checks, and removes it after d, or
// when the exec session is cut.
func failProbe(args []string, getenv func(string) string, stderr io.Writer) int {
	if len(args) != 2 {
		fmt.Fprintln(stderr, "usage: sidebench-agent fail startup|ready|live DURATION")
		return exitUsage
	}
	kind := args[0]
	switch kind {
	case "startup", "ready", "live":
	default:
		fmt.Fprintf(stderr, "sidebench-agent: unknown probe %q (allowed: startup, ready, live)\n", kind)
		return exitUsage
	}
	d, err := time.ParseDuration(args[1])
	if err != nil || d <= 0 {
		fmt.Fprintf(stderr, "sidebench-agent: fail: duration %q: want a positive Go duration such as 5s\n", args[1])
		return exitUsage
	}
	dir := getenv(envDir)
	if dir == "" {
		dir = DefaultDir
	}
	c := config{Dir: dir}
	_ = os.MkdirAll(dir, 0o755)
	path := c.path(forceFailPrefix + kind)
	touch(path)
	defer os.Remove(path)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	select {
	case <-time.After(d):
	case <-sig:
	}
	return 0
}

// logProbe appends a probe line when the result differs from the last one
// logged for this container instance (the state files live in its own
// writable layer, so a restarted container starts over). Before any line,
// startup and readiness count as failing and liveness as passing, so the
// first startup success, every readiness change and every liveness
// failure are logged. Failures to log are ignored: the probe's answer is
// what matters to the kubelet.
func logProbe(kind string, ok, forced bool, getenv func(string) string) {
	c, err := loadConfig(getenv)
	if err != nil || (c.LogPath == "" && !c.Stdout) {
		return
	}
	res := "failure"
	switch {
	case forced:
		// A forced failure is a result of its own, so that the first
		// one is logged even while the probe was failing anyway (a
		// startup probe before its time): it is the fault's effect.
		res = "failure forced"
	case ok:
		res = "success"
	}
	last := "failure"
	if kind == "live" {
		last = "success"
	}
	if b, err := os.ReadFile(c.path(probePrefix + kind)); err == nil {
		last = string(b)
	}
	if res == last {
		return
	}
	st, found := readState(&c, 0)
	if !found {
		return // no main process yet: nothing the kubelet can act on
	}
	c.Attempt = st.Attempt
	if err := os.WriteFile(c.path(probePrefix+kind), []byte(res), 0o644); err != nil {
		return
	}
	l, err := openLog(&c, nowNS)
	if err != nil {
		return
	}
	defer l.close()
	l.mirrorToMain(st.PID)
	l.event(evProbe, nil, kind+" "+res)
}

// hook plays a lifecycle hook: it sleeps the hook duration drawn for the
// current attempt (never: until killed) on clk, logging its begin and end.
func hook(kind string, getenv func(string) string, stderr io.Writer, clk clock.Clock) int {
	var begin, end string
	switch kind {
	case "poststart", "postStart":
		begin, end = evPostStartBegin, evPostStartEnd
	case "prestop", "preStop":
		begin, end = evPreStopBegin, evPreStopEnd
	default:
		fmt.Fprintf(stderr, "sidebench-agent: unknown hook %q (allowed: poststart, prestop)\n", kind)
		return exitUsage
	}
	c, err := loadConfig(getenv)
	if err != nil {
		fmt.Fprintln(stderr, "sidebench-agent:", err)
		return exitConfig
	}
	// The main process records its attempt; a postStart hook may run
	// before it did, so wait a little for it.
	mainPID := 0
	if st, ok := readState(&c, 2*time.Second); ok {
		c.Attempt, mainPID = st.Attempt, st.PID
	} else if !c.AttemptSet {
		c.Attempt = countAttempts(&c)
		if c.Attempt > 0 {
			c.Attempt-- // the main process logged its exec already
		}
	}
	l, err := openLog(&c, func() int64 { return clk.Now().UnixNano() })
	if err != nil {
		fmt.Fprintln(stderr, "sidebench-agent: log:", err)
		return exitConfig
	}
	defer l.close()
	l.mirrorToMain(mainPID)
	p := c.plan()
	d := p.PostStart
	if begin == evPreStopBegin {
		d = p.PreStop
	}
	l.event(begin, nil, "")
	<-clk.After(d) // Never is ~292 years: the hook hangs until the kubelet gives up
	l.event(end, nil, "")
	return 0
}
