package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/scenario"
	"github.com/sidebench/sidebench/reference-impl/api"
)

// stubLocal stands in for the local backend: it supports kep753 only and
// runs the trial on sim under another policy (none), so that it has
// findings where sim has none. closed counts Close calls.
type stubLocal struct{ closed *int }

func (stubLocal) Supports(p string) bool { return p == "kep753" }

func (stubLocal) RunTrial(ctx context.Context, t scenario.Trial, sink history.Sink) (TrialStats, error) {
	g, err := api.ParseGates("none")
	if err != nil {
		return TrialStats{}, err
	}
	t.Gates = g
	return simBackend{}.RunTrial(ctx, t, sink)
}

func (s stubLocal) Close() error { *s.closed++; return nil }

func TestDifferentialRun(t *testing.T) {
	old := newBackend
	defer func() { newBackend = old }()
	closed := 0
	newBackend = func(name string) (Backend, error) {
		if name == "local" {
			return stubLocal{closed: &closed}, nil
		}
		return defaultBackend(name)
	}
	dir := filepath.Join(t.TempDir(), "r")
	out, errOut, code := run(t, "run", "--quiet", "--backend", "sim,local", "--out", dir, "testdata/tiny.yaml")
	if code != ExitFailed {
		t.Fatalf("exit %d (want 1: violations on local): %s\n%s", code, errOut, out)
	}
	golden(t, "run-differential", out)
	for _, f := range []string{"sim/" + fileHistory, "sim/" + fileSummary, "local/" + fileHistory, "local/" + fileSummary, fileDifferential} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("missing %s", f)
		}
	}
	if closed != 1 {
		t.Errorf("local backend closed %d times, want 1", closed)
	}
	sim, err := readSummary(filepath.Join(dir, "sim", fileSummary))
	if err != nil {
		t.Fatal(err)
	}
	loc, err := readSummary(filepath.Join(dir, "local", fileSummary))
	if err != nil {
		t.Fatal(err)
	}
	if sim.TrialsCommitted != 4 || loc.TrialsCommitted != 2 {
		t.Errorf("trials: sim %d local %d, want 4 and 2", sim.TrialsCommitted, loc.TrialsCommitted)
	}
	// Same seeds on both backends: the local history's run.meta seeds are sim's.
	sh, _ := os.ReadFile(filepath.Join(dir, "sim", fileHistory))
	lh, _ := os.ReadFile(filepath.Join(dir, "local", fileHistory))
	for _, seed := range seedsOf(string(lh)) {
		if !strings.Contains(string(sh), seed) {
			t.Errorf("local seed %s not run on sim", seed)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, fileDifferential))
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

func TestDifferentialRowDisagree(t *testing.T) {
	r := diffRow{cells: []diffCell{{ran: true}, {ran: true, degradations: 1}}}
	if !r.disagree() {
		t.Error("0 vs 1 degradation: want disagree")
	}
	r = diffRow{cells: []diffCell{{ran: true, violations: 2}, {ran: true, violations: 5}}}
	if r.disagree() {
		t.Error("2 vs 5 violations: both have findings, want agree")
	}
	r = diffRow{cells: []diffCell{{ran: true, degradations: 1}, {ran: true, violations: 6}}}
	if !r.disagree() {
		t.Error("a degradation vs violations: want disagree")
	}
	r = diffRow{cells: []diffCell{{ran: true, violations: 2}, {ran: false}}}
	if r.disagree() || diffMarker(r) != "not compared" {
		t.Errorf("one backend did not run: got %q", diffMarker(r))
	}
}

func TestBackendListErrors(t *testing.T) {
	if _, _, code := run(t, "run", "--backend", "sim,sim", "testdata/tiny.yaml"); code != ExitUsage {
		t.Errorf("sim,sim: exit %d, want 2", code)
	}
	if _, _, code := run(t, "run", "--backend", "sim,", "testdata/tiny.yaml"); code != ExitUsage {
		t.Errorf("sim,: exit %d, want 2", code)
	}
}
