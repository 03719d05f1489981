package scenario

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sidebench/sidebench/scenarios"
	corev1 "k8s.io/api/core/v1"
)

func sidecarNames(w *Workload) []string {
	var out []string
	for _, c := range w.Template.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			out = append(out, c.Name)
		}
	}
	return out
}

// TestScaffoldFromManifests: `sidebench init --from` on three real-world
// manifests (an Istio-injected pod as kubectl prints it, a Job with a log
// shipper and its ConfigMap, a Deployment with two sidecars and its
// Service) gives scenarios that validate without warnings, with every
// sidecar behaving, compared with testdata/manifests/*.scenario.golden.
func TestScaffoldFromManifests(t *testing.T) {
	for _, c := range []struct {
		file     string
		workload string
		count    int
		sidecars []string
		job      bool
		skipped  string
	}{
		{"istio-injected-pod.yaml", "reviews", 20, []string{"istio-proxy"}, false, ""},
		{"job-log-shipper.yaml", "nightly-report", 5, []string{"fluent-bit"}, true, "ConfigMap report-fluent-bit"},
		{"deployment-two-sidecars.yaml", "orders-api", 12, []string{"cloud-sql-proxy", "otel-collector"}, false, "Service orders-api"},
	} {
		t.Run(c.file, func(t *testing.T) {
			path := filepath.Join("testdata", "manifests", c.file)
			m, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			out, err := Scaffold(ScaffoldInput{Name: "my-" + c.file, Source: path, Manifest: m})
			if err != nil {
				t.Fatal(err)
			}
			goldenFile(t, strings.TrimSuffix(path, ".yaml")+".scenario.golden", out)
			s, err := LoadBytes("scaffold.yaml", out)
			if err != nil {
				t.Fatalf("the scaffold does not validate: %v\n%s", err, out)
			}
			if ws := s.Warnings(); len(ws) > 0 {
				t.Errorf("warnings: %v", ws)
			}
			if len(s.Workloads) != 1 {
				t.Fatalf("%d workloads", len(s.Workloads))
			}
			w := &s.Workloads[0]
			if w.Name != c.workload || w.Count != c.count || (w.Completion != nil) != c.job || (w.Lifetime != nil) == c.job {
				t.Errorf("workload %s count %d completion %v lifetime %v", w.Name, w.Count, w.Completion != nil, w.Lifetime != nil)
			}
			if got := sidecarNames(w); !slices.Equal(got, c.sidecars) {
				t.Errorf("sidecars %v, want %v", got, c.sidecars)
			}
			for _, sc := range c.sidecars {
				if _, ok := w.Behaviors[sc]; !ok {
					t.Errorf("sidecar %s has no behaviour", sc)
				}
			}
			if c.skipped != "" && !strings.Contains(string(out), "# Skipped (not workloads): "+c.skipped) {
				t.Errorf("the header does not name the skipped %s", c.skipped)
			}
			// The commented alternatives validate too once uncommented.
			alt := regexp.MustCompile(`(?m)^# (- \{type: .*)$`).ReplaceAll(out, []byte("$1"))
			s2, err := LoadBytes("alternatives.yaml", alt)
			if err != nil {
				t.Fatalf("the commented faults do not validate: %v", err)
			}
			if len(s2.Faults) != 4 {
				t.Errorf("%d faults once uncommented, want 4", len(s2.Faults))
			}
		})
	}
}

