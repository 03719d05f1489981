package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/metrics"
	"github.com/sidebench/sidebench/harness/rundir"
	"github.com/sidebench/sidebench/reports/render"
)

// The soak test re-executes the test binary as the sidebench command:
// with SIDEBENCH_TEST_MAIN set, TestMain runs the CLI with the arguments in
// SIDEBENCH_TEST_ARGS (JSON) instead of the tests.
func TestMain(m *testing.M) {
	if os.Getenv("SIDEBENCH_TEST_MAIN") != "" {
		var args []string
		if err := json.Unmarshal([]byte(os.Getenv("SIDEBENCH_TEST_ARGS")), &args); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		os.Args = append([]string{"sidebench"}, args...)
		os.Exit(Main())
	}
	os.Exit(m.Run())
}

func journalLines(dir string) int {
	b, _ := os.ReadFile(filepath.Join(dir, rundir.FileJournal))
	return bytes.Count(b, []byte("\n"))
}

// TestSoakKillResume starts a soak in a subprocess, SIGKILLs it mid-run,
// resumes it in-process and checks that the merged history has every
// committed trial exactly once, numbered without gaps, each complete.
func TestSoakKillResume(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess soak")
	}
	dir := filepath.Join(t.TempDir(), "soak")
	// Killed at a trial count, never at the end of --duration.
	args, _ := json.Marshal([]string{"soak", "--duration", "10m", "--checkpoint", "100ms", "--quiet", "--keep-history", "all", "--out", dir, "testdata/tiny.yaml"})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SIDEBENCH_TEST_MAIN=1", "SIDEBENCH_TEST_ARGS="+string(args))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	// It dies with the test process, whatever stops that.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killAt(t, cmd, &stderr, dir, 6)
	before := journalLines(dir)
	if _, err := os.Stat(filepath.Join(dir, render.SummaryFile)); err != nil {
		t.Fatalf("no summary.json after the kill: %v", err)
	}

	_, errOut, code := run(t, "soak", "--resume", dir, "--duration", "300ms", "--checkpoint", "50ms")
	if code == ExitUsage || code == ExitInternal {
		t.Fatalf("resume: exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "resumed") && !strings.Contains(errOut, "resuming") {
		t.Errorf("stderr: %q", errOut)
	}
	after := journalLines(dir)
	if after <= before {
		t.Errorf("resume committed nothing (journal %d -> %d)", before, after)
	}

	// The merged history: one run per committed trial, no duplicates, no
	// gaps per policy, every run complete.
	f, err := rundir.OpenHistory(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := history.NewReader(bufio.NewReader(f))
	seen := map[string]bool{}
	trials := map[string][]int{}
	open := ""
	var e history.Event
	for {
		err := r.Read(&e)
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatalf("history unreadable after resume: %v", err)
		}
		switch e.Kind {
		case history.RunMeta:
			if open != "" {
				t.Fatalf("run %s has no run.end before the next run.meta", open)
			}
			key := fmt.Sprintf("%s/%s#%d", e.Meta.Scenario, e.Meta.Policy, e.Meta.Trial)
			if seen[key] {
				t.Fatalf("trial %s appears twice", key)
			}
			seen[key] = true
			trials[e.Meta.Policy] = append(trials[e.Meta.Policy], e.Meta.Trial)
			open = key
		case history.RunEnd:
			open = ""
		}
	}
	if open != "" {
		t.Fatalf("run %s is cut short", open)
	}
	if len(seen) != after {
		t.Errorf("history has %d runs, journal %d", len(seen), after)
	}
	for pol, ns := range trials {
		sort.Ints(ns)
		for i, n := range ns {
			if n != i {
				t.Fatalf("policy %s: trial numbers have a gap: %v", pol, ns)
			}
		}
	}
	sum := readState(t, filepath.Join(dir, render.SummaryFile))
	if sum.TrialsCommitted != after || len(sum.RSS) == 0 || sum.Resumes != before {
		t.Errorf("summary: trials=%d (journal %d) rss samples=%d resumedFrom=%d (want %d)", sum.TrialsCommitted, after, len(sum.RSS), sum.Resumes, before)
	}
	pods := 0
	for _, row := range sum.Rows {
		pods += row.Pods
	}
	records := 0
	rundir.EachPod(dir, func(*metrics.Record) error { records++; return nil })
	if records != pods {
		t.Errorf("pods.jsonl.zst has %d records, summary %d pods", records, pods)
	}
}

