package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// nights runs tiny.yaml five times (seeds 1..5, 10 trials each) into
// DIR/night-N, the last one from scenario last (tiny.yaml or a variant).
func nights(t *testing.T, last string) string {
	t.Helper()
	dir := t.TempDir()
	for i := 1; i <= 5; i++ {
		scen := "testdata/tiny.yaml"
		if i == 5 {
			scen = last
		}
		out := filepath.Join(dir, fmt.Sprintf("night-%d", i))
		if _, errOut, code := run(t, "run", "--quiet", "--trials", "10", "--seed", fmt.Sprint(i), "--out", out, scen); code != ExitOK {
			t.Fatalf("night %d: exit %d %s", i, code, errOut)
		}
	}
	return dir
}

// TestTrendFlagsASlowerNight: five nights of the same behaviour with
// different seeds flag nothing (exit 0); when the fifth night's sidecar
// starts more slowly, trend flags that night and exits 1.
func TestTrendFlagsASlowerNight(t *testing.T) {
	if testing.Short() {
		t.Skip("ten runs")
	}
	steady := nights(t, "testdata/tiny.yaml")
	out, errOut, code := run(t, "trend", steady)
	if code != ExitOK || strings.Contains(out, "CHANGED") || strings.Contains(out, "REGRESSED") || !strings.Contains(out, "No regression against the night before") {
		t.Fatalf("steady nights: exit %d %s\n%s", code, errOut, out)
	}
	for _, want := range []string{"5 nights, oldest first", "## tiny / kep753", "| 5 |", "pods with a violation"} {
		if !strings.Contains(out, want) {
			t.Errorf("trend.md lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "## tiny / none") {
		t.Errorf("the none baseline is not judged and has no series:\n%s", out)
	}
	html, err := os.ReadFile(filepath.Join(steady, "trend.html"))
	if err != nil || !bytes.Contains(html, []byte("<svg")) || !bytes.Contains(html, []byte("pod_startup tiny / kep753")) {
		t.Errorf("trend.html: %v, %d bytes", err, len(html))
	}

	b, _ := os.ReadFile("testdata/tiny.yaml")
	slower := filepath.Join(t.TempDir(), "tiny.yaml")
	os.WriteFile(slower, bytes.Replace(b, []byte("startupAfter: uniform(min=500ms, max=2s)"), []byte("startupAfter: uniform(min=1500ms, max=3s)"), 1), 0o644)
	regressed := nights(t, slower)
	out, _, code = run(t, "trend", "--out", t.TempDir(), regressed)
	if code != ExitFailed || !strings.Contains(out, "**REGRESSED** against the night before") || !strings.Contains(out, "scenario changed; REGRESSED: pod_startup median") {
		t.Fatalf("slower last night: exit %d\n%s", code, out)
	}
	if n := strings.Count(out, "REGRESSED:") + strings.Count(out, "CHANGED:"); n != 1 {
		t.Errorf("%d nights flagged, want only the last:\n%s", n, out)
	}
}

// TestCompareRefusesRetainedRuns: compare pairs pods, so a soak that kept
// the records of some pods only is refused with what to do instead.
func TestCompareRefusesRetainedRuns(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	if _, errOut, code := run(t, "soak", "--quiet", "--duration", "50ms", "--out", dir, "testdata/tiny.yaml"); code != ExitOK {
		t.Fatalf("soak: %d %s", code, errOut)
	}
	_, errOut, code := run(t, "compare", dir, dir)
	if code != ExitUsage || !strings.Contains(errOut, "--keep-history sample:0.1") || !strings.Contains(errOut, "sidebench trend") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

// TestTrendCreatesOut: as in trend's example, --out names a directory that
// does not exist yet; trend creates it and writes trend.md and trend.html
// there. It used to fail with exit 3 (an internal error).
func TestTrendCreatesOut(t *testing.T) {
	base := t.TempDir()
	var dirs []string
	for i := 1; i <= 2; i++ {
		d := filepath.Join(base, fmt.Sprintf("night-%d", i))
		if _, errOut, code := run(t, "run", "--quiet", "--trials", "1", "--seed", fmt.Sprint(i), "--out", d, "testdata/tiny.yaml"); code != ExitOK {
			t.Fatalf("night %d: exit %d %s", i, code, errOut)
		}
		dirs = append(dirs, d)
	}
	out := filepath.Join(base, "trend")
	if _, errOut, code := run(t, append([]string{"trend", "--out", out}, dirs...)...); code != ExitOK && code != ExitFailed {
		t.Fatalf("trend --out %s (new): exit %d %s", out, code, errOut)
	}
	for _, name := range []string{"trend.md", "trend.html"} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Error(err)
		}
	}
}

// TestTrendChecksItsTestFlags: --alpha and --threshold are checked as
// compare checks them, and --threshold 0 flags any significant change
// (trend took --alpha 0 for 0.05, --threshold 0 for 5%, and a negative
// threshold as given).
func TestTrendChecksItsTestFlags(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "night")
	if _, errOut, code := run(t, "run", "--quiet", "--out", dir, "testdata/tiny.yaml"); code != ExitOK {
		t.Fatalf("run: exit %d %s", code, errOut)
	}
	for _, tc := range []struct{ args, want string }{
		{"--alpha 0", "--alpha 0: must be in (0, 1)"},
		{"--alpha 1.5", "--alpha 1.5: must be in (0, 1)"},
		{"--threshold -1", "--threshold -1: must be a finite fraction >= 0"},
	} {
		_, errOut, code := run(t, append(append([]string{"trend", "--out", t.TempDir()}, strings.Fields(tc.args)...), dir)...)
		if code != ExitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("trend %s: exit %d %q, want %q", tc.args, code, errOut, tc.want)
		}
	}
	out, errOut, code := run(t, "trend", "--out", t.TempDir(), "--threshold", "0", dir)
	if code != ExitOK || !strings.Contains(out, "a median change above 0%") {
		t.Errorf("--threshold 0: exit %d %s\n%s", code, errOut, out)
	}
}

