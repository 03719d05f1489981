//go:build linux || darwin

package progress

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sidebench/sidebench/internal/ptyscreen"
)

const cols, rows = 100, 24

// runWithLine drives a reporter on a sized pseudo-terminal through a run
// of three trials, writing one stderr line while the bars are live, with
// write, and returns the final screen.
func runWithLine(t *testing.T, write func(r *Reporter, tty *os.File, line string)) *ptyscreen.Screen {
	// CI set means Plain (no bars in CI logs); this test is about the
	// terminal, so it must not inherit the CI job's environment.
	t.Setenv("CI", "")
	scr := ptyscreen.New(t, cols, rows)
	clk := newClock()
	r := New(scr.TTY, Options{Now: clk.now})
	if r.Mode() != Bars {
		t.Fatalf("mode %v on a sized pseudo-terminal, want Bars", r.Mode())
	}
	s := r.AddScenario("policy-comparison", 3, 30)
	clk.advance(time.Second)
	s.PodsDone(4)
	scr.WaitFor(t, "pods 4/30") // the bar is on the screen
	// Not waited for: in the broken case the next redraw may erase it
	// before any poll sees it. The redraws waited for below come after it
	// in the terminal's byte stream.
	write(r, scr.TTY, "sidebench: warning: a stderr line written during the run")
	done := 4
	for _, pods := range []int{10, 20, 30} {
		clk.advance(time.Second)
		s.PodsDone(pods - done) // pods finish within the trial...
		done = pods
		s.TrialDone(10, 0)                              // ...then it is committed
		scr.WaitFor(t, fmt.Sprintf("pods %d/30", pods)) // redrawn after the line
	}
	r.Close()
	scr.WaitFor(t, "pods/s  in 4s") // the finished bar: elapsed time instead of the ETA
	return scr
}

// TestTerminalKeepsLogLines is issue 18's observation, on a 100×24
// pseudo-terminal read through a VT100 emulator: a line written through
// Reporter.Writer while the bars are live is still on the screen at the
// end, above the bar, and the bar is drawn once.
func TestTerminalKeepsLogLines(t *testing.T) {
	scr := runWithLine(t, func(r *Reporter, _ *os.File, line string) {
		fmt.Fprintln(r.Writer(), line)
	})
	final := strings.Join(scr.Lines(), "\n")
	t.Logf("final screen:\n%s", strings.TrimRight(final, "\n"))
	if n := scr.RowsWith("a stderr line written during the run"); n != 1 {
		t.Errorf("the stderr line is on %d rows, want 1:\n%s", n, final)
	}
	if n := scr.RowsWith("policy-comparison"); n != 1 {
		t.Errorf("the bar is on %d rows, want 1 (duplicated bars):\n%s", n, final)
	}
	var lineRow, barRow int
	for i, l := range scr.Lines() {
		if strings.Contains(l, "a stderr line") {
			lineRow = i
		}
		if strings.Contains(l, "policy-comparison") {
			barRow = i
			if !strings.Contains(l, "3/3 trials") || !strings.Contains(l, "pods 30/30") || !strings.Contains(l, "pods/s") {
				t.Errorf("final bar %q lacks trials, pods or rate", l)
			}
		}
	}
	if lineRow >= barRow {
		t.Errorf("the line (row %d) is not above the bar (row %d):\n%s", lineRow, barRow, final)
	}
}

// TestTerminalBypassErasesLine shows what the emulator catches: the same
// line written to the terminal around the reporter (as the CLI did with
// the bars on stdout and its messages on stderr, one terminal) is erased
// by the next redraw, and the bar above it is left behind, duplicated.
func TestTerminalBypassErasesLine(t *testing.T) {
	scr := runWithLine(t, func(_ *Reporter, tty *os.File, line string) {
		fmt.Fprintln(tty, line)
	})
	final := strings.Join(scr.Lines(), "\n")
	if scr.RowsWith("a stderr line written during the run") != 0 || scr.RowsWith("policy-comparison") < 2 {
		t.Errorf("a write around mpb survived intact; the emulator test cannot tell a broken terminal from a good one:\n%s", final)
	}
}