// startSoak starts `sidebench soak ARGS...` in a subprocess.
func startSoak(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	b, _ := json.Marshal(append([]string{"soak", "--quiet", "--checkpoint", "50ms"}, args...))
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SIDEBENCH_TEST_MAIN=1", "SIDEBENCH_TEST_ARGS="+string(b))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	// It dies with the test process, whatever stops that.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, &stderr
}

// killAt SIGKILLs cmd once dir's journal has at least n lines. It waits
// as long as the soak runs, however slowly (the test's -timeout is the
// backstop): a 60-second deadline failed it on a loaded machine, where
// each 50 ms checkpoint rewrites the reports of a growing run. A soak that
// ends before n trials fails the test at once.
func killAt(t *testing.T, cmd *exec.Cmd, stderr *bytes.Buffer, dir string, n int) {
	t.Helper()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	for journalLines(dir) < n {
		select {
		case err := <-exited:
			t.Fatalf("soak ended (%v) after %d of %d trials; stderr:\n%s", err, journalLines(dir), n, stderr.String())
		case <-time.After(2 * time.Millisecond):
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

// prefix copies the first n committed trials of a run directory into a
// new one (the journal cut after n lines; the data files are read up to
// its sizes).
func prefix(t *testing.T, from string, n int) string {
	t.Helper()
	to := filepath.Join(t.TempDir(), filepath.Base(from))
	copyDir(t, from, to)
	b, _ := os.ReadFile(filepath.Join(from, rundir.FileJournal))
	lines := bytes.SplitAfter(b, []byte("\n"))
	os.WriteFile(filepath.Join(to, rundir.FileJournal), bytes.Join(lines[:n], nil), 0o644)
	os.Remove(filepath.Join(to, render.SummaryFile))
	return to
}

// TestSoakKilledThriceEqualsUninterrupted: a soak with the soak defaults
// (compressed frames, kept histories of the pods with findings and a
// sample) SIGKILLed three times and resumed each time commits the same
// trials, byte for byte, as an uninterrupted soak with the same seeds,
// and judged they give the same table, findings and verdict.
func TestSoakKilledThriceEqualsUninterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess soaks")
	}
	base := t.TempDir()
	whole := filepath.Join(base, "whole")
	if _, errOut, code := run(t, "soak", "--quiet", "--duration", "1500ms", "--out", whole, "testdata/tiny.yaml"); code != ExitOK {
		t.Fatalf("uninterrupted soak: %d %s", code, errOut)
	}
	m := journalLines(whole)
	if m < 12 {
		t.Fatalf("uninterrupted soak committed %d trials; need >= 12", m)
	}
	killed := filepath.Join(base, "killed")
	// Killed at a trial count, never at the end of --duration.
	cmd, stderr := startSoak(t, "--duration", "10m", "--out", killed, "testdata/tiny.yaml")
	killAt(t, cmd, stderr, killed, m/4)
	for i, at := range []int{m / 2, 3 * m / 4} {
		cmd, stderr = startSoak(t, "--resume", killed, "--duration", "10m")
		killAt(t, cmd, stderr, killed, at)
		if journalLines(killed) < at {
			t.Fatalf("resume %d committed nothing", i+1)
		}
	}
	if _, errOut, code := run(t, "soak", "--quiet", "--resume", killed, "--duration", "1500ms"); code != ExitOK {
		t.Fatalf("last resume: %d %s", code, errOut)
	}
	if st := readState(t, filepath.Join(killed, render.SummaryFile)); st.Resumes == 0 {
		t.Errorf("summary: resumed from %d trials", st.Resumes)
	}
	n := min(journalLines(killed), m)
	a, b := prefix(t, whole, n), prefix(t, killed, n)

	// The same trials, byte for byte: every frame, and the journal but
	// for the trials' wall times.
	ja, _, _ := rundir.ReadJournal(filepath.Join(a, rundir.FileJournal))
	jb, _, _ := rundir.ReadJournal(filepath.Join(b, rundir.FileJournal))
	for i := range ja {
		x, y := ja[i], jb[i]
		x.ElapsedNanos, y.ElapsedNanos = 0, 0
		if fmt.Sprintf("%+v", x) != fmt.Sprintf("%+v", y) {
			t.Fatalf("trial %d: %+v\nvs uninterrupted %+v", i, y, x)
		}
	}
	last := ja[n-1]
	for name, size := range map[string]int64{rundir.FileHistory: last.History, rundir.FilePods: last.PodsBytes, rundir.FileFindings: last.FindingBytes, rundir.FileTrials: last.TrialsBytes} {
		fa, _ := os.ReadFile(filepath.Join(a, name))
		fb, _ := os.ReadFile(filepath.Join(b, name))
		if int64(len(fa)) < size || int64(len(fb)) < size || !bytes.Equal(fa[:size], fb[:size]) {
			t.Errorf("%s: the first %d trials differ", name, n)
		}
	}
	// The kept histories are retained ones (not every pod), compressed.
	if last.Retained >= last.Pods*n/2 {
		t.Errorf("retained %d pods in the last trial: the soak defaults keep findings and a sample", last.Retained)
	}
	// Judged: the same table, findings and verdict.
	ma, mb := filepath.Join(base, "ma"), filepath.Join(base, "mb")
	outA, _, codeA := run(t, "merge", "--quiet", "--out", ma, a)
	outB, _, codeB := run(t, "merge", "--quiet", "--out", mb, b)
	if outA != outB || codeA != codeB {
		t.Errorf("judged differently (exit %d vs %d):\n%s\nvs\n%s", codeA, codeB, outA, outB)
	}
	fa, _ := os.ReadFile(filepath.Join(ma, render.MarkdownFile))
	fb, _ := os.ReadFile(filepath.Join(mb, render.MarkdownFile))
	if sa, sb := findingsSection(fa), findingsSection(fb); sa != sb || sa == "" {
		t.Errorf("findings differ:\n%s\nvs\n%s", sa, sb)
	}
	t.Logf("%d trials compared (uninterrupted soak: %d)", n, m)
}

// findingsSection is report.md's invariants, findings and criteria (the
// header with times and directories left out).
func findingsSection(md []byte) string {
	s := string(md)
	if i := strings.Index(s, "## Invariants"); i >= 0 {
		return s[i:]
	}
	return ""
}

// TestSoakInterruptedNamesTheResume: an interrupted soak says how to
// continue with a command that runs as printed (it used to say "soak
// --resume", which without the directory is a usage error).
func TestSoakInterruptedNamesTheResume(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "soak")
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Ctrl-C before the first commit
	_, errOut, code := runCtx(t, ctx, "soak", "--quiet", "--duration", "200ms", "--out", dir, "testdata/tiny.yaml")
	m := regexp.MustCompile(`continue with 'sidebench (soak --resume [^']+)'`).FindStringSubmatch(errOut)
	if code != ExitFailed || m == nil {
		t.Fatalf("interrupted soak: exit %d, no 'sidebench soak --resume DIR' in %q", code, errOut)
	}
	if _, errOut, code := run(t, strings.Fields(m[1])...); code != ExitOK || !strings.Contains(errOut, "resumed "+dir) {
		t.Errorf("the printed %q: exit %d %q", m[1], code, errOut)
	}
}

