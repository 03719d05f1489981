package sim

import (
	"context"
	"testing"
	"time"

	"github.com/sidebench/sidebench/harness/behavior"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/internal/perfstat"
)

// envelopeConfig is the Kubernetes scale envelope: 5,000 nodes, 150,000
// pods, 30 pods per node, all pods alive at once at the peak (created
// over 60 s, living 5-10 min).
func envelopeConfig() *Config {
	cfg := benchConfig(150_000, 150_000)
	cfg.Cluster = Cluster{Nodes: 5000, PodsPerNode: 30}
	cfg.Workloads[0].Arrival = Arrival{Kind: ArrivalConstant, Rate: 2500}
	cfg.Workloads[0].Lifetime = behavior.MustParse("uniform(5m, 10m)")
	return cfg
}

// BenchmarkEnvelope runs the scale envelope to completion and reports its
// peak RSS (must stay under 4 GiB) and throughput. Run with
// -benchtime=1x.
func BenchmarkEnvelope(b *testing.B) {
	cfg := envelopeConfig()
	for i := 0; i < b.N; i++ {
		start, cpu0 := time.Now(), perfstat.CPUTime()
		res, err := Run(context.Background(), cfg, uint64(i+1), history.Discard)
		if err != nil {
			b.Fatal(err)
		}
		el := time.Since(start)
		if res.PodsCompleted != 150_000 || res.PeakLivePods < 140_000 {
			b.Fatalf("envelope did not complete: %+v", res)
		}
		rss := perfstat.PeakRSS()
		b.ReportMetric(float64(rss)/(1<<20), "peak-RSS-MiB")
		b.ReportMetric(float64(res.PeakLivePods), "peak-pods")
		b.ReportMetric(float64(res.PodsCompleted)/el.Seconds(), "lifecycles/s")
		if cpu := (perfstat.CPUTime() - cpu0).Seconds(); cpu > 0 {
			b.ReportMetric(float64(res.PodsCompleted)/cpu, "lifecycles/cpu-s")
		}
		b.ReportMetric(float64(res.End)/float64(el), "sim-s/wall-s")
		if rss > 4<<30 {
			b.Fatalf("peak RSS %d MiB exceeds 4 GiB", rss>>20)
		}
	}
}
