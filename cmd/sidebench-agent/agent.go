package main

import (
	"os"
	"slices"
	"time"

	"k8s.io/utils/clock"

	"github.com/sidebench/sidebench/harness/behavior"
)

// step is one timed action of a plan, at an offset from the exec.
type step struct {
	at time.Duration
	ev string
}

// addNever adds durations, keeping Never absorbing.
func addNever(a, b time.Duration) time.Duration {
	if a == behavior.Never || b == behavior.Never || a > behavior.Never-b {
		return behavior.Never
	}
	return a + b
}

// steps returns the plan's timed actions in firing order (stable on ties:
// start, started, ready, unhealthy, exit), offsets from the exec. Actions
// that never happen are left out. An OOM exit with memory growth is not a
// step: the agent grows its memory and the kernel kills it.
func steps(p behavior.Plan, growth bool) []step {
	s := []step{{p.StartLatency, evStart}}
	add := func(d time.Duration, ev string) {
		if at := addNever(p.StartLatency, d); at != behavior.Never {
			s = append(s, step{at, ev})
		}
	}
	add(p.StartupAfter, evStarted)
	add(p.ReadyAfter, evReady)
	add(p.LivenessFailAfter, evUnhealthy)
	if p.Exit != behavior.ExitNone && !(p.Exit == behavior.ExitOOM && growth) {
		add(p.ExitAfter, evExit)
	}
	slices.SortStableFunc(s, func(a, b step) int {
		switch {
		case a.at < b.at:
			return -1
		case a.at > b.at:
			return 1
		}
		return 0
	})
	return s
}

// agent runs one container attempt's plan.
type agent struct {
	c    *config
	plan behavior.Plan
	log  *logger
	// memTick is how often memory grows (tests shorten nothing else).
	memTick time.Duration
	hog     hog
	// clk times the plan (default the real clock; tests step a fake one).
	clk clock.WithTicker
}

// ready is a closed channel: a step that is already due fires at once
// (a fake clock fires a zero-length timer only at its next step).
var ready = func() chan time.Time { c := make(chan time.Time); close(c); return c }()

// oomRate is how fast memory grows after an oom trigger: fast enough that a
// limit of a few hundred MiB is hit within a second or two.
const oomRate = 512 << 20 // bytes/s

// oomCeiling: an oom trigger with no memory limit in sight stops here.
const oomCeiling = 8 << 30

// run executes the plan until the process should exit and returns the exit
// code. sig delivers SIGTERM; oom delivers the oom trigger (SIGUSR1).
func (a *agent) run(sig <-chan os.Signal, oom <-chan os.Signal) int {
	p := &a.plan
	if a.clk == nil {
		a.clk = clock.RealClock{}
	}
	// Offsets count from the logged exec time, so that the log shows each
	// step at least its planned offset after the exec line.
	exec := time.Unix(0, a.log.event(evExec, nil, p.String()))
	_ = os.MkdirAll(a.c.Dir, 0o755)
	for _, f := range []string{fileStarted, fileReady, fileUnhealthy} {
		_ = os.Remove(a.c.path(f))
	}
	pid := os.Getpid()
	_ = writeState(a.c, state{Attempt: a.c.Attempt, PID: pid})

	growth := a.c.Behavior.MemoryGrowth > 0 && a.c.Behavior.MemoryLimit > 0
	todo := steps(*p, growth)
	var (
		termC   <-chan time.Time
		memC    <-chan time.Time
		started time.Time
		ignored bool
		// forced: an oom trigger arrived at this time; memory then grows at
		// oomRate on top of the plan's own growth.
		forced time.Time
	)
	for {
		var next <-chan time.Time
		var timer clock.Timer
		if len(todo) > 0 {
			if wait := todo[0].at - a.clk.Since(exec); wait > 0 {
				timer = a.clk.NewTimer(wait)
				next = timer.C()
			} else {
				next = ready
			}
		}
		select {
		case <-next:
			st := todo[0]
			todo = todo[1:]
			switch st.ev {
			case evStart:
				started = a.clk.Now()
				t := a.log.event(evStart, nil, "")
				_ = writeState(a.c, state{Attempt: a.c.Attempt, Start: t, PID: pid})
				if growth {
					tk := a.clk.NewTicker(a.memTick)
					defer tk.Stop()
					memC = tk.C()
				}
			case evStarted:
				touch(a.c.path(fileStarted))
				a.log.event(evStarted, nil, "")
			case evReady:
				touch(a.c.path(fileReady))
				a.log.event(evReady, nil, "")
			case evUnhealthy:
				touch(a.c.path(fileUnhealthy))
				a.log.event(evUnhealthy, nil, "")
			case evExit:
				a.log.event(evExit, codePtr(p.ExitCode), p.Exit.String())
				return int(p.ExitCode)
			}
		case <-sig:
			a.log.event(evSigterm, nil, "")
			switch {
			case termC != nil:
				// already terminating: a second SIGTERM changes nothing
			case p.TermHandling == behavior.Never:
				if !ignored {
					a.log.event(evSigtermIgnored, nil, "")
					ignored = true
				}
			default:
				termC = a.clk.After(p.TermHandling)
			}
		case <-termC:
			a.log.event(evExit, codePtr(p.TermExitCode), "sigterm")
			return int(p.TermExitCode)
		case <-oom:
			if forced.IsZero() {
				forced = a.clk.Now()
				a.log.event(evOOMTrigger, nil, "")
				if memC == nil {
					tk := a.clk.NewTicker(a.memTick)
					defer tk.Stop()
					memC = tk.C()
				}
			}
		case <-memC:
			var want int64
			if growth && !started.IsZero() {
				want = int64(a.c.Behavior.MemoryGrowth * a.clk.Since(started).Seconds())
			}
			if !forced.IsZero() {
				want += int64(oomRate * a.clk.Since(forced).Seconds())
			}
			a.hog.grow(want)
			limit := 2 * a.c.Behavior.MemoryLimit
			if !growth {
				limit = oomCeiling
			}
			if a.hog.size >= limit {
				// No memory limit enforced this: say so, and exit as the
				// OOM killer would have, so a misconfigured run is visible
				// in the log rather than stuck.
				a.log.event(evOOMNotEnforced, nil, "")
				a.log.event(evExit, codePtr(behavior.OOMExitCode), "oom-not-enforced")
				return int(behavior.OOMExitCode)
			}
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

func touch(path string) {
	if f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
		_ = f.Close()
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// hog holds memory that was allocated and written page by page, so that it
// is resident and counts against the container's memory cgroup.
type hog struct {
	chunks [][]byte
	size   int64
}

const (
	pageSize  = 4096
	chunkSize = 4 << 20
)

// grow allocates and touches memory until size reaches want.
func (h *hog) grow(want int64) {
	for h.size < want {
		n := want - h.size
		if n > chunkSize {
			n = chunkSize
		}
		b := make([]byte, n)
		for i := 0; i < len(b); i += pageSize {
			b[i] = 1
		}
		h.chunks = append(h.chunks, b)
		h.size += n
	}
}
