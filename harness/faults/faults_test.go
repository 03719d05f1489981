package faults

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/sidebench/sidebench/reference-impl/api"
)

func world() *World {
	probe := &api.Probe{Period: time.Second, SuccessThreshold: 1, FailureThreshold: 3}
	spec := api.PodSpec{
		Init: []api.Container{{Name: "init", Role: api.RoleInit}, {Name: "proxy", Role: api.RoleSidecar, StartupProbe: probe}},
		Main: []api.Container{{Name: "app", Role: api.RoleMain, LivenessProbe: probe}},
	}
	return &World{Nodes: 4, Workloads: []Workload{WorldOf("web", map[string]string{"tier": "front"}, &spec)}}
}

func TestKindNames(t *testing.T) {
	for _, n := range KindNames() {
		k, ok := ParseKind(n)
		if !ok || k.String() != n {
			t.Errorf("%q round trip: %v %v", n, k, ok)
		}
	}
	if _, ok := ParseKind("nope"); ok {
		t.Error("parsed an unknown kind")
	}
}

func TestValidate(t *testing.T) {
	w := world()
	ok := []Spec{
		{Kind: KubeletCrash, Downtime: time.Second},
		{Kind: KubeletCrash, Downtime: time.Second, When: Schedule{Kind: OnPhase, Phase: PhaseTerminating}, Where: Target{Labels: map[string]string{"tier": "front"}}},
		{Kind: OOMKill, Where: Target{Role: api.RoleSidecar}},
		{Kind: ProbeFailure, Probe: api.ProbeStartup, Window: time.Second, Where: Target{Container: "proxy"}},
		{Kind: NodeShutdown, ShutdownGracePeriod: 30 * time.Second, ShutdownGracePeriodCriticalPods: 10 * time.Second},
		{Kind: ContainerGC, When: Schedule{Kind: Every, Interval: time.Minute, Jitter: time.Second}},
		{Kind: ImageChange, Image: "x:2", Where: Target{Container: "app"}},
	}
	for i, s := range ok {
		if err := s.Validate(i, w); err != nil {
			t.Errorf("valid spec %d: %v", i, err)
		}
	}
	bad := []struct {
		s    Spec
		want string
	}{
		{Spec{Kind: OOMKill, Where: Target{Container: "db"}}, `fault 3 (oom-kill#3): target "container=db": no container`},
		{Spec{Name: "n", Kind: KubeletCrash, Downtime: time.Second, Where: Target{Nodes: []int{4}}}, "fault 3 (n): target \"nodes=[4]\": node index 4 out of range [0,4)"},
		{Spec{Kind: RuntimeRestart}, "downtime must be > 0"},
		{Spec{Kind: NodePoweroff, Return: true}, "return: downtime must be > 0"},
		{Spec{Kind: ProbeFailure, Probe: api.ProbeReadiness, Window: time.Second}, "has a readiness probe"},
		{Spec{Kind: OOMKill, Where: Target{Labels: map[string]string{"tier": "back"}}}, "no workload matches"},
		{Spec{Kind: ImageChange}, "image must be set"},
		{Spec{Kind: KubeletCrash, Downtime: time.Second, When: Schedule{Kind: Every}}, "interval must be > 0"},
		{Spec{Kind: KubeletCrash, Downtime: time.Second, Where: Target{Workload: "web"}}, "need schedule on-phase"},
		{Spec{Kind: NodeShutdown, ShutdownGracePeriod: time.Second, ShutdownGracePeriodCriticalPods: 2 * time.Second}, "shutdownGracePeriodCriticalPods"},
		// Issue 15: a rate so low that a gap overflows a duration fired at
		// once (the gap wrapped negative).
		{Spec{Kind: KubeletCrash, Downtime: time.Second, When: Schedule{Kind: Poisson, Rate: 1e-300}}, "rate 1e-300 per second is too low"},
		{Spec{Kind: KubeletCrash, Downtime: time.Second, When: Schedule{Kind: Poisson, Rate: math.Inf(1)}}, "rate must be a finite number > 0"},
		{Spec{Kind: KubeletCrash, Downtime: time.Second, Where: Target{NodeFraction: math.NaN()}}, "fractions must be in [0,1]"},
	}
	for _, b := range bad {
		err := b.s.Validate(3, w)
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%+v: got %v, want %q", b.s, err, b.want)
		}
	}
	if err := Validate([]Spec{ok[0], bad[0].s}, w); err == nil || !strings.Contains(err.Error(), "fault 1") {
		t.Errorf("Validate list: %v", err)
	}
}

