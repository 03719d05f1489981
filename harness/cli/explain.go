package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sidebench/sidebench/harness/check"
	"github.com/sidebench/sidebench/harness/history"
	"github.com/sidebench/sidebench/harness/rundir"
	"github.com/sidebench/sidebench/reference-impl/api"
)

type explainFlags struct {
	pod    string
	trial  int
	policy string
	all    bool
}

func newExplainCommand(streams IOStreams) *cobra.Command {
	f := &explainFlags{}
	cmd := &cobra.Command{
		Use:   "explain RUNDIR [--pod NAME]",
		Short: "List a run's pods with findings, or print one pod's timeline",
		Long: `Without --pod: list the pods of a run directory that have findings, one line
per pod of a trial and policy, with their invariants and classes, violations
first (at most 50; --all lists every one).

With --pod: print the timeline of that pod from a run directory (or a
history file): its containers' starts, probes, exits and signals, the node
and fault events that touched it, and the checker's findings about it, each
also marked in the timeline at the instant the checker decided it. A run
holds one pod of that name per trial and policy: --trial and --policy pick
one (default: the first trial of the first policy; --all prints every one).

Timeline markers:
  !!  a fault event (fault.begin, fault.effect, fault.end, fault.not-applied)
  **  a node-level event (kubelet, runtime or node down/up, node shutdown)
  =>  a finding, at the instant the checker decided it`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErr("exactly one RUNDIR is required")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.pod == "" {
				return runExplainList(streams, f, args[0])
			}
			return runExplain(streams, f, args[0])
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.pod, "pod", "", "pod name (NAME or NAMESPACE/NAME); without it, list the pods with findings")
	fl.IntVar(&f.trial, "trial", -1, "trial number (default: the first one with the pod)")
	fl.StringVar(&f.policy, "policy", "", "policy (default: the first one with the pod)")
	fl.BoolVar(&f.all, "all", false, "print the pod of every trial and policy (without --pod: list every pod with findings)")
	return cmd
}

func runExplain(streams IOStreams, f *explainFlags, target string) error {
	histPath, findDir, keep := target, "", ""
	if st, err := os.Stat(target); err == nil && st.IsDir() {
		histPath, findDir = filepath.Join(target, rundir.FileHistory), target
		if info, err := rundir.ReadInfo(target); err == nil {
			keep = info.KeepHistory
		}
	}
	hf, err := rundir.OpenHistory(target)
	if err != nil {
		return usageErr("explain: %v", err)
	}
	defer hf.Close()
	want := f.pod
	if !strings.Contains(want, "/") {
		want = "default/" + want
	}
	if f.policy != "" {
		g, err := api.ParseGates(f.policy)
		if err != nil {
			return usageErr("explain: --policy: %v", err)
		}
		f.policy = g.String()
	}
	type found struct {
		meta   history.Meta
		events []history.Event
	}
	var hits []found
	var names []string // pod names for the "no pod" message (bounded)
	seen := map[string]bool{}
	wanted := func(pod string) bool {
		if !seen[pod] && len(seen) < 1000 {
			seen[pod] = true
			names = append(names, pod)
		}
		return pod == want || pod == f.pod
	}
	// Only the wanted pod's history is assembled: the others are dropped as
	// they are read.
	err = history.ForEachPod(history.NewReader(hf), func(meta *history.Meta, pod string, evs []history.Event) error {
		var m history.Meta
		if meta != nil {
			m = *meta
		}
		if f.trial >= 0 && m.Trial != f.trial || f.policy != "" && m.Policy != f.policy {
			return nil
		}
		if !f.all && len(hits) > 0 {
			return nil
		}
		hits = append(hits, found{m, append([]history.Event(nil), evs...)})
		return nil
	}, history.OnlyPods(wanted))
	if err != nil && !errors.Is(err, history.ErrTruncated) {
		// The history is unreadable or malformed: an input error, as for
		// `check` (exit 2), not an internal one.
		return usageErr("explain: %s: %v", histPath, err)
	}
	if len(hits) == 0 {
		sort.Strings(names)
		if len(names) > 10 {
			names = append(names[:10], "...")
		}
		kept := ""
		if keep != "" && keep != rundir.RetainAll {
			kept = fmt.Sprintf(" (the run kept the histories of some pods only: --keep-history %s)", keep)
		}
		return usageErr("explain: no pod %q in %s (with the given --trial/--policy)%s; pods: %s", f.pod, histPath, kept, strings.Join(names, ", "))
	}
	findings := readFindings(findDir)
	w := bufio.NewWriter(streams.Out)
	defer w.Flush()
	for i, h := range hits {
		if i > 0 {
			fmt.Fprintln(w)
		}
		writeTimeline(w, h.meta, h.events, findings)
	}
	return nil
}

