package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/sidebench/sidebench/harness/metrics"
	"github.com/sidebench/sidebench/reference-impl/api"
	"github.com/sidebench/sidebench/reports/graduation"
	"github.com/sidebench/sidebench/reports/render"
)

type graduateFlags struct {
	criteria string
	policies []string
}

const graduateLong = `Judge the policies of one or more run directories against graduation
criteria: a built-in stage (alpha, beta, ga; reports/graduation) or a
criteria file (PATH.yaml, same schema).

Run directories of the same scenario are pooled. For each scenario × policy
the inputs are:

  violations   pods with at least one hard-invariant violation (journal.jsonl;
               else distinct trial × pod violations in findings.jsonl)
  lifecycles   pods (the trials of the violation rate)
  pod startup  pod_startup samples from pods.jsonl, faulted pods excluded
  sidecar Jobs Job pods with sidecars, and how many reached Succeeded
  baseline     the pod_startup samples of policy none of the same scenario
               (for the sidecar-overhead criterion)

Every policy except the none baseline is judged (--policy chooses).

Each criterion is PASS (holds at the required confidence), FAIL (the
observation itself breaks it: more trials of the same behaviour cannot fix
it) or INSUFFICIENT DATA (within the limit, but the data cannot support the
claim yet; NEEDED estimates how many more trials, pods or Jobs would).

Exit codes:
  0  no criterion failed (PASS or INSUFFICIENT DATA; the overall line says
     which)
  1  a criterion failed
  2  usage error or unreadable input (the message names the path)`

func newGraduateCommand(streams IOStreams) *cobra.Command {
	f := &graduateFlags{}
	cmd := &cobra.Command{
		Use:   "graduate [flags] --criteria alpha|beta|ga|PATH.yaml RUNDIR...",
		Short: "Judge runs against graduation criteria (PASS, FAIL, INSUFFICIENT DATA)",
		Long:  graduateLong,
		Args:  atLeastOne("run directory"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGraduate(streams, f, args)
		},
	}
	cmd.Flags().StringVar(&f.criteria, "criteria", "", "criteria: alpha, beta, ga or a criteria file (required)")
	cmd.Flags().StringSliceVar(&f.policies, "policy", nil, "policies to judge (default: every policy but none)")
	return cmd
}

func loadCriteria(name string) (graduation.Criteria, error) {
	if slices.Contains(graduation.Stages, name) {
		c, err := graduation.Load(name)
		if err != nil {
			return c, asInternal(err)
		}
		return c, nil
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return graduation.Criteria{}, usageErr("--criteria %s: not a stage (%v) and not readable: %v", name, graduation.Stages, unwrapPathErr(err))
	}
	c, err := graduation.Parse(b)
	if err != nil {
		return c, usageErr("--criteria %s: %v", name, err)
	}
	return c, nil
}

// gradKey is a scenario × policy.
type gradKey struct{ scenario, policy string }

// gradCounts are the violation and lifecycle counts of one scenario × policy.
type gradCounts struct{ violating, pods int }