// TestTrendNightsOfSeveralScenarios: a nightly job that runs several
// scenarios ('run --out NIGHTS/<night> a.yaml b.yaml') writes
// NIGHTS/<night>/<scenario>; trend read such a NIGHTS as holding no run
// ("neither a run directory nor a directory of run directories", exit 2).
// A night is now a run or a directory of one night's runs, given as the
// subdirectories of NIGHTS or one path each.
func TestTrendNightsOfSeveralScenarios(t *testing.T) {
	root := t.TempDir()
	b, err := os.ReadFile("testdata/cmp.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cmp := filepath.Join(root, "cmp.yaml")
	if err := os.WriteFile(cmp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	nightsDir := filepath.Join(root, "nights")
	var each []string
	for i := 1; i <= 2; i++ {
		out := filepath.Join(nightsDir, fmt.Sprintf("night-%d", i))
		if _, errOut, code := run(t, "run", "--quiet", "--seed", fmt.Sprint(i), "--out", out, "testdata/tiny.yaml", cmp); code != ExitOK && code != ExitFailed {
			t.Fatalf("night %d: exit %d %s", i, code, errOut)
		}
		each = append(each, out)
	}
	out, errOut, code := run(t, "trend", "--out", t.TempDir(), nightsDir)
	if code != ExitOK {
		t.Fatalf("trend NIGHTS: exit %d %s\n%s", code, errOut, out)
	}
	for _, want := range []string{"2 nights, oldest first", "## tiny / kep753", "## cmp / kep753", "| 2 | 2026", "night-1 |", "night-2 |"} {
		if !strings.Contains(out, want) {
			t.Errorf("trend of nights of two scenarios lacks %q:\n%s", want, out)
		}
	}
	for _, name := range []string{"tiny", "cmp"} {
		if strings.Contains(out, filepath.Join("night-1", name)+" |") {
			t.Errorf("a scenario's run listed as a night of its own:\n%s", out)
		}
	}
	// The nights given one by one are the same trend.
	out2, errOut, code := run(t, append([]string{"trend", "--out", t.TempDir()}, each...)...)
	if code != ExitOK || out2 != out {
		t.Errorf("trend NIGHT NIGHT: exit %d %s; differs from trend NIGHTS:\n%s\nwant\n%s", code, errOut, out2, out)
	}
	// Several directories of nights are the nights of each, as before
	// (a directory of runs given among several paths was read as one
	// night, pooling nights of one scenario).
	var dirs []string
	for i := 1; i <= 2; i++ {
		d := filepath.Join(root, fmt.Sprintf("cron-%d", i))
		for j := 1; j <= 2; j++ {
			night := filepath.Join(d, fmt.Sprintf("night-%d", j))
			if _, errOut, code := run(t, "run", "--quiet", "--seed", fmt.Sprint(10*i+j), "--out", night, "testdata/tiny.yaml"); code != ExitOK {
				t.Fatalf("%s: exit %d %s", night, code, errOut)
			}
		}
		dirs = append(dirs, d)
	}
	out4, errOut, code := run(t, append([]string{"trend", "--out", t.TempDir()}, dirs...)...)
	if code != ExitOK || !strings.Contains(out4, "4 nights, oldest first") {
		t.Errorf("trend NIGHTS NIGHTS: exit %d %s\n%s", code, errOut, out4)
	}
	// One night's directory alone is one night: its runs share the
	// invocation in run.json (each scenario's run was read as a night).
	out3, errOut, code := run(t, "trend", "--out", t.TempDir(), each[0])
	if code != ExitOK || !strings.Contains(out3, "1 night, oldest first") || !strings.Contains(out3, "| 1 | 2026") || strings.Contains(out3, "| 2 |") ||
		!strings.Contains(out3, "## tiny / kep753") || !strings.Contains(out3, "## cmp / kep753") {
		t.Errorf("trend NIGHT (a directory of one night's runs): exit %d %s\n%s", code, errOut, out3)
	}
}
