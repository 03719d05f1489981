package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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
	args, _ := json.Marshal([]string{"soak", "--duration", "1m", "--checkpoint", "100ms", "--quiet", "--keep-history", "all", "--out", dir, "testdata/tiny.yaml"})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SIDEBENCH_TEST_MAIN=1", "SIDEBENCH_TEST_ARGS="+string(args))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for journalLines(dir) < 6 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("soak did not commit trials in time; stderr:\n%s", stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
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
