package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestExplainRunDirGolden guards "explain RUNDIR cannot list the pods that
// have findings", the unmarked violating event, the unexplained markers
// and "target=" printed twice.
func TestExplainRunDirGolden(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	if _, errOut, code := run(t, "run", "--quiet", "--out", dir, "testdata/tiny.yaml"); code != ExitOK && code != ExitFailed {
		t.Fatalf("run: exit %d %s", code, errOut)
	}
	list, errOut, code := run(t, "explain", dir)
	if code != ExitOK {
		t.Fatalf("explain RUNDIR: exit %d %s", code, errOut)
	}
	pod, errOut, code := run(t, "explain", dir, "--pod", "web-0", "--policy", "none", "--trial", "1")
	if code != ExitOK {
		t.Fatalf("explain --pod: exit %d %s", code, errOut)
	}
	golden(t, "explain", strings.ReplaceAll("$ sidebench explain RUNDIR\n"+list+"\n$ sidebench explain RUNDIR --pod web-0 --policy none --trial 1\n"+pod, dir, "RUNDIR"))
	for _, want := range []string{"POLICY  TRIAL  POD", "none    0      default/web-0", "INV-", "violation",
		"timeline of one: sidebench explain"} {
		if !strings.Contains(list, want) {
			t.Errorf("the list lacks %q:\n%s", want, list)
		}
	}
	if !strings.Contains(pod, "=> finding, at the instant the checker decided it") || !strings.Contains(pod, "\n=> ") {
		t.Errorf("the timeline has no legend or no marked finding:\n%s", pod)
	}
	for _, line := range strings.Split(pod, "\n") {
		if strings.Count(line, "target=") > 1 {
			t.Errorf("target= twice: %s", line)
		}
	}
	// A directory that is not a run is not a clean run: it read as one
	// ("no findings: every invariant held on every pod", exit 0).
	empty := filepath.Join(t.TempDir(), "c")
	if err := os.MkdirAll(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := run(t, "explain", empty)
	if code != ExitUsage || strings.Contains(out, "no findings") || !strings.Contains(errOut, "not a run directory (no run.json) and holds none") {
		t.Errorf("explain of a directory that is no run: exit %d %q %q", code, out, errOut)
	}
	// Nor is a run that has committed no trial yet.
	b, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(empty, "run.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code = run(t, "explain", empty)
	if code != ExitOK || out != empty+": no committed trial: nothing has been checked\n" {
		t.Errorf("explain of a run without trials: exit %d %q", code, out)
	}
}

// TestCompletion: `sidebench completion bash|zsh|fish` prints the shell's
// script (DisableDefaultCmd used to hide the command).
func TestCompletion(t *testing.T) {
	for shell, sig := range map[string]string{"bash": "# bash completion V2 for sidebench", "zsh": "#compdef sidebench", "fish": "complete -c sidebench"} {
		out, errOut, code := run(t, "completion", shell)
		if code != ExitOK || !strings.Contains(out, sig) {
			t.Errorf("completion %s: exit %d, stderr %q, script %.60q", shell, code, errOut, out)
		}
	}
}

// TestSuggestions: a mistyped command gets "did you mean".
func TestSuggestions(t *testing.T) {
	for typo, want := range map[string]string{"runn": "run", "valdate": "validate", "explian": "explain"} {
		_, errOut, code := run(t, typo)
		if code != ExitUsage || !strings.Contains(errOut, "Did you mean this?\n\t"+want) {
			t.Errorf("%s: exit %d, stderr %q", typo, code, errOut)
		}
	}
}

// TestEveryCommandHasExamples walks the command tree.
func TestEveryCommandHasExamples(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.Hidden && c.Name() != "help" && strings.TrimSpace(c.Example) == "" {
			t.Errorf("%s has no Examples", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewRootCommand(IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}))
}

// TestErrorsSayCommandPathOnce guards `sidebench: sidebench run: …`.
func TestErrorsSayCommandPathOnce(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run"}, "sidebench run: at least one scenario file is required\n"},
		{[]string{"run", "--bogus", "x.yaml"}, "sidebench run: unknown flag: --bogus\n"},
		{[]string{"explain"}, "sidebench explain: exactly one RUNDIR is required\n"},
		{[]string{"compare", "a"}, "sidebench compare: need at least two run directories"},
		{[]string{"frobnicate"}, "sidebench: unknown command \"frobnicate\" for \"sidebench\""},
	} {
		_, errOut, code := run(t, c.args...)
		if code != ExitUsage || !strings.HasPrefix(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want it to start with %q", c.args, code, errOut, c.want)
		}
		if first, _, _ := strings.Cut(errOut, "\n"); strings.Count(first, "sidebench") > 1+strings.Count(c.want, "\"sidebench\"") {
			t.Errorf("%v: the command path is repeated: %q", c.args, first)
		}
	}
}

// TestInitFromManifestsRuns: `sidebench init --from` on the three
// real-world manifests gives scenarios that validate and run (exit 0: the
// judged kep753 meets maxViolations under kubelet crashes).
func TestInitFromManifestsRuns(t *testing.T) {
	dir := t.TempDir()
	for _, m := range []string{"istio-injected-pod", "job-log-shipper", "deployment-two-sidecars"} {
		scen := filepath.Join(dir, m+".yaml")
		out, errOut, code := run(t, "init", scen, "--from", filepath.Join("..", "scenario", "testdata", "manifests", m+".yaml"))
		if code != ExitOK || !strings.Contains(out, "wrote "+scen) || errOut != "" {
			t.Fatalf("init %s: exit %d\n%s%s", m, code, out, errOut)
		}
		if _, errOut, code := run(t, "validate", scen); code != ExitOK || errOut != "" {
			t.Errorf("validate %s: exit %d %s", m, code, errOut)
		}
		out, errOut, code = run(t, "run", "--quiet", "--trials", "1", "--out", filepath.Join(dir, "run-"+m), scen)
		if code != ExitOK {
			t.Errorf("run %s: exit %d\n%s%s", m, code, out, errOut)
		}
	}
	// Not twice without --force; --from - reads stdin.
	scen := filepath.Join(dir, "istio-injected-pod.yaml")
	if _, errOut, code := run(t, "init", scen); code != ExitUsage || !strings.Contains(errOut, "exists; pass --force") {
		t.Errorf("init over a file: exit %d %q", code, errOut)
	}
	manifest, _ := os.ReadFile(filepath.Join("..", "scenario", "testdata", "manifests", "job-log-shipper.yaml"))
	var out, errOut bytes.Buffer
	code := runWith(context.Background(), IOStreams{In: bytes.NewReader(manifest), Out: &out, ErrOut: &errOut}, defaultDeps(),
		[]string{"init", filepath.Join(dir, "stdin.yaml"), "--from", "-"})
	if code != ExitOK || !strings.Contains(out.String(), "workload(s) nightly-report") {
		t.Errorf("init --from -: exit %d\n%s%s", code, out.String(), errOut.String())
	}
}

// TestManifestGivenAsScenario guards `unknown kind Pod` with no hint: run
// and validate say to wrap a Pod, Deployment or Job with sidebench init;
// validate warns about a probe-gated sidecar with no behaviour.
func TestManifestGivenAsScenario(t *testing.T) {
	dir := t.TempDir()
	pod := filepath.Join(dir, "web.yaml")
	os.WriteFile(pod, []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers: [{name: app, image: nginx}]\n"), 0o644)
	deploy := filepath.Join(dir, "deploy.yaml")
	os.WriteFile(deploy, []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n"), 0o644)
	for _, args := range [][]string{{"validate", pod}, {"run", "--quiet", pod}, {"run", "--quiet", deploy}} {
		_, errOut, code := run(t, args...)
		if code != ExitUsage || !strings.Contains(errOut, "wrap it with `sidebench init") {
			t.Errorf("%v: exit %d %q", args, code, errOut)
		}
	}
	gated := filepath.Join(dir, "gated.yaml")
	os.WriteFile(gated, []byte(`apiVersion: sidebench.dev/v1alpha1
kind: Scenario
metadata: {name: gated}
cluster: {nodes: 1}
workloads:
- name: web
  count: 1
  template:
    spec:
      initContainers:
      - {name: proxy, image: envoy, restartPolicy: Always, startupProbe: {exec: {command: ["true"]}}}
      containers:
      - {name: app, image: app}
  behaviors:
    default: {startLatency: 100ms}
`), 0o644)
	out, errOut, code := run(t, "validate", gated)
	if code != ExitOK || !strings.Contains(out, "ok: scenario gated") || !strings.Contains(errOut, `warning: sidecar "proxy" is gated by a startupProbe`) {
		t.Errorf("validate gated: exit %d\n%s%s", code, out, errOut)
	}
}

// TestInitFromEmptyRefused: an empty --from (kubectl printed nothing, as
// for a mistyped pod name) is refused and nothing is written; it used to
// scaffold the example pod and exit 0, as if no --from had been given.
func TestInitFromEmptyRefused(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.yaml")
	os.WriteFile(empty, []byte("\n"), 0o644)
	for _, from := range []string{"-", empty} {
		scen := filepath.Join(dir, "web.yaml")
		var out, errOut bytes.Buffer
		code := runWith(context.Background(), IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, defaultDeps(),
			[]string{"init", scen, "--from", from})
		if code != ExitUsage || !strings.Contains(errOut.String(), "empty") {
			t.Errorf("init --from %s (empty): exit %d\n%s%s", from, code, out.String(), errOut.String())
		}
		if _, err := os.Stat(scen); err == nil {
			t.Errorf("init --from %s (empty) wrote %s", from, scen)
			os.Remove(scen)
		}
	}
}

// TestInitNeverOverwritesAManifest: 'sidebench init deploy.yaml --force'
// (the manifest given as FILE instead of --from) overwrote the manifest
// with the example scenario, and '--from deploy.yaml' with FILE the same
// file overwrote it with its own scaffold. Both are refused, naming the
// command meant, and the manifest is left byte for byte.
func TestInitNeverOverwritesAManifest(t *testing.T) {
	dir := t.TempDir()
	deploy := filepath.Join(dir, "deploy.yaml")
	manifest := []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers: [{name: app, image: nginx}]\n")
	os.WriteFile(deploy, manifest, 0o644)
	for _, args := range [][]string{{"init", deploy}, {"init", deploy, "--force"}, {"init", deploy, "--from", deploy, "--force"}} {
		_, errOut, code := run(t, args...)
		if code != ExitUsage || !strings.Contains(errOut, "holds a Deployment manifest") || !strings.Contains(errOut, "--from "+deploy) {
			t.Errorf("%v: exit %d %q", args, code, errOut)
		}
		if b, _ := os.ReadFile(deploy); !bytes.Equal(b, manifest) {
			t.Fatalf("%v changed the manifest:\n%s", args, b)
		}
	}
	// A scenario is still overwritten with --force.
	scen := filepath.Join(dir, "web.yaml")
	if _, errOut, code := run(t, "init", scen); code != ExitOK {
		t.Fatalf("init: exit %d %s", code, errOut)
	}
	if _, errOut, code := run(t, "init", scen, "--from", deploy, "--force"); code != ExitOK {
		t.Errorf("init --force over a scenario: exit %d %s", code, errOut)
	}
}
