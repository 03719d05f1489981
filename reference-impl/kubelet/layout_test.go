package kubelet

import (
	"strconv"
	"testing"
	"unsafe"

	"github.com/sidebench/sidebench/reference-impl/api"
)

// TestMachineStorageInline: a machine of up to eight containers keeps its
// observed containers right after itself, in the same object (the sim
// prefetches the machine and what the planner reads of every container as
// one range), through NewMachine, Scratch.NewMachine and a Reset to a pod
// of no more containers; a bigger pod gets storage of its own, of the
// right length.
func TestMachineStorageInline(t *testing.T) {
	specOf := func(n int) *api.PodSpec {
		s := &api.PodSpec{RestartPolicy: api.RestartAlways}
		for i := range n {
			s.Main = append(s.Main, api.Container{Name: "c" + strconv.Itoa(i), Image: "app:v1", Role: api.RoleMain})
		}
		return s
	}
	inline := func(m *Machine) bool {
		return uintptr(unsafe.Pointer(&m.obs.Containers[0])) == uintptr(unsafe.Pointer(m))+unsafe.Sizeof(*m)
	}
	var s Scratch
	for n := 1; n <= 10; n++ {
		own, err := NewMachine(specOf(n), api.Gates{})
		if err != nil {
			t.Fatal(err)
		}
		shared, err := s.NewMachine(specOf(n), api.Gates{})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range []*Machine{own, shared} {
			if len(m.obs.Containers) != n || len(m.kindList()) != n {
				t.Fatalf("%d containers: %d observed, %d kinds", n, len(m.obs.Containers), len(m.kindList()))
			}
			if got, want := inline(m), n <= 8; got != want {
				t.Errorf("%d containers: observed containers right after the machine = %v, want %v", n, got, want)
			}
		}
		if n > 1 {
			if err := shared.Reset(specOf(n-1), api.Gates{}); err != nil {
				t.Fatal(err)
			}
			if len(shared.obs.Containers) != n-1 || inline(shared) != (n <= 8) {
				t.Errorf("%d containers reset to %d: %d observed, inline %v", n, n-1, len(shared.obs.Containers), inline(shared))
			}
		}
	}
}
