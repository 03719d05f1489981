// Package perfstat measures what a benchmark reports beside wall time: the
// process's CPU time (all threads, the garbage collector included) and its
// peak resident set size. On this project's shared machine CPU time is the
// figure to compare (docs/performance.md); wall time carries the load of
// whatever else runs.
package perfstat

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"time"
)

// CPUTime returns the process's user+system CPU time so far (0 where the
// platform does not say).
func CPUTime() time.Duration { return cpuTime() }

// PeakRSS returns the process's peak resident set size (VmHWM) in bytes,
// or -1 where /proc does not say.
func PeakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Bytes()
		if v, ok := bytes.CutPrefix(line, []byte("VmHWM:")); ok {
			f := bytes.Fields(v)
			if len(f) == 0 {
				return -1
			}
			kb, err := strconv.ParseInt(string(f[0]), 10, 64)
			if err != nil {
				return -1
			}
			return kb << 10
		}
	}
	return -1
}

// ResetPeakRSS starts a new peak (Linux: writing 5 to clear_refs resets
// VmHWM to the current RSS), so that one benchmark's peak is not an
// earlier one's. It reports whether the reset took effect.
func ResetPeakRSS() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}
