package prefetch

// Line asks the CPU to bring the cache line at addr in (PREFETCHT0); it
// never faults, so a stale or wild address only wastes the prefetch.
//
//go:noescape
func Line(addr uintptr)

// Lines prefetches the n cache lines from addr on, in one call (a call
// costs more than the prefetch: one per line was 7% of the sim's CPU).
//
//go:noescape
func Lines(addr uintptr, n int)
