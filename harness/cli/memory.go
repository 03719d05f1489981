package cli

import (
	"fmt"
	"math"
	"os"
	"runtime/debug"

	"github.com/sidebench/sidebench/harness/scenario"
	"github.com/sidebench/sidebench/internal/memlimit"
)

// The memory budget of run, soak and validate (docs/performance.md,
// "Memory budget"): a scenario's memory estimate must fit it, and run
// and soak set the Go runtime's soft memory limit from it, as
// automemlimit and Prometheus do. With the default GOGC=100 the heap
// grows to twice the live heap before the collector runs: the envelope's
// 650 MB of live heap took 1.4 GiB, and a process in a container with a
// memory limit (the nightly soak's pod, deploy/) is OOM-killed long
// before the collector would have needed to run.

const maxMemoryUsage = "memory budget, e.g. 1GiB: a scenario's estimate must fit it, and the Go soft memory limit is 90% of it (default: the machine's memory; the limit: GOMEMLIMIT, else 90% of the cgroup's memory limit)"

// memoryEnv is where the soft memory limit comes from and goes to:
// the process's environment, cgroup and runtime outside tests. Its zero
// value has no environment, no cgroup and leaves the runtime alone.
type memoryEnv struct {
	getenv func(string) string
	// cgroupLimit is the memory limit of the process's cgroup, 0 if none.
	cgroupLimit func() (int64, error)
	// setLimit is debug.SetMemoryLimit: it sets the limit (< 0: leaves
	// it) and returns the previous one.
	setLimit func(int64) int64
}

func processMemory() memoryEnv {
	return memoryEnv{
		getenv:      os.Getenv,
		cgroupLimit: func() (int64, error) { return memlimit.CgroupLimit(os.DirFS("/")) },
		setLimit:    debug.SetMemoryLimit,
	}
}

func (m memoryEnv) env(key string) string {
	if m.getenv == nil {
		return ""
	}
	return m.getenv(key)
}

func (m memoryEnv) cgroup() (int64, error) {
	if m.cgroupLimit == nil {
		return 0, nil
	}
	return m.cgroupLimit()
}

func (m memoryEnv) set(limit int64) int64 {
	if m.setLimit == nil {
		return math.MaxInt64 // the runtime's "no limit"
	}
	return m.setLimit(limit)
}

// softLimit is the Go soft memory limit a run sets, and where it comes
// from.
type softLimit struct {
	bytes  int64 // 0: leave the runtime's (GOMEMLIMIT, or none)
	source string
}

// memoryBudget resolves --max-memory (maxMemory, "" if not given): the
// budget a scenario's estimate must fit and the soft limit run and soak
// set. The limit is 90% of --max-memory if given; else none if
// GOMEMLIMIT is set (the runtime has read it); else 90% of the cgroup's
// memory limit, if there is one. The rest of the budget is headroom for
// what the runtime does not count. The budget is --max-memory, else the
// machine's memory (scenario.DefaultBudget); its estimate drops the
// collector's headroom when the runtime's limit holds the heap within it
// (scenario.Budget.SoftLimit).
func memoryBudget(maxMemory string, parallel int, mem memoryEnv) (scenario.Budget, softLimit, error) {
	b := scenario.DefaultBudget()
	b.Parallel = parallel
	var lim softLimit
	switch {
	case maxMemory != "":
		n, err := scenario.ParseBytes(maxMemory)
		if err != nil {
			return b, lim, usageErr("--max-memory: %v", err)
		}
		b.Bytes, b.Source = n, "--max-memory"
		lim = softLimit{memlimit.SoftLimit(n), "--max-memory"}
	case mem.env("GOMEMLIMIT") != "":
	default:
		if c, err := mem.cgroup(); err == nil && c > 0 {
			lim = softLimit{memlimit.SoftLimit(c), "the cgroup's memory limit"}
		}
	}
	limit := lim.bytes
	if limit == 0 {
		limit = mem.set(-1)
	}
	b.SoftLimit = b.Bytes > 0 && limit <= b.Bytes
	return b, lim, nil
}

// checkBudget refuses, before anything runs, a scenario whose estimated
// memory does not fit the budget (memoryBudget): every file is reported,
// then exit 2. If they fit, it sets the Go runtime's soft memory limit.
// soak --resume calls it with no scenario.
func (f *runFlags) checkBudget(streams IOStreams, mem memoryEnv, scens []*scenario.Scenario) error {
	b, lim, err := memoryBudget(f.maxMemory, f.parallel, mem)
	if err != nil {
		return err
	}
	bad := false
	for _, s := range scens {
		if err := s.CheckBudget(b); err != nil {
			fmt.Fprintln(streams.ErrOut, err)
			bad = true
		}
	}
	if bad {
		return silent(ExitUsage)
	}
	if lim.bytes > 0 {
		mem.set(lim.bytes)
		if !f.quiet && lim.source != "--max-memory" {
			fmt.Fprintf(streams.ErrOut, "sidebench: Go soft memory limit %s (%.0f%% of %s; set another with --max-memory or GOMEMLIMIT)\n",
				scenario.FormatBytes(lim.bytes), 100*memlimit.LimitFraction, lim.source)
		}
	}
	return nil
}
