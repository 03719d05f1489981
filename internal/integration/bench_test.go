package integration

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/sidebench/sidebench/harness/check"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/metrics"
	"github.com/sidebench/sidebench/harness/sim"
	"github.com/sidebench/sidebench/internal/perfstat"
)

// benchConfig is the sim issue's reference workload: pods with 1 init
// container, 2 sidecars with startup probes and 1 main, deleted with grace
// after their lifetime, about 10,000 alive at once.
func benchConfig(b testing.TB, faults string) (*sim.Config, uint64) {
	text := oneWorkload{name: "bench", seed: 1, nodes: 400, perNode: 30, count: 100000,
		arrival: "{type: poisson, rate: 2000}", lifetime: "uniform(min=4s, max=6s)", pod: sidecarPod, faults: faults}.text()
	cfg, t := compileTrial(b, text, "", 0)
	return cfg, t.Seed
}

// benchLifecycles is the number of lifecycles of benchConfig's trial.
const benchLifecycles = 1e5

// cpuPerLifecycle reports the CPU time per lifecycle since cpu0 (the
// figure to compare on a shared machine) beside the wall time.
func cpuPerLifecycle(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchLifecycles, "ns/lifecycle")
	b.ReportMetric(float64((perfstat.CPUTime()-cpu0).Nanoseconds())/float64(b.N)/benchLifecycles, "cpu-ns/lifecycle")
}

// BenchmarkSimOnly and BenchmarkSimChecked run the same trial, without and
// with the streaming checker (partitioner + all checkers, 2 workers): the
// difference is what checking costs a run (issue 5: at most +25%; issue
// 19: at most +10% CPU). BenchmarkCheckingCost measures that difference
// directly.
func BenchmarkSimOnly(b *testing.B) {
	cfg, seed := benchConfig(b, "[]")
	cpu0 := perfstat.CPUTime()
	for b.Loop() {
		if _, err := sim.Run(context.Background(), cfg, seed, history.Discard); err != nil {
			b.Fatal(err)
		}
	}
	cpuPerLifecycle(b, cpu0)
}

