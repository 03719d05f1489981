package sim

// prefetch asks the CPU to bring the cache line at addr in (PREFETCHT0);
// it never faults.
//
//go:noescape
func prefetch(addr uintptr)

// prefetchLines prefetches the n cache lines from addr on, in one call
// (a call costs more than the prefetch: one per line was 7% of the CPU).
//
//go:noescape
func prefetchLines(addr uintptr, n int)
