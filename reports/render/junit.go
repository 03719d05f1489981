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

// WriteJUnit writes junit.xml: one testsuite per scenario, one testcase
// per policy × invariant and per graduation criterion, plus a "run
// complete" case that fails for a partial run.
//
// An invariant case fails when it has violations; the failure message is
// the first violation's explanation and the body its history excerpt.
// Degradations, bounds exceeded and unknown verdicts do not fail: they are
// in system-out. A criterion case fails on FAIL and is skipped on
// INSUFFICIENT DATA (the message says how many more trials are needed).
func WriteJUnit(w io.Writer, d RunData) error {
	d = normalize(d)
	s := junitSuite{Name: "sidebench." + d.Scenario, Time: "0", Timestamp: startTime(d.Meta)}
	s.Properties = []junitProperty{
		{"scenario", d.Scenario},
		{"seed", strconv.FormatUint(d.Meta.Seed, 10)},
		{"backend", d.Meta.Backend},
		{"version", d.Meta.Version},
		{"trials", strconv.Itoa(d.Meta.Trials)},
		{"pods", strconv.Itoa(totalPods(d))},
		{"partial", strconv.FormatBool(d.Meta.Partial)},
	}
	class := "sidebench." + d.Scenario
	run := junitCase{Name: "[run] complete", Classname: class, Time: "0"}
	if d.Meta.Partial {
		run.Failure = &junitMessage{Message: "run is partial: the results cover only what was recorded", Type: "partial"}
	}
	s.Cases = append(s.Cases, run)
	for _, r := range d.Invariants {
		c := junitCase{Name: "[invariant] " + joinNonEmpty(r.Policy, r.ID), Classname: joinDot(class, r.Policy), Time: "0"}
		if r.Rule != "" {
			c.Name += ": " + r.Rule
		}
		rs := rowRate(r)
		out := fmt.Sprintf("level=%s checked=%d violations=%d degradations=%d boundsExceeded=%d unknown=%d rate=%s wilsonUpper95=%s clopperPearsonUpper95=%s",
			r.Level, r.Checked, r.Violations, r.Degradations, r.BoundsExceeded, r.Unknown, fmtPct(rs.Rate), fmtPct(rs.WilsonHi), fmtPct(rs.CPHi))
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
			body := ""
			if f := firstViolation(d.Findings, r.Policy, r.ID); f != nil {
				msg += ": " + f.Msg
				lines := []string{findingTitle(f)}
				if ctx := findingContext(f); ctx != "" {
					lines = append(lines, ctx)
				}
				lines = append(lines, excerptLines(f)...)
				body = strings.Join(lines, "\n")
			}
			c.Failure = &junitMessage{Message: msg, Type: ClassViolation, Body: body}
		}
		s.Cases = append(s.Cases, c)
	}
	for _, v := range d.Verdicts {
		name := "[graduation] " + v.Criterion
		cl := class
		if v.Policy != "" {
			name = fmt.Sprintf("[graduation] %s %s", v.Policy, v.Criterion)
			cl += "." + v.Policy
		}
		c := junitCase{Name: name, Classname: cl, Time: "0",
			SystemOut: &junitText{fmt.Sprintf("status=%s observed=%s bound=%s threshold=%s", v.Status, fmtNum(v.Observed), fmtNum(v.Bound), fmtNum(v.Threshold))}}
		switch v.Status {
		case StatusFail:
			c.Failure = &junitMessage{Message: v.Message, Type: "criterion", Body: strings.Join(v.Warnings, "\n")}
		case StatusInsufficient:
			msg := "INSUFFICIENT DATA: " + v.Message
			if v.MoreTrialsNeeded > 0 {
				msg += fmt.Sprintf(" (≈%d more trials needed)", v.MoreTrialsNeeded)
			}
			c.Skipped = &junitMessage{Message: msg}
		}
		s.Cases = append(s.Cases, c)
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
	doc := junitSuites{Name: "sidebench", Tests: s.Tests, Failures: s.Failures, Skipped: s.Skipped, Suites: []junitSuite{s}}
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
