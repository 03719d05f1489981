package render

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// JUnit XML in the shape testgrid/prow (and go-junit-report, ginkgo) use:
// <testsuites><testsuite><properties/><testcase><failure/></testcase>...

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut *junitText    `xml:"system-out,omitempty"`
}

type junitText struct {
	Text string `xml:",cdata"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Body    string `xml:",cdata"`
}

// WriteJUnit writes junit.xml: one testsuite per scenario. It is green
// exactly when the run is: what fails a run fails a testcase, and nothing
// else does.
//
//   - "[run] complete" fails for a partial run.
//   - "[trials] POLICY" per policy: its trials, pods and wall time.
//   - A judged policy (RoleJudged): "[invariant] POLICY INV-ID" per
//     invariant, failing on violations (degradations, bounds exceeded and
//     unknown verdicts are in system-out), and "[criterion] POLICY NAME"
//     per criterion, failing on FAIL, skipped on INSUFFICIENT DATA (the
//     message says how many more trials are needed) and on NOT APPLICABLE.
//   - A bug replica: "[bug-replica] POLICY caught", failing when the
//     checker did not catch it (that is what it is for); its findings are
//     in system-out.
//   - A baseline (measured, not judged): its findings are properties
//     ("baseline.POLICY.INV-ID"), never failures.
//
// Test names carry invariant IDs; the rule's prose is in the body.
func WriteJUnit(w io.Writer, d RunData) error {
	d = normalize(d)
	s := junitSuite{Name: "sidebench." + d.Scenario, Time: fmtSeconds(d.Meta.ElapsedSeconds), Timestamp: startTime(d.Meta)}
	s.Properties = []junitProperty{
		{"scenario", d.Scenario},
		{"seed", strconv.FormatUint(d.Meta.Seed, 10)},
		{"backend", d.Meta.Backend},
		{"version", d.Meta.Version},
		{"revision", d.Meta.Revision},
		{"modified", strconv.FormatBool(d.Meta.Modified)},
		{"scenarioHash", d.Meta.ScenarioHash},
		{"trials", strconv.Itoa(d.Meta.Trials)},
		{"pods", strconv.Itoa(totalPods(d))},
		{"partial", strconv.FormatBool(d.Meta.Partial)},
	}
	for _, pol := range d.Policies {
		s.Properties = append(s.Properties, junitProperty{"role." + pol, d.RoleOf(pol)})
	}
	class := "sidebench." + d.Scenario
	run := junitCase{Name: "[run] complete", Classname: class, Time: "0"}
	if d.Meta.Partial {
		run.Failure = &junitMessage{Message: "run is partial: the results cover only what was recorded", Type: "partial"}
	}
	s.Cases = append(s.Cases, run)
	for _, pol := range d.Policies {
		cl := joinDot(class, pol)
		role := d.RoleOf(pol)
		pr := d.PolicyRuns[pol]
		s.Cases = append(s.Cases, junitCase{Name: "[trials] " + pol, Classname: cl, Time: fmtSeconds(pr.ElapsedSeconds),
			SystemOut: &junitText{fmt.Sprintf("role=%s trials=%d pods=%d", role, pr.Trials, pr.Pods)}})
		switch role {
		case RoleBaseline:
			for _, r := range d.Invariants {
				if r.Policy == pol && (r.Violations > 0 || r.Degradations > 0 || r.BoundsExceeded > 0) {
					s.Properties = append(s.Properties, junitProperty{"baseline." + pol + "." + r.ID,
						fmt.Sprintf("violations=%d degradations=%d boundsExceeded=%d checked=%d", r.Violations, r.Degradations, r.BoundsExceeded, r.Checked)})
				}
			}
		case RoleBugReplica:
			// The findings go with the "caught" criterion below.
		default:
			for _, r := range d.Invariants {
				if r.Policy == pol {
					s.Cases = append(s.Cases, invariantCase(d, cl, r))
				}
			}
		}
		for _, v := range d.Verdicts {
			if v.Policy != pol {
				continue
			}
			kind := "[criterion]"
			if role == RoleBugReplica {
				kind = "[bug-replica]"
			}
			c := junitCase{Name: fmt.Sprintf("%s %s %s", kind, pol, v.Criterion), Classname: cl, Time: "0",
				SystemOut: &junitText{fmt.Sprintf("status=%s observed=%s bound=%s threshold=%s\n%s", v.Status, fmtNum(v.Observed), fmtNum(v.Bound), fmtNum(v.Threshold), v.Message)}}
			if role == RoleBugReplica {
				c.SystemOut.Text += "\n" + findingsOf(d, pol)
			}
			switch v.Status {
			case StatusFail:
				c.Failure = &junitMessage{Message: v.Message, Type: "criterion", Body: strings.Join(v.Warnings, "\n")}
			case StatusInsufficient:
				msg := "INSUFFICIENT DATA: " + v.Message
				if v.MoreTrialsNeeded > 0 {
					msg += fmt.Sprintf(" (≈%d more trials needed)", v.MoreTrialsNeeded)
				}
				c.Skipped = &junitMessage{Message: msg}
			case StatusNotApplicable:
				c.Skipped = &junitMessage{Message: "NOT APPLICABLE: " + v.Message}
			}
			s.Cases = append(s.Cases, c)
		}
	}
	for _, c := range s.Cases {
		s.Tests++
		if c.Failure != nil {
			s.Failures++
		}
		if c.Skipped != nil {
			s.Skipped++
		}
	}
	doc := junitSuites{Name: "sidebench", Tests: s.Tests, Failures: s.Failures, Skipped: s.Skipped, Time: s.Time, Suites: []junitSuite{s}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// invariantCase is a judged policy's testcase for one invariant.
func invariantCase(d RunData, class string, r InvariantRow) junitCase {
	c := junitCase{Name: "[invariant] " + joinNonEmpty(r.Policy, r.ID), Classname: class, Time: "0"}
	rs := rowRate(r)
	out := fmt.Sprintf("%s\nlevel=%s checked=%d violations=%d degradations=%d boundsExceeded=%d unknown=%d rate=%s wilsonUpper95=%s clopperPearsonUpper95=%s",
		r.Rule, r.Level, r.Checked, r.Violations, r.Degradations, r.BoundsExceeded, r.Unknown, fmtPct(rs.Rate), fmtPct(rs.WilsonHi), fmtPct(rs.CPHi))
	var extra []string
	for i := range d.Findings {
		f := &d.Findings[i]
		if f.Policy == r.Policy && f.ID == r.ID && f.Class != ClassViolation {
			extra = append(extra, findingTitle(f)+": "+f.Msg)
		}
	}
	if len(extra) > 0 {
		out += "\n" + strings.Join(extra, "\n")
	}
	c.SystemOut = &junitText{out}
	if r.Violations > 0 {
		msg := fmt.Sprintf("%s: %d violation(s) in %d pods", r.ID, r.Violations, r.Checked)
		body := r.Rule
		if f := firstViolation(d.Findings, r.Policy, r.ID); f != nil {
			msg += ": " + f.Msg
			lines := []string{r.Rule, findingTitle(f)}
			if ctx := findingContext(f); ctx != "" {
				lines = append(lines, ctx)
			}
			lines = append(lines, excerptLines(f)...)
			body = strings.Join(lines, "\n")
		}
		c.Failure = &junitMessage{Message: msg, Type: ClassViolation, Body: body}
	}
	return c
}

// findingsOf lists a policy's invariants with findings, one per line.
func findingsOf(d RunData, pol string) string {
	var lines []string
	for _, r := range d.Invariants {
		if r.Policy == pol && (r.Violations > 0 || r.BoundsExceeded > 0 || r.Degradations > 0) {
			lines = append(lines, fmt.Sprintf("%s violations=%d degradations=%d boundsExceeded=%d", r.ID, r.Violations, r.Degradations, r.BoundsExceeded))
		}
	}
	if len(lines) == 0 {
		return "no findings"
	}
	return strings.Join(lines, "\n")
}

// fmtSeconds is a junit time attribute.
func fmtSeconds(s float64) string { return strconv.FormatFloat(s, 'f', 3, 64) }

func joinNonEmpty(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, " ")
}

func joinDot(a, b string) string {
	if b == "" {
		return a
	}
	return a + "." + b
}

func firstViolation(fs []Finding, policy, id string) *Finding {
	for i := range fs {
		if fs[i].Policy == policy && fs[i].ID == id && fs[i].Class == ClassViolation {
			return &fs[i]
		}
	}
	return nil
}
