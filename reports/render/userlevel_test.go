package render

import (
	"bytes"
	"strings"
	"testing"
)

func userLevelData() RunData {
	u := &UserLevel{
		Guarantees: []UserGuarantee{{ID: "USER-APP-PROXY", Rule: "app-never-without-proxy"}, {ID: "USER-JOB-COMPLETES", Rule: "job-completes"}},
		Policies:   []string{"kep753", "workaround:wait-wrapper"},
		Strata:     []string{StratumNoFault, "oom-kill", StratumAll},
	}
	for _, c := range []UserCell{
		{"kep753", StratumNoFault, "USER-APP-PROXY", 0, 40}, {"kep753", "oom-kill", "USER-APP-PROXY", 5, 10}, {"kep753", StratumAll, "USER-APP-PROXY", 5, 50},
		{"workaround:wait-wrapper", StratumNoFault, "USER-JOB-COMPLETES", 20, 40}, {"workaround:wait-wrapper", StratumAll, "USER-JOB-COMPLETES", 24, 50},
	} {
		u.Cells = append(u.Cells, c)
	}
	return RunData{Scenario: "debate", Policies: u.Policies, UserLevel: u}
}

// The user-level section: the table with Clopper–Pearson intervals, the
// startup cost, where the native design still fails; in report.html one
// figure per guarantee with the key under it. Rendering is deterministic.
func TestUserLevelSection(t *testing.T) {
	d := userLevelData()
	var md bytes.Buffer
	if err := WriteMarkdown(&md, d); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"## User-level guarantees by fault kind",
		"| oom-kill | kep753 | 5/10 50% [18.7%, 81.3%] |",
		"| no fault | workaround:wait-wrapper | · | 20/40 50% [33.8%, 66.2%] |",
		"### Startup cost",
		"- `kep753` under oom-kill: USER-APP-PROXY 5/10 50% [18.7%, 81.3%]",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if strings.Contains(md.String(), "workaround:wait-wrapper` under") {
		t.Error("a workaround is listed where the native design still fails")
	}
	var h1, h2 bytes.Buffer
	if err := WriteHTML(&h1, d); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&h2, d); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(h1.Bytes(), h2.Bytes()) {
		t.Fatal("report.html differs between two renderings of the same data")
	}
	html := h1.String()
	i := strings.Index(html, "User-level guarantees by fault kind")
	if i < 0 {
		t.Fatal("report.html has no user-level section")
	}
	if n := strings.Count(html[i:], "<svg"); n < 2 || strings.Count(html[i:], `<p class="key">`) < 2 {
		t.Errorf("user-level section: %d figures, want one per guarantee with its key", n)
	}
}

// Without user-level data there is no section.
func TestNoUserLevelSection(t *testing.T) {
	var md bytes.Buffer
	if err := WriteMarkdown(&md, RunData{Scenario: "s"}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(md.String(), "User-level") {
		t.Error("a section without data")
	}
}
