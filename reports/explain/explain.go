// Package explain renders what `sidebench explain` shows: one pod's
// history as a timeline with the checker's findings placed at the instant
// they were decided, and the list of a run's pods with findings. The CLI
// owns the flags and the exit codes; this package owns the reading and the
// rendering.
package explain

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/sidebench/sidebench/harness/check"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/rundir"
	"github.com/sidebench/sidebench/reports/render"
)

// Query selects pods of a history.
type Query struct {
	Pod      string // "ns/name" or "name" (namespace default)
	Scenario string // "": any (a run directory may hold several)
	Trial    int    // < 0: any
	Policy   string // canonical gates string; "": any
	All      bool   // every match, not only the first
}

// Hit is one pod's history.
type Hit struct {
	Meta   history.Meta
	Events []history.Event
}

// maxNames bounds the pod names remembered for a "no such pod" message.
const maxNames = 1000

// Find reads a history and returns the wanted pods' histories (only those
// are assembled: the others are dropped as they are read) and, when none
// matched, up to maxNames of the pod names seen (sorted). Without q.All
// and q.Scenario, elsewhere names the other scenarios that have a pod of
// that name matching q (a run directory of several: the first is shown).
// A history cut short (history.ErrTruncated) is read up to its end.
func Find(r io.Reader, q Query) (hits []Hit, names, elsewhere []string, err error) {
	want := q.Pod
	if !strings.Contains(want, "/") {
		want = "default/" + want
	}
	seen := map[string]bool{}
	wanted := func(pod string) bool {
		if !seen[pod] && len(seen) < maxNames {
			seen[pod] = true
			names = append(names, pod)
		}
		return pod == want || pod == q.Pod
	}
	err = history.ForEachPod(history.NewReader(r), func(meta *history.Meta, pod string, evs []history.Event) error {
		var m history.Meta
		if meta != nil {
			m = *meta
		}
		if q.Trial >= 0 && m.Trial != q.Trial || q.Policy != "" && m.Policy != q.Policy || q.Scenario != "" && m.Scenario != q.Scenario {
			return nil
		}
		if !q.All && len(hits) > 0 {
			if q.Scenario == "" && m.Scenario != hits[0].Meta.Scenario && !slices.Contains(elsewhere, m.Scenario) {
				elsewhere = append(elsewhere, m.Scenario)
			}
			return nil
		}
		hits = append(hits, Hit{m, append([]history.Event(nil), evs...)})
		return nil
	}, history.OnlyPods(wanted))
	if err != nil && !errors.Is(err, history.ErrTruncated) {
		return nil, nil, nil, err
	}
	if len(hits) > 0 {
		names = nil
	}
	sort.Strings(names)
	return hits, names, elsewhere, nil
}

// Findings reads a run directory's findings ("" or unreadable: none).
func Findings(dir string) []rundir.FindingRecord {
	if dir == "" {
		return nil
	}
	var out []rundir.FindingRecord
	rundir.EachFinding(dir, func(fr *rundir.FindingRecord) error {
		out = append(out, *fr)
		return nil
	})
	return out
}

