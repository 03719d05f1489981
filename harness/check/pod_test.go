package check

import (
	"strings"
	"testing"
)

// TestCtrOfIsCtr: build's lookup, which remembers the string data it found
// each container by, finds what ctr finds, whatever the strings share:
// duplicate names in the spec (the first wins), names that are prefixes of
// one another, the same bytes at other addresses, the same address.
func TestCtrOfIsCtr(t *testing.T) {
	spec := "app proxy app ap sidecar-1 sidecar-2  log"
	names := strings.Split(spec, " ") // one backing string: shared data
	var p Pod
	for _, n := range names {
		p.Ctrs = append(p.Ctrs, Ctr{Name: n})
	}
	var queries []string
	for _, n := range append(names, "ghost", "sidecar-3", "prox", "") {
		queries = append(queries, n, strings.Clone(n), strings.Clone(n)[:len(n)/2])
	}
	// In order, then repeated (the previous container first), then
	// alternating.
	for round := range 3 {
		for k, q := range queries {
			for _, q := range []string{q, q, queries[(k*7)%len(queries)]} {
				if got, want := p.ctrOf(q), p.ctr(q); got != want {
					t.Fatalf("round %d: ctrOf(%q) = %d, ctr = %d", round, q, got, want)
				}
			}
		}
	}
}
