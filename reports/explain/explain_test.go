package explain

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/rundir"
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
