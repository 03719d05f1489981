package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLoad decodes and validates arbitrary input: it must never panic,
// whatever loads has a cost estimate, and whatever fits the memory budget
// must expand. `make test` runs it for a few seconds on its committed
// corpus (testdata/fuzz/FuzzLoad).
func FuzzLoad(f *testing.F) {
	files, _ := filepath.Glob("testdata/invalid/*.yaml")
	cost, _ := filepath.Glob("testdata/cost/*.yaml")
	files = append(append(files, cost...), "testdata/valid.yaml", "testdata/base-override.yaml")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := LoadBytes("fuzz.yaml", data)
		if err != nil {
			_ = err.Error()
			return
		}
		if err := s.CheckBudget(Budget{Bytes: 1 << 30, Parallel: 1, RetainedPerPod: DefaultRetainedPerPod, ExpandsTrials: true}); err != nil {
			if _, ok := err.(ErrorList); !ok || !strings.Contains(err.Error(), "needs about") {
				t.Fatalf("budget error %T: %v", err, err)
			}
			return // refused: running it would exhaust the fuzzer's memory
		}
		if len(s.Policies) == 0 || len(Expand(s)) == 0 {
			t.Fatalf("loaded scenario has no trials")
		}
	})
}
