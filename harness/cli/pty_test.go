//go:build linux || darwin

package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sidebench/sidebench/harness/backend"
	simbackend "github.com/sidebench/sidebench/harness/backend/sim"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/trial"
	"github.com/sidebench/sidebench/internal/ptyscreen"
)

// chattyBackend is the sim backend that writes a line to its log (the
// stderr writer the CLI gives backends) at the start of trial 1, once the
// bars are on the screen, and holds trial 2 until they were redrawn after
// that line.
type chattyBackend struct {
	log        io.Writer
	scr        *ptyscreen.Screen
	t          *testing.T
	said, held *sync.Once
}

func (chattyBackend) Supports(string) (bool, string) { return true, "" }

func (b chattyBackend) RunTrial(ctx context.Context, p *trial.Plan, sink history.Sink) (backend.Stats, error) {
	// tiny.yaml runs kep753's trials 0-2, then none's.
	switch p.Number {
	case 1:
		b.said.Do(func() {
			b.scr.WaitFor(b.t, "1/6 trials") // the bars are live
			fmt.Fprintf(b.log, "sidebench: backend: a message during trial %d\n", p.Number)
		})
	case 2:
		b.held.Do(func() { b.scr.WaitFor(b.t, "2/6 trials") }) // a redraw after the message
	}
	return simbackend.Backend{Version: "test"}.RunTrial(ctx, p, sink)
}

// TestRunKeepsStderrLinesOnTerminal is issue 18's observation through the
// whole CLI: on a sized pseudo-terminal, a backend's stderr line written
// while the bars are live is still on the screen at the end, once, above
// the one bar of the scenario; the result table is on stdout only.
func TestRunKeepsStderrLinesOnTerminal(t *testing.T) {
	scr := ptyscreen.New(t, 110, 30)
	d := deps{newBackend: func(name string, f *backendFlags, log io.Writer) (backend.Backend, error) {
		return chattyBackend{log: log, scr: scr, t: t, said: &sync.Once{}, held: &sync.Once{}}, nil
	}}
	var out bytes.Buffer
	dir := filepath.Join(t.TempDir(), "r")
	args := []string{"run", "--progress", "bars", "--trials", "3", "--out", dir, "testdata/tiny.yaml"}
	streams := IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: scr.TTY}
	code := runWith(context.Background(), streams, d, args)
	if code != ExitOK && code != ExitFailed {
		t.Fatalf("exit %d", code)
	}
	scr.WaitFor(t, "wrote "+dir)
	final := strings.Join(scr.Lines(), "\n")
	t.Logf("final screen:\n%s", strings.TrimRight(final, "\n"))
	if n := scr.RowsWith("a message during trial 1"); n != 1 {
		t.Errorf("the backend's line is on %d rows, want 1", n)
	}
	if n := scr.RowsWith("tiny"); n != 1 {
		t.Errorf("the scenario's bar is on %d rows, want 1 (duplicated bars)", n)
	}
	msg, bar := -1, -1
	for i, l := range scr.Lines() {
		if strings.Contains(l, "a message during trial 1") {
			msg = i
		}
		if strings.Contains(l, "tiny") {
			bar = i
		}
	}
	if msg < 0 || bar < 0 || msg > bar {
		t.Errorf("the line (row %d) is not above the bar (row %d)", msg, bar)
	}
	if scr.RowsWith("POLICY") != 0 || !strings.Contains(out.String(), "POLICY") {
		t.Errorf("the result table is not on stdout alone")
	}
}
