package sim

import (
	"testing"
	"unsafe"

	"github.com/sidebench/sidebench/reference-impl/api"
	"github.com/sidebench/sidebench/reference-impl/kubelet"
)

// TestHotStateSizes guards the size of the per-pod state every event
// touches and the scale envelope keeps 150,000 of (docs/performance.md,
// "Hot state per pod slot"): a field added in the wrong place, or a
// struct reordered with padding, shows here instead of as a slower,
// bigger simulation.
func TestHotStateSizes(t *testing.T) {
	for _, tc := range []struct {
		name      string
		size, max uintptr
	}{
		{"sim pod", unsafe.Sizeof(pod{}), 320},
		{"sim ctr", unsafe.Sizeof(ctr{}), 272},
		{"kubelet.Machine", unsafe.Sizeof(kubelet.Machine{}), 272},
		{"api.ContainerObs", unsafe.Sizeof(api.ContainerObs{}), 200},
		{"api.ContainerRecord", unsafe.Sizeof(api.ContainerRecord{}), 112},
		{"api.PodStatus", unsafe.Sizeof(api.PodStatus{}), 40},
	} {
		if tc.size > tc.max {
			t.Errorf("%s is %d bytes, more than %d: keep hot state packed (fields by size, cold fields out)", tc.name, tc.size, tc.max)
		}
	}
	if s := unsafe.Sizeof(pod{}); s%64 != 0 {
		t.Errorf("sim pod is %d bytes, not a multiple of the 64-byte cache line: pods in e.pods straddle an extra line", s)
	}
}
