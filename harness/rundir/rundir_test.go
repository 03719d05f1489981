package rundir

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sidebench/sidebench/harness/check"
	"github.com/sidebench/sidebench/harness/metrics"
	"github.com/sidebench/sidebench/harness/scenario"
	"github.com/sidebench/sidebench/reports/stats"
)

const tiny = `apiVersion: sidebench.dev/v1alpha1
kind: Scenario
metadata: {name: tiny}
cluster: {nodes: 1}
workloads:
- name: web
  count: 1
  template:
    spec:
      containers: [{name: app, image: app}]
  behaviors: {default: {startLatency: 100ms}}
`

// newDir creates a run directory with n committed (synthetic) trials.
func newDir(t *testing.T, n int) string {
	t.Helper()
	s := tinyScenario(t)
	dir := filepath.Join(t.TempDir(), "run")
	d, err := Create(dir, Info{Command: "soak", Backend: "sim"}, []*scenario.Scenario{s})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := d.Commit(finished(t, d, s.Hash, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// finished is synthetic trial i: a one-line history, one pod record, one
// finding, and stats with one invariant row.
func finished(t *testing.T, d *Dir, hash string, i int) *Finished {
	t.Helper()
	seg := d.NewSegment("tiny", "kep753", i)
	fw := NewFrameWriter(seg)
	fmt.Fprintf(fw, `{"t":0,"k":"run.meta","meta":{"scenario":"tiny","trial":%d}}`+"\n", i)
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	pod := fmt.Sprintf(`{"scenario":"tiny","policy":"kep753","seed":%d,"trial":%d,"pod":"p","job":false,"inits":0,"sidecars":0,"mains":1,"phase":"","deleted":false,"removed":false,"faulted":false,"latenciesMs":{"pod_startup":%d.5},"restarts":{"init":0,"sidecar":0,"main":0}}`+"\n", i, i, 100+i)
	find := fmt.Sprintf(`{"scenario":"tiny","policy":"kep753","trial":%d,"seed":%d,"id":"INV-S5","class":"violation","pod":"p","t":1,"msg":"m"}`+"\n", i, i)
	st := &TrialStats{Rows: []check.Row{{ID: "INV-S5", Rule: rules["INV-S5"], Checked: 1, Violations: 1, ViolatingPods: 1}},
		Metrics: metrics.Snapshot{Latencies: []metrics.LatencySnapshot{{Key: metrics.Key{Scenario: "tiny", Policy: "kep753", Metric: "pod_startup"}, Ms: stats.HistOf([]float64{float64(100 + i)})}}}}
	f, err := NewFinished(Entry{Scenario: "tiny", ScenarioHash: hash, Policy: "kep753", Trial: i, Seed: uint64(i), Pods: 1, Retained: 1}, seg, Compress([]byte(pod)), []byte(find), st)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func snapshot(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, f := range []string{FileHistory, FilePods, FileFindings, FileTrials, FileJournal, FileRun, "scenarios/tiny.yaml"} {
		b, _ := os.ReadFile(filepath.Join(dir, f))
		out[f] = b
	}
	return out
}

func unchanged(t *testing.T, dir string, before map[string][]byte) {
	t.Helper()
	for f, b := range snapshot(t, dir) {
		if !bytes.Equal(b, before[f]) {
			t.Errorf("%s changed although the open was refused", f)
		}
	}
}

func TestOpenResumes(t *testing.T) {
	dir := newDir(t, 5)
	d, _, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Resumed != 5 {
		t.Fatalf("resumed %d", d.Resumed)
	}
}

// TestOpenRefusesCorruptJournalLine: a corrupt line other than a torn last
// one is an error naming the line, and nothing is changed (it used to
// truncate every later trial away).
func TestOpenRefusesCorruptJournalLine(t *testing.T) {
	dir := newDir(t, 8)
	jp := filepath.Join(dir, FileJournal)
	b, _ := os.ReadFile(jp)
	lines := bytes.SplitAfter(b, []byte("\n"))
	lines[3] = append(lines[3][:len(lines[3])-6], '\n') // cut the last 5 bytes of line 4
	os.WriteFile(jp, bytes.Join(lines, nil), 0o644)
	before := snapshot(t, dir)
	_, _, err := Open(dir)
	var ue *UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), FileJournal+":4: corrupt journal line") {
		t.Fatalf("err = %v", err)
	}
	unchanged(t, dir, before)

	// The remedy the message gives works: keeping the lines before the
	// corrupt one, a resume continues from those 3 trials (it used to
	// name a 'soak --resume --repair' that does not exist).
	want := fmt.Sprintf("head -n 3 %s > %s.good && mv %s.good %s", jp, jp, jp, jp)
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v\nwant the remedy %q", err, want)
	}
	cmd := exec.Command("sh", "-c", want)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", want, err, out)
	}
	d, _, err := Open(dir)
	if err != nil {
		t.Fatalf("after the remedy: %v", err)
	}
	defer d.Close()
	if d.Resumed != 3 {
		t.Errorf("after the remedy %d trials resumed, want 3", d.Resumed)
	}
}