func runGraduate(streams IOStreams, f *graduateFlags, dirs []string) error {
	if f.criteria == "" {
		return usageErr("graduate: --criteria is required (alpha, beta, ga or a criteria file)")
	}
	crit, err := loadCriteria(f.criteria)
	if err != nil {
		return err
	}
	agg := metrics.NewAggregator(metrics.Options{})
	counts := map[gradKey]*gradCounts{}
	seeds := map[string]uint64{}
	for _, dir := range dirs {
		if fi, err := os.Stat(dir); err != nil {
			return usageErr("%s: %v", dir, unwrapPathErr(err))
		} else if !fi.IsDir() {
			return usageErr("%s: not a run directory", dir)
		}
		a := metrics.NewAggregator(metrics.Options{})
		if err := forEachRecord(filepath.Join(dir, filePods), func(r *metrics.Record) {
			a.Add(r)
			agg.Add(r)
		}); err != nil {
			return err
		}
		dirCounts, err := violatingPods(dir, a)
		if err != nil {
			return err
		}
		for k, c := range dirCounts {
			acc := counts[k]
			if acc == nil {
				acc = &gradCounts{}
				counts[k] = acc
			}
			acc.violating += c.violating
			acc.pods += c.pods
		}
		if sc, seed, ok := summarySeed(dir); ok {
			if _, seen := seeds[sc]; !seen {
				seeds[sc] = seed
			}
		}
	}
	res := agg.Result()
	var keys []gradKey
	for _, pc := range res.Pods {
		k := gradKey{pc.Scenario, pc.Policy}
		if counts[k] == nil {
			counts[k] = &gradCounts{}
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return usageErr("%v: no pod records (pods.jsonl is empty)", dirs)
	}
	judge := func(k gradKey) bool {
		if len(f.policies) > 0 {
			return slices.Contains(f.policies, k.policy)
		}
		return k.policy != api.PolicyNone.String()
	}
	for _, p := range f.policies {
		if !slices.ContainsFunc(keys, func(k gradKey) bool { return k.policy == p }) {
			return usageErr("--policy %s: not in %v", p, dirs)
		}
	}
	tw := newTabWriter(streams.Out)
	fmt.Fprintln(tw, "SCENARIO\tPOLICY\tCRITERION\tSTATUS\tOBSERVED\tBOUND\tTHRESHOLD\tNEEDED")
	var all []graduation.Verdict
	var notes []string
	judged := 0
	for _, k := range keys {
		if !judge(k) {
			continue
		}
		judged++
		c := counts[k]
		in := graduation.Inputs{
			Violations: c.violating, Lifecycles: c.pods,
			PodStartupMs: agg.Samples(metrics.Key{Scenario: k.scenario, Policy: k.policy, Metric: metrics.PodStartup}),
			BaselineMs:   agg.Samples(metrics.Key{Scenario: k.scenario, Policy: api.PolicyNone.String(), Metric: metrics.PodStartup}),
			Seed:         seeds[k.scenario],
		}
		for _, pc := range res.Pods {
			if pc.Scenario == k.scenario && pc.Policy == k.policy {
				in.SidecarJobs, in.SidecarJobsCompleted = pc.SidecarJobs, pc.SidecarJobsSucceeded
			}
		}
		for _, v := range graduation.Evaluate(crit, in) {
			all = append(all, v)
			needed := "-"
			if v.Status == graduation.Insufficient {
				needed = "?"
				if v.MoreTrialsNeeded > 0 {
					needed = "+" + strconv.Itoa(v.MoreTrialsNeeded)
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.scenario, k.policy, v.Criterion, v.Status,
				gradNum(v.Observed), gradNum(v.Bound), gradNum(v.Threshold), needed)
			if v.Status != graduation.Pass {
				notes = append(notes, fmt.Sprintf("%s %s %s: %s: %s", k.scenario, k.policy, v.Criterion, v.Status, v.Message))
			}
			for _, w := range v.Warnings {
				notes = append(notes, fmt.Sprintf("%s %s %s: warning: %s", k.scenario, k.policy, v.Criterion, w))
			}
		}
	}
	if judged == 0 {
		return usageErr("%v: no policy to judge (only the none baseline; use --policy none)", dirs)
	}
	tw.Flush()
	for _, n := range notes {
		fmt.Fprintln(streams.Out, n)
	}
	overall := graduation.Overall(all)
	stage := crit.Stage
	if stage == "" {
		stage = f.criteria
	}
	fmt.Fprintf(streams.Out, "overall (%s): %s\n", stage, overall)
	if overall == graduation.Insufficient {
		fmt.Fprintln(streams.Out, "INSUFFICIENT DATA: nothing failed, but the data does not support graduation yet; run more trials (NEEDED).")
	}
	if overall == graduation.Fail {
		return silent(ExitFailed)
	}
	return nil
}

func gradNum(x float64) string {
	switch {
	case math.IsNaN(x):
		return "-"
	case math.IsInf(x, 1):
		return "+inf"
	case math.IsInf(x, -1):
		return "-inf"
	}
	return strconv.FormatFloat(x, 'g', 6, 64)
}

// violatingPods counts, per scenario × policy of one run directory, the
// pods with at least one violation and the pods. The journal's per-trial
// totals are used when present; otherwise distinct trial × pod violations
// of findings.jsonl and the pods of pods.jsonl (a).
func violatingPods(dir string, a *metrics.Aggregator) (map[gradKey]gradCounts, error) {
	out := map[gradKey]gradCounts{}
	jpath := filepath.Join(dir, fileJournal)
	entries, _, err := readJournal(jpath)
	if err != nil {
		return nil, usageErr("%s: %v", jpath, unwrapPathErr(err))
	}
	if len(entries) > 0 {
		for _, e := range entries {
			k := gradKey{e.Scenario, e.Policy}
			c := out[k]
			c.violating += e.ViolatingPods
			c.pods += e.Pods
			out[k] = c
		}
		return out, nil
	}
	for _, pc := range a.Result().Pods {
		out[gradKey{pc.Scenario, pc.Policy}] = gradCounts{pods: pc.Pods}
	}
	fpath := filepath.Join(dir, fileFindings)
	fh, err := os.Open(fpath)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, usageErr("%s: neither journal.jsonl nor findings.jsonl: cannot count violations", dir)
		}
		return nil, usageErr("%s: %v", fpath, unwrapPathErr(err))
	}
	defer fh.Close()
	type podKey struct {
		gradKey
		trial int
		pod   string
	}
	seen := map[podKey]bool{}
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var fr findingRecord
		if json.Unmarshal(sc.Bytes(), &fr) != nil || fr.Class != "violation" {
			continue
		}
		pk := podKey{gradKey{fr.Scenario, fr.Policy}, fr.Trial, fr.Pod}
		if !seen[pk] {
			seen[pk] = true
			c := out[pk.gradKey]
			c.violating++
			out[pk.gradKey] = c
		}
	}
	if err := sc.Err(); err != nil {
		return nil, usageErr("%s: %v", fpath, err)
	}
	return out, nil
}

// summarySeed returns the scenario and master seed of a run directory's
// summary.json, if it is reports/render's schema.
func summarySeed(dir string) (string, uint64, bool) {
	fh, err := os.Open(filepath.Join(dir, render.SummaryFile))
	if err != nil {
		return "", 0, false
	}
	defer fh.Close()
	s, err := render.ReadSummaryJSON(fh)
	if err != nil {
		return "", 0, false
	}
	return s.Scenario, s.Run.Seed, true
}