// TestScaffoldSkeletonAndErrors: without a manifest the scaffold is an
// example that validates; a manifest without a workload, or that is not
// YAML, is an error naming the source.
func TestScaffoldSkeletonAndErrors(t *testing.T) {
	out, err := Scaffold(ScaffoldInput{Name: "dir/My Scenario.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := LoadBytes("skeleton.yaml", out)
	if err != nil {
		t.Fatalf("skeleton: %v", err)
	}
	if s.Metadata.Name != "my-scenario" {
		t.Errorf("name %q", s.Metadata.Name)
	}
	for _, c := range []struct{ manifest, want string }{
		{"apiVersion: v1\nkind: Service\nmetadata: {name: web}\n", "m.yaml: no workload to scaffold from (found Service web); init reads CronJob, DaemonSet, Deployment"},
		{"kind: Deployment\nmetadata: {name: web}\nspec: {}\n", "m.yaml: document 1: Deployment web has no spec.template"},
		{"kind: Pod\nspec: {containers: []}\n", "the pod template has no containers"},
		{"kind: [\n", "m.yaml: document 1:"},
	} {
		_, err := Scaffold(ScaffoldInput{Name: "x", Source: "m.yaml", Manifest: []byte(c.manifest)})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.manifest, err, c.want)
		}
	}
}

// TestManifestHint guards "unknown kind Pod" with no hint: a Kubernetes
// manifest given as a scenario says how to wrap it.
func TestManifestHint(t *testing.T) {
	for _, kind := range []string{"Pod", "Deployment", "Job", "CronJob"} {
		_, err := LoadBytes("web.yaml", []byte("apiVersion: v1\nkind: "+kind+"\nmetadata: {name: web}\n"))
		if err == nil {
			t.Fatalf("%s accepted as a scenario", kind)
		}
		want := "web.yaml:2:1: kind: this is a Kubernetes " + kind + ", not a sidebench scenario: wrap it with `sidebench init web-scenario.yaml --from web.yaml`"
		if !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: %v\nwant %s", kind, err, want)
		}
		if strings.Contains(err.Error(), "apiVersion") {
			t.Errorf("%s: the apiVersion error hides the hint: %v", kind, err)
		}
	}
	// A manifest of several documents (kubectl's output: a Deployment and
	// its Service) gets the hint too, and the command it names scaffolds
	// a scenario that loads. It used to get only "exactly one YAML
	// document".
	for _, name := range []string{"deployment-two-sidecars", "job-log-shipper"} {
		file := filepath.Join("testdata", "manifests", name+".yaml")
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		_, err = LoadBytes(file, data)
		want := "wrap it with `sidebench init " + name + "-scenario.yaml --from " + file + "`"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v\nwant %s", file, err, want)
			continue
		}
		out, err := Scaffold(ScaffoldInput{Name: name + "-scenario.yaml", Source: file, Manifest: data})
		if err != nil {
			t.Fatalf("the hinted init on %s: %v", file, err)
		}
		if _, err := LoadBytes(name+"-scenario.yaml", out); err != nil {
			t.Errorf("the scenario the hinted init writes for %s does not load: %v", file, err)
		}
	}
	// A file of several documents none of which init reads keeps the
	// plain error.
	if _, err := LoadBytes("x.yaml", []byte("kind: Service\n---\nkind: ConfigMap\n")); err == nil || strings.Contains(err.Error(), "sidebench init") {
		t.Errorf("Service and ConfigMap: %v", err)
	}
	// Other kinds keep the plain error.
	_, err := LoadBytes("x.yaml", []byte("apiVersion: sidebench.dev/v1alpha1\nkind: Senario\n"))
	if err == nil || strings.Contains(err.Error(), "sidebench init") || !strings.Contains(err.Error(), "Scenario") {
		t.Errorf("misspelt kind: %v", err)
	}
}

