package cli

// Regression tests for issue 15's run-directory items (resume integrity,
// concurrent writers, edited scenarios, a full disk, partial runs judged).

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sidebench/sidebench/harness/backend"
	"github.com/sidebench/sidebench/harness/rundir"
	"github.com/sidebench/sidebench/reports/render"
)

// soakDir makes a soak run directory with some committed trials.
func soakDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "s")
	if _, errOut, code := run(t, "soak", "--quiet", "--duration", "100ms", "--out", dir, "testdata/tiny.yaml"); code != ExitOK {
		t.Fatalf("soak: %d %s", code, errOut)
	}
	// The count depends on the machine's speed; every resume commits at
	// least one more trial.
	for journalLines(dir) < 4 {
		if _, errOut, code := run(t, "soak", "--quiet", "--resume", dir, "--duration", "1ms"); code != ExitOK {
			t.Fatalf("soak --resume: %d %s", code, errOut)
		}
	}
	return dir
}

func files(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, f := range []string{rundir.FileHistory, rundir.FilePods, rundir.FileFindings, rundir.FileJournal} {
		out[f], _ = os.ReadFile(filepath.Join(dir, f))
	}
	return out
}

// TestResumeRefusesBadDirectory: a corrupt journal line in the middle, a
// directory another process holds, an edited scenario copy: exit 2, a
// message naming the problem, and no file changed.
func TestResumeRefusesBadDirectory(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(t *testing.T, dir string) func()
		want  string
	}{
		{"corrupt journal line", func(t *testing.T, dir string) func() {
			p := filepath.Join(dir, rundir.FileJournal)
			b, _ := os.ReadFile(p)
			lines := bytes.SplitAfter(b, []byte("\n"))
			lines[1] = append(lines[1][:len(lines[1])-6], '\n')
			os.WriteFile(p, bytes.Join(lines, nil), 0o644)
			return func() {}
		}, "journal.jsonl:2: corrupt journal line"},
		{"held by another process", func(t *testing.T, dir string) func() {
			d, _, err := rundir.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			return func() { d.Close() }
		}, "is in use by pid"},
		{"edited scenario copy", func(t *testing.T, dir string) func() {
			p := filepath.Join(dir, "scenarios", "tiny.yaml")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, bytes.Replace(b, []byte("count: 6"), []byte("count: 3"), 1), 0o644)
			return func() {}
		}, "changed after the run started"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := soakDir(t)
			release := tc.spoil(t, dir)
			defer release()
			before := files(t, dir)
			_, errOut, code := run(t, "soak", "--quiet", "--resume", dir, "--duration", "1ms")
			if code != ExitUsage || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", code, errOut, tc.want)
			}
			for f, b := range files(t, dir) {
				if !bytes.Equal(b, before[f]) {
					t.Errorf("%s changed", f)
				}
			}
		})
	}
}

// TestDiskFullExits3: a full disk while committing or writing the reports
// is exit 3, and no summary claims success.
func TestDiskFullExits3(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v %s", err, out)
	}
	defer exec.Command("umount", mnt).Run()
	dir := filepath.Join(mnt, "r")
	_, errOut, code := run(t, "run", "--quiet", "--trials", "6", "--out", dir, "../../scenarios/policy-comparison.yaml")
	if code != ExitInternal || !strings.Contains(errOut, "no space left on device") {
		t.Fatalf("exit %d, stderr %q; want 3 and ENOSPC", code, errOut)
	}
	if f, err := os.Open(filepath.Join(dir, render.SummaryFile)); err == nil {
		st, _ := render.ReadState(f)
		f.Close()
		if st != nil && st.Pass {
			t.Errorf("summary.json claims success: %+v", st)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, render.JUnitFile)); err == nil {
		t.Errorf("junit.xml written although the run failed")
	}
}

