// Package importrules enforces the layering in ARCHITECTURE.md: the pure
// core imports the standard library only, and each heavy dependency enters
// through exactly one gate package.
package importrules

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/sidebench/sidebench"

// deps returns the transitive imports of every package in the module.
func deps(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps=false", "-f", "{{.ImportPath}}|{{join .Deps \" \"}}", module+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	m := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, ds, _ := strings.Cut(line, "|")
		m[pkg] = strings.Fields(ds)
	}
	return m
}

func isStd(p string) bool {
	first, _, _ := strings.Cut(p, "/")
	return !strings.Contains(first, ".")
}

func TestImportRules(t *testing.T) {
	all := deps(t)
	rules := []struct {
		pkg string
		// allowed reports whether pkg may depend on d.
		allowed func(d string) bool
		why     string
	}{
		{"reference-impl/api", isStd, "the planner's types are standard library only"},
		{"reference-impl/kubelet", func(d string) bool { return isStd(d) || d == module+"/reference-impl/api" }, "the planner is pure: standard library and api only"},
		{"harness/history", func(d string) bool { return isStd(d) || d == module+"/internal/prefetch" },
			"the history is the contract; it drags no dependency (internal/prefetch is one CPU instruction)"},
		{"harness/behavior", isStd, "the behaviour model is shared by sim and the CRI server"},
		{"harness/agentlog", isStd, "the agent's log format is linked into the 2 MB container agent"},
		{"harness/check", func(d string) bool {
			return isStd(d) || d == module+"/harness/history" || d == module+"/reference-impl/api" || d == module+"/internal/prefetch"
		}, "the checker works on histories alone: no sim, no planner internals"},
		{"harness/metrics", func(d string) bool {
			return isStd(d) || strings.HasPrefix(d, module+"/harness/history") || strings.HasPrefix(d, module+"/reports/stats") || strings.HasPrefix(d, "gonum.org/v1/gonum") || d == module+"/internal/prefetch"
		}, "metrics read histories only"},
		{"reports/stats", func(d string) bool {
			return isStd(d) || strings.HasPrefix(d, "gonum.org/v1/gonum") || strings.HasPrefix(d, "golang.org/x/")
		}, "statistics use gonum only"},
		{"harness/arrival", isStd, "the arrival process is shared by the sim's hot path and every backend"},
		{"harness/sim", func(d string) bool {
			return !strings.HasPrefix(d, module+"/harness/scenario") && !strings.HasPrefix(d, "k8s.io/") && !strings.HasPrefix(d, module+"/harness/trial")
		}, "the engine knows no scenario file and no Kubernetes type (harness/backend/sim adapts)"},
		{"harness/runner", func(d string) bool {
			return !strings.HasPrefix(d, module+"/harness/backend/") && !strings.HasPrefix(d, module+"/harness/sim") &&
				!strings.HasPrefix(d, module+"/harness/localcluster") && !strings.HasPrefix(d, "k8s.io/client-go")
		}, "the runner drives the Backend interface and imports no backend"},
		{"harness/rundir", func(d string) bool {
			return !strings.HasPrefix(d, module+"/harness/backend") && !strings.HasPrefix(d, module+"/harness/runner")
		}, "the run directory is storage only"},
	}
	for _, r := range rules {
		ds, ok := all[module+"/"+r.pkg]
		if !ok {
			t.Errorf("%s: no such package: the rule guards nothing (renamed or removed? update the rule)", r.pkg)
			continue
		}
		for _, d := range ds {
			if !r.allowed(d) {
				t.Errorf("%s imports %s: %s", r.pkg, d, r.why)
			}
		}
	}
	// One gate per heavy dependency.
	gates := map[string][]string{
		"github.com/vbauerster/mpb":            {"harness/progress"},
		"github.com/spf13/cobra":               {"harness/cli"},
		"gonum.org/v1/plot":                    {"reports/render"},
		"github.com/chaos-mesh/chaos-mesh/api": {"harness/chaos"},
		"sigs.k8s.io/e2e-framework":            {"harness/backend/kube"},
		// The apiserver world: only the backends that talk to a real
		// apiserver and the local cluster they run on.
		"k8s.io/client-go":               {"harness/backend/drive", "harness/backend/local", "harness/backend/kube", "harness/localcluster"},
		"sigs.k8s.io/controller-runtime": {"harness/chaos", "harness/backend/kube"},
		// The CRI runtime sidebench serves to real kubelets.
		"google.golang.org/grpc": {"harness/cri", "harness/localcluster"},
		"k8s.io/cri-api":         {"harness/cri", "harness/localcluster"},
		// Registries: building and pushing the images.
		"github.com/google/go-containerregistry": {"hack/image"},
		// Compression: the run directory's frames.
		"github.com/klauspost/compress": {"harness/rundir"},
		// The CLI is a command, linked by the binary only.
		module + "/harness/cli": {"cmd/sidebench"},
	}
	for _, owners := range gates {
		for _, o := range owners {
			if _, ok := all[module+"/"+o]; !ok {
				t.Errorf("gate package %s does not exist: the rule guards nothing (update it)", o)
			}
		}
	}
	for pkg, ds := range all {
		rel := strings.TrimPrefix(pkg, module+"/")
		for _, d := range ds {
			for dep, owners := range gates {
				if !strings.HasPrefix(d, dep) {
					continue
				}
				if !importsDirectly(t, pkg, dep) {
					continue // only direct importers must be gates
				}
				ok := false
				for _, o := range owners {
					if rel == o || strings.HasPrefix(rel, o+"/") {
						ok = true
					}
				}
				if !ok {
					t.Errorf("%s imports %s directly; only %v may", rel, dep, owners)
				}
			}
		}
	}
}

var directCache = map[string][]string{}

func importsDirectly(t *testing.T, pkg, prefix string) bool {
	imps, ok := directCache[pkg]
	if !ok {
		out, err := exec.Command("go", "list", "-f", "{{join .Imports \" \"}}", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pkg, err, out)
		}
		imps = strings.Fields(string(out))
		directCache[pkg] = imps
	}
	for _, i := range imps {
		if strings.HasPrefix(i, prefix) {
			return true
		}
	}
	return false
}
