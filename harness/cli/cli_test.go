package cli

import (
	"bytes"
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sidebench/sidebench/harness/backend"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/rundir"
	"github.com/sidebench/sidebench/harness/trial"
	"github.com/sidebench/sidebench/reports/render"
)

var update = flag.Bool("update", false, "rewrite golden files")

// run runs the CLI in-process and returns stdout, stderr and the exit code.
func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return runCtx(t, context.Background(), args...)
}

func runCtx(t *testing.T, ctx context.Context, args ...string) (string, string, int) {
	t.Helper()
	return runDeps(t, ctx, defaultDeps(), args...)
}

// runDeps runs the CLI with injected dependencies (a test backend).
func runDeps(t *testing.T, ctx context.Context, d deps, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := runWith(ctx, IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, d, args)
	return out.String(), errOut.String(), code
}

// wrapBackend returns deps whose backends are wrapped by wrap.
func wrapBackend(wrap func(name string, be backend.Backend) backend.Backend) deps {
	return deps{newBackend: func(name string, f *backendFlags, log io.Writer) (backend.Backend, error) {
		be, err := newBackend(name, f, log)
		if err != nil {
			return nil, err
		}
		return wrap(name, be), nil
	}}
}

// readHistory returns a run directory's committed history, decompressed.
func readHistory(t *testing.T, dir string) []byte {
	t.Helper()
	h, err := rundir.OpenHistory(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	b, err := io.ReadAll(h)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readState reads the "sidebench" section of a summary.json.
func readState(t *testing.T, path string) *render.RunState {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := render.ReadState(f)
	if err != nil || st == nil {
		t.Fatalf("%s: %v (state %v)", path, err, st)
	}
	return st
}

// golden compares got with testdata/NAME.golden (-update rewrites it).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		os.WriteFile(path+".got", []byte(got), 0o644)
		t.Errorf("%s differs from golden (see %s.got):\n--- got\n%s\n--- want\n%s", name, path, got, want)
	}
}

