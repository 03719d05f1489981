package compare

import (
	"bytes"
	"encoding/json"
	"flag"
	"github.com/sidebench/sidebench/reports/stats"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sidebench/sidebench/reports/render"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		_ = os.WriteFile(path+".got", got, 0o644)
		t.Errorf("%s differs from the golden file; got written to %s.got", path, path)
	}
}

func series(n int, f func(i int) float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

// runs returns a baseline and a candidate: the candidate's pod_startup is
// ~12% slower (significant, a regression), its sidecar_gate is a
// permutation-level change (~), create_to_ready is 3% slower and
// significant (below the 5% threshold), and S3 violations jump from 0/400
// to 30/400.
func runs() (a, b render.RunData) {
	base := func(version string) render.RunData {
		return render.RunData{
			Scenario: "sidecar-basic",
			Policies: []string{"kep753", "none"},
			Meta:     render.Meta{Seed: 42, Trials: 20, Backend: "sim", Version: version},
		}
	}
	a, b = base("v0.1.0"), base("v0.2.0")
	a.Latencies = []render.Latency{
		{Policy: "kep753", Metric: "pod_startup", Ms: stats.HistOf(series(20, func(i int) float64 { return 1000 + float64((i*37)%20)*10 }))},
		{Policy: "kep753", Metric: "sidecar_gate", Ms: stats.HistOf(series(12, func(i int) float64 { return 40 + float64((i*5)%12) }))},
		{Policy: "kep753", Metric: "create_to_ready", Ms: stats.HistOf(series(30, func(i int) float64 { return 2000 + float64(i) }))},
		{Policy: "none", Metric: "pod_startup", Ms: stats.HistOf(series(20, func(i int) float64 { return 800 + float64(i)*5 }))},
	}
	b.Latencies = []render.Latency{
		{Policy: "kep753", Metric: "pod_startup", Ms: stats.HistOf(series(20, func(i int) float64 { return 1120 + float64((i*13)%20)*10 }))},
		{Policy: "kep753", Metric: "sidecar_gate", Ms: stats.HistOf(series(12, func(i int) float64 { return 40.5 + float64((i*7)%12) }))},
		{Policy: "kep753", Metric: "create_to_ready", Ms: stats.HistOf(series(30, func(i int) float64 { return 2060 + float64(i) }))},
		{Policy: "none", Metric: "pod_startup", Ms: stats.HistOf(series(20, func(i int) float64 { return 801 + float64(i)*5 }))},
		{Policy: "none", Metric: "job_completion", Ms: stats.HistOf([]float64{1, 2, 3})},
	}
	a.Invariants = []render.InvariantRow{
		{Policy: "kep753", ID: "S3", Checked: 400},
		{Policy: "kep753", ID: "T10", Checked: 400, Violations: 2},
		{Policy: "none", ID: "S3", Checked: 400, Violations: 250},
	}
	b.Invariants = []render.InvariantRow{
		{Policy: "kep753", ID: "T10", Checked: 400, Violations: 1},
		{Policy: "kep753", ID: "S3", Checked: 400, Violations: 30},
		{Policy: "none", ID: "S3", Checked: 400, Violations: 240},
	}
	return a, b
}

func TestGoldenTable(t *testing.T) {
	a, b := runs()
	tab := Compare(a, b, Options{})
	var text, md, js bytes.Buffer
	if err := tab.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := tab.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if err := tab.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	golden(t, "compare.txt.golden", text.Bytes())
	golden(t, "compare.md.golden", md.Bytes())
	golden(t, "compare.json.golden", js.Bytes())
	if !json.Valid(js.Bytes()) {
		t.Errorf("invalid JSON")
	}
}

func TestRegressionDetection(t *testing.T) {
	a, b := runs()
	tab := Compare(a, b, Options{})
	if !tab.RegressionFound {
		t.Fatal("no regression found")
	}
	got := map[string]string{}
	for _, r := range tab.Latencies {
		got[r.Policy+" "+r.Metric] = r.Delta
		if r.P < r.PRaw {
			t.Errorf("%s %s: Holm-adjusted p %v < raw %v", r.Policy, r.Metric, r.P, r.PRaw)
		}
	}
	if got["kep753 pod_startup"] == "~" || got["kep753 sidecar_gate"] != "~" || got["none pod_startup"] != "~" {
		t.Errorf("deltas: %v", got)
	}
	var regs []string
	for _, r := range tab.Latencies {
		if r.Regression {
			regs = append(regs, r.Policy+" "+r.Metric)
		}
	}
	for _, r := range tab.Rates {
		if r.Regression {
			regs = append(regs, r.Policy+" "+r.ID)
		}
	}
	if want := []string{"kep753 pod_startup", "kep753 S3"}; !slices.Equal(regs, want) {
		t.Errorf("regressions %v, want %v", regs, want)
	}
	// create_to_ready: +3%, significant but under the 5% threshold; with a
	// 1% threshold it becomes a regression.
	tab = Compare(a, b, Options{Threshold: 0.01})
	for _, r := range tab.Latencies {
		if r.Metric == "create_to_ready" && (!r.Significant || !r.Regression) {
			t.Errorf("create_to_ready at 1%%: %+v", r)
		}
	}
	if !slices.ContainsFunc(tab.Warnings, func(w string) bool { return strings.Contains(w, "job_completion: only in B") }) {
		t.Errorf("warnings: %v", tab.Warnings)
	}
}

func TestSameRunNoRegression(t *testing.T) {
	a, _ := runs()
	tab := Compare(a, a, Options{})
	if tab.RegressionFound {
		t.Errorf("regressions comparing a run with itself: %v", tab.Regressions)
	}
	for _, r := range tab.Latencies {
		if r.Delta != "~" {
			t.Errorf("%s %s: %s", r.Policy, r.Metric, r.Delta)
		}
	}
}

func TestPolicyPairing(t *testing.T) {
	a, _ := runs()
	tab := Compare(a, a, Options{PolicyA: "none", PolicyB: "kep753", Metrics: []string{"pod_startup"}})
	if len(tab.Latencies) != 1 || tab.Latencies[0].Policy != "none→kep753" {
		t.Fatalf("rows: %+v", tab.Latencies)
	}
	r := tab.Latencies[0]
	if !r.Significant || !r.Regression || r.DeltaPct < 20 {
		t.Errorf("none→kep753 pod_startup: %+v", r)
	}
	if len(tab.Rates) != 1 || tab.Rates[0].Delta != "better" {
		t.Errorf("rates: %+v", tab.Rates)
	}
}
