package runner

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/sidebench/sidebench/harness/backend"
	simbackend "github.com/sidebench/sidebench/harness/backend/sim"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/rundir"
	"github.com/sidebench/sidebench/harness/scenario"
	"github.com/sidebench/sidebench/harness/trial"
	"github.com/sidebench/sidebench/internal/version"
	"github.com/sidebench/sidebench/reports/render"
)

// fake is a backend for the runner's tests: it runs each trial on the
// simulator, and can refuse policies, step a fake clock by one second per
// trial (so a soak's length is a number of trials, not wall time), and
// fail at the n-th trial it is given (a crash).
type fake struct {
	refuse  string
	clk     *testingclock.FakeClock
	failAt  int
	started *int
}

var errCrash = errors.New("simulated crash")

func (f fake) Supports(p string) (bool, string) {
	if p == f.refuse {
		return false, "the fake backend refuses " + p
	}
	return true, ""
}

func (f fake) RunTrial(ctx context.Context, p *trial.Plan, sink history.Sink) (backend.Stats, error) {
	if f.started != nil {
		*f.started++
		if *f.started == f.failAt {
			return backend.Stats{}, errCrash
		}
	}
	st, err := simbackend.Backend{Version: "test"}.RunTrial(ctx, p, sink)
	st.Elapsed = time.Second // deterministic journals
	if f.clk != nil {
		f.clk.Step(time.Second)
	}
	return st, err
}