// TestSoakRefusesTrials: --trials is hidden on soak (shared with run) and
// was silently ignored; it is refused.
func TestSoakRefusesTrials(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "soak")
	_, errOut, code := run(t, "soak", "--quiet", "--trials", "2", "--duration", "50ms", "--out", dir, "testdata/tiny.yaml")
	if code != ExitUsage || !strings.Contains(errOut, "--trials does not apply") {
		t.Errorf("soak --trials 2: exit %d %q", code, errOut)
	}
}

// TestSoakResumeKeepsItsSettings: a resume keeps the soak's seed,
// retention and slice; one given again with another value is refused
// (it was silently replaced), the same value is accepted.
func TestSoakResumeKeepsItsSettings(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "soak")
	if _, errOut, code := run(t, "soak", "--quiet", "--duration", "50ms", "--seed", "7", "--keep-history", "findings", "--out", dir, "testdata/tiny.yaml"); code != ExitOK {
		t.Fatalf("soak: %d %s", code, errOut)
	}
	for _, flags := range [][]string{{"--seed", "8"}, {"--keep-history", "all"}, {"--shard", "0/2"}} {
		_, errOut, code := run(t, append([]string{"soak", "--quiet", "--resume", dir, "--duration", "50ms"}, flags...)...)
		if code != ExitUsage || !strings.Contains(errOut, "resume it without") {
			t.Errorf("resume with %v: exit %d %q", flags, code, errOut)
		}
	}
	if _, errOut, code := run(t, "soak", "--quiet", "--resume", dir, "--duration", "50ms", "--seed", "7", "--keep-history", "findings"); code != ExitOK {
		t.Errorf("resume with the soak's own --seed and --keep-history: exit %d %q", code, errOut)
	}
	if st := readState(t, filepath.Join(dir, render.SummaryFile)); st.Resumes == 0 {
		t.Errorf("not resumed: %+v", st)
	}
}

