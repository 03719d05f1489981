package metrics

import (
	"strings"
	"testing"
)

// TestForEachRecordTornLine: a run killed while writing pods.jsonl leaves
// a torn last line, which ends the records quietly; a bad line anywhere
// else is an error naming its line.
func TestForEachRecordTornLine(t *testing.T) {
	good := `{"pod":"a","latenciesMs":{"pod_startup":1}}` + "\n" + `{"pod":"b","latenciesMs":{}}` + "\n"
	tests := []struct {
		name, in string
		pods     string
		err      string
	}{
		{"complete", good, "a,b", ""},
		{"torn last line", good + `{"pod":"c","laten`, "a,b", ""},
		{"torn line in the middle", `{"pod":"a","laten` + "\n" + good, "", "line 1"},
		{"unknown field", good + `{"pod":"c","bogus":1}` + "\n", "a,b", "line 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var pods []string
			err := ForEachRecord(strings.NewReader(tt.in), func(r *Record) { pods = append(pods, r.Pod) })
			if got := strings.Join(pods, ","); got != tt.pods {
				t.Errorf("pods %q, want %q", got, tt.pods)
			}
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("err %v, want %q", err, tt.err)
			}
		})
	}
}
