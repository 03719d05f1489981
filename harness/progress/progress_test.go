package progress

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// lockedBuffer is written by the reporter's ticker goroutine and read by
// the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// tickUntil steps the fake clock by one interval and waits until the
// summary it triggers contains want. The deadline only guards against a
// hang: the line comes from one tick of simulated time, whatever the
// machine's load.
func tickUntil(t *testing.T, clk *testingclock.FakeClock, interval time.Duration, buf *lockedBuffer, want string) {
	t.Helper()
	clk.Step(interval)
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(buf.String(), want); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q after one interval in:\n%s", want, buf.String())
		}
	}
}

func TestPlainOffTTY(t *testing.T) {
	var buf lockedBuffer
	clk := testingclock.NewFakeClock(time.Unix(1_700_000_000, 0))
	r := New(&buf, Options{Interval: 10 * time.Second, Clock: clk})
	if r.Mode() != Plain {
		t.Fatalf("mode %v, want Plain for a non-terminal writer", r.Mode())
	}
	s := r.AddScenario("demo", 2, 10)
	s.TrialDone(5, 1)
	// One trial took 10s: the other is due in 10s.
	tickUntil(t, clk, 10*time.Second, &buf, "progress: demo: 1/2 trials, pods 5/10  violations 1, eta 10s")
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
	var buf lockedBuffer
	clk := testingclock.NewFakeClock(time.Unix(1_700_000_000, 0))
	r := New(&buf, Options{Mode: Plain, Interval: time.Minute, Clock: clk})
	s := r.AddScenario("soak", 0, 0)
	s.TrialDone(3, 0)
	tickUntil(t, clk, time.Minute, &buf, "progress: soak: 1 trials, pods 3  violations 0, elapsed 1m0s")
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
