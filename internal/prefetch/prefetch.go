// Package prefetch issues software prefetches: a hot loop that knows
// which memory its next steps will touch (the sim's next event's pod, a
// partitioner's next event's buffer) starts loading it early, so the
// cache misses overlap the current step's work instead of stalling the
// next one. On other architectures the calls do nothing.
package prefetch

// Range prefetches every cache line of the size bytes at addr.
func Range(addr, size uintptr) {
	Lines(addr&^63, int((addr&63+size+63)/64))
}
