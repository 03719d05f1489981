package check

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sidebench/sidebench/harness/history"
)

var update = flag.Bool("update", false, "rewrite testdata/*.jsonl and *.golden from the DSL histories")

// goldenRuns are the committed histories `sidebench check` is tested on
// (benchstat-style: the real entry point, stdout diffed with a golden file).
var goldenRuns = map[string]func() []history.Event{
	"kep753-ok": func() []history.Event {
		return run(&history.Meta{Scenario: "golden", Policy: "kep753", Backend: "sim", Seed: 1, ToleranceNanos: 1e6}, realistic(), jobDone(0))
	},
	"kep753-2019": func() []history.Event {
		return run(&history.Meta{Scenario: "golden", Policy: "kep753-2019", Backend: "sim", Seed: 1, ToleranceNanos: 1e6}, design2019())
	},
	"none": func() []history.Event {
		return run(&history.Meta{Scenario: "golden", Policy: "none", Backend: "sim", Seed: 1, ToleranceNanos: 1e6}, designNone())
	},
}

// run frames pod histories (time-merged) as one complete run.
func run(meta *history.Meta, pods ...*hb) []history.Event {
	var all []history.Event
	for _, h := range pods {
		all = append(all, h.events()...)
	}
	// Stable merge by time keeps each pod's own order.
	for i := 1; i < len(all); i++ {
		for j := i; j > 0 && all[j].T < all[j-1].T; j-- {
			all[j], all[j-1] = all[j-1], all[j]
		}
	}
	out := append([]history.Event{{Kind: history.RunMeta, Meta: meta}}, all...)
	return append(out, history.Event{T: all[len(all)-1].T, Kind: history.RunEnd, Msg: "complete"})
}

func TestCheckCommandGolden(t *testing.T) {
	for name, gen := range goldenRuns {
		t.Run(name, func(t *testing.T) {
			in := filepath.Join("testdata", name+".jsonl")
			golden := filepath.Join("testdata", name+".golden")
			if *update {
				var buf bytes.Buffer
				w := history.NewWriter(&buf)
				for _, e := range gen() {
					if err := w.Write(&e); err != nil {
						t.Fatal(err)
					}
				}
				w.Flush()
				os.MkdirAll("testdata", 0o755)
				os.WriteFile(in, buf.Bytes(), 0o644)
			}
			var out, errb bytes.Buffer
			code := RunCheckCommand(&out, &errb, []string{in}, nil)
			got := append(out.Bytes(), []byte("exit "+string(rune('0'+code))+"\n")...)
			if *update {
				os.WriteFile(golden, got, 0o644)
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				os.WriteFile(golden+".got", got, 0o644)
				t.Fatalf("output differs from %s (see %s.got; -update rewrites)\nstderr: %s", golden, golden, errb.String())
			}
		})
	}
}

// TestCheckCommandSplitsPolicies: histories of several policies are
// reported one table per scenario × policy, and any violation fails.
func TestCheckCommandSplitsPolicies(t *testing.T) {
	var out, errb strings.Builder
	code := RunCheckCommand(&out, &errb, []string{"testdata/kep753-ok.jsonl", "testdata/none.jsonl"}, nil)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (none has violations); stderr %s", code, errb.String())
	}
	if n := strings.Count("\n"+out.String(), "\nrun: "); n != 2 {
		t.Fatalf("%d run tables, want 2:\n%s", n, out.String())
	}
	if !strings.Contains(out.String(), "policy=kep753 ") || !strings.Contains(out.String(), "policy=none ") {
		t.Fatalf("tables do not name both policies:\n%s", out.String())
	}
}
