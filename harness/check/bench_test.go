package check

import (
	"sync/atomic"
	"testing"

	"github.com/sidebench/sidebench/harness/history"
)

// typical is the benchmark's typical pod: 1 init, 2 sidecars (one with a
// startup probe), 1 main, deletion with reverse-order termination.
func typical() []history.Event {
	h := newPod("typ", specOf("Always", 30, "init:setup", "sidecar:proxy+startup", "sidecar:log", "main:app"))
	h.at(0).created().at(5).scheduled().at(10).sandbox().at(20).done("setup")
	h.at(100).startupUp("proxy").at(200).up("log").cond("Initialized", true).at(300).up("app").phase("Running").cond("Ready", true)
	h.at(5000).deleted(30).terminating("PodDeleted", 30).stopExit("app", 30, "PodDeleted")
	h.at(5100).stopExit("log", 30, "PodDeleted").stopExit("proxy", 30, "PodDeleted")
	return h.at(5200).phase("Succeeded").removed().events()
}

// BenchmarkCheckPod is the cost of every checker on one typical pod,
// including building the Pod view, as a worker pays it.
func BenchmarkCheckPod(b *testing.B) {
	ev := typical()
	w := &worker{checkers: registry, cap: 100}
	b.ReportAllocs()
	for b.Loop() {
		var res podResult
		w.check(testMeta, "default/typ", ev, &res)
		if len(res.findings) != 0 || res.unknown != 0 {
			b.Fatalf("typical pod flagged: %v", res.findings)
		}
	}
	b.ReportMetric(float64(len(ev)), "events/pod")
}

// BenchmarkCheckPodRealistic is the long no-false-positive history.
func BenchmarkCheckPodRealistic(b *testing.B) {
	ev := realistic().events()
	w := &worker{checkers: registry, cap: 100}
	b.ReportAllocs()
	for b.Loop() {
		var res podResult
		w.check(testMeta, "default/web-0", ev, &res)
	}
	b.ReportMetric(float64(len(ev)), "events/pod")
}

// BenchmarkCheckPodViolating: a pod under policy "none" (7 findings), in
// the steady state of a long run where every invariant's findings cap is
// reached, so no excerpt is copied.
func BenchmarkCheckPodViolating(b *testing.B) {
	ev := designNone().events()
	w := &worker{checkers: registry, cap: 100, stored: make([]atomic.Int64, len(registry))}
	for i := range w.stored {
		w.stored[i].Store(100)
	}
	b.ReportAllocs()
	for b.Loop() {
		var res podResult
		w.check(testMeta, "default/pnone", ev, &res)
	}
}

// BenchmarkRunner measures the streaming Runner with GOMAXPROCS workers,
// including the copy of each pod's events and in-order folding.
func BenchmarkRunner(b *testing.B) {
	ev := typical()
	r := NewRunner()
	b.ReportAllocs()
	for b.Loop() {
		r.Add(testMeta, "default/typ", ev)
	}
	if rep := r.Close(); rep.Violations() != 0 {
		b.Fatal("violations")
	}
}

// BenchmarkRunnerViolating measures the Runner on pods that all violate
// the same invariants, without and with KeepPods: the worst case of
// KeepPods, whose keeper never fills (no second pod brings a new
// invariant), so every violating pod's events are copied by its worker
// (docs/performance.md).
func BenchmarkRunnerViolating(b *testing.B) {
	ev := designNone().events()
	for _, c := range []struct {
		name string
		opts []Option
	}{{"keep=off", nil}, {"keep=on", []Option{KeepPods(2, 1)}}} {
		b.Run(c.name, func(b *testing.B) {
			r := NewRunner(c.opts...)
			b.ReportAllocs()
			for b.Loop() {
				r.Add(testMeta, "default/pnone", ev)
			}
			if rep := r.Close(); rep.Violations() == 0 {
				b.Fatal("no violations")
			}
		})
	}
}
