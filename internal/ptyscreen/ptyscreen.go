//go:build linux || darwin

// Package ptyscreen is a test helper: a sized pseudo-terminal whose
// output is read through a VT100 emulator, so that a test can assert what
// a user would see on the screen at the end (lines erased by a redraw,
// progress bars drawn twice). Tests of harness/progress and harness/cli
// use it.
package ptyscreen

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/hinshun/vt10x"
)

// Screen is what a terminal of Cols × Rows shows.
type Screen struct {
	// TTY is the program's side: pass it as stderr.
	TTY  *os.File
	ptmx *os.File
	vt   vt10x.Terminal
	done chan struct{}
}

// New opens a pseudo-terminal of cols × rows; the test is skipped when
// the system has none. It is closed at the end of the test.
func New(t *testing.T, cols, rows int) *Screen {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	if err := pty.Setsize(ptmx, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)}); err != nil {
		t.Fatal(err)
	}
	s := &Screen{TTY: tty, ptmx: ptmx, vt: vt10x.New(vt10x.WithSize(cols, rows)), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			if n > 0 {
				s.vt.Write(buf[:n])
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		tty.Close()
		ptmx.Close()
		<-s.done
	})
	return s
}

// Lines returns the screen's rows, trailing blanks trimmed.
func (s *Screen) Lines() []string {
	var out []string
	for _, l := range strings.Split(s.vt.String(), "\n") {
		out = append(out, strings.TrimRight(l, " \x00"))
	}
	return out
}

// WaitFor waits until some row of the screen contains want. The timeout
// only guards against a hang; nothing is asserted about time.
func (s *Screen) WaitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if strings.Contains(s.vt.String(), want) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("the screen never showed %q:\n%s", want, strings.Join(s.Lines(), "\n"))
}

// RowsWith counts the rows of the screen containing sub.
func (s *Screen) RowsWith(sub string) int {
	n := 0
	for _, l := range s.Lines() {
		if strings.Contains(l, sub) {
			n++
		}
	}
	return n
}
