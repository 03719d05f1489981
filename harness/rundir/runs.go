package rundir

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// IsRun reports whether dir is a run directory: it has run.json, which a
// run writes before its first trial.
func IsRun(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, FileRun))
	return err == nil && fi.Mode().IsRegular()
}

// Runs returns the run directories that path names: path itself when it
// is one, else the run directories directly inside it, sorted by name.
// The second form is what `sidebench run --out DIR a.yaml b.yaml` writes
// (DIR/a, DIR/b), so every command that reads runs takes that DIR too.
// Anything else is a UsageError that says what was looked for: a
// directory with no run.json used to read as a run with no trials ("no
// findings: every invariant held").
func Runs(path string) ([]string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, usage("%s: not a run directory: %v", path, unwrapPath(err))
	}
	if !fi.IsDir() {
		return nil, usage("%s: not a run directory (a file)", path)
	}
	if IsRun(path) {
		return []string{path}, nil
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return nil, usage("%s: not a run directory: %v", path, unwrapPath(err))
	}
	var runs []string
	for _, e := range ents {
		if sub := filepath.Join(path, e.Name()); e.IsDir() && IsRun(sub) {
			runs = append(runs, sub)
		}
	}
	if len(runs) == 0 {
		return nil, usage("%s: not a run directory (no %s) and holds none", path, FileRun)
	}
	return runs, nil // os.ReadDir sorts by name
}

// notARun is the error for a dir whose run.json could not be read: it
// says what is missing, and what dir holds when it is a directory of runs
// (the bare "no such file or directory" read as if dir itself was
// missing).
func notARun(dir string, err error) error {
	if fi, serr := os.Stat(dir); serr != nil || !fi.IsDir() || !errors.Is(err, os.ErrNotExist) {
		return usage("%s: not a run directory: %v", dir, unwrapPath(err))
	}
	if runs, rerr := Runs(dir); rerr == nil {
		return usage("%s: not a run directory (no %s): it holds the runs of %s; give one of them, such as %s", dir, FileRun, RunNames(runs), runs[0])
	}
	return usage("%s: not a run directory (no %s)", dir, FileRun)
}

// RunNames names runs by their directories' base names: "a, b".
func RunNames(runs []string) string {
	names := make([]string, len(runs))
	for i, r := range runs {
		names[i] = filepath.Base(r)
	}
	return strings.Join(names, ", ")
}

// ExpandRuns applies Runs to every path, in order.
func ExpandRuns(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		runs, err := Runs(p)
		if err != nil {
			return nil, err
		}
		out = append(out, runs...)
	}
	return out, nil
}

// RunGroups is ExpandRuns for commands that keep a multi-scenario run's
// layout (merge writes OUT/<name> from every DIR/<name>; compare compares
// A/<name> with B/<name>): when every path holds run directories rather
// than being one, it returns them grouped by their base name, in name
// order, each group in the order of paths; when every path is a run
// directory, one group of them under the name "". Mixing the two, or a
// name missing from some paths, is a UsageError naming it.
func RunGroups(paths []string) (names []string, groups [][]string, err error) {
	var parents, runs []string
	for _, p := range paths {
		if IsRun(p) {
			runs = append(runs, p)
		} else {
			parents = append(parents, p)
		}
	}
	if len(parents) == 0 {
		return []string{""}, [][]string{paths}, nil
	}
	if len(runs) > 0 {
		return nil, nil, usage("%s is a run directory but %s holds run directories: give run directories (such as %s) or directories of them, not both",
			runs[0], parents[0], filepath.Join(parents[0], "<scenario>"))
	}
	byName := map[string][]string{}
	for _, p := range paths {
		sub, err := Runs(p)
		if err != nil {
			return nil, nil, err
		}
		for _, s := range sub {
			n := filepath.Base(s)
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
			byName[n] = append(byName[n], s)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		if len(byName[n]) != len(paths) {
			var missing []string
			for _, p := range paths {
				if !IsRun(filepath.Join(p, n)) {
					missing = append(missing, p)
				}
			}
			return nil, nil, usage("%s: no run %q (the others have one): every directory must hold the same scenarios' runs", strings.Join(missing, ", "), n)
		}
		groups = append(groups, byName[n])
	}
	return names, groups, nil
}
