package cli

// Regression tests for "one run pipeline and one verdict" (issue 14): each
// observation of the issue, named after what it guards.

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sidebench/sidebench/harness/backend"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/rundir"
	"github.com/sidebench/sidebench/harness/trial"
	"github.com/sidebench/sidebench/internal/version"
	"github.com/sidebench/sidebench/reference-impl/api"
	"github.com/sidebench/sidebench/reports/render"
	"github.com/spf13/pflag"
)

// junitCounts reads a junit.xml's totals and its failing testcases.
func junitCounts(t *testing.T, path string) (tests, failures int, failing []string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Cases []struct {
				Name    string    `xml:"name,attr"`
				Failure *struct{} `xml:"failure"`
			} `xml:"testcase"`
			Properties []struct {
				Name  string `xml:"name,attr"`
				Value string `xml:"value,attr"`
			} `xml:"properties>property"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			if c.Failure != nil {
				failing = append(failing, c.Name)
			}
		}
	}
	return doc.Tests, doc.Failures, failing
}

// tableRows parses the result table: scenario/policy → columns.
func tableRows(out string) map[string][]string {
	rows := map[string][]string{}
	split := regexp.MustCompile(`\s{2,}`)
	legend := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if m := regexp.MustCompile(`^\[(\d+)\] (\S+)$`).FindStringSubmatch(line); m != nil {
			legend[m[1]] = m[2]
		}
	}
	abbrev := regexp.MustCompile(`…\S*\[(\d+)\]$`)
	scen := ""
	for _, line := range strings.Split(out, "\n") {
		t := strings.TrimSpace(line)
		if t != "" && !strings.ContainsAny(t, " \t") {
			scen = t // a scenario's line
			continue
		}
		f := split.Split(t, -1)
		if len(f) != 9 || f[0] == "POLICY" {
			continue
		}
		if m := abbrev.FindStringSubmatch(f[0]); m != nil {
			f[0] = legend[m[1]]
		}
		rows[scen+"/"+f[0]] = append([]string{scen}, f...)
	}
	return rows
}

// TestTableEqualsEveryOutput guards observations 1 and 4 over every
// shipped scenario (what `make run` runs): the table's pod_startup p50/p99
// are the ones in summary.json, report.md and PerfData, over the one
// population they all declare (faulted pods excluded, counted); the run
// passes and every junit.xml it writes is green.
func TestTableEqualsEveryOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every shipped scenario")
	}
	files, _ := filepath.Glob("../../scenarios/*.yaml")
	dir := t.TempDir()
	out, errOut, code := run(t, append([]string{"run", "--progress", "plain", "--out", dir}, files...)...)
	if code != ExitOK {
		t.Fatalf("make run's equivalent: exit %d\n%s\n%s", code, out, errOut)
	}
	rows := tableRows(out)
	runs, _ := filepath.Glob(filepath.Join(dir, "*", render.SummaryFile))
	if len(runs) < 20 || len(rows) < len(runs) {
		t.Fatalf("%d run directories, %d table rows", len(runs), len(rows))
	}
	checked, checkedFaults := 0, 0
	for _, sumPath := range runs {
		rd := filepath.Dir(sumPath)
		f, _ := os.Open(sumPath)
		sum, err := render.ReadSummaryJSON(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		md, _ := os.ReadFile(filepath.Join(rd, render.MarkdownFile))
		for _, l := range sum.Latencies {
			if l.Metric != "pod_startup" {
				continue
			}
			key := sum.Scenario + "/" + l.Policy
			row, ok := rows[key]
			if !ok {
				t.Errorf("%s: in summary.json, not in the table", key)
				continue
			}
			p50, p99 := "-", "-"
			if l.N > 0 {
				p50, p99 = fmtMs(*l.P50.Value), fmtMs(*l.P99.Value)
			}
			if row[6] != p50 || row[7] != p99 || row[8] != fmt.Sprintf("%d (%d)", l.N, l.FaultedExcluded) {
				t.Errorf("%s: table p50 %s p99 %s n %s; summary.json p50 %s p99 %s n %d (%d)", key, row[6], row[7], row[8], p50, p99, l.N, l.FaultedExcluded)
			}
			if l.N == 0 {
				continue
			}
			var perf struct {
				DataItems []struct {
					Data   map[string]float64 `json:"data"`
					Labels map[string]string  `json:"labels"`
				} `json:"dataItems"`
			}
			pb, err := os.ReadFile(filepath.Join(rd, "PodStartupLatency_"+sum.Scenario+"_"+strings.NewReplacer(":", "_", "+", "_").Replace(l.Policy)+".json"))
			if err != nil {
				matches, _ := filepath.Glob(filepath.Join(rd, "PodStartupLatency_*.json"))
				for _, m := range matches {
					if b, _ := os.ReadFile(m); strings.Contains(string(b), `"Policy": "`+l.Policy+`"`) {
						pb, err = b, nil
					}
				}
			}
			if err != nil || json.Unmarshal(pb, &perf) != nil {
				t.Errorf("%s: no PerfData: %v", key, err)
				continue
			}
			for _, it := range perf.DataItems {
				if it.Labels["Metric"] == "pod_startup" && (it.Data["Perc50"] != *l.P50.Value || it.Data["Perc99"] != *l.P99.Value) {
					t.Errorf("%s: PerfData %v, summary.json p50 %v p99 %v", key, it.Data, *l.P50.Value, *l.P99.Value)
				}
			}
			mdRow := fmt.Sprintf("| pod_startup | %d | %.0f [", l.N, *l.P50.Value)
			if !strings.Contains(string(md), mdRow) || !strings.Contains(string(md), fmt.Sprintf("| %.0f [", *l.P99.Value)) {
				t.Errorf("%s: report.md lacks %q / p99 %.0f", key, mdRow, *l.P99.Value)
			}
			checked++
		}
		checkedFaults += faultsAgree(t, sum, string(md), errOut)
		tests, failures, failing := junitCounts(t, filepath.Join(rd, render.JUnitFile))
		if tests == 0 || failures != 0 {
			t.Errorf("%s: junit.xml has %d failures of %d (%v) although the run passed", rd, failures, tests, failing)
		}
	}
	if checked < 20 {
		t.Errorf("only %d scenario × policy latencies compared", checked)
	}
	if checkedFaults < 10 {
		t.Errorf("only %d fault tallies compared", checkedFaults)
	}
	// The notices of faults NOT applied are one wrapped line per scenario
	// (they were a line per scenario × policy × fault kind with every
	// reason: 63 lines of up to 250 columns).
	notices := 0
	for _, l := range strings.Split(errOut, "\n") {
		if strings.Contains(l, "NOT applied") {
			notices++
		}
		if n := len([]rune(l)); n > render.TableWidth && (strings.Contains(l, "NOT applied") || strings.HasPrefix(l, "  ")) {
			t.Errorf("stderr line of %d columns: %s", n, l)
		}
	}
	if notices == 0 || notices > len(runs) {
		t.Errorf("%d notices of faults NOT applied for %d run directories", notices, len(runs))
	}
}

// faultsAgree checks one run directory's fault tallies: every row of
// summary.json's is in report.md's "Faults injected", and the run's
// stderr notice for its scenario gives, per fault kind, the rows' total of
// firings NOT applied. It returns the tallies compared.
func faultsAgree(t *testing.T, sum render.Summary, md, errOut string) int {
	t.Helper()
	if sum.Sidebench == nil {
		t.Errorf("%s: summary.json has no sidebench section", sum.Scenario)
		return 0
	}
	notice := ""
	if i := strings.Index(errOut, "sidebench: "+sum.Scenario+" on sim: fault firings NOT applied"); i >= 0 {
		notice = errOut[i:]
		if j := strings.Index(notice[1:], "sidebench: "); j >= 0 {
			notice = notice[:j+1]
		}
		notice = strings.Join(strings.Fields(notice), " ")
	}
	n := 0
	total := map[string][2]int{}
	for _, r := range sum.Sidebench.Rows {
		for k, c := range r.Faults {
			na := fmt.Sprint(c.NotApplied)
			if c.NotApplied > 0 {
				na = "**" + na + "**"
			}
			if row := fmt.Sprintf("| %s | %s | %d | %s | ", k, r.Policy, c.Applied, na); !strings.Contains(md, row) {
				t.Errorf("%s: report.md lacks the fault row %q", sum.Scenario, row)
			}
			if c.NotApplied > 0 {
				tot := total[k]
				total[k] = [2]int{tot[0] + c.NotApplied, tot[1] + c.Applied}
			}
			n++
		}
	}
	if len(total) == 0 && notice != "" {
		t.Errorf("%s: a notice without firings NOT applied: %s", sum.Scenario, notice)
	}
	for k, tot := range total {
		if want := fmt.Sprintf(" %s %d (%d applied)", k, tot[0], tot[1]); !strings.Contains(notice, want) {
			t.Errorf("%s: the stderr notice lacks %q: %q", sum.Scenario, want, notice)
		}
	}
	return n
}

// scenarioWith writes testdata/tiny.yaml with its criteria replaced.
func scenarioWith(t *testing.T, criteria string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/tiny.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	s = s[:strings.Index(s, "criteria:")] + "criteria:\n" + criteria
	p := filepath.Join(t.TempDir(), "tiny.yaml")
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRunJudgesEveryCriterion guards observation 2: run judges
// criteria.graduation (FAIL exits 1; INSUFFICIENT DATA is reported with the
// lifecycles still needed and exits 0 unless --strict), and every
// criterion is a junit testcase and a line of the report's headline.
func TestRunJudgesEveryCriterion(t *testing.T) {
	for _, tc := range []struct {
		name, criteria string
		strict         bool
		code           int
		table          string // a line under the table
		failing        string // a failing junit testcase
		headline       string // a line of report.md's headline
	}{
		{"graduation FAIL", "  graduation: alpha\n  policies: [none]\n", false, ExitFailed,
			"FAIL tiny/none alpha/violation-rate", "[criterion] none alpha/violation-rate", "**FAIL** alpha/violation-rate"},
		{"graduation INSUFFICIENT", "  graduation: beta\n", false, ExitOK,
			"INSUFFICIENT DATA tiny/kep753 beta/violation-rate", "", "**INSUFFICIENT DATA** beta/violation-rate"},
		{"graduation INSUFFICIENT --strict", "  graduation: beta\n", true, ExitFailed,
			"more trials needed", "", "**INSUFFICIENT DATA** beta/pod-startup"},
		{"podStartupP99 FAIL", "  podStartupP99: 1s\n", false, ExitFailed,
			"FAIL tiny/kep753 podStartupP99: p99 pod_startup 2.458s (n=12) > 1s", "[criterion] kep753 podStartupP99", "**FAIL** podStartupP99"},
		{"all PASS", "  podStartupP99: 10s\n  maxViolations: 0\n", false, ExitOK, "", "", "**PASS** podStartupP99"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "r")
			args := []string{"run", "--quiet", "--out", dir, scenarioWith(t, tc.criteria)}
			if tc.strict {
				args = append(args, "--strict")
			}
			out, errOut, code := run(t, args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, out, errOut)
			}
			if tc.table != "" && !strings.Contains(out, tc.table) {
				t.Errorf("table output lacks %q:\n%s", tc.table, out)
			}
			_, failures, failing := junitCounts(t, filepath.Join(dir, render.JUnitFile))
			if tc.failing == "" && failures != 0 {
				t.Errorf("junit failures %v, want none", failing)
			}
			if tc.failing != "" && !strings.Contains(strings.Join(failing, "\n"), tc.failing) {
				t.Errorf("junit failing %v, want %q", failing, tc.failing)
			}
			md, _ := os.ReadFile(filepath.Join(dir, render.MarkdownFile))
			head := string(md)[:strings.Index(string(md), "| run |")]
			if !strings.Contains(head, tc.headline) {
				t.Errorf("report.md headline lacks %q:\n%s", tc.headline, head)
			}
			st := readState(t, filepath.Join(dir, render.SummaryFile))
			sum, _ := os.ReadFile(filepath.Join(dir, render.SummaryFile))
			var s render.Summary
			json.Unmarshal(sum, &s)
			if s.Graduation.Overall != st.Verdict {
				t.Errorf("summary.json graduation.overall %q, sidebench.verdict %q", s.Graduation.Overall, st.Verdict)
			}
		})
	}
}

// TestGraduateCountsEachTrialOnce guards observation 3.
func TestGraduateCountsEachTrialOnce(t *testing.T) {
	base := t.TempDir()
	a := filepath.Join(base, "a")
	if _, errOut, code := run(t, "run", "--quiet", "--out", a, "testdata/tiny.yaml"); code != ExitOK {
		t.Fatalf("run: %d %s", code, errOut)
	}
	one, errOne, code1 := run(t, "graduate", "--criteria", "beta", a)
	if strings.Contains(errOne, "warning") {
		t.Errorf("one directory: %q", errOne)
	}
	// The same directory twice, and a copy of it.
	cp := filepath.Join(base, "copy")
	copyDir(t, a, cp)
	for _, dirs := range [][]string{{a, a}, {a, cp}} {
		got, errOut, code := run(t, append([]string{"graduate", "--criteria", "beta"}, dirs...)...)
		if got != one || code != code1 {
			t.Errorf("graduate %v: exit %d (want %d)\n%s\nwant\n%s", dirs, code, code1, got, one)
		}
		if strings.Count(errOut, "already counted") != 1 {
			t.Errorf("graduate %v: want one warning naming the duplicate, got %q", dirs, errOut)
		}
	}
	// Different scenario content under the same name: refused, or with
	// --allow-mixed pooled and labelled.
	b := filepath.Join(base, "b")
	edited := scenarioWith(t, "  podStartupP99: 11s\n")
	if _, errOut, code := run(t, "run", "--quiet", "--out", b, edited); code != ExitOK {
		t.Fatalf("run b: %d %s", code, errOut)
	}
	if _, errOut, code := run(t, "graduate", "--criteria", "beta", a, b); code != ExitUsage || !strings.Contains(errOut, "--allow-mixed") {
		t.Errorf("mixed hashes: exit %d %q", code, errOut)
	}
	mixed, _, code := run(t, "graduate", "--criteria", "beta", "--allow-mixed", a, b)
	if code == ExitUsage || !strings.Contains(mixed, "[mixed]") {
		t.Errorf("--allow-mixed: exit %d\n%s", code, mixed)
	}
	// --format json: the pooled verdict for a dashboard.
	js, _, _ := run(t, "graduate", "--criteria", "beta", "--format", "json", a, a)
	var res gradResult
	if err := json.Unmarshal([]byte(js), &res); err != nil {
		t.Fatalf("json: %v\n%s", err, js)
	}
	if res.Overall != "INSUFFICIENT DATA" || len(res.Verdicts) != 4 || len(res.Warnings) != 1 || res.Dirs[1].Trials != 0 || res.Dirs[0].Trials != 4 {
		t.Errorf("json: %+v", res)
	}
	// Two soaks with the same seeds share their first trials: counted once.
	s1, s2 := filepath.Join(base, "s1"), filepath.Join(base, "s2")
	for _, d := range []string{s1, s2} {
		if _, errOut, code := run(t, "soak", "--quiet", "--duration", "30ms", "--out", d, "testdata/tiny.yaml"); code != ExitOK {
			t.Fatalf("soak: %d %s", code, errOut)
		}
	}
	n1, n2 := journalLines(s1), journalLines(s2)
	js, errOut, _ := run(t, "graduate", "--criteria", "beta", "--format", "json", s1, s2)
	if err := json.Unmarshal([]byte(js), &res); err != nil {
		t.Fatalf("json: %v\n%s %s", err, js, errOut)
	}
	if got := res.Dirs[0].Trials + res.Dirs[1].Trials; got != max(n1, n2) {
		t.Errorf("soaks of %d and %d trials with the same seeds pooled to %d trials, want %d", n1, n2, got, max(n1, n2))
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.Walk(from, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if fi.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// noBug runs a bug replica's trials without its bug: what a run looks
// like when the checker no longer catches the replica.
type noBug struct{ backend.Backend }

func (n noBug) RunTrial(ctx context.Context, p *trial.Plan, sink history.Sink) (backend.Stats, error) {
	c := *p
	c.Gates.Bug = api.BugNone
	return n.Backend.RunTrial(ctx, &c, sink)
}

// TestBugReplicaJUnit guards observation 4's other half: a bug replica is
// a testcase that fails when the checker does not catch it.
func TestBugReplicaJUnit(t *testing.T) {
	sc := scenarioWith(t, "  maxViolations: 0\n")
	b, _ := os.ReadFile(sc)
	os.WriteFile(sc, []byte(strings.Replace(string(b), "policies: [kep753, none]", "policies: [kep753, kep753+bug:sidecars-with-mains]", 1)), 0o644)

	dir := filepath.Join(t.TempDir(), "caught")
	out, errOut, code := run(t, "run", "--quiet", "--out", dir, sc)
	if code != ExitOK {
		t.Fatalf("caught: exit %d\n%s%s", code, out, errOut)
	}
	if _, failures, failing := junitCounts(t, filepath.Join(dir, render.JUnitFile)); failures != 0 {
		t.Errorf("caught replica: junit failures %v", failing)
	}

	dir = filepath.Join(t.TempDir(), "missed")
	d := wrapBackend(func(_ string, be backend.Backend) backend.Backend { return noBug{be} })
	out, _, code = runDeps(t, context.Background(), d, "run", "--quiet", "--out", dir, sc)
	if code != ExitFailed || !strings.Contains(out, "FAIL tiny/kep753+bug:sidecars-with-mains caught: the checker did not catch the bug replica") {
		t.Errorf("missed replica: exit %d\n%s", code, out)
	}
	if _, failures, failing := junitCounts(t, filepath.Join(dir, render.JUnitFile)); failures != 1 || failing[0] != "[bug-replica] kep753+bug:sidecars-with-mains caught" {
		t.Errorf("missed replica: junit failing %v", failing)
	}
}

// TestSoakAndRunShareOptions guards observation 5.
func TestSoakAndRunShareOptions(t *testing.T) {
	runFlags := map[string]bool{}
	root := NewRootCommand(IOStreams{})
	for _, c := range root.Commands() {
		if c.Name() == "run" {
			c.Flags().VisitAll(func(f *pflag.Flag) { runFlags[f.Name] = true })
		}
	}
	for _, c := range root.Commands() {
		if c.Name() != "soak" {
			continue
		}
		for name := range runFlags {
			if name == "out" || name == "include-large" {
				continue
			}
			if c.Flags().Lookup(name) == nil {
				t.Errorf("soak has no --%s", name)
			}
		}
	}
	for _, be := range []string{"local", "kube"} {
		_, errOut, code := run(t, "soak", "--backend", be, "--duration", "1s", "--out", filepath.Join(t.TempDir(), "s"), "testdata/tiny.yaml")
		if code != ExitUsage || !strings.Contains(errOut, "soaks run on the sim backend only") {
			t.Errorf("soak --backend %s: exit %d %q", be, code, errOut)
		}
	}
}

// TestOutputsCarryTheBuild guards observation 7: run.json, summary.json,
// junit.xml and the report name the build.
func TestOutputsCarryTheBuild(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	if _, errOut, code := run(t, "run", "--quiet", "--out", dir, "testdata/tiny.yaml"); code != ExitOK {
		t.Fatalf("run: %d %s", code, errOut)
	}
	v := version.Get()
	info, err := rundir.ReadInfo(dir)
	if err != nil || info.Build != v || info.Version != v.Version {
		t.Errorf("run.json build %+v (%v), want %+v", info.Build, err, v)
	}
	st := readState(t, filepath.Join(dir, render.SummaryFile))
	if st.Build.Version != v.Version || st.Build.Revision != v.Revision {
		t.Errorf("summary.json build %+v", st.Build)
	}
	j, _ := os.ReadFile(filepath.Join(dir, render.JUnitFile))
	if !strings.Contains(string(j), `<property name="version" value="`+v.Version+`">`) {
		t.Errorf("junit.xml lacks the version")
	}
	md, _ := os.ReadFile(filepath.Join(dir, render.MarkdownFile))
	if !strings.Contains(string(md), "| version | "+v.Version) {
		t.Errorf("report.md lacks the version")
	}
}
