package sim

import (
	"unsafe"

	"github.com/sidebench/sidebench/reference-impl/api"
)

// A pod slot holds one pod's hot state in one range of memory: the pod
// (its kubelet machine last), then the machine's observed containers, then
// the pod's containers' sim state, K of each, K the most containers a pod
// of the trial has. Every event reads the pod, most step its machine,
// whose planner reads every observed container, and the event's container.
// Kept apart (the pod in a slice, its containers and its machine in
// objects of their own) they were three cold objects per event at 10,000
// pods and more, each found through a pointer in the one before: the
// prefetch of the next event's state had to load those pointers first,
// dependent loads on lines that might not have arrived (issue 19). In a
// slot every address is computed from the slot number.
//
// Slots are allocated by chunks of slotsPerChunk and never move: the pod's
// containers slice and the machine's observed containers point into the
// slot, and a slot is reused (its storage with it) by the next pod.
type slotStore struct {
	chunks []unsafe.Pointer // each a *[slotsPerChunk]slotBlock[...]
	n      int32            // slots handed out
	k      int              // containers per slot
	// stride is a slot's size; obsOff and csOff the offsets of the
	// observed containers and of the containers in it.
	stride, obsOff, csOff uintptr
	alloc                 func() unsafe.Pointer
}

const (
	slotChunkShift = 6
	slotsPerChunk  = 1 << slotChunkShift
)

// slotBlock is one slot; O and C are arrays of K api.ContainerObs and
// K ctr. (Go has no arrays of a length chosen at run time: newSlotStore
// picks among a few sizes.)
type slotBlock[O, C any] struct {
	p   pod
	obs O
	cs  C
}

// newSlotStore returns the slots for pods of at most k containers (k is at
// most api.MaxContainers; a spec is validated before the engine runs).
func newSlotStore(k int) slotStore {
	type o = api.ContainerObs
	switch {
	case k <= 1:
		return slotStoreOf[[1]o, [1]ctr](1)
	case k <= 2:
		return slotStoreOf[[2]o, [2]ctr](2)
	case k <= 3:
		return slotStoreOf[[3]o, [3]ctr](3)
	case k <= 4:
		return slotStoreOf[[4]o, [4]ctr](4)
	case k <= 5:
		return slotStoreOf[[5]o, [5]ctr](5)
	case k <= 6:
		return slotStoreOf[[6]o, [6]ctr](6)
	case k <= 8:
		return slotStoreOf[[8]o, [8]ctr](8)
	case k <= 12:
		return slotStoreOf[[12]o, [12]ctr](12)
	case k <= 16:
		return slotStoreOf[[16]o, [16]ctr](16)
	case k <= 32:
		return slotStoreOf[[32]o, [32]ctr](32)
	default:
		return slotStoreOf[[api.MaxContainers]o, [api.MaxContainers]ctr](api.MaxContainers)
	}
}

func slotStoreOf[O, C any](k int) slotStore {
	var b slotBlock[O, C]
	return slotStore{
		k:      k,
		stride: unsafe.Sizeof(b),
		obsOff: unsafe.Offsetof(b.obs),
		csOff:  unsafe.Offsetof(b.cs),
		alloc:  func() unsafe.Pointer { return unsafe.Pointer(new([slotsPerChunk]slotBlock[O, C])) },
	}
}

// addr is the address of slot's pod, the start of its slot.
func (s *slotStore) addr(slot int32) unsafe.Pointer {
	return unsafe.Add(s.chunks[slot>>slotChunkShift], uintptr(slot&(slotsPerChunk-1))*s.stride)
}

// pod returns slot's pod; slot must have been handed out by add.
func (s *slotStore) pod(slot int32) *pod { return (*pod)(s.addr(slot)) }

// add hands out a new slot: its pod is zero but for cs, the slot's
// containers with length 0 and capacity K.
func (s *slotStore) add() int32 {
	if int(s.n)>>slotChunkShift == len(s.chunks) {
		s.chunks = append(s.chunks, s.alloc())
	}
	slot := s.n
	s.n++
	p := s.pod(slot)
	p.cs = unsafe.Slice((*ctr)(unsafe.Add(unsafe.Pointer(p), s.csOff)), s.k)[:0]
	return slot
}

// obs returns the first n observed containers of p's slot, the storage of
// its machine.
func (s *slotStore) obs(p *pod, n int) []api.ContainerObs {
	return unsafe.Slice((*api.ContainerObs)(unsafe.Add(unsafe.Pointer(p), s.obsOff)), s.k)[:n]
}
