package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestPlainOffTTY(t *testing.T) {
	var buf bytes.Buffer
	r := New(&buf, Options{Interval: 5 * time.Millisecond})
	if r.Mode() != Plain {
		t.Fatalf("mode %v, want Plain for a non-terminal writer", r.Mode())
	}
	s := r.AddScenario("demo", 2, 10)
	s.TrialDone(5, 1)
	time.Sleep(30 * time.Millisecond)
	s.TrialDone(5, 0)
	r.Logf("hello %d", 1)
	r.Close()
	out := buf.String()
	for _, want := range []string{"progress: demo: started, 2 trials, 10 pods", "progress: demo: 1/2 trials, pods 5/10  violations 1", "progress: demo: finished 2/2 trials, pods 10/10  violations 1", "hello 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if strings.ContainsRune(out, 0x1b) {
		t.Errorf("ANSI escape in plain output: %q", out)
	}
}

func TestQuiet(t *testing.T) {
	var buf bytes.Buffer
	r := New(&buf, Options{Mode: Quiet})
	s := r.AddScenario("demo", 1, 1)
	s.TrialDone(1, 0)
	r.Logf("x")
	r.Close()
	if buf.Len() != 0 {
		t.Fatalf("quiet wrote %q", buf.String())
	}
}

func TestBarsForced(t *testing.T) {
	var buf bytes.Buffer
	r := New(&buf, Options{Mode: Bars})
	s := r.AddScenario("demo", 2, 4)
	s.TrialDone(2, 0)
	s.TrialDone(2, 0)
	r.Close() // must not hang
}

func TestOpenEnded(t *testing.T) {
	var buf bytes.Buffer
	r := New(&buf, Options{Mode: Plain, Interval: time.Millisecond})
	s := r.AddScenario("soak", 0, 0)
	s.TrialDone(3, 0)
	time.Sleep(10 * time.Millisecond)
	r.Close()
	out := buf.String()
	for _, want := range []string{"progress: soak: started, open-ended", "progress: soak: 1 trials, pods 3  violations 0, elapsed", "progress: soak: finished 1 trials"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	var bb bytes.Buffer
	rb := New(&bb, Options{Mode: Bars})
	sb := rb.AddScenario("soak", 0, 0)
	sb.TrialDone(1, 0)
	sb.TrialDone(1, 0)
	rb.Close()
}
