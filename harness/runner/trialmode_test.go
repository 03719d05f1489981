package runner

import (
	"context"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/sidebench/sidebench/harness/backend"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/trial"
)

func TestTrialMode(t *testing.T) {
	for _, tc := range []struct {
		name             string
		procs, inFlight  int
		serial           bool
		wantPipeline     bool
		wantCheckWorkers int
	}{
		{"one trial on two cores", 2, 1, false, true, 1},
		// The regression: --parallel 2 on two cores ran a lone trial on
		// one goroutine (the decision came from --parallel, not from the
		// trials running).
		{"second trial on two cores", 2, 2, false, false, 1},
		{"one core", 1, 1, false, false, 1},
		{"one trial on eight cores", 8, 1, false, true, 6},
		{"three trials on eight cores", 8, 3, false, true, 1},
		{"eight trials on eight cores", 8, 8, false, false, 1},
		{"serial knob", 8, 1, true, false, 6},
		{"no count yet", 2, 0, false, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, w := trialMode(tc.procs, tc.inFlight, tc.serial)
			if p != tc.wantPipeline || w != tc.wantCheckWorkers {
				t.Errorf("trialMode(%d, %d, %v) = %v, %d; want %v, %d", tc.procs, tc.inFlight, tc.serial, p, w, tc.wantPipeline, tc.wantCheckWorkers)
			}
		})
	}
}

// barrier is the fake backend (refusing the none policy: one trial per
// trial number) whose trials wait until all the WaitGroup counts have
// started, so that they are in flight at once whatever the scheduler does.
type barrier struct {
	fake
	wg *sync.WaitGroup
}

func (b barrier) RunTrial(ctx context.Context, p *trial.Plan, sink history.Sink) (backend.Stats, error) {
	b.wg.Done()
	b.wg.Wait()
	return b.fake.RunTrial(ctx, p, sink)
}

// TestParallelPipelinesALoneTrial: with --parallel 2 on two cores, a run
// of one trial is pipelined (as with --parallel 1), and of two trials in
// flight at once one is pipelined and the other runs on one goroutine. On
// the old code every trial of a --parallel 2 run on two cores ran on one
// goroutine: a one-trial certification took twice as long as with
// --parallel 1.
func TestParallelPipelinesALoneTrial(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	for _, tc := range []struct {
		trials        int
		wantPipelined int
	}{{1, 1}, {2, 1}} {
		var mu sync.Mutex
		pipelined, serial := 0, 0
		var wg sync.WaitGroup
		wg.Add(tc.trials)
		o := opts(barrier{fake{refuse: "none"}, &wg})
		o.Parallel = 2
		o.onTrialMode = func(p bool) {
			mu.Lock()
			defer mu.Unlock()
			if p {
				pipelined++
			} else {
				serial++
			}
		}
		res, err := Run(context.Background(), o, []Job{{Scenario: load(t).WithOverrides(0, tc.trials), Dir: filepath.Join(t.TempDir(), "r")}})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Pass() {
			t.Fatalf("%d trials: run did not pass", tc.trials)
		}
		if pipelined != tc.wantPipelined || pipelined+serial != tc.trials {
			t.Errorf("%d trials in flight at once with --parallel 2 on 2 cores: %d pipelined, %d on one goroutine; want %d pipelined",
				tc.trials, pipelined, serial, tc.wantPipelined)
		}
	}
}
