package rundir

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestRunsAndRunGroups(t *testing.T) {
	root := t.TempDir()
	mk := func(path string, run bool) string {
		t.Helper()
		p := filepath.Join(root, path)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if run {
			if err := os.WriteFile(filepath.Join(p, FileRun), []byte("{}"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}
	one := mk("one", true)
	mk("night/b", true)
	mk("night/a", true)
	mk("night/notes", false)
	mk("night/a/nested", true) // a run inside a run is not another run of the night
	mk("other/a", true)
	mk("other/b", true)
	mk("deep/x/y", true) // runs two levels down are not looked for
	file := filepath.Join(root, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		path    string
		want    []string
		wantErr string
	}{
		{one, []string{one}, ""},
		{filepath.Join(root, "night"), []string{filepath.Join(root, "night/a"), filepath.Join(root, "night/b")}, ""},
		{filepath.Join(root, "deep"), nil, "not a run directory (no run.json) and holds none"},
		{file, nil, "not a run directory (a file)"},
		{filepath.Join(root, "missing"), nil, "not a run directory: no such file or directory"},
	} {
		got, err := Runs(tc.path)
		if tc.wantErr != "" {
			var ue *UsageError
			if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Runs(%s): %v, want a usage error saying %q", tc.path, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("Runs(%s) = %v, %v; want %v", tc.path, got, err, tc.want)
		}
	}

	names, groups, err := RunGroups([]string{filepath.Join(root, "night"), filepath.Join(root, "other")})
	if err != nil || !slices.Equal(names, []string{"a", "b"}) || len(groups) != 2 ||
		!slices.Equal(groups[0], []string{filepath.Join(root, "night/a"), filepath.Join(root, "other/a")}) {
		t.Errorf("RunGroups of two nights: %v %v %v", names, groups, err)
	}
	names, groups, err = RunGroups([]string{one, one})
	if err != nil || !slices.Equal(names, []string{""}) || !slices.Equal(groups[0], []string{one, one}) {
		t.Errorf("RunGroups of runs: %v %v %v", names, groups, err)
	}
	if _, _, err := RunGroups([]string{one, filepath.Join(root, "night")}); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Errorf("RunGroups of a run and a directory of runs: %v", err)
	}
	mk("short/a", true)
	if _, _, err := RunGroups([]string{filepath.Join(root, "night"), filepath.Join(root, "short")}); err == nil || !strings.Contains(err.Error(), filepath.Join(root, "short")+`: no run "b"`) {
		t.Errorf("RunGroups of nights without the same scenarios: %v", err)
	}
}
