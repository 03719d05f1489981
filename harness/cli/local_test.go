package cli

import (
	"os"
	"strings"
	"testing"
)

// TestClusterUpRefusesWhatDoesNotFit: `cluster up --nodes N` says in
// advance, before building or starting anything, that N kubelets do not
// fit in this machine's memory and how many would (issue 21); a usage
// error.
func TestClusterUpRefusesWhatDoesNotFit(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("Up refuses non-root callers before it looks at memory")
	}
	out, errOut, code := run(t, "cluster", "up", "--nodes", "1000000")
	if code != ExitUsage || !strings.Contains(errOut, "1000000 kubelets need about") || !strings.Contains(errOut, "fit") || strings.Contains(out, "up in") {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and the memory estimate", code, out, errOut, ExitUsage)
	}
}

// TestClusterUpRefusesNoNodes: `cluster up --nodes 0` is a usage error,
// as for run, before anything starts (it said "starting a local cluster
// (0 kubelets)" and started one).
func TestClusterUpRefusesNoNodes(t *testing.T) {
	out, errOut, code := run(t, "cluster", "up", "--nodes", "0")
	if code != ExitUsage || !strings.Contains(errOut, "--nodes must be >= 1") || strings.Contains(errOut, "starting") || out != "" {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and nothing started", code, out, errOut, ExitUsage)
	}
}
