package sim

import (
	"testing"
	"time"

	"github.com/sidebench/sidebench/harness/behavior"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/reference-impl/api"
)

// TestJobCompletion: restartPolicy Never pods end by themselves when the
// main completes (INV-C1): sidecars are terminated, the phase is
// Succeeded, and the control plane deletes and removes the pod. With an
// API delay and a node too small for all pods at once.
func TestJobCompletion(t *testing.T) {
	cfg := faultConfig(5)
	w := &cfg.Workloads[0]
	w.Spec.RestartPolicy = api.RestartNever
	w.Lifetime = behavior.Dist{}
	w.Behavior[3].Behavior.RunTime = behavior.Fixed(5 * time.Second)
	w.Arrival = Arrival{Kind: ArrivalBurst}
	cfg.Cluster = Cluster{Nodes: 1, PodsPerNode: 2, APIDelay: 100 * time.Millisecond}
	cfg.Stop = Stop{}
	l, res := runFault(t, cfg)
	if res.PodsCompleted != 5 {
		t.Fatalf("result %+v", res)
	}
	if n := len(l.kind(history.PodPhase).filter(func(e *history.Event) bool { return e.Phase == "Succeeded" })); n != 5 {
		t.Errorf("%d pods Succeeded, want 5", n)
	}
	term := l.kind(history.PodTerminating)
	if len(term) != 5 || term[0].Reason != "PodCompleted" {
		t.Errorf("pod.terminating: %v", term)
	}
	// The kubelet sees the binding APIDelay after pod.scheduled.
	s, ph := l.kind(history.PodScheduled).first(), l.kind(history.PodPhase).first()
	if ph.T-s.T != int64(100*time.Millisecond) {
		t.Errorf("scheduled at %d, first phase at %d: want the API delay between", s.T, ph.T)
	}
	// Capacity 2: the third pod is scheduled only after one was removed.
	sch := l.kind(history.PodScheduled)
	rm := l.kind(history.PodRemoved).first()
	if len(sch) != 5 || sch[2].T < rm.T {
		t.Errorf("third pod scheduled at %d, before the first removal at %d", sch[2].T, rm.T)
	}
}

func TestValidateConfig(t *testing.T) {
	cfg := faultConfig(1)
	cfg.Stop = Stop{}
	cfg.Workloads[0].Lifetime = behavior.Dist{}
	if err := cfg.Validate(); err == nil {
		t.Error("a never-ending workload without maxDuration was accepted")
	}
	cfg = faultConfig(1)
	cfg.Workloads[0].Behavior[0].Container = "nope"
	if err := cfg.Validate(); err == nil {
		t.Error("behavior for an unknown container was accepted")
	}
	cfg = faultConfig(1)
	cfg.Cluster.Nodes = 0
	if err := cfg.Validate(); err == nil {
		t.Error("zero nodes accepted")
	}
}

func TestArrivals(t *testing.T) {
	for _, c := range []struct {
		a    Arrival
		want []int64
	}{
		{Arrival{Kind: ArrivalConstant, Rate: 10, Start: time.Second}, []int64{1000, 1100, 1200, 1300, 1400}},
		{Arrival{Kind: ArrivalBurst, BurstSize: 2, BurstInterval: time.Second}, []int64{0, 0, 1000, 1000, 2000}},
		{Arrival{}, []int64{0, 0, 0, 0, 0}},
	} {
		cfg := faultConfig(5)
		cfg.Workloads[0].Arrival = c.a
		l, _ := runFault(t, cfg)
		cr := l.kind(history.PodCreated)
		for i := range cr {
			if got := cr[i].T / int64(time.Millisecond); i >= len(c.want) || got != c.want[i] {
				t.Errorf("%+v: pod %d created at %d ms, want %v", c.a, i, got, c.want)
			}
		}
	}
	// Poisson: about Rate pods per second.
	cfg := faultConfig(2000)
	cfg.Cluster.PodsPerNode = 0
	cfg.Workloads[0].Arrival = Arrival{Kind: ArrivalPoisson, Rate: 100}
	l, _ := runFault(t, cfg)
	cr := l.kind(history.PodCreated)
	if span := time.Duration(cr[len(cr)-1].T - cr[0].T); span < 17*time.Second || span > 23*time.Second {
		t.Errorf("2000 poisson arrivals at 100/s took %v", span)
	}
}
