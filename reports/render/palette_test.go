package render

import (
	"image/color"
	"io/fs"
	"math"
	"strings"
	"testing"

	"github.com/sidebench/sidebench/harness/faults"
	"github.com/sidebench/sidebench/harness/scenario"
	"github.com/sidebench/sidebench/scenarios"
)

// TestPaletteReadableForShippedScenarios: every policy of a shipped
// scenario is drawn in a colour a reader can see on the white page
// (contrast at least 2:1; Okabe–Ito's orange and sky blue are 2.2:1 and
// 2.3:1). Yellow (1.3:1) was the seventh colour, so debate-2019's none
// baseline, the policy with every violation, was its faintest marks.
func TestPaletteReadableForShippedScenarios(t *testing.T) {
	most, which := 0, ""
	names, err := fs.Glob(scenarios.FS, "*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		s, err := scenario.LoadShipped(strings.TrimSuffix(name, ".yaml"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if n := len(s.PolicyGates()); n > most {
			most, which = n, name
		}
	}
	if most < 7 {
		t.Fatalf("the most policies of a shipped scenario is %d (%s); this test is about debate-2019's seven", most, which)
	}
	for i := range most {
		if c := contrastOnWhite(paletteColor(i)); c < 2 {
			t.Errorf("policy %d of %s is drawn in %v, contrast %.2f:1 on white", i+1, which, paletteColor(i), c)
		}
	}
}

// contrastOnWhite is the WCAG contrast ratio of c against white.
func contrastOnWhite(c color.RGBA) float64 {
	lin := func(v uint8) float64 {
		s := float64(v) / 255
		if s <= 0.04045 {
			return s / 12.92
		}
		return math.Pow((s+0.055)/1.055, 2.4)
	}
	l := 0.2126*lin(c.R) + 0.7152*lin(c.G) + 0.0722*lin(c.B)
	return 1.05 / (l + 0.05)
}

// TestEveryFaultKindHasItsColour: each kind of the fault catalogue is
// drawn in a colour of its own in the run timeline. The four kinds added
// after the figure (image-pull-failure, container-kill, container-unknown,
// resize) all fell back to the grey of unknown names.
func TestEveryFaultKindHasItsColour(t *testing.T) {
	seen := map[color.RGBA]string{}
	for _, k := range faults.KindNames() {
		c, ok := faultColors[k]
		if !ok {
			t.Errorf("fault kind %s has no colour (drawn in the grey of unknown names)", k)
			continue
		}
		if other, dup := seen[c]; dup {
			t.Errorf("fault kinds %s and %s share %v", other, k, c)
		}
		seen[c] = k
	}
}
