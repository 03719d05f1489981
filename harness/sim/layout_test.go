package sim

import (
	"reflect"
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
		{"sim pod (its machine included)", unsafe.Sizeof(pod{}), 624},
		{"sim ctr", unsafe.Sizeof(ctr{}), 272},
		{"kubelet.Machine", unsafe.Sizeof(kubelet.Machine{}), 312},
		{"api.ContainerObs", unsafe.Sizeof(api.ContainerObs{}), 200},
		{"api.ContainerRecord", unsafe.Sizeof(api.ContainerRecord{}), 112},
		{"api.PodStatus", unsafe.Sizeof(api.PodStatus{}), 40},
		{"the slot of a 4-container pod", newSlotStore(4).stride, 2512},
	} {
		if tc.size > tc.max {
			t.Errorf("%s is %d bytes, more than %d: keep hot state packed (fields by size, cold fields out)", tc.name, tc.size, tc.max)
		}
	}
}

// TestSlotLayout: in a slot the pod's machine is followed by its observed
// containers with nothing between (prefetchNext loads them as one range),
// and every slot hands out storage of its own.
func TestSlotLayout(t *testing.T) {
	if off := unsafe.Offsetof(pod{}.m) + unsafe.Sizeof(kubelet.Machine{}); off != unsafe.Sizeof(pod{}) {
		t.Errorf("pod.m ends at %d, the pod at %d: the machine must be the pod's last field", off, unsafe.Sizeof(pod{}))
	}
	for _, k := range []int{1, 3, 4, 7, 9, 40, api.MaxContainers} {
		s := newSlotStore(k)
		if s.k < k {
			t.Fatalf("k=%d: slots of %d containers", k, s.k)
		}
		if s.obsOff != unsafe.Sizeof(pod{}) {
			t.Errorf("k=%d: observed containers at %d, the pod ends at %d", k, s.obsOff, unsafe.Sizeof(pod{}))
		}
		seen := map[uintptr]bool{}
		for range 2*slotsPerChunk + 1 {
			p := s.pod(s.add())
			if len(p.cs) != 0 || cap(p.cs) != s.k {
				t.Fatalf("k=%d: a new slot's containers have length %d, capacity %d", k, len(p.cs), cap(p.cs))
			}
			o := s.obs(p, k)
			for _, a := range []uintptr{uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(&p.cs[:1][0])), uintptr(unsafe.Pointer(&o[0]))} {
				if seen[a] {
					t.Fatalf("k=%d: two slots share storage at %#x", k, a)
				}
				seen[a] = true
			}
			if end := uintptr(unsafe.Pointer(&p.cs[:s.k][s.k-1])) + unsafe.Sizeof(ctr{}); end > uintptr(unsafe.Pointer(p))+s.stride {
				t.Fatalf("k=%d: the containers end past the slot", k)
			}
		}
	}
}

// TestEventInRegisters: the queue's event stays a struct the compiler keeps
// in registers and copies by words (at most four fields, each at most 8
// bytes, 32 bytes in all; the event type's comment says why).
func TestEventInRegisters(t *testing.T) {
	typ := reflect.TypeOf(event{})
	if typ.Size() != 32 || typ.NumField() > 4 {
		t.Fatalf("event is %d bytes in %d fields: keep it 32 bytes in at most four fields", typ.Size(), typ.NumField())
	}
	for i := range typ.NumField() {
		if f := typ.Field(i); f.Type.Size() != 8 || f.Offset%8 != 0 {
			t.Errorf("event.%s is %d bytes at offset %d: each field (or embedded group) must be one aligned 8-byte word", f.Name, f.Type.Size(), f.Offset)
		}
	}
}
