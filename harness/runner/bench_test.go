package runner

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	simbackend "github.com/sidebench/sidebench/harness/backend/sim"
	"github.com/sidebench/sidebench/harness/rundir"
	"github.com/sidebench/sidebench/harness/scenario"
	"github.com/sidebench/sidebench/internal/perfstat"
	"github.com/sidebench/sidebench/internal/version"
)

// The end-to-end benchmarks drive the path of `sidebench run` in process:
// runner.Run with the sim backend, the run directory on disk, the reports
// written. They report CPU time (the figure to compare on a shared
// machine), wall time, peak RSS and bytes on disk per lifecycle. Run them
// alone (-run '^$' -bench 'Run(Certify|Envelope|Parallel)' -benchtime 1x):
// a lifecycle count of 300,000 takes tens of seconds.

// shipped loads a shipped scenario with its workload count replaced by
// count (0: as shipped) and trials trials (0: as shipped).
func shipped(b testing.TB, name string, count, trials int) *scenario.Scenario {
	b.Helper()
	data, err := fs.ReadFile(scenario.ShippedFS, name+".yaml")
	if err != nil {
		b.Fatal(err)
	}
	text := string(data)
	if count > 0 {
		s0, err := scenario.LoadBytes(name+".yaml", data)
		if err != nil {
			b.Fatal(err)
		}
		old := fmt.Sprintf("count: %d", s0.Workloads[0].Count)
		if !strings.Contains(text, old) {
			b.Fatalf("%s: no %q to replace", name, old)
		}
		text = strings.Replace(text, old, fmt.Sprintf("count: %d", count), 1)
	}
	s, err := scenario.LoadBytes("scenarios/"+name+".yaml", []byte(text))
	if err != nil {
		b.Fatal(err)
	}
	return s.WithOverrides(0, trials)
}

// runStats is one in-process `sidebench run`.
type runStats struct {
	wall, cpu time.Duration
	pods      int
	disk      int64 // bytes of the run directory
	rss       int64 // peak RSS since the run began, -1 if unknown
}

// runOnce runs s through runner.Run into a fresh directory under dir.
func runOnce(b testing.TB, s *scenario.Scenario, parallel int, dir string) runStats {
	return runWith(b, s, Options{Parallel: parallel}, dir)
}

// runWith is runOnce with o's Parallel and unexported knobs.
func runWith(b testing.TB, s *scenario.Scenario, o Options, dir string) runStats {
	b.Helper()
	out := filepath.Join(dir, fmt.Sprintf("run-%d", time.Now().UnixNano()))
	reset := perfstat.ResetPeakRSS()
	o.Backend, o.BackendName, o.Build = simbackend.Backend{Version: "bench"}, "sim", version.Info{Version: "bench"}
	start, cpu0 := time.Now(), perfstat.CPUTime()
	res, err := Run(context.Background(), o, []Job{{Scenario: s, Dir: out}})
	st := runStats{wall: time.Since(start), cpu: perfstat.CPUTime() - cpu0, rss: -1}
	if err != nil {
		b.Fatal(err)
	}
	if !res.Pass() {
		b.Fatalf("%s: verdict %s", s.Metadata.Name, res.State.State.Verdict)
	}
	for _, r := range res.State.State.Rows {
		st.pods += r.Pods
	}
	if reset {
		st.rss = perfstat.PeakRSS()
	}
	_ = filepath.WalkDir(out, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				st.disk += fi.Size()
			}
		}
		return nil
	})
	if err := os.RemoveAll(out); err != nil {
		b.Fatal(err)
	}
	return st
}

func (st *runStats) report(b *testing.B) {
	b.ReportMetric(st.wall.Seconds(), "wall-s")
	b.ReportMetric(st.cpu.Seconds(), "cpu-s")
	b.ReportMetric(float64(st.pods)/st.cpu.Seconds(), "lifecycles/cpu-s")
	b.ReportMetric(float64(st.cpu.Nanoseconds())/1e3/float64(st.pods), "cpu-µs/lifecycle")
	b.ReportMetric(float64(st.disk)/float64(st.pods), "disk-B/lifecycle")
	if st.rss > 0 {
		b.ReportMetric(float64(st.rss)/(1<<20), "peak-RSS-MiB")
	}
	b.ReportMetric(0, "ns/op") // one op is one whole run: wall-s says it
}

