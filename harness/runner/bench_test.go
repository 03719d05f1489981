package runner

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	simbackend "github.com/sidebench/sidebench/harness/backend/sim"
	"github.com/sidebench/sidebench/harness/rundir"
	"github.com/sidebench/sidebench/harness/scenario"
)

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkStorage runs b.N trials of scenarios/soak-profile.yaml (600
// lifecycles each) through the run pipeline into a run directory, with
// every history kept and with the soak defaults, and reports the
// directory's bytes per lifecycle (data files and journal; the reports are
// a constant) and lifecycles per CPU-second (the whole process: sim,
// checkers, metrics, compression, commits):
//
//	go test -run '^$' -bench Storage -benchtime 20x ./harness/runner/
func BenchmarkStorage(b *testing.B) {
	s, err := scenario.Load("../../scenarios/soak-profile.yaml")
	if err != nil {
		b.Fatal(err)
	}
	for _, keep := range []string{"all", rundir.DefaultSoakRetention.String()} {
		b.Run("keep="+keep, func(b *testing.B) {
			o := Options{Backend: simbackend.Backend{Version: "bench"}, BackendName: "sim"}
			o.Keep, _ = rundir.ParseRetention(keep)
			dir := filepath.Join(b.TempDir(), "r")
			c0 := cpuTime()
			b.ResetTimer()
			if _, err := Run(context.Background(), o, []Job{{Scenario: s.WithOverrides(0, b.N), Dir: dir}}); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			cpu := cpuTime() - c0
			entries, _, err := rundir.ReadJournal(filepath.Join(dir, rundir.FileJournal))
			if err != nil {
				b.Fatal(err)
			}
			pods := 0
			for _, e := range entries {
				pods += e.Pods
			}
			var size int64
			for _, f := range []string{rundir.FileHistory, rundir.FilePods, rundir.FileFindings, rundir.FileTrials, rundir.FileJournal} {
				if fi, err := os.Stat(filepath.Join(dir, f)); err == nil {
					size += fi.Size()
				}
			}
			b.ReportMetric(float64(size)/float64(pods), "B/lifecycle")
			b.ReportMetric(float64(pods)/cpu.Seconds(), "lifecycles/cpu-s")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkLiveHeap runs b.N trials of soak-profile with the soak
// defaults and reports the live heap after a GC once a tenth of the
// trials were committed and at the last one: aggregation streams, so it
// does not grow with lifecycles (docs/performance.md):
//
//	go test -run '^$' -bench LiveHeap -benchtime 4000x ./harness/runner/
func BenchmarkLiveHeap(b *testing.B) {
	s, err := scenario.Load("../../scenarios/soak-profile.yaml")
	if err != nil {
		b.Fatal(err)
	}
	o := Options{Backend: simbackend.Backend{Version: "bench"}, BackendName: "sim", Keep: rundir.DefaultSoakRetention}
	heap := func() float64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return float64(ms.HeapInuse) / (1 << 20)
	}
	n := 0
	var first, last float64
	o.onCommit = func() {
		n++
		switch n {
		case max(b.N/10, 1):
			first = heap()
		case b.N:
			last = heap()
		}
	}
	b.ResetTimer()
	if _, err := Run(context.Background(), o, []Job{{Scenario: s.WithOverrides(0, b.N), Dir: filepath.Join(b.TempDir(), "r")}}); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(first, "heap-MiB-at-10%")
	b.ReportMetric(last, "heap-MiB-at-end")
	b.ReportMetric(0, "ns/op")
}
