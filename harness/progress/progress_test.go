package progress

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is the reporter's clock in tests: it moves only when told.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock { return &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// syncBuffer is a bytes.Buffer safe for the reporter's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestPlainOffTTY(t *testing.T) {
	var buf syncBuffer
	clk := newClock()
	// The summary is called directly: no dependence on the ticker.
	r := New(&buf, Options{Interval: time.Hour, Now: clk.now})
	if r.Mode() != Plain {
		t.Fatalf("mode %v, want Plain for a non-terminal writer", r.Mode())
	}
	s := r.AddScenario("demo", 2, 100)
	clk.advance(10 * time.Second)
	s.PodsDone(20) // a long trial, 20 pods in
	r.summary()
	s.TrialDone(50, 1)
	clk.advance(10 * time.Second)
	r.summary()
	s.TrialDone(50, 0)
	r.Logf("hello %d", 1)
	r.Close()
	out := buf.String()
	for _, want := range []string{
		"progress: demo: started, 2 trials, 100 pods\n",
		// Per pod within the trial, with rate and ETA: 20 pods in 10 s,
		// 80 left at 2/s.
		"progress: demo: 0/2 trials, pods 20/100, 2.0 pods/s  violations 0, eta 40s\n",
		"progress: demo: 1/2 trials, pods 50/100, 2.5 pods/s  violations 1, eta 20s\n",
		"hello 1\n",
		"progress: demo: finished 2/2 trials, pods 100/100, 5.0 pods/s  violations 1, in 20s\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if strings.ContainsRune(out, 0x1b) {
		t.Errorf("ANSI escape in plain output: %q", out)
	}
}

// TestPodsNotCountedTwice: pods reported as they finish and again at the
// trial's commit count once; a caller that reports only at commit still
// advances.
func TestPodsNotCountedTwice(t *testing.T) {
	r := New(io.Discard, Options{Mode: Quiet})
	s := r.AddScenario("x", 2, 10)
	s.PodsDone(3)
	s.PodDone()
	s.PodsDone(1)
	if got := s.podsText(); got != "pods 5/10" {
		t.Errorf("streamed: %s", got)
	}
	s.TrialDone(5, 0)
	if got := s.podsText(); got != "pods 5/10" {
		t.Errorf("after commit: %s", got)
	}
	s.TrialDone(5, 0) // this trial's pods were never streamed
	if got := s.podsText(); got != "pods 10/10" {
		t.Errorf("commit only: %s", got)
	}
	r.Close()
}

// TestWriterLines: log lines pass whole, never split by a progress line;
// a partial line waits for its newline, or for Close.
func TestWriterLines(t *testing.T) {
	var buf syncBuffer
	clk := newClock()
	r := New(&buf, Options{Interval: time.Hour, Now: clk.now})
	s := r.AddScenario("demo", 1, 1)
	w := r.Writer()
	io.WriteString(w, "sidebench: warn")
	r.summary() // must not land inside the half-written line
	io.WriteString(w, "ing: half\nsidebench: tail without newline")
	s.TrialDone(1, 0)
	r.Close()
	out := buf.String()
	if !strings.Contains(out, "\nsidebench: warning: half\n") || !strings.Contains(out, "\nsidebench: tail without newline\n") {
		t.Errorf("lines split or lost:\n%s", out)
	}
	// After Close the writer writes straight through.
	fmt.Fprintln(w, "after close")
	if !strings.HasSuffix(buf.String(), "after close\n") {
		t.Errorf("write after Close lost:\n%s", buf.String())
	}
}

// TestQuiet: no progress at all, but log lines still pass.
func TestQuiet(t *testing.T) {
	var buf syncBuffer
	r := New(&buf, Options{Mode: Quiet})
	s := r.AddScenario("demo", 1, 1)
	s.PodsDone(1)
	s.TrialDone(1, 0)
	fmt.Fprintln(r.Writer(), "sidebench: a warning")
	r.Close()
	if got := buf.String(); got != "sidebench: a warning\n" {
		t.Fatalf("quiet wrote %q", got)
	}
}

func TestBarsForced(t *testing.T) {
	var buf syncBuffer
	r := New(&buf, Options{Mode: Bars})
	s := r.AddScenario("demo", 2, 4)
	s.PodsDone(2)
	s.TrialDone(2, 0)
	s.TrialDone(2, 0)
	r.Close() // must not hang
	b := New(&buf, Options{Mode: Bars})
	b.AddScenario("stopped early", 3, 9).TrialDone(3, 0)
	b.Close() // an aborted bar must not hang either
}

func TestOpenEnded(t *testing.T) {
	var buf syncBuffer
	clk := newClock()
	r := New(&buf, Options{Mode: Plain, Interval: time.Hour, Now: clk.now})
	s := r.AddScenario("soak", 0, 0)
	s.TrialDone(3, 0)
	clk.advance(2 * time.Second)
	r.summary()
	r.Close()
	out := buf.String()
	for _, want := range []string{"progress: soak: started, open-ended", "progress: soak: 1 trials, pods 3, 1.5 pods/s  violations 0, elapsed 2s", "progress: soak: finished 1 trials"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	var bb syncBuffer
	rb := New(&bb, Options{Mode: Bars})
	sb := rb.AddScenario("soak", 0, 0)
	sb.TrialDone(1, 0)
	sb.TrialDone(1, 0)
	rb.Close()
}

// TestConcurrentUpdates hammers a live bar from several goroutines while
// log lines go through the writer: no deadlock with mpb's render loop
// (run with -race).
func TestConcurrentUpdates(t *testing.T) {
	var buf syncBuffer
	r := New(&buf, Options{Mode: Bars})
	a := r.AddScenario("a", 4, 400)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				a.PodDone()
				if i%25 == 0 {
					fmt.Fprintf(r.Writer(), "goroutine %d at %d\n", g, i)
				}
			}
			a.TrialDone(100, 0)
		}()
	}
	b := r.AddScenario("b", 1, 0) // added while a renders
	b.TrialDone(7, 0)
	wg.Wait()
	r.Close()
}
