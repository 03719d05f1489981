package scenario

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestShippedScenariosLoad(t *testing.T) {
	names := ShippedNames()
	if len(names) == 0 {
		t.Fatal("no shipped scenarios")
	}
	for _, n := range names {
		s, err := LoadShipped(n)
		if err != nil {
			t.Errorf("%s: %v", n, err)
			continue
		}
		if s.Metadata.Name != n {
			t.Errorf("%s: metadata.name %q differs from the file name", n, s.Metadata.Name)
		}
		if len(Expand(s)) != len(s.Policies)*s.TrialCount() {
			t.Errorf("%s: expansion size", n)
		}
	}
}

// Load reads no more than the size limit: `sidebench validate /dev/zero`
// ran out of memory (issue 15, item 5), and so did a 30 MB file, because
// the whole file was read and indexed before its size was checked.
func TestLoadBoundsTheRead(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(big, bytes.Repeat([]byte("a:\n "), 10<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/dev/zero", big} {
		if _, err := os.Stat(path); err != nil {
			t.Logf("skip %s: %v", path, err)
			continue
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := Load(path)
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), "larger than") || !strings.HasPrefix(err.Error(), path) {
			t.Errorf("%s: err = %v, want the size limit naming the file", path, err)
		}
		if alloc, limit := after.TotalAlloc-before.TotalAlloc, uint64(4*MaxFileSize); alloc > limit {
			t.Errorf("%s: allocated %d bytes, want at most %d", path, alloc, limit)
		}
	}
}