// BenchmarkSimJSONL is a sim run writing its history as JSONL (to
// io.Discard): what `sidebench run` does without checking.
func BenchmarkSimJSONL(b *testing.B) {
	cfg, seed := benchConfig(b, "[]")
	cpu0 := perfstat.CPUTime()
	for b.Loop() {
		w := history.NewWriter(io.Discard)
		if _, err := sim.Run(context.Background(), cfg, seed, w); err != nil {
			b.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
	}
	cpuPerLifecycle(b, cpu0)
}

func BenchmarkSimChecked(b *testing.B) {
	cfg, seed := benchConfig(b, "[]")
	cpu0 := perfstat.CPUTime()
	for b.Loop() {
		runChecked(b, cfg, seed, runtime.GOMAXPROCS(0))
	}
	cpuPerLifecycle(b, cpu0)
}

// runChecked runs a trial with the streaming checker, as `sidebench run`
// checks a pipelined trial that keeps no whole history (harness/runner
// runTrial; soak's default): the sim's events handed to another goroutine
// in batches, partitioned per pod, every checker on every pod (workers
// checker goroutines; 1: on the partitioning goroutine, as the runner
// does on two cores). workers 0 is a trial that is not pipelined (the
// runner's when parallel trials fill the cores): partitioning (with the
// sim's prefetch hints) and checking on the sim's goroutine. A trial that
// keeps its whole history files on the sim's goroutine and checks on
// another (history.PodWorker): BenchmarkRunCertify measures that one.
func runChecked(b *testing.B, cfg *sim.Config, seed uint64, workers int) {
	runner := check.NewRunner(check.Workers(max(workers, 1)))
	part := history.NewPartitioner(func(meta *history.Meta, pod string, events []history.Event) error {
		runner.Add(meta, pod, events)
		return nil
	})
	var sink history.Sink = part
	var async *history.AsyncSink
	if workers > 0 {
		async = history.NewAsyncSink(part, 0)
		sink = async
	}
	if _, err := sim.Run(context.Background(), cfg, seed, sink); err != nil {
		b.Fatal(err)
	}
	if async != nil {
		if err := async.Close(); err != nil {
			b.Fatal(err)
		}
	}
	if err := part.Close(); err != nil {
		b.Fatal(err)
	}
	if rep := runner.Close(); rep.Violations() != 0 {
		b.Fatalf("%d violations", rep.Violations())
	}
}

// BenchmarkCheckingCost is what checking adds to a sim trial, in CPU time
// (issue 19's goal: at most +10%) and in wall time: each iteration runs
// the trial alone (history discarded) and then checked, and the figures
// are the ratios of the sums. On two cores the wall-time overhead is
// smaller than the CPU overhead, since the checker runs beside the sim.
func BenchmarkCheckingCost(b *testing.B) {
	for _, tc := range []struct{ name, faults string }{{"faults=none", "[]"}, {"faults=mixed", mixedFaults}} {
		// workers=1 is what the runner gives a trial on two cores (the
		// checking synchronous in the partitioning goroutine); more
		// workers hand pods to checker goroutines; serial is a trial
		// that is not pipelined (no hand-off between goroutines).
		for _, workers := range []int{0, 1, runtime.GOMAXPROCS(0)} {
			name := fmt.Sprintf("%s/workers=%d", tc.name, workers)
			if workers == 0 {
				name = tc.name + "/serial"
			}
			b.Run(name, func(b *testing.B) {
				cfg, seed := benchConfig(b, tc.faults)
				var simCPU, chkCPU, simWall, chkWall time.Duration
				for b.Loop() {
					t0, c0 := time.Now(), perfstat.CPUTime()
					if _, err := sim.Run(context.Background(), cfg, seed, history.Discard); err != nil {
						b.Fatal(err)
					}
					t1, c1 := time.Now(), perfstat.CPUTime()
					runChecked(b, cfg, seed, workers)
					t2, c2 := time.Now(), perfstat.CPUTime()
					simCPU += c1 - c0
					chkCPU += c2 - c1
					simWall += t1.Sub(t0)
					chkWall += t2.Sub(t1)
				}
				b.ReportMetric(100*(chkCPU.Seconds()/simCPU.Seconds()-1), "check-cpu-%")
				b.ReportMetric(100*(chkWall.Seconds()/simWall.Seconds()-1), "check-wall-%")
				b.ReportMetric(float64(simCPU.Nanoseconds())/float64(b.N)/benchLifecycles, "sim-cpu-ns/lifecycle")
				b.ReportMetric(float64(chkCPU.Nanoseconds())/float64(b.N)/benchLifecycles, "checked-cpu-ns/lifecycle")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

// BenchmarkCheckingStages splits what checking costs a trial on one
// goroutine (mixed faults), in CPU time per lifecycle: the sim alone
// (history discarded), the sim with its events filed per pod and each
// finished pod's history assembled (the partitioner, delivering to a
// function that does nothing), and with every checker on every pod. The
// differences are what partitioning, and then the checkers, add: session
// 15 found the partitioner, not the checkers, most of the cost.
func BenchmarkCheckingStages(b *testing.B) {
	cfg, seed := benchConfig(b, mixedFaults)
	for _, st := range []struct {
		name string
		sink func() (history.Sink, func() error)
	}{
		{"sim", func() (history.Sink, func() error) { return history.Discard, func() error { return nil } }},
		{"sim+partition", func() (history.Sink, func() error) {
			p := history.NewPartitioner(func(*history.Meta, string, []history.Event) error { return nil })
			return p, p.Close
		}},
		{"sim+partition+check", func() (history.Sink, func() error) {
			cr := check.NewRunner(check.Workers(1))
			p := history.NewPartitioner(func(m *history.Meta, pod string, evs []history.Event) error {
				cr.Add(m, pod, evs)
				return nil
			})
			return p, func() error {
				err := p.Close()
				if rep := cr.Close(); rep.Violations() != 0 {
					b.Fatalf("%d violations", rep.Violations())
				}
				return err
			}
		}},
	} {
		b.Run(st.name, func(b *testing.B) {
			cpu0 := perfstat.CPUTime()
			for b.Loop() {
				sink, done := st.sink()
				if _, err := sim.Run(context.Background(), cfg, seed, sink); err != nil {
					b.Fatal(err)
				}
				if err := done(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((perfstat.CPUTime()-cpu0).Nanoseconds())/float64(b.N)/benchLifecycles, "cpu-ns/lifecycle")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// recordTrial runs a trial once and keeps its history in memory.
func recordTrial(b *testing.B, cfg *sim.Config, seed uint64) (events []history.Event, pods int) {
	b.Helper()
	rec := &recordSink{}
	res, err := sim.Run(context.Background(), cfg, seed, rec)
	if err != nil {
		b.Fatal(err)
	}
	return rec.events, res.PodsCompleted
}

type recordSink struct{ events []history.Event }

func (r *recordSink) Write(e *history.Event) error {
	r.events = append(r.events, *e)
	return nil
}

// BenchmarkConsume is the consumer side of a run on a recorded history
// (20,000 lifecycles of the benchmark workload under the mixed fault
// load), stage by stage, in CPU time per lifecycle: what each part of
// the pipeline behind the sim costs, with the sim's cost out of the way.
func BenchmarkConsume(b *testing.B) {
	text := oneWorkload{name: "consume", seed: 1, nodes: 100, perNode: 30, count: 20000,
		arrival: "{type: poisson, rate: 600}", lifetime: "uniform(min=2s, max=6s)", pod: sidecarPod, faults: mixedFaults}.text()
	cfg, tr := compileTrial(b, text, "", 0)
	events, pods := recordTrial(b, cfg, tr.Seed)
	feed := func(s history.Sink) {
		for i := range events {
			if err := s.Write(&events[i]); err != nil {
				b.Fatal(err)
			}
		}
	}
	run := func(name string, body func()) {
		b.Run(name, func(b *testing.B) {
			cpu0 := perfstat.CPUTime()
			for b.Loop() {
				body()
			}
			b.ReportMetric(float64((perfstat.CPUTime()-cpu0).Nanoseconds())/float64(b.N)/float64(pods), "cpu-ns/lifecycle")
			b.ReportMetric(float64(len(events))/float64(pods), "events/lifecycle")
		})
	}
	run("encode", func() {
		w := history.NewWriter(io.Discard)
		feed(w)
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
	})
	partition := func(fn history.PodFunc) {
		p := history.NewPartitioner(fn)
		feed(p)
		if err := p.Close(); err != nil {
			b.Fatal(err)
		}
	}
	run("partition", func() {
		partition(func(*history.Meta, string, []history.Event) error { return nil })
	})
	run("partition+metrics", func() {
		partition(func(meta *history.Meta, pod string, evs []history.Event) error {
			rec := metrics.FromEvents(meta, pod, evs)
			_ = rec
			return nil
		})
	})
	for _, workers := range []int{1, 2} {
		run(fmt.Sprintf("partition+check/workers=%d", workers), func() {
			cr := check.NewRunner(check.Workers(workers))
			partition(func(meta *history.Meta, pod string, evs []history.Event) error {
				cr.Add(meta, pod, evs)
				return nil
			})
			if rep := cr.Close(); rep.Violations() != 0 {
				b.Fatalf("%d violations", rep.Violations())
			}
		})
	}
}