func readFindings(dir string) []rundir.FindingRecord {
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

// writeTimeline renders one pod's history.
func writeTimeline(w io.Writer, m history.Meta, evs []history.Event, findings []rundir.FindingRecord) {
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
			sp := evs[i].Spec
			var cs []string
			for _, c := range append(append([]history.ContainerSpec(nil), sp.Init...), sp.Main...) {
				extra := ""
				var marks []string
				if c.Startup {
					marks = append(marks, "startupProbe")
				}
				if c.Readiness {
					marks = append(marks, "readinessProbe")
				}
				if c.Liveness {
					marks = append(marks, "livenessProbe")
				}
				if c.PostStart {
					marks = append(marks, "postStart")
				}
				if c.PreStop {
					marks = append(marks, "preStop")
				}
				if len(marks) > 0 {
					extra = " [" + strings.Join(marks, ",") + "]"
				}
				cs = append(cs, fmt.Sprintf("%s(%s)%s", c.Name, c.Role, extra))
			}
			fmt.Fprintf(w, "spec: restartPolicy=%s grace=%s containers: %s\n", sp.RestartPolicy, fmtMs(float64(sp.Grace)/1e6), strings.Join(cs, " "))
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
	n := 0
	for _, fl := range mine {
		if n == 0 {
			fmt.Fprintln(w, "findings:")
		}
		n++
		fmt.Fprintf(w, "  %s\n", fl.String())
	}
	if n == 0 {
		fmt.Fprintln(w, "findings: none")
	}
}

// explainListMax is how many pods `explain RUNDIR` lists without --all.
const explainListMax = 50

// runExplainList lists the pods of a run with findings: one line per pod
// of a trial and policy, with its invariants and classes, violations
// first, then degradations and bounds exceeded.
func runExplainList(streams IOStreams, f *explainFlags, dir string) error {
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return usageErr("%s: not a run directory (without --pod, explain lists the pods with findings of a run directory)", dir)
	}
	type podKey struct {
		scenario, policy string
		trial            int
		pod              string
	}
	type podFindings struct {
		key   podKey
		seed  uint64
		rank  int // the worst class: 0 violation, 1 degradation, 2 bound
		first int64
		what  []string
	}
	byPod := map[podKey]*podFindings{}
	var order []*podFindings
	total := 0
	err = rundir.EachFinding(dir, func(fr *rundir.FindingRecord) error {
		total++
		k := podKey{fr.Scenario, fr.Policy, fr.Trial, fr.Pod}
		p := byPod[k]
		if p == nil {
			p = &podFindings{key: k, seed: fr.Seed, rank: 3, first: fr.T}
			byPod[k] = p
			order = append(order, p)
		}
		p.rank = min(p.rank, classRank(fr.Class))
		p.first = min(p.first, fr.T)
		if w := fr.ID + " " + fr.Class; !slices.Contains(p.what, w) {
			p.what = append(p.what, w)
		}
		return nil
	})
	if err != nil {
		return runError(err)
	}
	w := bufio.NewWriter(streams.Out)
	defer w.Flush()
	if total == 0 {
		fmt.Fprintf(w, "%s: no findings: every invariant held on every pod\n", dir)
		return nil
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if a.rank != b.rank {
			return a.rank < b.rank
		}
		if a.key.policy != b.key.policy {
			return a.key.policy < b.key.policy
		}
		if a.key.trial != b.key.trial {
			return a.key.trial < b.key.trial
		}
		return a.first < b.first
	})
	fmt.Fprintf(w, "%s: %d findings on %d pods (violations first)\n", dir, total, len(order))
	tw := newTabWriter(w)
	fmt.Fprintln(tw, "POLICY\tTRIAL\tPOD\tFINDINGS")
	shown := order
	if !f.all && len(shown) > explainListMax {
		shown = shown[:explainListMax]
	}
	for _, p := range shown {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", p.key.policy, p.key.trial, p.key.pod, strings.Join(p.what, ", "))
	}
	tw.Flush()
	if len(shown) < len(order) {
		fmt.Fprintf(w, "... %d more pods (--all lists them; findings.jsonl has every finding)\n", len(order)-len(shown))
	}
	p := shown[0]
	fmt.Fprintf(w, "timeline of one: sidebench explain %s --pod %s --trial %d --policy %s\n", dir, p.key.pod, p.key.trial, p.key.policy)
	return nil
}

func classRank(c string) int {
	switch c {
	case "violation":
		return 0
	case "degradation":
		return 1
	}
	return 2
}