func TestHelpGolden(t *testing.T) {
	for _, cmd := range []string{"", "run", "soak", "validate", "check", "explain", "compare", "graduate", "init", "version"} {
		name := cmd
		if name == "" {
			name = "root"
		}
		t.Run(name, func(t *testing.T) {
			args := []string{"--help"}
			if cmd != "" {
				args = []string{cmd, "--help"}
			}
			out, errOut, code := run(t, args...)
			if code != 0 || errOut != "" {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			golden(t, "help/"+name, out)
		})
	}
}

func TestUsageErrors(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none")) // no cluster for --backend kube
	cases := [][]string{
		{"frobnicate"},
		{"run"},
		{"run", "--bogus", "x.yaml"},
		{"run", "--backend", "local", "--nodes", "0", "testdata/tiny.yaml"},
		{"run", "--backend", "kube", "testdata/tiny.yaml"},
		{"run", "--backend", "nope", "testdata/tiny.yaml"},
		// Refused whatever the backend and --quiet (both ran).
		{"run", "--out", filepath.Join(t.TempDir(), "o"), "--horizon", "-1s", "testdata/tiny.yaml"},
		{"run", "--out", filepath.Join(t.TempDir(), "o"), "--horizon", "0s", "testdata/tiny.yaml"},
		{"run", "--out", filepath.Join(t.TempDir(), "o"), "--quiet", "--progress", "weird", "testdata/tiny.yaml"},
		{"soak", "--out", filepath.Join(t.TempDir(), "o"), "--duration", "1ms", "--quiet", "--progress", "weird", "testdata/tiny.yaml"},
		{"soak", "--out", filepath.Join(t.TempDir(), "o"), "--duration", "-1s", "testdata/tiny.yaml"},
		{"soak", "testdata/tiny.yaml"},
		{"explain", "somewhere"},
		{"validate"},
		{"check"},
	}
	for _, args := range cases {
		_, errOut, code := run(t, args...)
		if code != ExitUsage {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", args, code, errOut)
		}
		if !strings.HasPrefix(errOut, "sidebench") || strings.Contains(errOut, "sidebench: sidebench") {
			t.Errorf("%v: stderr %q", args, errOut)
		}
	}
	_, errOut, _ := run(t, "run", "--backend", "kube", "testdata/tiny.yaml")
	if !strings.Contains(errOut, "no cluster: give --kubeconfig") {
		t.Errorf("kube backend without a cluster: %q", errOut)
	}
}

func TestValidateGolden(t *testing.T) {
	out, errOut, code := run(t, "validate", "testdata/tiny.yaml", "testdata/bad.yaml")
	if code != ExitUsage {
		t.Fatalf("exit %d", code)
	}
	golden(t, "validate", "stdout:\n"+out+"stderr:\n"+errOut)
}

func TestVersion(t *testing.T) {
	out, _, code := run(t, "version")
	if code != 0 || !strings.HasPrefix(out, "sidebench ") {
		t.Fatalf("%d %q", code, out)
	}
}

var ansi = regexp.MustCompile("\x1b")

// TestRunTableGolden runs the committed tiny scenario and compares the
// result table; stdout is not a terminal, so progress is plain lines.
func TestRunTableGolden(t *testing.T) {
	dir := t.TempDir()
	out, errOut, code := run(t, "run", "--quiet", "--out", filepath.Join(dir, "r"), "testdata/tiny.yaml")
	if code != ExitOK && code != ExitFailed {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	golden(t, "run-table", out)
	for _, f := range []string{rundir.FileHistory, rundir.FilePods, rundir.FileFindings, render.SummaryFile, rundir.FileJournal, rundir.FileRun, "report.md", "report.html", "junit.xml"} {
		if _, err := os.Stat(filepath.Join(dir, "r", f)); err != nil {
			t.Errorf("missing %s", f)
		}
	}
	sum := readState(t, filepath.Join(dir, "r", render.SummaryFile))
	if b, _ := os.ReadFile(filepath.Join(dir, "r", render.SummaryFile)); !bytes.HasPrefix(b, []byte("{\n  \"schemaVersion\": 1,")) {
		t.Errorf("summary.json is not reports/render's schema: %.80s", b)
	}
	if sum.Partial || sum.Status != "complete" || sum.TrialsCommitted != 4 || len(sum.Rows) != 2 {
		t.Errorf("summary: partial=%v status=%s trials=%d rows=%d", sum.Partial, sum.Status, sum.TrialsCommitted, len(sum.Rows))
	}
	// Same seed, same table (determinism).
	out2, _, _ := run(t, "run", "--quiet", "--parallel", "3", "--out", filepath.Join(dir, "r2"), "testdata/tiny.yaml")
	if out2 != out {
		t.Errorf("--parallel 3 changed the table:\n%s\nvs\n%s", out2, out)
	}
	h1, _ := os.ReadFile(filepath.Join(dir, "r", rundir.FileHistory))
	h2, _ := os.ReadFile(filepath.Join(dir, "r2", rundir.FileHistory))
	if !bytes.Equal(h1, h2) {
		t.Error("--parallel changed history.jsonl")
	}
	// check and explain work on the run directory.
	for _, target := range []string{filepath.Join(dir, "r", rundir.FileHistory), filepath.Join(dir, "r")} {
		if _, errOut, code := run(t, "check", target); code == ExitUsage || code == ExitInternal {
			t.Errorf("check %s: exit %d %s", target, code, errOut)
		}
	}
	exp, errOut, code := run(t, "explain", filepath.Join(dir, "r"), "--pod", "web-0", "--policy", "none", "--trial", "1")
	if code != 0 {
		t.Fatalf("explain: exit %d %s", code, errOut)
	}
	for _, want := range []string{"pod default/web-0  scenario=tiny policy=none trial=1", "spec: restartPolicy=Always", "container.running proxy", "findings:"} {
		if !strings.Contains(exp, want) {
			t.Errorf("explain output lacks %q:\n%s", want, exp)
		}
	}
}

// TestRunPlainProgress: with a non-terminal stderr, progress is plain
// lines on stderr (stdout keeps the result table only) and carries no ANSI
// control characters.
func TestRunPlainProgress(t *testing.T) {
	dir := t.TempDir()
	out, errOut, code := run(t, "run", "--out", filepath.Join(dir, "r"), "testdata/tiny.yaml")
	if code != ExitOK && code != ExitFailed {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"progress: tiny: started, 4 trials, 24 pods", "progress: tiny: finished 4/4 trials"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if !strings.Contains(out, "POLICY") || strings.Contains(out, "progress:") {
		t.Errorf("stdout is not the result table alone:\n%s", out)
	}
	if ansi.MatchString(out + errOut) {
		t.Errorf("ANSI control characters in non-terminal output: %q", out)
	}
	t.Setenv("CI", "true")
	_, errOut, _ = run(t, "run", "--progress", "auto", "--out", filepath.Join(dir, "r2"), "testdata/tiny.yaml")
	if ansi.MatchString(errOut) || !strings.Contains(errOut, "progress: tiny") {
		t.Errorf("CI output: %q", errOut)
	}
}

func TestRunOutNotEmpty(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "x"), nil, 0o644)
	_, errOut, code := run(t, "run", "--quiet", "--out", dir, "testdata/tiny.yaml")
	if code != ExitUsage || !strings.Contains(errOut, "not empty") {
		t.Fatalf("exit %d %q", code, errOut)
	}
}

// TestOutNotEmptyAdviceWorks: the refusal of a non-empty --out offers
// 'soak --resume' only for a soak's directory, and the command it prints
// there runs as printed. It used to offer 'soak --resume' for a run's
// directory too, which failed (no --duration) or, given one, appended
// soak trials to the finished run.
func TestOutNotEmptyAdviceWorks(t *testing.T) {
	base := t.TempDir()
	ran := filepath.Join(base, "ran")
	if _, errOut, code := run(t, "run", "--quiet", "--trials", "1", "--out", ran, "testdata/tiny.yaml"); code != ExitOK {
		t.Fatalf("run: %d %s", code, errOut)
	}
	_, errOut, code := run(t, "run", "--quiet", "--out", ran, "testdata/tiny.yaml")
	if code != ExitUsage || !strings.Contains(errOut, "use another --out") || strings.Contains(errOut, "resume") {
		t.Errorf("a run's directory: exit %d %q", code, errOut)
	}

	soaked := filepath.Join(base, "soaked")
	if _, errOut, code := run(t, "soak", "--quiet", "--duration", "200ms", "--out", soaked, "testdata/tiny.yaml"); code != ExitOK {
		t.Fatalf("soak: %d %s", code, errOut)
	}
	_, errOut, code = run(t, "run", "--quiet", "--out", soaked, "testdata/tiny.yaml")
	m := regexp.MustCompile(`'sidebench (soak --resume [^']+)'`).FindStringSubmatch(errOut)
	if code != ExitUsage || m == nil {
		t.Fatalf("a soak's directory: exit %d, no 'sidebench soak --resume DIR' in %q", code, errOut)
	}
	if _, errOut, code := run(t, strings.Fields(m[1])...); code != ExitOK || !strings.Contains(errOut, "resumed "+soaked) {
		t.Errorf("the printed %q: exit %d %q", m[1], code, errOut)
	}
}

func TestRunSkipsLarge(t *testing.T) {
	dir := t.TempDir()
	src, _ := os.ReadFile("testdata/tiny.yaml")
	large := strings.Replace(string(src), "  name: tiny", "  name: tiny-large\n  tags: [large]", 1)
	p := filepath.Join(dir, "large.yaml")
	os.WriteFile(p, []byte(large), 0o644)
	_, errOut, code := run(t, "run", "--quiet", "--out", filepath.Join(dir, "r"), p)
	if code != ExitUsage || !strings.Contains(errOut, "tagged large") {
		t.Fatalf("exit %d %q", code, errOut)
	}
	out, _, code := run(t, "run", "--quiet", "--include-large", "--trials", "1", "--out", filepath.Join(dir, "r2"), p)
	if code == ExitUsage || !strings.Contains(out, "tiny-large") {
		t.Fatalf("exit %d %q", code, out)
	}
}

// cancelAt cancels the run when trial number n starts.
type cancelAt struct {
	n      int
	cancel context.CancelFunc
	be     backend.Backend
}

func (c cancelAt) RunTrial(ctx context.Context, p *trial.Plan, sink history.Sink) (backend.Stats, error) {
	if p.Number == c.n {
		c.cancel()
	}
	return c.be.RunTrial(ctx, p, sink)
}

// TestInterruptPartial: Ctrl-C (context cancellation) stops the run
// cleanly; what was recorded stays, marked partial.
func TestInterruptPartial(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := wrapBackend(func(_ string, be backend.Backend) backend.Backend { return cancelAt{n: 1, cancel: cancel, be: be} })
	dir := filepath.Join(t.TempDir(), "r")
	out, errOut, code := runDeps(t, ctx, d, "run", "--quiet", "--trials", "5", "--out", dir, "testdata/tiny.yaml")
	if code != ExitFailed || !strings.Contains(errOut, "partial") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	sum := readState(t, filepath.Join(dir, render.SummaryFile))
	if !sum.Partial || sum.Status != "partial" || sum.TrialsCommitted < 1 || sum.TrialsCommitted >= 10 {
		t.Fatalf("summary partial=%v status=%s trials=%d\n%s", sum.Partial, sum.Status, sum.TrialsCommitted, out)
	}
	// Every committed trial is whole in the history: run.meta ... run.end.
	h := readHistory(t, dir)
	if n, m := bytes.Count(h, []byte(`"run.meta"`)), bytes.Count(h, []byte(`"run.end"`)); n != sum.TrialsCommitted || m != n {
		t.Errorf("history: %d run.meta, %d run.end, %d trials committed", n, m, sum.TrialsCommitted)
	}
}

type failing struct{}

func (failing) RunTrial(context.Context, *trial.Plan, history.Sink) (backend.Stats, error) {
	return backend.Stats{}, os.ErrPermission
}

func TestInternalErrorExit3(t *testing.T) {
	d := wrapBackend(func(string, backend.Backend) backend.Backend { return failing{} })
	_, errOut, code := runDeps(t, context.Background(), d, "run", "--quiet", "--out", filepath.Join(t.TempDir(), "r"), "testdata/tiny.yaml")
	if code != ExitInternal || !strings.Contains(errOut, "permission denied") {
		t.Fatalf("exit %d %q", code, errOut)
	}
}

// TestResumeTruncatesTornTail: bytes written after the last journal line
// (a trial cut short by a crash) are dropped on resume.
func TestResumeTruncatesTornTail(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	_, errOut, code := run(t, "soak", "--quiet", "--duration", "50ms", "--checkpoint", "1h", "--out", dir, "testdata/tiny.yaml")
	if code == ExitUsage || code == ExitInternal {
		t.Fatalf("exit %d %s", code, errOut)
	}
	committed := journalLines(dir)
	if committed == 0 {
		t.Fatal("nothing committed")
	}
	hist, _ := os.ReadFile(filepath.Join(dir, rundir.FileHistory))
	pods, _ := os.ReadFile(filepath.Join(dir, rundir.FilePods))
	appendFile := func(name, s string) {
		f, _ := os.OpenFile(filepath.Join(dir, name), os.O_APPEND|os.O_WRONLY, 0)
		f.WriteString(s)
		f.Close()
	}
	appendFile(rundir.FileHistory, `{"t":0,"k":"run.meta","meta":{"scenario":"tiny","trial":99}}`+"\n"+`{"t":1,"k":"pod.crea`)
	appendFile(rundir.FilePods, `{"scenario":"tiny","pod":"torn"`)
	appendFile(rundir.FileJournal, `{"scenario":"tiny","policy":"kep753","tri`)
	rd, _, err := rundir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	rd.Close()
	got, _ := os.ReadFile(filepath.Join(dir, rundir.FileHistory))
	if !bytes.Equal(got, hist) {
		t.Errorf("history not truncated to the last commit: %d bytes, want %d", len(got), len(hist))
	}
	if n := journalLines(dir); n != committed {
		t.Errorf("journal has %d lines, want %d", n, committed)
	}
	if p, _ := os.ReadFile(filepath.Join(dir, rundir.FilePods)); !bytes.Equal(p, pods) {
		t.Error("pods.jsonl.zst not truncated")
	}
}

// TestSoakKeepsASampleByDefault: a soak without --keep-history keeps
// findings plus 0.1% of the other pods, and its help says so (it said
// "all", run's default, while the soak kept the sample).
func TestSoakKeepsASampleByDefault(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	if _, errOut, code := run(t, "soak", "--quiet", "--duration", "1ms", "--out", dir, "testdata/tiny.yaml"); code != ExitOK && code != ExitFailed {
		t.Fatalf("soak: exit %d %s", code, errOut)
	}
	info, err := rundir.ReadInfo(dir)
	if err != nil || info.KeepHistory != rundir.DefaultSoakRetention.String() {
		t.Errorf("run.json keepHistory %q (%v), want %q", info.KeepHistory, err, rundir.DefaultSoakRetention)
	}
	help, _, _ := run(t, "soak", "--help")
	if !strings.Contains(help, `(default "`+rundir.DefaultSoakRetention.String()+`")`) {
		t.Errorf("soak --help does not give the soak's default:\n%s", help)
	}
}
