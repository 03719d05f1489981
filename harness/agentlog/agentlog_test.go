package agentlog

import (
	"strings"
	"testing"
)

// TestParse: container stdout may carry anything; only well-formed lines
// with an event and a time come through, the rest is counted.
func TestParse(t *testing.T) {
	in := strings.Join([]string{
		`{"t":5,"pod":"ns/p","uid":"u","container":"app","attempt":1,"event":"exec","pid":1}`,
		`starting envoy...`,
		``,
		`{"t":0,"event":"exec"}`,  // no time
		`{"t":7,"container":"x"}`, // no event
		`{"t":9,"pod":"ns/p","uid":"u","container":"app","attempt":1,"event":"exit","code":3,"pid":1}`,
		`{not json`,
	}, "\n")
	var got []Line
	skipped, err := Parse(strings.NewReader(in), func(l Line) { got = append(got, l) })
	if err != nil {
		t.Fatal(err)
	}
	if skipped != 5 || len(got) != 2 {
		t.Fatalf("skipped %d, parsed %d, want 5 and 2", skipped, len(got))
	}
	if got[1].Event != Exit || got[1].Code == nil || *got[1].Code != 3 {
		t.Errorf("exit line %+v", got[1])
	}
	a, b := got[0], got[0]
	b.PID = 99 // the same event seen through another copy
	if a.Key() != b.Key() || a.Key() == got[1].Key() {
		t.Error("Key must identify an event across copies and tell events apart")
	}
}