// BenchmarkRunCertify is the certification of a 1e-5 violation rate at
// 95% confidence: 300,000 faulted lifecycles of scenarios/certify.yaml
// through `sidebench run`'s path (goal: 10 s, 1 GiB).
func BenchmarkRunCertify(b *testing.B) {
	for _, n := range []int{30_000, 300_000} {
		b.Run(fmt.Sprintf("lifecycles=%d", n), func(b *testing.B) {
			s := shipped(b, "certify", n, 1)
			dir := b.TempDir()
			var st runStats
			for b.Loop() {
				st = runOnce(b, s, 1, dir)
			}
			st.report(b)
		})
	}
}

// BenchmarkRunEnvelope is the Kubernetes scale envelope (5,000 nodes,
// 150,000 pods alive at once) through `sidebench run --include-large
// scenarios/scale-envelope.yaml`'s path (goal: 10 s, 1 GiB).
func BenchmarkRunEnvelope(b *testing.B) {
	s := shipped(b, "scale-envelope", 0, 1)
	dir := b.TempDir()
	var st runStats
	for b.Loop() {
		st = runOnce(b, s, 1, dir)
	}
	st.report(b)
}

// BenchmarkRunParallel runs the same trials with --parallel 1 and
// --parallel 2 alternately, in one process, and reports the wall-time
// speed-up of --parallel 2 (goal: 1.8 on two idle cores) and the CPU time
// of each, for three shapes of run: four certify trials of 50,000
// lifecycles (the original row), one of 100,000 (a certification: one
// trial, which --parallel 2 must not slow down), and 300 soak-profile
// trials of 600 (a soak's or a nightly's many small trials). On a loaded
// machine the speed-up is bounded by the cores other processes leave:
// compare with the load average, and with cores-p1: the cores a pipelined
// --parallel 1 run keeps busy.
func BenchmarkRunParallel(b *testing.B) { benchParallelShapes(b, false) }

// BenchmarkRunParallelTrials is BenchmarkRunParallel with every trial on
// one goroutine in both modes (no pipeline): how independent trials
// scale over the cores, apart from the pipelining that already spreads a
// --parallel 1 trial over them.
func BenchmarkRunParallelTrials(b *testing.B) { benchParallelShapes(b, true) }

func benchParallelShapes(b *testing.B, serialTrials bool) {
	for _, sh := range []struct {
		name, scenario string
		count, trials  int
	}{
		{"certify-4x50000", "certify", 50_000, 4},
		{"certify-1x100000", "certify", 100_000, 1},
		{"soak-300x600", "soak-profile", 0, 300},
	} {
		b.Run(sh.name, func(b *testing.B) { benchParallel(b, shipped(b, sh.scenario, sh.count, sh.trials), serialTrials) })
	}
}

// benchParallel compares --parallel 1 and 2 over the trials of s:
// speedup is wall(p1) / wall(p2), cpu-ratio CPU(p2) / CPU(p1), and
// lifecycles/cpu-s-p1 the CPU cost of --parallel 1 (to compare the
// pipelined runs with serialTrials ones).
func benchParallel(b *testing.B, s *scenario.Scenario, serialTrials bool) {
	dir := b.TempDir()
	var w1, w2, c1, c2 time.Duration
	var r2 int64
	pods := 0
	for b.Loop() {
		s1 := runWith(b, s, Options{Parallel: 1, serialTrials: serialTrials}, dir)
		s2 := runWith(b, s, Options{Parallel: 2, serialTrials: serialTrials}, dir)
		w1 += s1.wall
		w2 += s2.wall
		c1 += s1.cpu
		c2 += s2.cpu
		r2 = max(r2, s2.rss)
		pods += s1.pods
	}
	b.ReportMetric(w1.Seconds()/w2.Seconds(), "speedup")
	b.ReportMetric(c2.Seconds()/c1.Seconds(), "cpu-ratio")
	b.ReportMetric(w1.Seconds()/float64(b.N), "wall-s-p1")
	b.ReportMetric(w2.Seconds()/float64(b.N), "wall-s-p2")
	// Cores busy on average: a pipelined --parallel 1 trial already keeps
	// more than one busy, which bounds what --parallel 2 can add.
	b.ReportMetric(c1.Seconds()/w1.Seconds(), "cores-p1")
	b.ReportMetric(c2.Seconds()/w2.Seconds(), "cores-p2")
	b.ReportMetric(float64(pods)/c1.Seconds(), "lifecycles/cpu-s-p1")
	if r2 > 0 {
		b.ReportMetric(float64(r2)/(1<<20), "peak-RSS-MiB-p2")
	}
	b.ReportMetric(0, "ns/op")
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
			c0 := perfstat.CPUTime()
			b.ResetTimer()
			if _, err := Run(context.Background(), o, []Job{{Scenario: s.WithOverrides(0, b.N), Dir: dir}}); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			cpu := perfstat.CPUTime() - c0
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
