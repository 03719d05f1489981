package integration

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/sidebench/sidebench/harness/check"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/sim"
)

// benchConfig is the sim issue's reference workload: pods with 1 init
// container, 2 sidecars with startup probes and 1 main, deleted with grace
// after their lifetime, about 10,000 alive at once.
func benchConfig(b *testing.B, faults string) (*sim.Config, uint64) {
	text := fmt.Sprintf(`apiVersion: sidebench.dev/v1alpha1
kind: Scenario
metadata: {name: bench}
seed: 1
policies: [kep753]
cluster: {nodes: 400, podsPerNode: 30}
workloads:
- name: web
  count: 100000
  arrival: {type: poisson, rate: 2000}
  lifetime: uniform(min=4s, max=6s)
%s
faults: %s
trials: 1
`, sidecarPod, faults)
	cfg, t := compileTrial(b, text, "", 0)
	return cfg, t.Seed
}

// BenchmarkSimOnly and BenchmarkSimChecked run the same trial, without and
// with the streaming checker (partitioner + all checkers, 2 workers): the
// difference is what checking costs a run (issue 5: at most +25%).
func BenchmarkSimOnly(b *testing.B) {
	cfg, seed := benchConfig(b, "[]")
	for b.Loop() {
		if _, err := sim.Run(context.Background(), cfg, seed, history.Discard); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e5, "ns/lifecycle")
}

// BenchmarkSimJSONL is a sim run writing its history as JSONL (to
// io.Discard): what `sidebench run` does without checking.
func BenchmarkSimJSONL(b *testing.B) {
	cfg, seed := benchConfig(b, "[]")
	for b.Loop() {
		w := history.NewWriter(io.Discard)
		if _, err := sim.Run(context.Background(), cfg, seed, w); err != nil {
			b.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e5, "ns/lifecycle")
}

func BenchmarkSimChecked(b *testing.B) {
	cfg, seed := benchConfig(b, "[]")
	for b.Loop() {
		runner := check.NewRunner()
		part := history.NewPartitioner(func(meta *history.Meta, pod string, events []history.Event) error {
			runner.Add(meta, pod, events)
			return nil
		})
		async := history.NewAsyncSink(part, 0)
		if _, err := sim.Run(context.Background(), cfg, seed, async); err != nil {
			b.Fatal(err)
		}
		if err := async.Close(); err != nil {
			b.Fatal(err)
		}
		if err := part.Close(); err != nil {
			b.Fatal(err)
		}
		if rep := runner.Close(); rep.Violations() != 0 {
			b.Fatalf("%d violations", rep.Violations())
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e5, "ns/lifecycle")
}