// WriteTimeline renders one pod's history with its findings.
func WriteTimeline(w io.Writer, m history.Meta, evs []history.Event, findings []rundir.FindingRecord) {
	pod := ""
	for i := range evs {
		if evs[i].Pod != "" {
			pod = evs[i].Pod
			break
		}
	}
	fmt.Fprintf(w, "pod %s  scenario=%s policy=%s trial=%d seed=%d backend=%s\n", pod, m.Scenario, m.Policy, m.Trial, m.Seed, m.Backend)
	for i := range evs {
		if evs[i].Kind == history.PodCreated && evs[i].Spec != nil {
			writeSpec(w, evs[i].Spec)
			break
		}
	}
	var mine []*rundir.FindingRecord
	for i := range findings {
		fl := &findings[i]
		if fl.Pod == pod && fl.Trial == m.Trial && fl.Policy == m.Policy && fl.Scenario == m.Scenario {
			mine = append(mine, fl)
		}
	}
	fmt.Fprintln(w, "timeline:  (!! fault event   ** node-level event   => finding, at the instant the checker decided it)")
	next := 0 // the next finding to place, in time order
	sort.SliceStable(mine, func(i, j int) bool { return mine[i].T < mine[j].T })
	placeFindings := func(upTo int64, last bool) {
		for ; next < len(mine) && (last || mine[next].T < upTo); next++ {
			fl := mine[next]
			fmt.Fprintf(w, "=> %12s  %s %s: %s\n", fmt.Sprintf("%.3fs", float64(fl.T)/1e9), fl.ID, fl.Class, fl.Msg)
		}
	}
	for i := range evs {
		e := &evs[i]
		if e.Kind == history.RunMeta {
			continue
		}
		// A finding goes after the events of its instant: the offending
		// event is the line just above it.
		placeFindings(e.T, false)
		mark := "  "
		switch {
		case e.Kind.IsFault():
			mark = "!!"
		case e.Kind.IsNodeLevel():
			mark = "**"
		}
		line := check.Describe(e) // fault events name their target once
		if e.Msg != "" && !strings.Contains(line, e.Msg) {
			line += " msg=" + e.Msg
		}
		fmt.Fprintf(w, "%s %s\n", mark, line)
	}
	placeFindings(0, true)
	if len(mine) == 0 {
		fmt.Fprintln(w, "findings: none")
		return
	}
	fmt.Fprintln(w, "findings:")
	for _, fl := range mine {
		fmt.Fprintf(w, "  %s\n", fl.String())
	}
}

func writeSpec(w io.Writer, sp *history.PodSpec) {
	var cs []string
	for _, c := range append(append([]history.ContainerSpec(nil), sp.Init...), sp.Main...) {
		var marks []string
		for _, m := range []struct {
			on   bool
			name string
		}{{c.Startup, "startupProbe"}, {c.Readiness, "readinessProbe"}, {c.Liveness, "livenessProbe"}, {c.PostStart, "postStart"}, {c.PreStop, "preStop"}} {
			if m.on {
				marks = append(marks, m.name)
			}
		}
		extra := ""
		if len(marks) > 0 {
			extra = " [" + strings.Join(marks, ",") + "]"
		}
		cs = append(cs, fmt.Sprintf("%s(%s)%s", c.Name, c.Role, extra))
	}
	fmt.Fprintf(w, "spec: restartPolicy=%s grace=%s containers: %s\n", sp.RestartPolicy, render.FmtDurationMs(float64(sp.Grace)/1e6), strings.Join(cs, " "))
}

// PodFindings is one pod of a trial and policy with findings.
type PodFindings struct {
	Scenario, Policy string
	Trial            int
	Pod              string
	Seed             uint64
	rank             int // the worst class (render.ClassRank)
	first            int64
	What             []string // "ID class", each once, in the order found
}

// Listing is a run's pods with findings, violations first.
type Listing struct {
	// Trials is the number of committed trials listed (their findings
	// are the listing's; policy and trial choose them as they choose the
	// findings).
	Trials int
	// Scenarios is how many scenarios those trials ran (a soak of several
	// scenarios writes one run directory): the listing names each pod's
	// when more than one.
	Scenarios int
	Findings  int
	Pods      []*PodFindings
	// Of says which pods were listed when not all: " of policy P",
	// " of trial N", both, or "".
	Of string
}

