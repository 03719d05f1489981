package graduation

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/sidebench/sidebench/reports/stats"
)

// Status is a criterion's outcome.
type Status string

const (
	// Pass: the criterion holds at the required confidence.
	Pass Status = "PASS"
	// Fail: the observed value itself breaks the criterion; more trials at
	// the same behaviour cannot fix it.
	Fail Status = "FAIL"
	// Insufficient: the observed value is within the limit but the data
	// cannot yet support the claim at the required confidence.
	Insufficient Status = "INSUFFICIENT DATA"
	// NotApplicable: the criterion cannot be asked of the policy judged
	// (the sidecar overhead of the none baseline against itself). It
	// neither passes nor fails a graduation: Overall skips it.
	NotApplicable Status = "NOT APPLICABLE"
)

// Criterion names, as they appear in verdicts.
const (
	CriterionViolationRate   = "violation-rate"
	CriterionPodStartup      = "pod-startup"
	CriterionSidecarJobs     = "sidecar-jobs-complete"
	CriterionSidecarOverhead = "sidecar-overhead"
)

// Inputs are the numbers a graduation decision needs, gathered by the
// caller from the checker and the metrics (scenario × policy under test).
type Inputs struct {
	// Violations is the number of hard-invariant violations without an
	// excusing fault, in Lifecycles pod lifecycles (the trials).
	Violations, Lifecycles int
	// PodStartupMs is the pod_startup distribution (ms, 1 ms resolution)
	// of the policy under test.
	PodStartupMs *stats.Hist
	// OverheadMs and BaselineMs are the distributions of the overhead
	// metric for the policy under test and for the `none` baseline. If
	// OverheadMs is nil and the metric is pod_startup, PodStartupMs is used.
	OverheadMs, BaselineMs *stats.Hist
	// SidecarJobs is the number of Job pods (restartPolicy not Always) with
	// sidecars, SidecarJobsCompleted how many reached Succeeded.
	SidecarJobs, SidecarJobsCompleted int
	// Seed seeds the bootstrap of the overhead ratio.
	Seed uint64
	// IsBaseline says the policy judged is the none baseline itself: its
	// overhead against none is 1 by construction, so sidecar-overhead is
	// NotApplicable (it was a PASS at ratio 1).
	IsBaseline bool
}

// Verdict is one criterion's outcome.
type Verdict struct {
	Criterion string
	Status    Status
	// Observed is the point estimate (rate, quantile in ms, fraction, ratio);
	// NaN when there is no data.
	Observed float64
	// Bound is the confidence bound compared with Threshold (upper for
	// rates, latencies and ratios, lower for the completion fraction); ±Inf
	// when the data cannot bound it.
	Bound     float64
	Threshold float64
	Message   string
	// MoreTrialsNeeded estimates how many more trials (lifecycles, pods,
	// Jobs) would turn an INSUFFICIENT DATA verdict into PASS if behaviour
	// stays as observed; 0 when unknown or not applicable. The assumption
	// behind each estimate is in Message.
	MoreTrialsNeeded int
	Warnings         []string
}

type verdictJSON struct {
	Criterion        string   `json:"criterion"`
	Status           Status   `json:"status"`
	Observed         *float64 `json:"observed"`
	Bound            *float64 `json:"bound"`
	Threshold        float64  `json:"threshold"`
	Message          string   `json:"message"`
	MoreTrialsNeeded int      `json:"moreTrialsNeeded,omitempty"`
	Warnings         []string `json:"warnings,omitempty"`
}

// MarshalJSON encodes non-finite Observed/Bound as null.
func (v Verdict) MarshalJSON() ([]byte, error) {
	return json.Marshal(verdictJSON{v.Criterion, v.Status, finite(v.Observed), finite(v.Bound), v.Threshold, v.Message, v.MoreTrialsNeeded, v.Warnings})
}

