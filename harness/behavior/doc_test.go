package behavior

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestDocExamples keeps docs/behavior.md honest: every error message quoted
// there is what Parse returns, and every distribution in the syntax table
// parses to its canonical form.
func TestDocExamples(t *testing.T) {
	doc, err := os.ReadFile("../../docs/behavior.md")
	if err != nil {
		t.Fatal(err)
	}
	errs, rows := 0, 0
	for n, line := range strings.Split(string(doc), "\n") {
		if rest, ok := strings.CutPrefix(line, "bad distribution "); ok {
			in, err := strconv.QuotedPrefix(rest)
			if err != nil {
				t.Fatalf("docs/behavior.md:%d: %v", n+1, err)
			}
			s, _ := strconv.Unquote(in)
			_, perr := Parse(s)
			if perr == nil || perr.Error() != line {
				t.Errorf("docs/behavior.md:%d:\n doc   %s\n Parse %v", n+1, line, perr)
			}
			errs++
		}
		// Syntax table rows: | `a` / `b` | meaning | `canonical` |
		cells := strings.Split(line, "|")
		if len(cells) != 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") || !strings.HasPrefix(strings.TrimSpace(cells[3]), "`") {
			continue
		}
		want := strings.Trim(strings.TrimSpace(cells[3]), "`")
		for _, ex := range strings.Split(cells[1], "`") {
			ex = strings.TrimSpace(ex)
			if ex == "" || ex == "," || ex == "/" {
				continue
			}
			d, err := Parse(ex)
			if err != nil {
				t.Errorf("docs/behavior.md:%d: %v", n+1, err)
				continue
			}
			// The first example of a row has the row's canonical form; the
			// others (other durations) only need to parse.
			if strings.Index(cells[1], "`"+ex+"`") == strings.Index(cells[1], "`") && d.String() != want {
				t.Errorf("docs/behavior.md:%d: %s is %s, doc says %s", n+1, ex, d, want)
			}
		}
		rows++
	}
	if errs < 3 || rows < 7 {
		t.Errorf("found %d error examples and %d syntax rows; did the doc change shape?", errs, rows)
	}
}
