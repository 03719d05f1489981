package sim

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/sidebench/sidebench/harness/faults"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/internal/perfstat"
	"github.com/sidebench/sidebench/reference-impl/api"
)

// benchRun runs cfg b.N times and reports full pod lifecycles per second.
func benchRun(b *testing.B, cfg *Config) { benchRunSink(b, cfg, history.Discard) }

func benchRunSink(b *testing.B, cfg *Config, sink history.Sink) {
	b.ReportAllocs()
	var pods, events int
	start, cpu0 := time.Now(), perfstat.CPUTime()
	for i := 0; i < b.N; i++ {
		res, err := Run(context.Background(), cfg, uint64(i+1), sink)
		if err != nil {
			b.Fatal(err)
		}
		pods += res.PodsCompleted
		events += int(res.Events)
	}
	el := time.Since(start).Seconds()
	cpu := (perfstat.CPUTime() - cpu0).Seconds()
	b.ReportMetric(float64(pods)/el, "lifecycles/s")
	if cpu > 0 {
		// Per CPU-second of the whole process (GC included): robust to
		// other processes competing for the cores.
		b.ReportMetric(float64(pods)/cpu, "lifecycles/cpu-s")
	}
	b.ReportMetric(float64(events)/el, "events/s")
	b.ReportMetric(el*1e9/float64(pods), "ns/lifecycle")
}

// BenchmarkLifecycles: 100,000 pod lifecycles at about 10,000 concurrent
// pods (1 init, 2 sidecars with startup probes, 1 main; deleted with grace
// after a 20-40 s lifetime; history discarded).
func BenchmarkLifecycles(b *testing.B) {
	benchRun(b, benchConfig(100_000, 10_000))
}

// BenchmarkLifecyclesJSONL is BenchmarkLifecycles with the history
// encoded as JSONL (history.Writer to io.Discard): the cost of a real run.
func BenchmarkLifecyclesJSONL(b *testing.B) {
	benchRunSink(b, benchConfig(100_000, 10_000), history.NewWriter(io.Discard))
}

// BenchmarkScale: cost per lifecycle at 1k/10k/100k concurrent pods (10
// lifecycles per concurrent slot), to show linear growth.
func BenchmarkScale(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			benchRun(b, benchConfig(3*n, n))
		})
	}
}

// faultLoad adds a mixed fault load to cfg: kubelet crashes, runtime
// restarts, OOM kills, container GC, probe failures and node power-offs
// with return, at rates scaled to the node count.
func faultLoad(cfg *Config) {
	nodes := cfg.Cluster.Nodes
	every := func(d time.Duration) faults.Schedule {
		return faults.Schedule{Kind: faults.Poisson, Rate: float64(nodes) / d.Seconds()}
	}
	cfg.Faults = []faults.Spec{
		{Name: "kubelet", Kind: faults.KubeletCrash, When: every(10 * time.Minute), Downtime: 5 * time.Second},
		{Name: "runtime", Kind: faults.RuntimeRestart, When: every(20 * time.Minute), Downtime: 3 * time.Second},
		{Name: "runtime-kill", Kind: faults.RuntimeRestart, When: every(60 * time.Minute), Downtime: 3 * time.Second, Mode: faults.KillContainers},
		{Name: "gc", Kind: faults.ContainerGC, When: every(5 * time.Minute)},
		{Name: "oom", Kind: faults.OOMKill, When: every(time.Minute), Where: faults.Target{Role: api.RoleSidecar}},
		{Name: "probe", Kind: faults.ProbeFailure, When: faults.Schedule{Kind: faults.OnPhase, Phase: faults.PhaseInitializing, Probability: 0.01}, Probe: api.ProbeStartup, Window: 5 * time.Second, Where: faults.Target{Container: "proxy"}},
		{Name: "poweroff", Kind: faults.NodePoweroff, When: every(2 * time.Hour), Return: true, Downtime: 30 * time.Second},
	}
}

// BenchmarkLifecyclesFaults is BenchmarkLifecycles with the mixed fault
// load on.
func BenchmarkLifecyclesFaults(b *testing.B) {
	cfg := benchConfig(100_000, 10_000)
	faultLoad(cfg)
	benchRun(b, cfg)
}
