package kubelet

import (
	"reflect"
	"testing"

	"github.com/sidebench/sidebench/reference-impl/api"
)

// TestScratchEqualsOwn: machines sharing one Scratch (pooled and Reset,
// as the sim runs them) behave exactly like machines with their own
// buffers, over the random pods and their kubelet restarts.
func TestScratchEqualsOwn(t *testing.T) {
	var want []string
	for seed := uint64(1); seed <= 100; seed++ {
		out, _ := runRandomPod(seed, api.Gates{})
		want = append(want, out)
	}
	var s Scratch
	var pool []*Machine
	newMachineForTest = func(spec *api.PodSpec, g api.Gates) (*Machine, error) {
		if len(pool) > 0 {
			m := pool[0]
			pool = pool[1:]
			return m, m.Reset(spec, g)
		}
		m, err := s.NewMachine(spec, g)
		pool = append(pool, m)
		return m, err
	}
	defer func() { newMachineForTest = NewMachine }()
	for i, seed := 0, uint64(1); seed <= 100; i, seed = i+1, seed+1 {
		got, _ := runRandomPod(seed, api.Gates{})
		if got != want[i] {
			t.Fatalf("seed %d: a machine sharing a Scratch behaved differently from one with its own buffers", seed)
		}
	}
	if s.holder != nil {
		t.Fatal("the Scratch is still held after every Ready was advanced")
	}
}

// TestInitMachineEqualsNew: machines a host keeps in its own storage
// (Scratch.InitMachine, slots reused pod after pod, as the sim runs them)
// behave exactly like new machines, over the random pods and their kubelet
// restarts; and InitMachine refuses storage of the wrong length.
func TestInitMachineEqualsNew(t *testing.T) {
	var want []string
	for seed := uint64(1); seed <= 100; seed++ {
		out, _ := runRandomPod(seed, api.Gates{})
		want = append(want, out)
	}
	// The host's slots: a machine and storage for up to 8 containers (the
	// random pods have at most 7), reused round robin.
	type slot struct {
		m Machine
		c [8]api.ContainerObs
	}
	var s Scratch
	slots := make([]slot, 3)
	next := 0
	newMachineForTest = func(spec *api.PodSpec, g api.Gates) (*Machine, error) {
		sl := &slots[next%len(slots)]
		next++
		return &sl.m, s.InitMachine(&sl.m, spec, g, sl.c[:spec.Len()])
	}
	defer func() { newMachineForTest = NewMachine }()
	for i, seed := 0, uint64(1); seed <= 100; i, seed = i+1, seed+1 {
		got, _ := runRandomPod(seed, api.Gates{})
		if got != want[i] {
			t.Fatalf("seed %d: a machine in host storage behaved differently from a new one", seed)
		}
	}
	if next < 100 {
		t.Fatalf("only %d machines made: the slots were hardly reused", next)
	}
	if s.holder != nil {
		t.Fatal("the Scratch is still held after every Ready was advanced")
	}
	spec := &api.PodSpec{RestartPolicy: api.RestartAlways, Main: []api.Container{{Name: "a", Image: "a:1", Role: api.RoleMain}}}
	var m Machine
	if err := s.InitMachine(&m, spec, api.Gates{}, make([]api.ContainerObs, 2)); err == nil {
		t.Fatal("InitMachine accepted 2 observed containers for a pod of 1")
	}
}

// TestScratchNeverMixesOutput: a host that steps a second machine before
// advancing the first (outside the contract the sim keeps) still gets
// each machine's own output: the second uses buffers of its own.
func TestScratchNeverMixesOutput(t *testing.T) {
	spec, _ := makeBasePodAndObs()
	collect := func(m *Machine) api.Ready {
		rd := m.Ready()
		rd.Actions = append([]api.Action(nil), rd.Actions...)
		rd.Trace = append([]api.TraceEvent(nil), rd.Trace...)
		return rd
	}
	deleted := api.Input{Kind: api.InDelete, Grace: -1}
	// What machines with their own buffers output.
	own1, _ := NewMachine(spec, api.Gates{})
	own2, _ := NewMachine(spec, api.Gates{})
	if err := own1.Step(0, api.Input{Kind: api.InRelist, Records: make([]api.ContainerRecord, spec.Len())}); err != nil {
		t.Fatal(err)
	}
	if err := own2.Step(5, api.Input{Kind: api.InRelist, Records: make([]api.ContainerRecord, spec.Len())}); err != nil {
		t.Fatal(err)
	}
	if err := own2.Step(6, deleted); err != nil {
		t.Fatal(err)
	}
	want1, want2 := collect(own1), collect(own2)
	if len(want1.Actions)+len(want1.Trace) == 0 || reflect.DeepEqual(want1, want2) {
		t.Fatal("the test needs two machines with different, non-empty output")
	}

	var s Scratch
	// A first machine's output leaves the Scratch with storage to lend.
	m0, _ := s.NewMachine(spec, api.Gates{})
	if err := m0.Step(0, api.Input{Kind: api.InRelist, Records: make([]api.ContainerRecord, spec.Len())}); err != nil {
		t.Fatal(err)
	}
	m0.Advance(m0.Ready())
	if cap(s.actions) == 0 {
		t.Fatal("the Scratch kept no storage")
	}
	m1, _ := s.NewMachine(spec, api.Gates{})
	m2, _ := s.NewMachine(spec, api.Gates{})
	if err := m1.Step(0, api.Input{Kind: api.InRelist, Records: make([]api.ContainerRecord, spec.Len())}); err != nil {
		t.Fatal(err)
	}
	// m1 holds the Scratch's batch; m2 steps before m1 is advanced.
	if err := m2.Step(5, api.Input{Kind: api.InRelist, Records: make([]api.ContainerRecord, spec.Len())}); err != nil {
		t.Fatal(err)
	}
	if err := m2.Step(6, deleted); err != nil {
		t.Fatal(err)
	}
	if got := collect(m1); !reflect.DeepEqual(got, want1) {
		t.Fatalf("first machine's output changed by the second's steps:\n got %+v\nwant %+v", got, want1)
	}
	if got := collect(m2); !reflect.DeepEqual(got, want2) {
		t.Fatalf("second machine's output:\n got %+v\nwant %+v", got, want2)
	}
	m1.Advance(m1.Ready())
	m2.Advance(m2.Ready())
	if s.holder != nil {
		t.Fatal("the Scratch is still held after both were advanced")
	}
}
