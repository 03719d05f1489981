package history

import (
	"strings"
	"testing"
)

// TestKindPredicates ties the predicates to the naming scheme, so a new
// kind cannot be added to a family without its predicate following.
func TestKindPredicates(t *testing.T) {
	for _, k := range Kinds() {
		name := k.String()
		family, _, _ := strings.Cut(name, ".")
		if got, want := k.IsFault(), family == "fault"; got != want {
			t.Errorf("%s: IsFault %v", name, got)
		}
		if got, want := k.IsContainerLevel(), family == "container" || family == "probe"; got != want {
			t.Errorf("%s: IsContainerLevel %v", name, got)
		}
		if got, want := k.IsNodeLevel(), family == "kubelet" || family == "runtime" || family == "node"; got != want {
			t.Errorf("%s: IsNodeLevel %v", name, got)
		}
		if back, ok := ParseKind(name); !ok || back != k {
			t.Errorf("%s: ParseKind gives %v %v", name, back, ok)
		}
	}
	if KindInvalid.valid() || kindCount.valid() || Kind(200).String() != "Kind(200)" {
		t.Error("invalid kinds look valid")
	}
}