// TestReportsFullDiskExits3: the disk fills while the reports are written
// (every trial committed): exit 3, and none of the reports is in place (it
// used to exit 0 with a warning, no junit.xml and a stub summary.json).
func TestReportsFullDiskExits3(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs")
	}
	// Measure a run: its data files, then its reports.
	ref := filepath.Join(t.TempDir(), "ref")
	if _, errOut, code := run(t, "run", "--quiet", "--out", ref, "testdata/tiny.yaml"); code != ExitOK {
		t.Fatalf("reference run: %d %s", code, errOut)
	}
	var data, reports int64
	filepath.Walk(ref, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		blocks := (fi.Size() + 4095) / 4096 * 4096
		switch filepath.Base(p) {
		case render.SummaryFile, render.MarkdownFile, render.HTMLFile, render.JUnitFile:
			reports += blocks
		default:
			if strings.HasPrefix(filepath.Base(p), "PodStartupLatency_") {
				reports += blocks
			} else {
				data += blocks
			}
		}
		return nil
	})
	mnt := t.TempDir()
	// Room for the data (plus the segments and directories), not for the reports.
	size := data + data/3 + reports/3
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+strconv.FormatInt(size, 10), "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v %s", err, out)
	}
	defer exec.Command("umount", mnt).Run()
	dir := filepath.Join(mnt, "r")
	_, errOut, code := run(t, "run", "--quiet", "--out", dir, "testdata/tiny.yaml")
	if code != ExitInternal || !strings.Contains(errOut, "writing the reports") {
		t.Fatalf("exit %d, stderr %q; want 3 while writing the reports (data %d B, reports %d B, tmpfs %d B)", code, errOut, data, reports, size)
	}
	if n := journalLines(dir); n != 4 {
		t.Errorf("%d trials committed, want all 4", n)
	}
	for _, f := range []string{render.SummaryFile, render.JUnitFile, render.MarkdownFile, render.HTMLFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s is in place although the reports could not all be written", f)
		}
	}
}

// TestGraduatePartialRun: graduate on a Ctrl-C'ed run labels every verdict
// partial; with --strict the verdict is INSUFFICIENT DATA (exit 1).
func TestGraduatePartialRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := wrapBackend(func(_ string, be backend.Backend) backend.Backend { return cancelAt{n: 3, cancel: cancel, be: be} })
	dir := filepath.Join(t.TempDir(), "r")
	if _, _, code := runDeps(t, ctx, d, "run", "--quiet", "--trials", "8", "--out", dir, "testdata/tiny.yaml"); code != ExitFailed {
		t.Fatalf("interrupted run: exit %d", code)
	}
	crit := filepath.Join(t.TempDir(), "loose.yaml")
	os.WriteFile(crit, []byte("stage: loose\nconfidence: 0.95\nviolationRate: {max: 0.5}\n"), 0o644)
	out, _, code := run(t, "graduate", "--criteria", crit, "--policy", "kep753", dir)
	if code != ExitOK || !strings.Contains(out, "overall (loose): PASS [partial]") || !strings.Contains(out, "warning: partial run") {
		t.Errorf("graduate: exit %d\n%s", code, out)
	}
	out, _, code = run(t, "graduate", "--criteria", crit, "--policy", "kep753", "--strict", dir)
	if code != ExitFailed || !strings.Contains(out, "overall (loose): INSUFFICIENT DATA [partial]") {
		t.Errorf("graduate --strict: exit %d\n%s", code, out)
	}
}

// TestRunRefusesWhatCannotFit: run (and soak) check a scenario's memory
// estimate before anything runs (issue 15 item 4: these fixtures ran `run`
// out of memory), and an --out that is a file is a usage error (item 15).
func TestRunRefusesWhatCannotFit(t *testing.T) {
	fixtures, _ := filepath.Glob("../scenario/testdata/cost/*.yaml")
	if len(fixtures) != 6 {
		t.Fatalf("%d cost fixtures", len(fixtures))
	}
	for _, fx := range fixtures {
		for _, cmd := range [][]string{{"run", "--quiet"}, {"soak", "--quiet", "--duration", "1s"}} {
			args := append(cmd, "--out", filepath.Join(t.TempDir(), "r"), fx)
			_, errOut, code := run(t, args...)
			if code != ExitUsage || !strings.Contains(errOut, "needs about") {
				t.Errorf("%v: exit %d, stderr %q; want 2 with the estimate", args, code, errOut)
			}
		}
	}
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o644)
	if _, errOut, code := run(t, "run", "--quiet", "--out", file, "testdata/tiny.yaml"); code != ExitUsage || !strings.Contains(errOut, "not a directory") {
		t.Errorf("--out FILE: exit %d %q", code, errOut)
	}
}
