package arrival

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestProcess(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name  string
		spec  Spec
		count int
		want  []time.Duration
	}{
		{"zero spec: all at 0", Spec{}, 3, []time.Duration{0, 0, 0}},
		{"constant on a grid from start", Spec{Kind: Constant, Rate: 3, Start: time.Second}, 4,
			[]time.Duration{time.Second, 1333333333, 1666666667, 2 * time.Second}},
		{"burst of 2 every 500ms", Spec{Kind: Burst, BurstSize: 2, BurstInterval: 500 * ms}, 5,
			[]time.Duration{0, 0, 500 * ms, 500 * ms, time.Second}},
		{"burst size 0: everything at start", Spec{Kind: Burst, Start: 7 * ms}, 2, []time.Duration{7 * ms, 7 * ms}},
		{"no pods", Spec{Kind: Constant, Rate: 1}, 0, []time.Duration{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := New(tc.spec, tc.count, nil).All(); !slices.Equal(got, tc.want) {
				t.Errorf("All = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPoissonStreams(t *testing.T) {
	spec := Spec{Kind: Poisson, Rate: 4, Start: time.Second}
	a := New(spec, 200, rand.New(rand.NewPCG(1, 2))).All()
	b := New(spec, 200, rand.New(rand.NewPCG(1, 2))).All()
	if !slices.Equal(a, b) {
		t.Fatal("same stream, different arrivals")
	}
	if a[0] != time.Second || !slices.IsSorted(a) {
		t.Fatalf("first %v, sorted %v", a[0], slices.IsSorted(a))
	}
	// Mean gap ≈ 1/rate (250ms): a loose sanity bound on 199 gaps.
	if mean := (a[len(a)-1] - a[0]) / time.Duration(len(a)-1); mean < 150*time.Millisecond || mean > 350*time.Millisecond {
		t.Errorf("mean gap %v, want about 250ms", mean)
	}
	// Peek never consumes, Next batches; Remaining counts down.
	p := New(spec, 2, rand.New(rand.NewPCG(1, 2)))
	if at, ok := p.Peek(); !ok || at != time.Second || p.Remaining() != 2 {
		t.Fatalf("Peek %v %v remaining %d", at, ok, p.Remaining())
	}
	p.Next()
	p.Next()
	if _, _, ok := p.Next(); ok || p.Remaining() != 0 {
		t.Fatal("exhausted process returned more")
	}
}

func TestValidate(t *testing.T) {
	for _, s := range []Spec{{Kind: Constant}, {Kind: Poisson, Rate: -1}, {Kind: Burst, BurstSize: -1}, {Kind: 9}, {Kind: Constant, Rate: 1, Start: -1}} {
		if s.Validate() == nil {
			t.Errorf("%+v validated", s)
		}
	}
	if err := (&Spec{Kind: Poisson, Rate: 0.5}).Validate(); err != nil {
		t.Error(err)
	}
}