// List reads a run directory's findings into a Listing: one entry per pod
// of a scenario, trial and policy, ordered by worst class, scenario,
// policy, trial and first finding. q's Scenario and Policy other than ""
// and Trial >= 0 keep only those findings (Pod and All are not used).
func List(dir string, q Query) (*Listing, error) {
	var c lister
	v, err := rundir.OpenView(dir)
	if err != nil {
		return nil, err
	}
	scenarios := map[string]bool{}
	err = v.EachEntry(func(e *rundir.Entry) error {
		if q.listed(e.Scenario, e.Policy, e.Trial) {
			c.l.Trials++
			scenarios[e.Scenario] = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	c.l.Scenarios = len(scenarios)
	err = v.EachFinding(func(fr *rundir.FindingRecord) error {
		if !q.listed(fr.Scenario, fr.Policy, fr.Trial) {
			return nil
		}
		return c.add(fr)
	})
	if err != nil {
		return nil, err
	}
	l := c.listing()
	if q.Scenario != "" {
		l.Of += " of scenario " + q.Scenario
	}
	if q.Policy != "" {
		l.Of += " of policy " + q.Policy
	}
	if q.Trial >= 0 {
		l.Of += fmt.Sprintf(" of trial %d", q.Trial)
	}
	return l, nil
}

// listed reports whether a trial's findings are q's.
func (q Query) listed(scenario, policy string, trial int) bool {
	return (q.Scenario == "" || scenario == q.Scenario) && (q.Policy == "" || policy == q.Policy) && (q.Trial < 0 || trial == q.Trial)
}

// lister gathers findings by pod (List without the file).
type lister struct {
	l     Listing
	byPod map[podKey]*PodFindings
}

type podKey struct {
	scenario, policy string
	trial            int
	pod              string
}

func (c *lister) add(fr *rundir.FindingRecord) error {
	if c.byPod == nil {
		c.byPod = map[podKey]*PodFindings{}
	}
	c.l.Findings++
	k := podKey{fr.Scenario, fr.Policy, fr.Trial, fr.Pod}
	p := c.byPod[k]
	if p == nil {
		p = &PodFindings{Scenario: fr.Scenario, Policy: fr.Policy, Trial: fr.Trial, Pod: fr.Pod, Seed: fr.Seed, rank: math.MaxInt, first: fr.T}
		c.byPod[k] = p
		c.l.Pods = append(c.l.Pods, p)
	}
	p.rank = min(p.rank, render.ClassRank(fr.Class))
	p.first = min(p.first, fr.T)
	if w := fr.ID + " " + fr.Class; !slices.Contains(p.What, w) {
		p.What = append(p.What, w)
	}
	return nil
}

func (c *lister) listing() *Listing {
	l := &c.l
	sort.SliceStable(l.Pods, func(i, j int) bool {
		a, b := l.Pods[i], l.Pods[j]
		if a.rank != b.rank {
			return a.rank < b.rank
		}
		if a.Scenario != b.Scenario {
			return a.Scenario < b.Scenario
		}
		if a.Policy != b.Policy {
			return a.Policy < b.Policy
		}
		if a.Trial != b.Trial {
			return a.Trial < b.Trial
		}
		return a.first < b.first
	})
	return l
}

// WriteListing renders a Listing of run directory dir, at most max pods
// (max <= 0: all), with the command that shows the first pod's timeline.
func WriteListing(w io.Writer, dir string, l *Listing, max int) {
	if l.Findings == 0 && l.Trials == 0 {
		// An empty findings file of a run that committed nothing is not
		// a clean run: nothing was checked.
		fmt.Fprintf(w, "%s: no committed trial%s: nothing has been checked\n", dir, l.Of)
		return
	}
	if l.Findings == 0 {
		fmt.Fprintf(w, "%s: no findings%s (%d committed trials): every invariant held on every pod\n", dir, l.Of, l.Trials)
		return
	}
	fmt.Fprintf(w, "%s: %d findings on %d pods%s (violations first)\n", dir, l.Findings, len(l.Pods), l.Of)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	several := l.Scenarios > 1
	if several {
		fmt.Fprint(tw, "SCENARIO\t")
	}
	fmt.Fprintln(tw, "POLICY\tTRIAL\tPOD\tFINDINGS")
	shown := l.Pods
	if max > 0 && len(shown) > max {
		shown = shown[:max]
	}
	for _, p := range shown {
		if several {
			fmt.Fprintf(tw, "%s\t", p.Scenario)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", p.Policy, p.Trial, p.Pod, strings.Join(p.What, ", "))
	}
	tw.Flush()
	if len(shown) < len(l.Pods) {
		fmt.Fprintf(w, "... %d more pods (--all lists them; %s in the run directory has every finding)\n", len(l.Pods)-len(shown), rundir.FileFindings)
	}
	p := shown[0]
	scen := ""
	if several {
		scen = " --scenario " + p.Scenario
	}
	fmt.Fprintf(w, "timeline of one: sidebench explain %s --pod %s%s --trial %d --policy %s\n", dir, p.Pod, scen, p.Trial, p.Policy)
}