// TestSoakResumeRefusesARun: a run's directory is not a soak; resuming it
// appended soak trials with fresh seeds to the finished run.
func TestSoakResumeRefusesARun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if _, errOut, code := run(t, "run", "--quiet", "--trials", "1", "--out", dir, "testdata/tiny.yaml"); code != ExitOK {
		t.Fatalf("run: %d %s", code, errOut)
	}
	before, _ := os.ReadFile(filepath.Join(dir, rundir.FileJournal))
	_, errOut, code := run(t, "soak", "--quiet", "--resume", dir, "--duration", "50ms")
	if code != ExitUsage || !strings.Contains(errOut, "not by a soak") {
		t.Errorf("soak --resume of a run: exit %d %q", code, errOut)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, rundir.FileJournal)); !bytes.Equal(before, after) {
		t.Errorf("the run's journal changed: %d -> %d bytes", len(before), len(after))
	}
}

// TestMergeOfPartialIsNotInterrupted: merging a partial input exits 1
// saying the result is partial, not that the merge was interrupted (it
// said "interrupted").
func TestMergeOfPartialIsNotInterrupted(t *testing.T) {
	base := t.TempDir()
	soak := filepath.Join(base, "soak")
	if _, errOut, code := run(t, "soak", "--quiet", "--duration", "50ms", "--out", soak, "testdata/tiny.yaml"); code != ExitOK {
		t.Fatalf("soak: exit %d %s", code, errOut)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a resume interrupted at once: the soak is partial
	if _, errOut, code := runCtx(t, ctx, "soak", "--quiet", "--resume", soak); code != ExitFailed {
		t.Fatalf("interrupted resume: exit %d %s", code, errOut)
	}
	if st := readState(t, filepath.Join(soak, render.SummaryFile)); st.Status != "partial" {
		t.Fatalf("the input is %s, want partial", st.Status)
	}
	_, errOut, code := run(t, "merge", "--quiet", "--out", filepath.Join(base, "m"), soak)
	if code != ExitFailed || strings.Contains(errOut, "interrupted") || !strings.Contains(errOut, "partial") {
		t.Errorf("merge of a partial input: exit %d %q", code, errOut)
	}
}
