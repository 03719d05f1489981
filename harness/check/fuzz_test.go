package check

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sidebench/sidebench/harness/history"
)

// FuzzCheck feeds arbitrary bytes to the checker as a history file, as
// `sidebench check` does: it must never panic, no checker may panic on a
// history the reader accepts (a checker panic is recorded as an unknown
// verdict, which on valid input is a checker bug), and skipping the
// checkers a pod rules out must change nothing (gatingDiff). `make test`
// runs it for a few seconds; testdata/fuzz/FuzzCheck is its committed
// corpus (seeded from the committed histories and malformed/ fixtures).
func FuzzCheck(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.jsonl")
	more, _ := filepath.Glob("testdata/malformed/*.jsonl")
	for _, p := range append(files, more...) {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewRunner(Workers(1))
		pods := 0
		err := forEachPod(history.NewReader(bytes.NewReader(data)), func(*history.Meta) error { return nil }, func(meta *history.Meta, pod string, evs []history.Event) error {
			pods++
			r.Add(meta, pod, evs)
			if d := gatingDiff(meta, pod, evs); d != "" { // gating_test.go
				t.Fatal(d)
			}
			return nil
		})
		rep := r.Close()
		var le *history.LineError
		if err != nil && !errors.As(err, &le) {
			t.Fatalf("error without a line number: %v", err)
		}
		if rep.Pods != pods {
			t.Fatalf("report counts %d pods, %d were checked", rep.Pods, pods)
		}
		for _, e := range rep.Errors {
			if strings.Contains(e.Err, "panicked") {
				t.Fatalf("%s on pod %s: %s", e.ID, e.Pod, e.Err)
			}
		}
		var out bytes.Buffer
		rep.WriteText(&out, 10)
	})
}