func load(t *testing.T) *scenario.Scenario {
	t.Helper()
	s, err := scenario.Load("testdata/tiny.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func opts(be backend.Backend) Options {
	return Options{Backend: be, BackendName: "fake", Build: version.Info{Version: "test"}}
}

// TestRunFiltersAndJudges: Run drops the policies the backend refuses
// (one filter), commits every trial and judges the rest.
func TestRunFiltersAndJudges(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	res, err := Run(context.Background(), opts(fake{refuse: "none"}), []Job{{Scenario: load(t), Dir: dir}})
	if err != nil {
		t.Fatal(err)
	}
	rows := res.State.State.Rows
	if len(rows) != 1 || rows[0].Policy != "kep753" || rows[0].Trials != 2 || rows[0].Pods != 12 || rows[0].Status != "PASS" {
		t.Fatalf("rows: %+v", rows)
	}
	if !res.Pass() || res.Partial {
		t.Fatalf("pass=%v partial=%v", res.Pass(), res.Partial)
	}
	entries, _, err := rundir.ReadJournal(filepath.Join(dir, rundir.FileJournal))
	if err != nil || len(entries) != 2 {
		t.Fatalf("journal: %d entries, %v", len(entries), err)
	}
	for _, e := range entries {
		if e.Policy != "kep753" || e.ScenarioHash == "" {
			t.Errorf("entry %+v", e)
		}
	}
}

// TestDifferentialWithFakeBackends: same scenario and seeds on two
// backends; a policy one backend refuses is "not compared".
func TestDifferentialWithFakeBackends(t *testing.T) {
	base := t.TempDir()
	s := load(t)
	a, b := opts(fake{}), opts(fake{refuse: "none"})
	a.BackendName, b.BackendName = "one", "two"
	dr, err := Differential(context.Background(), []Options{a, b}, []*scenario.Scenario{s}, func(be string, s *scenario.Scenario) string {
		return filepath.Join(base, be)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dr.Results) != 2 || dr.Results[0] == nil || dr.Results[1] == nil {
		t.Fatalf("results %+v", dr.Results)
	}
	markers := map[string]string{}
	for _, r := range dr.Rows {
		markers[r.Policy+"/"+r.Invariant] = r.Marker()
	}
	if markers["kep753/all"] != "agree" || markers["none/INV-S5"] != "not compared" {
		t.Errorf("markers: %v", markers)
	}
}

// soak runs a soak of `duration` fake seconds (one trial per second, plus
// the one started at the deadline) in dir.
func soak(t *testing.T, dir string, resume bool, duration time.Duration, be fake) (*Result, error) {
	t.Helper()
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	be.clk = clk
	so := SoakOptions{Dir: dir, Resume: resume, Duration: duration, Checkpoint: 2 * time.Second, Clock: clk}
	if !resume {
		so.Scenarios = []*scenario.Scenario{load(t)}
	}
	return Soak(context.Background(), opts(be), so)
}

// TestSoakCrashResume: a soak that crashes (a trial fails mid-run: nothing
// of it is committed) and is resumed ends with the same trials, history,
// findings and verdict as an uninterrupted soak of the same length.
func TestSoakCrashResume(t *testing.T) {
	base := t.TempDir()
	whole := filepath.Join(base, "whole")
	res, err := soak(t, whole, false, 5*time.Second, fake{})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.State.State.TrialsCommitted; got != 6 {
		t.Fatalf("uninterrupted soak committed %d trials, want 6 (t=0..5s)", got)
	}

	broken := filepath.Join(base, "broken")
	n := 0
	if _, err := soak(t, broken, false, 5*time.Second, fake{failAt: 4, started: &n}); !errors.Is(err, errCrash) {
		t.Fatalf("crash run: %v", err)
	}
	// What a SIGKILL during the next commit leaves: torn tails.
	for _, name := range []string{rundir.FileHistory, rundir.FilePods, rundir.FileJournal} {
		f, _ := os.OpenFile(filepath.Join(broken, name), os.O_APPEND|os.O_WRONLY, 0)
		f.WriteString(`{"torn":`)
		f.Close()
	}
	res2, err := soak(t, broken, true, 2*time.Second, fake{})
	if err != nil {
		t.Fatal(err)
	}
	if res2.State.State.TrialsCommitted != 6 || res2.State.State.Resumes != 3 {
		t.Fatalf("resumed soak: %d trials, resumed from %d; want 6 from 3", res2.State.State.TrialsCommitted, res2.State.State.Resumes)
	}
	for _, name := range []string{rundir.FileHistory, rundir.FilePods, rundir.FileFindings, rundir.FileJournal} {
		a, _ := os.ReadFile(filepath.Join(whole, name))
		b, _ := os.ReadFile(filepath.Join(broken, name))
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between the uninterrupted and the resumed soak (%d vs %d bytes)", name, len(a), len(b))
		}
	}
	if !slices.EqualFunc(res.State.State.Rows, res2.State.State.Rows, func(x, y render.StateRow) bool {
		return x.Policy == y.Policy && x.Trials == y.Trials && x.Violations == y.Violations && x.PodStartupMs == y.PodStartupMs && x.Status == y.Status
	}) || res.State.State.Verdict != res2.State.State.Verdict {
		t.Errorf("rows differ:\n%+v\n%+v", res.State.State.Rows, res2.State.State.Rows)
	}
}

// TestSoakFiltersPolicies: a soak drops the policies its backend refuses,
// as run does.
func TestSoakFiltersPolicies(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	if _, err := soak(t, dir, false, 2*time.Second, fake{refuse: "none"}); err != nil {
		t.Fatal(err)
	}
	entries, _, _ := rundir.ReadJournal(filepath.Join(dir, rundir.FileJournal))
	if len(entries) < 3 {
		t.Fatalf("%d trials, want at least 3", len(entries))
	}
	for _, e := range entries {
		if e.Policy == "none" {
			t.Fatalf("refused policy ran: %+v", e)
		}
	}
}

// TestSoakParallelCommits: with several trials in flight, the trial
// source asks which trials are committed while others commit (a soak of
// soak-profile died of a concurrent map access there); run under -race.
func TestSoakParallelCommits(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	o := opts(fake{clk: clk})
	o.Parallel = 3
	res, err := Soak(context.Background(), o, SoakOptions{Dir: filepath.Join(t.TempDir(), "s"), Duration: 6 * time.Second, Checkpoint: time.Hour,
		Clock: clk, Scenarios: []*scenario.Scenario{load(t)}})
	if err != nil {
		t.Fatal(err)
	}
	if res.State.State.TrialsCommitted < 6 {
		t.Errorf("%d trials", res.State.State.TrialsCommitted)
	}
}

// TestSoakJudgesEachStageCriterionWhereItsEvidenceIs: a soak of two
// scenarios at criteria.graduation alpha, one with the none baseline and
// no Job, one with Jobs and no baseline, judges sidecar-jobs-complete in
// the second and sidecar-overhead in the first (graduation.PoolEvidence,
// as `graduate` of the directory does); each is NOT APPLICABLE in the
// other. Each scenario had to hold both before.
func TestSoakJudgesEachStageCriterionWhereItsEvidenceIs(t *testing.T) {
	withStage := func(s *scenario.Scenario) *scenario.Scenario {
		s.Criteria.Graduation = "alpha"
		s.Criteria.Policies = []string{"kep753"}
		return s
	}
	cmp := withStage(load(t))
	jobs, err := scenario.Load("../../scenarios/job-completion.yaml")
	if err != nil {
		t.Fatal(err)
	}
	jobs = withStage(jobs)
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	// One second a trial: six trials are two rounds of the three
	// scenario × policy pairs.
	res, err := Soak(context.Background(), opts(fake{clk: clk}), SoakOptions{Dir: filepath.Join(t.TempDir(), "s"), Duration: 6 * time.Second,
		Checkpoint: time.Hour, Clock: clk, Scenarios: []*scenario.Scenario{cmp, jobs}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range res.State.State.Rows {
		for _, c := range r.Criteria {
			got[r.Scenario+" "+r.Policy+" "+c.Name] = c.Status + ": " + c.Message
		}
	}
	for key, want := range map[string]string{
		"tiny kep753 alpha/sidecar-jobs-complete":      "NOT APPLICABLE: no Job with sidecars in this scenario: the criterion is judged in job-completion",
		"job-completion kep753 alpha/sidecar-overhead": "NOT APPLICABLE: no pod_startup samples of this policy or of none in this scenario: the criterion is judged in tiny",
	} {
		if got[key] != want {
			t.Errorf("%s: %q, want %q", key, got[key], want)
		}
	}
	for _, key := range []string{"tiny kep753 alpha/sidecar-overhead", "job-completion kep753 alpha/sidecar-jobs-complete"} {
		if strings.HasPrefix(got[key], "NOT APPLICABLE") || got[key] == "" {
			t.Errorf("%s: %q, want a judgement", key, got[key])
		}
	}
}