func finite(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

func (v Verdict) String() string {
	s := fmt.Sprintf("%-17s %s: %s", v.Status, v.Criterion, v.Message)
	if v.MoreTrialsNeeded > 0 {
		s += fmt.Sprintf(" (≈%d more trials needed)", v.MoreTrialsNeeded)
	}
	return s
}

// Overall is FAIL if any verdict failed, else INSUFFICIENT DATA if any is
// insufficient, else PASS (also for no verdicts). NOT APPLICABLE verdicts
// count for nothing, but verdicts that are all NOT APPLICABLE are
// INSUFFICIENT DATA: nothing was judged, which is no PASS.
func Overall(vs []Verdict) Status {
	st, judged := Pass, false
	for _, v := range vs {
		switch v.Status {
		case Fail:
			return Fail
		case Insufficient:
			st = Insufficient
		case NotApplicable:
			continue
		}
		judged = true
	}
	if len(vs) > 0 && !judged {
		return Insufficient
	}
	return st
}

// Evaluate judges in against every enabled criterion of c, in the order
// violation rate, pod startup, sidecar Jobs, sidecar overhead.
func Evaluate(c Criteria, in Inputs) []Verdict {
	var out []Verdict
	if c.ViolationRate != nil {
		out = append(out, evalViolations(&c, in))
	}
	if c.PodStartup != nil {
		out = append(out, evalPodStartup(&c, in))
	}
	if c.SidecarJobs != nil {
		out = append(out, evalJobs(&c, in))
	}
	if c.SidecarOverhead != nil {
		out = append(out, evalOverhead(&c, in))
	}
	return out
}

func sidedName(c *Criteria) string {
	if c.oneSidedLevel() == c.Confidence {
		return "one-sided"
	}
	return "two-sided"
}

func evalViolations(c *Criteria, in Inputs) Verdict {
	vr := c.ViolationRate
	level := c.oneSidedLevel()
	v := Verdict{Criterion: CriterionViolationRate, Threshold: vr.Max, Observed: math.NaN(), Bound: 1}
	k, n := in.Violations, in.Lifecycles
	if n <= 0 || k < 0 || k > n {
		v.Status = Insufficient
		v.MoreTrialsNeeded = stats.TrialsNeeded(vr.Max, level)
		v.Message = fmt.Sprintf("no pod lifecycles (k=%d, n=%d); zero violations in %d lifecycles would certify rate < %.3g (Clopper–Pearson %v %s)",
			k, n, v.MoreTrialsNeeded, vr.Max, c.Confidence, sidedName(c))
		return v
	}
	v.Observed = float64(k) / float64(n)
	v.Bound = stats.ClopperPearsonUpper(k, n, level)
	desc := fmt.Sprintf("%d violations in %d lifecycles: rate %.3g, Clopper–Pearson %v %s upper bound %.3g",
		k, n, v.Observed, c.Confidence, sidedName(c), v.Bound)
	switch {
	case v.Bound < vr.Max:
		v.Status = Pass
		v.Message = fmt.Sprintf("%s < %.3g", desc, vr.Max)
	case v.Observed >= vr.Max:
		v.Status = Fail
		v.Message = fmt.Sprintf("%s; observed rate >= %.3g", desc, vr.Max)
	default:
		v.Status = Insufficient
		more, err := stats.MoreTrialsNeeded(k, n, vr.Max, level)
		if err == nil {
			v.MoreTrialsNeeded = more
		}
		v.Message = fmt.Sprintf("%s >= %.3g; more lifecycles needed assuming violations continue at the observed rate", desc, vr.Max)
	}
	return v
}

func evalPodStartup(c *Criteria, in Inputs) Verdict {
	l := c.PodStartup
	h := in.PodStartupMs
	if h == nil {
		h = &stats.Hist{}
	}
	s := stats.QuantileSummaryOf(h, l.Quantile, c.Confidence)
	v := Verdict{Criterion: CriterionPodStartup, Threshold: l.MaxMs, Observed: s.Center, Bound: s.Hi, Warnings: s.Warnings}
	name := fmt.Sprintf("p%g pod_startup", 100*l.Quantile)
	if s.N == 0 {
		v.Status = Insufficient
		v.MoreTrialsNeeded = 1
		if l.UseUpperBound {
			v.MoreTrialsNeeded = stats.MinSamplesForCI(l.Quantile, c.Confidence)
		}
		v.Message = fmt.Sprintf("no %s samples", name)
		return v
	}
	if math.IsNaN(s.Center) {
		v.Status = Insufficient
		v.Message = fmt.Sprintf("%s: unusable samples", name)
		return v
	}
	desc := fmt.Sprintf("%s %.4g ms, %v CI [%.4g, %.4g] (n=%d)", name, s.Center, c.Confidence, s.Lo, s.Hi, s.N)
	switch {
	case s.Center > l.MaxMs:
		v.Status = Fail
		v.Message = fmt.Sprintf("%s; %s > %g ms", desc, name, l.MaxMs)
	case !l.UseUpperBound:
		v.Status = Pass
		v.Message = fmt.Sprintf("%s <= %g ms (point estimate)", desc, l.MaxMs)
	case s.Hi <= l.MaxMs:
		v.Status = Pass
		v.Message = fmt.Sprintf("%s; upper bound <= %g ms", desc, l.MaxMs)
	default:
		v.Status = Insufficient
		f := float64(h.CountLE(l.MaxMs)) / float64(s.N)
		if need := samplesForQuantileBound(f, l.Quantile, c.Confidence); need > s.N {
			v.MoreTrialsNeeded = need - s.N
		}
		v.Message = fmt.Sprintf("%s; upper bound > %g ms; more pods needed assuming %.4g%% of them stay within %g ms",
			desc, l.MaxMs, 100*f, l.MaxMs)
	}
	return v
}

// samplesForQuantileBound returns the smallest sample size N whose
// order-statistic CI for the q-quantile ends at or below the
// floor(f·N)-th order statistic, i.e. the CI's upper end would lie within
// the limit if a fraction f of samples keeps falling within it. It returns
// 0 if f ≤ q (never) or no N up to 2^30 works.
func samplesForQuantileBound(f, q, confidence float64) int {
	if f <= q {
		return 0
	}
	ok := func(n int) bool {
		_, hi := stats.QuantileCIRanks(n, q, confidence)
		return hi <= int(math.Floor(f*float64(n)+1e-9))
	}
	hi := 1
	for !ok(hi) {
		if hi >= 1<<30 {
			return 0
		}
		hi *= 2
	}
	lo := hi / 2 // !ok(lo) unless lo == 0; bisect (approximate: floor makes ok not strictly monotone)
	for lo+1 < hi {
		mid := (lo + hi) / 2
		if ok(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

func evalJobs(c *Criteria, in Inputs) Verdict {
	j := c.SidecarJobs
	level := c.oneSidedLevel()
	n, k := in.SidecarJobs, in.SidecarJobsCompleted
	v := Verdict{Criterion: CriterionSidecarJobs, Threshold: j.MinFraction, Observed: math.NaN(), Bound: math.Inf(-1)}
	if n == 0 {
		// Runs without a single Job: more trials of the same scenarios
		// give none, so no count of them is "needed" (this said "+100").
		v.Status = Insufficient
		v.Message = "no Job with sidecars in these runs: more trials of the same scenarios cannot give one; the criterion needs runs of a scenario whose pods run to completion (restartPolicy Never or OnFailure) with sidecars, such as scenarios/job-completion.yaml"
		return v
	}
	if minJobs := max(j.MinJobs, 1); n < minJobs || k < 0 || k > n {
		v.Status = Insufficient
		v.MoreTrialsNeeded = max(minJobs-n, 1)
		v.Message = fmt.Sprintf("%d of %d Jobs with sidecars completed; need >= %d Jobs", k, n, minJobs)
		return v
	}
	v.Observed = float64(k) / float64(n)
	v.Bound = 1 - stats.ClopperPearsonUpper(n-k, n, level)
	desc := fmt.Sprintf("%d of %d Jobs with sidecars completed (%.4g%%), Clopper–Pearson %v %s lower bound %.4g%%",
		k, n, 100*v.Observed, c.Confidence, sidedName(c), 100*v.Bound)
	switch {
	case v.Observed < j.MinFraction:
		v.Status = Fail
		v.Message = fmt.Sprintf("%s; below %.4g%%", desc, 100*j.MinFraction)
	case !j.UseLowerBound:
		v.Status = Pass
		v.Message = fmt.Sprintf("%s; >= %.4g%% (point estimate)", desc, 100*j.MinFraction)
	case v.Bound > j.MinFraction:
		v.Status = Pass
		v.Message = fmt.Sprintf("%s > %.4g%%", desc, 100*j.MinFraction)
	default:
		v.Status = Insufficient
		more, err := stats.MoreTrialsNeeded(n-k, n, 1-j.MinFraction, level)
		switch {
		case err == nil:
			v.MoreTrialsNeeded = more
			v.Message = fmt.Sprintf("%s <= %.4g%%; more Jobs needed assuming failures continue at the observed rate", desc, 100*j.MinFraction)
		case errors.Is(err, stats.ErrRateTooHigh):
			v.Message = fmt.Sprintf("%s <= %.4g%%; the observed fraction is exactly at the limit, so no number of further Jobs at this rate certifies it", desc, 100*j.MinFraction)
		default:
			v.Message = fmt.Sprintf("%s: %v", desc, err)
		}
	}
	return v
}

func evalOverhead(c *Criteria, in Inputs) Verdict {
	o := c.SidecarOverhead
	v := Verdict{Criterion: CriterionSidecarOverhead, Threshold: o.MaxRatio, Observed: math.NaN(), Bound: math.Inf(1)}
	cand := in.OverheadMs
	if cand == nil && o.Metric == "pod_startup" {
		cand = in.PodStartupMs
	}
	base := in.BaselineMs
	p := 100 * o.Quantile
	name := fmt.Sprintf("p%g %s ratio vs none", p, o.Metric)
	if in.IsBaseline {
		v.Status, v.Bound = NotApplicable, math.NaN()
		v.Message = fmt.Sprintf("%s: the policy judged is the none baseline, whose ratio to itself is 1 by construction; judge a policy with sidecars against it", name)
		return v
	}
	if minN := max(o.MinSamples, 1); cand.N() < minN || base.N() < minN {
		v.Status = Insufficient
		v.Message = fmt.Sprintf("%s: %d candidate and %d baseline (policy none) samples; need >= %d each", name, cand.N(), base.N(), minN)
		if base.N() == 0 || cand.N() == 0 {
			// A policy that did not run gives no samples however many
			// trials the others run (this said "+20").
			v.Message += "; a policy with none did not run: the criterion needs runs of a scenario whose policies include none beside the candidate, such as scenarios/policy-comparison.yaml"
			return v
		}
		v.MoreTrialsNeeded = max(minN-cand.N(), minN-base.N())
		return v
	}
	qc, qb := stats.PercentileOf(cand, p), stats.PercentileOf(base, p)
	if !(qb > 0) || math.IsNaN(qc) {
		v.Status = Insufficient
		v.Message = fmt.Sprintf("%s: baseline p%g is %v, ratio undefined", name, p, qb)
		return v
	}
	v.Observed = qc / qb
	desc := fmt.Sprintf("%s %.3g (%.4g / %.4g ms)", name, v.Observed, qc, qb)
	if v.Observed > o.MaxRatio {
		v.Status = Fail
		v.Message = fmt.Sprintf("%s > %g", desc, o.MaxRatio)
		return v
	}
	if !o.UseUpperBound {
		v.Status = Pass
		v.Message = fmt.Sprintf("%s <= %g (point estimate)", desc, o.MaxRatio)
		return v
	}
	if nonPositive(cand.Min()) || nonPositive(base.Min()) {
		v.Status = Insufficient
		v.Message = fmt.Sprintf("%s: samples <= 0 ms, cannot bootstrap the log ratio", desc)
		return v
	}
	// Ratio of quantiles = exp(difference of quantiles of the logs), as the
	// nearest-rank quantile commutes with the monotone log.
	bs := stats.BootstrapQuantileDiffOf(stats.Log{Ordered: base}, stats.Log{Ordered: cand}, o.Quantile, c.Confidence, o.Resamples, in.Seed)
	v.Bound = math.Exp(bs.Hi)
	v.Warnings = append(v.Warnings, bs.Warnings...)
	desc = fmt.Sprintf("%s, bootstrap %v CI [%.3g, %.3g]", desc, c.Confidence, math.Exp(bs.Lo), v.Bound)
	if v.Bound <= o.MaxRatio {
		v.Status = Pass
		v.Message = fmt.Sprintf("%s; upper bound <= %g", desc, o.MaxRatio)
	} else {
		v.Status = Insufficient
		v.Message = fmt.Sprintf("%s; upper bound > %g: more samples of both policies narrow the interval", desc, o.MaxRatio)
	}
	return v
}

func nonPositive(x float64) bool { return !(x > 0) }

// Judged is one scenario × policy's verdicts with the inputs they were
// judged on: a row of a graduation over several scenarios.
type Judged struct {
	Scenario, Policy string
	In               Inputs
	Verdicts         []Verdict
}

// noEvidence reports whether in holds nothing at all for the criterion
// named to judge, which no number of further trials of the same scenario
// can change: no Job with sidecars (sidecar-jobs-complete); no sample of
// the candidate or of the none baseline (sidecar-overhead).
func noEvidence(c *Criteria, criterion string, in Inputs) bool {
	switch criterion {
	case CriterionSidecarJobs:
		return in.SidecarJobs == 0
	case CriterionSidecarOverhead:
		if in.IsBaseline {
			return false // NotApplicable already
		}
		cand := in.OverheadMs
		if cand == nil && c.SidecarOverhead != nil && c.SidecarOverhead.Metric == "pod_startup" {
			cand = in.PodStartupMs
		}
		return cand.N() == 0 || in.BaselineMs.N() == 0
	}
	return false
}

// PoolEvidence judges each criterion of a graduation over several
// scenarios where its evidence is: a scenario holding none for a
// criterion (no Job with sidecars, no none baseline) while another
// scenario judged for the same policy holds some gets NotApplicable there
// instead of INSUFFICIENT DATA, naming the scenarios that judge it. Every
// scenario had to run Jobs and the none baseline before, so a graduation
// over policy-comparison and job-completion could never pass, and the
// message pointing to job-completion was of no use. Without evidence in
// any scenario the verdicts stay INSUFFICIENT DATA, whose message says
// which scenario would give some. js's verdicts are changed in place.
func PoolEvidence(c Criteria, js []Judged) {
	for _, crit := range []string{CriterionSidecarJobs, CriterionSidecarOverhead} {
		judgedIn := map[string][]string{} // policy -> scenarios with evidence
		for _, j := range js {
			if slices.ContainsFunc(j.Verdicts, func(v Verdict) bool { return v.Criterion == crit }) && !noEvidence(&c, crit, j.In) {
				judgedIn[j.Policy] = append(judgedIn[j.Policy], j.Scenario)
			}
		}
		for _, j := range js {
			where := judgedIn[j.Policy]
			if len(where) == 0 || !noEvidence(&c, crit, j.In) {
				continue
			}
			for i := range j.Verdicts {
				v := &j.Verdicts[i]
				if v.Criterion != crit {
					continue
				}
				what := "no Job with sidecars"
				if crit == CriterionSidecarOverhead {
					what = fmt.Sprintf("no %s samples of this policy or of none", c.SidecarOverhead.Metric)
				}
				v.Status, v.MoreTrialsNeeded = NotApplicable, 0
				v.Observed, v.Bound = math.NaN(), math.NaN()
				v.Message = fmt.Sprintf("%s in this scenario: the criterion is judged in %s", what, strings.Join(where, ", "))
			}
		}
	}
}

// LifecyclesNeeded is the number of pod lifecycles in total at which the
// violation-rate criterion of c passes, if violations occur at the
// observed rate k/n: with k = 0, the n at which zero violations certify
// the target; otherwise the lifecycles at which the bound at that rate
// falls below the target — n plus evalViolations' "more trials needed"
// while it is above, the count it crossed at once it is below. It is -1
// when the observed rate is at or above the target (no number of
// lifecycles can pass it) or c has no violation-rate criterion.
func LifecyclesNeeded(c Criteria, k, n int) int {
	vr := c.ViolationRate
	if vr == nil || k < 0 || n <= 0 && k > 0 || k > n {
		return -1
	}
	rate := 0.0
	if k > 0 {
		rate = float64(k) / float64(n)
	}
	return stats.TrialsNeededAtRate(rate, vr.Max, c.oneSidedLevel())
}
