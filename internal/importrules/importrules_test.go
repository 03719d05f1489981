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
		{"harness/history", isStd, "the history is the contract; it drags no dependency"},
		{"harness/behavior", isStd, "the behaviour model is shared by sim and the CRI server"},
		{"harness/agentlog", isStd, "the agent's log format is linked into the 2 MB container agent"},
		{"harness/check", func(d string) bool {
			return isStd(d) || d == module+"/harness/history" || d == module+"/reference-impl/api"
		}, "the checker works on histories alone: no sim, no planner internals"},
		{"harness/metrics", func(d string) bool {
			return isStd(d) || strings.HasPrefix(d, module+"/harness/history") || strings.HasPrefix(d, module+"/reports/stats") || strings.HasPrefix(d, "gonum.org/v1/gonum")
		}, "metrics read histories only"},
		{"reports/stats", func(d string) bool {
			return isStd(d) || strings.HasPrefix(d, "gonum.org/v1/gonum") || strings.HasPrefix(d, "golang.org/x/")
		}, "statistics use gonum only"},
	}
	for _, r := range rules {
		ds, ok := all[module+"/"+r.pkg]
		if !ok {
			continue // package not written yet
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
		"sigs.k8s.io/e2e-framework":            {"harness/backend/kube", "harness/e2e"},
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
