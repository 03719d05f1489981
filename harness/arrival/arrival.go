// Package arrival is the pod arrival process of a workload: when each pod
// of a scenario's workload is created, as offsets from the start of the
// trial. It is the one implementation behind every backend: the sim draws
// its arrivals from it event by event, the apiserver backends (local,
// kube) take the same offsets from harness/trial, so the same seed creates
// the same pods at the same offsets everywhere (the cross-backend
// same-seed contract, tested in harness/trial).
//
// Standard library only; a Process is a value that streams (it never
// materialises the arrivals of a large workload).
package arrival

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Kind names an arrival process.
type Kind uint8

const (
	// Burst creates BurstSize pods every BurstInterval from Start
	// (BurstSize 0: all pods at Start). The zero Spec creates every pod
	// at time 0.
	Burst Kind = iota
	// Constant creates one pod every 1/Rate seconds from Start, on a grid
	// (the n-th pod at Start + round(n/Rate)), so rounding does not drift.
	Constant
	// Poisson creates pods as a Poisson process of Rate per second from
	// Start: the first at Start, then exponential gaps.
	Poisson
)

var kindNames = [...]string{"burst", "constant", "poisson"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// ParseKind is the inverse of Kind.String.
func ParseKind(s string) (Kind, bool) {
	for i, n := range kindNames {
		if n == s {
			return Kind(i), true
		}
	}
	return 0, false
}

// Spec is an arrival process.
type Spec struct {
	Kind  Kind
	Start time.Duration
	// Rate is pods per second (Constant, Poisson).
	Rate float64
	// BurstSize and BurstInterval shape Burst.
	BurstSize     int
	BurstInterval time.Duration
}

// Validate reports a spec that cannot produce arrivals.
func (s *Spec) Validate() error {
	switch s.Kind {
	case Constant, Poisson:
		if !(s.Rate > 0) || math.IsInf(s.Rate, 0) {
			return fmt.Errorf("arrival %s: rate must be a positive finite number, got %v", s.Kind, s.Rate)
		}
	case Burst:
		if s.BurstSize < 0 || s.BurstInterval < 0 {
			return fmt.Errorf("arrival burst: size and interval must be >= 0")
		}
	default:
		return fmt.Errorf("arrival: unknown kind %d", s.Kind)
	}
	if s.Start < 0 {
		return fmt.Errorf("arrival: start must be >= 0")
	}
	return nil
}

// Process streams the creation times of count pods. The zero Process is
// exhausted.
type Process struct {
	spec    Spec
	count   int
	created int
	next    time.Duration
	rng     *rand.Rand
}

// New returns the process of count pods following spec. rng is the
// workload's own stream (behavior.ArrivalKey); only Poisson draws from it.
func New(spec Spec, count int, rng *rand.Rand) Process {
	return Process{spec: spec, count: count, next: spec.Start, rng: rng}
}

// Remaining is the number of pods not yet returned by Next.
func (p *Process) Remaining() int { return p.count - p.created }

// Peek returns the offset of the next batch without taking it.
func (p *Process) Peek() (at time.Duration, ok bool) {
	return p.next, p.created < p.count
}

// Next returns the offset of the next batch of creations and its size
// (1 except for bursts); ok is false once every pod was returned. Offsets
// never decrease.
func (p *Process) Next() (at time.Duration, n int, ok bool) {
	if p.created >= p.count {
		return 0, 0, false
	}
	at = p.next
	n = 1
	if p.spec.Kind == Burst {
		n = p.spec.BurstSize
		if n <= 0 {
			n = p.count
		}
		n = min(n, p.count-p.created)
	}
	p.created += n
	switch p.spec.Kind {
	case Burst:
		p.next = at + p.spec.BurstInterval
	case Constant:
		p.next = p.spec.Start + time.Duration(math.Round(float64(p.created)*float64(time.Second)/p.spec.Rate))
	case Poisson:
		if p.created < p.count {
			u := p.rng.Float64()
			p.next = at + time.Duration(-math.Log1p(-u)/p.spec.Rate*float64(time.Second))
		}
	}
	if p.next < at { // overflow of an absurd rate or interval: never go back
		p.next = at
	}
	return at, n, true
}

// All returns every offset (one per pod). For the apiserver backends,
// whose workloads are small; the sim streams with Next.
func (p Process) All() []time.Duration {
	out := make([]time.Duration, 0, p.count)
	for {
		at, n, ok := p.Next()
		if !ok {
			return out
		}
		for range n {
			out = append(out, at)
		}
	}
}