// TestOpenDropsTornLastLine: only a torn last line (a crash while it was
// written) may be dropped.
func TestOpenDropsTornLastLine(t *testing.T) {
	dir := newDir(t, 3)
	f, _ := os.OpenFile(filepath.Join(dir, FileJournal), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"scenario":"tiny","pol`)
	f.Close()
	d, _, err := Open(dir)
	if err != nil || d.Resumed != 3 {
		t.Fatalf("%v", err)
	}
	d.Close()
	if b, _ := os.ReadFile(filepath.Join(dir, FileJournal)); bytes.Contains(b, []byte(`"pol`+"\n")) || bytes.HasSuffix(b, []byte(`"pol`)) {
		t.Error("torn line kept")
	}
}

// TestLockRefusesSecondWriter: a second writer is refused and told who
// holds the directory (two resumes used to interleave trials).
func TestLockRefusesSecondWriter(t *testing.T) {
	dir := newDir(t, 2)
	d, _, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	_, _, err = Open(dir)
	var ue *UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "is in use by pid") || !strings.Contains(err.Error(), "soak --resume") {
		t.Fatalf("second open: %v", err)
	}
	unchanged(t, dir, before)
	d.Close()
	d2, _, err := Open(dir)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	d2.Close()
}

// TestOpenRefusesEditedScenario: resume verifies the hash recorded at
// creation (an edited copy used to mix 12-pod and 3-pod trials).
func TestOpenRefusesEditedScenario(t *testing.T) {
	dir := newDir(t, 2)
	p := filepath.Join(dir, "scenarios", "tiny.yaml")
	b, _ := os.ReadFile(p)
	os.WriteFile(p, bytes.Replace(b, []byte("count: 1"), []byte("count: 3"), 1), 0o644)
	before := snapshot(t, dir)
	_, _, err := Open(dir)
	if err == nil || !strings.Contains(err.Error(), "changed after the run started") {
		t.Fatalf("err = %v", err)
	}
	unchanged(t, dir, before)
}

// TestOpenRefusesShortDataFile: a data file shorter than the journal says
// was damaged outside sidebench; nothing is cut.
func TestOpenRefusesShortDataFile(t *testing.T) {
	dir := newDir(t, 3)
	os.Truncate(filepath.Join(dir, FilePods), 5)
	before := snapshot(t, dir)
	if _, _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "truncated outside sidebench") {
		t.Fatalf("err = %v", err)
	}
	unchanged(t, dir, before)
}

// TestCreateRefusesNonEmpty: a non-empty output directory is refused, and
// 'soak --resume' is offered only for a soak's run directory (the one
// command that continues a directory in place).
func TestCreateRefusesNonEmpty(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fill   func(dir string)
		resume bool
	}{
		{"other files", func(dir string) { os.WriteFile(filepath.Join(dir, "x"), nil, 0o644) }, false},
		{"a run", func(dir string) { os.WriteFile(filepath.Join(dir, FileRun), []byte(`{"command":"run"}`), 0o644) }, false},
		{"a merge", func(dir string) { os.WriteFile(filepath.Join(dir, FileRun), []byte(`{"command":"merge"}`), 0o644) }, false},
		{"a soak", func(dir string) { os.WriteFile(filepath.Join(dir, FileRun), []byte(`{"command":"soak"}`), 0o644) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.fill(dir)
			_, err := Create(dir, Info{}, nil)
			var ue *UsageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), "not empty") {
				t.Fatalf("err = %v", err)
			}
			want := "'sidebench soak --resume " + dir + "'"
			if got := strings.Contains(err.Error(), want); got != tc.resume {
				t.Errorf("offers %s: %v, want %v\n%v", want, got, tc.resume, err)
			}
			if !tc.resume && strings.Contains(err.Error(), "resume") {
				t.Errorf("offers a resume of a directory that is not a soak's: %v", err)
			}
		})
	}
}
