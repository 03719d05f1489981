package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
		Use:   "explain RUNDIR --pod NAME",
		Short: "Print a readable timeline of one pod of a run",
		Long: `Print the timeline of one pod from a run directory (or a history file):
its containers' starts, probes, exits and signals, the node and fault events
that touched it, and the checker's findings about it. A run holds one pod of
that name per trial and policy: --trial and --policy pick one (default: the
first trial of the first policy; --all prints every one).`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErr("explain: exactly one RUNDIR is required")
			}
			if f.pod == "" {
				return usageErr("explain: --pod NAME is required")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExplain(streams, f, args[0])
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.pod, "pod", "", "pod name (NAME or NAMESPACE/NAME)")
	fl.IntVar(&f.trial, "trial", -1, "trial number (default: the first one with the pod)")
	fl.StringVar(&f.policy, "policy", "", "policy (default: the first one with the pod)")
	fl.BoolVar(&f.all, "all", false, "print the pod of every trial and policy")
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
	var names []string
	seen := map[string]bool{}
	err = history.ForEachPod(history.NewReader(hf), func(meta *history.Meta, pod string, evs []history.Event) error {
		if !seen[pod] {
			seen[pod] = true
			names = append(names, pod)
		}
		if pod != want && pod != f.pod {
			return nil
		}
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
	})
	if err != nil && !errors.Is(err, history.ErrTruncated) {
		return asInternal(fmt.Errorf("explain: %s: %w", histPath, err))
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
	fmt.Fprintln(w, "timeline:")
	for i := range evs {
		e := &evs[i]
		if e.Kind == history.RunMeta {
			continue
		}
		mark := "  "
		switch {
		case e.Kind.IsFault():
			mark = "!!"
		case e.Kind.IsNodeLevel():
			mark = "**"
		}
		line := check.Describe(e)
		if e.Kind.IsFault() && e.Target != "" {
			line += " target=" + e.Target
		}
		if e.Msg != "" && !strings.Contains(line, e.Msg) {
			line += " msg=" + e.Msg
		}
		fmt.Fprintf(w, "%s %s\n", mark, line)
	}
	n := 0
	for i := range findings {
		fl := &findings[i]
		if fl.Pod != pod || fl.Trial != m.Trial || fl.Policy != m.Policy || fl.Scenario != m.Scenario {
			continue
		}
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
