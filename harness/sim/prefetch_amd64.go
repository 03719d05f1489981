package sim

// prefetch asks the CPU to bring the cache line at addr in (PREFETCHT0);
// it never faults.
//
//go:noescape
func prefetch(addr uintptr)
