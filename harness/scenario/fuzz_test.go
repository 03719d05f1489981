package scenario

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoad decodes and validates arbitrary input: it must never panic, and
// whatever loads must expand.
func FuzzLoad(f *testing.F) {
	files, _ := filepath.Glob("testdata/invalid/*.yaml")
	files = append(files, "testdata/valid.yaml", "testdata/base-override.yaml")
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
		if len(s.Policies) == 0 || len(Expand(s)) == 0 {
			t.Fatalf("loaded scenario has no trials")
		}
	})
}
