package scenario

import (
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/sidebench/sidebench/harness/faults"
	"github.com/sidebench/sidebench/reference-impl/api"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestValidateErrorsGolden loads every testdata/invalid/*.yaml (one kind of
// mistake each) and compares the error text with the .golden file next to
// it. Run with -update to rewrite.
func TestValidateErrorsGolden(t *testing.T) {
	// A fixed set of shipped scenarios keeps "allowed:" lists stable.
	so, err := fs.ReadFile(ShippedFS, "start-ordering.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer func(old fs.FS) { ShippedFS = old }(ShippedFS)
	ShippedFS = fstest.MapFS{"start-ordering.yaml": {Data: so}}
	if _, err := Load("testdata/valid.yaml"); err != nil {
		t.Fatalf("valid.yaml: %v", err)
	}
	files, _ := filepath.Glob("testdata/invalid/*.yaml")
	if len(files) < 10 {
		t.Fatalf("want >= 10 invalid cases, have %d", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			_, err := Load(f)
			if err == nil {
				t.Fatal("loaded without error")
			}
			got := normalizeLists(err.Error() + "\n")
			golden := strings.TrimSuffix(f, ".yaml") + ".golden"
			if *update {
				os.WriteFile(golden, []byte(got), 0o644)
				return
			}
			want, _ := os.ReadFile(golden)
			if got != string(want) {
				t.Errorf("error mismatch\n got: %s\nwant: %s", got, want)
			}
			if !strings.HasPrefix(got, f) && !strings.HasPrefix(got, "scenarios/") {
				t.Errorf("error does not name the file: %s", got)
			}
		})
	}
}

// normalizeLists replaces catalogues owned by other packages (bug replicas,
// fault types) with placeholders, so that adding an entry there does not
// break these goldens.
func normalizeLists(s string) string {
	s = strings.ReplaceAll(s, strings.Join(api.BugNames(), ", "), "<bug replicas>")
	s = strings.ReplaceAll(s, strings.Join(faults.KindNames(), ", "), "<fault types>")
	return s
}
