package scenario

import (
	"testing"
)

func TestShippedScenariosLoad(t *testing.T) {
	names := ShippedNames()
	if len(names) == 0 {
		t.Fatal("no shipped scenarios")
	}
	for _, n := range names {
		s, err := LoadShipped(n)
		if err != nil {
			t.Errorf("%s: %v", n, err)
			continue
		}
		if s.Metadata.Name != n {
			t.Errorf("%s: metadata.name %q differs from the file name", n, s.Metadata.Name)
		}
		if len(Expand(s)) != len(s.Policies)*s.TrialCount() {
			t.Errorf("%s: expansion size", n)
		}
	}
}