// TestWarningsProbeGatedSidecar guards "a probe-gated sidecar with no
// behaviour entry validates silently and gets a 0 s startup".
func TestWarningsProbeGatedSidecar(t *testing.T) {
	src := `apiVersion: sidebench.dev/v1alpha1
kind: Scenario
metadata: {name: w}
cluster: {nodes: 1}
workloads:
- name: web
  count: 1
  template:
    spec:
      initContainers:
      - name: proxy
        image: envoy
        restartPolicy: Always
        startupProbe: {exec: {command: ["true"]}}
      - name: shipper
        image: fluent-bit
        restartPolicy: Always
        lifecycle: {postStart: {exec: {command: ["true"]}}}
      - name: plain
        image: sidecar
        restartPolicy: Always
      containers:
      - name: app
        image: app
  behaviors:
    default: {startLatency: 100ms}
    shipper: {termHandling: 1s}
`
	s, err := LoadBytes("w.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	ws := s.Warnings()
	if len(ws) != 2 {
		t.Fatalf("%d warnings, want 2 (proxy, shipper): %v", len(ws), ws)
	}
	if !strings.HasPrefix(ws[0], "w.yaml:11: workloads[0].template.spec.initContainers[0]: warning: sidecar \"proxy\" is gated by a startupProbe (startupAfter) but has no behaviour of its own") {
		t.Errorf("proxy warning: %s", ws[0])
	}
	if !strings.Contains(ws[1], `sidecar "shipper" is gated by a postStart hook (postStart) but has a behaviour that does not say how long it takes`) {
		t.Errorf("shipper warning: %s", ws[1])
	}
	// The warnings' examples, followed as printed, measure the gates: no
	// warning is left. (The example used to be startupAfter for every
	// gate, which left a postStart hook's warning standing.)
	followed := src
	for _, w := range ws {
		m := regexp.MustCompile(`set behaviors\.(\S+) \(e\.g\. (.+)\)$`).FindStringSubmatch(w)
		if m == nil {
			t.Fatalf("no example in %q", w)
		}
		var fields []string
		for _, f := range strings.Split(m[2], " and ") {
			k, v, _ := strings.Cut(f, ": ")
			fields = append(fields, fmt.Sprintf("%s: %q", k, v))
		}
		followed = strings.Replace(followed, "    default: {startLatency: 100ms}\n", "    default: {startLatency: 100ms}\n    "+m[1]+": {"+strings.Join(fields, ", ")+"}\n", 1)
	}
	followed = strings.Replace(followed, "    shipper: {termHandling: 1s}\n", "", 1)
	s, err = LoadBytes("w.yaml", []byte(followed))
	if err != nil {
		t.Fatalf("the warnings' examples, followed: %v\n%s", err, followed)
	}
	if ws := s.Warnings(); len(ws) != 0 {
		t.Errorf("warnings after following their examples: %v\n%s", ws, followed)
	}
	// Measured: no warning.
	s, err = LoadBytes("w.yaml", []byte(strings.Replace(src, "shipper: {termHandling: 1s}", "shipper: {postStart: 1s}\n    proxy: {startupAfter: 2s}", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if ws := s.Warnings(); len(ws) != 0 {
		t.Errorf("warnings once measured: %v", ws)
	}
}

func goldenFile(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update creates it)", err)
	}
	if string(got) != string(want) {
		os.WriteFile(path+".got", got, 0o644)
		t.Errorf("%s differs (got in %s.got)", path, path)
	}
}

// TestWarnsWithoutANativeSidecar: a scenario none of whose workloads has a
// native sidecar (a plain Pod scaffolded as it was) runs the same pods
// under every policy; it validated and ran without a word.
func TestWarnsWithoutANativeSidecar(t *testing.T) {
	m := []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: plain}\nspec:\n  containers:\n  - {name: app, image: app}\n  - {name: proxy, image: envoy}\n")
	out, err := Scaffold(ScaffoldInput{Name: "plain", Source: "plain.yaml", Manifest: m})
	if err != nil {
		t.Fatal(err)
	}
	s, err := LoadBytes("plain.yaml", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	ws := s.Warnings()
	if len(ws) != 1 || !strings.Contains(ws[0], ": workloads: warning: no workload has a native sidecar (an initContainer with restartPolicy: Always)") {
		t.Errorf("warnings %q", ws)
	}
	// Every shipped scenario has one (several inherit it through base:).
	names, err := fs.Glob(scenarios.FS, "*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		s, err := LoadShipped(strings.TrimSuffix(name, ".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if !s.hasNativeSidecar() {
			t.Errorf("%s: no native sidecar", name)
		}
	}
}
