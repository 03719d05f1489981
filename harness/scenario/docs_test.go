package scenario

import (
	"os"
	"regexp"
	"testing"
)

// TestDocsExamples loads every ```yaml block of docs/scenarios.md that is a
// scenario, so the documentation cannot rot.
func TestDocsExamples(t *testing.T) {
	b, err := os.ReadFile("../../docs/scenarios.md")
	if err != nil {
		t.Skip(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllSubmatch(b, -1)
	if len(blocks) < 2 {
		t.Fatalf("found %d yaml blocks", len(blocks))
	}
	for i, m := range blocks {
		s, err := LoadBytes("docs/scenarios.md#"+string(rune('0'+i)), m[1])
		if err != nil {
			t.Errorf("block %d: %v", i, err)
			continue
		}
		if len(Expand(s)) == 0 {
			t.Errorf("block %d: no trials", i)
		}
	}
}
