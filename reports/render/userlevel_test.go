package render

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/sidebench/sidebench/reports/stats"
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

// TestUserLevelInSummary: summary.json carries the user-level section with
// the numbers report.md shows (one computation: UserCell.Rate), startup
// cost included, and reading it back renders the same report.md.
func TestUserLevelInSummary(t *testing.T) {
	d := userLevelData()
	d.UserLevel.Startup = []UserStartup{{Policy: "kep753", Workload: "mesh", Metric: "pod_startup", N: 40,
		P50: stats.QuantileSummary([]float64{100, 200, 300, 400}, 0.5, DefaultConfidence), P90: stats.QuantileSummary([]float64{100, 200, 300, 400}, 0.9, DefaultConfidence)}}
	var js, md bytes.Buffer
	if err := WriteSummaryJSON(&js, d); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, d); err != nil {
		t.Fatal(err)
	}
	s, err := ReadSummaryJSON(bytes.NewReader(js.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	u := s.UserLevel
	if u == nil || len(u.Cells) != len(d.UserLevel.Cells) || len(u.Guarantees) != 2 || len(u.Startup) != 1 {
		t.Fatalf("summary.json user-level section: %+v", u)
	}
	for _, c := range u.Cells {
		cell := fmt.Sprintf("%d/%d %s [%s, %s]", c.Unmet, c.Pods, fmtPct(c.Rate), fmtPct(c.CPLower), fmtPct(c.CPUpper))
		if !strings.Contains(md.String(), "| "+c.Stratum+" | "+c.Policy+" | ") || !strings.Contains(md.String(), cell) {
			t.Errorf("summary.json cell %s/%s/%s = %q is not in report.md", c.Policy, c.Stratum, c.ID, cell)
		}
	}
	var md2 bytes.Buffer
	if err := WriteMarkdown(&md2, s.RunData()); err != nil {
		t.Fatal(err)
	}
	sect := func(b []byte) string {
		x := string(b)
		i := strings.Index(x, "## User-level")
		if i < 0 {
			return ""
		}
		return x[i:]
	}
	if a, b := sect(md.Bytes()), sect(md2.Bytes()); a == "" || a != b {
		t.Errorf("the user-level section changed on a round trip through summary.json:\n%s\n---\n%s", a, b)
	}
	var none bytes.Buffer
	if err := WriteSummaryJSON(&none, RunData{Scenario: "s"}); err != nil || strings.Contains(none.String(), "userLevel") {
		t.Errorf("a run without the section has one in summary.json: %v", err)
	}
}
