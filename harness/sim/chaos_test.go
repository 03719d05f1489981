package sim

import (
	"testing"
	"time"

	"github.com/sidebench/sidebench/harness/faults"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/reference-impl/api"
)

// TestChaos runs every fault kind at high rates together on a small
// cluster, for a few seeds: the run completes, every pod is removed, every
// kind takes effect at least once, initialization order holds in every
// sandbox, and the run is deterministic.
func TestChaos(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		cfg := benchConfig(400, 100)
		cfg.Workloads[0].Spec.Main[0].LivenessProbe = &api.Probe{Period: time.Second, SuccessThreshold: 1, FailureThreshold: 2}
		cfg.Workloads[0].Spec.Init[1].ReadinessProbe = &api.Probe{Period: time.Second, SuccessThreshold: 1, FailureThreshold: 2}
		poisson := func(perMin float64) faults.Schedule { return faults.Schedule{Kind: faults.Poisson, Rate: perMin / 60} }
		cfg.Faults = []faults.Spec{
			{Kind: faults.KubeletCrash, When: poisson(2), Downtime: 5 * time.Second, RecoveryCrash: true},
			{Kind: faults.KubeletCrash, When: faults.Schedule{Kind: faults.OnPhase, Phase: faults.PhaseTerminating, Probability: 0.05, Delay: 100 * time.Millisecond}, Downtime: 2 * time.Second},
			{Kind: faults.RuntimeRestart, When: poisson(2), Downtime: 3 * time.Second},
			{Kind: faults.RuntimeRestart, When: poisson(1), Downtime: 3 * time.Second, Mode: faults.KillContainers},
			{Kind: faults.OOMKill, When: poisson(10), Where: faults.Target{PodCount: 2}},
			{Kind: faults.NodeShutdown, When: poisson(2), ShutdownGracePeriod: 10 * time.Second, ShutdownGracePeriodCriticalPods: 2 * time.Second, Return: true, Downtime: 10 * time.Second},
			{Kind: faults.NodePoweroff, When: poisson(0.5), Return: true, Downtime: 5 * time.Second},
			{Kind: faults.ContainerGC, When: poisson(5), AllExited: true},
			{Kind: faults.ProbeFailure, Probe: api.ProbeStartup, Window: 5 * time.Second, Where: faults.Target{Container: "proxy"}, When: faults.Schedule{Kind: faults.OnPhase, Phase: faults.PhaseInitializing, Probability: 0.1, Delay: 200 * time.Millisecond}},
			{Kind: faults.ProbeFailure, Probe: api.ProbeLiveness, Window: 4 * time.Second, Where: faults.Target{Container: "app"}, When: poisson(5)},
			{Kind: faults.ProbeFailure, Probe: api.ProbeReadiness, Window: 4 * time.Second, Where: faults.Target{Container: "proxy"}, When: poisson(5)},
			{Kind: faults.ImageChange, Image: "envoy:v2", Where: faults.Target{Container: "proxy", PodFraction: 0.1}, When: faults.Schedule{Kind: faults.Every, At: time.Minute, Interval: time.Minute}},
			// Issue 16 D: the new vocabulary, some at exact times after a
			// container event.
			{Kind: faults.ImagePullFailure, Window: 15 * time.Second, Where: faults.Target{Container: "proxy"}, When: faults.Schedule{Kind: faults.OnPhase, Phase: faults.PhaseInitializing, Probability: 0.1}},
			{Kind: faults.ContainerKill, Where: faults.Target{PodCount: 1}, When: poisson(5)},
			{Kind: faults.ContainerKill, Signal: faults.SIGTERM, Where: faults.Target{Container: "app"}, When: faults.Schedule{Kind: faults.OnContainer, Container: "proxy", Event: faults.EventStarted, Delay: 200 * time.Millisecond, Probability: 0.1}},
			{Kind: faults.ContainerUnknown, Where: faults.Target{PodCount: 1}, When: poisson(3)},
			{Kind: faults.Resize, Resources: faults.ResourcePatch{CPURequest: ptr(int64(300))}, Where: faults.Target{Container: "app"}, When: poisson(5)},
		}
		cfg.Stop.MaxDuration = time.Hour
		s, res := runMem(t, cfg, seed)
		if res.Partial || res.PodsRemoved != res.PodsCreated || res.PodsCreated != 400 {
			t.Fatalf("seed %d: %+v", seed, res)
		}
		effects := map[string]int{}
		for _, e := range evs(s.evs).kind(history.FaultEffect) {
			effects[e.Fault]++
		}
		for _, k := range faults.KindNames() {
			if effects[k] == 0 {
				t.Errorf("seed %d: no %s took effect (%v)", seed, k, effects)
			}
		}
		l := evs(s.evs)
		if b, e := len(l.kind(history.FaultBegin)), len(l.kind(history.FaultEnd)); b != e {
			t.Errorf("seed %d: %d fault.begin, %d fault.end", seed, b, e)
		}
		o := &orderSink{pods: map[string]*podOrder{}, noStopOrder: true}
		for i := range s.evs {
			o.Write(&s.evs[i])
		}
		for _, e := range o.errs {
			t.Errorf("seed %d: %s", seed, e)
		}
		b1, _ := encode(t, cfg, seed)
		b2, _ := encode(t, cfg, seed)
		if string(b1) != string(b2) {
			t.Errorf("seed %d: not deterministic under chaos", seed)
		}
		t.Logf("seed %d: %+v effects %v", seed, res, effects)
	}
}

func ptr[T any](v T) *T { return &v }
