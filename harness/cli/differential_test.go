package cli

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sidebench/sidebench/harness/backend"
	simbackend "github.com/sidebench/sidebench/harness/backend/sim"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/rundir"
	"github.com/sidebench/sidebench/harness/trial"
	"github.com/sidebench/sidebench/reference-impl/api"
	"github.com/sidebench/sidebench/reports/render"
)

// stubLocal stands in for the local backend: it supports kep753 only and
// runs the trial on sim under another policy (none), so that it has
// findings where sim has none. closed counts Close calls.
type stubLocal struct{ closed *int }

func (stubLocal) Supports(p string) (bool, string) { return p == "kep753", "stub runs kep753 only" }

func (stubLocal) RunTrial(ctx context.Context, p *trial.Plan, sink history.Sink) (backend.Stats, error) {
	g, err := api.ParseGates("none")
	if err != nil {
		return backend.Stats{}, err
	}
	c := *p
	c.Gates = g
	// The history still says the trial's policy (run.meta), as a real
	// backend's would.
	return simbackend.Backend{Version: "test"}.RunTrial(ctx, &c, relabel{sink, p.Policy})
}

type relabel struct {
	history.Sink
	policy string
}

func (r relabel) Write(e *history.Event) error {
	if e.Kind == history.RunMeta {
		m := *e.Meta
		m.Policy = r.policy
		c := *e
		c.Meta = &m
		return r.Sink.Write(&c)
	}
	return r.Sink.Write(e)
}

func (s stubLocal) Close() error { *s.closed++; return nil }

func TestDifferentialRun(t *testing.T) {
	closed := 0
	d := deps{newBackend: func(name string, f *backendFlags, log io.Writer) (backend.Backend, error) {
		if name == "local" {
			return stubLocal{closed: &closed}, nil
		}
		return newBackend(name, f, log)
	}}
	dir := filepath.Join(t.TempDir(), "r")
	out, errOut, code := runDeps(t, context.Background(), d, "run", "--quiet", "--backend", "sim,local", "--out", dir, "testdata/tiny.yaml")
	if code != ExitFailed {
		t.Fatalf("exit %d (want 1: violations on local): %s\n%s", code, errOut, out)
	}
	golden(t, "run-differential", out)
	for _, f := range []string{"sim/" + rundir.FileHistory, "sim/" + render.SummaryFile, "local/" + rundir.FileHistory, "local/" + render.SummaryFile, "differential.md"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("missing %s", f)
		}
	}
	if closed != 1 {
		t.Errorf("local backend closed %d times, want 1", closed)
	}
	sim := readState(t, filepath.Join(dir, "sim", render.SummaryFile))
	loc := readState(t, filepath.Join(dir, "local", render.SummaryFile))
	if sim.TrialsCommitted != 4 || loc.TrialsCommitted != 2 {
		t.Errorf("trials: sim %d local %d, want 4 and 2", sim.TrialsCommitted, loc.TrialsCommitted)
	}
	// Same seeds on both backends: the local history's run.meta seeds are sim's.
	sh, lh := readHistory(t, filepath.Join(dir, "sim")), readHistory(t, filepath.Join(dir, "local"))
	for _, seed := range seedsOf(string(lh)) {
		if !strings.Contains(string(sh), seed) {
			t.Errorf("local seed %s not run on sim", seed)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, "differential.md"))
	for _, want := range []string{"| tiny | kep753 |", "**disagree**", "| tiny | none | INV-S5 | 12/0 | - | not compared |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("differential.md lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(string(md), "| tiny | kep753 | all |") {
		t.Errorf("kep753 should have per-invariant rows:\n%s", md)
	}
}

func seedsOf(h string) []string {
	var out []string
	for _, l := range strings.Split(h, "\n") {
		if i := strings.Index(l, `"seed":`); i >= 0 && strings.Contains(l, `"run.meta"`) {
			j := strings.IndexAny(l[i+7:], ",}")
			out = append(out, l[i:i+7+j])
		}
	}
	return out
}

func TestBackendListErrors(t *testing.T) {
	if _, _, code := run(t, "run", "--backend", "sim,sim", "testdata/tiny.yaml"); code != ExitUsage {
		t.Errorf("sim,sim: exit %d, want 2", code)
	}
	if _, _, code := run(t, "run", "--backend", "sim,", "testdata/tiny.yaml"); code != ExitUsage {
		t.Errorf("sim,: exit %d, want 2", code)
	}
}
