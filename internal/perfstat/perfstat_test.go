package perfstat

import (
	"runtime"
	"runtime/debug"
	"testing"
)

var sink []byte

// TestPeakRSSFollowsAllocation: touching 64 MiB raises the peak by about
// that much, and a reset brings it back down.
func TestPeakRSSFollowsAllocation(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("VmHWM is Linux's")
	}
	before := PeakRSS()
	if before <= 0 {
		t.Fatalf("PeakRSS = %d", before)
	}
	sink = make([]byte, 64<<20)
	for i := range sink {
		sink[i] = 1
	}
	after := PeakRSS()
	if after-before < 48<<20 {
		t.Fatalf("peak grew by %d bytes after touching 64 MiB", after-before)
	}
	sink = nil
	runtime.GC()
	debug.FreeOSMemory()
	if !ResetPeakRSS() {
		t.Skip("clear_refs not writable here")
	}
	if reset := PeakRSS(); reset >= after {
		t.Fatalf("peak %d after reset, %d before", reset, after)
	}
}

// TestCPUTimeAdvances: spinning consumes CPU time.
func TestCPUTimeAdvances(t *testing.T) {
	t0 := CPUTime()
	if t0 == 0 && runtime.GOOS != "linux" {
		t.Skip("no CPU time on this platform")
	}
	x := 0
	for CPUTime()-t0 < 20e6 {
		for i := 0; i < 1e5; i++ {
			x += i
		}
	}
	_ = x
}