func TestSchedule(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	s := Schedule{Kind: Every, At: time.Second, Interval: 10 * time.Second, Jitter: time.Second, Max: 3}
	t0, ok := s.First(r)
	if !ok || t0 < time.Second || t0 >= 2*time.Second {
		t.Fatalf("first %v", t0)
	}
	t1, ok := s.Next(t0, 1, r)
	if !ok || t1 < 11*time.Second || t1 >= 12*time.Second {
		t.Fatalf("second %v", t1)
	}
	if _, ok := s.Next(t1, 3, r); ok {
		t.Fatal("max not respected")
	}
	p := Schedule{Kind: Poisson, Rate: 10, Until: time.Minute}
	n, at := 0, time.Duration(0)
	for at, ok = p.First(r); ok; at, ok = p.Next(at, n, r) {
		n++
	}
	if n < 450 || n > 750 {
		t.Fatalf("poisson 10/s over a minute fired %d times", n)
	}
	o := Schedule{Kind: OnPhase, Phase: PhaseRunning, Max: 1}
	if !o.Triggers(PhaseRunning, 0, 0, r) || o.Triggers(PhaseRunning, 0, 1, r) || o.Triggers(PhaseTerminating, 0, 0, r) {
		t.Fatal("on-phase triggers")
	}
}

// A Poisson gap never overflows: the largest draw at the lowest valid rate
// stays a positive duration.
func TestPoissonGapSaturates(t *testing.T) {
	s := Schedule{Kind: Poisson, Rate: 1e-300}
	if g := s.exp(maxRand{}); g <= 0 {
		t.Fatalf("gap %v", g)
	}
}

type maxRand struct{}

func (maxRand) Float64() float64 { return 1 - 1.0/(1<<53) }
func (maxRand) IntN(n int) int   { return n - 1 }

// The cost estimate of a scenario counts firings without drawing them.
func TestFiringsAndNodesHit(t *testing.T) {
	for _, tt := range []struct {
		s      Schedule
		length time.Duration
		want   float64
	}{
		{Schedule{Kind: Once, At: time.Second}, time.Hour, 1},
		{Schedule{Kind: Once, At: 2 * time.Hour}, time.Hour, 0},
		{Schedule{Kind: Every, Interval: time.Second}, time.Minute, 61},
		{Schedule{Kind: Every, Interval: time.Nanosecond}, time.Hour, 3.6e12 + 1},
		{Schedule{Kind: Every, Interval: time.Second, Until: 10 * time.Second}, time.Hour, 11},
		{Schedule{Kind: Every, Interval: time.Second, Max: 5}, time.Hour, 5},
		{Schedule{Kind: Poisson, Rate: 1e9}, time.Hour, 3.6e12},
		{Schedule{Kind: OnPhase, Phase: PhaseRunning}, time.Hour, 0},
	} {
		if got := tt.s.Firings(tt.length); got != tt.want {
			t.Errorf("%+v over %v: %g firings, want %g", tt.s, tt.length, got, tt.want)
		}
	}
	for _, tt := range []struct {
		t    Target
		n    int
		want int
	}{{Target{}, 10, 1}, {Target{Nodes: []int{1, 2}}, 10, 2}, {Target{NodeCount: 20}, 10, 10}, {Target{NodeFraction: 0.25}, 10, 3}} {
		if got := tt.t.NodesHit(tt.n); got != tt.want {
			t.Errorf("%+v of %d nodes: %d, want %d", tt.t, tt.n, got, tt.want)
		}
	}
}

func TestSelection(t *testing.T) {
	w := world()
	r := rand.New(rand.NewPCG(3, 4))
	tg := Target{NodeFraction: 0.5}
	if got := tg.PickNodes(4, r); len(got) != 2 || got[0] >= got[1] {
		t.Fatalf("pick nodes %v", got)
	}
	if got := (&Target{Nodes: []int{3, 1}}).PickNodes(4, r); got[0] != 1 || got[1] != 3 {
		t.Fatalf("explicit nodes %v", got)
	}
	tg = Target{Role: api.RoleSidecar}
	if c := tg.PickContainer(&w.Workloads[0], OOMKill, 0, r); c != 1 {
		t.Fatalf("pick sidecar: %d", c)
	}
	tg = Target{}
	if c := tg.PickContainer(&w.Workloads[0], ProbeFailure, api.ProbeLiveness, r); c != 2 {
		t.Fatalf("pick liveness container: %d", c)
	}
	if n := (&Target{PodFraction: 0.25}).PickCount(10); n != 3 {
		t.Fatalf("pick count %d", n)
	}
	s := Sample(100, 10, r)
	if len(s) != 10 {
		t.Fatalf("sample %v", s)
	}
	for i := 1; i < len(s); i++ {
		if s[i] <= s[i-1] {
			t.Fatalf("sample not sorted/distinct: %v", s)
		}
	}
	if b := (&Spec{ShutdownGracePeriod: 30 * time.Second, ShutdownGracePeriodCriticalPods: 10 * time.Second}).BudgetFor(false, time.Minute); b != 20*time.Second {
		t.Fatalf("budget %v", b)
	}
}
