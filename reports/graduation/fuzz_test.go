package graduation

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var lineRef = regexp.MustCompile(`graduation criteria: line (\d+): `)

// FuzzParse: a criteria file, whatever its bytes, is either refused with
// an error and no criteria (an unknown field's explanation naming a line
// the file has) or decodes into criteria that validate; nothing panics.
func FuzzParse(f *testing.F) {
	for _, stage := range Stages {
		data, err := files.ReadFile(stage + ".yaml")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		"stage: x\nconfidence: 0.95\npodStartup: {quantile: 0.99, maxMS: 5000}\n",
		"stage: x\nconfidence: 0.95\nviolationRate:\n  # c\n  maxx: 0.1\n",
		"stage: x\nPodStartup.maxMs: 1\n",
		"kind: Scenario\n",
		"a.b.c: 1\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			if c != (Criteria{}) || err.Error() == "" {
				t.Fatalf("error %q with criteria %+v", err, c)
			}
			// An unknown field's explanation names a line of the file.
			if m := lineRef.FindStringSubmatch(err.Error()); m != nil {
				if n, _ := strconv.Atoi(m[1]); n < 1 || n > strings.Count(string(data), "\n")+1 {
					t.Fatalf("%q names line %d of a %d-line file", err, n, strings.Count(string(data), "\n")+1)
				}
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Parse accepted criteria that do not validate: %v", err)
		}
	})
}
