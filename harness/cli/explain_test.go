package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// explain exits 2, like check, on a history it cannot read (issue 15,
// item 15: a malformed history was an internal error, exit 3), and names
// the file and line.
func TestExplainMalformedHistory(t *testing.T) {
	dir := filepath.Join("..", "check", "testdata", "malformed")
	for _, tt := range []struct {
		file, want string
	}{
		{"unknown-kind.jsonl", `history line 21: unknown kind "pod.bogus"`},
		{"broken-line.jsonl", `history line 41: field "node": expected a string`},
		{"t-backwards.jsonl", "history line 30: t goes backwards"},
		{"empty.jsonl", `no pod "web-0"`},
		{"meta-only.jsonl", `no pod "web-0"`},
	} {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join(dir, tt.file)
			_, stderr, code := run(t, "explain", path, "--pod", "web-0")
			if code != ExitUsage || !strings.Contains(stderr, tt.want) || !strings.Contains(stderr, path) {
				t.Fatalf("exit %d, stderr %q; want exit %d naming %s and %q", code, stderr, ExitUsage, path, tt.want)
			}
			_, stderr, code = run(t, "check", path)
			if code == ExitOK || code == ExitInternal {
				t.Fatalf("check: exit %d (%s)", code, stderr)
			}
		})
	}
}
