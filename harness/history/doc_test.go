package history

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestDocExamples keeps docs/history.md honest: every line of its ```json
// blocks must decode strictly and re-encode to exactly the same bytes.
func TestDocExamples(t *testing.T) {
	doc, err := os.ReadFile("../../docs/history.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	in := false
	for n, line := range strings.Split(string(doc), "\n") {
		switch {
		case strings.HasPrefix(line, "```json"):
			in = true
			continue
		case strings.HasPrefix(line, "```"):
			in = false
			continue
		case !in:
			continue
		}
		var e Event
		if err := UnmarshalEvent([]byte(line), &e); err != nil {
			t.Errorf("docs/history.md:%d: %v", n+1, err)
			continue
		}
		out, _ := AppendEvent(nil, &e)
		if got := string(bytes.TrimSuffix(out, []byte("\n"))); got != line {
			t.Errorf("docs/history.md:%d is not what the encoder writes:\n doc %s\n enc %s", n+1, line, got)
		}
		lines++
	}
	if lines == 0 {
		t.Error("docs/history.md has no json example")
	}
}
