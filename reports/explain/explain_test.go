package explain

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sidebench/sidebench/harness/check"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/rundir"
	"github.com/sidebench/sidebench/reports/render"
)

// TestTimelinePlacesFindingsAfterTheirInstant: a finding is printed after
// every event of the instant the checker decided it (the offending event
// is the line above it) and before the next instant's; findings of other
// pods, trials or policies are not shown.
func TestTimelinePlacesFindingsAfterTheirInstant(t *testing.T) {
	const pod = "default/web-0"
	evs := []history.Event{
		{T: 1e9, Kind: history.ContainerStarted, Pod: pod, Container: "proxy"},
		{T: 2e9, Kind: history.ContainerStarted, Pod: pod, Container: "app"},
		{T: 2e9, Kind: history.ContainerExited, Pod: pod, Container: "proxy"},
		{T: 3e9, Kind: history.ContainerExited, Pod: pod, Container: "app"},
	}
	m := history.Meta{Scenario: "s", Policy: "kep753", Trial: 1}
	findings := []rundir.FindingRecord{
		{Scenario: "s", Policy: "kep753", Trial: 1, Pod: pod, ID: "INV-T1", Class: "violation", T: 2e9, Msg: "mine"},
		{Scenario: "s", Policy: "kep753", Trial: 2, Pod: pod, ID: "INV-T1", Class: "violation", T: 2e9, Msg: "other trial"},
		{Scenario: "s", Policy: "none", Trial: 1, Pod: pod, ID: "INV-T1", Class: "violation", T: 2e9, Msg: "other policy"},
	}
	var b bytes.Buffer
	WriteTimeline(&b, m, evs, findings)
	out := b.String()
	if strings.Contains(out, "other trial") || strings.Contains(out, "other policy") {
		t.Fatalf("another trial's or policy's finding shown:\n%s", out)
	}
	lines := strings.Split(out, "\n")
	at := func(sub string) int {
		for i, l := range lines {
			if strings.Contains(l, sub) {
				return i
			}
		}
		t.Fatalf("no line with %q:\n%s", sub, out)
		return -1
	}
	mark := at("INV-T1 violation: mine")
	if at("container.exited proxy") > mark {
		t.Errorf("the finding is placed before the last event of its instant:\n%s", out)
	}
	if at("container.exited app") < mark {
		t.Errorf("the finding is placed after the next instant:\n%s", out)
	}
	if !strings.Contains(out, "findings:\n  ") {
		t.Errorf("no findings section:\n%s", out)
	}
}

// TestClassRankIsTheCheckerOrder: explain and the report rank finding
// classes with render.ClassRank, which must be check.Class's order
// (render cannot import the checker to use it).
func TestClassRankIsTheCheckerOrder(t *testing.T) {
	for c := check.Violation; c <= check.Unmet; c++ {
		if got := render.ClassRank(c.String()); got != int(c) {
			t.Errorf("render.ClassRank(%q) = %d, check.Class order is %d", c, got, int(c))
		}
	}
	if got := render.ClassRank("no-such-class"); got <= int(check.Unmet) {
		t.Errorf("an unknown class ranks %d, before a known one", got)
	}
}

// TestListOrdersPodsByWorstClass: a pod's rank is its worst finding, and
// pods list violations, degradations, missed bounds, then unmet user-level
// guarantees, whatever the order of the findings file (before, explain
// ranked a missed bound and an unmet guarantee alike, so they listed in
// policy order).
func TestListOrdersPodsByWorstClass(t *testing.T) {
	// The policies sort opposite to the classes, so a tie in rank shows.
	policy := map[string]string{"unmet": "a", "bound": "b", "mixed": "c", "violation": "d"}
	rec := func(pod, class string) *rundir.FindingRecord {
		return &rundir.FindingRecord{Scenario: "s", Policy: policy[pod], Trial: 1, Pod: pod, ID: "INV-X", Class: class, T: 1}
	}
	var c lister
	for _, fr := range []*rundir.FindingRecord{
		rec("unmet", "unmet"),
		rec("bound", "bound-exceeded"),
		rec("mixed", "unmet"), rec("mixed", "degradation"),
		rec("violation", "violation"),
	} {
		if err := c.add(fr); err != nil {
			t.Fatal(err)
		}
	}
	l := c.listing()
	var got []string
	for _, p := range l.Pods {
		got = append(got, p.Pod)
	}
	if want := []string{"violation", "mixed", "bound", "unmet"}; !slices.Equal(got, want) {
		t.Errorf("pods listed %v, want %v", got, want)
	}
	if l.Findings != 5 {
		t.Errorf("Findings = %d, want 5", l.Findings)
	}
}

// TestListingNamesTheFindingsFile: a listing cut short says where every
// finding is, naming the file a run directory has (it used to name
// findings.jsonl; the file is findings.jsonl.zst).
func TestListingNamesTheFindingsFile(t *testing.T) {
	l := &Listing{Findings: 3}
	for _, pod := range []string{"a", "b", "c"} {
		l.Pods = append(l.Pods, &PodFindings{Scenario: "s", Policy: "kep753", Trial: 1, Pod: pod, What: []string{"INV-X violation"}})
	}
	var out bytes.Buffer
	WriteListing(&out, "RUNDIR", l, 1)
	m := regexp.MustCompile(`([a-z.]+\.jsonl[a-z.]*) in the run directory has every finding`).FindStringSubmatch(out.String())
	if m == nil || m[1] != rundir.FileFindings {
		t.Errorf("the listing's pointer to every finding: %q, want %s named\n%s", m, rundir.FileFindings, out.String())
	}
}
