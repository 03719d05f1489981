package render

import (
	"github.com/sidebench/sidebench/reports/stats"
	"io"
	"math/rand/v2"
	"testing"
)

// bigRun is a soak checkpoint's RunData at the figures' bounds: three
// policies of 100,000 pod_startup samples, 3,000 fault windows and
// 3,000 findings (the runner's caps), the sample's timelines.
func bigRun(b *testing.B) RunData {
	d := sampleSoak(b)
	rng := rand.New(rand.NewPCG(1, 2))
	d.Policies = []string{"kep753", "kep753-2019", "none"}
	d.Latencies = nil
	for _, p := range d.Policies {
		s := make([]float64, 100_000)
		for i := range s {
			s[i] = 500 + rng.ExpFloat64()*1500
		}
		d.Latencies = append(d.Latencies, Latency{Policy: p, Metric: "pod_startup", Ms: stats.HistOf(s)})
	}
	d.FaultWindows, d.FindingPoints = nil, nil
	for i := range 3000 {
		t := rng.Int64N(600 * sec)
		d.FaultWindows = append(d.FaultWindows, FaultWindow{Policy: d.Policies[i%3], Trial: i / 30, Fault: "kubelet-crash", ID: uint32(i), Node: "node-" + string(rune('0'+i%8)), Begin: t, End: t + 5*sec})
		d.FindingPoints = append(d.FindingPoints, FindingPoint{Policy: d.Policies[i%3], Trial: i / 30, ID: "INV-S3", Class: ClassViolation, Node: "node-" + string(rune('0'+i%8)), T: t + sec})
	}
	return d
}

// BenchmarkWriteHTML measures report.html (every figure) at the figures'
// bounds: what each soak checkpoint pays (docs/performance.md).
func BenchmarkWriteHTML(b *testing.B) {
	d := bigRun(b)
	b.ReportAllocs()
	for b.Loop() {
		if err := WriteHTML(io.Discard, d); err != nil {
			b.Fatal(err)
		}
	}
}
