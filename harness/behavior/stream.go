package behavior

import "math/rand/v2"

// StreamKey identifies one independent random stream: a trial seed mixed
// with any number of keys (pod, container, attempt...). Streams are derived
// by hashing, not by drawing from a parent RNG, so adding a pod or a
// container leaves every other stream's draws unchanged, and the same seed
// and keys always give the same draws.
//
// The derivation (FNV-1a over each key's length and bytes, SplitMix64
// finalisation between keys) is part of the reproducibility contract:
// changing it changes every simulated history. TestStreamGolden pins it.
//
// StreamKey is a value; building one does not allocate:
//
//	r := behavior.Seed(trial).Str(pod).Str(container).Uint(uint64(attempt)).Rand()
type StreamKey struct{ h uint64 }

// Seed starts a key from a trial seed.
func Seed(seed uint64) StreamKey { return StreamKey{mix64(seed ^ fnvOffset)} }

// Str mixes a string key in. Its length is hashed too, so ("ab", "c") and
// ("a", "bc") differ.
func (k StreamKey) Str(s string) StreamKey {
	h := k.h ^ 0x01
	for i := 0; i < 8; i++ {
		h = fnvByte(h, byte(uint64(len(s))>>(8*i)))
	}
	for i := 0; i < len(s); i++ {
		h = fnvByte(h, s[i])
	}
	return StreamKey{mix64(h)}
}

// Uint mixes an integer key in (an attempt number, a node index).
func (k StreamKey) Uint(v uint64) StreamKey {
	h := k.h ^ 0x02
	for i := 0; i < 8; i++ {
		h = fnvByte(h, byte(v>>(8*i)))
	}
	return StreamKey{mix64(h)}
}

// PCGSeed returns the two PCG seed words of the stream.
func (k StreamKey) PCGSeed() (uint64, uint64) {
	return mix64(k.h ^ 0x9e3779b97f4a7c15), mix64(k.h ^ 0xd1b54a32d192ed03)
}

// Rand returns a new RNG for the stream.
func (k StreamKey) Rand() *rand.Rand {
	s1, s2 := k.PCGSeed()
	return rand.New(rand.NewPCG(s1, s2))
}

// Reseed points an existing PCG at the stream, for hot paths that reuse
// one RNG instead of allocating per attempt:
//
//	var pcg rand.PCG; r := rand.New(&pcg) // once
//	key.Reseed(&pcg); plan := c.Draw(r)    // per attempt, no allocation
func (k StreamKey) Reseed(p *rand.PCG) { p.Seed(k.PCGSeed()) }

// NewStream is Seed(seed).Str(keys[0]).Str(keys[1])....Rand().
func NewStream(seed uint64, keys ...string) *rand.Rand {
	k := Seed(seed)
	for _, s := range keys {
		k = k.Str(s)
	}
	return k.Rand()
}

// The named streams of a trial. Every backend derives its draws from
// these keys and no other, so that the same seed gives the same workload,
// arrivals, lifetimes and fault schedule on sim and on real kubelets (the
// cross-backend same-seed contract, tested in harness/trial). Changing a
// key changes every history: TestStreamGolden pins them.

// ContainerKey is the stream of one container attempt's behaviour.
func ContainerKey(seed uint64, pod, container string, attempt uint32) StreamKey {
	return PodKey(seed, pod).Container(container, attempt)
}

// PodKey is what a pod's streams (its containers' attempts, its lifetime)
// have in common: a host drawing many of them computes it once per pod.
func PodKey(seed uint64, pod string) StreamKey { return Seed(seed).Str(pod) }

// Container is ContainerKey from the pod's PodKey.
func (k StreamKey) Container(container string, attempt uint32) StreamKey {
	return k.Str(container).Uint(uint64(attempt))
}

// Lifetime is LifetimeKey from the pod's PodKey.
func (k StreamKey) Lifetime() StreamKey { return k.Str("lifetime") }

// ArrivalKey is the stream of a workload's arrival process.
func ArrivalKey(seed uint64, workload string) StreamKey {
	return Seed(seed).Str("arrival").Str(workload)
}

// LifetimeKey is the stream of a pod's lifetime (creation to deletion).
func LifetimeKey(seed uint64, pod string) StreamKey {
	return PodKey(seed, pod).Lifetime()
}

// FaultKey is the stream of the firing times of the fault at position
// index of a scenario (label is its name).
func FaultKey(seed uint64, label string, index int) StreamKey {
	return Seed(seed).Str("fault").Str(label).Uint(uint64(index))
}

// FaultTargetKey is the stream of the fault's target picks. It is apart
// from FaultKey so that the firing times do not depend on how many draws a
// backend's picks took (a real cluster has other pods to pick from at a
// given instant than the sim).
func FaultTargetKey(seed uint64, label string, index int) StreamKey {
	return FaultKey(seed, label, index).Str("targets")
}

const (
	fnvOffset = 0xcbf29ce484222325
	fnvPrime  = 0x100000001b3
)

func fnvByte(h uint64, b byte) uint64 { return (h ^ uint64(b)) * fnvPrime }

// mix64 is the SplitMix64 finaliser: FNV-1a alone diffuses poorly into the
// high bits, and PCG seeds want every bit to depend on every key byte.
func mix64(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
